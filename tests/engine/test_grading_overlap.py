"""A stage's trusted material (the reference's outcomes, the leak guard) is computed while the children
run: a child never waits for it, only the verdicts do, and a stage whose material cannot be computed
costs its own TODOs a grader error, not the batch."""
from __future__ import annotations

import threading

import pytest

from autograder.core import layout
from autograder.core.results import TodoStatus
from autograder.grading import grade
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades notebooks on the real grader


def test_children_run_before_the_reference_outcomes_exist(monkeypatch):
    notebook = layout.stage_files("s01").instructor()
    jobs = len(grade.read_submission(notebook).stage.todos)
    ran, every_child_ran, waited = [], threading.Event(), []
    real = grade.expected_outcomes

    def held_back(stage):  # the material appears only once every child has run (or after a minute)
        waited.append(every_child_ran.wait(timeout=scaled(60)))
        return real(stage)

    def on_todo():
        ran.append(1)
        if len(ran) == jobs:
            every_child_ran.set()

    monkeypatch.setattr(grade, "expected_outcomes", held_back)
    [result] = grade.grade_paths([notebook], on_todo=on_todo)
    assert waited and all(waited), "a child waited for the reference's outcomes"
    assert len(ran) == jobs
    assert [t.status for t in result.todos] == [TodoStatus.PASSED] * jobs, [t.message for t in result.todos]


def test_a_stage_without_its_reference_outcomes_fails_its_own_todos_only(monkeypatch):
    real = grade.expected_outcomes

    def broken_for_s01(stage):
        if stage.id == "s01":
            raise RuntimeError("the reference could not be probed")
        return real(stage)

    monkeypatch.setattr(grade, "expected_outcomes", broken_for_s01)
    s01, s02 = grade.grade_paths([layout.stage_files("s01").instructor(), layout.stage_files("s02").instructor()])
    assert s01.todos and all(t.status == TodoStatus.GRADER_ERROR and "could not be probed" in t.message for t in s01.todos)
    assert s02.todos and all(t.status == TodoStatus.PASSED for t in s02.todos), [t.message for t in s02.todos]

"""``check()`` judges its own TODO with the course's version of every other TODO, as grading does, so
a learner who checks each TODO right after writing it sees it green, in whatever order they work."""
from __future__ import annotations

import pytest

from autograder.core.spec import load_stage
from autograder.learner.inline import evaluate
from tests.conftest import stage_params
from tests.support.learner_ns import module_text, notebook_namespace


def code_todos(stage_id: str) -> list[str]:
    stage = load_stage(stage_id, hidden=False)
    return [t.id for t in sorted(stage.todos, key=lambda t: t.number) if t.target != "quiz"]


@pytest.mark.parametrize("order", ["notebook", "reverse"])
@pytest.mark.parametrize("stage_id", stage_params())
def test_each_check_is_green_right_after_its_todo(stage_id, order):
    stage = load_stage(stage_id, hidden=False)
    todos = code_todos(stage_id)
    if order == "reverse":
        todos = todos[::-1]
    for i, tid in enumerate(todos):
        unfilled = todos[i + 1:]  # this TODO and the ones before it are written, the rest are stubs
        with notebook_namespace(module_text(stage, stubbed=unfilled)) as ns:
            report = evaluate(tid, namespace=ns, lang="en")
        failed = [(v.summary, v.detail) for v in report.verdicts if not v.passed]
        assert report.passed, f"{tid} written ({order} order, {unfilled} still stubs): {failed}"


def test_a_stub_still_reads_not_implemented():
    stage = load_stage("s05", hidden=False)
    with notebook_namespace(module_text(stage, stubbed=code_todos("s05"))) as ns:
        report = evaluate("s05._split_node", namespace=ns, lang="zh")
    assert not report.passed and report.verdicts[0].not_implemented == "s05._split_node"
    assert "还没有实现" in report.verdicts[0].summary


def test_without_the_course_code_a_failure_is_blamed_on_the_other_todo(monkeypatch):
    """A classroom release has no reference to stand in: the check then runs the notebook as it is
    and names the unfinished TODO it needs."""
    monkeypatch.setattr("autograder.learner.blame._fresh_reference", lambda stage: None)
    stage = load_stage("s05", hidden=False)
    with notebook_namespace(module_text(stage, stubbed=["s05.insert"])) as ns:
        report = evaluate("s05._split_node", namespace=ns, lang="en")
    assert not report.passed
    assert "needs TODO 3 (s05.insert), which is not implemented yet" in report.verdicts[0].summary

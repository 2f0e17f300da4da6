"""Trust, round 5: a submission is graded as the stage it was handed in for, never as the stage it claims.

A solved stage-1 notebook named ``03_block_pool.ipynb`` handed in to a stage-3 Gradescope assignment once
scored 11 (stage 1's points). Every path that knows the stage pins it: ``grade --stage``, nbgrader (the
assignment's folder), the pre-flight, Gradescope (the bundle's stage: ``test_gradescope``) and Classroom
(the template's stage). A notebook of another stage scores 0 with the reason, in both languages.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from autograder.core import layout
from autograder.integrations import nbgrader_batch, preflight
from tests.conftest import ROOT
from tests.e2e.test_classroom import grading_steps, make_template, run_step
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades through the CLI, nbgrader and Classroom

S01, S02, S03 = (layout.stage_files(s) for s in ("s01", "s02", "s03"))
OTHER = "is the notebook of stage s01"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, capture_output=True, text=True, timeout=scaled(300))


def test_stage_ids_and_assignment_names_both_pin(tmp_path):
    assert layout.stage_of_assignment(S03.notebook) == "s03" and layout.stage_of_assignment(f"{S03.notebook}_zh") == "s03"
    assert layout.stage_of_assignment("hw3") is None and layout.stage_of_assignment(f"{S03.notebook}-copy") is None
    disguised = tmp_path / S03.learner().name
    shutil.copy(S01.instructor(), disguised)
    for stage in ("s03", S03.notebook):
        p = cli("grade", str(disguised), "--stage", stage, "--format", "json", "--no-progress")
        (sub,) = json.loads(p.stdout)["submissions"]
        assert p.returncode == 1 and sub["status"] == "not_graded" and sub["score"] == 0
        assert f"{OTHER} ({S01.notebook}), but this assignment grades stage s03" in sub["error"]
    assert cli("grade", str(disguised), "--stage", "s99").returncode == 2


def test_without_a_stage_the_cli_grades_by_content_and_flags_the_name(tmp_path):
    disguised = tmp_path / S03.learner().name
    shutil.copy(S01.instructor(), disguised)
    p = cli("grade", str(disguised), "--format", "json", "--no-progress")
    (sub,) = json.loads(p.stdout)["submissions"]
    assert sub["stage"] == "s01" and any("file name is stage s03" in w for w in sub["warnings"])


def test_nbgrader_pins_the_assignment_its_folder_names(tmp_path):
    """nbgrader's batch (and its one-notebook fallback) grades ``submitted/<student>/<assignment>/``."""
    course = tmp_path / "course"
    folder = course / "submitted" / "alice" / S02.notebook
    folder.mkdir(parents=True)
    shutil.copy(S01.instructor(), folder / S02.learner().name)
    own = course / "submitted" / "bob" / "hw1"  # not a course stage's assignment: nothing to pin
    own.mkdir(parents=True)
    shutil.copy(S01.instructor(), own / "hw1.ipynb")
    _, _, grade_many = nbgrader_batch.plan("best", False, None, None, course)
    pinned, free = grade_many([folder / S02.learner().name, own / "hw1.ipynb"])
    assert not pinned.graded and "this assignment grades stage s02" in pinned.error and "阶段" not in pinned.error
    assert free.graded and free.stage == "s01"


def test_preflight_names_the_notebook_of_another_stage(tmp_path):
    course = tmp_path / "course"
    (course / "source" / S02.notebook).mkdir(parents=True)
    shutil.copy(S02.learner(), course / "source" / S02.notebook / S02.learner().name)
    folder = course / "submitted" / "alice" / S02.notebook
    folder.mkdir(parents=True)
    shutil.copy(S01.instructor(), folder / S02.learner().name)
    (problem,) = preflight.check_course(course)
    assert problem.student == "alice" and "this assignment grades stage s02" in problem.reason


def test_classroom_steps_refuse_a_notebook_of_another_stage_in_its_edition(tmp_path):
    """The Chinese edition's stage-1 notebook in a stage-3 repository: refused, in Chinese."""
    template = make_template(tmp_path / "template", "s03")
    step = grading_steps(template)[0][0]
    shutil.copy(S01.instructor("zh"), template / S03.learner().name)
    p = run_step(template, step, tmp_path / "home")
    assert p.returncode != 0 and "--stage s03" in step["with"]["command"]
    assert "这份作业评的是阶段 s03" in p.stdout and "this assignment grades" not in p.stdout

"""nbgrader as an instructor lives it, on a small class: the pre-flight names, one line per
submission, what cannot be graded and why; autograde's log has no per-file copying lines; per-student
folders hold the student's own files, not the release's helper files; and the class report reads the
course folder."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.core import layout
from autograder.integrations.nbgrader_glue import release_helpers
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades a class through nbgrader

S01 = layout.stage_files("s01")
A = S01.notebook


def run(cmd: list[str], cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=scaled(600))
    if ok:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    run([sys.executable, "-m", "autograder", "course", str(root), "--stage", "s01", "--stage", "s02"], ROOT)
    run([sys.executable, "-m", "nbgrader", "generate_assignment", A, "--create"], root)
    release = root / "release" / A
    students = {"ann": S01.instructor(), "bob": release / f"{A}.ipynb", "cat": None, "dan": None, "eve": None, "fay": None,
                "gus": None}
    for student, nb in students.items():
        d = root / "submitted" / student / A
        shutil.copytree(release, d)  # what a student hands back: the whole release folder
        if nb is not None:
            shutil.copy(nb, d / f"{A}.ipynb")
    (root / "submitted" / "cat" / A / f"{A}.ipynb").rename(root / "submitted" / "cat" / A / "my_work.ipynb")  # renamed
    (root / "submitted" / "dan" / A / f"{A}.ipynb").write_text('{"cells": [', encoding="utf-8")  # truncated upload
    shutil.copy(layout.stage_files("s02").learner(), root / "submitted" / "eve" / A / f"{A}.ipynb")  # another stage's
    shutil.copytree(root / "submitted" / "fay" / A, root / "submitted" / "fay" / "01_prefix-match")  # a renamed folder
    shutil.rmtree(root / "submitted" / "fay" / A)
    shutil.copy(S01.instructor(), root / "submitted" / "gus" / A / f"{A} (1).ipynb")  # the work, beside the blank release
    return root


def test_preflight_lists_what_cannot_be_graded_one_line_per_submission(course):
    p = run([sys.executable, "-m", "autograder", "course", "check", str(course)], ROOT, ok=False)
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stdout.strip().splitlines()
    problems = {ln.split(":", 1)[0]: ln for ln in lines[:-1]}
    # cat's notebook was saved under another name, and it is the only notebook of its stage there:
    # autograde grades it under the released name (nbgrader_glue.find_renamed_notebooks)
    assert set(problems) == {f"dan/{A}", f"eve/{A}", "fay/01_prefix-match", f"gus/{A}"}, lines
    assert "not a readable notebook" in problems[f"dan/{A}"]
    assert "stage s02" in problems[f"eve/{A}"]
    assert "no assignment" in problems["fay/01_prefix-match"]
    assert f"{A}.ipynb is as released (no TODO filled in), but {A} (1).ipynb beside it" in problems[f"gus/{A}"]
    assert lines[-1] == "3 of 7 submissions can be graded; 4 cannot (above)"
    ok = run([sys.executable, "-m", "autograder", "course", "check", str(course), "--stage", "02_block_hash"], ROOT)
    assert ok.stdout.strip() == "0 of 0 submissions can be graded"


@pytest.mark.slow
def test_autograde_log_and_folders_keep_to_what_matters_and_the_report_reads_the_course(course, tmp_path):
    p = run([sys.executable, "-m", "nbgrader", "autograde", A], course, ok=False)
    log = p.stdout + p.stderr
    assert "Copying" not in log, [ln for ln in log.splitlines() if "Copying" in ln][:3]
    for student in ("ann", "bob"):
        for step in ("autograded", "feedback") if student == "ann" else ("autograded",):
            if step == "feedback":
                run([sys.executable, "-m", "nbgrader", "generate_feedback", A, "--student", student], course)
            folder = course / step / student / A
            names = {q.name for q in folder.iterdir()}
            assert not names & set(release_helpers()), (step, sorted(names))
            assert names <= {f"{A}.ipynb", f"{A}.html", "timestamp.txt"}, (step, sorted(names))
    release = course / "release" / A
    carried = {rel.split("/", 1)[0] for _, rel in layout.release_files("s01")}
    assert carried <= set(release_helpers()) and carried <= {q.name for q in release.iterdir()}  # the release has them
    graded = nbformat.read(course / "autograded" / "ann" / A / f"{A}.ipynb", as_version=4)
    assert graded.metadata["autograder"]["result"]["score"] == graded.metadata["autograder"]["result"]["max_score"] > 0
    page = tmp_path / "class.html"
    run([sys.executable, "-m", "autograder", "report", str(course), "--html", str(page)], ROOT)
    html = page.read_text(encoding="utf-8")
    # seven students: gus's blank release is graded (0) by nbgrader, as the pre-flight warned
    assert '<span data-k="submissions">7</span>' in html and '<span data-k="graded">4</span>' in html
    assert 'data-students="7"' in html and html.index('data-student="gus"') < html.index('data-student="ann"')
    assert html.count('class="ungraded"') >= 3 and "no assignment" in html  # dan, eve, fay (cat's was graded)

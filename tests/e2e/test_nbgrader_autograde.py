"""``python -m autograder autograde`` is nbgrader's ``autograde`` with the class graded from the start.

On a mixed class (honest, wrong, unfilled and hostile notebooks; one saved under another name; one
truncated) it leaves the gradebook and ``autograded/`` exactly as ``nbgrader autograde`` with the same
options leaves them, and grades each notebook once; it reads nbgrader's options as nbgrader does, and
leaves to nbgrader any option it does not read."""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.core import layout
from autograder.integrations.nbgrader_autograde import early_selection
from benchmarks.bench_grading import make_class
from tests.conftest import ROOT
from tests.support.machine import scaled
from tests.support.releases import released_course, session_root

pytestmark = pytest.mark.slow  # the fast lane leaves it out: runs nbgrader's autograde end to end

A = layout.stage_files("s01").notebook

STUDENTS = [f"student{i:03d}_{k}" for i, k in enumerate(("honest", "wrong", "unfilled", "wrong", "hostile"))]

# nbgrader_autograde.main, with every grading call recorded: which notebooks each one graded
COUNTED = """
import json, sys
from autograder.integrations import nbgrader_autograde, nbgrader_batch
calls, plan = [], nbgrader_batch.plan
def counted_plan(*a, **k):
    iso, key, grade_many = plan(*a, **k)
    def counted(paths, **kw):
        calls.append([str(p) for p in paths])
        return grade_many(paths, **kw)
    return iso, key, counted
nbgrader_batch.plan = counted_plan
code = nbgrader_autograde.main(sys.argv[1:])
print("CALLS " + json.dumps({"code": code, "calls": calls}))
"""


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=scaled(600))


@pytest.fixture(scope="module")
def course(request, tmp_path_factory) -> Path:
    root = released_course("s01", tmp_path_factory.mktemp("course") / "c",
                           session_root(request.config, tmp_path_factory))  # the session's stage-1 release
    assert make_class("s01", root, 5) == STUDENTS  # honest, wrong, unfilled, wrong, hostile
    release = root / "release" / A
    for student in ("cat", "dan"):
        shutil.copytree(release, root / "submitted" / student / A)
    (root / "submitted" / "cat" / A / f"{A}.ipynb").rename(root / "submitted" / "cat" / A / "my_work.ipynb")
    (root / "submitted" / "dan" / A / f"{A}.ipynb").write_text('{"cells": [', encoding="utf-8")  # truncated
    return root


def _state(course: Path) -> dict:
    """What autograde leaves: every gradebook row it writes, and every file under autograded/."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "prefix-cache-workbook") as gb:
        rows = {}
        for sub in gb.assignment_submissions(A):
            rows[sub.student_id] = {"timestamp": str(sub.timestamp), "notebooks": {
                nb.name: {"penalty": nb.late_submission_penalty, "flagged": nb.flagged,
                          "grades": {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade) for g in nb.grades},
                          "comments": {c.name: c.auto_comment for c in nb.comments}}
                for nb in sub.notebooks}}
    files = {str(p.relative_to(course)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted((course / "autograded").rglob("*")) if p.is_file()}
    return {"gradebook": rows, "autograded": files}


@pytest.mark.slow
def test_the_command_leaves_what_nbgrader_autograde_leaves_and_grades_each_notebook_once(course, tmp_path):
    plain, fast = tmp_path / "plain", tmp_path / "fast"
    shutil.copytree(course, plain)
    shutil.copytree(course, fast)
    runs = ([A], [A, "--force", "--student", "student000_honest"], [A])  # the last: dan's failure only, again
    for i, args in enumerate(runs):
        want = run([sys.executable, "-m", "nbgrader", "autograde", *args], plain)
        got = run([sys.executable, "-c", COUNTED, *args], fast)
        said = json.loads(next(ln for ln in got.stdout.splitlines() if ln.startswith("CALLS "))[6:])
        assert said["code"] == want.returncode, (args, want.stderr[-2000:], got.stderr[-2000:])
        assert want.returncode == (0 if "--student" in args else 1)  # 1: dan's truncated file, every time
        assert _state(fast) == _state(plain), args
        graded = [Path(p).parent.parent.name for call in said["calls"] for p in call]
        assert len(graded) == len(set(graded)), said["calls"]  # each notebook once
        if i == 0:  # every released notebook in one early batch; cat's renamed one once the course's hook named it
            assert set(graded[:-1]) == set(STUDENTS) | {"dan"} and graded[-1] == "cat", said["calls"]
        else:
            assert graded == (["student000_honest"] if "--student" in args else ["dan"]), said["calls"]
    assert _state(fast)["gradebook"]["cat"]["notebooks"][A]["grades"], "the renamed notebook was graded"


def test_the_early_selection_reads_nbgrader_options_as_nbgrader_does(course):
    from traitlets.config import Config

    from autograder.integrations.nbgrader_batch import _submitted_pattern

    everyone = early_selection([A], course)
    assert everyone is not None and everyone.pattern == _submitted_pattern(Config(CourseDirectory={"root": str(course)}), A)[1]
    assert {p.parent.parent.name for p in everyone.paths} == {q.name for q in (course / "submitted").iterdir()} - {"cat"}
    for args, student in ((["--assignment", A, "--student", "dan"], "dan"), ([f"--assignment={A}", "--student=cat"], "cat")):
        one = early_selection(args, course)
        nbgrader = _submitted_pattern(Config(CourseDirectory={"root": str(course), "student_id": student}), A)[1]
        assert one is not None and one.pattern == nbgrader, (args, one)
    assert early_selection([A, "--student", "cat"], course).paths == []  # only my_work.ipynb: not a released notebook
    assert early_selection([A, "--force", "--notebook", A, "--debug"], course).paths == everyone.paths
    for unread in ([A, "--CourseDirectory.submitted_directory=handed_in"], [A, "B"], [], ["*"], [A, "--student"]):
        assert early_selection(unread, course) is None, unread


def test_without_force_a_student_already_autograded_is_left_to_nbgrader(course, tmp_path):
    copy = tmp_path / "c"
    shutil.copytree(course, copy)
    (copy / "autograded" / "dan" / A).mkdir(parents=True)
    left = early_selection([A], copy)
    assert "dan" not in {p.parent.parent.name for p in left.paths}
    assert "dan" in {p.parent.parent.name for p in early_selection([A, "-f"], copy).paths}


SHARED = """
import sys
import collections
import sqlalchemy
from sqlalchemy import text
import nbgrader.api
from nbgrader.api import Gradebook, get_alembic_version
from autograder.integrations.nbgrader_glue import share_gradebook_engines
url = "sqlite:///" + sys.argv[1]
alembic = get_alembic_version()
nbgrader.api.get_alembic_version = lambda: alembic  # each new database asked `alembic heads` (2 CPU-s) again
checks = collections.Counter()
real_inspect = sqlalchemy.inspect
def counted(subject, *a, **k):
    checks[subject] += 1
    return real_inspect(subject, *a, **k)
sqlalchemy.inspect = counted
share_gradebook_engines()
share_gradebook_engines()  # twice: still one layer
with Gradebook(url) as a:
    a.add_student("ann", first_name="Ann")
    engine = a.engine
with Gradebook(url) as b:  # after a's close (its dispose): the same engine, and what a wrote
    assert b.engine is engine and b.find_student("ann").first_name == "Ann"
    with Gradebook(url) as c:  # an open inside an open, as nbgrader's converter does
        c.update_or_create_student("ann", first_name="Anna")
    assert b.find_student("ann").first_name == "Anna"
with Gradebook("sqlite:///" + sys.argv[1] + ".other") as d:
    assert d.engine is not engine
    d.add_student("bob")
# each database's tables were checked by its first open only (then inspected once, for their names)
assert checks == {engine: 2, d.engine: 2}, checks
with Gradebook(url) as e:  # and a later open still reads and writes what the first one created
    assert e.find_student("ann").first_name == "Anna" and e.engine is engine
    e.add_student("cy")
    assert [r[0] for r in e.db.execute(text("SELECT version_num FROM alembic_version"))] == [alembic]
assert checks[engine] == 2
print("ok")
"""


def test_gradebook_opens_share_one_engine_per_database_and_read_what_was_written(tmp_path):
    p = run([sys.executable, "-c", SHARED, str(tmp_path / "gradebook.db")], ROOT)
    assert p.stdout.strip() == "ok", p.stderr[-2000:]


def test_without_nbgrader_the_command_says_what_to_install_and_grades_nothing(tmp_path, monkeypatch, capsys):
    import importlib.util

    from autograder.integrations import nbgrader_autograde

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nbgrader" else real(name, *a))
    monkeypatch.setattr(nbgrader_autograde, "_start_early", lambda selection: pytest.fail("graded without nbgrader"))
    assert nbgrader_autograde.main([A], tmp_path) == 2
    assert "pip install 'prefix-cache-workbook[grader,nbgrader]'" in capsys.readouterr().err


QUIET = """
import sys
import warnings
import nbgrader.api
from nbgrader.api import Gradebook
from autograder.integrations.nbgrader_glue import add_submissions_without_autoflush

alembic = nbgrader.api.get_alembic_version()
nbgrader.api.get_alembic_version = lambda: alembic  # each new database asked `alembic heads` (2 CPU-s) again

def submit(url, student):
    with Gradebook(url) as gb:
        gb.add_assignment("a1")
        gb.add_notebook("nb", "a1")
        gb.add_grade_cell("t1", "nb", "a1", max_score=2, cell_type="code")
        gb.add_solution_cell("s1", "nb", "a1")
        gb.add_student(student)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gb.add_submission("a1", student)
        grades = [(g.name, g.max_score) for g in gb.find_submission_notebook("nb", "a1", student).grades]
        return [str(w.message).split(",")[0] for w in caught], grades

before, plain = submit("sqlite:///" + sys.argv[1] + ".plain", "ann")
add_submissions_without_autoflush()
add_submissions_without_autoflush()  # twice: still one layer
after, quiet = submit("sqlite:///" + sys.argv[1], "ann")
assert any("not in session" in w for w in before), before  # what nbgrader alone says under SQLAlchemy 2
assert after == [] and quiet == plain == [("t1", 2.0)], (after, quiet, plain)
print("ok")
"""


def test_a_submission_is_recorded_without_sqlalchemy_warnings_and_with_the_same_rows(tmp_path):
    p = run([sys.executable, "-c", QUIET, str(tmp_path / "gradebook.db")], ROOT)
    assert p.stdout.strip() == "ok", p.stderr[-2000:]

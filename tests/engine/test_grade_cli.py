"""The `python -m autograder grade` command line: report shapes, exit codes, folders, Gradescope."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from autograder.core import layout
from autograder.core.spec import load_stage
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: runs the grading command line end to end

SOL = layout.stage_files("s01").instructor()
STUB = layout.stage_files("s01").learner()


def cli(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True, timeout=scaled(300))


def test_grade_json_shape_and_full_marks_for_instructor_notebook(tmp_path):
    p = cli("grade", str(SOL), str(STUB), "--format", "json", "--no-progress")
    assert p.returncode == 0, p.stderr
    subs = json.loads(p.stdout)["submissions"]
    full = load_stage("s01", hidden=False).max_score
    assert [s["score"] for s in subs] == [full, 0] and all(s["max_score"] == full for s in subs)
    todo = subs[0]["todos"][2]
    assert {"id", "points", "max_points", "passed", "message"} <= todo.keys()
    assert todo["id"] == "s01.match_prefix" and todo["passed"] is True


def test_grade_table_names_every_todo():
    p = cli("grade", str(STUB), "--no-progress")
    assert p.returncode == 0
    for tid in ("s01.normalize", "s01.add_prefix", "s01.match_prefix", "s01.split_prompt", "s01.cache_stats"):
        assert tid in p.stdout
    assert "not implemented yet" in p.stdout


def test_grade_folder_in_nbgrader_layout_writes_csv_and_summary(tmp_path):
    for student, src in (("alice", SOL), ("bob", STUB)):
        d = tmp_path / "submitted" / student / STUB.stem
        d.mkdir(parents=True)
        shutil.copy(src, d / STUB.name)
    p = cli("grade", str(tmp_path / "submitted"), "--csv", str(tmp_path / "g.csv"),
            "--summary-json", str(tmp_path / "s.json"), "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = (tmp_path / "g.csv").read_text().splitlines()
    assert rows[0].startswith("student,path,stage,score,max_score,s01.normalize") and len(rows) == 3
    assert sorted(row.split(",", 1)[0] for row in rows[1:]) == ["alice", "bob"]  # who, first
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["per_todo"]["s01.match_prefix"]["passed"] == 1


def test_grade_unreadable_file_exits_nonzero_with_message(tmp_path):
    bad = tmp_path / "broken.ipynb"
    bad.write_text("{ not json")
    p = cli("grade", str(bad), str(SOL), "--no-progress")
    assert p.returncode == 1
    assert "not a readable notebook" in p.stderr
    full = load_stage("s01", hidden=False).max_score
    assert f"score {full}/{full}" in p.stdout  # the other submission is still graded


def test_grade_bad_arguments_exit_2():
    assert cli("grade").returncode == 2
    assert cli("grade", "/nonexistent/folder/").returncode != 0


def test_grade_gradescope_results_have_one_test_per_todo(tmp_path):
    out = tmp_path / "results.json"
    p = cli("grade", str(STUB), "--gradescope", str(out), "--no-progress")
    assert p.returncode == 0
    res = json.loads(out.read_text())
    assert res["score"] == 0 and len([t for t in res["tests"] if t["visibility"] == "visible"]) == len(load_stage("s01", hidden=False).todos)
    assert all(t["status"] == "failed" for t in res["tests"] if t["visibility"] == "visible")


def test_s01_normalize_hidden_failure_is_named_but_shows_no_values():
    from tests.support.variants import grade_variant

    keep_caller_list = ("        normalized = list(tokens)\n",
                        "        normalized = tokens if isinstance(tokens, list) else list(tokens)\n")
    result = grade_variant("s01", [keep_caller_list])
    todo = next(t for t in result.todos if t.id == "s01.normalize")
    assert not todo.passed
    # no rule is hidden-only any more: the visible sibling leads, with its values; the hidden check is
    # named after it, without any
    assert todo.message.startswith("check 'returns_a_new_list' failed | input: ")
    lead, also = todo.message.split("also failing:", 1)
    assert "hidden check 'returns_a_copy' failed" in also
    for label in ("input:", "expected:", "got:"):
        assert label not in also
    hidden = [c for c in todo.checks if c.hidden and not c.passed]
    assert hidden and all("expected" not in c.message for c in hidden)


def test_s01_match_prefix_helper_outside_todo_cell_is_explained(tmp_path):
    import nbformat

    from autograder.grading.grade import grade_paths
    from tests.support.variants import variant_notebook

    nb = variant_notebook("s01", [("is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix",
                                   "is_match = starts_with(prompt, cached_prefix)")])
    # the helper lives in a new, ungraded cell, as a learner might write it
    nb.cells.append(nbformat.v4.new_code_cell("def starts_with(p, q):\n    return tuple(p[:len(q)]) == q"))
    path = tmp_path / "helper.ipynb"
    nbformat.write(nb, path)
    todo = next(t for t in grade_paths([path])[0].todos if t.id == "s01.match_prefix")
    assert not todo.passed and "NameError" in todo.message
    assert "only the cells with TODOs are graded" in todo.message


# -- isolation: required for a class, stated in every report ----------------------------------------
def test_grade_require_isolation_refuses_a_folder_without_a_kernel_boundary(tmp_path):
    shutil.copy(STUB, tmp_path / STUB.name)
    p = cli("grade", str(tmp_path), "--isolation", "in-process", "--no-progress")
    assert p.returncode == 3 and p.stdout == ""
    assert "refusing to grade" in p.stderr and "bubblewrap" in p.stderr and "--no-require-isolation" in p.stderr
    p = cli("grade", str(tmp_path), "--isolation", "in-process", "--no-require-isolation", "--no-progress")
    assert p.returncode == 0 and p.stdout.splitlines()[0] == "isolation: in-process", p.stderr
    # one notebook (someone's own, on a laptop): not required
    p = cli("grade", str(STUB), "--isolation", "in-process", "--no-progress", "--format", "json")
    assert p.returncode == 0 and json.loads(p.stdout)["isolation"]["level"] == "in-process"


def test_grade_reports_state_the_isolation_level(tmp_path):
    from autograder.isolation import levels as isolation

    level = isolation.select("best").level
    p = cli("grade", str(STUB), "--format", "json", "--no-progress", "--csv", str(tmp_path / "g.csv"),
            "--summary-json", str(tmp_path / "s.json"), "--gradescope", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["isolation"]["level"] == level and out["submissions"][0]["isolation"] == level
    assert json.loads((tmp_path / "s.json").read_text())["isolation"]["level"] == level
    rows = (tmp_path / "g.csv").read_text().splitlines()
    assert rows[0].endswith(",isolation") and rows[1].endswith(f",{level}")
    gs = json.loads((tmp_path / "r.json").read_text())
    assert f"Graded under isolation: {level}" in gs["output"] and gs["extra_data"]["isolation"]["level"] == level
    assert f"grading under isolation: {level}" in p.stderr


def test_isolation_command_names_the_level_and_what_is_missing():
    from autograder.isolation import levels as isolation

    iso = isolation.select("best")
    p = cli("isolation")
    assert p.returncode == (0 if iso.kernel_enforced else 3)
    assert p.stdout.startswith(f"isolation: {iso.level}")

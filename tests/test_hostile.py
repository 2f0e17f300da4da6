"""Hostile and broken submissions through the real CLI and the real nbgrader flow.

For each: grading finishes within a bound, no point is awarded that the code did not earn, only the
TODOs concerned lose points, the reason fits on one line, and the submission is left byte-for-byte
unchanged while the other submissions are still graded.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time

import nbformat
import pytest

from autograder import layout
from tests.conftest import ROOT
from tests.hostile_corpus import ALL, cases, write_corpus

S01 = layout.stage_files("s01")

CASES = {c.name: c for c in cases()}
BOUND_S = 240  # the whole corpus, 2 cores: generous; a hang would blow it


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    paths = write_corpus(folder)
    digests = {n: hashlib.sha256(p.read_bytes()).hexdigest() for n, p in paths.items()}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--format", "json", "--no-progress"],
                          cwd=ROOT, capture_output=True, text=True, timeout=BOUND_S + 60)
    seconds = time.monotonic() - start
    results = {}
    for sub in json.loads(proc.stdout)["submissions"]:
        results[sub["path"].rsplit("/", 1)[-1].removesuffix(".ipynb")] = sub
    return proc, seconds, results, paths, digests


def test_hostile_corpus_has_at_least_20_kinds():
    assert len(CASES) >= 20


def test_hostile_cli_finishes_within_bound_and_reports_unreadable(cli_run):
    proc, seconds, results, _, _ = cli_run
    assert seconds < BOUND_S
    assert proc.returncode == 1  # two files are not gradable notebooks...
    assert "corrupt_notebook" in proc.stderr and "not_a_notebook" in proc.stderr
    assert len(results) == len(CASES)  # ...and every other submission was still graded


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_cli_verdict(cli_run, name):
    _, _, results, paths, digests = cli_run
    case, sub = CASES[name], results[name]
    assert hashlib.sha256(paths[name].read_bytes()).hexdigest() == digests[name], "submission was modified"
    if case.raw is not None:
        assert sub["error"] and not sub["todos"] and sub["score"] == 0
        return
    by_id = {t["id"]: t for t in sub["todos"]}
    earned = {t for t, r in by_id.items() if r["passed"]}
    assert earned == case.earns, {t: r["message"] for t, r in by_id.items()}
    for todo, phrase in case.reason.items():
        msg = by_id[todo]["message"]
        assert phrase in msg and "\n" not in msg and "Traceback" not in msg, msg
    assert sub["score"] == sum(r["max_points"] for t, r in by_id.items() if t in case.earns)


def test_hostile_files_outside_the_sandbox_are_untouched():
    assert not layout.stage_files("s01").reference.read_text().startswith("x")
    assert (ROOT / "autograder" / "grade.py").exists()
    import os
    assert not os.path.exists("/tmp/pcw_pwned.txt")


@pytest.mark.slow
def test_hostile_nbgrader_gradebook_matches_cli(cli_run, tmp_path):
    _, _, results, paths, _ = cli_run
    course = tmp_path / "course"
    subprocess.run([sys.executable, "-m", "autograder", "course", str(course), "--stage", "s01"], cwd=ROOT, check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "01_prefix_match", "--create"], cwd=course, check=True,
                   capture_output=True)
    gradable = [n for n, c in CASES.items() if c.raw is None]
    for name in gradable:
        d = course / "submitted" / name / S01.notebook
        shutil.copytree(course / "release" / S01.notebook, d)
        shutil.copy(paths[name], d / S01.learner().name)
    p = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", S01.notebook], cwd=course, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for name in gradable:
            nb = gb.find_submission_notebook(S01.notebook, S01.notebook, name)
            book = {g.name.replace("-", "."): g.auto_score for g in nb.grades if g.name.replace("-", ".") in ALL}
            cli = {t["id"]: t["points"] for t in results[name]["todos"] if t["id"] in ALL}
            if book != cli:
                graded = nbformat.read(course / "autograded" / name / S01.notebook / S01.learner().name, as_version=4)
                said = [o.get("evalue") or o.get("text") for c in graded.cells for o in c.get("outputs", [])]
                pytest.fail(f"{name}: gradebook {book} != CLI {cli}; nbgrader outputs: {said}")

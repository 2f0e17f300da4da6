"""A class graded in several grader processes gives what one process gives: one result per file, in
the files' order, the same verdicts; a part that ends without its results, or a stopped run, still
gives every file a result."""
from __future__ import annotations

import shutil
import threading

import nbformat
import pytest

from autograder.core import layout
from autograder.core.results import SubmissionResult
from autograder.grading import shards
from autograder.grading.grade import grade_paths
from tests.mutants_s01 import MUTANTS
from tests.support.variants import variant_notebook

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades notebooks in parts, in subprocesses

S01 = layout.stage_files("s01")


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """Five notebooks (honest, wrong, unfilled, honest twice: one file given twice) and a file that is
    not one."""
    folder = tmp_path_factory.mktemp("class")
    nbformat.write(variant_notebook("s01", []), folder / "a_honest.ipynb")
    nbformat.write(variant_notebook("s01", MUTANTS["s01.normalize/sorts"][1]), folder / "b_wrong.ipynb")
    shutil.copy(S01.learner(), folder / "c_unfilled.ipynb")
    (folder / "d_broken.ipynb").write_text("this is not a notebook")
    return [str(folder / n) for n in ("a_honest.ipynb", "b_wrong.ipynb", "c_unfilled.ipynb", "d_broken.ipynb",
                                      "a_honest.ipynb")]


def _graded(paths, monkeypatch, parts: str, stop=None):
    monkeypatch.setenv(shards.GRADERS_ENV, parts)
    done, todos = [], []
    results = grade_paths(paths, on_done=done.append, on_todo=lambda: todos.append(1), stop=stop)
    return results, done, len(todos)


def _same(r: SubmissionResult) -> dict:
    return {**r.to_json(), "seconds": None}


def test_parts_give_what_one_process_gives(klass, monkeypatch):
    one, one_done, one_todos = _graded(klass, monkeypatch, "1")
    two, two_done, two_todos = _graded(klass, monkeypatch, "2")
    assert [_same(r) for r in two] == [_same(r) for r in one]
    assert [r.path for r in two] == klass and two[0].score == two[0].max_score > two[1].score
    assert sorted(map(_same, two_done), key=str) == sorted(map(_same, one_done), key=str) and len(two_done) == len(klass)
    assert two_todos == one_todos > 0


def test_results_travel_as_json_and_back(klass, monkeypatch):
    results, _, _ = _graded(klass[:4], monkeypatch, "1")
    for r in results:
        assert SubmissionResult.from_json(r.to_json(), r.seconds) == r


def test_a_part_that_ends_without_results_reports_each_of_its_files_as_the_graders_fault(klass, monkeypatch):
    monkeypatch.setattr(shards, "BOOT", "import sys; sys.exit(3)")
    results, done, todos = _graded(klass, monkeypatch, "2")
    assert [r.path for r in results] == klass and len(done) == len(klass) and todos == 0
    assert all(not r.graded and "grader error" in r.error for r in results)


def test_a_stopped_run_in_parts_still_gives_every_file_a_result(klass, monkeypatch):
    stop = threading.Event()
    stop.set()
    results, done, _ = _graded(klass, monkeypatch, "2", stop=stop)
    assert [r.path for r in results] == klass and len(done) == len(klass)
    assert all(not t.passed for r in results for t in r.todos)


@pytest.mark.parametrize("submissions,cores,parts", [(10, 2, 1), (1000, 2, 1), (1000, 8, 1), (1000, 9, 2),
                                                     (1000, 64, 8), (20, 64, 1), (40, 64, 2), (1, 64, 1)])
def test_one_process_per_eight_cores_and_sixteen_submissions(submissions, cores, parts, monkeypatch):
    monkeypatch.delenv(shards.GRADERS_ENV, raising=False)
    monkeypatch.delenv(shards.SHARD_ENV, raising=False)
    assert shards.shard_count(submissions, cores) == parts
    monkeypatch.setenv(shards.GRADERS_ENV, "3")
    assert shards.shard_count(submissions, cores) == min(3, submissions)
    monkeypatch.setenv(shards.SHARD_ENV, "1")  # a part grades its part itself
    assert shards.shard_count(submissions, cores) == 1

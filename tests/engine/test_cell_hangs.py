"""A notebook that hangs at cell level costs one time limit, not one per TODO, and its classmates in
the same run are not queued behind it; a correct notebook that prints 50 MB still earns every point."""
from __future__ import annotations

import nbformat
import pytest

from autograder.core.spec import load_stage
from autograder.grading.grade import grade_paths
from tests.support.hostile_corpus import REF_CLASS, S01
from tests.support.variants import variant_notebook

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades a class beside a hanging notebook

FULL = sum(t.points for t in load_stage("s01").todos)  # the quiz included


def _with_cell(path, cell: str) -> None:
    nb = nbformat.read(S01.instructor(), as_version=4)  # the quiz answered
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("solution") and c.metadata["nbgrader"]["grade_id"] != "s01-code-quiz":
            c.source = cell
    nbformat.write(nb, path)


def test_cell_level_hang_runs_one_child_and_does_not_hold_up_classmates(tmp_path):
    _with_cell(tmp_path / "hangs.ipynb", "while True:\n    pass\n" + REF_CLASS)
    _with_cell(tmp_path / "prints_50_mb.ipynb", "print('x' * (50 << 20))\n" + REF_CLASS)
    honest = []
    for i in range(3):
        honest.append(tmp_path / f"honest_{i}.ipynb")
        nbformat.write(variant_notebook("s01", []), honest[-1])
    done: list[str] = []  # the order in which the submissions' results came in
    results = {r.path.rsplit("/", 1)[-1]: r
               for r in grade_paths([tmp_path], workers=2, on_done=lambda r: done.append(r.path.rsplit("/", 1)[-1]))}
    hang = results["hangs.ipynb"]
    first, *rest = hang.todos
    assert hang.score == 0 and first.status.value == "stopped" and "during your TODO cell 1" in first.message
    # the others were never run: they carry the first one's verdict, said once
    assert all(t.message == first.message + " (the same for every TODO of this notebook)" for t in rest)
    assert all(c.message == "not run" for t in rest for c in t.checks)
    for name in ["prints_50_mb.ipynb"] + [p.name for p in honest]:
        assert results[name].score == results[name].max_score == FULL, results[name].todos
    # Not queued behind the hang: the other worker graded a classmate to its end while the hang ran. Said
    # by the order of the results, not by comparing the children's wall times, which a busy machine
    # stretches unevenly (a 50 MB printer once took 7.36 s against the hang's 7.25 s).
    assert sorted(done) == sorted(results), done
    assert min(done.index(p.name) for p in honest) < done.index("hangs.ipynb"), done

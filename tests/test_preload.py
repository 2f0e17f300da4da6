"""What a grading child imports before learner code: a TODO's own preload (stage 8's SciPy) reaches
only the children that might need it, and a submission whose code might reach it anywhere gets it in
every child, so that leaving it out never changes a verdict."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.core import layout
from autograder.core.pysource import reaches_only_through
from autograder.grading.grade import child_preload, grade_paths
from autograder.grading.submission import read_submission
from tests.support.variants import assert_all_pass, variant_notebook

DEF = "def detect_sharing(hit, miss, alpha=1e-3):\n    from scipy import stats\n    return stats.ks_2samp(hit, miss)\n"
OTHER = "def fit_threshold(hits, misses):\n    \"\"\"The midpoint.\"\"\"\n    return (min(hits) + max(misses)) / 2\n"


@pytest.mark.parametrize("source", [
    DEF,                                   # the function itself may import and use anything
    OTHER,
    "def f(x=-1, y=(2, 'a')):\n    pass\n",
    "'''A docstring.'''\npass\n",
])
def test_definitions_alone_never_reach_the_function(source):
    assert reaches_only_through(source, "detect_sharing", "detect_sharing")


@pytest.mark.parametrize("source", [
    DEF + "print(detect_sharing([1.0], [2.0]))\n",                # runs at cell time
    "def fit_threshold(h, m):\n    return detect_sharing(h, m)[0]\n",  # another function calls it
    "def fit_threshold(h, m):\n    import numpy\n    return 0.0\n",      # imports outside it
    "import math\n",
    "def f(h):\n    return globals()['detect_' + 'sharing'](h, h)\n",
    "def f(h):\n    return 'detect_sharing'\n",
    "@cache\ndef f(h):\n    return h\n",                               # a decorator runs at cell time
    "def f(h=print('x')):\n    return h\n",                          # so does a default
    "class C:\n    pass\n",
    "x = 1\n",
    "def broken(:\n",
])
def test_anything_else_might(source):
    assert not reaches_only_through(source, "detect_sharing", "detect_sharing")


def _cells_with(extra: str, folder: Path) -> Path:
    nb = variant_notebook("s08", [])
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "s08-code-detect_sharing")
    cell.source += extra
    path = folder / "demo.ipynb"
    nbformat.write(nb, path)
    return path


def test_another_todos_function_calling_it_gets_scipy_in_that_child(tmp_path):
    nb = variant_notebook("s08", [])
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "s08-code-fit_threshold")
    cell.source = cell.source.replace("    ### END SOLUTION", "    detect_sharing([1.0], [2.0])\n    ### END SOLUTION")
    path = tmp_path / "calls.ipynb"
    nbformat.write(nb, path)
    sub = read_submission(path)
    assert child_preload(sub, sub.stage.todo("s08.fit_threshold")) == ["scipy.stats"]


def test_only_detect_sharing_child_imports_scipy_for_the_reference():
    sub = read_submission(layout.stage_files("s08").instructor())
    assert {t.id: child_preload(sub, t) for t in sub.stage.todos} == {
        "s08.birthday_search": [], "s08.fit_threshold": [], "s08.detect_sharing": ["scipy.stats"],
        "s08.tenant_extra_keys": [], "s08.quiz": []}


def test_a_demo_call_in_a_cell_gets_scipy_in_every_child_and_full_marks(tmp_path):
    path = _cells_with("\n\nprint(detect_sharing([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]))\n", tmp_path)
    sub = read_submission(path)
    assert all(child_preload(sub, t) == ["scipy.stats"] for t in sub.stage.todos)
    [result] = grade_paths([str(path)])
    assert_all_pass(result)


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

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades notebooks to see what each child preloads

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



# -- a child's budget is the stage's: nothing the learner's cells name buys another one (issue 44) --

NEVER_RUN_TORCH = "if False:\n    import torch\n"
HOG = "_held = bytearray(768 * 2**20)  # more than stage 1's 512 MB, less than torch's 4,096 MB\n"


def _stage1_with(prefix: str, folder: Path, lang: str = "en") -> Path:
    nb = variant_notebook("s01", [], lang)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    cell.source = prefix + cell.source
    path = folder / f"torch_{lang}.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_torch_import_that_never_runs_buys_no_preload_and_no_budget(tmp_path):
    """``if False: import torch`` once gave every stage-1 child torch's preload and 4,096 MB."""
    from autograder.grading.grade import child_payload_for, limits_for
    from autograder.grading.supervise import ChildLimits

    sub = read_submission(_stage1_with(NEVER_RUN_TORCH, tmp_path))
    stage = sub.stage
    assert stage.preload == [] and stage.memory_limit_mb == 512
    for todo in stage.todos:
        assert child_preload(sub, todo) == [] and child_payload_for(sub, todo)["preload"] == []
    assert limits_for(stage) == ChildLimits(stage.time_limit_s, 512, 5.0)


def test_a_torch_stage_child_keeps_torch_and_its_budget():
    """An honest stage-6 child: torch preloaded before learner code, 4,096 MB, torch's start-up allowance."""
    from autograder.grading.grade import limits_for
    from autograder.grading.supervise import ChildLimits

    sub = read_submission(layout.stage_files("s06").instructor())
    assert all(child_preload(sub, t) == ["torch"] for t in sub.stage.todos)
    assert limits_for(sub.stage) == ChildLimits(sub.stage.time_limit_s, 4096, 15.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_graded_child_holds_no_more_than_the_stage_allows_and_the_report_says_why(tmp_path, lang):
    """The real run: the cell's 768 MB fails under stage 1's 512 MB (it was held under torch's budget),
    and the report states the rule that ``check()`` states, in the notebook's language."""
    from autograder.core import messages
    from autograder.core.i18n import text

    path = _stage1_with(NEVER_RUN_TORCH + HOG, tmp_path, lang)
    [result] = grade_paths([str(path)], only={str(path): {"s01.normalize"}})
    [todo] = result.todos
    assert not todo.passed and "MemoryError" in todo.message, todo.message
    rule = text(messages.STAGE_WITHOUT_PACKAGE, lang).format(n=1, package="torch")
    sub = read_submission(path)
    assert result.warnings == [rule] and sub.stage.not_preloaded(sub.cells) == ["torch"]


def _notebook_namespace(path: Path) -> dict:
    """The globals after running the notebook's TODO cells as IPython does: each cell's source in linecache."""
    import linecache

    nb = nbformat.read(path, as_version=4)
    ns: dict = {"__name__": "__main__"}
    cells = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    for i, cell in enumerate(cells):
        name = f"<{path.stem} cell {i}>"
        linecache.cache[name] = (len(cell.source), None, cell.source.splitlines(True), name)
        exec(compile(cell.source, name, "exec"), ns)
    return ns


def test_check_in_the_notebook_states_the_same_rule(tmp_path, capsys):
    """check() reads the cells where the notebook wrote the stage's TODOs and says what the grader's
    report says; without a torch import it says nothing of it."""
    from autograder.core import messages
    from autograder.core.i18n import text
    from autograder.learner.inline import run_check

    rule = text(messages.STAGE_WITHOUT_PACKAGE, "zh").format(n=1, package="torch")
    report = run_check("s01.normalize", namespace=_notebook_namespace(_stage1_with(NEVER_RUN_TORCH, tmp_path)), lang="zh")
    assert report.passed and report.notes == [rule]
    assert f"⚠️ {rule}" in capsys.readouterr().out
    plain = tmp_path / "plain"
    plain.mkdir()
    assert run_check("s01.normalize", namespace=_notebook_namespace(_stage1_with("", plain)), quiet=True).notes == []

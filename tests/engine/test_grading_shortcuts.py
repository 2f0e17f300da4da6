"""The grader's shortcuts answer exactly what the long way answers.

Each shortcut skips work whose answer is already known: comparing two outcomes whose tagged JSON is
the same without decoding them, reading a cell for imports only when it spells one, reading a
submission's other cells only when a TODO's cell lost its metadata. Each test here puts the shortcut
beside the long way on the inputs where they could part.
"""
from __future__ import annotations

import ast
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.core import data, pysource
from autograder.grading.submission import read_submission
from tests.support.variants import variant_json

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True),
                     st.sampled_from([0.0, -0.0, 1.0, math.nan, math.inf]), st.text(max_size=3), st.binary(max_size=2))
_HASHABLE = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, math.nan]),
                                   st.text(max_size=2)), lambda inner: st.tuples(inner, inner), max_leaves=4)
VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner), st.dictionaries(_HASHABLE, inner, max_size=3),
    st.frozensets(_HASHABLE, max_size=3), st.sets(_HASHABLE, max_size=3)), max_leaves=10)
ATOLS = st.sampled_from([None, 0.0, 0.5, -1.0])


def _long_way(expected, got, atol) -> bool:
    """outcomes_equal as it was: both values decoded, then compared."""
    return data.values_equal(data.decode(expected["value"]), data.decode(got["value"]), atol)


@settings(max_examples=40, deadline=None)
@given(VALUES, VALUES, ATOLS)
def test_outcomes_compare_as_their_decoded_values_do(a, b, atol):
    for x, y in [(a, b), (a, a), (b, b)]:
        ex, got = data.ok(x), data.ok(y)
        assert data.outcomes_equal(ex, got, atol) == _long_way(ex, got, atol)


@pytest.mark.parametrize("a,b,atol,equal", [
    (1, True, None, False), ([1], [1.0], None, False), ((1, 2), [1, 2], None, False),
    (-0.0, 0.0, None, True), (math.nan, math.nan, None, True), ({math.nan: 1}, {math.nan: 1}, None, False),
    (frozenset([math.nan]), frozenset([math.nan]), None, False), (1.0, 1.0, -1.0, False), (1.0, 1.25, 0.5, True),
    ({"__float__": "x"}, {"__float__": "x"}, None, True), (10**16, 1e16, None, False), ("1", 1, None, False),
    ({1: "a"}, {"1": "a"}, None, False), (b"\x01", b"\x01", None, True),
])
def test_outcomes_that_look_alike_but_compare_otherwise(a, b, atol, equal):
    """Where the same tagged JSON is not equal once decoded (a NaN key is not itself; a negative
    tolerance passes nothing) and where different types look the same to ``==``."""
    ex, got = data.ok(a), data.ok(b)
    assert data.outcomes_equal(ex, got, atol) == _long_way(ex, got, atol) == equal


def _imports_the_long_way(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_][A-Za-z0-9_]*)", source, flags=re.M))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("source", [
    "x = 1\n", "def f():\n    return 2\n", "from torch\n", "  from  numpy\nx = (\n", "import scipy.stats as s\n",
    "def f():\n    from torch import nn\n", "s = 'import torch'\n", "from . import x\n", "x = 'from here'\n",
    "class A:\n    '''Imports nothing.'''\n", "def f(:\n    import numpy\n", "",
])
def test_cells_read_for_imports_as_before(source):
    assert pysource._find_imports(source) == _imports_the_long_way(source)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["import", "from", " ", "\n", "torch", ".", "x", "=", "(", "'", "def f():", "  "]),
                max_size=12).map("".join))
def test_any_text_is_read_for_imports_as_before(source):
    assert pysource._find_imports(source) == _imports_the_long_way(source)


def _drop_metadata(nb: dict, owner: str) -> dict:
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution") and re.search(rf"^(class|def) {owner}\b", "".join(cell["source"]), flags=re.M):
            del cell["metadata"]["nbgrader"]
            return nb
    raise AssertionError(f"no solution cell defines {owner}")


def test_a_todo_cell_that_lost_its_metadata_is_still_found(tmp_path):
    """The other cells are read only for a TODO name no solution cell defines: with every TODO cell
    marked, none is; with one cell's metadata gone, that cell is found among them and graded."""
    whole = json.loads(variant_json("s08", []))
    marked = read_submission(_write(tmp_path / "marked.ipynb", whole), [], "s08")
    assert not marked.warnings and len(marked.cells) == sum(
        bool(c["metadata"].get("nbgrader", {}).get("solution")) for c in whole["cells"])
    lost = read_submission(_write(tmp_path / "lost.ipynb", _drop_metadata(whole, "birthday_search")), [], "s08")
    assert lost.cells == marked.cells
    assert lost.warnings == ["1 TODO cell(s) had lost their nbgrader metadata; graded them too"]


def _write(path, nb: dict):
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path

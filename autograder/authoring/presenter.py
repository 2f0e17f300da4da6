"""The presenter copy of an instructor notebook: what an instructor projects in class.

The instructor notebook carries nbgrader's markers (``### BEGIN SOLUTION`` / ``### END SOLUTION`` around
each solution, ``### BEGIN HIDDEN TESTS`` regions in test cells), which mean nothing to a room watching a
demo. The presenter copy keeps every line of solution code and every visible ``check(...)``, and drops
the markers and the hidden tests (a cell left empty by that is dropped). It is generated with the other
notebooks by ``python -m autograder build`` (``solutions/presenter/``, ``solutions/presenter/zh/``).

Invariant: the copy is a function of the instructor notebook alone (byte-reproducible), holds no
marker line and no hidden-test line, and no nbgrader metadata (it is never released or graded).
"""
from __future__ import annotations

import copy

from nbformat import NotebookNode

from autograder.core.pysource import HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END

MARKERS = (SOLUTION_BEGIN, SOLUTION_END, HIDDEN_BEGIN, HIDDEN_END)


def presenter_source(source: str) -> str:
    """``source`` without nbgrader's solution markers and without its hidden-test regions."""
    keep, hidden = [], False
    for line in source.split("\n"):
        mark = line.strip()
        if mark == HIDDEN_BEGIN:
            hidden = True
        elif mark == HIDDEN_END:
            hidden = False
        elif mark not in (SOLUTION_BEGIN, SOLUTION_END) and not hidden:
            keep.append(line)
    return "\n".join(keep).strip("\n")


def presenter_notebook(instructor: NotebookNode) -> NotebookNode:
    """The presenter copy of ``instructor`` (left unchanged)."""
    nb = copy.deepcopy(instructor)
    cells = []
    for cell in nb.cells:
        had_marks = any(line.strip() in MARKERS for line in cell.source.split("\n"))
        if had_marks:
            cell.source = presenter_source(cell.source)
            if not cell.source.strip():
                continue  # only hidden tests: nothing to show
        cell.metadata.pop("nbgrader", None)
        cells.append(cell)
    nb.cells = cells
    return nb

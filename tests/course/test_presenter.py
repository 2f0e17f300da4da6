"""The presenter copy of each instructor notebook: no nbgrader marker and no hidden test left, every line of
every solution kept, and the committed copy is what the build writes from the committed instructor notebook."""
from __future__ import annotations

import nbformat
import pytest

from autograder.authoring.build import _dump_nb
from autograder.authoring.presenter import MARKERS, presenter_notebook
from autograder.core import layout
from autograder.core.pysource import HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END

EDITIONS = [(sid, lang) for sid in layout.built_stages() for lang in layout.stage_files(sid).languages]


def _region(source: str, begin: str, end: str) -> list[str]:
    lines, inside = [], False
    for line in source.split("\n"):
        if line.strip() == begin:
            inside = True
        elif line.strip() == end:
            inside = False
        elif inside:
            lines.append(line)
    return lines


@pytest.mark.parametrize("sid, lang", EDITIONS)
def test_presenter_copy_keeps_the_solutions_and_drops_every_marker(sid, lang):
    files = layout.stage_files(sid)
    inst = nbformat.read(files.instructor(lang), as_version=4)
    path = files.presenter(lang)
    assert path.read_text(encoding="utf-8") == _dump_nb(presenter_notebook(inst))  # as built, from the committed notebook
    shown = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in shown.cells)
    assert not [line for line in text.split("\n") if line.strip() in MARKERS]
    assert "hidden=True" not in text
    assert all("nbgrader" not in c.metadata for c in shown.cells)
    by_id = {c.get("id"): c.source for c in shown.cells}
    solutions = [c for c in inst.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    assert solutions
    for cell in solutions:  # every code cell of the solution, each line of it, in the presenter's same cell
        kept = by_id[cell.get("id")].split("\n")
        assert all(line in kept for line in _region(cell.source, SOLUTION_BEGIN, SOLUTION_END) if line.strip())
    for cell in inst.cells:
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code":
            visible = [line for line in cell.source.split("\n") if line.strip() and line.strip() not in MARKERS
                       and line not in _region(cell.source, HIDDEN_BEGIN, HIDDEN_END)]
            if visible:
                assert by_id[cell.get("id")].split("\n") == visible  # the public check(...) call, shown
            else:
                assert cell.get("id") not in by_id  # a cell of hidden tests only: dropped
    assert len(shown.cells) <= len(inst.cells)

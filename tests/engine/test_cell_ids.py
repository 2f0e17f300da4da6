"""nbgrader's cell ids have one owner (autograder/core/cell_ids.py): what it builds, it reads back, and the
built notebooks carry exactly its ids."""
from __future__ import annotations

import nbformat
import pytest

from autograder.core import cell_ids, layout
from autograder.core.spec import load_stage


@pytest.mark.parametrize("stage_id", layout.built_stages())
def test_every_id_in_a_built_notebook_is_one_the_owner_makes_and_reads(stage_id):
    stage = load_stage(stage_id, hidden=False)
    nb = nbformat.read(layout.stage_files(stage_id).learner("en"), as_version=4)
    ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]
    graded = {cell_ids.todo_id(g) for g in ids} - {None}
    assert graded == {t.id for t in stage.todos}
    assert all(cell_ids.stage_of(g) == stage_id for g in ids)
    for g in ids:
        name = cell_ids.code_object(g)
        if name is not None:
            assert cell_ids.code_cell_id(stage_id, name) == g and cell_ids.todo_id(g) is None


def test_ids_round_trip_and_never_collide():
    assert cell_ids.todo_id(cell_ids.grade_id("s03.admit")) == "s03.admit"
    assert cell_ids.code_object(cell_ids.code_cell_id("s03", "BlockPool")) == "BlockPool"
    assert cell_ids.todo_id("s03-code-quiz") is None and cell_ids.todo_id("s03-setup-4") is None
    assert cell_ids.todo_id("notes-1") is None and cell_ids.stage_of("x-1") is None
    with pytest.raises(ValueError):
        cell_ids.locked_cell_id("s03", "code", 1)

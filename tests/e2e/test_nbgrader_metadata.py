"""The course's ``CheckCellMetadataOnce`` decides every notebook exactly as nbgrader's ``CheckCellMetadata``:
the same notebooks pass, the same fail, with the same error; only the schema is compiled once."""
from __future__ import annotations

import copy

import nbformat
import pytest
from nbgrader.nbgraderformat import ValidationError
from nbgrader.preprocessors import CheckCellMetadata

from autograder.core import layout
from autograder.integrations.nbgrader_glue import CheckCellMetadataOnce


def _release():
    return nbformat.read(layout.stage_files("s01").learner(), as_version=4)


def _graded_cell(nb):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))


def _edit(change):
    def edited():
        nb = _release()
        change(nb)
        return nb
    return edited


def _set(key, value):
    return _edit(lambda nb: _graded_cell(nb).metadata.nbgrader.__setitem__(key, value))


def _drop(key):
    return _edit(lambda nb: _graded_cell(nb).metadata.nbgrader.pop(key))


def _duplicate_id(nb):
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")]
    cells[1].metadata.nbgrader.grade_id = cells[0].metadata.nbgrader.grade_id


NOTEBOOKS = {
    "as released": _release,
    "points as text": _set("points", "two"),
    "an unknown key": _set("colour", "red"),
    "grade as a number": _set("grade", 1),
    "no grade_id": _drop("grade_id"),
    "empty grade_id": _set("grade_id", ""),
    "no points": _drop("points"),
    "an older schema": _set("schema_version", 2),
    "a newer schema": _set("schema_version", 9),
    "a duplicate grade_id": _edit(_duplicate_id),
    "markdown grade cell that is no solution": _edit(lambda nb: setattr(_graded_cell(nb), "cell_type", "markdown")),
}


def _verdict(preprocessor, nb):
    try:
        preprocessor.preprocess(nb, {})
    except Exception as exc:  # noqa: BLE001 - the outcome compared is the exception itself
        return type(exc).__name__, str(exc)
    return "passed", ""


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_same_notebooks_pass_and_fail_with_the_same_error(name):
    nb = NOTEBOOKS[name]()
    ours, theirs = _verdict(CheckCellMetadataOnce(), copy.deepcopy(nb)), _verdict(CheckCellMetadata(), copy.deepcopy(nb))
    assert ours == theirs
    assert (ours[0] == "passed") == (name == "as released"), ours


def test_the_error_nbgrader_logs_names_the_same_schema_violation(caplog):
    nb = _set("points", "two")()
    for preprocessor in (CheckCellMetadataOnce(), CheckCellMetadata()):
        with pytest.raises(ValidationError):
            preprocessor.preprocess(copy.deepcopy(nb), {})
    logged = [r.getMessage() for r in caplog.records if "is not of type" in r.getMessage()]
    assert len(logged) == 2 and logged[0].splitlines()[-1] == logged[1].splitlines()[-1], logged

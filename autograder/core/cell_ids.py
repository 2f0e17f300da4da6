"""nbgrader's ids for this course's cells: the one place they are made and read.

A TODO's graded test cell has ``grade_id`` = the TODO id with ``-`` for ``.`` (``s01.match_prefix`` ->
``s01-match_prefix``: nbgrader's schema forbids ``.``); the solution cell that holds one code object
of the reference (a class or a function the learner fills) has ``<stage>-code-<name>``. The stage of
any of these ids is its ``sNN`` head; the locked given cells have ``<stage>-setup-<n>`` and
``<stage>-given-<n>``.

Invariant: :func:`todo_id` inverts :func:`grade_id`, :func:`code_object` inverts :func:`code_cell_id`,
and no grade id of a TODO is a code cell id.
"""
from __future__ import annotations

import re

_CODE = "-code-"
_STAGE = re.compile(r"^(s\d\d)[.-]")


def grade_id(todo_id: str) -> str:
    """The nbgrader ``grade_id`` of TODO ``todo_id``'s test cell."""
    return todo_id.replace(".", "-")


def todo_id(grade_id: str) -> str | None:
    """The TODO a test cell's ``grade_id`` names, or None for any other id (a code cell's, a stray one)."""
    if _CODE in grade_id or grade_id.count("-") != 1 or not _STAGE.match(grade_id):
        return None
    return grade_id.replace("-", ".")


def code_cell_id(stage_id: str, name: str) -> str:
    """The ``grade_id`` of the solution cell holding the reference's code object ``name``."""
    return f"{stage_id}{_CODE}{name}"


def locked_cell_id(stage_id: str, kind: str, index: int) -> str:
    """The ``grade_id`` of a locked given cell: ``kind`` is ``setup`` or ``given``, ``index`` its place."""
    if kind not in ("setup", "given"):
        raise ValueError(f"a locked cell is setup or given, not {kind!r}")
    return f"{stage_id}-{kind}-{index}"


def code_object(grade_id: str) -> str | None:
    """The code object a solution cell's ``grade_id`` holds, or None when it is not a code cell id."""
    return grade_id.split(_CODE, 1)[1] if _CODE in grade_id else None


def stage_of(grade_id: str) -> str | None:
    """The stage id (``s03``) at the head of any of this course's ids, or None."""
    m = _STAGE.match(grade_id)
    return m.group(1) if m else None

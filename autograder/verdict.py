"""Judging outcomes: one place that turns (expected, got) into a pass/fail line for a learner.

Both the inline ``check()`` and the isolated grader use this, so a learner sees the same words in
the notebook, in a CLI report and in nbgrader feedback.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder import data
from autograder.probe import todo_of_function
from autograder.spec import Check, Stage


@dataclass
class CheckVerdict:
    """The judgement of one check. ``detail`` lines never reveal a hidden check's input or values."""

    check: Check
    passed: bool
    summary: str
    detail: list[str] = field(default_factory=list)
    not_implemented: str | None = None  # TODO id whose stub was hit


def judge(stage: Stage, check: Check, expected: dict, got: dict) -> CheckVerdict:
    if expected["kind"] not in ("ok", "raised"):
        raise RuntimeError(f"the reference failed its own check {check.key}: {expected}")
    if got["kind"] == "todo":
        todo = todo_of_function(stage, got.get("function", ""))
        own = stage.todo(check.todo)
        if todo is None or todo.id == own.id:
            return CheckVerdict(check, False, f"{own.label} is not implemented yet", not_implemented=own.id,
                                detail=["replace `raise NotImplementedError()` with your code, then re-run that cell"])
        return CheckVerdict(check, False, f"{own.label} needs {todo.label}, which is not implemented yet",
                            not_implemented=todo.id, detail=[f"finish TODO {todo.number} first"])
    if data.outcomes_equal(expected, got, check.atol):
        return CheckVerdict(check, True, check.name)
    note = []
    if got["kind"] == "raised" and got["type"] == "NameError":
        # the usual cause when grading: a helper defined in a cell that is not a TODO cell
        note = ["note:     only the cells with TODOs are graded; define your helpers inside them"]
    if check.hidden:
        return CheckVerdict(check, False, f"hidden check '{check.name}' failed", detail=[f"hint:     {check.hint}", *note])
    lines = []
    if check.call:
        lines.append(f"input:    {check.call}")
    lines += [f"expected: {data.show(expected)}", f"got:      {data.show(got)}", f"hint:     {check.hint}", *note]
    return CheckVerdict(check, False, check.name, detail=lines)

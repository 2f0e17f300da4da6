"""A learner's value that breaks its TODO's contract, found by given code before it does harm.

Given code (a simulator, a view, a server loop) that consumes what a learner's TODO returned checks
it first and raises :class:`BadResult` naming that TODO, instead of failing deep inside itself (a
``KeyError`` three modules down, a loop that never ends, memory that grows until the kernel dies).
The exception renders as one line in Jupyter (no traceback through the course's code) and the demo
guard (:mod:`autograder.demos`) prints that line and stops the cell.

Light on purpose: given modules import it, and so may a grading child.
"""
from __future__ import annotations

from autograder import messages
from autograder.i18n import L, text


class BadResult(ValueError):
    """Given code received from ``todo`` a value that breaks that TODO's contract.

    Invariant: ``todo`` is a TODO id (``sNN.name``); ``problem`` says what was wrong, in both languages,
    without the course's expected value.
    """

    def __init__(self, todo: str, problem: L) -> None:
        self.todo, self.problem = todo, problem
        super().__init__(todo, problem)

    @property
    def label(self) -> str:
        from autograder.spec import load_stage, stage_of

        try:
            return load_stage(stage_of(self.todo), hidden=False).todo(self.todo).label
        except Exception:  # noqa: BLE001 - an unknown id still names itself
            return self.todo

    def line(self, lang: str | None = None) -> str:
        return text(messages.BAD_RESULT, lang).format(label=self.label, problem=text(self.problem, lang), id=self.todo)

    def __str__(self) -> str:
        return self.line()

    def _render_traceback_(self) -> list[str]:
        # Jupyter shows this line instead of a traceback through the course's code.
        return ["❌ " + self.line()]


def expect(ok: bool, todo: str, problem: L) -> None:
    """Raise :class:`BadResult` for ``todo`` unless ``ok``."""
    if not ok:
        raise BadResult(todo, problem)

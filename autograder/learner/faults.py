"""The line a learner reads when given code found that a TODO returned a value breaking its contract.

Given code (a simulator, a view, a server loop, a reference module's given functions) that consumes
what a learner's TODO returned checks it first and raises ``workbook.contract.ResultError`` naming
that TODO, instead of failing deep inside itself (a ``KeyError`` three modules down, a loop that
never ends, memory that grows until the kernel dies). That error renders as the one line built here,
in the notebook's language, both in Jupyter (instead of a traceback) and in the demo guard
(:mod:`autograder.learner.demos`). Light on purpose: it is imported lazily, while an error is shown.
"""
from __future__ import annotations

from autograder.core import messages
from autograder.core.i18n import L, text


def result_line(todo: str, problem: L, lang: str | None = None) -> str:
    """"your TODO n (id) returned <problem>: fix it ..." for ``todo`` in ``lang`` (default: the notebook's)."""
    from autograder.core.spec import load_stage, stage_of

    try:
        label = load_stage(stage_of(todo), hidden=False).todo(todo).label
    except Exception:  # noqa: BLE001 - an unknown id still names itself
        label = todo
    return text(messages.BAD_RESULT, lang).format(label=label, problem=text(problem, lang), id=todo)

"""What a stage's grading children import before learner code runs: what the stage declares, never
what a submission asks for.

A grading child can load a native library (torch's) only before the learner's first cell: from then
on its audit hook refuses to load native code. So each stage declares what its children preload
(:attr:`autograder.core.spec.Stage.preload`, and a TODO's own :attr:`autograder.core.spec.Todo.preload`),
and a child's budget (memory, time, start-up allowance) follows from that declaration alone
(:func:`autograder.grading.grade.limits_for`): a cell that names torch, run or not (``if False:
import torch``), adds no preload and buys no budget. An ``import torch`` in a stage that preloads no
torch therefore fails when it runs during grading; :func:`not_preloaded` finds such imports in the
learner's TODO cells and :func:`note` words the rule, the same for ``check()`` in the notebook
(:mod:`autograder.learner.inline`) and for the grader's report (:mod:`autograder.grading.grade`).

Invariant: every answer here depends on the stage's declaration and, for :func:`not_preloaded`,
on the source text of the cells alone.
"""
from __future__ import annotations

from collections.abc import Iterable

from autograder.core import messages
from autograder.core.i18n import text
from autograder.core.pysource import imported_modules
from autograder.core.spec import Stage

#: Libraries a stage preloads only where it needs them and a learner might import anyway: their
#: import in a stage that does not preload them is what :func:`note` warns of.
OPTIONAL = ("torch",)


def declared(stage: Stage) -> tuple[str, ...]:
    """Every module the stage's children may preload: the stage's own, then each TODO's, once each."""
    return tuple(dict.fromkeys([*stage.preload, *(m for t in stage.todos for m in t.preload)]))


def preloads(stage: Stage, package: str) -> bool:
    """Whether some child of ``stage`` preloads ``package`` (a top-level name: ``torch``)."""
    return any(m.split(".")[0] == package for m in declared(stage))


def not_preloaded(stage: Stage, sources: Iterable[str]) -> list[str]:
    """The :data:`OPTIONAL` packages the cells ``sources`` import (anywhere, run or not) that no child
    of ``stage`` preloads: those imports fail when they run during grading."""
    found = set().union(*(imported_modules(s) for s in sources))
    return [p for p in OPTIONAL if p in found and not preloads(stage, p)]


def note(stage: Stage, sources: Iterable[str], lang: str | None = None) -> list[str]:
    """One line per package of :func:`not_preloaded`, in ``lang``: the rule, as check() and the report say it."""
    return [text(messages.STAGE_WITHOUT_PACKAGE, lang).format(n=stage.number, package=p)
            for p in not_preloaded(stage, sources)]

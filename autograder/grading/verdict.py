"""Judging outcomes: one place that turns (expected, got) into a pass/fail line for a learner.

Both the inline ``check()`` and the isolated grader use this, so a learner sees the same words in
the notebook, in a CLI report and in nbgrader feedback, in the notebook's language.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from autograder.child.probe import todo_of_function
from autograder.core import data, messages
from autograder.core.i18n import language, text
from autograder.core.spec import Check, Stage
from autograder.grading.display import first_difference, show


@dataclass
class CheckVerdict:
    """The judgement of one check. ``detail`` lines never reveal a hidden or secret check's values;
    ``hint``, when set, is one of them (the check's own hint line), so that a report can leave it out
    for a check that does not lead (:meth:`without_hint`)."""

    check: Check
    passed: bool
    summary: str
    detail: list[str] = field(default_factory=list)
    not_implemented: str | None = None  # TODO id whose stub was hit
    blamed: str | None = None           # another TODO this failure comes from (inline check)
    hint: str = ""                      # the hint line among ``detail`` ("" when it has none)

    def without_hint(self) -> CheckVerdict:
        """This verdict without its hint line: how a failure that does not lead is shown. Its hint was
        written for its own slip, and when another check of the TODO fails too, the most specific one
        (:func:`lead_first`) names the mistake made; its expected and got stay."""
        if not self.hint:
            return self
        return replace(self, detail=[d for d in self.detail if d != self.hint], hint="")


def check_title(check: Check, lang: str | None = None) -> str:
    return text(check.title, lang) or check.name


def check_label(check: Check, lang: str | None = None) -> str:
    """How a report names a check: its identifier in English; in Chinese its title with the identifier
    after it (the identifier alone is English words run together)."""
    title = text(check.title, lang)
    if (lang or language()) != "zh" or not title or title == check.name:
        return check.name
    return text(messages.CHECK_NAMED, lang).format(title=title, name=check.name)


def judge(stage: Stage, check: Check, expected: dict, got: dict, lang: str | None = None,
          take: Callable[[str], str] | None = None) -> CheckVerdict:
    """The verdict on one check. ``take``: the grader's report is being written, and every line
    rendered from ``got`` passes it (:meth:`autograder.grading.disclosure.Disclosure.take`); values are then
    rendered compact (:func:`autograder.grading.display.compact_value`). Without it (the notebook's own
    check), the learner's value is shown as it is."""
    compact = take is not None
    take = take or (lambda piece: piece)

    def say(entry, **kw) -> str:
        return text(entry, lang).format(**kw)

    if expected["kind"] not in ("ok", "raised"):
        raise RuntimeError(f"the reference failed its own check {check.key}: {expected}")
    own = stage.todo(check.todo)
    if got["kind"] == "todo":
        todo = todo_of_function(stage, got.get("function", ""))
        if todo is None or todo.id == own.id:
            return CheckVerdict(check, False, say(messages.NOT_IMPLEMENTED, label=own.label), not_implemented=own.id,
                                detail=[say(messages.NOT_IMPLEMENTED_DO)])
        return CheckVerdict(check, False, say(messages.NEEDS, label=own.label, other=todo.label),
                            not_implemented=todo.id, detail=[say(messages.NEEDS_DO, n=todo.number)])
    title = check_title(check, lang)
    if data.outcomes_equal(expected, got, check.atol):
        return CheckVerdict(check, True, title)
    note = []
    if got["kind"] == "raised" and got["type"] == "NameError":
        # the usual cause when grading: a helper defined in a cell that is not a TODO cell
        note = [say(messages.HELPER_OUTSIDE)]
    hint = f"{say(messages.HINT)} {text(check.hint, lang)}"
    if check.secret:
        return CheckVerdict(check, False, say(messages.QUIZ_WRONG, q=title), detail=[hint], hint=hint)
    if check.hidden:
        return CheckVerdict(check, False, say(messages.HIDDEN_FAILED, name=check_label(check, lang)), detail=[hint, *note],
                            hint=hint)
    lines = []
    if check.call:
        lines.append(f"{say(messages.INPUT)} {text(check.call, lang)}")
    lines.append(f"{say(messages.EXPECTED)} {show(expected, lang)}")
    shown = take(show(got, lang, compact))
    if shown:  # "" when the report shows nothing of this value
        lines.append(f"{say(messages.GOT)} {shown}")
    if shown and expected["kind"] == got["kind"] == "ok":
        where = first_difference(data.decode(expected["value"]), data.decode(got["value"]), check.atol, lang=lang,
                                 compact=compact)
        where = take(where) if where else ""
        if where:
            lines.append(f"{say(messages.WHERE)} {where}")
    return CheckVerdict(check, False, title, detail=[*lines, hint, *note], hint=hint)


def lead_first(failed: list[CheckVerdict]) -> list[CheckVerdict]:
    """Failed verdicts of one TODO, the one to lead with first: the most specific check (the narrowest
    mistake, whose hint is about the mistake made), then the stage's order."""
    return sorted(failed, key=lambda v: -v.check.specificity)

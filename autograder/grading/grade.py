"""Grading notebooks: one confined child process per (submission, TODO); verdicts in this process.

This process never executes learner code. It reads each submission as data
(:mod:`autograder.grading.submission`), sends the learner's solution cells to a child
(:mod:`autograder.grading.supervise`, :mod:`autograder.child.sandbox`) together with the reference stubbed at the
TODO under test (:mod:`autograder.grading.trusted`), reads back raw outcomes under the child's protocol
(:mod:`autograder.child.protocol`), and compares them with the reference's outcomes, which it computes
itself (:mod:`autograder.grading.verdict`). Every message is composed here; the only text in it that came
from the child passed :mod:`autograder.grading.leaks` first, and all of it, for one submission, fits the
budget and feedback level of :mod:`autograder.grading.disclosure`. All children of a run share one isolation
level (:mod:`autograder.isolation.levels`), which every result states.
"""
from __future__ import annotations

import ast
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from autograder.child.protocol import CellError, CellsDone, Event
from autograder.child.sandbox import _strip_magics as strip_magics  # how the child reads a cell: one owner
from autograder.core import layout, messages
from autograder.core.course import feedback_level, grading_mode
from autograder.core.i18n import LANGUAGES, L, text
from autograder.core.pysource import names_defined, parse, reaches_only_through
from autograder.core.results import CheckResult, SubmissionResult, TodoResult, TodoStatus
from autograder.core.spec import Check, Stage, Todo
from autograder.grading import batch, shards
from autograder.grading.disclosure import Disclosure, unlimited
from autograder.grading.leaks import LeakGuard
from autograder.grading.reports import shown_path
from autograder.grading.staging import GradingRun, private_library_caches
from autograder.grading.submission import Submission, SubmissionError, digest, expand, read_submission
from autograder.grading.supervise import ChildLimits, ChildReport, child_env, describe, run_child
from autograder.grading.trusted import child_code, child_modules, expected_outcomes, given_members, leak_guard, setup_cells, stage_words
from autograder.grading.verdict import CheckVerdict, check_label, check_title, judge, lead_first
from autograder.isolation import levels as isolation

__all__ = ["grade_paths", "run_todo", "expand", "SubmissionResult", "TodoResult"]

VERBOSE_ENV = "PCW_GRADE_VERBOSE"  # "1": every grading run logs each child to stderr, as --verbose does


#: Address space a child that imports torch needs (its libraries map far more than they touch).
TORCH_MEMORY_MB = 4096


def child_preload(sub: Submission, todo: Todo) -> list[str]:
    """What the child grading ``todo`` imports before any learner code runs: the stage's preload and
    each TODO's own preload where this child might need it; never anything because the learner's
    cells name it. A module the stage does not preload (torch in a stage without it) cannot be
    imported from learner code in the child (its native libraries would load after the audit hook is
    in place), and both ``check()`` and the report say so (:meth:`Stage.not_preloaded`):
    were a learner's ``import torch`` to add torch here, ``if False: import torch`` would buy every
    child torch's budget (:func:`limits_for`).

    Another TODO's preload is left out only when the learner's cells provably never reach that
    TODO's function nor import anything outside it (:func:`reaches_only_through`; the trusted setup
    and given cells never call a TODO's function): then nothing that runs here can need it, so no
    verdict changes, and the child is spared its import (SciPy: most of a stage-8 child's CPU).
    Every child that might need it imports it exactly as before, at the same point. What is left
    out is always a subset of what the stage declares."""
    preload = list(sub.stage.preload)
    for other in (t for t in sub.stage.todos if t.preload):
        needed = other.id == todo.id or not all(
            reaches_only_through(c, other.owner, other.target.split(".")[-1]) for c in sub.cells)
        preload += [m for m in other.preload if needed and m not in preload]
    return preload


def limits_for(stage: Stage) -> ChildLimits:
    """A child's limits (time, memory, start-up allowance): from the stage alone, with room for torch
    when the stage or one of its TODOs preloads it; nothing a submission holds changes them."""
    torch = stage.preloads("torch")
    memory = max(stage.memory_limit_mb, TORCH_MEMORY_MB) if torch else stage.memory_limit_mb
    return ChildLimits(stage.time_limit_s, memory, 15.0 if torch else 5.0)


@dataclass
class Graded:
    """One TODO's result, and what the batch needs to revisit it: the child's report (None when it
    never ran) and every piece of child text the message shows.

    Invariant: once its submission's verdicts are composed, ``report`` is None (see
    :func:`grade_paths`): a child's events, which may hold what its channel allows
    (:data:`autograder.child.protocol.MAX_CHANNEL_UNITS`), are kept until then and no longer, so what
    a run holds does not grow with the submissions already graded."""

    result: TodoResult
    report: ChildReport | None = None
    shown: list[str] = field(default_factory=list)
    same_as_first: bool = False  # not run: the submission's first TODO already stopped in its cells

    @property
    def stopped_in_cells(self) -> bool:
        """The child stopped while the learner's cells ran: the same would happen for every TODO."""
        r = self.report
        return r is not None and r.grader_error is None and r.stopped is not None and not r.cells_finished


@dataclass(frozen=True)
class Reporting:
    """How results are worded and scored: ``lang`` overrides each submission's own language;
    ``grading`` is the points rule (see :mod:`autograder.core.course`); ``log`` receives a description
    of each child (see :func:`autograder.grading.supervise.describe`); ``feedback`` is what a failed hidden
    check shows (see :mod:`autograder.grading.disclosure`)."""

    lang: str | None = None
    grading: str = "all-or-nothing"
    log: Callable[[str], None] | None = None
    """Where to log, per child, the isolation applied, its exit status and its kept output (None: nowhere)."""
    feedback: str = "values"


def run_todo(sub: Submission, todo: Todo, run: GradingRun, on_cells: Callable[[], None] | None = None,
             how: Reporting = Reporting()) -> TodoResult:
    """Grade one TODO of one submission in its own child."""
    return _grade_todo(sub, todo, run, on_cells, how).result


def child_payload_for(sub: Submission, todo: Todo, lang: str | None = None) -> dict:
    """What the child grading ``todo`` of ``sub`` is given: the setup cells, the learner's cells, the
    modules it may import as text, its hidden checks compiled (never their text), and what to import
    before any learner code. The setup cells end by choosing the report's language (``lang``, else the
    submission's edition), so that the course's own messages the child produces (an error its given
    code raises, say) read as the notebook reads them."""
    stage = sub.stage
    setup = setup_cells(stage)
    said = lang or sub.lang
    if setup and said in LANGUAGES:  # the same number of cells: a cell number in the report still holds
        setup = [*setup[:-1], f"{setup[-1]}\nset_language({said!r})\n"]
    cells = [("setup", s) for s in setup] + [("your", s) for s in sub.cells]
    return {"stage": stage.id, "todo": todo.id, "reference": stage.reference, "cells": cells,
            "modules": child_modules(stage, todo), "code": child_code(stage, todo), "words": stage_words(stage),
            "preload": child_preload(sub, todo)}


def _grade_todo(sub: Submission, todo: Todo, run: GradingRun, on_cells: Callable[[], object] | None,
                how: Reporting, compose_now: bool = True) -> Graded:
    """The verdict on ``todo`` from a child of its own; with ``compose_now`` False, the child's report
    with a placeholder verdict that :func:`_disclosed` replaces (so the thread never waits for the
    stage's trusted material: a verdict needs it, a child does not)."""
    stage = sub.stage
    payload = child_payload_for(sub, todo, how.lang)
    members_lacking(sub, todo.owner)  # read from the cells here, with the rest of what the child needs of them

    def on_event(event: Event) -> None:
        if on_cells is not None and isinstance(event, CellsDone):
            on_cells()

    report = run_child(payload, limits_for(stage), run, [c.key for c in stage.checks_for(todo.id)], on_event,
                       staging=run.staging_for(todo))
    if how.log is not None:
        how.log(describe(report, f"{sub.path} · {todo.id}"))
    if not compose_now:
        return Graded(_grader_error(todo, "its verdict was not composed"), report)
    return compose(sub, todo, report, leak_guard(stage), how=how)


def _grader_error(todo: Todo, error: str) -> TodoResult:
    return TodoResult(todo.id, todo.number, todo.title, 0.0, float(todo.points), TodoStatus.GRADER_ERROR,
                      f"grader error: {error}")


def compose(sub: Submission, todo: Todo, report: ChildReport, guard: LeakGuard, withhold: bool = False,
            how: Reporting = Reporting(), disclosure: Disclosure | None = None) -> Graded:
    """The verdict on ``todo`` from its child's report. Every piece of child text the messages show
    passes ``disclosure`` (the submission's budget; default: one of its own, unlimited); with
    ``withhold``, no child text at all."""
    stage = sub.stage
    lang = how.lang or sub.lang
    out = disclosure or unlimited(guard, how.feedback)
    if withhold:
        out.withhold = True
    take = out.take
    expected = _in_language(stage, expected_outcomes(stage), lang)
    checks = stage.checks_for(todo.id)
    said = report.summary
    outcomes = said.outcomes
    n_setup = len(setup_cells(stage))
    n_cells = n_setup + len(sub.cells)  # what the child was sent: a cell number outside it is not believed

    judged: list[tuple[Check, CheckVerdict | None, dict | None]] = []
    for c in checks:
        raw = dict(outcomes[c.key]) if c.key in outcomes else None
        judged.append((c, None if raw is None else _judge(stage, c, expected[c.key], raw, lang), raw))
    # An unfinished TODO says so first; otherwise the most specific failing check leads (its hint is
    # about the mistake made) and the others follow it, each with its expected and got but not its
    # hint (written for another slip).
    failed_raw = [v for _, v, _ in judged if v is not None and not v.passed]
    unfinished = [v for v in failed_raw if v.not_implemented]
    raw_order = unfinished + lead_first([v for v in failed_raw if not v.not_implemented])
    raw_of = {id(v): raw for _, v, raw in judged}
    shown_of = {}
    for f in raw_order:  # in the order the report names them, so the lead's value is the first the budget pays
        c = f.check
        # every failing public check shows the learner's value within the submission's budget (see
        # autograder.grading.disclosure); a hidden check never shows one (judge), and under "titles" says less
        shows_value = not (c.hidden and out.titles_only)
        leads = f is raw_order[0]
        shown = _shown_verdict(stage, c, expected[c.key], guard.outcome(raw_of[id(f)]), f, lang,  # type: ignore[arg-type]  # f failed, so raw
                               (take if leads else out.take_sparing) if shows_value else None)
        shown_of[id(f)] = shown if leads else shown.without_hint()
    verdicts = []
    for c, v, _raw in judged:
        if v is None:
            verdicts.append(CheckResult(c.name, c.hidden, False, text(messages.NOT_RUN, lang), check_label(c, lang)))
            continue
        if not v.passed:
            v = shown_of[id(v)]
        line = v.summary if v.passed else _one_line(v.summary, v.detail)
        verdicts.append(CheckResult(c.name, c.hidden, v.passed, line, check_label(c, lang)))
    ordered = [shown_of[id(v)] for v in raw_order]
    first_fail = ordered[0] if ordered else None
    n_hidden = sum(c.hidden for c in checks)
    stopped_in = _check(stage, said.check)
    hidden_fail = (first_fail is not None and first_fail.check.hidden) or (stopped_in is not None and stopped_in.hidden)
    quiet = out.titles_only and hidden_fail  # a failed hidden check says its title and hint, nothing the child said
    if report.grader_error is not None:
        status, message = TodoStatus.GRADER_ERROR, text(messages.GRADER_ERROR, lang).format(error=report.grader_error)
    elif report.tampering:  # which rule it broke is the child's choice: named only while the budget pays for it
        what = "; ".join(text(t, lang) for t in report.tampering)  # the rule in the report's language
        status, message = TodoStatus.TAMPERED, text(messages.TAMPERING, lang).format(what=what) if out.charge(what) \
            else text(messages.TAMPERING_UNSAID, lang)
    elif checks and all(v.passed for v in verdicts) and report.stopped is None:
        status, message = TodoStatus.PASSED, text(messages.ALL_PASSED, lang).format(n=len(checks), h=n_hidden)
    elif said.missing:
        status, message = TodoStatus.MISSING, take(guard.fragment(said.missing))
    elif report.stopped is not None and quiet and stopped_in is not None:
        # where it stopped (and why) is the child's choice: told only while the budget pays for it
        status, message = TodoStatus.STOPPED, _title_only(stopped_in, lang) if out.charge(stopped_in.name) \
            else text(messages.STOPPED_UNSAID, lang)
    elif report.stopped is not None:
        index = said.cell if type(said.cell) is int and 0 <= said.cell < n_cells else None
        where = _check_name(said.check) or _cell_name(index, n_setup) or messages.WHERE_BEFORE
        line = text(messages.STOP_WHERE.format(what=report.stopped, where=where), lang)
        status, message = TodoStatus.STOPPED, line if out.charge(line) else text(messages.STOPPED_UNSAID, lang)
    elif first_fail is not None and first_fail.not_implemented:
        status, message = TodoStatus.NOT_IMPLEMENTED, first_fail.summary
    elif first_fail is not None and quiet:
        status, message = TodoStatus.FAILED, _title_only(first_fail.check, lang)
    elif first_fail is not None:
        head = first_fail.summary if first_fail.check.hidden or first_fail.check.secret else \
            text(messages.CHECK_FAILED, lang).format(name=check_label(first_fail.check, lang))
        status, message = TodoStatus.FAILED, _one_line(head, first_fail.detail)
        for v in ordered[1:]:  # each other failure: its name, then its input, expected and got, a field each
            if not v.not_implemented:
                message += " | " + text(messages.ALSO_FAILING, lang).format(titles=_failed_name(v.check, lang))
                message += "".join(f" |   {' '.join(d.split())}" for d in v.detail)  # indented under its name
    else:
        status, message = TodoStatus.FAILED, text(messages.NO_RESULTS, lang)
    if quiet:
        verdicts = [replace(v, message=_title_only(c, lang)) if c.hidden and not v.passed and
                    v.message != text(messages.NOT_RUN, lang) else v for v, c in zip(verdicts, checks, strict=True)]
    elif status not in (TodoStatus.PASSED, TodoStatus.GRADER_ERROR) and said.cell_errors:
        message += text(messages.CELL_ERROR_NOTE, lang).format(
            error=_cell_error(said.cell_errors[0], guard, take, n_cells, lang))
    if status not in (TodoStatus.TAMPERED, TodoStatus.GRADER_ERROR) and not quiet:
        # The grader's own fact (what the learner's cells lack), at most narrowed by what the child said:
        # each name once, in a fixed order, each line charged (whether it shows is the child's choice).
        for name in sorted(members_lacking(sub, todo.owner) & set(said.course_versions)):
            if out.charge(name):
                message += " | " + text(messages.COURSE_VERSION_USED, lang).format(label=todo.label, name=name)
    points = todo_points(todo, status, verdicts, how.grading)
    result = TodoResult(todo.id, todo.number, todo.title, points, float(todo.points), status, message, verdicts)
    return Graded(result, report, list(out.shown) if disclosure is None else [])


def _in_language(stage: Stage, expected: dict[str, dict], lang: str | None) -> dict[str, dict]:
    """``expected`` with the Chinese text of each public check's expected exception (the build's
    ``message_zh`` in ``autograder/expected/sNN.json``) where the report is in Chinese, so "expected:
    raises ..." reads as the notebook's own check() does. Only a message that is the same as the
    public file's English one is given its translation."""
    if lang != "zh":
        return expected
    public = _public_translations(stage.id)
    return {key: {**out, "message_zh": public[key][1]} if key in public and out.get("kind") == "raised" and
            out.get("message") == public[key][0] else out for key, out in expected.items()}


@functools.lru_cache(maxsize=None)
def _public_translations(stage_id: str) -> dict[str, tuple[str, str]]:
    """``{check key: (English message, Chinese message)}`` of the stage's public expected exceptions."""
    path = layout.stage_files(stage_id).expected
    try:
        checks = json.loads(path.read_text(encoding="utf-8"))["checks"]
    except (OSError, ValueError, KeyError):
        return {}
    return {key: (out["message"], out["message_zh"]) for key, out in checks.items()
            if isinstance(out, dict) and out.get("message_zh") and isinstance(out.get("message"), str)}


def members_lacking(sub: Submission, owner: str) -> frozenset[str]:
    """The given members of the course's class ``owner`` (:func:`given_members`, ``Owner.member``) that
    the learner's cells lack: bound in the body of no top-level ``class Owner`` of any of them. Read
    from the source, never from the child; empty when no cell defines ``class Owner`` at top level
    (nothing is claimed then). A cell that does not parse defines nothing: the child cannot run it either."""
    given = given_members(sub.stage, owner)
    defined = _class_members(tuple(sub.cells), owner) if given else None
    if defined is None:
        return frozenset()
    return frozenset(name for name in given if name.split(".", 1)[1] not in defined)


@functools.lru_cache(maxsize=256)
def _class_members(cells: tuple[str, ...], owner: str) -> frozenset[str] | None:
    """The names bound in the body of any top-level ``class owner`` of ``cells`` (None: no such class).
    Cached: :func:`_grade_todo` asks first, on the worker thread that reads the cells before the child
    starts (as :func:`child_preload` does), so that composing the verdicts parses nothing again."""
    classes = [node for src in cells for node in _top_level(src) if isinstance(node, ast.ClassDef) and node.name == owner]
    return frozenset().union(*(names_defined(c.body) for c in classes)) if classes else None


def _top_level(source: str) -> list[ast.stmt]:
    """The top-level statements of a cell as the child runs it (IPython magics commented out); none
    when it does not parse."""
    try:
        return parse(strip_magics(source)).body
    except (SyntaxError, ValueError):
        return []


def _shown_verdict(stage: Stage, check: Check, expected: dict, display: dict, v: CheckVerdict, lang: str | None,
                   take: Callable[[str], str] | None) -> CheckVerdict:
    """The failing verdict ``v`` as the report words it: judged again on the sanitized outcome
    ``display``, its learner-derived lines through ``take`` (None: the check's own words only)."""
    d = _judge(stage, check, expected, display, lang, take or _nothing)
    if d.passed:  # sanitizing made it equal: say that it failed, and nothing of what it returned
        hint = f"{text(messages.HINT, lang)} {text(check.hint, lang)}"
        d = CheckVerdict(check, False, check.name if not check.hidden else
                         text(messages.HIDDEN_FAILED, lang).format(name=check.name), [hint], hint=hint)
    return replace(d, not_implemented=v.not_implemented)


def _nothing(piece: str) -> str:
    """What a check other than a TODO's first failure shows of the learner's value: nothing."""
    return ""


def _check(stage: Stage, key: str | None) -> Check | None:
    return next((c for c in stage.checks if c.key == key), None) if key else None


def _title_only(check: Check, lang: str | None) -> str:
    """A failed hidden check at the "titles" feedback level: its name, title and hint."""
    return _one_line(text(messages.HIDDEN_TITLE_ONLY, lang).format(name=check.name, title=check_title(check, lang)),
                     [f"{text(messages.HINT, lang)} {text(check.hint, lang)}"])


def todo_points(todo: Todo, status: TodoStatus, verdicts: list[CheckResult], grading: str) -> float:
    """All the points when every check passed; under partial credit, the share of checks passed
    (hidden ones included) when the TODO ran to the end; else none."""
    if status is TodoStatus.PASSED:
        return float(todo.points)
    if grading == "partial" and status is TodoStatus.FAILED and verdicts:
        return round(todo.points * sum(v.passed for v in verdicts) / len(verdicts), 2)
    return 0.0


def _judge(stage: Stage, check: Check, expected: dict, got: dict, lang: str | None = None,
           take: Callable[[str], str] | None = None) -> CheckVerdict:
    """:func:`judge`, for an outcome that came from the child: one it cannot read fails the check."""
    try:
        return judge(stage, check, expected, got, lang, take)
    except Exception:  # noqa: BLE001 - a malformed (forged) outcome: the learner's doing, not a grader bug
        if expected.get("kind") not in ("ok", "raised"):
            raise  # the reference failed its own check: that is a grader bug, reported as such
        return CheckVerdict(check, False, check.name if not check.hidden else
                            text(messages.HIDDEN_FAILED, lang).format(name=check.name),
                            [text(messages.UNREADABLE_RESULT, lang)])


def _failed_name(check: Check, lang: str | None) -> str:
    """How a report names a failed check: a public check by its title, a hidden one by its name only."""
    if check.hidden:
        return text(messages.HIDDEN_FAILED, lang).format(name=check.name)
    return check_title(check, lang)


def _cell_error(err: CellError, guard: LeakGuard, take: Callable[[str], str], n_cells: int,
                lang: str | None = None) -> str:
    """A cell error the child reported, as a note: the cell number only among the cells sent."""
    cell = err.cell if type(err.cell) is int and 1 <= err.cell <= n_cells else "?"
    said = take(f"{guard.name(err.type)}: {guard.fragment(err.message, 100)}")
    words = messages.SETUP_CELL_RAISED if err.kind == "setup" else messages.YOUR_CELL_RAISED
    return text(words, lang).format(cell=cell, error=said)


def _one_line(head: str, detail: list[str]) -> str:
    return " | ".join([head, *(" ".join(d.split()) for d in detail)])


def _check_name(key: str | None) -> L | None:
    if key is None:
        return None
    return (messages.WHERE_HIDDEN_CHECK if ":hidden:" in key else messages.WHERE_CHECK).format(name=key.rsplit(":", 1)[-1])


def _cell_name(index: int | None, n_setup: int) -> L | None:
    if index is None:
        return None
    return messages.WHERE_SETUP_CELL.format(n=index + 1) if index < n_setup else \
        messages.WHERE_TODO_CELL.format(n=index - n_setup + 1)


def _same_as_first(first: Graded, sub: Submission, todo: Todo, how: Reporting) -> Graded:
    """A TODO not run because the submission's first child already stopped in the learner's cells."""
    r = first.result
    lang = how.lang or sub.lang
    checks = [CheckResult(c.name, c.hidden, False, text(messages.NOT_RUN, lang), check_label(c, lang)) for c in sub.stage.checks_for(todo.id)]
    res = TodoResult(todo.id, todo.number, todo.title, 0.0, float(todo.points), r.status,
                     text(messages.SAME_FOR_EVERY, lang).format(message=r.message), checks)
    return Graded(res, None, list(first.shown), same_as_first=True)


def stderr_log() -> Callable[[str], None]:
    """A log for :class:`Reporting` that writes each entry whole to stderr (children end in parallel)."""
    lock = threading.Lock()

    def log(entry: str) -> None:
        with lock:
            print(entry, file=sys.stderr, flush=True)

    return log


def _disclosed(sub: Submission, todos: list[Todo], items: list[Graded], guard: LeakGuard, how: Reporting,
               withhold: bool) -> list[Graded]:
    """The submission's TODOs worded again under one budget, in TODO order (see
    :mod:`autograder.grading.disclosure`); each item's ``shown`` is what its messages show of the child's text."""
    out: list[Graded] = []
    budget = Disclosure(guard, how.feedback, withhold=withhold)
    for todo, g in zip(todos, items, strict=True):
        before = len(budget.shown)
        if g.report is not None:
            try:
                g = compose(sub, todo, g.report, guard, how=how, disclosure=budget)
            except Exception as exc:  # noqa: BLE001 - a grader bug (or a stage whose reference fails) sinks this TODO only
                g = Graded(_grader_error(todo, f"{type(exc).__name__}: {exc}"))
            g.shown = budget.shown[before:]
        elif g.same_as_first and out:
            g = _same_as_first(out[0], sub, todo, how)  # the first TODO's words again: nothing new is shown
        out.append(g)
    return out


# -- many submissions ------------------------------------------------------------------------------
def _prepare_trusted(stages: list[Stage]) -> None:
    """Compute each stage's trusted material ahead of the verdicts that need it. A failure is left to
    the verdict: it asks again and reports the error on its TODOs."""
    for stage in stages:
        try:
            expected_outcomes(stage)
            leak_guard(stage)
        except Exception:  # noqa: BLE001, S110 - raised again, and reported, where a verdict needs it
            pass


def grade_paths(paths: Iterable[str | Path], *, workers: int | None = None,
                on_done: Callable[[SubmissionResult], None] | None = None,
                on_todo: Callable[[], None] | None = None,
                iso: isolation.Isolation | str = "best", hidden: Iterable[str | os.PathLike] = (),
                lang: str | None = None, grading: str | None = None, feedback: str | None = None,
                only: Mapping[str, Collection[str]] | None = None,
                log: Callable[[str], None] | None = None,
                stop: threading.Event | None = None,
                stage: str | Callable[[Path], str | None] | None = None) -> list[SubmissionResult]:
    """Grade every notebook; one submission's failure never stops the others.

    ``only`` maps a path (as given) to the TODO ids to grade in it; its report has those TODOs only
    (the project's mutation tests grade a wrong answer on its own TODO).

    ``lang`` overrides each submission's own language; ``grading`` overrides course.toml's mode.

    ``iso``: the isolation every child runs under (an :class:`~autograder.isolation.levels.Isolation`, or
    what :func:`~autograder.isolation.levels.select` takes); ``hidden``: further paths no child may see
    (every submission is hidden from every child anyway).

    ``stage``: the stage each submission was handed in for, where the path knows it (a stage id for
    every file, or a function of the file's path answering None where it does not know): a notebook of
    another stage is refused (:func:`~autograder.grading.submission.read_submission`), never graded as
    the stage its cells claim.

    ``stop``: once set, no further child starts (a TODO not started then is a grader error; for a
    caller that will read no more results, e.g. an nbgrader run that ended early).

    ``log`` receives, per child, the isolation applied, its exit status and its kept output
    (:func:`autograder.grading.supervise.describe`); by default that goes to stderr when the environment
    sets ``PCW_GRADE_VERBOSE=1``, and nowhere otherwise.
    """
    private_library_caches()  # before any reference code imports torch here
    chosen_log = log
    if log is None and os.environ.get(VERBOSE_ENV) == "1":
        log = stderr_log()
    how = Reporting(lang, grading or grading_mode(), log, feedback or feedback_level())
    level = iso if isinstance(iso, isolation.Isolation) else isolation.select(iso)
    hidden_paths = [os.fspath(h) for h in hidden]  # read per file and given to every part: once, as strings
    files = expand(paths)
    pins = {str(f): pin for f in files if (pin := stage(f) if callable(stage) else stage) is not None}
    # More cores than one grader process can feed: the class in parts, a process each (see shards).
    # Not with ``only`` or a log of the caller's: those are for one process's own runs (tests, mutants).
    parts = shards.shard_count(len(files), batch.available_cores()) if chosen_log is None and only is None else 1
    if parts > 1:
        return shards.grade_in_shards(files, parts, workers=workers or batch.default_workers(), iso=level,
                                      hidden=hidden_paths, lang=lang, grading=grading, feedback=feedback, on_done=on_done,
                                      on_todo=on_todo, stop=stop, pins=pins)
    results: list[SubmissionResult] = []
    subs: list[tuple[int, Submission]] = []
    started = time.monotonic()
    first_of: dict[tuple[int, int], Path] = {}  # one file reached by two paths (a linked folder) is graded once
    for i, path in enumerate(files):
        try:
            sub = read_submission(path, hidden_paths, pins.get(str(path)))
        except SubmissionError as exc:
            results.append(SubmissionResult.not_graded(str(path), exc.in_language(how.lang)))
            continue
        except Exception as exc:  # noqa: BLE001 - a reader bug must not sink the batch: this file only
            results.append(SubmissionResult.not_graded(str(path), f"grader error while reading it: {type(exc).__name__}"))
            continue
        if sub.identity in first_of:
            same = SubmissionError.of(messages.SUBMISSION_SAME_FILE, name=shown_path(path), other=shown_path(first_of[sub.identity]))
            results.append(SubmissionResult.not_graded(str(path), same.in_language(how.lang)))
            continue
        first_of[sub.identity] = path
        results.append(SubmissionResult(str(path), sub.stage.id, lang=how.lang or sub.lang, warnings=[
            *sub.warnings, *(text(messages.STAGE_WITHOUT_PACKAGE, how.lang or sub.lang).format(n=sub.stage.number, package=p)
                             for p in sub.stage.not_preloaded(sub.cells))]))  # the rule check() states too
        subs.append((i, sub))
    for r in results:
        r.isolation = level.level
    def todos_of(sub: Submission) -> list[Todo]:
        wanted = (only or {}).get(str(sub.path))
        return [t for t in sub.stage.todos if wanted is None or t.id in wanted]

    for _, sub in subs:  # validate before any child starts
        wanted = (only or {}).get(str(sub.path))
        if wanted is not None and (not wanted or set(wanted) - {t.id for t in sub.stage.todos}):
            raise ValueError(f"only: {sorted(wanted)} are not TODOs of stage {sub.stage.id}")

    graded: dict[int, list[Graded | None]] = {i: [None] * len(todos_of(s)) for i, s in subs}
    lock = threading.Lock()

    def finish(gi: int) -> None:
        i, sub = subs[gi]
        with lock:
            items: list[Graded] = graded.pop(i)  # type: ignore[assignment]  # all its TODOs have finished
        try:
            _compose_all(sub, items, i)
        finally:
            for g in items:  # the batch keeps each job's result to the end: its child's events go now
                g.report = None

    def _compose_all(sub: Submission, items: list[Graded], i: int) -> None:
        try:
            guard = leak_guard(sub.stage)
            items = _disclosed(sub, todos_of(sub), items, guard, how, withhold=False)
            if guard.leaks_together(t for g in items for t in g.shown):  # a secret split across checks or TODOs
                items = _disclosed(sub, todos_of(sub), items, guard, how, withhold=True)
        except Exception as exc:  # noqa: BLE001 - no leak guard: no child text is shown, every TODO says why
            items = [Graded(_grader_error(t, f"{type(exc).__name__}: {exc}")) for t in todos_of(sub)]
        r = results[i]
        r.todos = [g.result for g in items]
        r.seconds = time.monotonic() - started
        now = digest(sub.path)
        if now is None:
            r.warnings.append("the submission file disappeared while it was graded")
        elif now != sub.digest:
            r.warnings.append("the submission file changed while it was graded")
        if on_done:
            on_done(r)

    def on_result(gi: int, ji: int, g: Graded) -> None:
        i, _ = subs[gi]
        with lock:
            graded[i][ji] = g
            last = all(x is not None for x in graded[i])
        if on_todo:
            on_todo()
        if last:
            verdicts.submit(finish, gi)

    def failed(job: tuple[Submission, Todo], exc: Exception) -> Graded:
        return Graded(_grader_error(job[1], f"{type(exc).__name__}: {exc}"))

    with GradingRun.open(level, hidden=[*hidden_paths, *(str(s.path) for _, s in subs)]) as run:
        # the fork servers (where children are forked) start and import in the background
        run.start_fork_servers([child_preload(s, t) for _, s in subs for t in todos_of(s)],
                               child_env(os.path.realpath(run.scratch_root)))
        stages = list({s.stage.id: s.stage for _, s in subs}.values())
        for each in stages:
            setup_cells(each)  # every child's payload starts with them
        # A verdict needs the stage's trusted material (the reference's outcomes, the leak guard), a child
        # does not: the material is computed stage by stage, in the order the jobs come, while children
        # run, and each submission's verdicts are composed on a thread of their own once its last child
        # is done, so that no worker waits for the material while a core could run a child.
        prepare = threading.Thread(target=_prepare_trusted, args=(stages,), name="pcw-trusted-material", daemon=True)
        prepare.start()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pcw-verdicts") as verdicts:
            batch.run_batch([[(s, t) for t in todos_of(s)] for _, s in subs],
                            work=lambda job, gate: _grade_todo(job[0], job[1], run, gate, how, compose_now=False),
                            shared_failure=lambda g: g.stopped_in_cells,
                            shortcut=lambda first, job: _same_as_first(first, job[0], job[1], how),
                            failed=failed, on_result=on_result, workers=workers or batch.default_workers(),
                            stop=stop)
        prepare.join()
    if on_done:
        for r in results:
            if not r.graded:
                on_done(r)
    return results

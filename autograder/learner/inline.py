"""``check()``: instant feedback inside a learner's notebook (``demo()`` lives in :mod:`autograder.learner.demos`).

Plain Python (no Jupyter extension), so it works the same on Colab, ModelScope and a laptop.
Public expected values come from ``autograder/expected/sNN.json``, generated from the reference;
hidden checks need the reference itself and so only run where ``solutions/`` exists (instructors).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import threading
import time
import types
from dataclasses import dataclass, field
from typing import Iterator

from autograder.child import twins
from autograder.child.probe import reference_outcome, run_probe
from autograder.core import layout, messages
from autograder.core.i18n import text
from autograder.core.spec import Check, Stage, Todo, has_hidden_checks, load_stage, stage_of
from autograder.grading.verdict import CheckVerdict, judge, lead_first
from autograder.learner.blame import as_graded, calls_recorded, find_blame, graded_cell_sources, names_outside_graded_cells

INLINE_TIME_LIMIT_S = 10  # CPU-seconds one check may spend in the kernel's main thread
INLINE_WALL_FACTOR = 3     # and this many times as many seconds on the clock, for code that waits


class CheckTimeout(BaseException):
    """The inline time limit fired. Not an ``Exception``: a probe's ``attempt()`` (which reports what
    each call raised and goes on with the next call) and a learner's own ``except Exception`` must not
    swallow it, or the next call would run on with no limit left (an endless loop hangs ``check()``)."""


@dataclass
class CheckReport:
    """What one ``check()`` call found; ``passed`` is True only when every check ran and passed.

    Invariant: ``verdicts`` and ``not_run`` together count the TODO's checks, except after a check that
    says the TODO is not implemented yet (the rest would say the same and are left out silently)."""

    todo: str
    verdicts: list[CheckVerdict] = field(default_factory=list)
    hidden: bool = False
    outside: list[str] = field(default_factory=list)  # names the TODO uses from outside the graded cells
    not_run: int = 0  # checks left out because an earlier one ran out of time
    notes: list[str] = field(default_factory=list)  # rules of grading the TODO cells break (as the report says)

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and all(v.passed for v in self.verdicts)

    def __repr__(self) -> str:
        n = sum(v.passed for v in self.verdicts)
        return f"<CheckReport {self.todo}: {n}/{len(self.verdicts) + self.not_run} passed>"


def load_expected(stage_id: str) -> dict:
    """The stage's generated public expected values: ``{"checks": {key: outcome}, "given_names": [...]}``."""
    return json.loads(layout.stage_files(stage_id).expected.read_text(encoding="utf-8"))


def wall_timeout_text(wall_s: float, cpu_s: float, load: float | None = None, cores: int | None = None) -> str:
    """Why code was stopped on the clock, in words from what was measured: the wall time, the CPU time
    it used, the machine's 1-minute load average and its cores. A load at or above the cores means
    other work had the CPU (a busy machine, not a sleeping program); below it, the code was waiting.
    ``load``/``cores`` default to this machine's now; an unknown load says neither."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = math.nan
    cores = cores or os.cpu_count() or 1
    said = text(messages.TIMEOUT_WALL).format(s=f"{wall_s:g}", cpu=cpu_s, load=load, cores=cores)
    if math.isnan(load):
        return said
    return said + text(messages.TIMEOUT_WALL_BUSY if load >= cores else messages.TIMEOUT_WALL_IDLE)


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    """Stop learner code that runs away: after ``seconds`` of the main thread's CPU time (an endless
    loop), or after :data:`INLINE_WALL_FACTOR` times as many seconds on the clock (code that waits:
    ``sleep``, ``input()``, a lock). CPU time, as the grader's children are limited: a busy or slow
    machine stretches the clock, not the CPU time the same code needs, so a correct answer is not
    stopped because other work shares the machine. The main thread's own clock, so that torch's worker
    threads do not count twice. Main thread on Unix only; without a per-thread CPU clock, the clock alone
    (``seconds`` of it); off Unix, no limit."""
    main = threading.main_thread()
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not main:
        yield
        return
    try:
        clock = time.pthread_getcpuclockid(main.ident)  # type: ignore[arg-type]  # the main thread has started
        start = time.clock_gettime(clock)
    except (AttributeError, OSError):  # no per-thread CPU clock here (macOS): the clock alone, as long as
        clock = None                   # the CPU limit, and a message that does not claim to know which
    wall = INLINE_WALL_FACTOR * seconds if clock is not None else seconds
    which: list = []  # the limit that fired, as the message that says so
    done = threading.Event()

    def waited() -> str:
        """The clock limit's message: with a CPU clock, what was measured (CPU time, the machine's load)."""
        if clock is None:
            return text(messages.TIMEOUT_CLOCK).format(s=wall)
        return wall_timeout_text(wall, time.clock_gettime(clock) - start)

    def on_alarm(signum, frame):
        if done.is_set():  # the check ended as the limit fired: nothing left to stop
            return
        raise CheckTimeout(which[0] if which else waited())

    def watch(done: threading.Event) -> None:
        began = time.monotonic()
        while not done.wait(0.05):
            if clock is not None and time.clock_gettime(clock) - start > seconds:
                which.append(text(messages.TIMEOUT).format(s=seconds))
            elif time.monotonic() - began > wall:
                which.append(waited())
            else:
                continue
            signal.pthread_kill(main.ident, signal.SIGALRM)  # type: ignore[arg-type]  # the main thread has started
            return

    old = signal.signal(signal.SIGALRM, on_alarm)
    watcher = threading.Thread(target=watch, args=(done,), name="check-time-limit", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()  # first: an alarm the watcher sends from now on is ignored
        watcher.join()
        signal.signal(signal.SIGALRM, old)  # runs a pending alarm's handler first (a no-op now)


def _caller_globals() -> dict:
    return sys._getframe(2).f_globals  # check() -> _caller_globals(): the notebook's frame is two up


def check(todo_id: str, hidden: bool = False) -> None:
    """Run the checks of one TODO on the objects defined in the calling notebook and print a report.

    A failed check that passes with the course's code for the other TODOs (as the grader runs it)
    names the other TODO to fix first instead of giving its own hint. ``hidden=True`` runs the
    hidden checks (instructors only). Under nbgrader (validate or autograde) a failing check raises
    ``AssertionError`` so that the cell scores 0. Returns nothing, so that the cell shows only the
    report; use :func:`run_check` to get it as an object.

    [zh]
    对调用它的笔记本中定义的对象运行某个 TODO 的检查，并打印报告。

    如果一个没通过的检查在其他 TODO 换成课程代码（评分时就是这样运行的）之后能通过，报告会指出应当先修改的那个
    TODO，而不是给出这个检查自己的提示。``hidden=True`` 运行隐藏检查（仅限讲师）。在 nbgrader 中（验证或自动
    评分时），检查不通过会抛出 ``AssertionError``，让这个单元得 0 分。不返回任何值，这样单元只显示报告；要把报告
    作为对象拿到，请用 :func:`run_check`。
    """
    report = run_check(todo_id, hidden, namespace=_caller_globals())
    if not hidden:  # the next hint() starts from the check this report led with (autograder.learner.learn)
        from autograder.learner.learn import note_failure

        failed = lead_first([v for v in report.verdicts if not v.passed and not v.not_implemented and not v.blamed])
        note_failure(todo_id, failed[0].check if failed else None)
    if not hidden and report.verdicts:  # the learner's progress record (autograder.learner.standing); never fails
        from autograder.learner.standing import remember

        state = "passed" if report.passed else \
            "not_implemented" if any(v.not_implemented == todo_id for v in report.verdicts) else "failed"
        remember(todo_id, state, sum(v.passed for v in report.verdicts), len(report.verdicts) + report.not_run)


def _run_clocked(c: Check, impl: object) -> tuple[dict, bool]:
    """The probe's outcome under the time limit, and whether the limit stopped it."""
    with _time_limit(INLINE_TIME_LIMIT_S):
        try:
            got = run_probe(c, impl)
        except CheckTimeout as exc:  # fired outside the probe
            got = {"kind": "raised", "type": CheckTimeout.__name__, "message": str(exc)}
    stopped = got.get("kind") == "raised" and got.get("type") == CheckTimeout.__name__
    if stopped:
        got = {**got, "type": "TimeoutError"}  # what the learner reads: the time limit, as Python names it
    return got, stopped


def _run_limited(c: Check, impl: object) -> dict:
    return _run_clocked(c, impl)[0]


def run_check(todo_id: str, hidden: bool = False, *, namespace: dict | None = None, impl: object = None,
              quiet: bool = False, lang: str | None = None) -> CheckReport:
    """:func:`check` on an explicit ``namespace`` (a notebook's globals) or object ``impl``; returns the report."""
    if namespace is None:
        namespace = dict(vars(impl)) if impl is not None else {}
    stage = load_stage(stage_of(todo_id), hidden=hidden)
    own = stage.todo(todo_id)
    if hidden and not has_hidden_checks(stage.id):
        _print(quiet, text(messages.NO_HIDDEN_HERE, lang).format(label=own.label))
        return CheckReport(todo_id, hidden=hidden)
    report = evaluate(todo_id, hidden, namespace=namespace, lang=lang)
    _print_report(stage, own, report, quiet, lang)
    if not report.passed and (os.environ.get("NBGRADER_EXECUTION") or os.environ.get("NBGRADER_VALIDATING")):
        raise AssertionError(f"{own.label}: {sum(not v.passed for v in report.verdicts)} check(s) failed")
    return report


def evaluate(todo_id: str, hidden: bool = False, *, namespace: dict, lang: str | None = None) -> CheckReport:
    """Judge one TODO of a notebook's ``namespace`` without printing: the report :func:`check` shows.

    The TODO is judged as grading judges it: the learner's code for this TODO, the course's code for
    every other TODO (:func:`autograder.learner.blame.as_graded`), so a check is green right after its TODO is
    written, whatever the learner did (or did not yet do) elsewhere. Only where the course's code is
    not part of this copy (a classroom release) does it run on the notebook as it is, and a failure
    that comes from another TODO is then blamed on that one (:func:`find_blame`).
    """
    stage = load_stage(stage_of(todo_id), hidden=hidden)
    own = stage.todo(todo_id)
    graded = as_graded(stage, own, namespace) if own.target != "quiz" else None
    impl = graded if graded is not None else types.SimpleNamespace(**namespace)
    report = CheckReport(todo_id, hidden=hidden)
    public = load_expected(stage.id)
    expected = public["checks"]
    # which functions a check called matters only to a blame without the course's code (find_blame is
    # asked only then); a profile hook sees every call the learner's code makes, so it runs only there
    record = calls_recorded if graded is None and not hidden else _no_record
    checks = stage.checks_for(todo_id, hidden=hidden)
    for c in checks:
        exp = reference_outcome(c, stage.reference) if hidden else expected[c.key]
        with record() as called, twins.blocked(own.twins, own.label):
            # given code that already does this TODO (its twins) cannot pass it: blocked while probed
            got, stopped = _run_clocked(c, impl)
        verdict = judge(stage, c, exp, got, lang)
        if not verdict.passed and not verdict.not_implemented and not hidden and graded is None:
            blame = find_blame(stage, own, c, impl, namespace, expected, called, _run_limited)
            if blame is not None:
                culprit, seen = blame
                said = messages.DEPENDS if seen else messages.DEPENDS_UNSEEN
                verdict = CheckVerdict(c, False, verdict.summary, [text(said, lang).format(
                    other=culprit.label, title=text(culprit.title, lang))], blamed=culprit.id)
        report.verdicts.append(verdict)
        if verdict.not_implemented:
            break  # one line is enough: the other checks would say the same
        if stopped:
            # as in grading, where the TODO's checks share one child and its time limit: code that ran
            # out of time once would mostly make each later check wait its whole limit as well
            report.not_run = len(checks) - len(report.verdicts)
            break
    report.outside = names_outside_graded_cells(stage, own, namespace, set(public.get("given_names", [])))
    report.notes = [text(messages.STAGE_WITHOUT_PACKAGE, lang).format(n=stage.number, package=p)  # as the report says
                    for p in stage.not_preloaded(graded_cell_sources(stage, namespace))]
    return report


@contextlib.contextmanager
def _no_record() -> Iterator[set[str]]:
    """:func:`autograder.learner.blame.calls_recorded`'s shape, recording nothing."""
    yield set()


def _print(quiet: bool, line: str) -> None:
    if not quiet:
        print(line)


def _print_report(stage: Stage, own: Todo, report: CheckReport, quiet: bool, lang: str | None) -> None:
    if quiet:
        return
    first = report.verdicts[0] if report.verdicts else None
    if first is not None and first.not_implemented:
        print(f"⏳ {first.summary} — {first.detail[0]}")
        return
    n = sum(v.passed for v in report.verdicts)
    kind = text(messages.HIDDEN if report.hidden else messages.VISIBLE, lang)
    print(text(messages.REPORT_HEAD, lang).format(label=own.label, title=text(own.title, lang), n=n,
                                                  total=len(report.verdicts) + report.not_run, kind=kind))
    # the failure to fix first leads: the most specific failing check, with its hint (about the mistake
    # made); then the other failures, each with its expected and got but not its hint (written for
    # another slip); then the passes
    failed = lead_first([v for v in report.verdicts if not v.passed])
    shown = failed[:1] + [v.without_hint() for v in failed[1:]] + [v for v in report.verdicts if v.passed]
    for v in shown:
        print(f"  {'✅' if v.passed else ('↪️' if v.blamed else '❌')} {v.summary}")
        for line in v.detail:
            print(f"       {line}")
    if report.not_run:
        print("  ⏭️ " + text(messages.NOT_RUN_AFTER_TIMEOUT, lang).format(k=report.not_run))
    for name in report.outside:
        print("  ⚠️ " + text(messages.NAME_OUTSIDE, lang).format(label=own.label, name=name))
    for line in report.notes:
        print("  ⚠️ " + line)
    if report.passed and not report.hidden:
        print("  " + text(messages.VISIBLE_ONLY, lang))

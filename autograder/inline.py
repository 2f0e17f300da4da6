"""``check()`` and ``demo()``: instant feedback inside a learner's notebook.

Plain Python (no Jupyter extension), so it works the same on Colab, ModelScope and a laptop.
Public expected values come from ``autograder/expected/sNN.json``, generated from the reference;
hidden checks need the reference itself and so only run where ``solutions/`` exists (instructors).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import types
from dataclasses import dataclass, field
from typing import Iterator

from autograder import layout, twins
from autograder.probe import innermost_function, reference_outcome, run_probe, todo_of_function
from autograder.spec import has_hidden_checks, load_stage, stage_of
from autograder.verdict import CheckVerdict, judge

INLINE_TIME_LIMIT_S = 10


@dataclass
class CheckReport:
    """What one ``check()`` call found; ``passed`` is True only when every check ran and passed."""

    todo: str
    verdicts: list[CheckVerdict] = field(default_factory=list)
    hidden: bool = False

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and all(v.passed for v in self.verdicts)

    def __repr__(self) -> str:
        n = sum(v.passed for v in self.verdicts)
        return f"<CheckReport {self.todo}: {n}/{len(self.verdicts)} passed>"


def load_expected(stage_id: str) -> dict[str, dict]:
    path = layout.stage_files(stage_id).expected
    return json.loads(path.read_text(encoding="utf-8"))["checks"]


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    """Interrupt an endless loop in learner code (main thread on Unix only; elsewhere no limit)."""
    usable = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def on_alarm(signum, frame):
        raise TimeoutError(f"took longer than {seconds} s (an endless loop?)")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _caller_namespace() -> types.SimpleNamespace:
    frame = sys._getframe(2)  # check() -> _caller_namespace(): the notebook's frame is two up
    return types.SimpleNamespace(**frame.f_globals)


def check(todo_id: str, hidden: bool = False) -> None:
    """Run the checks of one TODO on the objects defined in the calling notebook and print a report.

    ``hidden=True`` runs the hidden checks (instructors only). Under nbgrader (validate or
    autograde) a failing check raises ``AssertionError`` so that the cell scores 0. Returns nothing,
    so that the cell shows only the report; use :func:`run_check` to get it as an object.
    """
    run_check(todo_id, hidden, impl=_caller_namespace())


def run_check(todo_id: str, hidden: bool = False, *, impl: object, quiet: bool = False) -> CheckReport:
    """:func:`check` on an explicit namespace ``impl``; returns the report."""
    stage = load_stage(stage_of(todo_id), hidden=hidden)
    own = stage.todo(todo_id)
    namespace = impl
    report = CheckReport(todo_id, hidden=hidden)
    checks = stage.checks_for(todo_id, hidden=hidden)
    if hidden and not has_hidden_checks(stage.id):
        _print(quiet, f"ℹ️  {own.label}: hidden checks are not part of this copy of the course; "
                      "they run when your notebook is graded.")
        return report
    expected = None if hidden else load_expected(stage.id)
    for c in checks:
        exp = reference_outcome(c, stage.reference) if hidden else expected[c.key]
        # given code that already does this TODO (its twins) cannot pass it: blocked while probed
        with _time_limit(INLINE_TIME_LIMIT_S), twins.blocked(own.twins, own.label):
            try:
                got = run_probe(c, namespace)
            except TimeoutError as exc:
                got = {"kind": "raised", "type": "TimeoutError", "message": str(exc)}
        verdict = judge(stage, c, exp, got)
        report.verdicts.append(verdict)
        if verdict.not_implemented:
            break  # one line is enough: the other checks would say the same
    _print_report(stage, own, report, quiet)
    if not report.passed and (os.environ.get("NBGRADER_EXECUTION") or os.environ.get("NBGRADER_VALIDATING")):
        raise AssertionError(f"{own.label}: {sum(not v.passed for v in report.verdicts)} check(s) failed")
    return report


def _print(quiet: bool, text: str) -> None:
    if not quiet:
        print(text)


def _print_report(stage, own, report: CheckReport, quiet: bool) -> None:
    if quiet:
        return
    kind = "hidden checks" if report.hidden else "visible checks"
    first = report.verdicts[0] if report.verdicts else None
    if first is not None and first.not_implemented:
        print(f"⏳ {first.summary} — {first.detail[0]}")
        return
    n = sum(v.passed for v in report.verdicts)
    print(f"{own.label} · {own.title}: {n}/{len(report.verdicts)} {kind} passed")
    for v in report.verdicts:
        print(f"  {'✅' if v.passed else '❌'} {v.summary}")
        for line in v.detail:
            print(f"       {line}")
    if report.passed and not report.hidden:
        print("  (visible checks only: grading also runs hidden checks)")


@contextlib.contextmanager
def demo(todo_id: str) -> Iterator[None]:
    """Run a demo that uses learner code; until the TODOs it needs are done, say so instead of failing."""
    stage = load_stage(stage_of(todo_id), hidden=False)
    try:
        yield
    except NotImplementedError as exc:
        todo = todo_of_function(stage, innermost_function(exc.__traceback__)) or stage.todo(todo_id)
        print(f"⏳ finish {todo.label} to see this")

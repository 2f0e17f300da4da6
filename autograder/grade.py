"""Grading notebooks: one isolated child process per (submission, TODO); verdicts in this process.

This process never executes learner code. It reads each submission as data
(:mod:`autograder.submission`), sends the learner's solution cells to a child
(:mod:`autograder.supervise`, :mod:`autograder.sandbox`) together with the reference stubbed at the
TODO under test (:mod:`autograder.trusted`), reads back raw outcomes, and compares them with the
reference's outcomes, which it computes itself (:mod:`autograder.verdict`).
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder import messages
from autograder.course import load_course
from autograder.i18n import text
from autograder.results import SubmissionResult, TodoResult, TodoStatus
from autograder.spec import Stage, Todo
from autograder.submission import Submission, SubmissionError, digest, expand, read_submission
from autograder.supervise import ChildLimits, run_child
from autograder.trusted import child_modules, expected_outcomes, setup_cells
from autograder.verdict import judge

__all__ = ["grade_paths", "run_todo", "expand", "SubmissionResult", "TodoResult"]


def limits_for(stage: Stage) -> ChildLimits:
    return ChildLimits(stage.time_limit_s, stage.memory_limit_mb, 15.0 if "torch" in stage.preload else 5.0)


def run_todo(sub: Submission, todo: Todo, *, lang: str | None = None, grading: str = "all-or-nothing") -> TodoResult:
    """Grade one TODO of one submission in its own child, reporting in ``lang`` (default: the
    submission's own language) and giving points as ``grading`` says (see :mod:`autograder.course`)."""
    stage = sub.stage
    lang = lang or sub.lang
    expected = expected_outcomes(stage)
    checks = stage.checks_for(todo.id)
    cells = [("setup", s) for s in setup_cells(stage)] + [("your", s) for s in sub.cells]
    payload = {"stage": stage.id, "todo": todo.id, "reference": stage.reference, "cells": cells,
               "modules": child_modules(stage, todo), "preload": stage.preload}
    events, stopped = run_child(payload, limits_for(stage))
    outcomes = {e["key"]: e["outcome"] for e in events if "outcome" in e}
    missing = next((e["missing"] for e in events if "missing" in e), None)
    cell_errors = next((e["cell_errors"] for e in events if "cell_errors" in e), [])
    in_check = next((e["key"] for e in reversed(events) if e.get("phase") == "check"), None)
    course_versions = next((e["course_versions"] for e in events if "course_versions" in e), [])

    verdicts, first_fail = [], None
    for c in checks:
        if c.key in outcomes:
            v = judge(stage, c, expected[c.key], outcomes[c.key], lang)
            line = v.summary if v.passed else _one_line(v.summary, v.detail)
            verdicts.append({"name": c.name, "hidden": c.hidden, "passed": v.passed, "message": line})
            if not v.passed and first_fail is None:
                first_fail = v
        else:
            verdicts.append({"name": c.name, "hidden": c.hidden, "passed": False, "message": "not run"})

    n_hidden = sum(c.hidden for c in checks)
    if checks and all(v["passed"] for v in verdicts) and stopped is None:
        status, message = TodoStatus.PASSED, text(messages.ALL_PASSED, lang).format(n=len(checks), h=n_hidden)
    elif missing:
        status, message = TodoStatus.MISSING, missing
    elif stopped is not None:
        where = _check_name(in_check) or "before the checks started"
        status, message = TodoStatus.STOPPED, f"{stopped} during {where}"
    elif first_fail is not None and first_fail.not_implemented:
        status, message = TodoStatus.NOT_IMPLEMENTED, first_fail.summary
    elif first_fail is not None:
        head = first_fail.summary if first_fail.check.hidden or first_fail.check.secret else \
            text(messages.CHECK_FAILED, lang).format(name=first_fail.check.name)
        status, message = TodoStatus.FAILED, _one_line(head, first_fail.detail)
    else:
        status, message = TodoStatus.FAILED, "no check results arrived (did your code write to the grader's result channel?)"
    if status is not TodoStatus.PASSED and cell_errors:
        message += f" (note: {cell_errors[0]})"
    for name in course_versions:
        message += " | " + text(messages.COURSE_VERSION_USED, lang).format(label=todo.label, name=name.strip("`"))
    points = todo_points(todo, status, verdicts, grading)
    return TodoResult(todo.id, todo.number, todo.title, points, float(todo.points), status, message, verdicts)


def todo_points(todo: Todo, status: TodoStatus, verdicts: list[dict], grading: str) -> float:
    """All the points when every check passed; under partial credit, the share of checks passed
    (hidden ones included) when the TODO ran to the end; else none."""
    if status is TodoStatus.PASSED:
        return float(todo.points)
    if grading == "partial" and status is TodoStatus.FAILED and verdicts:
        return round(todo.points * sum(v["passed"] for v in verdicts) / len(verdicts), 2)
    return 0.0


def _one_line(head: str, detail: list[str]) -> str:
    return " | ".join([head, *(" ".join(d.split()) for d in detail)])


def _check_name(key: str | None) -> str | None:
    if key is None:
        return None
    hidden = ":hidden:" in key
    return f"{'hidden ' if hidden else ''}check '{key.rsplit(':', 1)[-1]}'"


# -- many submissions ------------------------------------------------------------------------------
def grade_paths(paths: Iterable[str | Path], *, workers: int | None = None,
                on_done: Callable[[SubmissionResult], None] | None = None,
                on_todo: Callable[[], None] | None = None, lang: str | None = None,
                grading: str | None = None) -> list[SubmissionResult]:
    """Grade every notebook; one submission's failure never stops the others.

    ``lang`` overrides each submission's own language; ``grading`` overrides course.toml's mode."""
    grading = grading or load_course().grading
    files = expand(paths)
    results: list[SubmissionResult] = []
    jobs: list[tuple[int, Submission, Todo]] = []
    subs: dict[int, Submission] = {}
    started = time.monotonic()
    for i, path in enumerate(files):
        try:
            sub = read_submission(path)
        except SubmissionError as exc:
            results.append(SubmissionResult.not_graded(str(path), str(exc)))
            continue
        results.append(SubmissionResult(str(path), sub.stage.id))
        subs[i] = sub
        jobs += [(i, sub, t) for t in sub.stage.todos]
    for sub in {s.stage.id: s for s in subs.values()}.values():
        expected_outcomes(sub.stage)  # once, before the pool starts
        setup_cells(sub.stage)

    lock = threading.Lock()
    remaining = {i: len(s.stage.todos) for i, s in subs.items()}
    by_index: dict[int, dict[str, TodoResult]] = {i: {} for i in subs}

    def work(job: tuple[int, Submission, Todo]) -> None:
        i, sub, todo = job
        try:
            res = run_todo(sub, todo, lang=lang, grading=grading)
        except Exception as exc:  # a grader bug must not sink the class: report it on this TODO
            res = TodoResult(todo.id, todo.number, todo.title, 0.0, float(todo.points), TodoStatus.GRADER_ERROR,
                             f"grader error: {type(exc).__name__}: {exc}")
        with lock:
            by_index[i][todo.id] = res
            remaining[i] -= 1
            last = remaining[i] == 0
        if on_todo:
            on_todo()
        if last:
            finish(i)

    def finish(i: int) -> None:
        sub, r = subs[i], results[i]
        r.todos = [by_index[i][t.id] for t in sub.stage.todos]
        r.seconds = time.monotonic() - started
        now = digest(sub.path)
        if now is None:
            r.warnings.append("the submission file disappeared while it was graded")
        elif now != sub.digest:
            r.warnings.append("the submission file changed while it was graded")
        if on_done:
            on_done(r)

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
        list(pool.map(work, jobs))
    if on_done:
        for r in results:
            if not r.graded:
                on_done(r)
    return results


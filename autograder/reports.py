"""The grader's reports for people and programs: the table, JSON, the per-student CSV and the per-TODO
summary. Each states the isolation level the children ran under; every file name in them is shown
safely (:func:`shown_path`), so a name with a newline or undecodable bytes cannot break a line of the
table, a CSV row or the JSON.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from autograder import messages
from autograder.i18n import text
from autograder.isolation import Isolation
from autograder.results import SubmissionResult
from autograder.textwidth import display_width, pad

_CONTROL = {i: f"\\x{i:02x}" for i in [*range(32), 127]} | {10: "\\n", 13: "\\r", 9: "\\t"}


def shown_path(path: str | os.PathLike) -> str:
    """A file name as one printable line: undecodable bytes as ``\\xNN``, control characters escaped."""
    raw = os.fsencode(path)
    text = raw.decode("utf-8", "backslashreplace")
    return text.translate(_CONTROL)


def isolation_json(iso: Isolation) -> dict:
    return {**iso.to_json(), "description": iso.describe()}


def submission_json(r: SubmissionResult) -> dict:
    return {**r.to_json(), "path": shown_path(r.path)}


def full_json(results: list[SubmissionResult], iso: Isolation) -> str:
    return json.dumps({"isolation": isolation_json(iso), "submissions": [submission_json(r) for r in results]},
                      indent=1, ensure_ascii=False)


def report_language(results: list[SubmissionResult], lang: str | None = None) -> str:
    """The language of a report's shared lines: ``lang`` when given, else the one all its submissions
    share, else English."""
    if lang is not None:
        return lang
    langs = {r.lang for r in results}
    return langs.pop() if len(langs) == 1 else "en"


def table(results: list[SubmissionResult], iso: Isolation, lang: str | None = None) -> str:
    """The report for people: a first line naming the isolation, then one block per submission in its
    own language, columns padded by display width (a Chinese character takes two columns)."""
    head = report_language(results, lang)
    lines = [text(messages.REPORT_ISOLATION, head).format(level=iso.describe(head))]
    for r in results:
        name = shown_path(r.path)
        if not r.graded:
            lines.append(text(messages.REPORT_NOT_GRADED, r.lang).format(name=name, error=r.error))
            continue
        lines.append(text(messages.REPORT_ROW, r.lang).format(name=name, stage=r.stage, score=f"{r.score:g}",
                                                               total=f"{r.max_score:g}"))
        width = max((display_width(t.id) for t in r.todos), default=0)
        points = [f"{t.points:g}/{t.max_points:g}" for t in r.todos]
        pwidth = max((display_width(p) for p in points), default=0)
        for t, p in zip(r.todos, points):
            mark = "✅" if t.passed else "❌"
            lines.append(f"  TODO {t.number}  {pad(t.id, width)}  {pad(p, pwidth, '>')}  {mark} {t.message}")
        for w in r.warnings:
            lines.append("  " + text(messages.REPORT_WARNING, r.lang).format(w=w))
    return "\n".join(lines)


def write_csv(results: list[SubmissionResult], path: Path, iso: Isolation) -> None:
    todo_ids = list(dict.fromkeys(t.id for r in results for t in r.todos))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["path", "stage", "score", "max_score", *todo_ids, "error", "isolation"])
        for r in results:
            pts = {t.id: t.points for t in r.todos}
            w.writerow([shown_path(r.path), r.stage or "", r.score, r.max_score, *[pts.get(i, "") for i in todo_ids],
                        r.error or "; ".join(r.warnings), iso.level])


def write_summary(results: list[SubmissionResult], path: Path, iso: Isolation) -> None:
    per_todo: dict[str, dict] = {}
    for r in results:
        for t in r.todos:
            s = per_todo.setdefault(t.id, {"max_points": t.max_points, "submissions": 0, "passed": 0, "mean_points": 0.0})
            s["submissions"] += 1
            s["passed"] += t.passed
            s["mean_points"] += t.points
    for s in per_todo.values():
        s["mean_points"] = round(s["mean_points"] / s["submissions"], 3)
    path.write_text(json.dumps({"isolation": isolation_json(iso), "per_todo": per_todo, "per_submission": [
        {"path": shown_path(r.path), "stage": r.stage, "status": r.status.value, "score": r.score, "max_score": r.max_score,
         "error": r.error, "warnings": r.warnings} for r in results]}, indent=1, ensure_ascii=False), encoding="utf-8")

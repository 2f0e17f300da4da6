"""The grader's reports for people and programs: the table, JSON, the per-student CSV and the per-TODO
summary. Each states the isolation level the children ran under. Every file name and every message
in them is shown through :mod:`autograder.safetext` (one printable line, no bidirectional control),
and every CSV cell through :func:`autograder.safetext.csv_cell` (no formula), so a name with a
newline, U+202E or undecodable bytes cannot break or disguise a line of the table, a CSV row or the
JSON, and ``=HYPERLINK(...)`` stays text.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from autograder import safetext
from autograder.isolation import Isolation
from autograder.results import SubmissionResult

one_line = safetext.one_line


def shown_path(path: str | os.PathLike) -> str:
    """A file name as one printable line (:func:`autograder.safetext.path`)."""
    return safetext.path(path)


def isolation_json(iso: Isolation) -> dict:
    return {**iso.to_json(), "description": iso.describe()}


def submission_json(r: SubmissionResult) -> dict:
    """A submission's JSON with its name, error, warnings and every message on one safe line."""
    d = r.to_json()
    for t in d["todos"]:
        t["message"] = one_line(t["message"])
        for c in t["checks"]:
            c["message"] = one_line(c["message"])
    return {**d, "path": shown_path(r.path), "error": _line(r.error), "warnings": [one_line(w) for w in r.warnings]}


def _line(text: str | None) -> str | None:
    return None if text is None else one_line(text)


def full_json(results: list[SubmissionResult], iso: Isolation) -> str:
    return json.dumps({"isolation": isolation_json(iso), "submissions": [submission_json(r) for r in results]},
                      indent=1, ensure_ascii=False)


def table(results: list[SubmissionResult], iso: Isolation) -> str:
    lines = [f"isolation: {iso.describe()}"]
    for r in results:
        name = shown_path(r.path)
        if not r.graded:
            lines.append(f"{name}: NOT GRADED — {_line(r.error)}")
            continue
        lines.append(f"{name}  (stage {r.stage})  score {r.score:g}/{r.max_score:g}")
        width = max((len(t.id) for t in r.todos), default=0)
        for t in r.todos:
            mark = "✅" if t.passed else "❌"
            lines.append(f"  TODO {t.number}  {t.id:<{width}}  {t.points:g}/{t.max_points:g}  {mark} {one_line(t.message)}")
        for w in r.warnings:
            lines.append(f"  warning: {one_line(w)}")
    return "\n".join(lines)


def write_csv(results: list[SubmissionResult], path: Path, iso: Isolation) -> None:
    todo_ids = list(dict.fromkeys(t.id for r in results for t in r.todos))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["path", "stage", "score", "max_score", *todo_ids, "error", "isolation"])
        for r in results:
            pts = {t.id: t.points for t in r.todos}
            row = [shown_path(r.path), r.stage or "", r.score, r.max_score, *[pts.get(i, "") for i in todo_ids],
                   r.error or "; ".join(r.warnings), iso.level]
            w.writerow([safetext.csv_cell(x) for x in row])


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
         "error": _line(r.error), "warnings": [one_line(w) for w in r.warnings]} for r in results]}, indent=1, ensure_ascii=False), encoding="utf-8")

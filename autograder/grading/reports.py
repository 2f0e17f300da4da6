"""The grader's reports for people and programs: the table, JSON, the per-student CSV and the per-TODO
summary. Each states the isolation level the children ran under. Every file name and every message
in them is shown through :mod:`autograder.core.safetext` (one printable line, no bidirectional control),
and every CSV cell through :func:`autograder.core.safetext.csv_cell` (no formula), so a name with a
newline, U+202E or undecodable bytes cannot break or disguise a line of the table, a CSV row or the
JSON, and ``=HYPERLINK(...)`` stays text.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from autograder.core import messages, safetext
from autograder.core.i18n import text
from autograder.core.results import SubmissionResult, TodoStatus
from autograder.core.textwidth import display_width, pad
from autograder.isolation.levels import Isolation

one_line = safetext.one_line


def shown_path(path: str | os.PathLike) -> str:
    """A file name as one printable line (:func:`autograder.core.safetext.path`)."""
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


def report_language(results: list[SubmissionResult], lang: str | None = None) -> str:
    """The language of a report's shared lines: ``lang`` when given, else the one all its submissions
    share, else English."""
    if lang is not None:
        return lang
    langs = {r.lang for r in results if r.lang}  # "" for a notebook that could not be read
    return langs.pop() if len(langs) == 1 else "en"


def table(results: list[SubmissionResult], iso: Isolation, lang: str | None = None) -> str:
    """The report for people: a first line naming the isolation, then one block per submission in its
    own language, columns padded by display width (a Chinese character takes two columns)."""
    head = report_language(results, lang)
    lines = [text(messages.REPORT_ISOLATION, head).format(level=iso.describe(head))]
    for r in results:
        name = shown_path(r.path)
        if not r.graded:
            lines.append(text(messages.REPORT_NOT_GRADED, r.lang).format(name=name, error=_line(r.error)))
            continue
        lines.append(text(messages.REPORT_ROW, r.lang).format(name=name, stage=r.stage, score=f"{r.score:g}",
                                                               total=f"{r.max_score:g}"))
        width = max((display_width(t.id) for t in r.todos), default=0)
        points = [f"{t.points:g}/{t.max_points:g}" for t in r.todos]
        pwidth = max((display_width(p) for p in points), default=0)
        for t, p in zip(r.todos, points, strict=True):
            mark = "✅" if t.passed else "❌"
            lines.append(f"  TODO {t.number}  {pad(t.id, width)}  {pad(p, pwidth, '>')}  {mark} {one_line(t.message)}")
        for w in r.warnings:
            lines.append("  " + text(messages.REPORT_WARNING, r.lang).format(w=one_line(w)))
    return "\n".join(lines)


def student_of(name: str) -> str:
    """Who handed in the file ``name`` (a path as the grader reports it): the nearest folder above it
    that is not an assignment's (``alice/01_prefix_match/01_prefix_match.ipynb``, ``class/alice/
    01_prefix_match copy.ipynb``: alice) when the file is named after a stage's notebook; else the
    file's own name (``class/alice.ipynb``: alice)."""
    from pathlib import PurePath

    from autograder.core import layout

    parts = PurePath(name).parts
    stem = PurePath(name).stem
    if layout.stage_of_notebook(stem) is None:
        return stem or name
    folders = [f for f in parts[:-1] if layout.stage_of_notebook(f) is None]
    return folders[-1] if folders else stem


def write_csv(results: list[SubmissionResult], path: Path, iso: Isolation) -> None:
    """One row per file handed in, its student first (:func:`student_of`: a spreadsheet sorts and
    joins on that column), then the file that row grades."""
    todo_ids = list(dict.fromkeys(t.id for r in results for t in r.todos))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", "path", "stage", "score", "max_score", *todo_ids, "error", "isolation"])
        for r in results:
            pts = {t.id: t.points for t in r.todos}
            row = [student_of(r.path), shown_path(r.path), r.stage or "", r.score, r.max_score,
                   *[pts.get(i, "") for i in todo_ids], r.error or "; ".join(r.warnings), iso.level]
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
         "error": _line(r.error), "warnings": [one_line(w) for w in r.warnings], "lang": r.lang}
        for r in results]}, indent=1, ensure_ascii=False), encoding="utf-8")


def learner(results: list[SubmissionResult], iso: Isolation, langs: list[str]) -> str:
    """The report a learner reads about their own notebook (a GitHub Classroom step prints it), in
    each notebook's language (``langs``, one per result): the points of each graded TODO, its message
    (the leading failure with its hint, each other failure with its expected and got: the same words
    ``check()`` and the table use), and for a failed TODO which of its checks pass, by title (a hidden
    one by name)."""
    lines = []
    for r, lang in zip(results, langs, strict=True):
        name = shown_path(Path(r.path).name)
        lines.append(text(messages.LEARNER_ISOLATION, lang).format(level=iso.describe()))
        if not r.graded:
            lines.append(text(messages.LEARNER_NOT_GRADED, lang).format(name=name, error=_line(r.error)))
            continue
        lines.append(text(messages.LEARNER_HEAD, lang).format(name=name, stage=r.stage, score=f"{r.score:g}",
                                                              total=f"{r.max_score:g}"))
        for t in r.todos:
            mark = "✅" if t.passed else ("◐" if t.points > 0 else "❌")
            lines.append(text(messages.LEARNER_TODO, lang).format(
                mark=mark, n=t.number, id=t.id, title=text(t.title, lang), points=f"{t.points:g}", max=f"{t.max_points:g}"))
            lines.append(f"   {one_line(t.message)}")
            if t.status is TodoStatus.FAILED:  # which checks pass: the message above gives each failure's fields
                lines += [f"   {'✅' if c.passed else '❌'} {one_line(c.title or c.name)}" for c in t.checks]
        for w in r.warnings:
            lines.append(text(messages.LEARNER_WARNING, lang).format(warning=one_line(w)))
    return "\n".join(lines)

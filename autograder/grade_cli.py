"""``python -m autograder grade``: grade notebooks and report per TODO."""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from autograder.grade import grade_paths
from autograder.results import SubmissionResult
from autograder.submission import expand


def _table(results: list[SubmissionResult]) -> str:
    lines = []
    for r in results:
        if not r.graded:
            lines.append(f"{r.path}: NOT GRADED — {r.error}")
            continue
        lines.append(f"{r.path}  (stage {r.stage})  score {r.score:g}/{r.max_score:g}")
        width = max(len(t.id) for t in r.todos)
        for t in r.todos:
            mark = "✅" if t.passed else "❌"
            lines.append(f"  TODO {t.number}  {t.id:<{width}}  {t.points:g}/{t.max_points:g}  {mark} {t.message}")
        for w in r.warnings:
            lines.append(f"  warning: {w}")
    return "\n".join(lines)


def write_summaries(results: list[SubmissionResult], csv_path: Path | None, json_path: Path | None) -> None:
    if csv_path:
        todo_ids = list(dict.fromkeys(t.id for r in results for t in r.todos))
        with open(csv_path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["path", "stage", "score", "max_score", *todo_ids, "error"])
            for r in results:
                pts = {t.id: t.points for t in r.todos}
                w.writerow([r.path, r.stage or "", r.score, r.max_score, *[pts.get(i, "") for i in todo_ids], r.error or "; ".join(r.warnings)])
    if json_path:
        per_todo: dict[str, dict] = {}
        for r in results:
            for t in r.todos:
                s = per_todo.setdefault(t.id, {"max_points": t.max_points, "submissions": 0, "passed": 0, "mean_points": 0.0})
                s["submissions"] += 1
                s["passed"] += t.passed
                s["mean_points"] += t.points
        for s in per_todo.values():
            s["mean_points"] = round(s["mean_points"] / s["submissions"], 3)
        json_path.write_text(json.dumps({"per_todo": per_todo, "per_submission": [
            {"path": r.path, "status": r.status.value, "score": r.score, "max_score": r.max_score, "error": r.error,
             "warnings": r.warnings} for r in results]}, indent=1))


def _grade(args: argparse.Namespace) -> int:
    files = expand(args.paths)
    if not files:
        print(f"no notebooks found in {' '.join(args.paths)}", file=sys.stderr)
        return 2
    bar = None
    if not args.no_progress and len(files) > 1:
        from tqdm import tqdm

        bar = tqdm(total=None, unit="todo", desc="grading", file=sys.stderr, leave=False)
    results = grade_paths(files, workers=args.workers, on_todo=(bar.update if bar is not None else None),
                          lang=args.lang, grading=args.grading)
    if bar is not None:
        bar.close()
    if args.format == "json":
        print(json.dumps({"submissions": [r.to_json() for r in results]}, indent=1, ensure_ascii=False))
    else:
        print(_table(results))
    if args.gradescope:
        if len(results) != 1:
            print("--gradescope needs exactly one submission", file=sys.stderr)
            return 2
        from autograder.gradescope import results_json

        Path(args.gradescope).write_text(json.dumps(results_json(results[0]), indent=1, ensure_ascii=False))
    write_summaries(results, Path(args.csv) if args.csv else None, Path(args.summary_json) if args.summary_json else None)
    unreadable = [r for r in results if not r.graded]
    for r in unreadable:
        print(f"error: {r.path}: {r.error}", file=sys.stderr)
    return 1 if unreadable else 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("grade", help="grade notebooks (files or folders) per TODO, in isolated processes")
    g.add_argument("paths", nargs="+", help="notebooks, or folders searched for *.ipynb")
    g.add_argument("--format", choices=["table", "json"], default="table")
    g.add_argument("--gradescope", metavar="RESULTS_JSON", help="also write Gradescope's results.json (one submission)")
    g.add_argument("--csv", metavar="FILE", help="write a per-student, per-TODO CSV")
    g.add_argument("--summary-json", metavar="FILE", help="write a per-TODO summary as JSON")
    g.add_argument("--workers", type=int, default=None, help="parallel child processes (default: all cores)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--lang", choices=["en", "zh"], default=None,
                   help="language of the report (default: each notebook's own edition)")
    g.add_argument("--grading", choices=["all-or-nothing", "partial"], default=None,
                   help="how a TODO's points are given (default: course.toml's [grading] mode)")
    g.set_defaults(func=_grade)
    z = sub.add_parser("gradescope", help="build a Gradescope autograder bundle (zip)")
    z.add_argument("dest", nargs="?", default="gradescope_autograder.zip")
    z.set_defaults(func=_gradescope)


def _gradescope(args: argparse.Namespace) -> int:
    from autograder.gradescope import build_bundle

    path = build_bundle(Path(args.dest))
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB): upload it as the autograder in Gradescope's "
          "'Zip file upload'")
    return 0

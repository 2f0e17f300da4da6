"""Commands for running a class at scale: ``classroom`` (a GitHub Classroom assignment template),
``report`` (a class report as one HTML page) and ``progress`` (where a learner stands)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.core.i18n import LANGUAGES


def _classroom(args: argparse.Namespace) -> int:
    from autograder.core import layout
    from autograder.integrations.classroom import write_template

    sid = args.stage if args.stage.startswith("s") and args.stage[1:].isdigit() else layout.stage_of_notebook(args.stage)
    if sid is None or sid not in layout.built_stages():
        print(f"no built stage {args.stage!r} (stages: {', '.join(layout.built_stages())})", file=sys.stderr)
        return 2
    try:
        written = write_template(sid, Path(args.dest), args.edition, args.grading, args.token_secret or "")
    except (ValueError, FileNotFoundError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    for p in written:
        print(f"wrote: {p}")
    print(f"next: push {args.dest} to a repository, mark it a template, and use it as the assignment's starter code")
    return 0


def _report(args: argparse.Namespace) -> int:
    from autograder.integrations.class_report import load_results, write_html

    try:
        results = load_results([Path(p) for p in args.results])
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    write_html(results, Path(args.html))
    print(f"wrote {args.html}: {len(results.entries)} submissions")
    return 0


def _progress(args: argparse.Namespace) -> int:
    from autograder.learner.standing import show

    show(Path(args.folder), lang=args.lang)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("classroom", help="write a GitHub Classroom assignment template repository for one stage")
    c.add_argument("stage", help="stage id or notebook name, e.g. s03 or 03_block_pool")
    c.add_argument("dest", help="folder to write the template into")
    c.add_argument("--edition", choices=LANGUAGES, default=LANGUAGES[0], help="the notebook's and README's language")
    c.add_argument("--grading", choices=["all-or-nothing", "partial"], default=None,
                   help="how a TODO's points are given (default: course.toml's [grading] mode)")
    c.add_argument("--token-secret", metavar="NAME", default=None,
                   help="a repository or organization secret holding a read token for a private course repository")
    c.set_defaults(func=_classroom)
    r = sub.add_parser("report", help="a class report as one self-contained HTML page")
    r.add_argument("results", nargs="+", help="grader JSON (grade --format json) or summary files, or an nbgrader course folder")
    r.add_argument("--html", required=True, metavar="FILE", help="the page to write")
    r.set_defaults(func=_report)
    p = sub.add_parser("progress", help="where a learner stands: every TODO's last check() result")
    p.add_argument("folder", nargs="?", default=".", help="the folder of the notebooks (default: here)")
    p.add_argument("--lang", choices=LANGUAGES, default=None, help="default: the language of the last check()")
    p.set_defaults(func=_progress)

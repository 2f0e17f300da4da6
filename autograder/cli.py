"""The ``python -m autograder`` command line."""
from __future__ import annotations

import argparse
import sys


def _build(args: argparse.Namespace) -> int:
    from autograder.build import ROOT, build

    stale = build(check_only=args.check)
    for p in stale:
        print(f"{'stale' if args.check else 'wrote'}: {p.relative_to(ROOT)}")
    if args.check and stale:
        print("generated files differ from their sources: run `python -m autograder build`", file=sys.stderr)
        return 1
    if not stale:
        print("all generated files are up to date")
    return 0


def _course(args: argparse.Namespace) -> int:
    from pathlib import Path

    from autograder.nbgrader_glue import layout_course

    names = layout_course(Path(args.dest), args.stage or None)
    print(f"nbgrader course directory: {args.dest} (assignments: {', '.join(names)})")
    print(f"next: cd {args.dest} && nbgrader generate_assignment {names[0]} --create")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="generate notebooks and expected values from their sources")
    b.add_argument("--check", action="store_true", help="only report stale generated files (exit 1 if any)")
    b.set_defaults(func=_build)
    c = sub.add_parser("course", help="lay out an nbgrader course directory from solutions/")
    c.add_argument("dest", help="folder to create (e.g. ~/courses/prefix-cache)")
    c.add_argument("--stage", action="append", help="stage id to include (repeatable; default: all built stages)")
    c.set_defaults(func=_course)
    from autograder import grade_cli

    grade_cli.add_commands(sub)
    args = parser.parse_args(argv)
    return args.func(args)

"""The ``python -m autograder`` command line."""
from __future__ import annotations

import argparse
import sys

from autograder.core.i18n import LANGUAGES


def _build(args: argparse.Namespace) -> int:
    from autograder.authoring.build import build
    from autograder.core import layout

    for line in (m for s in layout.all_stages() for m in s.missing_sources()):
        print(f"skipped, not complete yet: {line}")
    stale = build(check_only=args.check)
    for p in stale:
        print(f"{'stale' if args.check else 'wrote'}: {layout.rel(p)}")
    if args.check and stale:
        print("generated files differ from their sources: run `python -m autograder build`", file=sys.stderr)
        return 1
    if not stale:
        print("all generated files are up to date")
    return 0


def _course(args: argparse.Namespace) -> int:
    from pathlib import Path

    if args.dest == "check" and args.folder:  # `course check DIR`: the pre-flight before autograde
        from autograder.integrations.preflight import report

        said, bad = report(Path(args.folder), args.stage or None)
        print(said)
        return 1 if bad else 0
    from autograder.integrations.nbgrader_glue import layout_course

    names = layout_course(Path(args.dest), args.stage or None, args.editions)
    print(f"nbgrader course directory: {args.dest} (assignments: {', '.join(names)})")
    print(f"next: cd {args.dest} && nbgrader generate_assignment {names[0]} --create")
    return 0


def _new_stage(args: argparse.Namespace) -> int:
    from autograder.authoring.scaffold import new_stage
    from autograder.core import layout

    for path in new_stage(args.stage, args.name, args.title):
        print(f"wrote: {layout.rel(path)}")
    print("next: edit those files, then `python -m autograder build` and `python -m pytest`")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["autograde"] and not {"-h", "--help"} & set(argv[1:]):
        # nbgrader's own options, passed on as they are (argparse would take --force for its own)
        from autograder.integrations.nbgrader_autograde import main as autograde

        return autograde(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="generate notebooks and expected values from their sources")
    b.add_argument("--check", action="store_true", help="only report stale generated files (exit 1 if any)")
    b.set_defaults(func=_build)
    c = sub.add_parser("course", help="lay out an nbgrader course directory from solutions/")
    c.add_argument("dest", help="folder to create (e.g. ~/courses/prefix-cache); `course check DIR` instead lists, "
                                "one line per submission, what cannot be graded in DIR and why (before autograde)")
    c.add_argument("folder", nargs="?", help=argparse.SUPPRESS)
    c.add_argument("--stage", action="append",
                   help="stage id to include (repeatable; default: all built stages); with `check`: assignment names")
    c.add_argument("--editions", choices=[*LANGUAGES, "both"], default=LANGUAGES[0],
                   help="which edition to release: English, Chinese, or both as two assignments per stage")
    c.set_defaults(func=_course)
    n = sub.add_parser("new-stage", help="write a new stage's source files from the stage template")
    n.add_argument("stage", help="stage id, e.g. s09")
    n.add_argument("name", help="lower_snake_case name, e.g. shared_prefix")
    n.add_argument("--title", required=True, help="the stage's title")
    n.set_defaults(func=_new_stage)
    a = sub.add_parser("autograde", help="nbgrader autograde, with the class graded from the start (run it in the "
                                         "nbgrader course folder; same options, same gradebook and autograded/)")
    a.add_argument("options", nargs="*", help="what `nbgrader autograde` takes, e.g. 03_block_pool --force")
    from autograder.commands import class_cli, grade_cli

    grade_cli.add_commands(sub)
    class_cli.add_commands(sub)
    args = parser.parse_args(argv)
    return args.func(args)

"""``python -m autograder grade``: grade notebooks and report per TODO.

``--require-isolation`` (the default when grading a folder or several notebooks, and in the
Gradescope bundle; off for one notebook, e.g. a learner's own on a laptop) refuses to grade unless
the kernel confines every child (:mod:`autograder.isolation.levels`), and says how to get what is missing.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from autograder.core import layout, messages
from autograder.core.i18n import LANGUAGES, text
from autograder.grading import reports
from autograder.grading.grade import VERBOSE_ENV, grade_paths, stderr_log
from autograder.grading.submission import expand
from autograder.isolation import levels as isolation

EXIT_NO_ISOLATION = 3
EXIT_NOT_EARNED = 4  # --exit-code: a graded TODO did not earn the points asked for
EXIT_TEMPLATE_CHANGED = 5  # --classroom: the repository's grading files are not the template's


def _language_of(path: Path) -> str:
    """The edition of a notebook file (its metadata), English when it cannot be read."""
    from autograder.core.i18n import notebook_language
    from autograder.grading.submission import SubmissionError, parse_notebook, read_regular

    try:
        return notebook_language(parse_notebook(read_regular(path), path.name))
    except (SubmissionError, OSError):
        return "en"


def banner_language(files: list[Path], lang: str | None) -> str:
    """The language of the line printed before grading: ``--lang``, else the edition every notebook
    shares (a Chinese class reads it in Chinese), else English."""
    langs = {lang} if lang is not None else {_language_of(Path(f)) for f in files}
    return langs.pop() if len(langs) == 1 else "en"


def _earned(results: list, need: float | None) -> bool:
    """Every graded TODO earned ``need`` points (default: all of its points); nothing ungraded."""
    return all(r.graded and r.todos for r in results) and all(
        t.points >= (t.max_points if need is None else need) for r in results for t in r.todos)


def _grade(args: argparse.Namespace) -> int:
    if args.format == "learner":  # a missing notebook (renamed?): say so in words a learner reads
        for p in (Path(x) for x in args.paths if not Path(x).exists()):
            for lang in [args.lang] if args.lang else LANGUAGES:  # its language is unknown: every one
                print(text(messages.LEARNER_NO_SUCH_FILE, lang).format(name=p.name))
    if args.stage is not None:
        named = _stage_named(args.stage)
        if named is None:
            print(f"--stage: {reports.shown_path(args.stage)} is no stage of this course (e.g. s03, or its "
                  f"assignment 03_block_pool)", file=sys.stderr)
            return 2
        args.stage = named
    if args.classroom is not None:  # a GitHub Classroom step: grade only from the template's own files
        from autograder.integrations import classroom

        if args.stage is None or args.grading is None:
            print("--classroom needs --stage and --grading (the template's)", file=sys.stderr)
            return 2
        changed = classroom.template_differences(Path.cwd(), args.stage, args.classroom, args.grading)
        if changed:
            print(classroom.refusal(changed))
            return EXIT_TEMPLATE_CHANGED
    files = expand(args.paths)
    if not files:
        print(f"no notebooks found in {' '.join(map(reports.shown_path, args.paths))}", file=sys.stderr)
        return 2
    iso = isolation.select(args.isolation)
    require = args.require_isolation
    if require is None:  # a folder or a batch: a class is graded; one notebook: someone's own work
        require = len(args.paths) > 1 or any(Path(p).is_dir() for p in args.paths)
    if require:
        try:
            isolation.require_kernel_isolation(iso)
        except isolation.IsolationError as exc:
            print(str(exc), file=sys.stderr)
            return EXIT_NO_ISOLATION
    if args.format != "learner":  # the learner's report states it itself, on stdout
        banner = banner_language(files, args.lang)
        print(text(messages.REPORT_GRADING_UNDER, banner).format(level=iso.describe(banner)), file=sys.stderr)
    only = {str(f): set(args.todo) for f in files} if args.todo else None  # grade_paths expands args.paths the same way
    bar = None
    if not args.no_progress and len(files) > 1:
        from tqdm import tqdm

        bar = tqdm(total=None, unit="todo", desc="grading", file=sys.stderr, leave=False)
    try:
        results = grade_paths(args.paths, workers=args.workers, on_todo=(bar.update if bar is not None else None), iso=iso,
                              lang=args.lang, grading=args.grading, feedback=args.feedback, only=only,
                              log=stderr_log() if args.verbose else None, stage=args.stage)
    except ValueError as exc:  # --todo names no TODO of a notebook's stage
        print(f"--todo: {exc}", file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.close()
    if args.format == "json":
        print(reports.full_json(results, iso))
    elif args.format == "learner":
        print(reports.learner(results, iso, [args.lang or _language_of(Path(r.path)) for r in results]))
    else:
        print(reports.table(results, iso, args.lang))
    if args.gradescope:
        if len(results) != 1:
            print("--gradescope needs exactly one submission", file=sys.stderr)
            return 2
        from autograder.integrations.gradescope import results_json

        Path(args.gradescope).write_text(json.dumps(results_json(results[0], iso), indent=1, ensure_ascii=False),
                                         encoding="utf-8")
    if args.csv:
        reports.write_csv(results, Path(args.csv), iso)
    if args.summary_json:
        reports.write_summary(results, Path(args.summary_json), iso)
    unreadable = [r for r in results if not r.graded]
    for r in unreadable:
        print(f"error: {reports.shown_path(r.path)}: {reports.one_line(r.error or '')}", file=sys.stderr)
    if unreadable:
        return 1
    if args.exit_code and not _earned(results, args.min_points):
        return EXIT_NOT_EARNED
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("grade", help="grade notebooks (files or folders) per TODO, in isolated processes")
    g.add_argument("paths", nargs="+", help="notebooks, or folders searched for *.ipynb")
    g.add_argument("--format", choices=["table", "json", "learner"], default="table",
                   help="table and json for instructors; learner: the report a learner reads about their own "
                        "notebook, in its language (a GitHub Classroom step prints it)")
    g.add_argument("--stage", default=None, metavar="STAGE",
                   help="the stage these notebooks were handed in for (e.g. s03, or an assignment name such as "
                        "03_block_pool): a notebook of another stage is refused with 0 points, never graded as the "
                        "stage its cells claim (default: each notebook's own stage)")
    g.add_argument("--todo", action="append", metavar="ID",
                   help="grade only this TODO (repeatable), e.g. s03.allocate_block")
    g.add_argument("--exit-code", action="store_true",
                   help=f"exit {EXIT_NOT_EARNED} unless every graded TODO earned all its points (or --min-points)")
    g.add_argument("--min-points", type=float, default=None, metavar="P",
                   help="with --exit-code: the points each graded TODO must earn (partial credit, one step per point)")
    g.add_argument("--classroom", choices=LANGUAGES, default=None, metavar="EDITION",
                   help="grade only if the repository here holds the GitHub Classroom template's grading files "
                        "for --stage, --grading and this edition, byte for byte (its workflow's steps pass it)")
    g.add_argument("--gradescope", metavar="RESULTS_JSON", help="also write Gradescope's results.json (one submission)")
    g.add_argument("--csv", metavar="FILE", help="write a per-student, per-TODO CSV")
    g.add_argument("--summary-json", metavar="FILE", help="write a per-TODO summary as JSON")
    g.add_argument("--workers", type=int, default=None,
                   help="parallel child processes (default: one more than the cores this process may use, within any CPU quota)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--verbose", action="store_true",
                   help=f"log each grading process to stderr: the isolation applied, its exit status and its "
                        f"output (also: {VERBOSE_ENV}=1)")
    g.add_argument("--lang", choices=LANGUAGES, default=None,
                   help="language of the report (default: each notebook's own edition)")
    g.add_argument("--grading", choices=["all-or-nothing", "partial"], default=None,
                   help="how a TODO's points are given (default: course.toml's [grading] mode)")
    g.add_argument("--feedback", choices=["values", "titles"], default=None,
                   help="what a failed hidden check shows: the learner's values within the report's budget, or only "
                        "its title and hint (default: course.toml's [grading] feedback)")
    g.add_argument("--require-isolation", dest="require_isolation", action="store_true", default=None,
                   help="refuse to grade unless the kernel confines every child (default for folders and batches)")
    g.add_argument("--no-require-isolation", dest="require_isolation", action="store_false",
                   help="grade even with the in-process layer only (e.g. your own notebook on a laptop)")
    g.add_argument("--isolation", choices=["best", "no-namespaces", "in-process"], default="best",
                   help="which isolation to use (default: the best this machine offers)")
    g.set_defaults(func=_grade)
    i = sub.add_parser("isolation", help="say which isolation grading gets on this machine, and how to get the rest")
    i.set_defaults(func=_isolation)
    z = sub.add_parser("gradescope", help="build a Gradescope autograder bundle (zip) for one stage's assignment")
    z.add_argument("dest", nargs="?", default=None, help="the zip to write (default: gradescope_<stage>.zip)")
    z.add_argument("--stage", required=True, metavar="STAGE",
                   help="the stage the Gradescope assignment grades (e.g. s03, or 03_block_pool); a notebook of "
                        "another stage scores 0 with the reason")
    z.set_defaults(func=_gradescope)
    r = sub.add_parser("gradescope-grade", help="what a bundle's run_autograder runs inside Gradescope: grade "
                                                "ROOT/submission for STAGE into ROOT/results/results.json")
    r.add_argument("stage", metavar="STAGE")
    r.add_argument("--root", default="/autograder", help="Gradescope's folder (default: /autograder)")
    r.set_defaults(func=_gradescope_grade)


def _isolation(args: argparse.Namespace) -> int:
    iso = isolation.select("best")
    print(f"isolation: {iso.describe()}")
    print(f"a kernel boundary (what --require-isolation asks for): {'yes' if iso.kernel_enforced else 'no'}")
    if iso.layers:
        from autograder.isolation import cgroup

        hierarchy, why = cgroup.available()
        if hierarchy:
            memory = f"each child's process tree in a memory cgroup of its own (cgroup v{hierarchy.version})"
        elif "seccomp" in iso.layers:
            memory = f"one process per child, bounded by RLIMIT_AS (no memory cgroup: {why})"
        else:
            memory = f"RLIMIT_AS bounds each process of a child, not their sum (no memory cgroup: {why}; no seccomp)"
        print(f"memory: {memory}")
    if iso.missing:
        print("missing:\n" + iso.how_to_get_the_rest())
    return 0 if iso.kernel_enforced else EXIT_NO_ISOLATION


def _stage_named(name: str) -> str | None:
    """A stage id from a stage id or an assignment name (``s03``, ``03_block_pool``, ``03_block_pool_zh``)."""
    return name if name in layout.stage_ids() else layout.stage_of_assignment(name)


def _gradescope_grade(args: argparse.Namespace) -> int:
    from autograder.integrations.gradescope import grade_submission

    stage = _stage_named(args.stage)
    if stage is None:
        print(f"no stage {reports.shown_path(args.stage)} in this course", file=sys.stderr)
        return 2
    return grade_submission(Path(args.root), stage)


def _gradescope(args: argparse.Namespace) -> int:
    from autograder.integrations.gradescope import build_bundle

    stage = _stage_named(args.stage)
    if stage is None:
        print(f"--stage: {reports.shown_path(args.stage)} is no stage of this course (e.g. s03, or 03_block_pool)",
              file=sys.stderr)
        return 2
    path = build_bundle(Path(args.dest or f"gradescope_{stage}.zip"), stage)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB): upload it as the autograder in Gradescope's "
          "'Zip file upload'")
    return 0

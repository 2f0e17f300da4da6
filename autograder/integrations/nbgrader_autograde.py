"""``python -m autograder autograde ASSIGNMENT [nbgrader's options]``: nbgrader's own ``autograde``, with
the class graded from the first second.

Run as ``nbgrader autograde``, a class waits before its first child runs: nbgrader imports itself
(its Jupyter server extensions included) and sets up on one core while the others idle, and only
then does its first student's hook start the batch (:mod:`nbgrader_batch`).
This command starts grading, at once, the notebooks nbgrader is going to ask for, and once the
first children run, it runs nbgrader's ``autograde`` application in the same process, so that
nbgrader's start and its per-notebook work overlap the grading instead of coming before it.

Everything in the course directory is written by nbgrader's own code, exactly as ``nbgrader
autograde`` with the same options writes it (gradebook rows, ``autograded/`` notebooks, late
penalties, the log): the batch started here is the one :class:`~.nbgrader_glue.IsolatedGrade` would
have started, under the same :class:`~.nbgrader_batch.BatchKey`, and is used only where nbgrader's
configuration selects the same files graded the same way. Where it does not (an option this command
does not read, a configuration that changes the grading mode, feedback or isolation), nbgrader grades
as it would on its own, and the early grading only cost CPU.

Invariants: no early grading unless the kernel confines the children (else nbgrader's own refusal
reaches the log, as without this command); the early selection reads the same layout nbgrader's
default ``CourseDirectory`` reads (``submitted/<student>/<assignment>/<notebook>.ipynb`` under the
course folder) and never includes a file that nbgrader will not convert: a notebook it did not
release, or one whose autograded copy exists, unless ``--force`` says so.
"""
from __future__ import annotations

import glob
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

#: nbgrader's autograde options that change which notebooks it converts (its aliases and flags); any
#: other ``--Class.trait`` option may too, so with one of those the early selection is not made.
_VALUE_OPTIONS = {"student", "notebook", "assignment", "course-dir"}
_SELECTION_FLAGS = {"force", "f"}
_HARMLESS = {"debug", "quiet", "create", "log-level", "course"}  # logging, and options that select nothing


@dataclass(frozen=True)
class Selection:
    """What ``nbgrader autograde`` with these options converts, read without nbgrader: the glob of its
    ``submitted/`` notebooks (as :func:`nbgrader_batch.selected_submissions` names it) and the files."""

    root: Path
    pattern: str
    paths: list[Path]


def early_selection(argv: list[str], cwd: Path) -> Selection | None:
    """The notebooks nbgrader will ask for with ``argv`` (``autograde``'s own arguments), or None when
    the options say something this reading does not understand (then nbgrader alone decides)."""
    values: dict[str, str] = {}
    flags: set[str] = set()
    positional: list[str] = []
    args = list(argv)
    while args:
        a = args.pop(0)
        if not a.startswith("-"):
            positional.append(a)
            continue
        name, eq, value = a.lstrip("-").partition("=")
        if name in _VALUE_OPTIONS:
            if not eq:
                if not args:
                    return None
                value = args.pop(0)
            values[name] = value
        elif name in _SELECTION_FLAGS:
            flags.add(name)
        elif name in _HARMLESS:
            if name in ("log-level", "course") and not eq and args:
                args.pop(0)
        else:
            return None  # e.g. --CourseDirectory.submitted_directory=...: nbgrader's to read
    assignment = values.get("assignment") or (positional[0] if len(positional) == 1 else None)
    if not assignment or len(positional) > 1 or any(c in assignment for c in "*?[/"):
        return None
    root = Path(os.path.abspath(values.get("course-dir") or cwd))
    student, notebook = values.get("student", "*"), values.get("notebook", "*")
    pattern = os.path.join(str(root), "submitted", student, assignment, f"{notebook}.ipynb")
    force = bool(flags)
    found = sorted((Path(p) for p in glob.glob(pattern)), key=lambda p: (p.parent.parent.name, p.name))
    # without --force, nbgrader converts a student's assignment only when autograded/ has none yet
    # (or an older one: those are left to nbgrader, which grades them alone, as it would without this)
    # and only the notebooks it released (it skips any other, and a renamed one is copied to its released
    # name by the course's hook as nbgrader runs: that one is graded then, alone)
    released = {p.stem for p in (root / "source" / assignment).glob("*.ipynb")}
    keep = [p for p in found if p.is_file() and p.stem in released
            and (force or not (root / "autograded" / p.parent.parent.name / assignment).exists())]
    return Selection(root, pattern, keep)


@dataclass
class Early:
    """The early batch's signals: ``running`` is set once its first child is done (or grading ended);
    setting ``stop`` starts no further child (for when nbgrader will ask for nothing more)."""

    running: threading.Event
    stop: threading.Event


def _start_early(selection: Selection) -> Early | None:
    """Start grading ``selection`` as nbgrader's ``IsolatedGrade`` with its default options would, under
    its batch key; None when nothing was started."""
    from autograder.integrations import nbgrader_batch

    try:
        _, key_of, grade_many = nbgrader_batch.plan("best", True, None, None, selection.root)
    except Exception:  # noqa: BLE001 - no kernel isolation: nbgrader's IsolatedGrade says so, per notebook
        return None
    running = threading.Event()

    def graded(paths, on_done=None, stop=None):
        try:
            return grade_many(paths, on_done=on_done, on_todo=running.set, stop=stop)
        finally:
            running.set()

    batch = nbgrader_batch.register(key_of(selection.pattern), selection.paths, graded)
    return None if batch is None else Early(running, batch.stop)


#: How long nbgrader's import waits for the grading's first child. The grading's own start (reading
#: the notebooks, staging the runtime) is Python, as nbgrader's import is, and one interpreter runs one
#: thread of Python at a time: about 0.5 s on 2 cores. A stage whose children take longer to finish
#: (torch's import on stage 6) has its children running by then, so the import waits no longer.
HEAD_START_S = 2.0


def main(argv: list[str], cwd: Path | None = None) -> int:
    """Run ``nbgrader autograde argv`` in this process, with the class graded from the start."""
    import importlib.util

    if importlib.util.find_spec("nbgrader") is None:
        print("nbgrader is not installed here: pip install 'prefix-cache-workbook[grader,nbgrader]', "
              "then run this in the nbgrader course folder", file=sys.stderr)
        return 2
    cwd = cwd or Path.cwd()
    selection = early_selection(argv, cwd)
    early = _start_early(selection) if selection and selection.paths else None
    if early is not None:
        early.running.wait(timeout=HEAD_START_S)
    saved = sys.argv
    # the course's nbgrader_config.py reads the subcommand from sys.argv, as under `nbgrader autograde`
    sys.argv = ["nbgrader", "autograde", *argv]
    try:
        from nbgrader.apps.nbgraderapp import NbGraderApp

        NbGraderApp.launch_instance(argv=["autograde", *argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
        if early is not None:
            early.stop.set()  # nbgrader has asked for all it will ask for (it may have stopped early)
    return code

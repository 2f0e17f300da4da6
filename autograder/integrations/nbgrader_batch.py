"""Grading nbgrader's whole batch at once, so that ``nbgrader autograde`` keeps every core busy.

nbgrader hands its preprocessors one notebook at a time. Graded that way, a submission's first child
runs alone until the learner's cells finish, and the next submission waits for the last of its six,
so a class keeps about 1.4 of 2 cores busy. :class:`Batch` instead starts, on the first notebook
nbgrader asks for, the grading of every notebook nbgrader is going to ask for in this run (the
``submitted/<student>/<assignment>/<notebook>.ipynb`` files its ``--student`` and ``--notebook``
globs select), all of them in one :func:`autograder.grading.grade.grade_paths` call that fills the cores, and
answers each later request from those results.

Invariants: a request is answered from the batch only for the very file that was graded (same path)
and only while its bytes are those read before grading (its digest): a file added, changed or
removed since is graded again, alone, exactly as it would have been without the batch. One batch per
process and (course, assignment, options); a batch that failed to start grades each notebook alone.

When it starts: :func:`start` may be called before nbgrader's first request (the course's
``pre_convert_hook`` does, for the first student, so that grading runs while nbgrader sets up that
student's gradebook rows and sanitizes the notebook); :func:`result_for` starts it otherwise. Either
way the selection is read once per batch: later requests for a file of a live batch are answered
without globbing ``submitted/`` again (a class of n would otherwise cost n globs and n² timestamp
reads).
"""
from __future__ import annotations

import glob
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.core import layout
from autograder.core.results import SubmissionResult
from autograder.grading.submission import digest

if TYPE_CHECKING:
    from autograder.isolation.levels import Isolation

GradeFn = Callable[[list[Path]], list[SubmissionResult]]


@dataclass(frozen=True)
class BatchKey:
    """What makes two requests answerable by one batch: the same files, graded the same way."""

    submitted_glob: str
    isolation: str
    grading: str | None
    feedback: str | None


@dataclass
class Batch:
    """The grading of every selected submission, started once, answered file by file.

    ``digests`` holds each file's digest read before grading; ``results`` fills in (from the grading
    thread) as submissions finish, and ``ready[path]`` is set once its result is in; a path leaves
    ``ready`` (and its result ``results``) when it is taken, so an empty ``ready`` means drained.
    ``stop`` is set once this process's main thread (nbgrader) is done: no further child starts then.
    """

    paths: list[Path]
    digests: dict[Path, str | None]
    results: dict[Path, SubmissionResult] = field(default_factory=dict)
    ready: dict[Path, threading.Event] = field(default_factory=dict)
    thread: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def start(cls, paths: list[Path], grade_many: Callable[..., list[SubmissionResult]]) -> Batch:
        """Start grading ``paths`` in the background; ``grade_many(paths, on_done=..., stop=...)`` grades them."""
        b = cls(paths, {p: digest(p) for p in paths}, ready={p: threading.Event() for p in paths})
        by_text = {str(p): p for p in paths}

        def on_done(r: SubmissionResult) -> None:
            p = by_text.get(r.path)
            if p is not None:
                b.results[p] = r
                b.ready[p].set()

        def run() -> None:
            try:
                grade_many(paths, on_done=on_done, stop=b.stop)
            finally:  # a failed batch still answers: every request then grades its file alone
                for e in list(b.ready.values()):
                    e.set()

        def watch() -> None:  # nbgrader has asked for all it will once its thread is done (or stopped early)
            threading.main_thread().join()
            b.stop.set()

        # not a daemon: the batch's confined children and scratch dirs are cleaned up even when
        # nbgrader stops asking early (the children running then finish; no other starts)
        b.thread = threading.Thread(target=run, name="pcw-nbgrader-batch")
        b.thread.start()
        threading.Thread(target=watch, name="pcw-nbgrader-watch", daemon=True).start()
        return b

    def take(self, path: Path) -> SubmissionResult | None:
        """The batch's result for ``path``, or None when it has none for this file as it is now."""
        path = Path(os.path.abspath(path))
        event = self.ready.get(path)
        if event is None:
            return None
        event.wait()
        del self.ready[path]  # each file is answered once: asked again (a later run), it is graded anew
        result = self.results.pop(path, None)
        if result is None or digest(path) != self.digests[path] or self.digests[path] is None:
            return None
        return result


def course_paths(course: Path) -> list[str]:
    """What of an nbgrader course no grading child may see (never the whole folder: a venv may live there)."""
    names = ("source", "release", "submitted", "autograded", "feedback", "gradebook.db", "nbgrader_config.py")
    return [str(course / n) for n in names if (course / n).exists()]


def plan(isolation_name: str, require_isolation: bool, grading: str | None, feedback: str | None,
         course: Path) -> tuple[Isolation, Callable[[str], BatchKey], Callable[..., list[SubmissionResult]]]:
    """How nbgrader's ``IsolatedGrade`` with these options grades in the course folder ``course``: the
    isolation, the batch key of a ``submitted/`` glob, and ``grade_many(paths, on_done=None,
    on_todo=None, stop=None)`` (:func:`~autograder.grading.grade.grade_paths`'s hooks). Raises, with
    ``require_isolation``, unless the kernel confines the children.

    Imports nothing of nbgrader: ``python -m autograder autograde`` starts a batch with it before
    nbgrader is imported, under the key nbgrader's own requests will look for."""
    from autograder.grading.grade import grade_paths
    from autograder.isolation import levels as isolation

    iso = isolation.select(isolation_name)
    if require_isolation:
        isolation.require_kernel_isolation(iso)  # raises: nbgrader logs it and scores nothing
    hidden = course_paths(course)

    def grade_many(paths, on_done=None, on_todo=None, stop=None):
        # nbgrader's layout names the assignment in the notebook's folder: a notebook of another stage
        # handed in for a course stage's assignment is refused, not graded as the stage it claims
        return grade_paths(paths, iso=iso, hidden=hidden, grading=grading, feedback=feedback, on_done=on_done,
                           on_todo=on_todo, stop=stop, stage=lambda p: layout.stage_of_assignment(Path(p).parent.name))

    return iso, partial(BatchKey, isolation=iso.level, grading=grading, feedback=feedback), grade_many


_BATCHES: dict[BatchKey, Batch] = {}
_STARTED: set[BatchKey] = set()  # every key a batch was started for in this process
_LOCK = threading.Lock()


def _submitted_pattern(config, assignment: str):
    """nbgrader's ``CourseDirectory`` for ``config``, and the glob it selects for ``assignment`` in
    ``submitted/`` (cheap: no file system access)."""
    from nbgrader.coursedir import CourseDirectory

    cd = CourseDirectory(config=config)
    folder = cd.format_path(cd.submitted_directory, cd.student_id or "*", assignment)
    return cd, os.path.join(os.path.abspath(folder), f"{cd.notebook_id or '*'}.ipynb")


def selected_submissions(config, assignment: str) -> tuple[str, list[Path]]:
    """The glob nbgrader's ``CourseDirectory`` selects for ``assignment`` in ``submitted/``, and the
    notebooks it matches that nbgrader will convert (as its ``init_destination`` decides: not an
    excluded student, no autograded copy yet, ``--force``, or a newer submission), in nbgrader's
    order (student, notebook)."""
    cd, pattern = _submitted_pattern(config, assignment)
    force = any(bool(config[section].get("force", False)) for section in ("BaseConverter", "Autograde")
                if section in config)
    excluded = set(filter(None, (cd.student_id_exclude or "").split(",")))
    found = sorted((Path(p) for p in glob.glob(pattern)), key=lambda p: (p.parent.parent.name, p.name))
    return pattern, [p for p in found if p.is_file() and p.parent.parent.name not in excluded
                     and (force or _outdated(cd, p, assignment))]


def _outdated(cd, path: Path, assignment: str) -> bool:
    """Whether nbgrader will (re)grade ``path``: its autograded copy is missing or older."""
    dest = Path(cd.format_path(cd.autograded_directory, path.parent.parent.name, assignment))
    if not (dest / path.name).exists():
        return True
    new, old = cd.get_existing_timestamp(str(path.parent)), cd.get_existing_timestamp(str(dest))
    return new is not None and old is not None and new > old


def register(key: BatchKey, paths: list[Path], grade_many: Callable[..., list[SubmissionResult]]) -> Batch | None:
    """Start the batch of ``paths`` under ``key`` before nbgrader asks (``python -m autograder
    autograde``); None, and nothing started, when a batch was ever started for ``key`` here."""
    with _LOCK:
        if key in _STARTED:
            return None
        batch = _BATCHES[key] = Batch.start(paths, grade_many)
        _STARTED.add(key)
    return batch


def start(key_of: Callable[[str], BatchKey], config, assignment: str,
          grade_many: Callable[..., list[SubmissionResult]], *, early: bool = False) -> Batch | None:
    """Start the batch of every notebook of ``assignment`` this run will convert; the running one if
    it is already started; None when nothing is selected.

    ``early`` (before nbgrader's first request, from its per-student hook): only if no batch was
    ever started for this key in this process, so that a hook never starts a second batch after the
    first has drained (with ``--force`` that would grade the whole class again)."""
    if early:
        _, pattern = _submitted_pattern(config, assignment)
        with _LOCK:
            if key_of(pattern) in _STARTED:
                return None
    pattern, paths = selected_submissions(config, assignment)
    if not paths:
        return None
    key = key_of(pattern)
    with _LOCK:
        batch = _BATCHES.get(key)
        if batch is None:
            batch = _BATCHES[key] = Batch.start(paths, grade_many)
            _STARTED.add(key)
    return batch


def result_for(path: Path, key_of: Callable[[str], BatchKey], config, assignment: str | None,
               grade_many: Callable[..., list[SubmissionResult]]) -> SubmissionResult:
    """``path``'s result, from the batch of its assignment (started on the first request, if
    :func:`start` has not started it already)."""
    path = Path(os.path.abspath(path))
    if assignment:
        batch = key = None
        try:
            _, pattern = _submitted_pattern(config, assignment)
            key = key_of(pattern)
            with _LOCK:
                batch = _BATCHES.get(key)
            if batch is None or path not in batch.ready:  # not (or no longer) the live batch's: select anew
                batch = None
                pattern, paths = selected_submissions(config, assignment)
                if path in paths:
                    batch = start(key_of, config, assignment, grade_many)
        except Exception:  # noqa: BLE001 - an unusual configuration: grade this notebook alone
            batch = None
        if batch is not None and path in batch.ready:
            result = batch.take(path)
            with _LOCK:
                if not batch.ready and _BATCHES.get(key) is batch:  # type: ignore[arg-type]  # set: a batch came of it
                    del _BATCHES[key]  # type: ignore[arg-type]  # drained: the next run in this process starts its own batch
            if result is not None:
                return result
    return grade_many([path])[0]

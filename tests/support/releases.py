"""A stage's nbgrader course with its assignment released, made once per test session and copied for
each test that hands work in to it.

Making one costs about 7 CPU-s (``python -m autograder course`` writes the course folder, ``nbgrader
generate_assignment --create`` releases the assignment and makes the gradebook) and several slow files
made the same stage-1 release for themselves. :func:`released_course` makes it once per session, under
a folder every xdist worker sees, while holding a file lock (as tests/support/notebook_runs.py does for
notebook runs), and gives each caller a copy of its own: a test writes submissions, grades and
gradebook rows into its copy, never into the shared one.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from autograder.core import layout
from tests.support.machine import scaled


def session_root(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the whole session shares: the controller's base temporary folder (a worker's own base
    folder lies inside it), or this process's when there are no workers."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if hasattr(config, "workerinput") else base) / "releases"


def _make(sid: str, course: Path) -> None:
    course.mkdir(parents=True)
    for cmd, cwd in (([sys.executable, "-m", "autograder", "course", str(course), "--stage", sid], layout.ROOT),
                     ([sys.executable, "-m", "nbgrader", "generate_assignment", layout.stage_files(sid).notebook,
                       "--create"], course)):
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=scaled(300))
        assert p.returncode == 0, (cmd, p.stdout[-2000:], p.stderr[-2000:])


def released_course(sid: str, dest: Path, root: Path) -> Path:
    """A copy at ``dest`` (which must not exist) of the session's course for stage ``sid`` alone, its
    English assignment released and in the gradebook; ``root`` is :func:`session_root`.

    Invariants: the shared course is made at most once to completion per session (its marker file is
    written last, so a build stopped half-way is made again by the next caller) and never changes
    after; every caller gets a copy of its own.
    """
    root.mkdir(parents=True, exist_ok=True)
    shared, made = root / sid / "course", root / sid / "made"
    with FileLock(str(root / f"{sid}.lock")):
        if not made.exists():
            shutil.rmtree(shared.parent, ignore_errors=True)
            _make(sid, shared)
            made.write_text("made\n", encoding="utf-8")
    shutil.copytree(shared, dest, symlinks=True)
    return dest

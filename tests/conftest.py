"""Shared fixtures: the repository root on sys.path, and graded results reused across tests."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# Subprocesses use the tools of the interpreter running the tests (nbgrader shells out to `alembic`;
# CI runs `.venv/bin/python -m pytest` without an activated venv).
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")

from autograder.core import layout  # noqa: E402
from autograder.core.layout import built_stages  # noqa: E402,F401 (the generic tests import it from here)


def stage_params() -> list:
    """Every discovered stage as a pytest parameter; a half-written one is skipped, naming its missing files."""
    return [pytest.param(s.id, marks=pytest.mark.skip(reason="; ".join(s.missing())) if not s.is_built else ())
            for s in layout.all_stages()]


@pytest.fixture(scope="session")
def graded_reference_and_stub():
    """Every built stage's instructor notebook (reference) and learner notebook (stub), graded once."""
    from autograder.grading.grade import grade_paths

    paths = {}
    for sid in built_stages():
        files = layout.stage_files(sid)
        paths[str(files.instructor())] = (sid, "reference")
        paths[str(files.learner())] = (sid, "stub")
    return {paths[r.path]: r for r in grade_paths(list(paths))}

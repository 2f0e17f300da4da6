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

from autograder.spec import available_stages, load_stage  # noqa: E402


def built_stages() -> list[str]:
    """Stages whose notebooks exist (a stage in progress may have a spec but no notebook yet)."""
    return [s for s in available_stages() if (ROOT / "solutions" / f"{load_stage(s, hidden=False).notebook}.ipynb").exists()]


@pytest.fixture(scope="session")
def graded_reference_and_stub():
    """Every built stage's instructor notebook (reference) and learner notebook (stub), graded once."""
    from autograder.grade import grade_paths

    paths = []
    for sid in built_stages():
        nb = load_stage(sid, hidden=False).notebook
        paths += [ROOT / "solutions" / f"{nb}.ipynb", ROOT / "notebooks" / f"{nb}.ipynb"]
    results = grade_paths(paths)
    return {(r.stage, "reference" if "/solutions/" in r.path else "stub"): r for r in results}

"""Checks, grading and notebook building for the prefix-cache workbook.

Learners use ``check(todo_id)``, ``hint(todo_id)``, ``demo(todo_id)``, ``progress()`` and ``reveal(...)`` in notebooks; instructors use
``python -m autograder`` (build, grade, course, gradescope).
"""
from __future__ import annotations

__all__ = ["check", "demo", "hint", "progress", "reveal", "set_language", "tr"]
_HOMES = {"check": "learner.inline", "demo": "learner.demos", "hint": "learner.learn", "progress": "learner.standing",
          "reveal": "learner.learn", "set_language": "core.i18n", "tr": "core.i18n"}


def __getattr__(name: str):
    # Lazy, so that a grading child (which never calls check()) starts fast.
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f"autograder.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'autograder' has no attribute {name!r}")

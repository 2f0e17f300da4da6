"""Checks, grading and notebook building for the prefix-cache workbook.

Learners use ``check(todo_id)`` and ``demo(todo_id)`` in notebooks; instructors use
``python -m autograder`` (build, grade, course, gradescope).
"""
from __future__ import annotations

__all__ = ["check", "demo"]


def __getattr__(name: str):
    # Lazy, so that a grading child (which never calls check()) starts fast.
    if name in __all__:
        from autograder import inline

        return getattr(inline, name)
    raise AttributeError(f"module 'autograder' has no attribute {name!r}")

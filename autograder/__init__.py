"""Checks, grading and notebook building for the prefix-cache workbook.

Learners use ``check(todo_id)`` and ``demo(todo_id)`` in notebooks; instructors use
``python -m autograder`` (build, grade, course, gradescope).
"""
from autograder.inline import check, demo

__all__ = ["check", "demo"]

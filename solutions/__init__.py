"""The instructor's side of the course: one folder per stage (``NN_<name>/``) and the given modules.

A stage's reference is imported as ``solutions.sNN_<name>`` (what a notebook of an earlier release
imports): importing this package lets :class:`autograder.core.layout.StageModules` serve that name from
the stage folder's ``reference.py``.
"""
from autograder.core import layout as _layout  # noqa: F401  (importing it installs the finder)

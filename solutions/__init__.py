"""The instructor's side of the course: one folder per stage (``NN_<name>/``: notebook source,
reference, checks, hidden checks, wrong answers, alternatives, fills, metadata).

A stage's reference is imported as ``solutions.sNN_<name>`` (what a notebook of an earlier release
imports): importing this package lets :class:`autograder.core.layout.StageModules` serve that name from
the stage folder's ``reference.py``.

Given code moved to :mod:`workbook`. A notebook saved from an earlier release still imports it by
its former name (``from solutions.predictions import why``); :class:`FormerNames` resolves each such
name to the very module object ``workbook`` holds, so both names share one state and one class
identity (``isinstance`` and pickles agree). The list below is the one record of those names.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from autograder.core import layout as _layout  # noqa: F401  (importing it installs the stage folders' finder)

#: Modules that lived in this package until they moved to :mod:`workbook` (same module name there).
MOVED_TO_WORKBOOK = ("cache_sim", "collision_demo", "contract", "predictions", "radix_node", "radix_sim", "radix_view",
                     "serving", "serving_workloads", "tenant_isolation", "timing_attack", "traces", "weak_keys",
                     "workload")


def new_name(fullname: str) -> str | None:
    """``workbook.<name>`` for a former ``solutions.<name>``; ``None`` for any other module name."""
    package, _, name = fullname.rpartition(".")
    return f"workbook.{name}" if package == __name__ and name in MOVED_TO_WORKBOOK else None


class FormerNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``solutions.<name>`` for a moved module and makes it the ``workbook`` module itself.

    Invariant: after ``import solutions.<name>``, ``sys.modules`` holds the same object under both
    names. It is first on ``sys.meta_path`` and claims only the moved names, so an older copy of the
    course installed beside this one (whose finder would serve its own ``solutions/<name>.py``) cannot
    split a module in two.
    """

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if new_name(fullname) else None

    def create_module(self, spec):
        return None  # a throwaway module: exec_module swaps the real one in

    def exec_module(self, module):
        # the import system returns what sys.modules holds under the name once this returns
        target = new_name(module.__name__)
        if target is None:  # find_spec claims only the moved names
            raise ImportError(f"{module.__name__} is not a former name of a workbook module", name=module.__name__)
        sys.modules[module.__name__] = importlib.import_module(target)


if not any(isinstance(f, FormerNames) for f in sys.meta_path):
    sys.meta_path.insert(0, FormerNames())

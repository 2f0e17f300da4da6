"""The wheel: setuptools as ``pyproject.toml`` configures it, plus each stage's files under their shipped names.

An author writes a stage as one folder (``solutions/NN_<name>/``); an installed course has no stage folders and
holds those files where their module names say (``autograder/checks/sNN.py``, ``solutions/sNN_<name>.py``, ...).
:func:`autograder.core.layout.shipped_files` names both paths of each file; ``build_py`` copies each one there.
"""
from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithStages(build_py):
    """``build_py``, then every stage file that a copy of the course carries, at its shipped path."""

    def run(self) -> None:
        super().run()
        sys.path.insert(0, str(ROOT))  # the layout of the tree being built, not of an installed course
        from autograder.core import layout

        for src, dest in layout.shipped_files():
            target = Path(self.build_lib) / dest
            self.mkpath(str(target.parent))
            self.copy_file(str(src), str(target))


setup(cmdclass={"build_py": BuildWithStages})

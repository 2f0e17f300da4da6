"""Tracebacks that show the course's code as a learner's edition shows it.

The course's modules (given modules under ``workbook/``, earlier stages' references) are one
bilingual source with nbgrader's solution markers and ``# zh:`` comment twins. A traceback in a
learner's kernel that passes through one of them would print those lines around the failing one
(Jupyter shows context lines). :func:`show_released_sources` puts into :mod:`linecache`, for each
such file, the text a learner's edition would show: marker lines blank, and the ``# zh:`` twins blank
in English or in place of their tag in Chinese. Lines are blanked, never removed, so every line
number a traceback names still points at the same code.
"""
from __future__ import annotations

import linecache
import re
import sys
from pathlib import Path

from autograder.core import layout
from autograder.core.pysource import HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END

_MARKERS = (SOLUTION_BEGIN, SOLUTION_END, HIDDEN_BEGIN, HIDDEN_END)
_ZH = re.compile(r"^(\s*)#\s?zh:\s?(.*)$")


def released_lines(text: str, lang: str) -> list[str]:
    """``text`` line for line as the ``lang`` edition reads it (same number of lines)."""
    out = []
    for line in text.splitlines(keepends=True):
        end = "\n" if line.endswith("\n") else ""
        if line.strip() in _MARKERS:
            out.append(end)
        elif m := _ZH.match(line.rstrip("\n")):
            out.append(f"{m.group(1)}# {m.group(2)}{end}" if lang == "zh" else end)
        else:
            out.append(line)
    return out


def course_sources() -> list[Path]:
    """The course's module files whose text differs from what a learner's edition shows."""
    paths = [*layout.course_modules().values(), *sorted((layout.ROOT / "kernels").glob("*.py"))]
    out = []
    for p in paths:
        try:
            text = p.read_text(encoding="utf-8")
        except OSError:
            continue
        if any(m in text for m in _MARKERS) or "# zh:" in text:
            out.append(p)
    return out


def show_released_sources(lang: str) -> list[Path]:
    """Make tracebacks read each course source in its ``lang`` edition's form; returns the files."""
    done = []
    for p in course_sources():
        text = p.read_text(encoding="utf-8")
        lines = released_lines(text, lang)
        # the names a code object may carry for this file: as found on sys.path, and resolved
        names = {str(p), str(p.resolve())} | {
            file for m in list(sys.modules.values())
            if isinstance(file := getattr(m, "__file__", None), str) and _same_file(file, p)}
        for name in names:
            # mtime None: linecache.checkcache keeps the entry (as it does for sources from a loader)
            linecache.cache[name] = (len(text), None, lines, name)
        done.append(p)
    return done


def _same_file(name: str, path: Path) -> bool:
    try:
        return Path(name).resolve() == path.resolve()
    except OSError:
        return False

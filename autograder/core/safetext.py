"""Text a learner controls, made safe to put in a report line: file names, messages, CSV cells.

A learner chooses the name of the notebook they submit and, through their code, parts of every
message about it. Put raw into a report, such text could split a table line (a newline in a file
name), reorder what a terminal or an editor shows (bidirectional controls such as U+202E), hide
itself (zero-width and other format characters), or run as a formula when the CSV is opened in a
spreadsheet (a cell starting with ``=``). Every report format (the table, JSON, CSV, the summary,
Gradescope's results, nbgrader's outputs and log lines, stderr) shows such text through
:func:`one_line` (or :func:`path` for a file name) and, in CSV, :func:`csv_cell`.

Invariants: :func:`one_line` returns a string for which ``str.isprintable()`` holds and which holds
no bidirectional control; :func:`csv_cell` never returns a string that starts with a character a
spreadsheet reads as the start of a formula.
"""
from __future__ import annotations

import os

# Explicit bidirectional controls (all of them are also rejected by ``str.isprintable``; listed here
# so that the rule does not depend on that): embeddings and overrides, isolates, marks.
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
LINE_LIMIT = 4096  # characters of one field of a report line (a path is at most 4096 bytes on Linux)
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` with every character ``str.isprintable()`` rejects, and every bidirectional control,
    written as a backslash escape: one visible line, whatever it held. Only its first ``limit``
    characters are read (the rest becomes "…"), so the cost does not depend on what it held."""
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    if text.isprintable() and not BIDI.intersection(text):
        return text  # the usual case, in one C-level pass
    return "".join(_escape(ch) if ch in BIDI or not ch.isprintable() else ch for ch in text)


def path(p: str | os.PathLike) -> str:
    """A file name as one printable line: undecodable bytes as ``\\xNN``, then :func:`one_line`."""
    text = os.fsencode(p)[:4 * LINE_LIMIT].decode("utf-8", "backslashreplace")
    return one_line(text)


def csv_cell(value: object) -> object:
    """A value fit for a CSV cell: numbers as they are; text on one line (:func:`one_line`), with a
    leading quote when a spreadsheet would read it as a formula."""
    if not isinstance(value, str):
        return value
    text = one_line(value)
    return "'" + text if text.startswith(FORMULA_START) else text

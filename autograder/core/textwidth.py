"""Text tables that line up in both editions: widths measured in terminal columns, not characters.

A Chinese character (and most emoji) takes two columns in a terminal or a notebook's monospaced
output, so ``f"{s:<10}"`` misaligns as soon as ``s`` holds one. Every table the course prints (the
grader's report, the notebooks' demo tables) pads with :func:`pad`, which counts East Asian wide and
fullwidth characters (``unicodedata.east_asian_width`` ``W``/``F``) as two columns and combining marks
as none.
"""
from __future__ import annotations

import unicodedata


def display_width(text: object) -> int:
    """Columns ``str(text)`` takes in a monospaced font: wide/fullwidth 2, combining 0, others 1."""
    s = str(text)
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)


def pad(text: object, width: int, align: str = "<") -> str:
    """``str(text)`` padded with spaces to ``width`` columns (``<`` left, ``>`` right, ``^`` centred);
    a longer text is returned whole (never cut).

    [zh]
    把 ``str(text)`` 用空格补齐到 ``width`` 列（``<`` 左对齐，``>`` 右对齐，``^`` 居中）；更长的文本原样返回
    （从不截断）。
    """
    s = str(text)
    room = max(0, width - display_width(s))
    if align == ">":
        return " " * room + s
    if align == "^":
        return " " * (room // 2) + s + " " * (room - room // 2)
    if align != "<":
        raise ValueError(f"align must be '<', '>' or '^', got {align!r}")
    return s + " " * room

"""Turning one bilingual source into an edition: which lines of code a language keeps.

Prose cells of a notebook source carry ``lang="en"`` or ``lang="zh"`` (see :mod:`autograder.authoring.notebook`).
Code shown in a notebook (reference and given code, demo cells) is localized by two conventions:

- **comments**: a run of English comment lines followed by a run of ``# zh: ...`` lines with the same
  indentation is one comment in two languages; English keeps the first run, Chinese the second
  (without the ``zh:`` tag). A ``# zh:`` line right after a code line that ends in a comment
  translates that end-of-line comment. A comment with no ``# zh:`` partner is kept in both editions;
- **docstrings**: a line ``[zh]`` inside a docstring starts its Chinese part; English keeps what is
  above it, Chinese what is below.

Code itself, identifiers, TODO ids and grade ids are the same in both editions.
"""
from __future__ import annotations

import re

from autograder.core.pysource import STUB_LINES

_ZH_COMMENT = re.compile(r"^(\s*)#\s?zh:\s?(.*)$")
# A translatable English comment: never a marker the build or nbgrader relies on (solution and
# hidden-test markers, a TODO's marker line), which both editions keep as they are.
_COMMENT = re.compile(r"^(\s*)#(?!\s?zh:)(?!## (BEGIN|END) )(?! TODO \d+ \()")
_QUOTES = ('"""', "'''")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _comments(lines: list[str], lang: str) -> list[str]:
    out: list[str] = []
    settled = 0  # lines of ``out`` before this index are final (a translation already put there)
    i = 0
    while i < len(lines):
        m = _ZH_COMMENT.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        j = i
        zh = []
        while j < len(lines) and (mj := _ZH_COMMENT.match(lines[j])) and mj.group(1) == m.group(1):
            zh.append(f"{m.group(1)}# {mj.group(2)}".rstrip())
            j += 1
        if lang == "zh":
            # drop the English comment run right above (same indentation) and put the Chinese one
            popped = False
            while len(out) > settled and _COMMENT.match(out[-1]) and _indent(out[-1]) == m.group(1):
                out.pop()
                popped = True
            trailing = out[-1].rfind("  # ") if out and len(out) > settled and not popped else -1
            if trailing > 0 and _indent(out[-1]) == m.group(1) and not _COMMENT.match(out[-1]):
                # a comment at the end of a code line: its Chinese twin takes its place on that line
                out[-1] = out[-1][:trailing] + "  # " + " ".join(z.strip()[1:].strip() for z in zh)
            else:
                out += zh
            settled = len(out)
        i = j
    return out


def _docstrings(lines: list[str], lang: str) -> list[str]:
    out = list(lines)
    while True:
        marks = [i for i, line in enumerate(out) if line.strip() == "[zh]"]
        if not marks:
            return out
        k = marks[0]
        start = next((i for i in range(k - 1, -1, -1) if any(q in out[i] for q in _QUOTES)), None)
        end = next((i for i in range(k + 1, len(out)) if any(q in out[i] for q in _QUOTES)), None)
        if start is None or end is None:
            raise ValueError(f"a [zh] line outside a docstring: line {k + 1}")
        if lang == "zh":
            indent = _indent(out[start])
            quote = next(q for q in _QUOTES if q in out[start])
            prefix = out[start][: out[start].index(quote) + 3]
            body = [line for line in out[k + 1: end]]
            first = body[0].strip() if body else ""
            closing = out[end]
            if not closing.strip().startswith(quote):  # text before the closing quotes on the same line
                body.append(closing)
                closing = indent + quote
            out[start: end + 1] = [prefix + first, *body[1:], closing]
        else:
            cut = k
            while cut > start + 1 and not out[cut - 1].strip():
                cut -= 1
            out[cut: end] = []
    return out


def localize_code(text: str, lang: str) -> str:
    """The code ``text`` as the ``lang`` edition shows it (comments and docstrings in that language)."""
    lines = _docstrings(text.splitlines(), lang)
    return "\n".join(_comments(lines, lang))


def english_left(text: str) -> list[str]:
    """Lines of a Chinese edition's code that still carry English prose in a comment, whole-line or at
    the end of a code line (for tests)."""
    return [line for line in text.splitlines()
            if (_COMMENT.match(line) or "  # " in line) and line.strip() not in STUB_LINES and "# noqa" not in line
            and re.search(r"[A-Za-z]{4,}\s+[A-Za-z]{3,}\s+[A-Za-z]{3,}", line)
            and not re.search(r"[\u4e00-\u9fff]", line)]

"""The course's terms, read from ``docs/glossary.md`` (their one source), and the "Terms" list each
notebook links.

A row of the glossary's table is one :class:`Term`: the English term, the form every Chinese notebook
writes, the stage that introduces it and a definition in each language. The build puts a list of the
terms a stage introduces, linked to their rows, right after the notebook's prerequisites (both
editions); ``tests/course/test_glossary.py`` checks the table and the Chinese notebooks against it, and
counts each term's :func:`uses` (every term is used; a term a notebook glosses is defined).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from autograder.core import layout
from autograder.core.i18n import L, text

_ROW = re.compile(r'^\|\s*<a id="(?P<anchor>[a-z0-9-]+)"></a>(?P<en>[^|]+?)\s*\|\s*(?P<zh>[^|]+?)\s*\|\s*(?P<stage>\d+)\s*\|'
                  r'\s*(?P<define_en>[^|]*?)\s*\|\s*(?P<define_zh>[^|]*?)\s*\|\s*$')
_GLOSS = re.compile(r"^(?P<head>[^（]+?)（(?P<gloss>[^）]+)）$")
_HAN = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Term:
    """One glossary row. Invariants: ``anchor`` is the row's link target, unique in the table;
    ``stage`` >= 1 is the stage that introduces the term; both definitions are non-empty."""

    anchor: str
    en: str
    zh: str
    stage: int
    define: L

    @property
    def zh_head(self) -> str:
        """The Chinese form without its bracketed gloss: 提示词 for 提示词（prompt）."""
        m = _GLOSS.match(self.zh)
        return m.group("head").strip() if m else self.zh

    @property
    def kept_in_english(self) -> bool:
        """Whether the Chinese edition writes this term in English (KV cache, prefill, token)."""
        return not _HAN.search(self.zh_head)

    def english_forms(self) -> list[str]:
        """The English words of the term as prose may write them: each ' / '-separated form, without
        a bracketed expansion ("TTFT (time to first token)" gives TTFT and "time to first token")."""
        forms = []
        for part in self.en.split(" / "):
            m = re.match(r"^(?P<main>[^(]+?)\s*\((?P<inner>[^)]+)\)$", part.strip())
            if m:
                forms += [m.group("main").strip(), m.group("inner").strip()]
            else:
                forms.append(part.strip())
        return [f for f in forms if f]


def uses(term: Term, prose: str, lang: str) -> int:
    """How often ``prose`` (a notebook's text in ``lang``) writes ``term``: its Chinese form in Chinese
    (as a word of its own when that form is English: ``chunked prefill``); in English each of its
    English forms as a word, any case, plural included ("sentinels")."""
    if lang == "zh" and not term.kept_in_english:
        return prose.count(term.zh_head)
    forms = [term.zh_head] if lang == "zh" else term.english_forms()
    return sum(len(re.findall(r"(?<![\w-])" + re.escape(f) + r"(?:e?s)?(?![\w-])", prose, re.I)) for f in forms)


def parse(markdown: str) -> list[Term]:
    terms = []
    for line in markdown.splitlines():
        m = _ROW.match(line)
        if m:
            terms.append(Term(m["anchor"], m["en"].strip(), m["zh"].strip(), int(m["stage"]),
                              L(m["define_en"], m["define_zh"])))
    return terms


@lru_cache(maxsize=None)
def _load(path: Path, mtime: float) -> tuple[Term, ...]:
    return tuple(parse(path.read_text(encoding="utf-8")))


def terms() -> tuple[Term, ...]:
    """Every term of ``docs/glossary.md``, in table order."""
    path = layout.GLOSSARY
    return _load(path, path.stat().st_mtime)


def stage_terms(stage_number: int) -> list[Term]:
    return [t for t in terms() if t.stage == stage_number]


def terms_markdown(stage_number: int, lang: str, notebook: Path) -> str:
    """The "Terms" list of a stage's notebook: each term it introduces, linked to its glossary row
    (relative to ``notebook``, which is where the link is read from)."""
    link = Path(os.path.relpath(layout.GLOSSARY, notebook.parent)).as_posix()
    items = [f"[{t.zh if lang == 'zh' else t.en}]({link}#{t.anchor})" for t in stage_terms(stage_number)]
    if not items:
        return ""
    head = text(L("**Terms this stage introduces** (each links to its definition in the glossary): ",
                  "**本阶段引入的术语**（点击查看术语表里的定义）："), lang)
    return head + ("、" if lang == "zh" else ", ").join(items) + ("。" if lang == "zh" else ".")

"""Two languages from one source: bilingual text, the current language, and the message catalog.

Every text a learner reads exists once with both its English and its Chinese form (:class:`L`). Which
one is shown follows the notebook: its setup cell calls :func:`set_language` with the edition's
language, and the grader reads the language from the notebook's metadata (``--lang`` overrides).
Code identifiers, TODO ids and grade ids are the same in both editions.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

LANGUAGES = ("en", "zh")  # the course's languages, the default first: every other list is read from here
DEFAULT = LANGUAGES[0]
_current: str | None = None


@dataclass(frozen=True)
class L:
    """A text in English and Chinese. Invariant: both are non-empty strings."""

    en: str
    zh: str

    def __post_init__(self) -> None:
        if not (isinstance(self.en, str) and isinstance(self.zh, str) and self.en.strip() and self.zh.strip()):
            raise ValueError(f"a bilingual text needs both languages: {self!r}")

    def get(self, lang: str | None = None) -> str:
        return self.zh if (lang or language()) == "zh" else self.en

    def format(self, **kw: object) -> "L":
        """Both texts formatted; a field that is itself an :class:`L` fills each language with its own."""
        def pick(lang: str) -> dict:
            return {k: (getattr(v, lang) if isinstance(v, L) else v) for k, v in kw.items()}
        return L(self.en.format(**pick("en")), self.zh.format(**pick("zh")))

    def __str__(self) -> str:
        return self.get()


Text = "L | str"


def text(value: "L | str | None", lang: str | None = None) -> str:
    """The string of ``value`` in ``lang`` (default: the current language); a plain str as it is."""
    if value is None:
        return ""
    return value.get(lang) if isinstance(value, L) else value


def check_language(lang: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; choose one of {LANGUAGES}")
    return lang


def set_language(lang: str) -> None:
    """The language of this kernel's course messages (the setup cell of each edition calls it).

    [zh]
    本内核中课程消息使用的语言（每个版本的设置单元都会调用它）。
    """
    global _current
    _current = check_language(lang)


def language() -> str:
    """The current language: :func:`set_language`, else ``PCW_LANG``, else English."""
    if _current is not None:
        return _current
    env = os.environ.get("PCW_LANG", "")
    return env if env in LANGUAGES else DEFAULT


def tr(en: str, zh: str) -> str:
    """In notebook code: the string for the current language (plot titles, labels, printed text).

    [zh]
    在笔记本代码中：返回当前语言的字符串（图标题、坐标轴标签、打印的文字）。
    """
    return zh if language() == "zh" else en


def notebook_language(nb: dict) -> str:
    """The edition a notebook (as JSON) belongs to, from its metadata; English when it says nothing."""
    meta = nb.get("metadata", {}) if isinstance(nb, dict) else {}
    course = meta.get("pcw", {}) if isinstance(meta, dict) else {}
    lang = course.get("lang") if isinstance(course, dict) else None
    return lang if lang in LANGUAGES else DEFAULT

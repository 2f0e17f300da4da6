"""Keeping the grader's secrets out of what learners read: text that came from learner code is short,
and withheld when it carries reference or hidden-check source in any usual disguise.

The grading child holds secrets it must use but never show: the reference code of the other TODOs
of its stage and the hidden checks' source. Learner code there can return them as a value, put
them in an exception message or a class name, and read them back from its feedback. So every piece
of text that came from the child (a string in a value, an exception's type and message, a cell
error, a "missing" reason) passes :meth:`LeakGuard.fragment` before the grader composes a message
with it, and the fragments of one submission are checked again together
(:meth:`LeakGuard.leaks_together`), so that a secret split across checks or TODOs is caught too.

A text leaks when, in one of its readings (as is, reversed, any Caesar shift, base64/base32/base85,
hex, percent or backslash escapes, a list of character codes, zlib/gzip/bz2 inside any of those),
it contains a :data:`WINDOW`-character run of a secret that is not also in what learners already
have (their notebook, the public checks, every hint and name). Runs are compared as skeletons
(:func:`normalize`): compatibility forms folded (NFKC: fullwidth and mathematical letters), accents
and other combining marks dropped, look-alike letters of other scripts mapped to the Latin letter
they imitate, case folded, and everything but letters and digits left out; a learner text is
NFKC-folded before it is decoded too, so a fullwidth base64 decodes like a plain one.

What is shown is what is tested: :meth:`LeakGuard.fragment` first cuts a text to what a report would
show, then tests that. No text is read beyond :data:`autograder.grading.readings.SCAN_LIMIT` characters, so
the guard's cost does not depend on what learner code returns or prints.

Invariants: :meth:`LeakGuard.fragment` returns at most ``limit`` characters, one printable line
(:func:`autograder.core.safetext.one_line`), never a leaking text; a guard built with no secrets never
withholds anything.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from autograder.core.safetext import one_line
from autograder.grading.readings import SCAN_LIMIT, all_shifts, readings

WINDOW = 12           # alphanumeric characters of a secret that may never appear in a learner's feedback
TEXT_LIMIT = 120      # characters of one piece of learner text (a string value, an exception message)
NAME_LIMIT = 60       # characters of a type name from learner code
MAX_TEXTS = 200       # pieces of text checked per value
MAX_CODES = 1024      # items of a list of numbers read as character codes
WITHHELD = "‹withheld: it contained the grader's code›"


_NOT_ALNUM = re.compile(r"[\W_]+")
_WORD = re.compile(r"[A-Za-z0-9_.]+")


# Letters of other scripts that look like a Latin letter or digit (the common ones of Cyrillic,
# Greek, Armenian and Cherokee, and a few symbols): mapped to the letter they imitate.
@functools.cache
def _lookalikes() -> dict[int, Any]:
    """The folding table, built on the first text that is not ASCII (the combining marks take a
    scan of the whole Unicode range, about 40 ms, which a grading process reading only ASCII skips)."""
    return str.maketrans({  # type: ignore[misc]  # letters and code points as keys: mypy infers no one key type
        **dict.fromkeys("аαɑⲁ", "a"), **dict.fromkeys("вβʙ", "b"), **dict.fromkeys("сϲⅽ", "c"),
        **dict.fromkeys("ԁⅾ", "d"), **dict.fromkeys("еєɛε", "e"), **dict.fromkeys("ғϝ", "f"),
        **dict.fromkeys("ɡց", "g"), **dict.fromkeys("һн", "h"), **dict.fromkeys("іιɩӏ", "i"),
        **dict.fromkeys("јϳ", "j"), **dict.fromkeys("кκ", "k"), **dict.fromkeys("ⅼǀ", "l"),
        **dict.fromkeys("мⅿ", "m"), **dict.fromkeys("пոηռ", "n"), **dict.fromkeys("оοօσ", "o"),
        **dict.fromkeys("рρ", "p"), **dict.fromkeys("ԛզ", "q"), **dict.fromkeys("гᴦ", "r"),
        **dict.fromkeys("ѕꜱ", "s"), **dict.fromkeys("тτ", "t"), **dict.fromkeys("υս", "u"),
        **dict.fromkeys("ѵνⅴ", "v"), **dict.fromkeys("ԝѡω", "w"), **dict.fromkeys("хχⅹ", "x"),
        **dict.fromkeys("уγ", "y"), **dict.fromkeys("ᴢ", "z"),
        # and combining marks (accents, overlays) dropped: what is left is the letter they sit on
        **{cp: None for cp in range(0x300, 0x20000) if unicodedata.combining(chr(cp))},
    })


def normalize(text: str) -> str:
    """A text's skeleton: letters and digits only, compatibility forms and look-alikes folded to
    the Latin letter, accents dropped, case folded. What a window of a secret is made of."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text.casefold()).translate(_lookalikes())  # NFKD: NFKC's folding too
    return _NOT_ALNUM.sub("", text.casefold())


def windows(text: str, size: int = WINDOW) -> set[str]:
    norm = normalize(text)
    return {norm[i:i + size] for i in range(len(norm) - size + 1)}


class LeakGuard:
    """Knows one stage's secrets (see the module docstring for what counts as a leak)."""

    def __init__(self, secrets: Iterable[str], public: Iterable[str] = ()) -> None:
        self.secret: set[str] = set().union(*(windows(t) for t in secrets))
        self.public_words: set[str] = set()
        for text in public:
            norm = normalize(text)
            self.secret.difference_update(norm[i:i + WINDOW] for i in range(len(norm) - WINDOW + 1))
            self.public_words.update(normalize(w) for w in _WORD.findall(text))
        # A reading under a Caesar shift contains a secret window iff the plain reading contains that
        # window shifted back: shifting the few secret windows once is far cheaper than shifting every
        # reading of every piece of learner text 25 times.
        self.shifted: set[str] = {s for w in self.secret for s in all_shifts(w)}

    # -- as data (what :mod:`autograder.grading.trusted_store` keeps between processes) --------------
    def state(self) -> dict[str, list[str]]:
        """Everything the guard learned, as plain data: :meth:`from_state` rebuilds an equal guard."""
        return {"secret": sorted(self.secret), "public_words": sorted(self.public_words), "shifted": sorted(self.shifted)}

    @classmethod
    def from_state(cls, state: dict[str, list[str]]) -> LeakGuard:
        """The guard whose :meth:`state` is ``state`` (learning nothing again)."""
        guard = cls.__new__(cls)
        guard.secret, guard.public_words, guard.shifted = (set(state[k]) for k in ("secret", "public_words", "shifted"))
        return guard

    # -- detection -----------------------------------------------------------------------------
    def leaks(self, text: str) -> bool:
        """Whether any reading of ``text`` (its first :data:`SCAN_LIMIT` characters) contains a secret window."""
        if not self.secret or not text:
            return False
        text = text[:SCAN_LIMIT]
        if not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        return any(self._plain_leak(r) for r in readings(text, shifts=False))

    def leaks_together(self, texts: Iterable[str]) -> bool:
        """Whether pieces of text leak once put together (a secret split across checks). Pieces that
        are words learners already have (a field name such as ``hit_tokens``) are left out: put side
        by side in the reference's order they would read as its code."""
        texts = [t[:SCAN_LIMIT] for t in texts if t and normalize(t[:SCAN_LIMIT]) not in self.public_words]
        joined = ["".join(texts), "".join(reversed(texts))]
        return any(self.leaks(j) for j in joined)

    def _plain_leak(self, text: str) -> bool:
        """Whether ``text``, or ``text`` under any Caesar shift, holds a secret window."""
        norm = normalize(text)
        return any(norm[i:i + WINDOW] in self.shifted for i in range(len(norm) - WINDOW + 1))

    # -- sanitizing ----------------------------------------------------------------------------
    def fragment(self, text: object, limit: int = TEXT_LIMIT) -> str:
        """A piece of learner text fit to show: one printable line of at most ``limit`` characters,
        or a note that it was withheld. Only what would be shown is read."""
        s = text if isinstance(text, str) else ""
        s = " ".join(s[:max(SCAN_LIMIT, 4 * limit)].split())
        s = s if len(s) <= limit else s[: limit - 1] + "…"
        if self.leaks(s):
            return WITHHELD
        shown = one_line(s)
        return shown if len(shown) <= limit else shown[: limit - 1] + "…"

    def name(self, text: object) -> str:
        """A type or function name from learner code: identifier characters only, short."""
        s = text if isinstance(text, str) else ""
        cleaned = re.sub(r"[^A-Za-z0-9_.]", "", s[:SCAN_LIMIT])[:NAME_LIMIT] or "?"
        return "Withheld" if self.leaks(cleaned) else cleaned

    def outcome(self, outcome: dict) -> dict:
        """A copy of a child's outcome fit for display: every piece of text in it sanitized (the
        first :data:`MAX_TEXTS` pieces are checked; later ones, which no report shows, are dropped).
        (A submission whose pieces leak only together is withheld whole: :mod:`autograder.grading.disclosure`.)"""
        kind = outcome.get("kind")
        if kind == "ok":
            return {"kind": "ok", "value": self._value(outcome.get("value"), 0, [MAX_TEXTS])}
        if kind == "raised":
            return {"kind": "raised", "type": self.name(outcome.get("type")),
                    "message": self.fragment(outcome.get("message"))}
        if kind == "todo":
            return {"kind": "todo", "function": self.name(outcome.get("function"))}
        return {"kind": "error", "message": self.fragment(outcome.get("message"))}

    def _value(self, v: Any, depth: int, budget: list[int]) -> Any:
        if depth > 30:
            return None
        if isinstance(v, str):
            budget[0] -= 1
            return self.fragment(v) if budget[0] >= 0 else "…"
        if isinstance(v, list):
            if self._codes_leak(v):
                return WITHHELD
            return [self._value(x, depth + 1, budget) for x in v]
        if isinstance(v, dict):
            if "__bytes__" in v and isinstance(v["__bytes__"], str):
                raw = v["__bytes__"][:64]
                return WITHHELD if self.leaks(raw) else {"__bytes__": raw}
            if "__opaque__" in v:
                return {"__opaque__": self.name(v["__opaque__"])}
            return {k: self._value(x, depth + 1, budget) for k, x in v.items() if isinstance(k, str)}
        return v

    def _codes_leak(self, items: list) -> bool:
        head = items[:MAX_CODES]
        codes = [x for x in head if type(x) is int and -0x110000 < x < 0x110000]
        if len(codes) < WINDOW or len(codes) != len(head):
            return False
        return self.leaks(" ".join(map(str, codes)))

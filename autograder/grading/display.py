"""Showing probe outcomes to a learner: short, readable, and pointing at where two values differ.

Digests are shown as short hex, records (dicts with field names) as ``field=value``, and tensor
summaries (what :func:`autograder.checks.common.tensor` returns) as shape, dtype and device, with the
largest difference and the first mismatching index when two of them disagree.
"""
from __future__ import annotations

import math
from typing import Any

from autograder.core.data import Opaque, decode
from autograder.core.i18n import LANGUAGES, L, text

MAX_CHARS = 160
TENSOR_KEYS = frozenset({"shape", "dtype", "device", "values"})
# A learner's value in a grader's report (``compact``): see :mod:`autograder.grading.disclosure` for why.
COMPACT_CHARS = 60    # a rendering this short is shown whole
PREFIX_CHARS = 40     # else: its type and shape, and this much of it
NUMBER_CHARS = 24     # characters of one number (a 64-bit hash fits)
KEY_CHARS = 16        # characters of one dict key or string item


# The words a rendering adds around a value, in both languages (a type's name stays Python's).
SHOWN_KEYS = L("{kind} of {n} keys", "{kind}，{n} 个键")
SHOWN_ITEMS = L("{kind} of {n} items", "{kind}，{n} 项")
SHOWN_LENGTH = L("{kind} of {n}", "{kind}，长度 {n}")
SHOWN_BYTES = L("<{n} bytes {head}…>", "<{n} 字节 {head}…>")
SHOWN_BITS = L("<int of {n} bits>", "<{n} 位的 int>")
SHOWN_DIGITS = L("…({n} digits)", "…（共 {n} 位）")


def is_tensor(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == TENSOR_KEYS


def _short(s: str, n: int = MAX_CHARS) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def show_value(v: Any, depth: int = 0, compact: bool = False, lang: str | None = None) -> str:
    """``v`` on one line; ``compact``: every number cut to :data:`NUMBER_CHARS` characters and every
    key and string to :data:`KEY_CHARS` (a learner's value in a grader's report). The few words it
    adds (a byte count, a cut number's digits) are in ``lang``."""
    if depth > 4:
        return "…"
    if isinstance(v, bytes):
        return text(SHOWN_BYTES, lang).format(n=len(v), head=v[:6].hex()) if len(v) > 8 else f"bytes.fromhex('{v.hex()}')"
    if is_tensor(v):
        shape, dtype, device = (str(v[k]) for k in ("shape", "dtype", "device"))
        if compact:
            shape, dtype, device = (_short(x, KEY_CHARS) for x in (shape, dtype, device))
        return f"tensor(shape={shape}, dtype={dtype}, device={device})"
    if isinstance(v, dict):
        items = list(v.items())
        labelled = all(isinstance(k, str) and k.isidentifier() for k, _ in items)
        parts = [f"{_short(k, KEY_CHARS) if compact else k}={show_value(x, depth + 1, compact, lang)}" if labelled else
                 f"{show_value(k, depth + 1, compact, lang)}: {show_value(x, depth + 1, compact, lang)}"
                 for k, x in items[:12]]
        more = ", …" if len(items) > 12 else ""
        return ("{" if not labelled else "(") + ", ".join(parts) + more + ("}" if not labelled else ")")
    if isinstance(v, (list, tuple, frozenset)):
        seq = sorted(v, key=repr) if isinstance(v, frozenset) and len(v) <= 10_000 else list(v)
        inner = ", ".join(show_value(x, depth + 1, compact, lang) for x in seq[:12]) + (", …" if len(seq) > 12 else "")
        if isinstance(v, tuple):
            return f"({inner}{',' if len(v) == 1 else ''})"
        return f"{{{inner}}}" if isinstance(v, frozenset) else f"[{inner}]"
    if isinstance(v, float):
        return repr(v) if not math.isfinite(v) else f"{v:.6g}"
    if isinstance(v, str):
        return repr(_short(v, KEY_CHARS if compact else 60))
    if isinstance(v, int) and not isinstance(v, bool) and compact:
        return _number(v, lang)
    return repr(v)


def _number(n: int, lang: str | None = None) -> str:
    """An int, cut to :data:`NUMBER_CHARS` characters (its leading digits and how many there are)."""
    try:
        digits_text = repr(n)
    except ValueError:  # more digits than Python converts (it never arrives through the channel)
        return text(SHOWN_BITS, lang).format(n=n.bit_length())
    if len(digits_text) <= NUMBER_CHARS:
        return digits_text
    digits = len(digits_text) - (n < 0)
    return digits_text[:12] + text(SHOWN_DIGITS, lang).format(n=digits)


def _shape(v: Any, lang: str | None = None) -> str:
    """A value's type and size in ``lang``, e.g. ``list of 200 items`` (``list，200 项``): what a compact
    rendering starts with. The type's name is Python's, in either language."""
    if is_tensor(v):
        return "tensor"
    if isinstance(v, (list, tuple, frozenset, dict)):
        kind = {list: "list", tuple: "tuple", frozenset: "set", dict: "dict"}[type(v)]
        return text(SHOWN_KEYS if isinstance(v, dict) else SHOWN_ITEMS, lang).format(kind=kind, n=len(v))
    if isinstance(v, (str, bytes)):
        return text(SHOWN_LENGTH, lang).format(kind=type(v).__name__, n=len(v))
    return type(v).__name__ if not isinstance(v, Opaque) else v.type_name


def compact_value(v: Any, lang: str | None = None) -> str:
    """A learner's value in a grader's report: whole when short, else type and shape plus a prefix."""
    full = show_value(v, compact=True, lang=lang)
    if len(full) <= COMPACT_CHARS:
        return full
    return text(L("{shape}: {prefix}…", "{shape}：{prefix}…"), lang).format(shape=_shape(v, lang), prefix=full[:PREFIX_CHARS])


def show(outcome: dict, lang: str | None = None, compact: bool = False) -> str:
    """One line a learner can read: the value, or what was raised; ``compact`` for a learner's
    outcome in a grader's report (:func:`compact_value`)."""
    kind = outcome["kind"]
    if kind == "ok":
        value = decode(outcome["value"])
        out = compact_value(value, lang) if compact else _short(show_value(value, lang=lang))
        if _contains_opaque(value):
            out += "   " + text(L("(only plain int/float/str/list/tuple/dict values count here)",
                                  "（这里只接受普通的 int/float/str/list/tuple/dict 值）"), lang)
        return out
    if kind == "raised":
        message = outcome.get("message_zh") if text(L(LANGUAGES[0], "zh"), lang) == "zh" else None
        message = message or outcome.get("message")
        msg = f": {_short(message, 100)}" if message else ""
        return text(L("raises {t}{m}", "抛出 {t}{m}"), lang).format(t=outcome["type"], m=msg)
    if kind == "todo":
        return text(L("NotImplementedError (the TODO is still a stub)", "NotImplementedError（这个 TODO 还没写）"), lang)
    return outcome.get("message") or text(L("no answer", "没有答案"), lang)


def _contains_opaque(v: Any, depth: int = 0) -> bool:
    if depth > 6:
        return False
    if isinstance(v, Opaque):
        return True
    if isinstance(v, (list, tuple, frozenset)):
        return any(_contains_opaque(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return any(_contains_opaque(x, depth + 1) for x in v.values())
    return False


# -- where two values differ ------------------------------------------------------------------------
def _unravel(i: int, shape: list[int]) -> tuple[int, ...]:
    out = []
    for n in reversed(shape or [1]):
        out.append(i % n if n else 0)
        i //= n or 1
    return tuple(reversed(out))


def _tensor_difference(e: dict, g: dict, atol: float | None, lang: str | None, compact: bool = False) -> str:
    for key in ("shape", "dtype", "device"):
        if e[key] != g[key]:
            got = _short(str(g[key]), KEY_CHARS) if compact else g[key]
            return text(L("{k}: expected {e}, got {g}", "{k}：期望 {e}，实际 {g}"), lang).format(k=key, e=e[key], g=got)
    ev, gv = e["values"], g["values"]
    if len(ev) != len(gv):
        return text(L("different number of values", "数值个数不同"), lang)
    tol = atol or 0.0
    diffs = [abs(a - b) if isinstance(a, (int, float)) and isinstance(b, (int, float)) else math.inf for a, b in zip(ev, gv, strict=True)]
    first = next((i for i, d in enumerate(diffs) if not d <= tol), None)
    if first is None:
        return ""
    worst = max(diffs)
    return text(L("max |difference| {w:.3g} (tolerance {t:g}); first mismatch at index {i}: expected {a:.6g}, got {b}",
                  "最大 |差值| {w:.3g}（容差 {t:g}）；第一个不一致的位置 {i}：期望 {a:.6g}，实际 {b}"), lang).format(
        w=worst, t=tol, i=_unravel(first, list(e["shape"])), a=ev[first], b=show_value(gv[first], compact=compact, lang=lang))


def first_difference(expected: Any, got: Any, atol: float | None = None, path: str = "", lang: str | None = None,
                     compact: bool = False) -> str:
    """Where two decoded values first differ, in one phrase ("" when no single place explains it);
    ``compact``: ``got`` is a learner's value in a grader's report (its parts are cut short)."""
    here = path or text(L("the result", "结果"), lang)
    if is_tensor(expected) and is_tensor(got):
        d = _tensor_difference(expected, got, atol, lang, compact)
        return f"{here}: {d}" if d else ""
    if type(expected) is not type(got):
        return text(L("{p}: expected a {e}, got a {g}", "{p}：期望 {e} 类型，实际是 {g}"), lang).format(
            p=here, e=type(expected).__name__, g=type(got).__name__ if not isinstance(got, Opaque) else got.type_name)
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(got):
            return text(L("{p}: expected {e} items, got {g}", "{p}：期望 {e} 项，实际 {g} 项"), lang).format(
                p=here, e=len(expected), g=len(got))
        for i, (a, b) in enumerate(zip(expected, got, strict=True)):
            d = first_difference(a, b, atol, f"{path}[{i}]", lang, compact)
            if d:
                return d
        return ""
    if isinstance(expected, dict):
        if expected.keys() != got.keys():
            missing = sorted(map(repr, expected.keys() - got.keys()))[:3]
            extra = list(got.keys() - expected.keys())[:100]
            extra = sorted(_short(repr(k), KEY_CHARS) if compact else repr(k) for k in extra)[:3]
            return text(L("{p}: keys differ (missing {m}, unexpected {x})", "{p}：键不一致（缺少 {m}，多出 {x}）"), lang).format(
                p=here, m=", ".join(missing) or "-", x=", ".join(extra) or "-")
        for k in expected:
            label = f"{path}.{k}" if isinstance(k, str) and k.isidentifier() else f"{path}[{k!r}]"
            d = first_difference(expected[k], got[k], atol, label, lang, compact)
            if d:
                return d
        return ""
    if isinstance(expected, float) and atol is not None and abs(expected - got) <= atol:
        return ""
    if expected != got and path:
        return text(L("{p}: expected {e}, got {g}", "{p}：期望 {e}，实际 {g}"), lang).format(
            p=path, e=show_value(expected, lang=lang), g=show_value(got, compact=compact, lang=lang))
    return ""

"""Showing probe outcomes to a learner: short, readable, and pointing at where two values differ.

Digests are shown as short hex, records (dicts with field names) as ``field=value``, and tensor
summaries (what :func:`autograder.checks.common.tensor` returns) as shape, dtype and device, with the
largest difference and the first mismatching index when two of them disagree.
"""
from __future__ import annotations

import math
from typing import Any

from autograder.data import Opaque, decode
from autograder.i18n import L, text

MAX_CHARS = 160
TENSOR_KEYS = frozenset({"shape", "dtype", "device", "values"})


def is_tensor(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == TENSOR_KEYS


def _short(s: str, n: int = MAX_CHARS) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def show_value(v: Any, depth: int = 0) -> str:
    if depth > 4:
        return "…"
    if isinstance(v, bytes):
        return f"<{len(v)} bytes {v[:6].hex()}…>" if len(v) > 8 else f"bytes.fromhex('{v.hex()}')"
    if is_tensor(v):
        return f"tensor(shape={list(v['shape'])}, dtype={v['dtype']}, device={v['device']})"
    if isinstance(v, dict):
        items = list(v.items())
        labelled = all(isinstance(k, str) and k.isidentifier() for k, _ in items)
        parts = [f"{k}={show_value(x, depth + 1)}" if labelled else f"{show_value(k, depth + 1)}: {show_value(x, depth + 1)}"
                 for k, x in items[:12]]
        more = ", …" if len(items) > 12 else ""
        return ("{" if not labelled else "(") + ", ".join(parts) + more + ("}" if not labelled else ")")
    if isinstance(v, (list, tuple, frozenset)):
        seq = sorted(v, key=repr) if isinstance(v, frozenset) else list(v)
        inner = ", ".join(show_value(x, depth + 1) for x in seq[:12]) + (", …" if len(seq) > 12 else "")
        if isinstance(v, tuple):
            return f"({inner}{',' if len(v) == 1 else ''})"
        return f"{{{inner}}}" if isinstance(v, frozenset) else f"[{inner}]"
    if isinstance(v, float):
        return repr(v) if not math.isfinite(v) else f"{v:.6g}"
    if isinstance(v, str):
        return repr(_short(v, 60))
    return repr(v)


def show(outcome: dict, lang: str | None = None) -> str:
    """One line a learner can read: the value, or what was raised."""
    kind = outcome["kind"]
    if kind == "ok":
        value = decode(outcome["value"])
        out = _short(show_value(value))
        if _contains_opaque(value):
            out += "   " + text(L("(only plain int/float/str/list/tuple/dict values count here)",
                                  "（这里只接受普通的 int/float/str/list/tuple/dict 值）"), lang)
        return out
    if kind == "raised":
        msg = f": {_short(outcome['message'], 100)}" if outcome.get("message") else ""
        return text(L("raises {t}{m}", "抛出 {t}{m}"), lang).format(t=outcome["type"], m=msg)
    if kind == "todo":
        return text(L("NotImplementedError (the TODO is still a stub)", "NotImplementedError（这个 TODO 还没写）"), lang)
    return outcome.get("message", "no answer")


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


def _tensor_difference(e: dict, g: dict, atol: float | None, lang: str | None) -> str:
    for key in ("shape", "dtype", "device"):
        if e[key] != g[key]:
            return text(L("{k}: expected {e}, got {g}", "{k}：期望 {e}，实际 {g}"), lang).format(k=key, e=e[key], g=g[key])
    ev, gv = e["values"], g["values"]
    if len(ev) != len(gv):
        return text(L("different number of values", "数值个数不同"), lang)
    tol = atol or 0.0
    diffs = [abs(a - b) if isinstance(a, (int, float)) and isinstance(b, (int, float)) else math.inf for a, b in zip(ev, gv)]
    first = next((i for i, d in enumerate(diffs) if not d <= tol), None)
    if first is None:
        return ""
    worst = max(diffs)
    return text(L("max |difference| {w:.3g} (tolerance {t:g}); first mismatch at index {i}: expected {a:.6g}, got {b}",
                  "最大 |差值| {w:.3g}（容差 {t:g}）；第一个不一致的位置 {i}：期望 {a:.6g}，实际 {b}"), lang).format(
        w=worst, t=tol, i=_unravel(first, list(e["shape"])), a=ev[first], b=show_value(gv[first]))


def first_difference(expected: Any, got: Any, atol: float | None = None, path: str = "", lang: str | None = None) -> str:
    """Where two decoded values first differ, in one phrase ("" when no single place explains it)."""
    here = path or text(L("the result", "结果"), lang)
    if is_tensor(expected) and is_tensor(got):
        d = _tensor_difference(expected, got, atol, lang)
        return f"{here}: {d}" if d else ""
    if type(expected) is not type(got):
        return text(L("{p}: expected a {e}, got a {g}", "{p}：期望 {e} 类型，实际是 {g}"), lang).format(
            p=here, e=type(expected).__name__, g=type(got).__name__ if not isinstance(got, Opaque) else got.type_name)
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(got):
            return text(L("{p}: expected {e} items, got {g}", "{p}：期望 {e} 项，实际 {g} 项"), lang).format(
                p=here, e=len(expected), g=len(got))
        for i, (a, b) in enumerate(zip(expected, got)):
            d = first_difference(a, b, atol, f"{path}[{i}]", lang)
            if d:
                return d
        return ""
    if isinstance(expected, dict):
        if expected.keys() != got.keys():
            missing = sorted(map(repr, expected.keys() - got.keys()))[:3]
            extra = sorted(map(repr, got.keys() - expected.keys()))[:3]
            return text(L("{p}: keys differ (missing {m}, unexpected {x})", "{p}：键不一致（缺少 {m}，多出 {x}）"), lang).format(
                p=here, m=", ".join(missing) or "-", x=", ".join(extra) or "-")
        for k in expected:
            label = f"{path}.{k}" if isinstance(k, str) and k.isidentifier() else f"{path}[{k!r}]"
            d = first_difference(expected[k], got[k], atol, label, lang)
            if d:
                return d
        return ""
    if isinstance(expected, float) and atol is not None and abs(expected - got) <= atol:
        return ""
    if expected != got and path:
        return text(L("{p}: expected {e}, got {g}", "{p}：期望 {e}，实际 {g}"), lang).format(
            p=path, e=show_value(expected), g=show_value(got))
    return ""

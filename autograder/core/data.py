"""Outcomes of probes as plain data, and how two outcomes are compared and shown.

A probe's result crosses a process boundary (learner child -> grading parent), so it is turned into
tagged JSON made only of exact built-in types. Values of any other type (a ``list`` subclass with a
lying ``__eq__``, a numpy integer, a tensor) become :class:`Opaque`, which never equals a real value.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 20
MAX_ITEMS = 100_000


@dataclass(frozen=True)
class Opaque:
    """Stands for a value of a type the contract does not allow (shown by its type name)."""

    type_name: str

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_ITEMS

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise ValueError("result too large to compare")


def _type_name(x: Any) -> str:
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def encode(x: Any, _depth: int = 0, _budget: _Budget | None = None) -> Any:
    """Tagged JSON for ``x``, using exact types only (``type(x) is int``, not ``isinstance``)."""
    budget = _budget or _Budget()
    budget.spend()
    if _depth > MAX_DEPTH:
        raise ValueError("result nested too deeply to compare")
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return x if math.isfinite(x) else {"__float__": repr(x)}
    if t is bytes:
        return {"__bytes__": x.hex()}
    if t is list:
        return [encode(v, _depth + 1, budget) for v in x]
    if t is tuple:
        return {"__tuple__": [encode(v, _depth + 1, budget) for v in x]}
    if t is dict:
        return {"__dict__": [[encode(k, _depth + 1, budget), encode(v, _depth + 1, budget)] for k, v in x.items()]}
    if t is set or t is frozenset:
        items = [encode(v, _depth + 1, budget) for v in x]
        return {"__set__": sorted(items, key=repr)}
    return {"__opaque__": _type_name(x)}


def decode(j: Any) -> Any:
    """Inverse of :func:`encode` (sets come back as sorted lists tagged by a frozenset)."""
    if isinstance(j, list):
        return [decode(v) for v in j]
    if isinstance(j, dict):
        if "__tuple__" in j:
            return tuple(decode(v) for v in j["__tuple__"])
        if "__bytes__" in j:
            return bytes.fromhex(j["__bytes__"])
        if "__dict__" in j:
            return {_hashable(decode(k)): decode(v) for k, v in j["__dict__"]}
        if "__set__" in j:
            return frozenset(_hashable(decode(v)) for v in j["__set__"])
        if "__float__" in j:
            return float(j["__float__"])
        if "__opaque__" in j:
            return Opaque(j["__opaque__"])
    return j


def _hashable(x: Any) -> Any:
    return tuple(x) if isinstance(x, list) else x


# -- outcomes -----------------------------------------------------------------------------------
# An outcome is a dict with "kind":
#   ok      {"value": tagged JSON}                 the probe returned
#   raised  {"type": name, "message": str}         the probe raised an ordinary exception
#   todo    {"function": name}                     NotImplementedError: a TODO left unfilled
#   error   {"message": str}                       the harness could not get an answer


def ok(value: Any) -> dict:
    return {"kind": "ok", "value": encode(value)}


def raised(exc: BaseException) -> dict:
    return {"kind": "raised", "type": type(exc).__name__, "message": _short(str(exc))}


def _short(s: str, n: int = 200) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def values_equal(expected: Any, got: Any, atol: float | None) -> bool:
    """Exact structural equality on decoded values; floats within ``atol`` when given.

    Types must match exactly (a tuple is not a list, True is not 1), so that lying containers and
    look-alike types never pass.
    """
    if type(expected) is not type(got):
        if atol is not None and {type(expected), type(got)} <= {int, float} and bool not in (type(expected), type(got)):
            return abs(expected - got) <= atol
        return False
    if isinstance(expected, float):
        if math.isnan(expected) or math.isnan(got):
            return math.isnan(expected) and math.isnan(got)
        return expected == got if atol is None else abs(expected - got) <= atol
    if isinstance(expected, (list, tuple)):
        return len(expected) == len(got) and all(values_equal(e, g, atol) for e, g in zip(expected, got, strict=True))
    if isinstance(expected, dict):
        return expected.keys() == got.keys() and all(values_equal(expected[k], got[k], atol) for k in expected)
    return expected == got


def _same_encoding(a: Any, b: Any) -> bool:
    """Whether two tagged JSON values are the same, type for type: their JSON texts are, which tell
    ``1`` from ``True`` and from ``1.0`` (a float's text always has a point or an exponent, and
    :func:`encode` writes no raw non-finite float). Then their decoded values are equal under
    :func:`values_equal` too, which is what makes this a shortcut; a value holding a non-finite float
    (``{"__float__": ...}``) answers False, leaving it to the decoded comparison (a NaN in a set or
    among a dict's keys is not equal to itself there). Only ever a shortcut: False proves nothing."""
    try:
        text = json.dumps(a, allow_nan=False)
        return '"__float__"' not in text and text == json.dumps(b, allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # not JSON as encode() writes it
        return False


def outcomes_equal(expected: dict, got: dict, atol: float | None = None) -> bool:
    if expected["kind"] != got["kind"]:
        return False
    if expected["kind"] == "ok":
        # most outcomes graded are the reference's exactly: found equal without decoding either
        if (atol is None or atol >= 0) and _same_encoding(expected["value"], got["value"]):
            return True
        return values_equal(decode(expected["value"]), decode(got["value"]), atol)
    if expected["kind"] == "raised":
        return expected["type"] == got["type"]
    return False

"""Probe helpers shared by every stage's checks (public and hidden).

A probe returns plain data; these helpers turn what learner code does into such data without ever
hiding an unfinished TODO: ``NotImplementedError`` always propagates, so the grader reports "not
implemented yet" instead of a wrong answer.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


def attempt(action: Callable[[], Any]) -> Any:
    """``action()``'s result, or the name of the exception it raised (the grader compares names)."""
    try:
        return action()
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - which exception is the answer being checked
        return type(exc).__name__


def raised(action: Callable[[], Any]) -> str | None:
    """The name of the exception ``action()`` raised, or None when it returned."""
    try:
        action()
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__
    return None

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


def tensor(t: Any, decimals: int = 6) -> dict:
    """A tensor as plain data the grader can compare and show readably: shape, dtype, device and
    its values (flattened, rounded). Two of them that differ are reported as the largest difference
    and the first mismatching index (see :mod:`autograder.display`), not as two long lists.
    Use ``atol=`` on the check for float tensors."""
    flat = t.detach().reshape(-1)
    values = [round(float(x), decimals) for x in flat.tolist()] if flat.is_floating_point() else \
        [int(x) for x in flat.tolist()]
    return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "device": t.device.type,
            "values": values}


def record(**fields: Any) -> dict:
    """A result with labelled fields (shown as ``name=value``), instead of a bare tuple."""
    return dict(fields)

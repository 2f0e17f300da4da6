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
    and the first mismatching index (see :mod:`autograder.grading.display`), not as two long lists.
    Use ``atol=`` on the check for float tensors."""
    flat = t.detach().reshape(-1)
    values = [round(float(x), decimals) for x in flat.tolist()] if flat.is_floating_point() else \
        [int(x) for x in flat.tolist()]
    return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "device": t.device.type,
            "values": values}


def record(**fields: Any) -> dict:
    """A result with labelled fields (shown as ``name=value``), instead of a bare tuple."""
    return dict(fields)


# CPU time of the grading child, not wall time: children share two cores with everything else. The
# clock is bound here, when a spec module imports this one, before any learner code runs (learner code
# may replace time.process_time afterwards).
_cpu_clock = __import__("time").process_time


def within_budget(op: Callable[[int], Any], n_ops: int, budget_s: float, batch: int = 50) -> bool:
    """Run ``op(i)`` for ``i`` in ``range(n_ops)``; False as soon as ``budget_s`` of CPU time is spent.

    For cost checks: choose ``n_ops`` so that the reference needs a small fraction of the budget (a
    loaded machine cannot fail it) and an implementation of the wrong order needs many budgets (a fast
    machine cannot pass it); ``batch`` keeps one batch of the slow variant well under a second, so the
    probe stops early and answers "too slow" inside the grader's time limit.
    """
    t0 = _cpu_clock()
    for start in range(0, n_ops, batch):
        for i in range(start, min(start + batch, n_ops)):
            op(i)
        if _cpu_clock() - t0 > budget_s:
            return False
    return True


def plain(x: Any) -> Any:
    """``x`` with numpy's scalar numbers turned into Python's (``numpy.float64`` -> ``float``, ``numpy.int64``
    -> ``int``, ``numpy.bool_`` -> ``bool``), inside dicts, lists and tuples too.

    For TODOs whose contract asks for numbers: ``np.percentile`` or ``np.mean`` answer with numpy scalars,
    which are numbers all the same. Any other type is left as it is (and compared as that type).
    """
    t = type(x)
    if t is dict:
        return {k: plain(v) for k, v in x.items()}
    if t is list or t is tuple:
        return t(plain(v) for v in x)
    if t.__module__ == "numpy":
        kind = getattr(getattr(x, "dtype", None), "kind", "")
        if getattr(x, "ndim", None) == 0 and kind in "biuf" and kind:
            return bool(x) if kind == "b" else int(x) if kind in "iu" else float(x)
    return x

"""Interleaved rounds: the one way the benchmarks compare contenders on a noisy, shared machine.

Each round runs every contender once, in a rotating order, so a burst of load from elsewhere hits
all of them alike; a ratio is computed *per round* (contender time / baseline time of the same
round), and the minimum and median of those ratios are reported. Single-threaded Python work is
timed in CPU time of this process (a neighbour's load does not inflate it); work that runs on
several threads or on a device (torch) is timed on the wall clock.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Clock = Literal["cpu", "wall"]
_CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


@dataclass
class Rounds:
    """Seconds per round for each contender, in insertion order, and the baseline's name.

    Invariant: every contender has the same number of rounds as the baseline.
    """

    baseline: str
    seconds: dict[str, list[float]] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)  # the last value each contender returned

    def ratios(self, name: str) -> list[float]:
        """Per-round ``time(name) / time(baseline)``: below 1 means faster than the baseline."""
        return [t / b for t, b in zip(self.seconds[name], self.seconds[self.baseline], strict=True)]

    def speedups(self, name: str) -> list[float]:
        """Per-round ``time(baseline) / time(name)``: above 1 means faster than the baseline."""
        return [b / t for t, b in zip(self.seconds[name], self.seconds[self.baseline], strict=True)]

    def median_seconds(self, name: str) -> float:
        return statistics.median(self.seconds[name])

def interleaved(contenders: dict[str, Callable[[], Any]], *, baseline: str, rounds: int = 5,
                clock: Clock = "cpu", warmup: bool = True,
                before_each: Callable[[str], None] | None = None) -> Rounds:
    """Run every contender once per round, rotating the order; return the times of every round.

    ``before_each(name)`` runs untimed before each call (e.g. to reset a pool). With ``warmup``,
    each contender runs once untimed first (imports, caches, allocator).
    """
    if baseline not in contenders:
        raise ValueError(f"baseline {baseline!r} is not one of the contenders {list(contenders)}")
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    now = _CLOCKS[clock]
    names = list(contenders)
    out = Rounds(baseline, {n: [] for n in names})
    if warmup:
        for n in names:
            if before_each:
                before_each(n)
            contenders[n]()
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for n in order:
            if before_each:
                before_each(n)
            start = now()
            out.results[n] = contenders[n]()
            out.seconds[n].append(now() - start)
    return out


def summary(values: list[float]) -> str:
    """``min X · median Y`` of a list of ratios, for one line of a benchmark table."""
    return f"min {min(values):.2f} · median {statistics.median(values):.2f}"

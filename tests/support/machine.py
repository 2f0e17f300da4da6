"""How much slower than a quiet machine this one is now: one factor for every deadline a test waits on.

A test that waits for something (a child, a thread, a server) gives up after a deadline; a deadline
fixed in seconds holds on a quiet machine and fails on a busy one (a class's shared lab machine, a CI
runner beside other jobs). Such deadlines are multiplied by :func:`machine_factor`, measured once per
test session: the test session's controller measures it when pytest configures (tests/conftest.py) and
hands it to its workers and to the scripts they start through :data:`ENV`; a process without it
measures for itself, once. ``PCW_MACHINE_FACTOR=<number>`` in the environment sets it by hand.

Invariant: the factor is at least 1 and at most :data:`MAX_FACTOR`; it only lengthens deadlines.
"""
from __future__ import annotations

import functools
import os
import time

ENV = "PCW_MACHINE_FACTOR"
MAX_FACTOR = 20.0
# CPU-seconds the calibration loop takes on the quiet 2-core machine the suite's deadlines were set on
# (a slower core takes proportionally longer; a faster one is not given less than the deadline).
CALIBRATION_CPU_S = 0.05
_LOOPS = 400_000


def _calibration() -> tuple[float, float]:
    """(CPU seconds, wall seconds) that a fixed pure-Python loop takes here, now."""
    wall, cpu = time.perf_counter(), time.process_time()
    total = 0
    for i in range(_LOOPS):
        total += i % 7
    return time.process_time() - cpu, time.perf_counter() - wall


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def measure() -> float:
    """The factor, measured now: how much slower one core computes than the reference (the loop's CPU
    time), times how much longer the clock runs than the CPU time a process gets (the loop's wall over
    CPU time, or the 1-minute load average over the cores, whichever says busier)."""
    cpu_s, wall_s = _calibration()
    speed = max(1.0, cpu_s / CALIBRATION_CPU_S)
    try:
        load = os.getloadavg()[0] / _cores()
    except (AttributeError, OSError):
        load = 1.0
    share = max(1.0, wall_s / max(cpu_s, 1e-6), load)
    return min(MAX_FACTOR, speed * share)


@functools.lru_cache(maxsize=1)
def machine_factor() -> float:
    """The session's factor: :data:`ENV` when set (by the controller or by hand), else measured once."""
    given = os.environ.get(ENV)
    if given:
        return min(MAX_FACTOR, max(1.0, float(given)))
    return measure()


def scaled(seconds: float) -> float:
    """A deadline set on a quiet machine, scaled to this one (never shorter)."""
    return seconds * machine_factor()

"""How busy this machine is: the cores this process may use, and how much longer than on an idle machine
CPU-bound work takes now. The grader stretches its wall-clock waits with it (a child's limit, the isolation
probe's set-up), so that a busy host makes grading slower, never a different verdict.

Invariant: :func:`contention` is at least 1 and at most :data:`MAX_STRETCH`; it only lengthens a wait.
"""
from __future__ import annotations

import math
import os

MAX_STRETCH = 6.0  # the most a busy machine stretches a wall-clock wait (see contention())


def available_cores(cgroup_root: str = "/sys/fs/cgroup", proc_self: str = "/proc/self") -> int:
    """How many cores this process may keep busy: its CPU affinity, bounded by any CPU quota of its
    cgroup or the cgroups above it (a container's ``--cpus``, a CI runner's share), which
    ``os.cpu_count()`` ignores: a grader in a 2-CPU container on a 64-core host runs 2 children."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cpu_quota(cgroup_root, proc_self)
    if quota is not None:
        n = min(n, max(1, math.ceil(quota - 1e-9)))
    return max(1, n)


def contention() -> float:
    """How many times longer than on an idle machine a CPU-bound child may take now: the 1-minute load
    average over the cores this process may use (:func:`available_cores`), at
    least 1 and at most :data:`MAX_STRETCH`. A child's CPU-time limit ends an endless loop whatever the
    load; its wall-clock limit, three times the CPU limit, only has to outlast code that computes while
    waiting its turn for a core (at a load of 14 on 2 cores a child gets a seventh of one). Read when the
    wall-clock limit runs out, so that an idle machine stops a sleeping child exactly on time."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average here (Windows): the limit as it is
        return 1.0
    return min(MAX_STRETCH, max(1.0, load / available_cores()))


def stretched(seconds: float) -> float:
    """A wall-clock wait set for an idle machine, stretched by the :func:`contention` now (never shorter)."""
    return seconds * contention()


def _cpu_quota(root: str, proc_self: str) -> float | None:
    """The tightest CPU quota (in cores) on this process's cgroup path, cgroup v2 or v1; None if none."""
    try:
        with open(os.path.join(proc_self, "cgroup"), encoding="utf-8") as f:
            lines = [ln.rstrip("\n").split(":", 2) for ln in f if ln.count(":") >= 2]
    except OSError:
        return None
    found: list[float] = []
    files: tuple[str, ...]
    for _id, controllers, path in lines:
        if controllers == "":  # v2: cpu.max is "max PERIOD" or "QUOTA PERIOD" at every level
            base, files = root, ("cpu.max",)
        elif "cpu" in controllers.split(","):  # v1: the cpu controller's own hierarchy
            base, files = os.path.join(root, controllers), ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            d = os.path.join(base, *parts[:depth])
            words = [w for f in files for w in _read_words(os.path.join(d, f))]
            if len(words) == 2 and words[0] not in ("max", "-1"):
                try:
                    quota, period = int(words[0]), int(words[1])
                except ValueError:
                    continue
                if quota > 0 and period > 0:
                    found.append(quota / period)
    return min(found) if found else None


def _read_words(path: str) -> list[str]:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().split()
    except (OSError, UnicodeDecodeError):
        return []

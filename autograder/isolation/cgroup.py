"""A memory budget for a grading child's whole process tree: one memory cgroup per child.

A per-process limit (``RLIMIT_AS``) lets a child that forks hold its limit once per process. Where the
kernel lets the grader create cgroups (cgroup v2 with the memory controller delegated to the grader's
own cgroup, or the v1 memory hierarchy as root), each child gets a cgroup of its own whose limit
covers every process it starts, swap included. The child joins it itself, first thing, through a
descriptor of its ``cgroup.procs`` that the grader opened (:mod:`autograder.isolation.confine`), so everything
it starts afterwards is charged there; the grader removes the cgroup once the child is gone.

Where no cgroup can be made, :func:`available` says why, and the launcher keeps the tree to one
process instead (seccomp refuses ``fork``; threads share the one address space ``RLIMIT_AS`` bounds).

Invariants: a :class:`ChildCgroup` lies below the grader's own cgroup and holds at most one child's
processes; after :meth:`ChildCgroup.remove` it is gone (its processes killed first).
"""
from __future__ import annotations

import atexit
import functools
import os
import secrets
import signal
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Hierarchy:
    """Where child cgroups are made: ``parent`` (a directory of cgroupfs), and the ``version`` (1 or 2)."""

    version: int
    parent: str


def _own_cgroups() -> dict[str, str]:
    """Controller list (``""`` for v2) -> this process's cgroup path, from ``/proc/self/cgroup``."""
    out = {}
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            _id, controllers, path = line.rstrip("\n").split(":", 2)
            out[controllers] = path
    return out


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root inside the hierarchy, fs type, super options) of every cgroup mount."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(rfields) >= 3 and rfields[0] in ("cgroup", "cgroup2"):
                out.append((fields[4], fields[3], rfields[0], set(rfields[2].split(","))))
    return out


def _under(mount: str, root: str, path: str) -> str | None:
    rel = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
    if rel.startswith(".."):
        return None  # our cgroup is outside what this mount shows (a cgroup namespace)
    return os.path.normpath(os.path.join(mount, rel))


@functools.lru_cache(maxsize=1)
def available() -> tuple[Hierarchy | None, str | None]:
    """The hierarchy child cgroups go into, or None and why there is none (probed once per process)."""
    if not os.path.exists("/proc/self/cgroup"):
        return None, "no cgroups on this system"
    try:
        own, mounts = _own_cgroups(), _mounts()
    except OSError as exc:
        return None, f"cannot read this process's cgroups: {exc}"
    problems: list[str] = []
    for mount, root, fstype, _opts in mounts:
        if fstype == "cgroup2" and "" in own:
            where = _under(mount, root, own[""])
            if where and _try_hierarchy(Hierarchy(2, where), problems):
                return Hierarchy(2, where), None
    for mount, root, fstype, opts in mounts:
        if fstype == "cgroup" and "memory" in opts:
            path = next((p for c, p in own.items() if "memory" in c.split(",")), None)
            where = _under(mount, root, path) if path else None
            if where and _try_hierarchy(Hierarchy(1, where), problems):
                return Hierarchy(1, where), None
    return None, "; ".join(problems) or "no memory cgroup hierarchy is mounted"


def _try_hierarchy(h: Hierarchy, problems: list[str]) -> bool:
    """Make, limit and remove one probe cgroup there."""
    try:
        probe = ChildCgroup.create(h, 64 * 2**20, prefix="pcw-probe-")
    except OSError as exc:
        problems.append(f"cgroup v{h.version} at {h.parent}: {exc.strerror or exc}")
        return False
    probe.remove()
    return True


@dataclass
class ChildCgroup:
    """One child's memory cgroup; ``procs_fd`` is its ``cgroup.procs``, open for writing, for the child."""

    hierarchy: Hierarchy
    path: str
    procs_fd: int
    limit_bytes: int

    @classmethod
    def create(cls, h: Hierarchy, limit_bytes: int, prefix: str = "pcw-child-") -> ChildCgroup:
        if h.version == 2:
            _enable_memory_controller(h.parent)
        path = os.path.join(h.parent, f"{prefix}{os.getpid()}-{secrets.token_hex(4)}")
        os.mkdir(path)
        try:
            if h.version == 2:
                _write(path, "memory.max", str(limit_bytes))
                _write(path, "memory.swap.max", "0", missing_ok=True)
                _write(path, "memory.oom.group", "1", missing_ok=True)  # one OOM ends the whole tree
            else:
                _write(path, "memory.limit_in_bytes", str(limit_bytes))
                _write(path, "memory.memsw.limit_in_bytes", str(limit_bytes), missing_ok=True)
            fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
        except BaseException:
            os.rmdir(path)
            raise
        return cls(h, path, fd, limit_bytes)

    def close_fd(self) -> None:
        """The grader's copy of the descriptor, once the child holds its own."""
        if self.procs_fd >= 0:
            os.close(self.procs_fd)
            self.procs_fd = -1

    def pids(self) -> list[int]:
        try:
            with open(os.path.join(self.path, "cgroup.procs"), encoding="ascii") as f:
                return [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            return []

    def peak_bytes(self) -> int | None:
        """The most memory the tree held at once (None where the kernel does not keep it)."""
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            try:
                with open(os.path.join(self.path, name), encoding="ascii") as f:
                    return int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
        return None

    def remove(self, wait_s: float = 30.0) -> None:
        """Kill whatever is still in it, then remove it (the kernel refuses while a process remains:
        a large tree on a busy machine takes seconds to die). Still busy after ``wait_s``: tried again
        when the grader exits."""
        self.close_fd()
        deadline = time.monotonic() + wait_s
        while True:
            for pid in self.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    _at_exit(self)
                    return
                time.sleep(0.02)


_leftover: list = []  # cgroups still busy when removed, retried at exit


def _at_exit(group: ChildCgroup) -> None:
    if not _leftover:
        atexit.register(_remove_leftover)
    _leftover.append(group)


def _remove_leftover() -> None:
    groups, _leftover[:] = list(_leftover), [object()]  # a placeholder: a second failure registers nothing
    for g in groups:
        if os.path.isdir(g.path):
            g.remove(wait_s=10.0)


def _write(path: str, name: str, value: str, missing_ok: bool = False) -> None:
    try:
        with open(os.path.join(path, name), "w", encoding="ascii") as f:
            f.write(value)
    except FileNotFoundError:
        if not missing_ok:
            raise


def _enable_memory_controller(parent: str) -> None:
    with open(os.path.join(parent, "cgroup.subtree_control"), encoding="ascii") as f:
        if "memory" in f.read().split():
            return
    _write(parent, "cgroup.subtree_control", "+memory")  # EBUSY where processes live in the parent itself

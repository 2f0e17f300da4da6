"""Launching one confined learner child: the command line, its policy, how to end it.

:func:`plan_child` turns a :class:`ChildSpec` and an :class:`autograder.isolation.levels.Isolation` into a
:class:`LaunchPlan`: bubblewrap's arguments (namespaces), and the policy the child applies to itself
first (:mod:`autograder.isolation.confine`: user, Landlock, seccomp). No ``preexec_fn``: the grader is threaded.

Invariant: a plan only ever exposes the paths its spec names plus the interpreter's own and the
system libraries, and refuses (``IsolationError``) a spec whose readable paths would contain one of
its ``hidden`` paths.
"""
from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.isolation.childfs import (
    DEVICES,
    ETC_FILES,
    SYSTEM_DIRS,
    HiddenPaths,
    IsolationError,
    _others_can_read,
    _outermost,
    _within,
    canonical_python,
    child_user,
    interpreter_paths,
    system_paths,
)

if TYPE_CHECKING:
    from autograder.isolation.levels import Isolation

BOOT = "import sys; sys.path[0:0] = [{root!r}]; from autograder.isolation.confine import main; main()"


@functools.lru_cache(maxsize=2)
def seccomp_program(single_process: bool = False) -> tuple[bytes | None, str | None]:
    """The compiled seccomp filter, or None and why not (compiled once per process and variant)."""
    from autograder.isolation import seccomp_filter

    try:
        return seccomp_filter.compile_filter(single_process), None
    except Exception as exc:  # noqa: BLE001 - any failure: the layer is missing, the reason is reported
        return None, f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class ChildSpec:
    """One child to launch.

    ``python``: the interpreter (a venv's ``bin/python`` is fine); ``entry``: ``module:function``
    run once confined, importable from ``import_root`` (a staging dir the grader prepared, see
    :func:`stage_tree`; it must contain ``autograder/isolation/confine.py`` and its two helpers); ``scratch``:
    the only writable place (see :func:`make_scratch`); ``readable``: further read-only paths;
    ``pass_fds``: descriptors the child keeps (e.g. the write end of its result pipe); ``env``: the
    child's whole environment; ``rlimits``: ``{"RLIMIT_NOFILE": (soft, hard)}`` set before the entry
    runs; ``hidden``: paths the child must not see, checked against everything it could read;
    ``uid``: the unprivileged user a root grader runs it as (default ``nobody``; a user of its own
    keeps its process count and files apart from every other child's); ``memory_mb``: the budget of
    the child's whole process tree: with ``cgroup_fd`` (the ``cgroup.procs`` of a cgroup limited to it,
    see :mod:`autograder.isolation.cgroup`) the child joins that cgroup first; without one it may start no
    process (seccomp) and ``RLIMIT_AS`` bounds its one address space; ``scratch_mb``: under namespaces,
    the scratch dir is a tmpfs of that size private to the child (gone with its mount namespace; bwrap 0.9+)
    instead of the host dir ``scratch``.
    """

    python: str
    entry: str
    import_root: str
    scratch: str
    readable: Sequence[str] = ()
    pass_fds: Sequence[int] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    rlimits: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    hidden: Sequence[str] = ()
    uid: int | None = None
    memory_mb: int | None = None
    cgroup_fd: int | None = None
    scratch_mb: int | None = None


@dataclass(frozen=True)
class LaunchPlan:
    """What to execute: ``subprocess.Popen(**plan.popen_kwargs(), stdin=..., stdout=...)``.

    No ``preexec_fn`` (unsafe in a threaded grader): everything happens in bubblewrap or in the
    child's own first step (:mod:`autograder.isolation.confine`).
    """

    argv: list[str]
    pass_fds: tuple[int, ...]
    env: dict[str, str]
    cwd: str
    isolation: Isolation
    readable: tuple[str, ...]

    def popen_kwargs(self) -> dict:
        return {"args": self.argv, "pass_fds": self.pass_fds, "env": self.env, "cwd": self.cwd,
                "close_fds": True, "start_new_session": True}

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        """End the child and everything it started: SIGKILL to its process group, then reap it.

        Under namespaces the group is bubblewrap's, whose death takes the whole pid namespace with it;
        without, seccomp keeps every descendant in the group (no setsid/setpgid).
        """
        kill_tree = getattr(proc, "kill_tree", None)  # a fork server's child: its server ends it
        if kill_tree is not None:
            kill_tree()
        else:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def returncode(self, rc: int | None) -> int | None:
        """The child's status as ``Popen.returncode`` would give it unwrapped: negative for a signal.

        bubblewrap exits with 128+N when the command died of signal N (a learner's ``sys.exit(137)``
        reads the same; either way the TODO fails, only the message differs).
        """
        if rc is not None and "namespaces" in self.isolation.layers and 128 < rc < 128 + 65:
            return -(rc - 128)
        return rc


def plan_child(spec: ChildSpec, iso: Isolation) -> LaunchPlan:
    """How to launch ``spec`` under ``iso``; raises ``IsolationError`` if it would expose a hidden path."""
    conf = confinement(spec, iso)
    command = [conf.python, "-I", "-c", BOOT.format(root=os.path.realpath(spec.import_root)), json.dumps(conf.policy)]
    argv = _bwrap_argv(iso, conf.user, conf.readable, conf.scratch, conf.masked, spec.scratch_mb) + command \
        if "namespaces" in iso.layers else command
    fds = (*spec.pass_fds, *([spec.cgroup_fd] if spec.cgroup_fd is not None else []))
    return LaunchPlan(argv, fds, dict(spec.env), conf.scratch, iso, conf.readable)


@dataclass(frozen=True)
class Confinement:
    """What one child may see and the policy it applies to itself (:mod:`autograder.isolation.confine`).

    Invariant: ``readable`` holds none of the spec's hidden paths (those inside it are in ``masked``,
    each covered in the child's view); ``policy`` is JSON-serialisable.
    """

    python: str
    scratch: str
    readable: tuple[str, ...]
    masked: tuple[str, ...]
    user: tuple[int, int] | str | None
    policy: dict


def nproc_limit(memory_mb: int | None) -> int:
    """The most processes (threads included) a child's own user may have: 512, and fewer where the memory
    budget is small, so that a fork bomb runs out of processes long before it fills the child's cgroup.
    A sleeping fork of a grading child holds about 1 MB (page tables, a kernel stack, the pages the forking
    loop dirties: 450-500 MB for 512 forks, measured on stage 1): half the budget at most. A learner's code may
    not fork at all; the limit also bounds threads, which numpy's and torch's pools start (one per core)."""
    return 512 if not memory_mb else max(64, min(512, memory_mb // 2))


def confinement(spec: ChildSpec, iso: Isolation) -> Confinement:
    """The checked view and policy of ``spec`` under ``iso``: what :func:`plan_child` launches, and what a
    fork server (:mod:`autograder.isolation.forkserver`) applies to a process it forks."""
    if not iso.layers:
        raise IsolationError("in-process isolation launches no confined child; run the child directly")
    python = canonical_python(spec.python)
    scratch = os.path.realpath(spec.scratch)
    system = system_paths()
    readable = _outermost([*interpreter_paths(python), os.path.realpath(spec.import_root),
                           *(os.path.realpath(p) for p in spec.readable)])
    masked = []
    hidden = HiddenPaths.of(spec.hidden)  # a run's, resolved once: a child costs the same whatever the class
    for p in (*readable, scratch, *system):
        for h in hidden.inside(p):
            if "namespaces" in iso.layers and p in readable and h != p:
                # e.g. the course pip-installed into the venv the child runs: its answers lie inside
                # the child's site-packages; an empty mount over them hides them in the child's view
                if os.path.lexists(h):  # nothing to hide where nothing is
                    masked.append(h)
            else:
                raise IsolationError(f"the child could read {p}, which is or holds {h}, a path it must not see")
        held = hidden.holding(p)
        if held is not None:
            raise IsolationError(f"the child could read {p}, which is or holds {held}, a path it must not see")
    masked = list(_outermost(masked))  # a hidden folder's mount covers the hidden paths inside it
    user = child_user(iso, spec.uid)
    if isinstance(user, tuple):
        ancestors = "namespaces" not in iso.layers
        unreadable = [p for p in readable if not _others_can_read(p, ancestors=ancestors)]
        if unreadable:
            raise IsolationError(f"uid {user[0]} cannot read {unreadable}: stage them with stage_tree()")
    if "namespaces" in iso.layers:
        parent = 1  # bubblewrap's init in the new pid namespace
    else:
        parent = os.getpid()
    policy: dict[str, object] = {
        "entry": spec.entry,
        "cwd": scratch,
        "user": list(user) if isinstance(user, tuple) else user,
        "must_be_unprivileged": os.geteuid() == 0,
        "parent": parent,
        "rlimits": {"RLIMIT_CORE": (0, 0), **({"RLIMIT_NPROC": (nproc_limit(spec.memory_mb),) * 2} if isinstance(user, tuple) else {}),
                    **({"RLIMIT_AS": (spec.memory_mb * 2**20,) * 2} if spec.memory_mb else {}), **dict(spec.rlimits)},
    }
    single_process = bool(spec.memory_mb) and spec.cgroup_fd is None
    if spec.cgroup_fd is not None:
        policy["cgroup_fd"] = spec.cgroup_fd
    if "landlock" in iso.layers:
        etc = [p for p in ETC_FILES if os.path.exists(p)]
        policy["landlock"] = {
            # /proc: the child's own under namespaces; without, only the CPU description (torch asks)
            "read": [*system, *readable, *etc, *(["/proc"] if "namespaces" in iso.layers else ["/proc/cpuinfo"])],
            "write": [scratch], "files": {d: m for d, m in DEVICES.items() if os.path.exists(d)},
            "min_abi": iso.offer.landlock_abi}
    if "seccomp" in iso.layers:
        prog = seccomp_program(single_process)[0]
        if prog is None:
            raise IsolationError("seccomp was selected but its filter cannot be compiled here")
        policy["seccomp"] = prog.hex()
    return Confinement(python, scratch, tuple(readable), tuple(masked), user, policy)


def _bwrap_argv(iso: Isolation, user, readable: Sequence[str], scratch: str | None, masked: Sequence[str] = (),
                scratch_mb: int | None = None, caps: Sequence[str] = ()) -> list[str]:
    """bubblewrap's arguments for one child (``scratch``: its writable dir), or for a fork server
    (``scratch`` None: the server makes each child's scratch dir in that child's own mount namespace;
    ``caps``: what the server keeps to do so, see :mod:`autograder.isolation.forkserver`)."""
    bwrap = iso.offer.bwrap
    if bwrap is None:
        raise IsolationError("namespaces were selected but no bwrap binary is known")
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grading"]
    if os.geteuid() == 0:
        # bwrap run by root makes no user namespace (so the child can become a real unprivileged uid);
        # it keeps only what the child needs to switch to it, and the switch clears those too.
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETPCAP"]  # to empty the bounding set
        if isinstance(user, tuple):
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        for cap in caps:
            argv += ["--cap-add", cap]
    else:
        argv += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    mounted = [d for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    # bwrap creates missing parents of a mount point 0700, which an unprivileged child cannot
    # cross: create them first, world-traversable (they hold nothing but the mount points).
    parents = {str(a) for p in [*mounted, *ETC_FILES, *readable, *([scratch] if scratch else [])]
               for a in Path(p).parents}
    for d in sorted(parents - {"/"}, key=lambda a: a.count("/")):
        if not any(_within(d, m) for m in [*mounted, *readable]):
            argv += ["--perms", "0755", "--dir", d]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            argv += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            argv += ["--ro-bind", d, d]
    for f in ETC_FILES:
        argv += ["--ro-bind-try", f, f]
    for p in readable:
        argv += ["--ro-bind", p, p]
    for p in masked:  # after the binds that hold them
        argv += ["--tmpfs", p] if os.path.isdir(p) else ["--ro-bind", "/dev/null", p]
    if scratch is None:
        pass
    elif scratch_mb and _version(iso.offer.bwrap_version) >= (0, 9):  # --size came with bubblewrap 0.9
        # the child's own tmpfs, size-bounded by the kernel and gone with its mount namespace: nothing it
        # writes there reaches the grader's disk or needs cleaning up (only the child's tree lives here)
        argv += ["--size", str(scratch_mb * 2**20), "--perms", "0777", "--tmpfs", scratch]
    else:
        argv += ["--bind", scratch, scratch]
    argv += ["--proc", "/proc", "--dev", "/dev", "--"]
    return argv


def _version(text: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in (text or "").split(".")[:2])
    except ValueError:
        return ()


def signal_name(rc: int | None) -> str | None:
    """``SIGKILL`` for a returncode of -9 (as :meth:`LaunchPlan.returncode` gives), ``signal 77`` for
    a number no signal has, None for a normal exit (the one place a signal gets its name)."""
    if rc is None or rc >= 0:
        return None
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"

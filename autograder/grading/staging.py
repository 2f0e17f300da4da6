"""One grading run's workspace: the isolation chosen once, the course files staged for children,
and a private scratch dir per child.

The grader's own checkout is never a child's import root: the runtime's Python files are copied once
per run into a world-readable staging dir (``solutions/`` never; the modules a child may see arrive
in its payload as text), and each child gets a fresh scratch dir below the run's base dir, the only
place it can write. :data:`GradingRun.hidden` lists what no child may ever see (the reference and
hidden checks, the tests, the repository's history, every submission, the nbgrader course dir):
each launch re-checks it against what the child can read (:func:`autograder.isolation.launch.plan_child`).

A TODO with twins (given code that already does it, :mod:`autograder.child.twins`) gets its own copy of
the staging dir in which those twins' definitions are replaced (:meth:`GradingRun.staging_for`).

Invariants: ``staging`` holds only :func:`autograder.core.layout.child_files`, at their shipped paths
(:func:`autograder.core.layout.shipped_as`: a stage's public checks where the child imports them); every scratch dir lies
below ``base``; after :meth:`GradingRun.close` nothing of the run is left on disk.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import secrets
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.child import twins
from autograder.core import layout
from autograder.core.spec import Todo
from autograder.grading import trusted_store
from autograder.isolation import forkclient
from autograder.isolation.childfs import HiddenPaths, IsolationError, child_user, compile_tree, make_scratch, stage_tree
from autograder.isolation.forkclient import ForkServer
from autograder.isolation.levels import Isolation

CHILD_ENTRY = "autograder.child.sandbox:main"  # what every grading child runs, once confined
#: What every grading child imports before the learner's first cell, whatever its stage: the harness
#: (:func:`autograder.child.sandbox.main`'s own imports) and what the setup cells import (the learner API).
#: Its fork server imports them once, so that a forked child starts with them: importing them in each
#: child was most of a child's CPU (about 20 ms of 28 before any learner code, measured on stage 1).
#: Generic code only: a stage's checks, a reference and a submission stay out of the server, and so does
#: what only some stages import (each module in the server is in every child's memory, in each process a
#: child forks too: with stage 7's kernels.calibration here, a stage-1 fork bomb filled its cgroup first).
#: ``tests/engine/test_forkserver.py`` fails when a child has to import any other module of the course itself.
HARNESS = ("autograder.child.protocol", "autograder.child.hybrid", "autograder.child.probe", "autograder.child.twins",
           "autograder.core.spec", "autograder.checks.common", "autograder.grading.verdict", "autograder.i18n",
           "autograder.runtime", "autograder.learner.blame", "autograder.learner.demos", "autograder.learner.inline",
           "autograder.learner.learn", "autograder.learner.released", "autograder.learner.standing", "numbers")
#: The given code the children of a preload import with it (a torch stage's model and attention): warm in
#: that preload's server only, so that a server without torch never imports it.
HARNESS_WITH = {"torch": ("kernels.timing", "kernels.kv_pool", "kernels.model", "kernels.paged_attention", "kernels.prefill",
                          "kernels.calibration")}


def harness(preload: Iterable[str]) -> list[str]:
    """The modules the fork server of ``preload`` imports besides the preload: the entry's, :data:`HARNESS`,
    and the given code that comes with the preload (:data:`HARNESS_WITH`)."""
    return [CHILD_ENTRY.split(":")[0], *HARNESS, *(m for p in preload for m in HARNESS_WITH.get(p, ()))]


CHILDREN = "children"  # the folder below a run's base that holds every child's scratch dir
SCRATCH_MB = 64  # what a child may write (grading writes almost nothing); a tmpfs of this size
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MNT_DETACH = 2, 4, 8, 2
_libc = ctypes.CDLL(None, use_errno=True)
_cache_lock = threading.Lock()


def private_library_caches() -> None:
    """Give this grader process's own library caches a folder it removes when it exits.

    The grader computes reference outcomes in-process; importing ``torch._dynamo`` makes
    ``$TMPDIR/torchinductor_<user>`` and keeps it. Set once per process, before torch reads it (a
    value the caller set stays)."""
    with _cache_lock:
        if "TORCHINDUCTOR_CACHE_DIR" in os.environ:
            return
        folder = tempfile.mkdtemp(prefix="pcw-grader-cache-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "torchinductor")
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(folder, "triton"))
        atexit.register(remove_tree, folder)


def always_hidden() -> list[str]:
    """What a child must never see, whatever is graded: answers, hidden checks, tests, history, and
    the store of trusted material (expected outcomes of hidden checks; :mod:`autograder.grading.trusted_store`).
    The given modules too: a later stage's may do this stage's TODOs (the visible ones arrive as text)."""
    store = trusted_store.cache_dir()
    return [str(layout.SOLUTIONS), str(layout.WORKBOOK), str(layout.TESTS), str(layout.ROOT / ".git"), *([str(store)] if store else [])]


@dataclass
class GradingRun:
    """The workspace of one run (see the module docstring for its invariants)."""

    isolation: Isolation
    base: str
    staging: Path
    hidden: HiddenPaths
    _closed: bool = field(default=False, repr=False)
    _variants: dict[tuple[str, ...], Path] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _children: int = field(default=0, repr=False)
    _servers: dict[tuple[str, ...], ForkServer | None] = field(default_factory=dict, repr=False)
    _server_locks: dict[tuple[str, ...], threading.Lock] = field(default_factory=dict, repr=False)
    _server_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # far above any real account, and different for each run on the machine (two runs at once stay apart)
    _uid_base: int = field(default_factory=lambda: 0x40000000 + secrets.randbelow(1 << 14) * (1 << 16), repr=False)

    @classmethod
    def open(cls, iso: Isolation, hidden: Iterable[str | os.PathLike] = ()) -> GradingRun:
        # world-traversable: a child running as another user without namespaces must reach its scratch
        base = tempfile.mkdtemp(prefix="pcw-grading-")
        try:
            os.chmod(base, 0o755)
            os.mkdir(os.path.join(base, CHILDREN), 0o755)
            files = {name: p for p, name in layout.shipped_names(layout.child_files())}
            staging = stage_tree(Path(base) / "staging", files, cache=trusted_store.StoredBytecode())
        except BaseException:
            shutil.rmtree(base, ignore_errors=True)
            raise
        every = dict.fromkeys([*always_hidden(), *(os.path.abspath(h) for h in hidden)])
        return cls(iso, base, staging, HiddenPaths(every))

    @property
    def level(self) -> str:
        return self.isolation.level

    def staging_for(self, todo: Todo) -> Path:
        """The staging dir a child grading ``todo`` imports from: the run's own, or (for a TODO with
        twins) a copy whose twins' module files have the twins blocked at the source."""
        by_file = twins.by_module({t: self.staging / Path(*t.split(":")[0].split(".")).with_suffix(".py")
                                   for t in todo.twins})
        if not by_file:
            return self.staging
        key = tuple(sorted(todo.twins))
        with self._lock:
            if key not in self._variants:
                dest = Path(self.base) / f"staging-{len(self._variants) + 1}"
                shutil.copytree(self.staging, dest)
                for path, (module, quals) in by_file.items():
                    target = dest / path.relative_to(self.staging)
                    target.chmod(0o644)
                    target.write_text(twins.blocked_source(path.read_text(encoding="utf-8"), quals, todo.label, module),
                                      encoding="utf-8")
                compile_tree(dest, [dest / path.relative_to(self.staging) for path in by_file],
                             cache=trusted_store.StoredBytecode())
                self._variants[key] = dest
            return self._variants[key]

    def scratch(self) -> tuple[str, int | None]:
        """A new private scratch dir for one child, and the user it runs as when the grader is root: a
        uid of its own (no entry in ``/etc/passwd`` needed), so that no child shares its process count
        (a fork bomb cannot starve the others) or its files with another; None otherwise."""
        with self._lock:
            self._children += 1
            uid: int | None = self._uid_base + self._children
        uid = uid if isinstance(child_user(self.isolation, uid), tuple) else None
        path = make_scratch(self.isolation, self.scratch_root, prefix="child-", uid=uid)
        if "namespaces" not in self.isolation.layers:
            # under namespaces the launcher gives the child a tmpfs of this size in its own mount view
            _mount_tmpfs(path, SCRATCH_MB, uid)
        return path, uid

    @staticmethod
    def discard(scratch: str) -> None:
        """Remove a child's scratch dir once the child is gone (whatever modes it left inside)."""
        _unmount(scratch)
        remove_tree(scratch)

    @property
    def scratch_root(self) -> str:
        """The folder holding every child's scratch dir."""
        return os.path.join(self.base, CHILDREN)

    def fork_server(self, preload: Iterable[str], env: dict[str, str]) -> ForkServer | None:
        """The fork server whose children have ``preload`` imported already, and import from any staging
        dir of this run (started on first use, with ``env`` as its environment), or None where children
        are launched one by one (:func:`autograder.isolation.forkclient.usable`, or it would not start)."""
        if forkclient.usable(self.isolation) is not None:
            return None
        key = tuple(preload)
        with self._server_lock:
            lock = self._server_locks.setdefault(key, threading.Lock())
        with lock:  # one server per preload, started once even when threads ask at once; other kinds go on
            with self._server_lock:
                known, closed = key in self._servers, self._closed
            if not known and not closed:
                try:
                    server = forkclient.ForkServer(self.isolation, self.staging, key, self.scratch_root, env,
                                                   self.hidden, sys.executable, view=self.base,
                                                   entries=harness(key))
                except (IsolationError, OSError):
                    server = None  # children of this kind are launched one by one
                with self._server_lock:
                    if self._closed:  # closed while it started
                        if server is not None:
                            server.close()
                        return None
                    self._servers[key] = server
            with self._server_lock:
                server = self._servers.get(key)
        return server if server is not None and server.running else None

    def start_fork_servers(self, preloads: Iterable[Iterable[str]], env: dict[str, str]) -> None:
        """Start, in the background, the fork server of each preload that this run's children will use, so
        that they import while the grader prepares (a child that needs one before it is up waits for it)."""
        if forkclient.usable(self.isolation) is not None:
            return
        for key in dict.fromkeys(tuple(p) for p in preloads):
            threading.Thread(target=self.fork_server, args=(key, env), daemon=True, name="fork-server-start").start()

    def fork_server_pids(self) -> list[int]:
        """The process of each running fork server (its bubblewrap), as this process sees them."""
        with self._server_lock:
            return [s.pid for s in self._servers.values() if s is not None and s.running]  # type: ignore[misc]  # running: has a pid

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with self._server_lock:
                servers, self._servers = list(self._servers.values()), {}
            for server in servers:
                if server is not None:
                    server.close()
            remove_tree(self.base)

    def __enter__(self) -> GradingRun:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _mount_tmpfs(path: str, size_mb: int, uid: int | None) -> bool:
    """Without namespaces, a root grader bounds a scratch dir by mounting a tmpfs of ``size_mb`` on it
    (owned by the child's user); False where it may not mount (then only RLIMIT_FSIZE bounds each file)."""
    if os.geteuid() != 0:
        return False
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    opts = f"size={size_mb}m,nr_inodes=65536,mode=0700{owner}".encode()
    res = _libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts)
    return res == 0


def _unmount(path: str) -> None:
    if os.path.ismount(path):
        _libc.umount2(os.fsencode(path), _MNT_DETACH)


def remove_tree(path: str) -> None:
    """``rm -rf`` of whatever a child can build in its scratch dir; never raises.

    Iterative, one open directory at a time, by name relative to its parent's descriptor: a tree
    10,000 levels deep (deeper than Python's recursion limit, paths longer than ``PATH_MAX``), folders
    made unreadable or unwritable (mode 000), symlinks (removed, never followed) and special files.
    """
    try:
        if os.path.islink(path) or not os.path.isdir(path):
            os.unlink(path)
            return
        _owner_access(path)
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return
    names: list[str] = []  # the path from ``path`` down to ``fd``, by name
    while True:
        sub = _empty_but_one_dir(fd)
        if sub is not None:
            try:
                os.chmod(sub, 0o700, dir_fd=fd)  # a directory, not a link: checked by the scan
                child = os.open(sub, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                sub = None  # cannot enter: leave it, still try the rest
            else:
                os.close(fd)
                fd = child
                names.append(sub)
                continue
        if not names:
            os.close(fd)
            try:
                os.rmdir(path)
            except OSError:
                pass
            return
        try:
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return
        os.close(fd)
        fd = parent
        try:
            os.rmdir(names.pop(), dir_fd=fd)
        except OSError:
            return  # something in it could not be removed: stop rather than loop


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _empty_but_one_dir(fd: int) -> str | None:
    """Remove every non-directory in the directory ``fd``; the name of one subdirectory left, if any."""
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        return entry.name
                    os.unlink(entry.name, dir_fd=fd)
                except OSError:
                    continue
    except OSError:
        pass
    return None


def _owner_access(path: str) -> None:
    try:
        if not os.path.islink(path):
            os.chmod(path, 0o700)
    except OSError:
        pass

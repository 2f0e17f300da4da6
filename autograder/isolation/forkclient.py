"""The grader's side of a fork server (:mod:`autograder.isolation.forkserver`): start one, ask it for
children, learn how each ended, end it.

:func:`usable` says whether this machine and isolation level can have one: a root grader with all three
layers (so each child gets namespaces of its own, its own uid, Landlock and seccomp, as a launched one
does), a memory cgroup per child (whose removal ends whatever a child started) and ``pidfd_open``.
Elsewhere the grader launches each child with bubblewrap, as before; ``PCW_FORK_SERVER=0`` asks for that
everywhere.

Invariants: a :class:`ForkServer` serves one preload list and the import roots below its view; :meth:`ForkServer.spawn`
may be called from any thread; each :class:`ForkedChild` learns its exit status once; after
:meth:`ForkServer.close` none of its processes is left.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.isolation import cgroup, forkserver
from autograder.isolation.childfs import IsolationError, _within
from autograder.isolation.launch import ChildSpec, _bwrap_argv, confinement
from autograder.isolation.load import stretched

if TYPE_CHECKING:
    from autograder.isolation.levels import Isolation

BOOT = "import sys; sys.path[0:0] = [{root!r}]; from autograder.isolation.forkserver import serve; serve()"
SERVER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SYS_ADMIN")  # with CAP_SETPCAP, which every launch keeps
START_S = 120.0  # a server importing torch on a loaded machine
# What a server also imports along with a module of the preload, because the child would import it
# anyway, later: torch imports SymPy (through its symbolic shapes) on the first torch._check a check
# makes, about 0.7 CPU-s in each child; imported once in the server, it costs a child nothing.
WARM_WITH = {"torch": ("torch.fx.experimental.symbolic_shapes",)}


def usable(iso: Isolation) -> str | None:
    """None when children can be forked from a server under ``iso``; else why not (then they are launched)."""
    if os.environ.get("PCW_FORK_SERVER", "1") == "0":
        return "PCW_FORK_SERVER=0"
    if os.geteuid() != 0:
        return "the grader is not root (children cannot get a uid of their own from a server)"
    if set(iso.layers) != {"namespaces", "landlock", "seccomp"} or iso.offer.bwrap is None:
        return f"isolation level {iso.level} (a server needs all three layers)"
    if not hasattr(os, "pidfd_open"):
        return "no pidfd_open"
    if cgroup.available()[0] is None:
        return "no memory cgroup per child"
    return None


class ForkedChild:
    """One child of a fork server, as much of ``subprocess.Popen`` as the supervisor uses: ``stdin``
    (the write end of its stdin), ``poll``, ``wait``, ``returncode`` and :meth:`kill_tree`.

    Invariant: ``returncode`` is set at most once, when the server reports the child gone (None if
    the server itself ended first)."""

    def __init__(self, server: ForkServer, child_id: int, stdin) -> None:
        self.server, self.id, self.stdin = server, child_id, stdin
        self.pid = -child_id  # no pid in the grader's namespace; never signalled directly
        self.returncode: int | None = None
        self.error: str | None = None
        self._gone = threading.Event()

    def _finish(self, returncode: int | None, error: str | None = None) -> None:
        if not self._gone.is_set():
            self.returncode, self.error = returncode, error
            self._gone.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._gone.wait(timeout):
            raise subprocess.TimeoutExpired(f"forked child {self.id}", timeout)  # type: ignore[arg-type]  # not None: it timed out
        return self.returncode

    def kill_tree(self) -> None:
        """End the child's keeper, hence its pid namespace and every process in it."""
        if not self._gone.is_set():
            self.server.kill(self.id)


class ForkServer:
    """A running fork server (see the module docstring for its invariants)."""

    def __init__(self, iso: Isolation, staging: Path, preload: Sequence[str], scratch_root: str,
                 env: Mapping[str, str], hidden: Sequence[str], python: str, view: str | None = None,
                 entries: Sequence[str] = ()) -> None:
        """``staging``: the server's own import root; ``view``: a folder holding it and every other import
        root its children may have (a TODO's copy of the staging dir with its twins blocked), all of it
        visible to the server, read-only (each child's Landlock still lets it read its own only);
        ``entries``: the modules of its children's entries (imported once, in the server)."""
        self.iso, self.staging, self.preload = iso, str(staging), tuple(preload)
        self.scratch_root = os.path.realpath(scratch_root)
        conf = confinement(ChildSpec(python, "autograder.isolation.forkserver:serve", self.staging,
                                     os.path.join(self.scratch_root, "server"), readable=[view] if view else (),
                                     hidden=hidden), iso)
        self.readable = conf.readable
        argv = _bwrap_argv(iso, None, conf.readable, None, conf.masked, None, caps=SERVER_CAPS)
        if not any(_within(self.scratch_root, r) for r in conf.readable):
            argv[-1:] = ["--perms", "0755", "--dir", self.scratch_root, "--"]
        self._ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        warm = [*self.preload, *(m for p in self.preload for m in WARM_WITH.get(p, ()))]
        config = {"socket_fd": theirs.fileno(), "scratch_root": self.scratch_root, "preload": warm,
                  "staging": os.path.realpath(self.staging), "entries": list(entries)}
        self._argv = [*argv, conf.python, "-I", "-c", BOOT.format(root=os.path.realpath(self.staging)),
                      forkserver.json.dumps(config)]
        self._env, self._theirs = dict(env), theirs
        self._lock = threading.Lock()
        self._children: dict[int, ForkedChild] = {}
        self._next = 0
        self._ready = threading.Event()
        self._failed: str | None = None
        self._proc: subprocess.Popen | None = None
        self._log = os.path.join(os.path.dirname(self.scratch_root), f"fork-server-{id(self)}.log")
        # bubblewrap's --die-with-parent follows the thread that started it: a thread as long-lived as the server
        self._thread = threading.Thread(target=self._serve, daemon=True, name="fork-server")
        self._thread.start()
        if not self._ready.wait(START_S) or self._failed:
            why = self._failed or f"not ready within {START_S:.0f} s"
            self.close()
            raise IsolationError(f"the fork server did not start: {why}")

    def _serve(self) -> None:
        try:
            with open(self._log, "wb") as log:
                self._proc = subprocess.Popen(self._argv, pass_fds=(self._theirs.fileno(),), env=self._env,
                                              cwd="/", stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                              close_fds=True, start_new_session=True)
        except OSError as exc:
            self._failed = str(exc)
            self._ready.set()
            return
        finally:
            self._theirs.close()
        while True:
            try:
                record, fds = forkserver.receive(self._ours)
            except (OSError, ValueError, TypeError):
                record, fds = None, []
            for fd in fds:  # the server sends none
                os.close(fd)
            if isinstance(record, forkserver.Ready):
                self._ready.set()
            elif isinstance(record, forkserver.Exited):
                with self._lock:
                    child = self._children.pop(record.id, None)
                if child is not None:
                    child._finish(record.returncode, record.error)
            elif record is None:
                break
        if not self._ready.is_set():
            self._failed = self._last_words()
            self._ready.set()
        with self._lock:
            left, self._children = list(self._children.values()), {}
        for child in left:
            child._finish(None, "the fork server ended")
        self._proc.wait()

    def _last_words(self) -> str:
        try:
            with open(self._log, "rb") as f:
                lines = f.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
            return lines[-1] if lines else "it exited"
        except OSError:
            return "it exited"

    @property
    def pid(self) -> int | None:
        """The server's bubblewrap, in the grader's pid namespace (None before it started)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """Whether it still takes requests (a server that ended is not restarted: its run launches instead)."""
        return not self._failed and self._proc is not None and self._proc.poll() is None

    def spawn(self, policy: dict, readable: Sequence[str], import_root: str, scratch: str, scratch_mb: int,
              owner: int | None, env: Mapping[str, str], fds: Sequence[tuple[int, int]]) -> ForkedChild:
        """A child confined by ``policy`` (of :func:`autograder.isolation.launch.confinement`, whose view,
        ``readable``, must lie in this server's), importing from ``import_root``, descriptor ``src`` of the
        grader numbered ``num`` in it for each ``(src, num)`` in ``fds``; its stdin is a new pipe the
        returned child's ``stdin`` writes to."""
        root = os.path.realpath(import_root)
        if not all(any(_within(p, r) for r in self.readable) for p in [*readable, root]):
            raise IsolationError("a child's view is not within its fork server's")
        if os.path.dirname(os.path.realpath(scratch)) != self.scratch_root:
            raise IsolationError(f"{scratch} is not directly below the fork server's scratch root")
        stdin_r, stdin_w = os.pipe()
        stdin = os.fdopen(stdin_w, "wb")  # owns stdin_w from here
        try:
            with self._lock:
                if not self.running:
                    raise IsolationError("the fork server is not running")
                self._next += 1
                child = ForkedChild(self, self._next, stdin)
                request = forkserver.Spawn(child.id, [0, *(num for _, num in fds)], os.path.realpath(scratch),
                                           scratch_mb, owner, dict(env), policy, root)
                forkserver.send(self._ours, request, [stdin_r, *(src for src, _ in fds)])
                self._children[child.id] = child  # before the lock goes: its Exited waits for the lock
        except OSError as exc:
            stdin.close()
            raise IsolationError(f"the fork server took no request: {exc}") from exc
        except BaseException:
            stdin.close()
            raise
        finally:
            os.close(stdin_r)
        return child

    def kill(self, child_id: int) -> None:
        with self._lock:
            try:
                forkserver.send(self._ours, forkserver.Kill(child_id))
            except OSError:
                pass

    def close(self) -> None:
        """End the server and every child it still has (closing the socket ends the server; its
        keepers die with it, and each child's pid namespace with its keeper)."""
        try:
            self._ours.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._ours.close()
        if self._proc is not None:
            try:  # the server ends at once when idle; on a busy machine it waits its turn for a core
                self._proc.wait(timeout=stretched(10))
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
        self._thread.join(timeout=stretched(10))
        try:
            os.unlink(self._log)
        except OSError:
            pass


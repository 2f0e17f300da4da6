"""A fork server: grading children forked from one warm interpreter, each in namespaces of its own.

A grading child spends most of its CPU before any learner code runs: starting an interpreter and
importing the harness (and, for a torch stage, torch: seconds). The fork server is one interpreter,
started by bubblewrap like a child (the same read-only view: the interpreter, the system, one staging
dir), that imports what every child of one kind imports first (the harness and the stage's preload,
never a stage's checks, a reference or a submission) and then forks one child per request.

Each request makes three processes, so that each child is as apart from every other as a child that
bubblewrap launched on its own:

- the *keeper*, forked by the server: it makes new mount, pid, network, IPC and UTS namespaces, mounts
  an empty tmpfs over the scratch root (so no other child's scratch dir exists in its view), the
  child's own size-bounded tmpfs scratch dir below it and a terminal instance of its own on ``/dev/pts``,
  then forks the init and waits for it;
- the *init*, pid 1 of the new pid namespace: it mounts that namespace's own ``/proc`` (the server,
  the grader and every other child do not exist there), forks the child, reaps, and exits with the
  child's status (as bubblewrap does: 128+N for a signal N); when it exits, the kernel ends everything
  left in the namespace;
- the *child*, pid 2: its descriptors become the ones the grader passed for it (stdin, output, result
  pipe, the cgroup to join), its environment the grader's, and then :func:`autograder.isolation.confine.apply`
  runs the very policy a launched child would run (own cgroup, own uid with no capabilities, parent
  death signal, resource limits, Landlock, seccomp) before its entry, the grading harness.

The server and keepers hold ``CAP_SYS_ADMIN`` (to make namespaces and mounts), ``CAP_SETUID``,
``CAP_SETGID`` and ``CAP_SETPCAP`` inside bubblewrap's own namespaces, and run only this module; the child
drops all of them (``confine`` verifies it) before it reads its payload. The server forks only while it
has one thread (a fork copies just the caller, and a lock held by another thread would stay held), and
it and every keeper and init die with their parent.

Messages between grader and server are the typed records below, JSON over a ``SOCK_SEQPACKET`` socket,
the descriptors of a :class:`Spawn` alongside it (``SCM_RIGHTS``). The grader's side is
:mod:`autograder.isolation.forkclient`.

Invariants: the server never runs learner code and never reads a payload (those go to the child's
stdin); it forks only while single-threaded; a child's status reaches the grader once, as an
:class:`Exited`, after its keeper was reaped.
"""
from __future__ import annotations

import array
import ctypes
import fcntl
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 0x4000, 0x40000
_PR_SET_PDEATHSIG = 1
MAX_MESSAGE = 1 << 20
MAX_FDS = 8
FIRST_FREE_FD = 16  # a child's descriptors are numbered below this (0-2 standard, 3 results, 4 cgroup)
EXIT_NOT_STARTED = 121  # = confine.EXIT_NOT_CONFINED: the grader reports a grader error


@dataclass(frozen=True)
class Spawn:
    """Fork one child. ``fds`` names, for each descriptor sent alongside (in order), the number it gets
    in the child (``0`` stdin, ``1`` and ``2`` output, the result pipe's and the cgroup's numbers as the
    policy and payload name them); ``scratch`` is the child's scratch dir, directly below the server's
    scratch root; ``scratch_mb`` its size; ``owner`` the uid owning it; ``env`` the child's whole
    environment; ``policy`` what :func:`autograder.isolation.confine.apply` enforces; ``import_root`` the
    staging dir it imports from (another than the server's: its modules from there are dropped first)."""

    id: int
    fds: list[int]
    scratch: str
    scratch_mb: int
    owner: int | None
    env: dict[str, str]
    policy: dict
    import_root: str = ""
    op: str = "spawn"


@dataclass(frozen=True)
class Kill:
    """End child ``id`` and everything it started (its keeper, hence its pid namespace)."""

    id: int
    op: str = "kill"


@dataclass(frozen=True)
class Ready:
    """The server is warm: ``preloaded`` modules imported, single-threaded."""

    preloaded: list[str] = field(default_factory=list)
    op: str = "ready"


@dataclass(frozen=True)
class Exited:
    """Child ``id`` is gone: ``returncode`` as ``Popen`` gives it for a bubblewrap-launched child (its
    init's exit status, or minus the signal that ended the keeper); ``error`` when it could not be forked."""

    id: int
    returncode: int
    error: str | None = None
    op: str = "exited"


RECORDS = {"spawn": Spawn, "kill": Kill, "ready": Ready, "exited": Exited}


def encode(record) -> bytes:
    return json.dumps(asdict(record), separators=(",", ":")).encode()


def decode(data: bytes):
    """The record ``data`` holds; ValueError for anything else (wrong fields, unknown kind)."""
    obj = json.loads(data)
    if not isinstance(obj, dict) or obj.get("op") not in RECORDS:
        raise ValueError("not a fork-server record")
    return RECORDS[obj["op"]](**obj)


def send(sock: socket.socket, record, fds: Sequence[int] = ()) -> None:
    data = encode(record)
    if fds:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.send(data)


def receive(sock: socket.socket) -> tuple[object | None, list[int]]:
    """One record and the descriptors that came with it; (None, []) at the end of the stream."""
    data, ancdata, _flags, _addr = sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(MAX_FDS * 4))
    fds: list[int] = []
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            a = array.array("i")
            a.frombytes(payload[:len(payload) - len(payload) % a.itemsize])
            fds += list(a)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return decode(data), fds


# -- the server (runs inside bubblewrap) ---------------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)


def _check(res: int, what: str) -> None:
    if res != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(x: str | None) -> bytes | None:
        return None if x is None else x.encode()

    _check(_libc.mount(enc(source), target.encode(), enc(fstype), flags, enc(data)), f"mounting {target}")


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def serve() -> None:
    """The server's entry: ``python -I -c BOOT CONFIG_JSON`` (``socket_fd``; ``scratch_root``, the folder of every
    child's scratch dir; ``staging``, its own import root; ``entries``, the modules its children's entries are in;
    ``preload``, what they import first)."""
    config = json.loads(sys.argv.pop(1))
    sock = socket.socket(fileno=config["socket_fd"])
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "PR_SET_PDEATHSIG")
    from autograder.isolation import confine, landlock  # noqa: F401 - what every child runs first, warm

    for name in ["ctypes", *config["entries"], *config["preload"]]:  # the entry module(s) every child runs
        __import__(name)
    gc.collect()
    gc.freeze()  # what is here now is never collected: a child's collections touch (copy) none of it
    if _threads() != 1:
        raise SystemExit(f"fork server: {_threads()} threads after the preload; forking is not safe")
    send(sock, Ready(list(config["preload"])))
    keepers: dict[int, tuple[int, int]] = {}  # pidfd -> (child id, keeper pid)
    by_id: dict[int, int] = {}  # child id -> keeper pid
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, None)
    root = config["scratch_root"]
    while True:
        for key, _ in sel.select():
            if key.data is None:
                record, fds = receive(sock)
                if record is None:  # the grader is gone: so are its children
                    for pid in by_id.values():
                        os.kill(pid, signal.SIGKILL)
                    os._exit(0)
                if isinstance(record, Kill):
                    if record.id in by_id:
                        os.kill(by_id[record.id], signal.SIGKILL)
                    continue
                if not isinstance(record, Spawn):
                    continue
                try:
                    if _threads() != 1:
                        raise OSError(0, "the fork server is not single-threaded")
                    if os.path.dirname(record.scratch) != root or len(record.fds) != len(fds) or \
                            not all(0 <= n < FIRST_FREE_FD for n in record.fds):
                        raise OSError(0, "a request outside the server's scratch root, or descriptors missing")
                    sys.stdout.flush()
                    sys.stderr.flush()
                    pid = os.fork()
                except OSError as exc:
                    for fd in fds:
                        os.close(fd)
                    send(sock, Exited(record.id, EXIT_NOT_STARTED, f"could not fork: {exc}"))
                    continue
                if pid == 0:
                    _keeper(sock, sel, record, fds, root, config["staging"])  # never returns
                for fd in fds:
                    os.close(fd)
                pidfd = os.pidfd_open(pid)
                keepers[pidfd] = (record.id, pid)
                by_id[record.id] = pid
                sel.register(pidfd, selectors.EVENT_READ, pidfd)
            else:
                child_id, pid = keepers.pop(key.data)
                sel.unregister(key.data)
                os.close(key.data)
                by_id.pop(child_id, None)
                _, status = os.waitpid(pid, 0)
                rc = os.waitstatus_to_exitcode(status)
                send(sock, Exited(child_id, rc))


def _fail(fd: int, what: str, exc: BaseException) -> None:
    """A keeper's or init's last words, on the child's output pipe, then the grader-error exit."""
    try:
        os.write(fd, f"isolation: could not {what}: {type(exc).__name__}: {exc}\n".encode())
    finally:
        os._exit(EXIT_NOT_STARTED)


def _keeper(sock: socket.socket, sel: selectors.BaseSelector, req: Spawn, fds: list[int], root: str,
            staging: str) -> None:
    out = fds[req.fds.index(1)] if 1 in req.fds else 2
    try:
        sel.close()
        sock.close()
        _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "PR_SET_PDEATHSIG")
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing mounted here reaches the server's view
        _mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=64k,nr_inodes=16,mode=0755")
        os.mkdir(req.scratch, 0o700)
        owner = f",uid={req.owner},gid={req.owner},mode=0700" if req.owner is not None else ",mode=0777"
        _mount("tmpfs", req.scratch, "tmpfs", _MS_NOSUID | _MS_NODEV,
               f"size={req.scratch_mb}m,nr_inodes=65536{owner}")
        if os.path.isdir("/dev/pts"):  # the server's terminals are every child's: each gets its own instance
            _mount("devpts", "/dev/pts", "devpts", _MS_NOSUID | _MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
        _check(_libc.sethostname(b"grading", 7), "sethostname")
        pid = os.fork()
    except BaseException as exc:  # noqa: BLE001 - nothing of the child ran: a grader error
        _fail(out, "make the grading process's namespaces", exc)
    if pid == 0:
        _init(req, fds, out, staging)  # never returns
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    os._exit(_as_exit_status(status))


def _as_exit_status(status: int) -> int:
    """bubblewrap's convention: the exit code, or 128+N for a process ended by signal N."""
    rc = os.waitstatus_to_exitcode(status)
    return 128 - rc if rc < 0 else rc


def _init(req: Spawn, fds: list[int], out: int, staging: str) -> None:
    try:
        _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "PR_SET_PDEATHSIG")
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        pid = os.fork()
    except BaseException as exc:  # noqa: BLE001
        _fail(out, "start the grading process's pid namespace", exc)
    if pid == 0:
        _child(req, fds, staging)  # never returns
    for fd in fds:
        os.close(fd)
    while True:  # pid 1 reaps every orphan; the child's end is the namespace's end
        try:
            got, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(EXIT_NOT_STARTED)
        if got == pid:
            os._exit(_as_exit_status(status))


def _child(req: Spawn, fds: list[int], staging: str) -> None:
    try:
        # each descriptor to its number (through copies far above them, so no dup2 overwrites a source),
        # then every other descriptor closed: the server's socket, anything a sibling's request left
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, FIRST_FREE_FD) for fd in fds]
        for src, num in zip(high, req.fds, strict=True):
            os.dup2(src, num)
        previous = -1
        for fd in [*sorted(set(req.fds)), 1 << 20]:
            if fd > previous + 1:
                os.closerange(previous + 1, fd)
            previous = fd
        os.environ.clear()
        os.environ.update(req.env)
        if "numpy.random" in sys.modules:  # a fresh interpreter seeds it from the OS: so does a forked one
            sys.modules["numpy.random"].seed()
        if req.import_root and req.import_root != staging:
            _switch_import_root(staging, req.import_root)
        from autograder.isolation import confine

        confine.apply(req.policy)
        module, func = req.policy["entry"].split(":")
        entry = getattr(__import__(module, fromlist=[func]), func)
    except BaseException as exc:  # noqa: BLE001 - any failure means: not confined, run nothing
        _fail(2, "confine the grading process", exc)
    code = 0
    try:
        entry()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback, then status 1
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code & 0xFF)


def _switch_import_root(old: str, new: str) -> None:
    """Make a child that imports from ``new`` (a TODO's copy of the staging dir, its twins blocked) hold
    none of the modules the server loaded from ``old``: the same names load again, from ``new``."""
    prefix = old.rstrip(os.sep) + os.sep
    for name, module in list(sys.modules.items()):
        # the module's own attributes only: some modules answer any attribute asked (torch._classes)
        attrs = getattr(module, "__dict__", None)
        attrs = attrs if isinstance(attrs, dict) else {}
        path = attrs.get("__path__")
        places = [attrs.get("__file__"), *(path if isinstance(path, list) else [])]
        if any(isinstance(p, str) and p.startswith(prefix) for p in places):
            del sys.modules[name]
    sys.path[:] = [new if p == old else p for p in sys.path]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()

"""What a hostile learner child tries, run *inside* a confined child by tests/engine/test_isolation.py.

Staged into the child's import root and run as its entry (``isolation_attacks:main``). Reads its
targets as JSON on stdin, tries each attack, and writes one JSON object of outcomes to the result
descriptor it was given: ``"ok"`` (the attack worked) or the name of the error that stopped it.
Nothing here judges; the test asserts.
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import signal
import socket
import sys
import time


def _try(fn) -> str:
    try:
        fn()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, type(exc).__name__) if exc.errno else type(exc).__name__
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__
    return "ok"


def _read(path: str) -> None:
    if os.path.isdir(path):
        os.listdir(path)
    else:
        with open(path, "rb") as f:
            f.read(1)


def _write(path: str) -> None:
    with open(path, "w") as f:
        f.write("planted")


def _read_via_dir_fd(path: str) -> None:
    root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = os.open(path.lstrip("/"), os.O_RDONLY, dir_fd=root)
        os.read(fd, 1)
        os.close(fd)
    finally:
        os.close(root)


def _read_via_symlink(path: str, scratch: str) -> None:
    link = os.path.join(scratch, "link")
    os.symlink(path, link)
    _read(link)


def _ptrace_seize(pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(0x4206, pid, None, None) != 0:  # PTRACE_SEIZE: would not even stop the target
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _pidfd_signal(pid: int) -> None:
    fd = os.pidfd_open(pid)
    try:
        signal.pidfd_send_signal(fd, 0)  # 0: the same permission check, no harm
    finally:
        os.close(fd)


def _sysv_shm() -> None:
    """A System V shared-memory segment: keyed by number, visible to every process of the same IPC space."""
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(0x5C5C0000 + os.getpid() % 1000, 4096, 0o1000 | 0o600)  # IPC_CREAT
    if shmid < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    libc.shmctl(shmid, 0, None)  # IPC_RMID: leave nothing behind


def _posix_mqueue() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mq_open.restype = ctypes.c_int
    name = f"/pcw-iso-{os.getpid()}".encode()
    mq = libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None)
    if mq < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    os.close(mq)
    libc.mq_unlink(name)


def _visible_pids() -> list[int]:
    return sorted(int(d) for d in os.listdir("/proc") if d.isdigit())


def _detached_grandchild(marker: str) -> str:
    """Start a double-forked process that tries to leave the process group and then keeps touching
    ``marker``; return whether its setsid worked. The test watches the marker after the child ends."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            os.write(w, _try(os.setsid).encode())
            os.close(w)
            while True:
                with open(marker, "a") as f:
                    f.write(".")
                time.sleep(0.02)
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(w)
    setsid = os.read(r, 64).decode()
    while not os.path.exists(marker):
        time.sleep(0.01)
    return setsid


def main() -> None:
    t = json.loads(sys.stdin.read())
    out: dict[str, object] = {}
    for name, path in t["secrets"].items():
        out[f"read:{name}"] = _try(lambda p=path: _read(p))
    out["read:dir_fd"] = _try(lambda: _read_via_dir_fd(t["secrets"]["secret_file"]))
    out["read:symlink"] = _try(lambda: _read_via_symlink(t["secrets"]["secret_file"], t["scratch"]))
    out["read:proc_1_root"] = _try(lambda: _read("/proc/1/root" + t["secrets"]["secret_file"]))
    for name, path in t["writes"].items():
        out[f"write:{name}"] = _try(lambda p=path: _write(p))
    out["write:scratch"] = _try(lambda: _write(os.path.join(t["scratch"], "mine.txt")))
    grader, sibling = t["grader_pid"], t["sibling_pid"]
    for who, pid in (("grader", grader), ("sibling", sibling)):
        out[f"proc:{who}:cmdline"] = _try(lambda p=pid: _read(f"/proc/{p}/cmdline"))
        out[f"proc:{who}:cwd"] = _try(lambda p=pid: _read(f"/proc/{p}/cwd"))
        out[f"proc:{who}:fd"] = _try(lambda p=pid: _read(f"/proc/{p}/fd"))
        out[f"kill:{who}"] = _try(lambda p=pid: os.kill(p, 0))
        out[f"pidfd_signal:{who}"] = _try(lambda p=pid: _pidfd_signal(p))
        out[f"prlimit:{who}"] = _try(lambda p=pid: resource.prlimit(p, resource.RLIMIT_NOFILE, tuple(t["nofile"])))
        if not t.get("control"):  # the unconfined control run must not really trace the test runner
            out[f"ptrace:{who}"] = _try(lambda p=pid: _ptrace_seize(p))
    out["kill:process_group_of_grader"] = _try(lambda: os.killpg(os.getpgid(grader), 0))
    out["visible_pids"] = _try(_visible_pids) if _try(_visible_pids) != "ok" else _visible_pids()
    out["ipc:sysv_shm"] = _try(_sysv_shm)
    out["ipc:posix_mqueue"] = _try(_posix_mqueue)
    out["connect:loopback"] = _try(lambda: socket.create_connection(("127.0.0.1", t["port"]), timeout=2).close())
    out["udp:loopback"] = _try(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", t["port"])))
    libc = ctypes.CDLL(None, use_errno=True)
    from autograder.isolation.confine import capabilities

    out["identity"] = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
                       "caps": list(capabilities()), "no_new_privs": libc.prctl(39, 0, 0, 0, 0),
                       "seccomp_mode": libc.prctl(21, 0, 0, 0, 0),
                       "bounding": [c for c in range(64) if libc.prctl(23, c, 0, 0, 0) == 1],
                       "isolated": sys.flags.isolated, "prefix": sys.prefix, "base_prefix": sys.base_prefix}
    out["import:numpy"] = _try(lambda: __import__("numpy"))
    if not t.get("control"):  # unconfined, a detached grandchild would really outlive the test
        out["grandchild:setsid"] = _detached_grandchild(os.path.join(t["scratch"], "marker"))
    data = json.dumps(out).encode()
    while data:
        data = data[os.write(t["result_fd"], data):]
    os._exit(0)


def sleep() -> None:
    """A sibling child that just stays alive."""
    time.sleep(60)


def linger() -> None:
    """A child that leaves a detached grandchild behind and then hangs: the supervisor's timeout case."""
    _detached_grandchild(os.path.join(os.getcwd(), "marker"))
    time.sleep(60)


# -- two children of one run, one staged tree: can a bit pass between them? ------------------------
# The sender marks a staged file (read-only for both) in every way the kernel keeps outside the file's
# content; the receiver, started first, watches the same file and then probes it. Both report what
# each of their calls returned; the test decides whether a bit passed.
_F_GETLK, _F_SETLK, _F_OFD_GETLK, _F_OFD_SETLK, _F_SETLEASE, _F_NOTIFY = 5, 6, 36, 37, 1024, 1026
_F_GET_RW_HINT, _F_SET_RW_HINT, _RWH_WRITE_LIFE_EXTREME = 1035, 1036, 5  # the inode's write-lifetime hint
_DN_ACCESS, _DN_MULTISHOT = 0x1, 0x80000000
_IN_OPEN, _IN_ACCESS, _IN_NONBLOCK = 0x20, 0x1, 0o4000


def _errno_of(res: int) -> None:
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _flock_struct(kind: int) -> bytes:
    import struct

    return struct.pack("hhqqi4x", kind, 0, 0, 0, 0)  # struct flock: type, whence, start, len (0: all), pid


def _lock_owner_seen(fd: int, cmd: int) -> bool:
    """F_GETLK / F_OFD_GETLK asking for a write lock: True when someone else holds a conflicting lock."""
    import fcntl
    import struct

    res = fcntl.fcntl(fd, cmd, _flock_struct(fcntl.F_WRLCK))
    return struct.unpack("hhqqi4x", res)[0] != fcntl.F_UNLCK


def covert_send() -> None:
    """Hold every mark it can on the shared file, say so, keep them until stdin closes."""
    import fcntl
    import struct

    t = json.loads(sys.stdin.readline())
    path, out, held = t["shared"], {}, []
    libc = ctypes.CDLL(None, use_errno=True)

    def opened():
        fd = os.open(path, os.O_RDONLY)
        held.append(fd)
        return fd

    out["open_and_read"] = _try(lambda: os.read(opened(), 16))  # what inotify, fanotify and dnotify watch
    out["flock"] = _try(lambda: fcntl.flock(opened(), fcntl.LOCK_SH | fcntl.LOCK_NB))
    out["posix_lock"] = _try(lambda: fcntl.fcntl(opened(), _F_SETLK, _flock_struct(fcntl.F_RDLCK)))
    out["ofd_lock"] = _try(lambda: fcntl.fcntl(opened(), _F_OFD_SETLK, _flock_struct(fcntl.F_RDLCK)))
    out["lease"] = _try(lambda: fcntl.fcntl(opened(), _F_SETLEASE, fcntl.F_RDLCK))
    out["rw_hint"] = _try(lambda: fcntl.fcntl(opened(), _F_SET_RW_HINT, struct.pack("Q", _RWH_WRITE_LIFE_EXTREME)))
    out["fadvise_dontneed"] = _try(lambda: os.posix_fadvise(opened(), 0, 0, os.POSIX_FADV_DONTNEED))  # last
    out["fanotify_init"] = _try(lambda: _errno_of(libc.fanotify_init(0, 0)))
    os.write(t["result_fd"], (json.dumps(out) + "\n").encode())
    sys.stdin.read()  # hold everything until the test says stop
    os._exit(0)


def covert_receive() -> None:
    """Arm the watchers, say so, wait for the go, then read every mark the sender could have left."""
    import fcntl
    import signal as _signal

    t = json.loads(sys.stdin.readline())
    path, out = t["shared"], {}
    libc = ctypes.CDLL(None, use_errno=True)
    notified = []
    _signal.signal(_signal.SIGIO, lambda *_: notified.append(1))
    _signal.signal(_signal.SIGRTMIN, lambda *_: notified.append(1))
    dir_fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    out["arm:dnotify"] = _try(lambda: fcntl.fcntl(dir_fd, _F_NOTIFY, _DN_ACCESS | _DN_MULTISHOT))
    ino = libc.inotify_init1(_IN_NONBLOCK)
    out["arm:inotify"] = _try(lambda: _errno_of(ino)) if ino < 0 else \
        _try(lambda: _errno_of(libc.inotify_add_watch(ino, path.encode(), _IN_OPEN | _IN_ACCESS)))
    fan = libc.fanotify_init(0, 0)
    out["arm:fanotify"] = _try(lambda: _errno_of(fan))
    os.write(t["result_fd"], b'{"armed": true}\n')
    sys.stdin.readline()  # the sender has done everything it could
    time.sleep(0.2)
    fd = os.open(path, os.O_RDONLY)
    seen = {}
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        seen["flock"] = False
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as exc:
        seen["flock"] = True if exc.errno == errno.EWOULDBLOCK else errno.errorcode.get(exc.errno, "?")
    for name, cmd in (("posix_lock", _F_GETLK), ("ofd_lock", _F_OFD_GETLK)):
        try:
            seen[name] = _lock_owner_seen(fd, cmd)
        except OSError as exc:
            seen[name] = errno.errorcode.get(exc.errno, "?")
    try:
        import struct

        hint = struct.unpack("Q", fcntl.fcntl(fd, _F_GET_RW_HINT, bytes(8)))[0]
        seen["rw_hint"] = hint == _RWH_WRITE_LIFE_EXTREME
    except OSError as exc:
        seen["rw_hint"] = errno.errorcode.get(exc.errno, "?")
    if ino >= 0:
        try:
            seen["inotify"] = len(os.read(ino, 4096)) > 0
        except BlockingIOError:
            seen["inotify"] = False
    seen["dnotify"] = bool(notified)
    try:
        libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                                  ctypes.c_int, ctypes.c_int, ctypes.c_long]
        addr = libc.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        vec = (ctypes.c_ubyte * 1)()
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        _errno_of(libc.mincore(addr, 4096, vec))
        seen["page_cache"] = not (vec[0] & 1)  # evicted: the sender's fadvise reached this child
    except OSError as exc:
        seen["page_cache"] = errno.errorcode.get(exc.errno, "?")
    out["seen"] = seen
    os.write(t["result_fd"], (json.dumps(out) + "\n").encode())
    os._exit(0)


# -- what one child may hold: memory over its whole process tree, and its scratch dir ----------------
def _report(t: dict, out: dict) -> None:
    data = json.dumps(out).encode()
    while data:
        data = data[os.write(t["result_fd"], data):]


def fork_hogs() -> None:
    """Start ``forks`` processes that each fill ``mb`` MB and hold it until a common moment; report how
    many could start, how many filled their share, and how many were still alive holding it then."""
    t = json.loads(sys.stdin.read())
    release = time.monotonic() + t["hold_s"]
    r, w = os.pipe()
    pids, refused = [], None
    for _ in range(t["forks"]):
        try:
            pid = os.fork()
        except OSError as exc:
            refused = errno.errorcode.get(exc.errno, "?")
            break
        if pid == 0:
            try:
                block = bytearray(t["mb"] * 2**20)
                for i in range(0, len(block), 4096):
                    block[i] = 1  # really held, page by page
                os.write(w, b"+")
                time.sleep(max(0.0, release - time.monotonic()))
                os._exit(0 if block[-4096] == 1 else 3)
            except MemoryError:
                os._exit(2)
        pids.append(pid)
    os.close(w)
    survivors = sum(1 for pid in pids if os.waitpid(pid, 0)[1] == 0)
    filled = len(os.read(r, 1024))
    _report(t, {"started": len(pids), "refused": refused, "filled": filled, "survivors": survivors})
    os._exit(0)


def fill_scratch() -> None:
    """Write 10 MB files into the scratch dir until something stops it (or ``mb`` MB are written)."""
    t = json.loads(sys.stdin.read())
    written, error, chunk = 0, None, b"x" * 2**20
    try:
        while written < t["mb"] * 2**20:
            with open(os.path.join(os.getcwd(), f"fill-{written // 2**20}"), "wb") as f:
                for _ in range(10):
                    f.write(chunk)
                    f.flush()
                    written += len(chunk)
    except OSError as exc:
        error = errno.errorcode.get(exc.errno, type(exc).__name__)
    _report(t, {"written_mb": written // 2**20, "error": error})
    os._exit(0)


def deep_tree() -> None:
    """Leave a tree up to ``depth`` folders deep (some locked with mode 000) with a file and a link at
    each level, building for at most ``seconds`` (Landlock checks every access up the whole path, so
    each level costs more than the last)."""
    t = json.loads(sys.stdin.read())
    stop = time.monotonic() + t["seconds"]
    fd = os.open(os.getcwd(), os.O_RDONLY | os.O_DIRECTORY)
    made = 0
    try:
        for i in range(t["depth"]):
            if time.monotonic() > stop:
                break
            os.mkdir("d", dir_fd=fd)
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
            os.symlink("/", "up", dir_fd=fd)
            sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            if i % 997 == 1:
                os.fchmod(fd, 0)  # this level: no access for anyone but root
            os.close(fd)
            fd = sub
            made += 1
    except OSError as exc:
        _report(t, {"depth": made, "error": errno.errorcode.get(exc.errno, "?")})
        os._exit(0)
    _report(t, {"depth": made, "error": None})
    os._exit(0)


def run_stdin() -> None:
    """Run the Python source read from stdin (a test's probe of a forked child's surroundings)."""
    exec(compile(sys.stdin.read(), "<probe>", "exec"), {"__name__": "__main__"})

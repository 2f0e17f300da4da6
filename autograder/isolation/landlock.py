"""Landlock, the kernel's unprivileged access control, through its three system calls (ctypes).

A process restricts itself (and every process it starts afterwards) to a ruleset: which
filesystem hierarchies it may read or write, whether it may bind or connect TCP ports, and whether
it may signal processes or reach abstract UNIX sockets outside its own Landlock domain. A ruleset
can only ever be tightened, never lifted, whatever the process does afterwards; that is what makes
it a boundary for learner code, unlike anything done in Python.

Only the rights of the ABI the running kernel offers are requested (``abi()``), so the same code
works on older kernels with fewer guarantees; :func:`restrict` reports which ones it enforced.
"""
from __future__ import annotations

import ctypes
import os
import stat
import sys

# New system calls have the same number on every architecture Linux supports here.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights, with the ABI that introduced them.
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV  # all a non-directory may get


class LandlockError(OSError):
    """Landlock is missing, or the ruleset could not be built or enforced."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(*args) -> int:
    res = _libc.syscall(*args)
    if res < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, os.strerror(err))
    return res


def abi() -> int:
    """The Landlock ABI version this kernel offers, 0 when it offers none (or not on Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return _syscall(ctypes.c_long(_SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                        ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except LandlockError:
        return 0


def fs_rights(version: int) -> int:
    """Every filesystem right the given ABI can handle."""
    return _FS_BY_ABI.get(version, _FS_BY_ABI[5]) if version else 0


class Enforced:
    """What :func:`restrict` made the kernel enforce on the calling process (a plain class: the
    child imports this module before anything else, and ``dataclasses`` costs it ~10 ms)."""

    __slots__ = ("abi", "abstract_unix", "filesystem", "signals", "tcp")

    def __init__(self, abi: int, filesystem: bool, tcp: bool, signals: bool, abstract_unix: bool) -> None:
        self.abi = abi
        self.filesystem = filesystem
        self.tcp = tcp  # no TCP bind or connect at all
        self.signals = signals  # no signal to a process outside this domain (the grader, siblings)
        self.abstract_unix = abstract_unix  # no abstract UNIX socket outside this domain

    def __repr__(self) -> str:
        return "Enforced(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


def restrict(read: list[str], write: list[str], files: dict[str, int] | None = None, *,
             deny_tcp: bool = True, scope: bool = True) -> Enforced:
    """Confine the calling thread's process, for good, to reading ``read`` and writing ``write``.

    ``read``/``write`` are directories (or files) whose hierarchy gets read-only or full access;
    ``files`` maps single files to rights (e.g. ``/dev/null`` readable and writable). Everything
    else in the filesystem is refused, TCP bind/connect are refused (``deny_tcp``), and signals and
    abstract UNIX sockets are scoped to this domain (``scope``) where the ABI allows. Sets
    no_new_privs, which Landlock requires. Call it before starting threads: it binds the calling
    thread and whatever it starts later, not threads that already run.
    """
    version = abi()
    if version < 1:
        raise LandlockError(0, "this kernel offers no Landlock")
    handled = fs_rights(version)
    net = (NET_BIND_TCP | NET_CONNECT_TCP) if deny_tcp and version >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if scope and version >= 6 else 0
    attr = _RulesetAttr(handled, net, scoped)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    ruleset = _syscall(ctypes.c_long(_SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                       ctypes.c_uint32(0))
    try:
        rules = [(p, READ) for p in read] + [(p, handled) for p in write] + list((files or {}).items())
        for path, rights in rules:
            _add_path_rule(ruleset, path, rights & handled)
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            err = ctypes.get_errno()
            raise LandlockError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
        _syscall(ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return Enforced(version, True, bool(net), bool(scoped & SCOPE_SIGNAL), bool(scoped & SCOPE_ABSTRACT_UNIX_SOCKET))


def _add_path_rule(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS  # the kernel refuses directory rights on a file
        rule = _PathBeneathAttr(rights, fd)
        try:
            _syscall(ctypes.c_long(_SYS_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                     ctypes.byref(rule), ctypes.c_uint32(0))
        except LandlockError as exc:
            raise LandlockError(exc.errno, f"adding a Landlock rule for {path}: {exc.strerror}") from None
    finally:
        os.close(fd)

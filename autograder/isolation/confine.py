"""The first thing a learner child runs: it confines itself for good, then hands over to its entry.

Launched by :mod:`autograder.isolation.levels` as ``python -I -c BOOT POLICY_JSON``. Before any learner
code exists in the process, and in this order (each step needs the privileges the previous ones
leave, and each is permanent):

0. memory: join the child's own cgroup through the descriptor of its ``cgroup.procs`` the grader
   passed (so everything it starts is charged there), and close it;
1. user: when started as root, become the unprivileged ``uid:gid`` of the policy (all capabilities
   go with it), or, where that user could not read the interpreter, stay uid 0 but drop every
   capability and lock the securebits so that no ``execve`` brings them back;
2. parent death: ``PR_SET_PDEATHSIG`` = SIGKILL (a credential change clears it, hence after 1);
3. resource limits of the policy (e.g. RLIMIT_NPROC for the unprivileged user);
4. Landlock (read-only paths, a writable scratch dir, no TCP, signal and abstract-socket scoping);
5. the seccomp filter compiled by the grader (see :mod:`autograder.isolation.seccomp_filter`).

Each step the policy asks for either holds, verified, or the process exits with
``EXIT_NOT_CONFINED`` and one line on stderr before running anything else: the supervisor then
reports a grader error, never a learner's verdict.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys

EXIT_NOT_CONFINED = 121
_PR_SET_PDEATHSIG, _PR_GET_NO_NEW_PRIVS, _PR_SET_NO_NEW_PRIVS = 1, 39, 38
_PR_CAPBSET_READ, _PR_CAPBSET_DROP, _PR_SET_SECUREBITS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 23, 24, 28, 47, 4
# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS off, NO_CAP_AMBIENT_RAISE: each with its lock bit
_SECUREBITS_LOCKED = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 6) | (1 << 7)


_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(res: int, what: str) -> None:
    if res != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def capabilities() -> tuple[int, int, int]:
    """(effective, permitted, inheritable) capability sets of this process, as bit masks."""
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    _check(_libc().capget(ctypes.byref(header), data), "capget")

    def join(field: str) -> int:  # the two 32-bit halves of one capability set
        return getattr(data[0], field) | (getattr(data[1], field) << 32)

    return join("effective"), join("permitted"), join("inheritable")


def bounding_set() -> list[int]:
    """Capabilities still in this process's bounding set (what an exec could ever grant)."""
    libc, caps, cap = _libc(), [], 0
    while (held := libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0)) >= 0:
        if held == 1:
            caps.append(cap)
        cap += 1
    return caps


def _empty_bounding_set() -> None:
    """Needs CAP_SETPCAP (bubblewrap is told to leave it for this step)."""
    libc = _libc()
    for cap in bounding_set():
        _check(libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap} from the bounding set")


def _clear_capabilities() -> None:
    libc = _libc()
    _check(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clearing ambient capabilities")
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")


def become_user(uid: int, gid: int) -> None:
    """From root to ``uid:gid`` with no supplementary groups, no capabilities, an empty bounding set."""
    _empty_bounding_set()
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # clears the effective and permitted sets
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError(0, f"still {os.getresuid()}/{os.getresgid()} after switching to {uid}:{gid}")
    _clear_capabilities()  # the inheritable set survives a switch


def drop_capabilities() -> None:
    """Stay uid 0 but without capabilities: empty sets, empty bounding set, no ambient set.

    With an empty bounding set an ``execve`` of anything, as root, grants no capability back.
    """
    _libc().prctl(_PR_SET_SECUREBITS, _SECUREBITS_LOCKED, 0, 0, 0)  # needs CAP_SETPCAP; belt and braces
    _empty_bounding_set()
    _clear_capabilities()


def load_seccomp(prog: bytes) -> None:
    """Install a classic-BPF seccomp program (see :mod:`autograder.isolation.seccomp_filter`) for good.

    Needs no_new_privs, and one thread: a filter binds the calling thread and what it starts.
    """
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _check(_libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "installing seccomp")


def apply(policy: dict) -> list[str]:
    """Confine this process as ``policy`` says; return what now holds, for the log."""
    held = []
    if policy.get("cgroup_fd") is not None:
        fd = policy["cgroup_fd"]
        try:
            os.write(fd, b"0\n")  # 0: the writing process; its later children stay in the cgroup
        finally:
            os.close(fd)
        held.append("own memory cgroup")
    user = policy.get("user")
    if user == "root-without-capabilities":
        drop_capabilities()
        held.append("uid 0 without capabilities")
    elif user is not None:
        become_user(*user)
        held.append(f"uid {user[0]}")
    if os.getuid() == 0 and user is None and policy.get("must_be_unprivileged", True):
        raise OSError(0, "running as root but the policy names no user to become")
    if policy.get("cwd"):
        os.chdir(policy["cwd"])  # after the switch: the scratch dir belongs to the new user
    if any(capabilities()) or (user is not None and bounding_set()):
        raise OSError(0, f"capabilities left after dropping them: {capabilities()}, bounding {bounding_set()}")
    libc = _libc()
    _check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "PR_SET_PDEATHSIG")
    if policy.get("parent") and os.getppid() != policy["parent"]:
        os._exit(EXIT_NOT_CONFINED)  # the launcher is gone already: nobody is left to read results
    for name, (soft, hard) in policy.get("rlimits", {}).items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    if policy.get("landlock"):
        from autograder.isolation import landlock

        ll = policy["landlock"]
        rights = {"r": landlock.FS_READ_FILE, "rw": landlock.FS_READ_FILE | landlock.FS_WRITE_FILE}
        got = landlock.restrict(ll["read"], ll["write"], {p: rights[m] for p, m in ll["files"].items()})
        want_scope = ll.get("min_abi", 1) >= 6
        if not got.filesystem or (want_scope and not (got.signals and got.tcp)):
            raise OSError(0, f"Landlock enforced less than asked: {got}")
        held.append(f"Landlock ABI {got.abi}")
    if policy.get("seccomp"):
        load_seccomp(bytes.fromhex(policy["seccomp"]))
        held.append("seccomp")
    if libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1:
        raise OSError(0, "no_new_privs is not set")
    return held


def main() -> None:
    """Entry of the boot line: confine, then run ``policy['entry']`` (``module:function``)."""
    try:
        policy = json.loads(sys.argv.pop(1))
        apply(policy)
        module, func = policy["entry"].split(":")
    except Exception as exc:  # noqa: BLE001 - any failure means: not confined, run nothing
        os.write(2, f"isolation: could not confine the grading process: {type(exc).__name__}: {exc}\n".encode())
        os._exit(EXIT_NOT_CONFINED)
    getattr(__import__(module, fromlist=[func]), func)()


def probe() -> None:
    """The entry of the launcher's probe: prove that the confined interpreter can still import."""
    import decimal  # noqa: F401 - a C extension and a pure module, loaded after confinement
    import json as _json

    print("isolation-probe-ok", _json.dumps({"uid": os.getuid()}))

"""A seccomp filter for the learner child: compiled in the grader with libseccomp, loaded in the child.

The filter is a deny list on top of the other layers (namespaces, Landlock). It refuses, with
EPERM, the system calls that reach into other processes or widen the child's world:

- ``ptrace``, ``process_vm_readv``/``writev``, ``process_madvise``, ``pidfd_getfd``, ``kcmp``:
  reading or changing another process's memory or file descriptors;
- ``prlimit64``, ``setpriority``, ``ioprio_set`` aimed at any process but the caller (pid 0):
  starving the grader of file descriptors, memory or CPU when it runs as the same user;
- ``setsid``, ``setpgid``: every process the child starts stays in the child's process group, so the
  supervisor's ``killpg`` reaches all of them (no detached process outlives grading);
- ``socket`` of any family (``socketpair`` stays allowed): no network, no UNIX socket of a host
  service, also where no network namespace is available;
- System V IPC (shared memory, message queues, semaphores) and POSIX message queues: keyed by name,
  so without an IPC namespace two children could use them to pass answers to each other;
- ``flock``, ``fcntl`` lock, lease, notify and write-hint commands, ``inotify_init*``, ``fanotify_*``,
  ``mincore``, ``cachestat`` and ``fadvise(DONTNEED)``: every child of a run (and every submission of a
  batch) sees the same files (the interpreter, the libraries, the staged course tree, devices), and a
  lock on one of them, its inode's write hint, a notification of someone opening it, or whether its
  pages are cached is a bit one child could set and another read (no grading child needs any). No
  other layer refuses these: a level without seccomp leaves them open between children;
- namespaces, mounts, kernel modules, BPF, perf, keyrings, io_uring, ``userfaultfd``, handle-based
  opens: kernel surface that learner code never needs; ``clone`` with a namespace flag is refused,
  and ``clone3`` answers ENOSYS so that the C library falls back to ``clone``, whose flags the
  filter can read. A call from a foreign ABI (32-bit entry on a 64-bit kernel) ends the process.

Signals are not filtered here: seccomp cannot tell the grader's pid from the child's own, and
Landlock's signal scoping and the pid namespace already cover them.

Compiling needs a libseccomp binding (the ``seccomp`` module of Debian's python3-seccomp, or the
``pyseccomp`` package over the system's libseccomp), in the grader; the child loads the compiled
program with one ``prctl`` (:func:`autograder.isolation.confine.load_seccomp`) and imports neither.
"""
from __future__ import annotations

import errno
import functools
import tempfile

DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
          "setsid", "setpgid", "socket",
          "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount",
          "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
          "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
          "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
          "io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at", "name_to_handle_at",
          # System V IPC and POSIX message queues are keyed by name, not by path: without an IPC
          # namespace (the fallback level) two children could meet there
          "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
          "semget", "semop", "semtimedop", "semctl",
          "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
          # kernel objects attached to a shared (read-only) file: a bit one child sets and another reads
          "flock", "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark",
          "mincore", "cachestat")
# fcntl commands that lock, lease or watch a file (the 64-bit-offset variants of 32-bit ABIs too), or
# set or read its inode's write-lifetime hint (any opener may set it on a read-only file, and every
# other opener reads it back); compared on the low 32 bits, as the kernel reads ``cmd`` as an unsigned int
FCNTL_DENIED = {"F_GETLK": 5, "F_SETLK": 6, "F_SETLKW": 7, "F_GETLK64": 12, "F_SETLK64": 13, "F_SETLKW64": 14,
                "F_OFD_GETLK": 36, "F_OFD_SETLK": 37, "F_OFD_SETLKW": 38,
                "F_SETLEASE": 1024, "F_GETLEASE": 1025, "F_NOTIFY": 1026,
                "F_GET_RW_HINT": 1035, "F_SET_RW_HINT": 1036, "F_GET_FILE_RW_HINT": 1037, "F_SET_FILE_RW_HINT": 1038}
POSIX_FADV_DONTNEED = 4  # drops a shared file's pages from the page cache, which another child can time
# (syscall, index of the pid-like argument): refused unless that argument is 0 (the caller itself)
OTHER_PROCESS = (("prlimit64", 0), ("setpriority", 1), ("ioprio_set", 1))
CLONE_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                         0x00000080)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME


class SeccompUnavailable(RuntimeError):
    """No libseccomp binding here, so no filter can be compiled."""


def _binding():
    try:
        import seccomp  # Debian's python3-seccomp, libseccomp's own binding
        return seccomp
    except ImportError:
        pass
    try:
        import pyseccomp  # same API, over the system's libseccomp.so.2
        return pyseccomp
    except (ImportError, RuntimeError, OSError) as exc:
        raise SeccompUnavailable(f"no libseccomp binding: {exc}") from None


CLONE_THREAD = 0x00010000


@functools.lru_cache(maxsize=2)
def compile_filter(single_process: bool = False) -> bytes:
    """The filter as a classic BPF program (struct sock_filter array), for this machine's ABI.

    ``single_process``: also refuse every new process (``fork``, ``vfork``, a ``clone`` that is not a
    thread): where no cgroup bounds a child's process tree, this keeps the tree to the one address
    space ``RLIMIT_AS`` bounds (grading children start no program: the audit hook refuses it too).
    """
    sc = _binding()
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        _add(sc, f, deny, name)
    for name, arg in OTHER_PROCESS:
        _add(sc, f, deny, name, sc.Arg(arg, sc.NE, 0))
    for name in ("fcntl", "fcntl64"):
        for cmd in FCNTL_DENIED.values():
            _add(sc, f, deny, name, sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, cmd))
    _add(sc, f, deny, "fadvise64", sc.Arg(3, sc.MASKED_EQ, 0xFFFFFFFF, POSIX_FADV_DONTNEED))
    for flag in CLONE_NAMESPACE_FLAGS:
        _add(sc, f, deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    _add(sc, f, sc.ERRNO(errno.ENOSYS), "clone3")
    if single_process:
        _add(sc, f, deny, "fork")
        _add(sc, f, deny, "vfork")
        _add(sc, f, deny, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        prog = out.read()
    if not prog or len(prog) % 8:
        raise SeccompUnavailable(f"libseccomp exported a malformed program ({len(prog)} bytes)")
    return prog


def _add(sc, f, action: int, name: str, *args) -> None:
    try:
        number = sc.resolve_syscall(sc.Arch.NATIVE, name)
    except (ValueError, OSError):
        return  # a call this architecture does not have
    if number < 0:
        return
    f.add_rule(action, number, *args)

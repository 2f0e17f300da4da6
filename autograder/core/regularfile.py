"""Reading a file that someone else may have put in place: a regular file only, never through a
symbolic link, never waiting, never more than a stated number of bytes.

A learner (or anyone who can write the folder) chooses what a name holds: a link to a file they
must not be served, a FIFO that blocks whoever opens it, a device, a file of gigabytes. The file is
opened with ``O_NOFOLLOW`` (a link is refused, not followed) and ``O_NONBLOCK`` (opening a FIFO
returns at once), then judged on what was opened (``fstat``), so nothing changes between the check
and the read. Submissions (:mod:`autograder.grading.submission`) and the learner's progress record
(:mod:`autograder.learner.standing`) are read through :func:`read_bounded`.

Invariant: :func:`read_bounded` returns at most ``limit`` bytes of a regular file, or raises
:class:`Refused`; it never blocks on the file's kind and never reads more than ``limit + 1`` bytes.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

# POSIX flags; Windows (where a learner may keep a progress record) has none of them, and no FIFOs in
# the file system either
_NOFOLLOW, _NONBLOCK, _CLOEXEC = (getattr(os, f, 0) for f in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC"))

#: Why a file was refused (:attr:`Refused.why`).
MISSING, LINK, FOLDER, SPECIAL, TOO_LARGE, UNREADABLE = "missing", "link", "folder", "special", "too large", "unreadable"


class Refused(Exception):
    """The file was not read. ``why`` is one of :data:`MISSING`, :data:`LINK`, :data:`FOLDER`,
    :data:`SPECIAL` (``detail``: which kind, e.g. "a FIFO"), :data:`TOO_LARGE` or :data:`UNREADABLE`
    (``detail`` of :data:`MISSING` and :data:`UNREADABLE`: the system's reason)."""

    def __init__(self, why: str, detail: str = "") -> None:
        super().__init__(f"{why}: {detail}" if detail else why)
        self.why = why
        self.detail = detail


def kind(mode: int) -> str:
    """What a file that is not a regular file or a folder is, in words."""
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a plain file"


def read_bounded(path: str | os.PathLike, limit: int,
                 vet: Callable[[int, os.stat_result], None] | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` (at most ``limit``) and its ``fstat``; :class:`Refused`
    for anything else. ``vet(fd, st)`` may refuse the opened file further (by raising) before a byte
    is read."""
    if not _NOFOLLOW and os.path.islink(path):  # Windows (a learner's own record): no flag, a check first
        raise Refused(LINK)
    try:  # O_NOFOLLOW: a link is refused, not followed; O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC | _NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise Refused(LINK) from None
        if exc.errno == errno.ENOENT:
            raise Refused(MISSING, exc.strerror or str(exc)) from None
        raise Refused(UNREADABLE, exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise Refused(FOLDER)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(SPECIAL, kind(st.st_mode))
        if vet is not None:
            vet(fd, st)
        if st.st_size > limit:
            raise Refused(TOO_LARGE)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:  # a file that grows while it is read stops at limit + 1 bytes
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise Refused(UNREADABLE, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    if size > limit:
        raise Refused(TOO_LARGE)
    return b"".join(chunks), st

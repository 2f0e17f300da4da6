"""Run a command as a child subreaper and reap every process it leaves behind, so that the caller's
``RUSAGE_CHILDREN`` counts the CPU of the command's whole process tree.

A grading child is started through launchers that exit before it does (bubblewrap, the confinement
set-up); its CPU is then charged to whoever reaps it, which without this is init, not the benchmark.
As a subreaper this process inherits those orphans and reaps them itself, until none is left; it exits
with the command's status. Where ``prctl`` is missing it only runs the command (direct descendants
are still counted).

    python benchmarks/reap.py python -m autograder grade ...
"""
from __future__ import annotations

import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> int:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    rc = 0
    while True:  # the command, then every orphan handed to us, until there are no children at all
        try:
            child, status = os.wait()
        except ChildProcessError:
            return rc
        if child == pid:
            rc = os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

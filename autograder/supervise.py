"""Supervising one grading child: start it, feed it, read its events, stop it, say how it ended.

The child (:mod:`autograder.sandbox`) runs learner code; this module runs in the grader and never
executes learner code. CPU time is the limit that matters (it does not depend on how busy the
machine is); the wall clock only ends code that waits forever without computing.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from autograder import layout

_BOOT = "import sys; sys.path.insert(0, {root!r}); from autograder.sandbox import main; main()"
MAX_EVENT_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class ChildLimits:
    """Limits of one child. ``startup_s`` is extra time for imports (torch takes seconds)."""

    time_limit_s: float
    memory_limit_mb: int
    startup_s: float

    @property
    def cpu_s(self) -> float:
        return self.time_limit_s + self.startup_s / 5

    @property
    def wall_s(self) -> float:
        return 3 * self.time_limit_s + self.startup_s


def child_env(workdir: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT") if k in os.environ}
    env.update(HOME=workdir, TMPDIR=workdir, MPLBACKEND="Agg", MPLCONFIGDIR=workdir, OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
               PCW_GRADING="1")
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # machine-specific safety settings, see RECIPES
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def run_child(payload: dict, limits: ChildLimits) -> tuple[list[dict], str | None]:
    """Run one child with ``payload`` (plus its limits, scratch dir and result pipe).

    Returns the child's events and ``None``, or the events and a one-line reason it did not finish.
    """
    with tempfile.TemporaryDirectory(prefix="pcw-grade-") as workdir:
        read_fd, write_fd = os.pipe()
        payload = {**payload, "memory_limit_mb": limits.memory_limit_mb, "cpu_limit_s": limits.cpu_s,
                   "workdir": workdir, "result_fd": write_fd, "root": str(layout.ROOT),
                   "denied_dirs": [str(layout.SOLUTIONS)]}
        log_path = os.path.join(workdir, "output.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT.format(root=str(layout.ROOT))],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
                cwd=workdir, env=child_env(workdir), start_new_session=True)
        os.close(write_fd)
        try:
            proc.stdin.write(json.dumps(payload).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        events, status = _collect(proc, read_fd, limits)
        os.close(read_fd)
        return events, status


def _collect(proc: subprocess.Popen, fd: int, limits: ChildLimits) -> tuple[list[dict], str | None]:
    """Read the child's events until its end of the pipe closes (or the wall clock runs out).

    The child's last event is ``{"phase": "done"}`` when it finished; learner code can write lines
    to the pipe too, so a "done" anywhere but last, or from a process that did not exit cleanly,
    does not count, and reading always goes on to the end.
    """
    events: list[dict] = []
    buf = b""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + limits.wall_s
    status = None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                status = f"stopped after {limits.wall_s:.0f} s of waiting (sleeping or blocked forever?)"
                break
            if not sel.select(timeout=min(left, 0.5)):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            if len(buf) > MAX_EVENT_BYTES:
                status = "the results were too large"
                break
            *lines, buf = buf.split(b"\n")
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # garbage written to the result pipe by learner code is ignored
                if isinstance(event, dict):
                    events.append(event)
    finally:
        sel.close()
        _kill(proc)
    rc = proc.returncode
    done = bool(events) and events[-1] == {"phase": "done"} and rc in (0, -signal.SIGKILL)
    if not done and status is None:
        if rc is not None and rc < 0:
            sig = signal.Signals(-rc).name
            hint = {"SIGXCPU": f"more than {limits.cpu_s:.0f} s of CPU time: an endless loop, or far too slow?",
                    "SIGKILL": "killed: memory or time limit", "SIGXFSZ": "output file limit",
                    "SIGSEGV": "crashed (a very deep recursion?)"}.get(sig, "")
            status = f"the grading process was ended by {sig}{f' ({hint})' if hint else ''}"
        else:
            status = f"your code ended the grading process (exit code {rc}: sys.exit, os._exit or a crash)"
    return events, status


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass

"""Supervising one grading child: launch it behind the run's isolation, feed it, read its events and
its output, stop it and everything it started, and say how it ended.

The child (:mod:`autograder.child.sandbox`) runs learner code; this module runs in the grader and never
executes learner code. Every child is launched through :mod:`autograder.isolation.launch` at the run's
isolation level (or, at ``in-process``, as a plain child guarded only by its audit hook). CPU time
is the limit that matters (it does not depend on how busy the machine is); the wall clock only ends
code that waits forever without computing, and it stretches with the machine's load (:func:`contention`),
so that a child waiting for a core is not taken for one that sleeps: a busy host makes grading slower,
never a different verdict. The child's stdout and stderr go to a pipe that this
module drains continuously: the first :data:`OUTPUT_KEEP` bytes are kept for diagnosis and the rest
is dropped, so printing never blocks, fills a disk, or raises inside learner code. The child's
events are read under :mod:`autograder.child.protocol`: at its first broken rule, or once it sent
more than a channel holds, nothing more is read and the child is ended, so that what a child costs
the grader is bounded whatever it writes. :func:`describe` says, for a grader's log, how each child
ran (its isolation, exit status and kept output).
"""
from __future__ import annotations

import dataclasses
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.child.protocol import Channel, ChildSummary, Event, summarize
from autograder.core import messages
from autograder.core.i18n import L, text
from autograder.grading.staging import CHILD_ENTRY, SCRATCH_MB, GradingRun, always_hidden
from autograder.grading.trusted import given_code
from autograder.isolation import cgroup
from autograder.isolation.childfs import Digests, HiddenPaths, IsolationError, salted_digest
from autograder.isolation.confine import EXIT_NOT_CONFINED
from autograder.isolation.forkclient import ForkedChild
from autograder.isolation.launch import ChildSpec, LaunchPlan, confinement, plan_child, signal_name
from autograder.isolation.load import MAX_STRETCH, contention  # noqa: F401 (API: MAX_STRETCH)

_PLAIN_BOOT = "import sys; sys.path[0:0] = [{root!r}]; from autograder.child.sandbox import main; main()"
OUTPUT_KEEP = 16 * 1024
DRAIN_LIMIT = 1 << 20  # what is read of the output pipe after the child is done, at most
AFTER_DONE_S = 1.0  # how long the child may take to exit once it reported "done"


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


@dataclass
class ChildReport:
    """How one child ended.

    Invariants: ``events`` are the events its channel accepted, in order (a legal sequence of
    :mod:`autograder.child.protocol`); ``stopped`` is None iff it reported ``Done``, exited
    cleanly and did not tamper; ``grader_error`` is set (and learner code never ran) when the child
    could not be launched or confined; ``output`` is at most :data:`OUTPUT_KEEP` bytes.
    """

    events: list[Event]
    """The protocol events the channel accepted, in order."""
    stopped: L | str | None
    """Why it stopped early, in both languages (``"not started"``: it never ran); None: it did not."""
    tampering: list[L] = field(default_factory=list)
    """The first rule of the protocol the child broke (the grader's words in both languages; nothing after
    it was read)."""
    grader_error: str | None = None
    """Why the grader could not run the child (its own fault); None when it could."""
    output: bytes = b""
    """The first :data:`OUTPUT_KEEP` bytes the child wrote to stdout and stderr, together."""
    output_dropped: int = 0
    """How many more bytes of output it wrote (read and dropped)."""
    isolation: str = ""
    """The isolation applied to this child: the run's level, the user it ran as, what it could read."""
    returncode: int | None = None
    """Its exit status (negative: the signal that ended it); None when it never started or never ended."""
    timed_out: bool = False
    """Whether the wall clock ran out before the child finished."""

    @property
    def summary(self) -> ChildSummary:
        """What ``events`` say, typed (:func:`autograder.child.protocol.summarize`)."""
        return summarize(self.events)

    @property
    def reached(self) -> str:
        """How far the child got: ``ready``, ``cell``, ``cells_done``, ``check``, ``done`` or ``""``."""
        return self.summary.reached

    @property
    def cells_finished(self) -> bool:
        return self.summary.cells_done


def child_env(workdir: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT") if k in os.environ}
    # every cache a library keeps under TMPDIR or HOME (torch's inductor and Triton caches, XDG) in scratch
    env.update(HOME=workdir, TMPDIR=workdir, USER="grading", LOGNAME="grading", MPLBACKEND="Agg", MPLCONFIGDIR=workdir,
               XDG_CACHE_HOME=workdir, TORCHINDUCTOR_CACHE_DIR=os.path.join(workdir, "torchinductor"),
               TRITON_CACHE_DIR=os.path.join(workdir, "triton"),
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONHASHSEED="0", PCW_GRADING="1")
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # machine-specific safety settings, see RECIPES
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def scratch_root(scratch: str) -> str:
    """The folder holding every child's scratch dir (a fork server's children each see only their own)."""
    return os.path.dirname(os.path.realpath(scratch))


def child_payload(payload: dict, limits: ChildLimits, hidden: Iterable[str], staging: Path, scratch: str,
                  result_fd: int) -> dict:
    """What the child reads on stdin: ``payload`` plus its limits, places and result pipe.

    What the child must not open goes in for its audit hook's message (the kernel is what refuses):
    the grader's own places by name, every other path (the batch's submissions, a class roster; an
    nbgrader course's folders) only as a salted digest, so that no child learns another submission's name.
    A run's :class:`~autograder.isolation.childfs.HiddenPaths` (``GradingRun.hidden``) salts and digests
    them once for all its children; any other list is digested here, with a salt of its own.
    """
    hidden = HiddenPaths.of(hidden)
    named, digests = hidden.told(always_hidden())
    return {**payload, "memory_limit_mb": limits.memory_limit_mb, "cpu_limit_s": limits.cpu_s,
            "workdir": scratch, "result_fd": result_fd, "root": str(staging),
            "given_code": given_code(payload.get("modules", {}), str(staging)),
            "denied_dirs": named, "salt": hidden.salt, "denied_digests": digests}


def payload_bytes(payload: dict) -> bytes:
    """``payload`` as the child reads it on stdin: its JSON. A run's digests (:class:`Digests`) are
    spliced in as encoded once for the run, so that a class of n costs each child O(1) here, not O(n)."""
    digests = payload.get("denied_digests")
    if not isinstance(digests, Digests):
        return json.dumps(payload).encode()
    head = json.dumps({k: v for k, v in payload.items() if k != "denied_digests"})
    return (head[:-1] + (", " if len(head) > 2 else "") + '"denied_digests": ' + digests.json + "}").encode()


def path_digest(salt: str, path: str) -> str:
    """What a child is told of a path it must not open: a salted digest of its real path."""
    return salted_digest(salt, os.path.realpath(path))


def run_child(payload: dict, limits: ChildLimits, run: GradingRun, check_keys: Iterable[str],
              on_event: Callable[[Event], None] | None = None, staging: Path | None = None,
              on_start: Callable[[Callable[[], list[int]]], None] | None = None) -> ChildReport:
    """Run one child with ``payload`` (plus its limits, scratch dir and result pipe) under ``run``'s
    isolation, importing from ``staging`` (default: the run's); ``on_event`` sees each accepted event
    as it arrives (in this thread); ``on_start`` gets a function that lists the child's processes as the grader sees
    them, from the top (the benchmark's per-phase CPU reading; a forked child's show up once it joined its cgroup)."""
    scratch, uid = run.scratch()
    try:
        channel = Channel(check_keys, cells=len(payload["cells"]))
        return _run(payload, limits, run, staging or run.staging, scratch, uid, channel, on_event, on_start)
    finally:
        run.discard(scratch)


def _run(payload: dict, limits: ChildLimits, run: GradingRun, staging: Path, scratch: str, uid: int | None,
         channel: Channel, on_event: Callable[[Event], None] | None,
         on_start: Callable[[Callable[[], list[int]]], None] | None = None) -> ChildReport:
    read_fd, write_fd = os.pipe()
    out_r, out_w = os.pipe()
    plan: LaunchPlan | None = None
    group = None
    applied = f"{run.isolation.level} (audit hook only)" if not run.isolation.layers else run.isolation.level
    if uid is not None:
        applied += f", as uid {uid}"
    try:
        env = child_env(scratch)
        server = run.fork_server(payload.get("preload", ()), child_env(scratch_root(scratch)))
        if run.isolation.layers:
            hierarchy = cgroup.available()[0]
            group = cgroup.ChildCgroup.create(hierarchy, limits.memory_limit_mb * 2**20) if hierarchy else None
            cgroup_fd = group.procs_fd if group else None
            if server is not None and group is not None:
                # a forked child's descriptors get small fixed numbers (see autograder.isolation.forkserver)
                result_num, cgroup_fd = 3, 4
            spec = ChildSpec(sys.executable, CHILD_ENTRY, str(staging), scratch,
                             pass_fds=(write_fd,), env=env, hidden=run.hidden, uid=uid,
                             memory_mb=limits.memory_limit_mb, cgroup_fd=cgroup_fd, scratch_mb=SCRATCH_MB)
            proc: Any = None  # a subprocess.Popen, or a ForkedChild: as much of one as is used here
            if server is not None and group is not None:
                conf = confinement(spec, run.isolation)
                try:
                    proc = server.spawn(conf.policy, conf.readable, str(staging), scratch, SCRATCH_MB, uid, env,
                                        [(out_w, 1), (out_w, 2), (write_fd, result_num), (group.procs_fd, cgroup_fd)])  # type: ignore[list-item]  # 4
                except IsolationError:  # the server is gone: this child is launched on its own
                    spec = dataclasses.replace(spec, cgroup_fd=group.procs_fd)
                else:
                    payload = child_payload(payload, limits, run.hidden, staging, scratch, result_num)
                    plan = LaunchPlan([], (), env, scratch, run.isolation, conf.readable)
                    applied += f", reading only {', '.join(conf.readable)} (and the system's libraries), forked"
            if proc is None:
                payload = child_payload(payload, limits, run.hidden, staging, scratch, write_fd)
                plan = plan_child(spec, run.isolation)
                applied += f", reading only {', '.join(plan.readable)} (and the system's libraries)"
                proc = subprocess.Popen(**plan.popen_kwargs(), stdin=subprocess.PIPE, stdout=out_w, stderr=out_w)
        else:
            payload = child_payload(payload, limits, run.hidden, staging, scratch, write_fd)
            proc = subprocess.Popen(args=[sys.executable, "-I", "-c", _PLAIN_BOOT.format(root=str(staging))],
                                    pass_fds=(write_fd,), env=env, cwd=scratch, close_fds=True,
                                    start_new_session=True, stdin=subprocess.PIPE, stdout=out_w, stderr=out_w)
    except Exception as exc:  # noqa: BLE001 - cannot launch: the grader's fault, reported as such
        for fd in (read_fd, out_r):
            os.close(fd)
        if group is not None:
            group.remove()
        return ChildReport([], "not started", grader_error=f"could not start a grading process: {exc}",
                           isolation=applied)
    finally:
        os.close(write_fd)
        os.close(out_w)
        if group is not None:
            group.close_fd()
    if on_start is not None:
        on_start(group.pids if isinstance(proc, ForkedChild) else (lambda pid=proc.pid: [pid]))  # type: ignore[union-attr, misc]  # forked: grouped
    try:
        output, dropped, timed_out = _collect(proc, read_fd, out_r, payload_bytes(payload), channel, limits,
                                              on_event)
        if timed_out is None and not channel.stopped:  # the pipe closed: let the child's own exit status arrive
            try:
                proc.wait(timeout=AFTER_DONE_S)
            except subprocess.TimeoutExpired:
                pass
    finally:
        LaunchPlan.kill(proc)  # the whole process group: whatever the child started ends with it
        if group is not None:
            group.remove()  # and whatever is still charged to its cgroup
        os.close(read_fd)
        os.close(out_r)
    rc = plan.returncode(proc.returncode) if plan is not None else proc.returncode
    report = _report(channel, rc, output, dropped, timed_out is not None, limits, timed_out)
    report.isolation, report.returncode, report.timed_out = applied, rc, timed_out is not None
    return report


def _collect(proc: Any, fd: int, out_fd: int, payload: bytes, channel: Channel, limits: ChildLimits,
             on_event: Callable[[Event], None] | None) -> tuple[bytes, int, float | None]:
    """Feed the payload and read events and output until the result pipe closes, the child exits
    after ``done``, or the wall clock runs out: ``limits.wall_s`` times the machine's :func:`contention`
    when it runs out (an idle machine: ``wall_s`` itself). Returns (kept output, dropped bytes, the
    seconds waited when the wall clock ran out, else None)."""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ, "events")
    sel.register(out_fd, selectors.EVENT_READ, "output")
    stdin = proc.stdin.fileno()
    os.set_blocking(stdin, False)
    sel.register(stdin, selectors.EVENT_WRITE, "stdin")
    output, dropped = bytearray(), 0
    draining = [True]  # the output pipe is still open

    def take(chunk: bytes) -> None:
        nonlocal dropped
        keep = max(0, OUTPUT_KEEP - len(output))
        output.extend(chunk[:keep])
        dropped += len(chunk) - min(keep, len(chunk))

    def finish(timed_out: float | None) -> tuple[bytes, int, float | None]:
        # The child may have printed just before it finished: what the pipe still holds is read without
        # waiting (at most DRAIN_LIMIT bytes, so a descendant that keeps writing cannot hold the grader).
        if draining[0] and timed_out is None:
            os.set_blocking(out_fd, False)
            left = DRAIN_LIMIT
            while left > 0:
                try:
                    chunk = os.read(out_fd, min(1 << 16, left))
                except (BlockingIOError, OSError):
                    break
                if not chunk:
                    break
                take(chunk)
                left -= len(chunk)
        return bytes(output), dropped, timed_out
    began = time.monotonic()
    deadline = began + limits.wall_s
    done_at = None
    try:
        while True:
            now = time.monotonic()
            if done_at is not None and (proc.poll() is not None or now - done_at > AFTER_DONE_S):
                return finish(None)
            if now >= deadline:
                allowed = limits.wall_s * contention()  # a child waiting for a core is not asleep
                if now - began >= allowed:
                    return finish(now - began)
                deadline = began + allowed
            for key, _ in sel.select(timeout=min(deadline - now, 0.25)):
                if key.data == "stdin":
                    try:
                        payload = payload[os.write(stdin, payload[:1 << 16]):]
                    except (BrokenPipeError, BlockingIOError) as exc:
                        if isinstance(exc, BrokenPipeError):
                            payload = b""
                    if not payload:
                        sel.unregister(stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if key.data == "output":
                    if not chunk:
                        sel.unregister(out_fd)
                        draining[0] = False
                    take(chunk)
                    continue
                if not chunk:
                    channel.close()
                    return finish(None)
                for event in channel.feed(chunk):
                    if on_event is not None:
                        on_event(event)
                if channel.stopped:  # a broken rule, or too much: nothing more is read, and the child is ended
                    return finish(None)
                if channel.done and done_at is None:
                    done_at = time.monotonic()
    finally:
        sel.close()
        if not proc.stdin.closed:
            proc.stdin.close()


def _report(channel: Channel, rc: int | None, output: bytes, dropped: int, timed_out: bool,
            limits: ChildLimits, waited_s: float | None = None) -> ChildReport:
    waited = f"{limits.wall_s if waited_s is None else waited_s:.0f}"  # the seconds the message says
    report = ChildReport(list(channel.events), None, list(channel.tampering), None, output, dropped)
    if not report.summary.ready and not channel.tampered:
        # before "ready" no learner code has run: the child's last line is the grader's own
        why = output.decode("utf-8", "replace").strip().splitlines()
        last = f": {why[-1][:200]}" if why else ""
        if rc == EXIT_NOT_CONFINED:
            report.grader_error = f"isolation could not be set up ({why[-1][:200] if why else 'no message'})"
        elif timed_out:
            report.grader_error = f"the grading process did not start within {waited} s"
        else:
            report.grader_error = f"the grading process failed before running your code (exit code {rc}{last})"
        report.stopped = "not started"
        return report
    if channel.too_large:
        report.stopped = messages.STOP_TOO_LARGE
    elif channel.tampered:  # ended at its first broken rule: its exit status says nothing more
        report.stopped = messages.STOP_TAMPERED
    elif timed_out:
        report.stopped = messages.STOP_WAITED.format(s=waited)
    elif channel.done and rc in (0, -signal.SIGKILL) and not channel.tampered:
        return report
    elif rc is not None and rc < 0:
        sig = signal_name(rc)
        explained = {"SIGXCPU": messages.WHY_XCPU.format(s=f"{limits.cpu_s:.0f}"), "SIGKILL": messages.WHY_KILL,
                     "SIGXFSZ": messages.WHY_XFSZ, "SIGSEGV": messages.WHY_SEGV}.get(sig)  # type: ignore[arg-type]  # rc < 0: named
        # a signal is named only when it explains something: learner code can send itself any other
        report.stopped = messages.STOP_SIGNAL_WHY.format(sig=sig, why=explained) if explained is not None else \
            messages.STOP_SIGNAL_OTHER
    else:
        report.stopped = messages.STOP_EXIT  # without the code: learner code chooses it
    return report


def describe(report: ChildReport, what: str) -> str:
    """Lines for a grader's log about one child (``what`` names it): the isolation applied, how it
    ended, and its kept output. Control characters in the output are shown escaped, so that a
    learner's output cannot rewrite the grader's terminal."""
    if report.returncode is not None:
        ended = f"exit status {report.returncode}" + (f" ({signal_name(report.returncode)})"
                                                      if report.returncode < 0 else "")
    else:
        ended = "never started" if report.stopped == "not started" else "no exit status"
    how = [ended, "timed out" if report.timed_out else "",
           f"reached {report.reached or 'nothing'}", f"stopped: {text(report.stopped, 'en')}" if report.stopped else "",
           f"tampering: {'; '.join(text(t, 'en') for t in report.tampering)}" if report.tampering else "",
           f"the course's {', '.join(report.summary.course_versions)} used" if report.summary.course_versions else "",
           f"grader error: {report.grader_error}" if report.grader_error else ""]
    lines = [f"[child] {what}", f"  isolation: {report.isolation or 'unknown'}",
             f"  ended: {', '.join(h for h in how if h)}"]
    size = len(report.output) + report.output_dropped
    if not size:
        lines.append("  output: none")
    else:
        kept = f"{len(report.output)} bytes" + (f", {report.output_dropped} more dropped" if report.output_dropped else "")
        lines.append(f"  output ({kept}):")
        lines += ["  | " + _printable(line) for line in report.output.decode("utf-8", "replace").splitlines()]
    return "\n".join(lines)


def _printable(line: str) -> str:
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in line)

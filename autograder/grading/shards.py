"""Grading a class in several grader processes, so that a machine with many cores keeps them busy.

One grader process supervises its children from threads that share one interpreter lock: per
submission it does work of its own on one core (reading the notebook, starting and supervising its
children, composing the verdicts), which no number of cores runs faster. The children of the
cheapest stage's submission need about ten times that CPU (``benchmarks/bench_grading.py`` measures
both; docs/performance.md), so one process keeps about ten cores busy and a class on 64 cores
would wait on it. :func:`grade_in_shards` splits the class into :func:`shard_count` parts, each graded
by a process of its own (:func:`main`, running :func:`~autograder.grading.grade.grade_paths` on its
part), and gathers their results as one run would give them.

Invariants: every submission gets exactly one result, in the order of the files given (a part whose
process ended without its results reports each of its submissions as the grader's fault); each part's
children are hidden every file of the class, not only their part's; the results come back on a pipe
of the part's own that no process it starts inherits (its children cannot write there); closing a
part's stdin (``stop``, or this process ending) starts no further child there.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from autograder.core.results import SubmissionResult
from autograder.isolation.levels import IN_PROCESS, Isolation

#: Cores one grader process keeps busy on the lightest stage (its own work is a tenth of its children's).
CORES_PER_GRADER = 8
#: Fewer submissions than this per process, and a process's start (its imports, its fork servers) costs
#: more than it saves.
MIN_SUBMISSIONS_PER_GRADER = 16
#: ``PCW_GRADERS=N`` grades in N processes whatever the cores (1: always in this one).
GRADERS_ENV = "PCW_GRADERS"
SHARD_ENV = "PCW_GRADER_SHARD"  # set in a part's process: it grades its part itself
_ROOT = str(Path(__file__).resolve().parents[2])
BOOT = f"import sys; sys.path.insert(0, {_ROOT!r}); from autograder.grading.shards import main; main()"


def shard_count(submissions: int, cores: int) -> int:
    """How many grader processes grade ``submissions`` on ``cores``: one per :data:`CORES_PER_GRADER`
    cores, at most one per :data:`MIN_SUBMISSIONS_PER_GRADER` submissions; ``PCW_GRADERS`` overrides;
    always 1 inside a part's own process."""
    if os.environ.get(SHARD_ENV) == "1":
        return 1
    forced = os.environ.get(GRADERS_ENV, "").strip()
    if forced.isdigit() and int(forced) > 0:
        return max(1, min(int(forced), submissions))
    return max(1, min(math.ceil(cores / CORES_PER_GRADER), submissions // MIN_SUBMISSIONS_PER_GRADER))


def grade_in_shards(files: list[Path], parts: int, *, workers: int, iso: Isolation, hidden: Iterable[str | os.PathLike],
                    lang: str | None, grading: str | None, feedback: str | None,
                    on_done: Callable[[SubmissionResult], None] | None,
                    on_todo: Callable[[], None] | None,
                    stop: threading.Event | None,
                    pins: dict[str, str] | None = None) -> list[SubmissionResult]:
    """Grade ``files`` in ``parts`` processes of ``workers`` children in all, as ``grade_paths`` would
    (``pins``: the stage a file was handed in for, by its path as given)."""
    groups = [list(range(i, len(files), parts)) for i in range(parts)]
    every = [*map(str, hidden), *(os.path.abspath(f) for f in files)]
    layers = list(iso.layers) or IN_PROCESS
    env = {**os.environ, SHARD_ENV: "1"}
    per_part = max(1, math.ceil(workers / parts))
    results: list[SubmissionResult | None] = [None] * len(files)
    callback = threading.Lock()  # the callers' callbacks, one at a time, as from one run
    procs: list[subprocess.Popen] = []

    def read(proc: subprocess.Popen, fd: int, indices: list[int]) -> None:
        by_path: dict[str, list[int]] = {}
        for i in indices:  # a file given twice is graded twice, as in one run
            by_path.setdefault(str(files[i]), []).append(i)
        with os.fdopen(fd, "r", encoding="utf-8") as lines:
            for line in lines:
                msg = json.loads(line)
                if "todo" in msg and on_todo is not None:
                    with callback:
                        on_todo()
                elif "done" in msg:
                    r = SubmissionResult.from_json(msg["done"], msg.get("seconds", 0.0))
                    waiting = by_path.get(r.path)
                    if waiting:
                        results[waiting.pop(0)] = r
                        if on_done is not None:
                            with callback:
                                on_done(r)
        proc.wait()

    readers = []
    for indices in groups:
        spec = {"paths": [str(files[i]) for i in indices], "workers": per_part, "layers": layers, "hidden": every,
                "lang": lang, "grading": grading, "feedback": feedback,
                "pins": {str(files[i]): (pins or {})[str(files[i])] for i in indices if str(files[i]) in (pins or {})}}
        r, w = os.pipe()
        try:
            proc = subprocess.Popen([sys.executable, "-c", BOOT, str(w)], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, pass_fds=(w,), env=env)
        except OSError:
            os.close(r)
            continue  # its submissions are reported below as the grader's fault
        finally:
            os.close(w)
        procs.append(proc)
        proc.stdin.write((json.dumps(spec) + "\n").encode())  # type: ignore[union-attr]  # stdin=PIPE
        proc.stdin.flush()  # type: ignore[union-attr]  # stdin stays open: its end is this part's stop
        t = threading.Thread(target=read, args=(proc, r, indices), name="pcw-grader-part", daemon=True)
        t.start()
        readers.append(t)

    def watch() -> None:
        stop.wait()  # type: ignore[union-attr]  # started only with a stop
        for proc in procs:
            _close(proc.stdin)

    if stop is not None:
        threading.Thread(target=watch, name="pcw-grader-parts-stop", daemon=True).start()
    for t in readers:
        t.join()
    for proc in procs:
        _close(proc.stdin)
    out = []
    for i, f in enumerate(files):
        res = results[i]
        if res is None:  # its part's process ended without it
            res = SubmissionResult.not_graded(str(f), "grader error: the grading process of its part of the class "
                                                      "ended without a result")
            if on_done is not None:
                on_done(res)
        out.append(res)
    return out


def _close(stream) -> None:
    try:
        stream.close()
    except OSError:
        pass


def main() -> None:
    """A part's process: grade the part its stdin's first line names, write each TODO done and each
    result as a line of JSON on the descriptor ``argv[1]``, start no child once stdin ends."""
    from autograder.grading.grade import grade_paths
    from autograder.isolation import levels

    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)  # nothing this process starts may write here
    out = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
    spec = json.loads(sys.stdin.readline())
    stop = threading.Event()

    def watch() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch, name="pcw-grader-part-stop", daemon=True).start()
    lock = threading.Lock()

    def emit(msg: dict) -> None:
        with lock:
            out.write(json.dumps(msg) + "\n")

    grade_paths(spec["paths"], workers=spec["workers"], iso=levels.select(spec["layers"]), hidden=spec["hidden"],
                lang=spec["lang"], grading=spec["grading"], feedback=spec["feedback"], stop=stop,
                stage=lambda f: spec["pins"].get(str(f)),
                on_todo=lambda: emit({"todo": 1}),
                on_done=lambda r: emit({"done": r.to_json(), "seconds": r.seconds}))
    out.close()

"""Scheduling a batch of jobs in groups (a submission's TODOs) on a pool of worker threads.

The first job of each group runs alone; the rest join the pool as soon as that job says the work
they share is behind it (for grading: the learner's cells ran to their end), or, when the first
job failed in that shared part, they get its verdict without running at all. So a submission that
hangs at cell level costs one time limit, not one per TODO, and other groups keep every worker. A
group's first job starts only when fewer jobs than workers are waiting or running, so a started
group's jobs go first and groups finish about in the order given.

Invariants: every job gets exactly one result (``work``'s, ``shortcut``'s, or ``failed``'s when
``work`` raised or the job could not start: stopped, or the interpreter ending); ``on_result`` sees
each result once, from a worker thread; :func:`run_batch` returns after every result is in.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from autograder.isolation.load import available_cores

J = TypeVar("J")
R = TypeVar("R")
Gate = Callable[[], object]  # what a gate returns is not used


class _Group(Generic[J]):
    def __init__(self, jobs: Sequence[J]) -> None:
        self.jobs = list(jobs)
        self.released = False
        self.lock = threading.Lock()


class GradingStopped(Exception):
    """A job left out because its batch was stopped (nobody will read its result)."""


def run_batch(groups: Sequence[Sequence[J]], *, work: Callable[[J, Gate | None], R],
              shared_failure: Callable[[R], bool], shortcut: Callable[[R, J], R],
              failed: Callable[[J, Exception], R], on_result: Callable[[int, int, R], None],
              workers: int, stop: threading.Event | None = None) -> list[list[R]]:
    """Run every job; ``work(job, gate)`` calls ``gate()`` (first jobs only) once the shared part is
    done; ``shared_failure(first_result)`` says that the first job failed in the shared part. Once
    ``stop`` is set, a job not yet started is not run: its result is ``failed(job, GradingStopped())``
    (jobs already running finish)."""
    gs = [_Group(g) for g in groups]
    results: list[list[R | None]] = [[None] * len(g.jobs) for g in gs]
    left = sum(len(g.jobs) for g in gs)
    lock, finished = threading.Lock(), threading.Event()
    if left == 0:
        return []

    def record(gi: int, ji: int, res: R) -> None:
        nonlocal left
        with lock:
            results[gi][ji] = res
            left -= 1
            last = left == 0
        try:
            on_result(gi, ji, res)
        except Exception:  # noqa: BLE001 - the caller's hook (its own pool refusing work as the interpreter
            pass  # ends): raised here, it would unwind a release and leave the group's other jobs without a result
        finally:
            if last:
                finished.set()

    # Groups start one at a time, as workers run out of other work: a started group's jobs go ahead of
    # a new group's first job, so submissions finish roughly in order (a caller answering per submission,
    # nbgrader's batch, gets its first answers early) instead of all at the end.
    in_flight = 0     # jobs submitted and not yet done
    next_group = 0    # the next group whose first job is not submitted yet
    width = max(1, workers)

    def stopped_group(gi: int) -> None:
        gs[gi].released = True
        for ji, job in enumerate(gs[gi].jobs):
            record(gi, ji, failed(job, GradingStopped("grading stopped: the program is ending")))

    def submit(fn, *args) -> bool:
        nonlocal in_flight
        with lock:
            in_flight += 1
        try:
            pool.submit(fn, *args)
            return True
        except RuntimeError:  # the interpreter is ending (its main thread is done): no new job starts
            with lock:
                in_flight -= 1
            return False

    def feed() -> None:
        """Start the next groups' first jobs while fewer jobs than workers are waiting or running."""
        nonlocal next_group
        while True:
            with lock:
                if next_group >= len(gs) or in_flight >= width:
                    return
                gi, next_group = next_group, next_group + 1
            if not submit(first, gi):
                stopped_group(gi)

    def run_one(gi: int, ji: int, gate: Gate | None) -> R:
        job = gs[gi].jobs[ji]
        try:
            if stop is not None and stop.is_set():
                raise GradingStopped("grading was stopped before this job started")
            res = work(job, gate)
        except Exception as exc:  # a grader bug must not sink the batch: it becomes this job's result
            res = failed(job, exc)
        record(gi, ji, res)
        return res

    def done_one() -> None:
        nonlocal in_flight
        with lock:
            in_flight -= 1
        feed()

    def later(gi: int, ji: int) -> None:
        try:
            run_one(gi, ji, None)
        finally:
            done_one()

    with ThreadPoolExecutor(max_workers=width) as pool:
        def release(gi: int) -> bool:
            g = gs[gi]
            with g.lock:
                if g.released:
                    return False
                g.released = True
            for ji in range(1, len(g.jobs)):
                if not submit(later, gi, ji):
                    record(gi, ji, failed(g.jobs[ji], GradingStopped("grading stopped: the program is ending")))
            return True

        def first(gi: int) -> None:
            try:
                res = run_one(gi, 0, lambda: release(gi))
                g = gs[gi]
                with g.lock:
                    open_ = not g.released
                    if open_ and shared_failure(res):
                        g.released = True
                        for ji in range(1, len(g.jobs)):
                            record(gi, ji, shortcut(res, g.jobs[ji]))
                        return
                release(gi)
            finally:
                done_one()

        feed()
        finished.wait()
    return results  # type: ignore[return-value]


def default_workers() -> int:
    """How many children a grader runs at once by default: one more than :func:`available_cores`.

    A child spends part of its life waiting rather than computing (its launch or fork, the pipes to the
    grader, its exit being reported), and so does the grader thread that supervises it: one child more
    than there are cores keeps every core busy through those waits. No verdict depends on it: a child's
    time limit is CPU time, and its wall-clock bound (three times that) holds with a core shared by two."""
    return available_cores() + 1

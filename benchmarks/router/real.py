"""One run of SGLang's router over a trace: start mock workers, start the router in front of them,
replay the trace as text, and read back from the workers which request each one served.

The workers and the replay share one asyncio event loop on a thread of its own, so that the router's
start (a blocking wait on a child process) never stops the workers answering its probes. Everything
started here is stopped here, whatever happens in between.
"""
from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from benchmarks.router.mock_worker import Engine, Job, MockWorker, start_fleet
from benchmarks.router.replay import Outgoing, Sent, replay
from benchmarks.router.sglang import RouterProcess, RouterSettings
from benchmarks.router.text import TraceText

T = TypeVar("T")


class TracedRequest(Protocol):
    """What the replay needs of a trace request (``workbook.fleet.Request`` has it)."""

    @property
    def index(self) -> int: ...
    @property
    def arrival_ms(self) -> float: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def blocks(self) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class RealRun:
    """Where the real router sent a trace. Invariants: ``assignment[i]`` is the worker that served
    request ``i`` of the trace, or -1 where none did (then ``complete`` is false); ``per_worker`` counts
    the served requests by worker; ``late_s`` is the largest delay of a send behind its scaled arrival
    time (a busy machine shows here); ``unknown`` lists what the router asked that no worker knew."""

    replicas: int
    assignment: tuple[int, ...]
    per_worker: tuple[int, ...]
    failed: tuple[Sent, ...]
    wrong_text: int
    duplicates: int
    late_s: float
    wall_s: float
    time_scale: float
    unknown: tuple[str, ...]
    router_version: str

    @property
    def complete(self) -> bool:
        return all(w >= 0 for w in self.assignment) and not self.failed and not self.duplicates and not self.wrong_text


class LoopThread:
    """An asyncio event loop running on its own daemon thread until :meth:`close`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="router-bench-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


def rid(request: TracedRequest) -> str:
    return f"req-{request.index}"


def route_trace(requests: Sequence[TracedRequest], engines: Sequence[Engine], *, time_scale: float, text: TraceText,
                settings: RouterSettings | None = None, router_version: str = "", timeout_s: float = 600.0,
                log_dir: Path | None = None) -> RealRun:
    """Replay ``requests`` through a fresh router in front of a fresh mock worker per engine."""
    replicas = len(engines)
    jobs = {rid(r): Job(rid(r), tuple(r.blocks), r.input_tokens, text.length(r.input_tokens)) for r in requests}
    t0 = min(r.arrival_ms for r in requests)
    outgoing = [Outgoing(rid(r), (r.arrival_ms - t0) / 1000.0 * time_scale,
                         lambda r=r: text.request(r.blocks, r.input_tokens)) for r in requests]
    threads = LoopThread()
    workers: list[MockWorker] = []
    router: RouterProcess | None = None
    with tempfile.TemporaryDirectory(prefix="router-bench-") as tmp:
        log = (log_dir or Path(tmp)) / f"router-{replicas}.log"
        try:
            workers = threads.run(start_fleet(engines, jobs, time_scale), 30)
            router = RouterProcess([w.url for w in workers], settings or RouterSettings(), log)
            start = time.perf_counter()
            sent = threads.run(replay(router.port, outgoing, timeout_s=timeout_s), timeout_s + max(o.at_s for o in outgoing) + 60)
            wall = time.perf_counter() - start
        finally:
            if router is not None:
                router.stop()
            for w in workers:
                try:
                    threads.run(w.stop(), 10)
                except Exception:  # stopping is best effort: the loop's thread ends with the process
                    pass
            threads.close()
    served: dict[str, int] = {}
    duplicates = wrong = 0
    for w in workers:
        for a in w.arrivals:
            duplicates += a.rid in served
            wrong += not a.text_ok
            served[a.rid] = w.index
    assignment = tuple(served.get(rid(r), -1) for r in requests)
    counts = Counter(a for a in assignment if a >= 0)
    return RealRun(replicas, assignment, tuple(counts[i] for i in range(replicas)),
                   tuple(s for s in sent if s.status != 200), wrong, duplicates,
                   max((s.late_s for s in sent), default=0.0), wall, time_scale,
                   tuple(sorted({u for w in workers for u in w.unknown})), router_version)

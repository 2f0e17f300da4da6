"""Mock engine workers: small HTTP/1.1 servers on loopback that answer what SGLang's router asks of a worker
and serve its generate route like an engine would, slowly enough that the router's load signals mean
something, and record which request reached which worker.

What the router asks (sglang-router 0.3.2, seen by recording every request of a run): ``GET /health``
before it registers a worker and every health-check interval after, ``GET /server_info`` and
``GET /model_info`` once (an answer without ``model_path`` keeps it from looking for a tokenizer
anywhere), ``GET /get_load`` now and then, and ``POST /generate`` with the client's JSON body
(``text``, ``rid``, ``sampling_params``, ...); it also opens a connection with HTTP/2's preface (is
this a gRPC worker?), which a mock closes, as an HTTP/1.1 server would. Any other path is answered 404
and recorded, so that a newer router asking for something new shows in :attr:`MockWorker.unknown`
instead of being guessed at.

An engine, as far as a router can tell: each worker serves one prefill at a time, first come first
served, and a prefill takes the simulated time its :class:`Engine` gives (the benchmark's engine is a
replica of stage 9's fleet simulator, with its caches and cost model; :class:`LRUEngine` is a plain
one), scaled by ``time_scale`` so that a trace of an hour replays in seconds. The router sees a worker
holding its requests for as long as their prefills and their queue take, which is what its in-flight
counts measure.

All workers of a fleet run on one asyncio event loop (the replay's); every read waits at most
``idle_timeout_s`` and every body is at most ``max_body`` bytes, so no connection holds a worker open.
"""
from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from benchmarks.router.text import TRACE_BLOCK_TOKENS

#: Simulated milliseconds of a prefill computing ``computed`` tokens after ``cached`` reused ones.
ServiceMs = Callable[[int, int], float]


@dataclass(frozen=True)
class Job:
    """What a worker needs to know about a request it may receive. Invariants: ``blocks`` are the
    request's chained block ids in order; ``text_chars`` is the length of the text it is sent as."""

    rid: str
    blocks: tuple[int, ...]
    input_tokens: int
    text_chars: int


@dataclass(frozen=True)
class Arrival:
    """One generate request a worker served. Invariants: ``arrived_s <= started_s <= finished_s``
    (the event loop's clock); ``cached_tokens < job.input_tokens``; ``text_ok`` says the text had the
    length the job's trace request gives (a router that altered prompts would show here)."""

    worker: int
    rid: str
    arrived_s: float
    started_s: float
    finished_s: float
    cached_tokens: int
    text_ok: bool


class Engine(Protocol):
    """What serves a worker's prefills: ``serve(job)`` returns the simulated milliseconds of the job's
    prefill and the prompt tokens it reused, and leaves the job's blocks cached as an engine would."""

    def serve(self, job: Job) -> tuple[float, int]: ...


@dataclass
class LRUEngine:
    """A plain engine: one LRU cache of ``cache_blocks`` blocks; a prefill reuses the job's leading
    cached blocks (never its last token) and takes ``service_ms`` of the rest. Invariant: the cache
    holds at most ``cache_blocks`` blocks, the most recently served ones."""

    cache_blocks: int
    service_ms: ServiceMs
    _cache: OrderedDict[int, None] = field(default_factory=OrderedDict)

    def serve(self, job: Job) -> tuple[float, int]:
        n = 0
        while n < len(job.blocks) and job.blocks[n] in self._cache:
            n += 1
        for b in job.blocks:
            self._cache[b] = None
            self._cache.move_to_end(b)
        while len(self._cache) > self.cache_blocks:
            self._cache.popitem(last=False)
        cached = min(n * TRACE_BLOCK_TOKENS, job.input_tokens - 1)
        return self.service_ms(job.input_tokens - cached, cached), cached


@dataclass
class MockWorker:
    """One mock engine. Invariants: ``arrivals`` holds one record per generate request served, in the
    order they finished; ``unknown`` lists ``"METHOD path"`` of every request it had no answer for;
    ``_free_at`` is when its last queued prefill ends (its queue is first come first served)."""

    index: int
    jobs: Mapping[str, Job]
    engine: Engine
    time_scale: float
    idle_timeout_s: float = 300.0
    max_body: int = 64 << 20
    arrivals: list[Arrival] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    port: int = 0
    _free_at: float = 0.0
    _in_flight: int = 0
    _server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            # close_clients (3.13) would end the router's idle keep-alive connections; before it, they
            # end when the router does, or at the idle timeout
            if hasattr(self._server, "close_clients"):
                self._server.close_clients()
            await self._server.wait_closed()

    async def _generate(self, body: bytes) -> tuple[int, dict]:
        loop = asyncio.get_running_loop()
        arrived = loop.time()
        try:
            payload = json.loads(body)
            rid, text = payload["rid"], payload["text"]
        except (ValueError, KeyError, TypeError):
            return 400, {"error": "expected a JSON object with rid and text"}
        job = self.jobs.get(rid)
        if job is None:
            return 404, {"error": f"unknown rid {rid!r}"}
        ms, cached = self.engine.serve(job)
        start = max(arrived, self._free_at)
        self._free_at = start + ms / 1000.0 * self.time_scale
        self._in_flight += 1
        try:
            await asyncio.sleep(self._free_at - arrived)
        finally:
            self._in_flight -= 1
        finished = loop.time()
        self.arrivals.append(Arrival(self.index, rid, arrived, start, finished, cached,
                                     isinstance(text, str) and len(text) == job.text_chars))
        return 200, {"text": "", "meta_info": {"id": rid, "prompt_tokens": job.input_tokens,
                                               "cached_tokens": cached,
                                               "completion_tokens": 0, "finish_reason": {"type": "length"}}}

    def _answer(self, method: str, path: str) -> tuple[int, object]:
        path = path.split("?", 1)[0]
        if method == "GET" and path in ("/health", "/health_generate"):
            return 200, {"status": "ok"}
        if method == "GET" and path in ("/server_info", "/get_server_info", "/model_info", "/get_model_info"):
            return 200, {"is_generation": True}
        if method == "GET" and path == "/get_load":
            return 200, [{"dp_rank": 0, "num_reqs": self._in_flight, "num_waiting_reqs": max(0, self._in_flight - 1),
                          "num_tokens": 0}]
        self.unknown.append(f"{method} {path}")
        return 404, {"error": f"mock worker: no {method} {path}"}

    # -- HTTP/1.1 with keep-alive, as the router's client pools connections ------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_timeout_s)
                except (asyncio.IncompleteReadError, asyncio.TimeoutError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _version = (lines[0].split(" ") + ["", ""])[:3]
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                if method == "PRI":  # HTTP/2's connection preface: the router asking whether this is a gRPC worker
                    return
                body = await self._body(reader, headers)
                if body is None:
                    return
                if method == "POST" and path.split("?", 1)[0] == "/generate":
                    status, answer = await self._generate(body)
                else:
                    status, answer = self._answer(method, path)
                data = json.dumps(answer).encode()
                close = headers.get("connection", "").lower() == "close"
                writer.write(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(data)}\r\nConnection: {'close' if close else 'keep-alive'}\r\n\r\n"
                             .encode() + data)
                await writer.drain()
                if close:
                    return
        except ConnectionError:
            return
        finally:
            writer.close()

    async def _body(self, reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes | None:
        """The request's body (Content-Length or chunked), ``None`` where it is cut short or too large."""
        try:
            if headers.get("transfer-encoding", "").lower() == "chunked":
                parts, total = [], 0
                while True:
                    size = int((await asyncio.wait_for(reader.readuntil(b"\r\n"), self.idle_timeout_s)).split(b";")[0], 16)
                    total += size
                    if total > self.max_body:
                        return None
                    chunk = await asyncio.wait_for(reader.readexactly(size + 2), self.idle_timeout_s)
                    if size == 0:
                        return b"".join(parts)
                    parts.append(chunk[:-2])
            length = int(headers.get("content-length", "0"))
            if length > self.max_body:
                return None
            return await asyncio.wait_for(reader.readexactly(length), self.idle_timeout_s) if length else b""
        except (ValueError, asyncio.IncompleteReadError, asyncio.TimeoutError, asyncio.LimitOverrunError, ConnectionError):
            return None


async def start_fleet(engines: Sequence[Engine], jobs: Mapping[str, Job], time_scale: float) -> list[MockWorker]:
    """A mock worker per engine, on free loopback ports, listening."""
    workers = [MockWorker(i, jobs, e, time_scale) for i, e in enumerate(engines)]
    for w in workers:
        await w.start()
    return workers

"""Replay a trace through a router over HTTP: each request is sent at its arrival time (scaled by
``time_scale``) as ``POST /generate`` with its text and its id, without waiting for earlier answers,
the way clients of a serving fleet arrive.

Bounded everywhere: at most ``max_open`` requests are open at once (a later one waits for a slot, and
its lateness is recorded), and every connect and read gives up after ``timeout_s``.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Outgoing:
    """A request to send. Invariants: ``at_s >= 0`` is its arrival in real seconds after the replay
    starts (already scaled); ``text`` builds its prompt when it is sent (texts are not held in memory)."""

    rid: str
    at_s: float
    text: Callable[[], str]


@dataclass(frozen=True)
class Sent:
    """What became of one request. Invariants: ``status`` is the router's HTTP status, or 0 where no
    answer came (``error`` says why); ``late_s >= 0`` is how long after its arrival time it was sent."""

    rid: str
    status: int
    late_s: float
    seconds: float
    error: str = ""


def body(rid: str, text: str) -> bytes:
    """The generate request an SGLang client sends: the prompt as text, one new token, our id as ``rid``."""
    return json.dumps({"text": text, "rid": rid, "sampling_params": {"max_new_tokens": 1, "temperature": 0}}).encode()


class Connections:
    """Keep-alive connections to the router on loopback, reused as a client library's pool would (a new
    TCP connection per request would cost the router and this process more than the routing itself).
    Invariant: ``idle`` holds connections whose last answer was read whole, none twice."""

    def __init__(self, port: int, timeout_s: float) -> None:
        self.port, self.timeout_s = port, timeout_s
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self, path: str, data: bytes) -> int:
        """The HTTP status of one POST; a pooled connection the router closed meanwhile is replaced
        once, before anything was read from it (so a request is never sent twice after an answer began)."""
        if self.idle:
            reader, writer = self.idle.pop()
            try:
                return await self._exchange(reader, writer, path, data)
            except _Unused:
                pass
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", self.port), self.timeout_s)
        try:
            return await self._exchange(reader, writer, path, data)
        except _Unused as e:
            raise ConnectionError("the router closed a new connection without answering") from e

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, data: bytes) -> int:
        keep = False
        try:
            writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
            await writer.drain()
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.timeout_s)
            except (asyncio.IncompleteReadError, ConnectionError) as e:
                if isinstance(e, asyncio.IncompleteReadError) and e.partial:
                    raise
                raise _Unused from e
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split()
            status = int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 0
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
            if "content-length" in headers:
                await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), self.timeout_s)
                keep = headers.get("connection", "").lower() != "close"
            else:  # no length: the body ends when the router closes the connection
                await asyncio.wait_for(reader.read(), self.timeout_s)
            return status
        finally:
            if keep:
                self.idle.append((reader, writer))
            else:
                writer.close()

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


class _Unused(Exception):
    """The router closed a connection before answering anything on it."""


async def replay(port: int, requests: Sequence[Outgoing], *, timeout_s: float = 120.0, max_open: int = 512) -> list[Sent]:
    """Send every request to the router on loopback ``port``; one :class:`Sent` per request, in order."""
    loop = asyncio.get_running_loop()
    slots = asyncio.Semaphore(max_open)
    pool = Connections(port, timeout_s)
    start = loop.time()

    async def one(r: Outgoing) -> Sent:
        await asyncio.sleep(max(0.0, start + r.at_s - loop.time()))
        async with slots:
            sent = loop.time()
            late = max(0.0, sent - start - r.at_s)
            try:
                status = await pool.post("/generate", body(r.rid, r.text()))
                return Sent(r.rid, status, late, loop.time() - sent)
            except (OSError, asyncio.TimeoutError, ValueError) as e:
                return Sent(r.rid, 0, late, loop.time() - sent, f"{type(e).__name__}: {e}")

    try:
        return list(await asyncio.gather(*(one(r) for r in requests)))
    finally:
        pool.close()

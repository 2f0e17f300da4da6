"""Replay a trace through a router over HTTP: each request is sent at its arrival time (scaled by
``time_scale``) as ``POST /generate`` with its text and its id, without waiting for earlier answers,
the way clients of a serving fleet arrive.

Bounded everywhere: at most ``max_open`` requests are open at once (a later one waits for a slot, and
its lateness is recorded), each request gives up after ``timeout_s``, and reads never wait longer.
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


async def _post(port: int, path: str, data: bytes, timeout_s: float) -> int:
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout_s)
    try:
        writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), timeout_s)
        await asyncio.wait_for(reader.read(), timeout_s)  # the rest, until the router closes the connection
        parts = status_line.split()
        return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 0
    finally:
        writer.close()


async def replay(port: int, requests: Sequence[Outgoing], *, timeout_s: float = 120.0, max_open: int = 512) -> list[Sent]:
    """Send every request to the router on loopback ``port``; one :class:`Sent` per request, in order."""
    loop = asyncio.get_running_loop()
    slots = asyncio.Semaphore(max_open)
    start = loop.time()

    async def one(r: Outgoing) -> Sent:
        await asyncio.sleep(max(0.0, start + r.at_s - loop.time()))
        async with slots:
            sent = loop.time()
            late = max(0.0, sent - start - r.at_s)
            try:
                status = await _post(port, "/generate", body(r.rid, r.text()), timeout_s)
                return Sent(r.rid, status, late, loop.time() - sent)
            except (OSError, asyncio.TimeoutError, ValueError) as e:
                return Sent(r.rid, 0, late, loop.time() - sent, f"{type(e).__name__}: {e}")

    return list(await asyncio.gather(*(one(r) for r in requests)))

"""The real-router benchmark (benchmarks/bench_router.py): the trace as text keeps equal prefixes equal,
the mock workers answer like an engine and record who got what, and (slow) SGLang's router routes the
quick replay to live workers, every request once, with every policy in the printed comparison."""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys

import pytest

from benchmarks import report
from benchmarks.router import sglang
from benchmarks.router.mock_worker import Job, LRUEngine, MockWorker
from benchmarks.router.replay import Outgoing, replay
from benchmarks.router.text import TraceText
from tests.support.machine import scaled

ROOT = report.ROOT


def test_equal_block_prefixes_give_equal_text_prefixes_and_different_blocks_differ():
    t = TraceText(seed=3, chars_per_block=64)
    a = t.request((1, 2, 3, 4), 4 * 512)
    b = t.request((1, 2, 3, 9), 3 * 512 + 100)
    c = t.request((5, 2, 3, 4), 4 * 512)
    assert len(a) == 4 * 64 and len(b) == 3 * 64 + 13  # 100 tokens of 512 keep ceil(100 * 64 / 512) chars
    assert a[:3 * 64] == b[:3 * 64] and a[3 * 64:3 * 64 + 13] != b[3 * 64:]
    assert a[:64] != c[:64] and a[64:] == c[64:]  # the text of an id does not depend on what precedes it
    blocks = {t.block(i) for i in range(2000)}
    assert len(blocks) == 2000 and all(len(s) == 64 for s in blocks)
    assert len({s[:2] for s in blocks}) > 1000  # spread over the alphabet: a match between blocks ends at once
    assert TraceText(seed=3, chars_per_block=64).block(7) == t.block(7) != TraceText(seed=4, chars_per_block=64).block(7)


def test_a_text_is_never_longer_than_its_blocks():
    t = TraceText(chars_per_block=8)
    assert t.request((1,), 1) == t.block(1)[:1] and t.length(512) == 8
    try:
        t.request((1,), 513)
    except ValueError:
        pass
    else:
        raise AssertionError("513 tokens in one block of 512 must be refused")


async def _talk(worker: MockWorker, *raw: bytes) -> list[bytes]:
    """Send raw HTTP/1.1 requests on one keep-alive connection; the answers' bodies."""
    reader, writer = await asyncio.open_connection("127.0.0.1", worker.port)
    out = []
    try:
        for r in raw:
            writer.write(r)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            length = int(next(ln.split(b":")[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")))
            out.append(head.split(b"\r\n")[0] + b" " + await asyncio.wait_for(reader.readexactly(length), 5))
    finally:
        writer.close()
    return out


def _post(path: str, payload: dict) -> bytes:
    data = json.dumps(payload).encode()
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data


def test_a_mock_worker_answers_the_probes_and_records_each_request_with_its_cached_prefix():
    text = TraceText(chars_per_block=16)
    jobs = {"a": Job("a", (1, 2, 3), 3 * 512, text.length(3 * 512)), "b": Job("b", (1, 2, 7), 2 * 512 + 1, text.length(2 * 512 + 1))}

    async def scenario() -> tuple[MockWorker, list[bytes]]:
        w = MockWorker(index=5, jobs=jobs, engine=LRUEngine(100, lambda computed, cached: 0.0), time_scale=1.0)
        await w.start()
        try:
            answers = await _talk(w, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /model_info HTTP/1.1\r\nHost: x\r\n\r\n",
                                  _post("/generate", {"rid": "a", "text": text.request((1, 2, 3), 3 * 512)}),
                                  _post("/generate", {"rid": "b", "text": text.request((1, 2, 7), 2 * 512 + 1)}),
                                  _post("/generate", {"rid": "b", "text": "cut short"}),
                                  _post("/generate", {"rid": "nobody", "text": ""}),
                                  b"GET /flush_cache HTTP/1.1\r\nHost: x\r\n\r\n")
        finally:
            await w.stop()
        return w, answers

    w, answers = asyncio.run(scenario())
    assert [a.split(b" ")[1] for a in answers] == [b"200", b"200", b"200", b"200", b"200", b"404", b"404"]
    assert [(a.worker, a.rid, a.cached_tokens, a.text_ok) for a in w.arrivals] == [
        (5, "a", 0, True), (5, "b", 2 * 512, True), (5, "b", 2 * 512, False)]  # b shares a's first two blocks; never its last token
    assert w.unknown == ["GET /flush_cache"] and all(a.arrived_s <= a.started_s <= a.finished_s for a in w.arrivals)


def test_a_mock_worker_serves_one_prefill_at_a_time_first_come_first_served():
    """Two requests sent together: the second waits for the first's prefill, then takes its own."""
    jobs = {r: Job(r, (i,), 512, 512) for i, r in enumerate("xy")}

    async def scenario() -> MockWorker:
        w = MockWorker(index=0, jobs=jobs, engine=LRUEngine(10, lambda computed, cached: 200.0), time_scale=0.25)  # 0.05 s each
        await w.start()
        try:
            sent = await replay(w.port, [Outgoing(r, 0.0, lambda: "a" * 512) for r in "xy"], timeout_s=10)
        finally:
            await w.stop()
        assert [s.status for s in sent] == [200, 200]
        return w

    w = asyncio.run(scenario())
    first, second = sorted(w.arrivals, key=lambda a: a.started_s)
    # the event loop's clock, read for the order of events, never against a deadline: the second starts
    # once the first's 0.05 s are over and is answered no sooner than its own 0.05 s after that
    assert second.started_s >= first.started_s + 0.05 - 1e-9
    assert second.finished_s >= second.started_s + 0.05 - 1e-3


def test_without_the_router_the_page_says_why_in_both_languages():
    bench = next(b for b in report.BENCHES if b.needs == "router")
    outcome = report.run(bench, quick=True, timeout=None, cuda=False, router=False)
    assert outcome.skipped == "no_router" and not outcome.output
    facts = [("cores", "2/2"), ("CPU", "cpu"), ("memory", "1 GiB"), ("OS", "os"), ("Python", "3.11.7"),
             ("torch", "2"), ("nbgrader", "0"), ("load", "0.00"), ("commit", "abc")]
    for lang in ("en", "zh"):
        text = report.page(lang, [outcome], facts, "2026-01-01 00:00", "python -m benchmarks.report", True, None)
        assert f"*{report.WORDS[lang]['skipped']}: {report.WORDS[lang]['no_router']}.*" in text


@pytest.mark.slow  # starts SGLang's router and mock workers, replays 600 requests end to end
def test_the_quick_benchmark_routes_every_request_through_the_real_router_to_a_live_worker():
    ok, why = sglang.available()
    if not ok:
        pytest.skip(f"SGLang's router cannot run here: {why}")
    from benchmarks import bench_router  # stage 9's routers: imported by this test only
    p = subprocess.run([sys.executable, "benchmarks/bench_router.py", "--quick"], cwd=ROOT, capture_output=True, text=True,
                       timeout=scaled(300))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout
    reals = [f"{bench_router.REAL} #{k}" for k in (1, 2)]  # --quick runs the real router twice
    for name in reals:
        assert f"{name} at 4 replicas: replay" in out, out
    assert out.count("every request served once by a live worker") == 2, out
    rows = {m.group(2).strip(): m for m in re.finditer(r"^\s+(\d+)  (.{22}) +([\d.]+)% .*  ([\d ]+)$", out, re.M)}
    assert set(rows) == {*reals, *bench_router.STAGE_POLICIES}, out
    for name, m in rows.items():
        counts = [int(c) for c in m.group(4).split()]
        assert m.group(1) == "4" and len(counts) == 4 and sum(counts) == 600, (name, m.group(0))
    for name in reals:
        counts = [int(c) for c in rows[name].group(4).split()]
        assert sum(1 for c in counts if c > 0) >= 2, f"the router sent everything to one worker: {counts}"
    assert "What it shows:" in out and "At 4 replicas SGLang's router (median run)" in out and "Over its 2 runs" in out


def test_the_index_benchmark_fills_to_size_without_changing_a_route():
    """The filler blocks of bench_kv_index.py are blocks no routed request names: the choices are the
    same at every size, so the benchmark times the same work on a larger index."""
    from benchmarks import bench_kv_index
    from workbook.fleet import load_requests

    requests = load_requests("conversation", limit=20)
    small, large = bench_kv_index.build_index(requests, 1_000), bench_kv_index.build_index(requests, 5_000)
    assert (len(small), len(large)) == (1_000, 5_000)
    assert bench_kv_index.route_all(small, requests, 1) == bench_kv_index.route_all(large, requests, 1)


def _run(policy: str, ttfts: list[float], cached: int, work: tuple[float, ...]):
    from workbook.fleet import FleetRun, Served

    served = tuple(Served(i, i % len(work), 0, 0, False, cached, 1000, 0.0, t) for i, t in enumerate(ttfts))
    return FleetRun(policy, len(work), served, work, 0)


def test_the_verdict_is_computed_from_the_runs_whichever_way_they_fall():
    from benchmarks import bench_router

    others = [_run(name, [100.0] * 10, 200, (1.0, 1.0)) for name in bench_router.STAGE_POLICIES]
    slower = _run(f"{bench_router.REAL} #1", [300.0] * 10, 400, (3.0, 1.0))
    faster = _run(f"{bench_router.REAL} #2", [50.0] * 10, 100, (1.0, 1.0))
    lose = bench_router.verdict([slower], others)
    assert "reuses more prompt KV" in lose and "higher TTFT p90 (300 vs 100 ms, x3.00)" in lose and "less even load" in lose
    assert "ranks 6 of 6" in lose and "weighs load only once" in lose and "above pure affinity's (20.0%" in lose
    win = bench_router.verdict([faster], others)
    assert "reuses less prompt KV" in win and "lower TTFT p90 (50 vs 100 ms" in win and "ranks 1 of 6" in win
    assert "does better than the stage's reference" in win
    both = bench_router.verdict([slower, faster], others)  # the median of two is the lower one; the spread shows both
    assert "lower TTFT p90" in both and "spans 50-300 ms" in both and "1 of 2 runs have a higher p90" in both

"""The stage-9 reference and the fleet simulator against brute-force models (Hypothesis) and their invariants."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions.s09_fleet_routing import Affinity, ApproximateRouter, KVIndex, PrefixRouter, choose_replica, fetch_or_recompute, overlap_scores
from workbook.fleet import FLEET_COST, EventStream, KVEvent, LeastLoaded, Replica, Request, RoundRobin, percentile, replay_assignment, simulate


def small_trace(seed: int, n: int = 120) -> list[Request]:
    """Chained prompts from a few conversations, arriving every 40-400 ms."""
    rng = random.Random(seed)
    out, t = [], 0.0
    for i in range(n):
        t += rng.uniform(40, 400)
        root = rng.randrange(6)
        blocks = tuple(1000 * root + j for j in range(rng.randint(1, 16)))
        out.append(Request(i, t, 512 * len(blocks) - rng.randrange(512), 10, blocks))
    return out


def truth_of(fleet: list[Replica]) -> dict[int, dict[int, str]]:
    out: dict[int, dict[int, str]] = {}
    for rep in fleet:
        for tier, blocks in (("gpu", rep.gpu), ("host", rep.host)):
            for b in blocks:
                out.setdefault(b, {})[rep.rid] = tier
    return out


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), dup=st.floats(0, 0.5))
def test_s09_index_matches_the_replicas_whatever_the_delivery_order(seed, dup):
    rng = random.Random(seed)
    fleet = [Replica(r, gpu_blocks=5, host_blocks=rng.choice((0, 4))) for r in range(3)]
    events = []
    for i in range(60):
        root = rng.randrange(5)
        events += fleet[rng.randrange(3)].admit([100 * root + j for j in range(rng.randint(1, 6))], float(i))
    delivered = events + [e for e in events if rng.random() < dup]
    rng.shuffle(delivered)
    index = KVIndex()
    applied = sum(index.apply(e) for e in delivered)
    truth = truth_of(fleet)
    assert applied <= len(events)
    assert len(index) == len(truth)
    for b in {e.block for e in events}:
        assert index.holders(b) == truth.get(b, {})


def test_s09_replica_events_keep_capacity_and_sequence():
    rep = Replica(0, gpu_blocks=3, host_blocks=2)
    events = rep.admit([1, 2, 3, 4, 5], 0.0) + rep.admit([9], 1.0)
    assert [e.seq for e in events] == list(range(len(events)))
    assert len(rep.gpu) <= 3 and len(rep.host) <= 2 and not set(rep.gpu) & set(rep.host)
    assert list(rep.gpu) == [2, 1, 9]  # the prompt's head is the most recent: its tail went first
    assert list(rep.host) == [4, 3]  # GPU evictions moved to the host tier, whose LRU dropped 5
    assert rep.held([1, 2, 3]) == (2, 1) and rep.held([1, 2, 4, 5]) == (2, 1) and rep.held([5]) == (0, 0)


@settings(max_examples=50, deadline=None)
@given(held=st.lists(st.dictionaries(st.integers(0, 7), st.sampled_from(["gpu", "host"])), min_size=1, max_size=5),
       n=st.integers(0, 8))
def test_s09_overlap_matches_brute_force(held, n):
    index = KVIndex()
    seq = 0
    for r, blocks in enumerate(held):
        for b, tier in blocks.items():
            index.apply(KVEvent("stored", r, tier, b, seq))
            seq += 1
    blocks = list(range(n))
    for r, (gpu, host) in enumerate(overlap_scores(index, blocks, len(held))):
        mine = held[r]
        g = next((i for i, b in enumerate(blocks) if mine.get(b) != "gpu"), len(blocks))
        h = next((i for i, b in enumerate(blocks[g:]) if mine.get(b) != "host"), len(blocks) - g)
        assert (gpu, host) == (g, h)


def test_s09_router_is_the_argmin_of_predicted_ttft():
    rng = random.Random(3)
    for _ in range(50):
        req = Request(0, 0.0, 512 * 20, 1, tuple(range(20)))
        scores = [(g, rng.randint(0, 20 - g)) for g in (rng.randint(0, 20) for _ in range(6))]
        queue = [rng.uniform(0, 2000) for _ in range(6)]

        predicted = []
        for (gpu, host), wait in zip(scores, queue, strict=True):
            cached = min(512 * (gpu + host), req.input_tokens - 1)
            predicted.append(wait + FLEET_COST.prefill_ms(req.input_tokens - cached, cached) + FLEET_COST.transfer_ms(host))
        best = choose_replica(scores, queue, req, FLEET_COST)
        assert best == predicted.index(min(predicted))


def test_s09_fetching_flips_once_as_bandwidth_grows():
    req = Request(0, 0.0, 512 * 16, 1, tuple(range(16)))
    answers = [fetch_or_recompute(req, 4, 10, FLEET_COST.with_bandwidth(bw)) for bw in (0.5, 1, 2, 4, 8, 16, 32, 64)]
    assert answers == sorted(answers) and answers[0] is False and answers[-1] is True
    assert fetch_or_recompute(req, 4, 0, FLEET_COST) is False


def test_s09_simulation_is_deterministic_and_replayable():
    reqs = small_trace(1)
    kwargs = dict(gpu_blocks=20, host_blocks=30, event_delay_ms=50.0, event_jitter_ms=100.0, duplicate_rate=0.2, seed=4)
    for make in (RoundRobin, LeastLoaded, Affinity, PrefixRouter, lambda: ApproximateRouter(20)):
        a, b = simulate(reqs, make(), 3, **kwargs), simulate(reqs, make(), 3, **kwargs)
        assert a == b
        again = replay_assignment(reqs, a.assignment, 3, **kwargs)
        assert again.served == a.served and again.work_ms == a.work_ms
        assert 0.0 <= a.hit_rate < 1.0 and a.balance >= 1.0
        assert all(s.ttft_ms >= s.wait_ms >= 0 for s in a.served)


def test_s09_precise_router_without_event_delay_predicts_what_it_gets():
    """With events on time and no queue, the hits the router's index sees are the hits served."""
    reqs = [Request(i, 10_000.0 * i, r.input_tokens, 1, r.blocks) for i, r in enumerate(small_trace(2, 60))]
    run = simulate(reqs, PrefixRouter(), 4, gpu_blocks=12, host_blocks=12)
    assert any(s.gpu_hit for s in run.served) and any(s.host_hit for s in run.served)
    assert all(s.wait_ms == 0 for s in run.served)


def test_s09_event_stream_delivers_every_copy_once_in_time_order():
    stream = EventStream(delay_ms=10.0, jitter_ms=30.0, duplicate_rate=0.5, seed=1)
    for i in range(100):
        stream.emit(KVEvent("stored", 0, "gpu", i, i, float(i)))
    got = stream.due(1e9)
    assert stream.delivered == len(got) > stream.emitted == 100 and stream.due(1e9) == []
    assert {e.block for e in got} == set(range(100)) and len(got) > 100
    assert [e.seq for e in got] != sorted(e.seq for e in got)  # the jitter reorders


@pytest.mark.parametrize("faults", [dict(delay_ms=10.0, jitter_ms=30.0, duplicate_rate=0.5),
                                    dict(delay_ms=5.0, duplicate_rate=0.3), dict(jitter_ms=2.0)])
def test_s09_event_stream_emit_all_is_emit_one_by_one(faults):
    """emit_all's loop for a faulty stream is its own copy of emit: the same draws, the same deliveries."""
    rep = Replica(0, gpu_blocks=4, host_blocks=3)
    events = rep.admit(list(range(12)), 5.0) + rep.admit([1, 2, 20, 21], 7.5)
    one, batch = EventStream(seed=4, **faults), EventStream(seed=4, **faults)
    for e in events:
        one.emit(e)
    batch.emit_all(events)
    assert batch.emitted == one.emitted == len(events)
    for now in (20.0, 35.0, 1e9):
        assert batch.due(now) == one.due(now)
    assert batch.delivered == one.delivered


def test_s09_replica_without_a_record_counts_the_same_changes():
    kept, counted = Replica(0, gpu_blocks=3, host_blocks=2), Replica(0, gpu_blocks=3, host_blocks=2, record=False)
    for blocks in ([1, 2, 3, 4, 5], [9], [1, 7], [4, 5, 6, 8]):
        events = kept.admit(blocks, 0.0)
        assert counted.admit(blocks, 0.0) == [] and all(type(e) is KVEvent for e in events)
        assert counted.seq == kept.seq and list(counted.gpu) == list(kept.gpu) and list(counted.host) == list(kept.host)


def test_s09_routing_reads_only_the_requests_blocks():
    """Routing cost is flat in the fleet's cache: the index is read only through holders of the
    request's blocks, never scanned (100k other blocks indexed change nothing)."""
    index = KVIndex()
    for b in range(100_000):
        index.apply(KVEvent("stored", b % 8, "gpu", 10**6 + b, b))
    reads = []
    real = index.holders
    index.holders = lambda b: reads.append(b) or real(b)  # type: ignore[method-assign]
    blocks = list(range(30))
    assert overlap_scores(index, blocks, 8) == [(0, 0)] * 8
    assert reads == [0]


def test_s09_percentile_interpolates():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5 and percentile([5.0], 99) == 5.0

"""The serving loop (workbook/serving.py) and its workloads: identical outputs with and without the
cache, exact accounting, a pool that never overflows and ends empty. Tiny model, seconds."""
from __future__ import annotations

import random
from itertools import pairwise

import pytest
import torch

from kernels.model import DecoderLM, ModelConfig
from kernels.paged_attention import fused_attention_only
from kernels.prefill import generate_full
from workbook import serving_workloads as W
from workbook.serving import Request, RunRecord, ServingEngine, blocks_for, compare_outputs, serve

VOCAB = 512


@pytest.fixture(scope="module")
def model() -> DecoderLM:
    return DecoderLM.random(ModelConfig.tiny(), seed=0)


class CheckedEngine(ServingEngine):
    """An engine that checks the pool after every prefill and decode step."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.max_in_use = 0

    def _observe(self) -> None:
        assert self.pool.violations() == []
        in_use = sum(1 for b in self.pool.blocks if b.ref_count > 0)
        assert in_use == self.pool.num_in_use <= self.pool.num_blocks
        self.max_in_use = max(self.max_in_use, in_use)

    def _prefill(self, request, now):
        live = super()._prefill(request, now)
        self._observe()
        return live

    def _decode(self, running):
        assert len(running) <= self.max_batch
        out = super()._decode(running)
        self._observe()
        return out


def small_shared(seed: int = 0, n: int = 16) -> list[Request]:
    return W.shared_prefix(num_groups=3, prompts_per_group=n // 3 + 1, prefix_len=37, question_len=(1, 9),
                           output_len=5, rate=200.0, vocab=VOCAB, seed=seed)


def run_checked(model, requests, *, num_blocks, cache, block_size=4, max_batch=4) -> tuple[RunRecord, CheckedEngine]:
    engine = CheckedEngine(model, num_blocks, block_size, cache=cache, max_batch=max_batch)
    record = engine.run(requests)
    return record, engine


@pytest.mark.slow  # generates with the model, cache on and off
def test_serving_cached_and_uncached_runs_generate_identical_tokens(model):
    requests = small_shared()
    on, _ = run_checked(model, requests, num_blocks=40, cache=True)
    off, _ = run_checked(model, requests, num_blocks=40, cache=False)
    assert compare_outputs(on, off) == []
    assert sum(r.hit_tokens for r in on.requests) > 0 and sum(r.hit_tokens for r in off.requests) == 0
    # ... and both equal the no-cache ground truth (a full prefill per token), for a few requests
    for r in requests[:4]:
        assert on.outputs()[r.request_id] == generate_full(model, list(r.prompt), r.max_new_tokens)


@pytest.mark.slow  # serves whole workloads on the model
def test_serving_accounting_invariants_hold(model):
    requests = small_shared(seed=1) + W.unique(num_requests=6, prompt_len=(5, 30), output_len=3, rate=300.0,
                                                 vocab=VOCAB, seed=1)
    for cache in (True, False):
        record, engine = run_checked(model, requests, num_blocks=24, cache=cache, max_batch=3)
        assert len(record.requests) == len(requests)
        by_id = {r.request_id: r for r in requests}
        for rec in record.requests:
            req = by_id[rec.request_id]
            assert rec.hit_tokens + rec.computed_tokens == rec.prompt_tokens == len(req.prompt)
            assert rec.computed_tokens >= 1 and rec.hit_tokens % 4 == 0
            assert len(rec.output_tokens) == req.max_new_tokens
            assert rec.arrival_s <= rec.admitted_s <= rec.first_token_s <= rec.finished_s
            assert rec.ttft_s >= rec.prefill_s > 0
        assert engine.max_in_use == record.stats["peak_blocks_in_use"] <= engine.pool.num_blocks
        assert engine.pool.num_free == engine.pool.num_blocks  # every block free at the end
        assert set(engine.pool.requests) == {engine.pool.PIN_ID}


def test_serving_unique_prompts_never_hit(model):
    requests = W.unique(num_requests=10, prompt_len=(9, 40), output_len=2, rate=100.0, vocab=VOCAB, seed=3)
    record, _ = run_checked(model, requests, num_blocks=30, cache=True)
    assert all(r.hit_tokens == 0 for r in record.requests)
    assert W.describe(requests, 4)["reusable_token_fraction"] == 0.0


def test_serving_a_full_pool_makes_requests_wait_not_fail(model):
    # Each request needs 4 blocks; a pool of 5 serves one at a time, first come first served.
    requests = [Request(f"r{i}", 0.0, tuple(range(10 * i, 10 * i + 12)), 5) for i in range(4)]
    assert {blocks_for(r, 4) for r in requests} == {4}
    record, engine = run_checked(model, requests, num_blocks=5, cache=False)
    order = sorted(record.requests, key=lambda r: r.admitted_s)
    assert [r.request_id for r in order] == ["r0", "r1", "r2", "r3"]
    for a, b in pairwise(order):
        assert b.admitted_s >= a.finished_s  # the next one waited for the blocks of the previous one
    with pytest.raises(ValueError, match="need more than the pool"):
        engine.run([Request("big", 0.0, tuple(range(30)), 1)])


@pytest.mark.slow  # serves whole workloads on the model
def test_serving_thrashing_needs_a_pool_that_holds_every_prefix(model):
    requests = W.thrashing(num_prefixes=4, prefix_len=32, rounds=4, question_len=3, output_len=2, rate=50.0,
                           vocab=VOCAB, seed=0)
    hit_rate = {}
    for blocks in (14, 80):  # 14 blocks hold one prefix and a request; 80 hold all four prefixes
        record, _ = run_checked(model, requests, num_blocks=blocks, cache=True, max_batch=1)
        hit_rate[blocks] = sum(r.hit_tokens for r in record.requests) / sum(r.prompt_tokens for r in record.requests)
    assert hit_rate[14] == 0.0  # round-robin over more prefixes than fit: LRU evicts each before its reuse
    assert hit_rate[80] > 0.6


def test_serving_idle_time_is_skipped_and_arrivals_are_respected(model):
    requests = [Request("a", 0.0, tuple(range(20)), 2), Request("b", 100.0, tuple(range(20, 45)), 2)]
    record, _ = run_checked(model, requests, num_blocks=20, cache=True)
    b = next(r for r in record.requests if r.request_id == "b")
    assert b.admitted_s == 100.0 and b.queue_s == 0.0  # the clock jumped to b's arrival, b did not wait
    assert record.stats["makespan_s"] >= 100.0


def test_serving_measures_with_the_clock_it_is_given(model):
    """Every piece of work is timed on the engine's clock: a clock that ticks once per reading makes a
    run's times whole numbers, the same on every machine (the notebook passes time.process_time)."""
    ticks = iter(range(10**6))
    record = serve(model, small_shared(seed=3, n=6), num_blocks=30, block_size=4, clock=lambda: float(next(ticks)))
    times = [t for r in record.requests for t in (r.prefill_s, r.first_token_s, r.finished_s)]
    assert all(t == int(t) for t in times) and all(r.prefill_s == 1.0 for r in record.requests)
    assert record.settings["clock"] == "<lambda>"


def test_serving_record_round_trips_through_json(model, tmp_path):
    record = serve(model, small_shared(seed=2, n=6), num_blocks=30, block_size=4,
                   settings={"workload": "shared_prefix"})
    loaded = RunRecord.load(record.save(tmp_path / "run.json"))
    assert loaded.to_dict() == record.to_dict()
    assert loaded.column("ttft_s") == record.column("ttft_s") and loaded.settings["workload"] == "shared_prefix"
    assert loaded.ledger() == record.ledger()
    assert ModelConfig(**loaded.settings["model"]) == model.config


def test_serving_decode_and_prefill_use_fused_attention(model):
    with fused_attention_only():
        record = serve(model, small_shared(seed=4, n=6), num_blocks=30, block_size=4, cache=True)
    assert len(record.requests) >= 6 and record.decode_steps


def test_serving_workloads_are_deterministic_and_shaped_as_described():
    for name, make in W.WORKLOADS.items():
        a, b = make(), make()
        assert a == b, name
        assert len({r.request_id for r in a}) == len(a)
        assert all(max(r.prompt) < W.VOCAB for r in a)
        assert [r.arrival_s for r in a] == sorted(r.arrival_s for r in a)
    shared = W.describe(W.shared_prefix())
    assert shared["reusable_token_fraction"] > 0.8
    chat = W.multiturn()
    assert len(chat) >= 30 and 0.3 < W.describe(chat)["reusable_token_fraction"] < 0.9
    assert W.describe(W.unique())["reusable_token_fraction"] == 0.0


def test_serving_multiturn_turns_extend_earlier_turns():
    chat = W.multiturn(num_conversations=4, block_tokens=8)
    lines = {}
    for r in chat:
        lines.setdefault(r.tag, r)
    # some turn shares more than the system block (8 tokens) with an earlier one
    shared = 0
    for i, r in enumerate(chat):
        for earlier in chat[:i]:
            n = 0
            while n < min(len(r.prompt), len(earlier.prompt)) and r.prompt[n] == earlier.prompt[n]:
                n += 1
            shared = max(shared, n)
    assert shared > 8 * 3


def test_serving_engine_reserves_output_blocks_at_admission(model):
    engine = ServingEngine(model, 12, 4, cache=True)
    req = Request("x", 0.0, tuple(random.Random(0).randrange(VOCAB) for _ in range(9)), 8)
    live = engine._prefill(req, 0.0)
    assert len(live.table) == blocks_for(req, 4) == 4  # 9 prompt + 7 generated-and-attended tokens
    assert engine.pool.num_in_use == 4
    engine.pool.release("x")
    assert engine.pool.num_free == 12
    torch.testing.assert_close(torch.tensor(len(live.tokens)), torch.tensor(10))


def _flop_cost(kind: str, a: int, b: int) -> float:
    """A fixed cost model (no measurement): a prefill of ``a`` computed over ``b`` cached tokens, or a
    decode step of ``a`` requests over ``b`` context tokens."""
    return 1e-3 + (a * 2e-4 + a * (a + b) * 1e-7 if kind == "prefill" else a * 1e-4 + b * 1e-6)


def test_serving_virtual_clock_makes_the_run_independent_of_measured_time(model):
    """With a cost model the schedule, the hits, every latency and the sweep's decision are the same
    whatever the measured clock says: two timing tables 100x apart give identical runs."""
    from solutions.s07_serving import choose_setting, sweep_rows

    requests = W.thrashing(num_prefixes=4, prefix_len=32, rounds=4, question_len=3, output_len=2, rate=50.0,
                           vocab=VOCAB, seed=0)

    def fake_clock(step: float):
        ticks = iter(range(10**7))
        return lambda: next(ticks) * step

    runs = {}
    for step in (1e-4, 1e-2):  # every timed piece of work "measures" 100x longer in the second table
        runs[step] = [ServingEngine(model, blocks, 4, cache=cache, max_batch=2, clock=fake_clock(step),
                                    cost=_flop_cost).run(requests, settings={"workload": "thrashing"})
                      for cache, blocks in ((False, 14), (True, 14), (True, 80))]
    fast, slow = runs[1e-4], runs[1e-2]
    for a, b in zip(fast, slow, strict=True):
        assert [(r.hit_tokens, r.ttft_s, r.finished_s) for r in a.requests] == \
               [(r.hit_tokens, r.ttft_s, r.finished_s) for r in b.requests]
        assert a.settings["clock"] == "virtual (cost model)"
        assert [s for _, s in a.decode_steps] != [s for _, s in b.decode_steps]  # measured times kept, and differ
    decisions = []
    for records in (fast, slow):
        rows, slo = sweep_rows(records, ModelConfig.tiny(), today=(False, 14), share=0.6)
        chosen = choose_setting(rows, slo)
        decisions.append(None if chosen is None else (chosen["cache"], chosen["num_blocks"]))
    assert decisions[0] == decisions[1] == (True, 80)

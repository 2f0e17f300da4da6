"""Unit and property tests of stage 4's reference module (LRU eviction, pinning, residence, replay).

Independent models used here, written differently from the reference on purpose:
- the free queue is compared with two plain Python lists (keyless blocks, cached blocks);
- LRU replay is compared with an LRU *stack* (Mattson's stack distances): one pass over a trace
  gives the hits of every capacity at once, with no pool, no blocks and no free queue;
- Belady is compared with an exhaustive search over every eviction choice on tiny traces.
"""
from __future__ import annotations

import random
from functools import lru_cache
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions.s03_block_pool import Block, BlockPool, FreeQueue, PoolFullError
from solutions.s04_eviction import (
    LRU,
    PIN_ID,
    EvictionPool,
    LRUFreeQueue,
    Policy,
    PrehashedPool,
    belady,
    simulate,
)
from workbook.traces import (
    KeyInterner,
    TraceRequest,
    load_mooncake,
    mixed_traffic,
    multiturn_traffic,
    rag_traffic,
    request_tokens,
    subsample,
    system_prompt_traffic,
    thrashing_traffic,
    trace_stats,
)

INF = float("inf")


class FakeClock:
    """An injectable clock: time moves only when a test says so."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def random_trace(seed: int, *, n_requests: int = 40, max_len: int = 8, unique_tail: bool = True) -> list[TraceRequest]:
    """Requests that extend a random earlier prefix with fresh blocks (a random prefix tree)."""
    rng = random.Random(seed)
    interner = KeyInterner()
    fresh = iter(range(10**9))
    prompts: list[list[int]] = []
    out = []
    for i in range(n_requests):
        if prompts and rng.random() < 0.7:
            base = rng.choice(prompts)
            contents = base[: rng.randint(1, len(base))]
        else:
            contents = []
        while len(contents) < rng.randint(1, max_len):
            contents.append(next(fresh))
        if unique_tail:
            contents = contents[: max_len - 1] + [next(fresh)]
        prompts.append(contents)
        keys = tuple(interner.chain(contents))
        out.append(TraceRequest(float(i), keys, len(keys) * 4, 4))
    return out


# -- LRUFreeQueue -----------------------------------------------------------------------------------
def make_blocks(n: int, keyed: bool = True) -> list[Block]:
    return [Block(i, key=(i.to_bytes(4, "little") if keyed else None)) for i in range(n)]


def test_s04_append_satisfies_the_free_queue_protocol():
    assert isinstance(LRUFreeQueue(), FreeQueue)


def test_s04_popleft_is_least_recently_freed_first():
    q = LRUFreeQueue()
    blocks = make_blocks(4)
    for b in blocks:
        q.append(b)
    q.remove(blocks[0])
    q.append(blocks[0])  # used again: now the most recent
    assert [q.popleft().block_id for _ in range(4)] == [1, 2, 3, 0]
    with pytest.raises(IndexError):
        q.popleft()


def test_s04_append_keyless_blocks_go_before_cached_ones_in_fifo_order():
    q = LRUFreeQueue()
    keyed, bare = make_blocks(2), [Block(10), Block(11)]
    q.append(keyed[0])
    q.append(bare[0])
    q.append(keyed[1])
    q.append(bare[1])
    assert [b.block_id for b in q] == [10, 11, 0, 1]


def test_s04_append_refuses_double_free_and_used_blocks():
    q = LRUFreeQueue()
    b = Block(0)
    q.append(b)
    with pytest.raises(ValueError):
        q.append(b)
    busy = Block(1, ref_count=1)
    with pytest.raises(ValueError):
        q.append(busy)
    assert len(q) == 1 and busy.prev_free is None


def test_s04_remove_refuses_a_block_not_in_the_queue_and_clears_links():
    q = LRUFreeQueue()
    a, b = make_blocks(2)
    q.append(a)
    with pytest.raises(ValueError):
        q.remove(b)
    q.remove(a)
    assert len(q) == 0 and a.prev_free is None and a.next_free is None and a not in q
    q.append(a)  # can come back
    assert list(q) == [a]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "popleft", "remove"]), st.integers(0, 11), st.booleans()),
                max_size=60))
def test_s04_free_queue_matches_a_two_list_model(ops):
    """Random append/popleft/remove against two plain lists: keyless FIFO, then cached LRU order."""
    q = LRUFreeQueue()
    blocks = [Block(i) for i in range(12)]
    bare: list[Block] = []
    cached: list[Block] = []
    for op, i, keyed in ops:
        b = blocks[i]
        in_model = b in bare or b in cached
        if op == "append":
            if in_model:
                with pytest.raises(ValueError):
                    q.append(b)
                continue
            b.key = i.to_bytes(2, "little") if keyed else None
            q.append(b)
            (cached if keyed else bare).append(b)
        elif op == "popleft":
            if not (bare or cached):
                with pytest.raises(IndexError):
                    q.popleft()
                continue
            expect = bare.pop(0) if bare else cached.pop(0)
            assert q.popleft() is expect
        else:
            if not in_model:
                with pytest.raises(ValueError):
                    q.remove(b)
                continue
            q.remove(b)
            (bare if b in bare else cached).remove(b)
        assert list(q) == bare + cached
        assert len(q) == len(bare) + len(cached)
        assert all((x in q) == (x in bare or x in cached) for x in blocks)


# -- EvictionPool -------------------------------------------------------------------------------------
def run(pool: BlockPool, rid: str, tokens: list[int]):
    adm = pool.admit(rid, tokens)
    pool.commit(rid)
    pool.release(rid)
    return adm


def test_s04_release_blocks_frees_tail_first():
    pool = EvictionPool(8, 2)
    run(pool, "a", [1, 2, 3, 4, 5, 6])  # 3 full blocks
    table = [b.block_id for b in pool.free_queue if b.key is not None]
    assert table == [2, 1, 0]  # the tail is the least recent: evicted first


def test_s04_eviction_takes_lru_and_old_key_stops_hitting():
    pool = EvictionPool(4, 2)
    run(pool, "a", [1, 1, 1, 1])  # blocks 0,1 cached (A0, A1)
    run(pool, "b", [2, 2, 2, 2])  # blocks 2,3 cached
    run(pool, "a2", [1, 1, 1, 1, 9])  # hits A0, A1 (free hits leave the queue); 1 fresh block
    # the fresh block was the LRU one: B's tail (block 3); B's prefix survives
    keys_b = pool.keys_of([2, 2, 2, 2])
    assert pool.is_cached(keys_b[0]) and not pool.is_cached(keys_b[1])
    assert pool.admit("b2", [2, 2, 2, 2, 7]).hit_blocks == 1
    pool.check_invariants()


def test_s04_a_referenced_block_is_never_evicted():
    pool = EvictionPool(4, 2)
    pool.admit("live", [1, 1, 1, 1])
    pool.commit("live")
    run(pool, "x", [3, 3, 3, 3])
    with pytest.raises(PoolFullError):
        pool.admit("big", [5] * 6)  # needs 3 fresh, only 2 free: nothing changes
    run(pool, "y", [4, 4, 4, 4])  # evicts x's blocks, never live's
    assert [pool.admit("again", [1, 1, 1, 1, 0]).hit_blocks] == [2]
    pool.check_invariants()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6))
def test_s04_pool_keeps_invariants_and_prefix_closure_under_random_traffic(seed):
    """Several live requests at once; after every step the pool is consistent, and every cached
    block's prefix is cached too (tail-first release + LRU)."""
    rng = random.Random(seed)
    pool = EvictionPool(12, 2)
    live: list[str] = []
    prompts = [[rng.randint(0, 3) for _ in range(rng.randint(1, 9))] for _ in range(8)]
    for step in range(40):
        if live and rng.random() < 0.45:
            pool.release(live.pop(rng.randrange(len(live))))
        else:
            rid = f"r{step}"
            try:
                pool.admit(rid, rng.choice(prompts))
            except PoolFullError:
                continue
            pool.commit(rid)
            live.append(rid)
        pool.check_invariants()
        if not live:  # with nothing in use, the cache must be prefix-closed
            for p in prompts:
                keys = pool.keys_of(p)
                cached = [pool.is_cached(k) for k in keys]
                assert cached == sorted(cached, reverse=True), "a cached block lost its prefix"


# -- pinning --------------------------------------------------------------------------------------------
def test_s04_pin_keeps_a_prefix_forever_and_respects_the_cap():
    pool = EvictionPool(6, 2, max_pinned=2)
    run(pool, "sys", [7] * 6)  # 3 cached blocks
    keys = pool.keys_of([7] * 6)
    assert pool.pin_prefix(keys) == 2  # the cap stops the third
    assert pool.num_pinned == 2 and len(pool.free_queue) == 4
    for i in range(10):  # churn through the rest of the pool
        run(pool, f"c{i}", [100 + i] * 8)
    assert pool.is_cached(keys[0]) and pool.is_cached(keys[1]) and not pool.is_cached(keys[2])
    assert pool.admit("sys2", [7] * 6).hit_blocks == 2
    pool.release("sys2")
    pool.check_invariants()


def test_s04_pin_refuses_at_cap_and_unpin_frees():
    pool = EvictionPool(4, 1, max_pinned=1)
    run(pool, "a", [1, 2])
    b0, b1 = (pool.cached[k] for k in pool.keys_of([1, 2]))
    assert pool.pin(b0) is True and pool.pin(b0) is True  # idempotent
    assert pool.pin(b1) is False and not pool.is_pinned(b1)
    assert b0.ref_count == 1 and b0 not in pool.free_queue
    pool.unpin(b0)
    assert b0.ref_count == 0 and list(pool.free_queue)[-1] is b0
    with pytest.raises(ValueError):
        pool.unpin(b0)
    with pytest.raises(ValueError):
        pool.pin(Block(0, key=b"x"))  # not this pool's block
    with pytest.raises(ValueError):
        EvictionPool(4, 1, max_pinned=4)  # pins could take every block
    with pytest.raises(ValueError):
        pool.release(PIN_ID)


def test_s04_pin_while_in_use_holds_after_release():
    pool = EvictionPool(3, 1, max_pinned=1)
    pool.admit("a", [5, 6])
    pool.commit("a")
    pool.pin(pool.cached[pool.keys_of([5])[0]])
    pool.release("a")
    blk = pool.cached[pool.keys_of([5])[0]]
    assert blk.ref_count == 1 and blk not in pool.free_queue
    assert len(pool.free_queue) == 2
    pool.check_invariants()


# -- minimum residence --------------------------------------------------------------------------------
def test_s04_expire_holds_new_blocks_until_min_residence_has_passed():
    clock = FakeClock()
    pool = EvictionPool(4, 1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])  # 3 fresh blocks, held until t = 10
    assert len(pool.free_queue) == 1
    with pytest.raises(PoolFullError):
        pool.admit("b", [4, 5, 6])
    clock.t = 9.999
    assert pool.expire() == 0 and len(pool.free_queue) == 1
    clock.t = 10.0  # exactly T: no longer protected
    adm = pool.admit("b", [4, 5, 6])
    assert len(adm.block_table) == 3
    pool.check_invariants()


def test_s04_expire_releases_holds_in_age_order():
    clock = FakeClock()
    pool = EvictionPool(8, 1, min_residence=5.0, clock=clock)
    run(pool, "a", [1, 2])
    clock.t = 3.0
    run(pool, "b", [3, 4])
    clock.t = 5.0
    assert pool.expire() == 1 and len(pool.free_queue) == 6
    clock.t = 8.0
    assert pool.expire() == 1 and len(pool.free_queue) == 8
    pool.check_invariants()


def test_s04_expire_only_protects_newly_computed_blocks():
    clock = FakeClock()
    pool = EvictionPool(6, 1, min_residence=100.0, clock=clock)
    run(pool, "a", [1, 2])  # 2 held
    clock.t = 200.0
    pool.expire()
    run(pool, "b", [1, 2, 3])  # hits 1, 2 (old); computes 3 (new, held)
    holds = [rid for rid in pool.requests if rid.startswith("#young")]
    assert len(holds) == 1 and pool.block_table(holds[0]) == [pool.cached[pool.keys_of([1, 2, 3])[2]].block_id]


# -- simulator and Belady ---------------------------------------------------------------------------
def lru_stack_hits(trace: list[TraceRequest], capacities: list[int]) -> dict[int, int]:
    """Hits of LRU with tail-first release, for many capacities, from one LRU stack.

    After a request the pool holds the C most recently *released* distinct keys, where a
    request releases its keys last block first (so its first block ends on top of the stack).
    A request may hit its leading keys except the last one (at least one block is computed).
    Valid when every capacity >= the longest request and no request's last key repeats.
    """
    stack: list[int] = []  # most recent first
    hits = dict.fromkeys(capacities, 0)
    for r in trace:
        depth = [stack.index(k) + 1 if k in stack else INF for k in r.keys[:-1]]
        for c in capacities:
            n = 0
            while n < len(depth) and depth[n] <= c:
                n += 1
            hits[c] += n
        stack = list(r.keys) + [k for k in stack if k not in r.keys]
    return hits


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6))
def test_s04_simulate_lru_matches_stack_distances(seed):
    trace = random_trace(seed)
    caps = [8, 10, 15, 25, 60]
    expect = lru_stack_hits(trace, caps)
    for c in caps:
        assert simulate(trace, c).hit_blocks == expect[c], c


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(3, 30))
def test_s04_belady_bounds_every_policy(seed, cap):
    trace = random_trace(seed, unique_tail=False)
    best = belady(trace, cap).hit_blocks
    for policy in (LRU, Policy("pin", max_pinned=cap // 2), Policy("res", min_residence=3.0)):
        assert simulate(trace, cap, policy).hit_blocks <= best


def optimal_hits(flat: list[int], cap: int) -> int:
    """Exhaustive search over every keep/evict/bypass choice (tiny inputs only)."""

    @lru_cache(maxsize=None)
    def go(p: int, cache: frozenset) -> int:
        if p == len(flat):
            return 0
        k = flat[p]
        if k in cache:
            return 1 + go(p + 1, cache)
        best = go(p + 1, cache)  # bypass
        if len(cache) < cap:
            best = max(best, go(p + 1, cache | {k}))
        else:
            for v in cache:
                best = max(best, go(p + 1, (cache - {v}) | {k}))
        return best

    return go(0, frozenset())


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=3), min_size=1, max_size=6),
       st.integers(1, 3))
def test_s04_belady_is_optimal_on_tiny_traces(requests, cap):
    trace = [TraceRequest(float(i), tuple(r), len(r), 1) for i, r in enumerate(requests)]
    flat = [k for r in requests for k in r]
    assert belady(trace, cap).hit_blocks == optimal_hits(flat, cap)


def test_s04_simulate_tokens_mode_matches_keys_mode():
    trace = rag_traffic(150, num_docs=20, doc_blocks=(2, 6), block_size=4, seed=3)
    for policy in (LRU, Policy("pin", max_pinned=20), Policy("res", min_residence=1.0)):
        a = simulate(trace, 60, policy)
        b = simulate(trace, 60, policy, mode="tokens")
        assert (a.hit_blocks, a.hit_tokens, a.rejected) == (b.hit_blocks, b.hit_tokens, b.rejected)


def test_s04_simulate_rejects_requests_longer_than_the_pool():
    trace = [TraceRequest(0.0, (1, 2, 3, 4), 16, 4), TraceRequest(1.0, (1, 5), 8, 4)]
    r = simulate(trace, 3)
    assert (r.rejected, r.hit_blocks, r.blocks) == (1, 0, 6)


def test_s04_simulate_rates_and_token_weights():
    trace = [TraceRequest(0.0, (1, 2), 700, 512), TraceRequest(1.0, (1, 2, 3), 1100, 512)]
    r = simulate(trace, 10)
    assert r.hit_blocks == 2 and r.hit_tokens == 1024
    assert r.block_hit_rate == 2 / 5 and r.token_hit_rate == 1024 / 1800 and r.prefix_hit_rate == 0.5


def test_s04_thrashing_lru_gets_nothing_but_pinning_and_residence_help():
    trace = thrashing_traffic(400, num_prompts=10, prompt_blocks=8, seed=1)
    cap = 60  # < 10 prompts x 8 blocks
    lru = simulate(trace, cap).block_hit_rate
    pin = simulate(trace, cap, Policy("pin", max_pinned=40)).block_hit_rate
    res = simulate(trace, cap, Policy("res", min_residence=2.0)).block_hit_rate
    bound = belady(trace, cap).block_hit_rate
    assert lru == 0.0 and pin > 0.3 and res > 0.1 and bound >= max(pin, res)


def test_s04_simulate_infinite_cache_reaches_the_trace_bound():
    for trace in (system_prompt_traffic(200, seed=2), multiturn_traffic(40, seed=2)):
        stats = trace_stats(trace)
        r = simulate(trace, stats["block_accesses"] + 1)
        assert r.block_hit_rate == pytest.approx(stats["infinite_cache_block_hit_rate"])
        assert belady(trace, stats["block_accesses"] + 1).hit_blocks == r.hit_blocks


def test_s04_prehashed_pool_is_a_real_pool():
    pool = PrehashedPool(5)
    run(pool, "a", [10, 11, 12])
    assert pool.admit("b", [10, 11, 13]).hit_blocks == 2
    pool.check_invariants()
    with pytest.raises(ValueError):
        pool.admit("#x", [1])


# -- traces -----------------------------------------------------------------------------------------
def test_s04_mooncake_traces_load_with_readme_statistics():
    conv = trace_stats(load_mooncake("conversation"))
    assert (conv["requests"], conv["block_accesses"], conv["distinct_blocks"]) == (12031, 288500, 182790)
    syn = trace_stats(load_mooncake("synthetic", limit=100))
    assert syn["requests"] == 100


def test_s04_mooncake_loader_rejects_inconsistent_lines(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 2000, "output_length": 1, "hash_ids": [0, 1]}\n')
    with pytest.raises(ValueError):
        load_mooncake(bad)


def test_s04_synthetic_generators_are_deterministic_and_chained():
    for gen in (system_prompt_traffic, rag_traffic, multiturn_traffic, thrashing_traffic):
        a, b = gen(seed=5), gen(seed=5)
        assert a == b and a != gen(seed=6)
        parent: dict[int, int | None] = {}
        for r in a:  # chained: a key always has the same predecessor
            for prev, k in pairwise((None, *r.keys)):
                assert parent.setdefault(k, prev) == prev
        assert all(x.timestamp <= y.timestamp for x, y in pairwise(a))


def test_s04_mixed_traffic_keeps_traces_apart_and_sorted():
    a, b = system_prompt_traffic(30, seed=1), rag_traffic(30, seed=1)
    mixed = mixed_traffic(a, b)
    assert len(mixed) == 60 and all(x.timestamp <= y.timestamp for x, y in pairwise(mixed))
    keys_a = {k for r in a for k in r.keys}
    shifted_b = {k for r in mixed for k in r.keys} - keys_a
    assert len(shifted_b) == len({k for r in b for k in r.keys})
    assert subsample(mixed, 7) == mixed[::7]


def test_s04_request_tokens_reproduce_the_block_structure():
    r = TraceRequest(0.0, (3, 9), 6, 4)
    toks = request_tokens(r)
    assert toks == [12, 13, 14, 15, 36, 37] and r.block_tokens(1) == 2


@pytest.mark.slow  # runs the stage's benchmarks
def test_s04_benchmarks_run_quick(capsys):
    import benchmarks.bench_free_queue as bq
    import benchmarks.bench_traces as bt

    assert bq.main(["--quick"]) == 0 and bt.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "remove(middle)+append" in out and "Belady" in out


# -- the quiz's numeric answers are what the reference does ----------------------------------------------
def test_s04_quiz_numeric_answers_follow_from_the_reference():
    """q3 and q5 are computed by the reference here, so the quiz cannot drift from the code."""
    from solutions.s04_eviction import quiz

    answers = quiz()
    pool = EvictionPool(6, 16)
    a, b = list(range(64)), list(range(100, 164))
    for rid, tokens in (("A", a), ("B", b)):
        pool.admit(rid, tokens)
        pool.commit(rid)
        pool.release(rid)
    assert pool.admit("C", a + [999]).hit_tokens == answers["q3"]

    clock = FakeClock(3.0)
    pool = EvictionPool(4, 1, min_residence=10.0, clock=clock)
    pool.admit("r", [1, 2])
    pool.commit("r")
    pool.release("r")
    clock.t = answers["q5"] - 1e-9
    assert pool.expire() == 0
    clock.t = answers["q5"]
    assert pool.expire() == 1


def test_s04_quiz_head_first_release_would_hit_nothing():
    """The wrong answer the quiz's q3 guards against: head first, LRU evicts A's prefix."""

    class HeadFirst(EvictionPool):
        def release_blocks(self, blocks):
            for block in blocks:
                block.ref_count -= 1
                if block.ref_count == 0:
                    self.free_queue.append(block)

    pool = HeadFirst(6, 16)
    a = list(range(64))
    for rid, tokens in (("A", a), ("B", list(range(100, 164)))):
        pool.admit(rid, tokens)
        pool.commit(rid)
        pool.release(rid)
    assert pool.admit("C", a + [999]).hit_tokens == 0

"""Hidden checks of stage 4: O(1) costs, random traffic, shared paths, pins under holds, trace replays.
Never shipped to learners. Their titles and hints, in both languages, are in ``hidden.toml`` beside this module."""
from __future__ import annotations

import random

from autograder.checks.common import record, within_budget
from autograder.checks.s03 import Prefill
from autograder.checks.s04 import STAGE, Clock, cached_ids, caught, ids, run
from workbook.traces import TraceRequest, rag_traffic, thrashing_traffic

# -- O(1) guards ---------------------------------------------------------------------------------------
# A linked-list operation costs well under 10 us in Python; an O(n) one on a 200k-block queue costs
# milliseconds (a walk) to a millisecond (deque.remove). The budget is at least 20x what the reference
# needs on a loaded machine, so such a machine cannot fail it, while an O(n) implementation exceeds it
# long before the grader's time limit: the probe stops early and answers "too slow". It is no larger
# than that margin needs: each wrong answer spends all of it, in every run.
BIG = 200_000  # remove: where deque.remove costs ~1 ms per call
MEDIUM = 50_000  # append/popleft: a walk to either end is O(n) at any size
BUDGET_S = 0.5


def _timed(ops, n_ops: int, batch: int = 50) -> bool:
    return within_budget(ops, n_ops, BUDGET_S, batch)


def _big_queue(impl, n: int = BIG):
    q = impl.LRUFreeQueue()
    blocks = [impl.Block(i, key=b"k") for i in range(n)]
    return q, blocks


@STAGE.check("s04.append", hidden=True, sibling="append_work_does_not_grow")
def append_is_constant_time(impl):
    q, blocks = _big_queue(impl, MEDIUM)
    fast = _timed(lambda i: q.append(blocks[i]), MEDIUM, batch=1_000)
    return fast, len(q) if fast else None


@STAGE.check("s04.popleft", hidden=True, sibling="popleft_work_does_not_grow")
def popleft_is_constant_time(impl):
    q, blocks = _big_queue(impl, MEDIUM)
    for b in blocks:
        q.append(b)
    out: list[int] = []
    fast = _timed(lambda i: out.append(q.popleft().block_id), 5_000)
    return fast, out[:3] if fast else None, len(q) if fast else None


@STAGE.check("s04.remove", hidden=True, sibling="remove_work_does_not_grow")
def remove_from_the_middle_is_constant_time(impl):
    q, blocks = _big_queue(impl)
    for b in blocks:
        q.append(b)
    rng = random.Random(4)
    middle = [blocks[rng.randrange(BIG // 4, 3 * BIG // 4)] for _ in range(3_000)]

    def hit_and_release(i: int) -> None:
        q.remove(middle[i])
        q.append(middle[i])

    fast = _timed(hit_and_release, len(middle))
    return fast, len(q) if fast else None, q.popleft().block_id if fast else None


# -- TODO 1-3: behaviour under random use -----------------------------------------------------------------
def _random_queue_ops(impl, seed: int):
    """A random mix of appends (keyed or not), poplefts and removes; the observable trail."""
    rng = random.Random(seed)
    q = impl.LRUFreeQueue()
    blocks = [impl.Block(i) for i in range(10)]
    trail = []
    for _ in range(120):
        op = rng.random()
        members = [b for b in blocks if b in q]
        if op < 0.45:
            outside = [b for b in blocks if b not in q]
            if outside:
                b = rng.choice(outside)
                b.key = None if rng.random() < 0.3 else b"k%d" % b.block_id
                q.append(b)
        elif op < 0.75:
            trail.append(("pop", caught(lambda: trail.append(q.popleft().block_id))))
        elif members:
            q.remove(rng.choice(members))
        trail.append(len(q))
    return trail, ids(q)


@STAGE.check("s04.append", hidden=True, sibling="keyless_blocks_go_first")
def random_mix_append(impl):
    return _random_queue_ops(impl, 11)


@STAGE.check("s04.popleft", hidden=True, sibling="keyless_before_cached")
def random_mix_popleft(impl):
    return _random_queue_ops(impl, 12)


@STAGE.check("s04.remove", hidden=True, sibling="remove_from_the_middle")
def random_mix_remove(impl):
    return _random_queue_ops(impl, 13)


def _lru_pool_trail(impl):
    """Stage 3's BlockPool with the learner's queue: which keys survive a sequence of requests."""
    pool = impl.BlockPool(6, 2, free_queue=impl.LRUFreeQueue())
    prompts = {"A": [1, 1, 2, 2], "B": [3, 3, 4, 4], "C": [5, 5, 6, 6, 0]}
    trail = []
    for name in "ABAC" "BA":
        trail.append((name, run(pool, name + str(len(trail)), prompts[name])))
    cached = {n: [k in pool.cached for k in pool.keys_of(p)] for n, p in prompts.items()}
    return trail, cached, pool.violations()


@STAGE.check("s04.popleft", hidden=True, sibling="least_recent_first")
def pool_evicts_least_recently_used(impl):
    return _lru_pool_trail(impl)


@STAGE.check("s04.remove", hidden=True, sibling="revive_path_through_the_pool")
def pool_hits_leave_the_queue(impl):
    pool = impl.BlockPool(5, 1, free_queue=impl.LRUFreeQueue())
    run(pool, "a", [1, 2, 3])
    pool.admit("live", [1, 2, 3, 4])  # hits 1, 2 (removed from the queue)
    pool.commit("live")
    for i in range(4):
        caught(lambda: run(pool, f"x{i}", [10 + i, 20 + i]))  # noqa: B023 - caught() calls it at once
    return pool.admit("again", [1, 2, 9]).hit_blocks, pool.violations()


# -- TODO 4: release_blocks -------------------------------------------------------------------------------
def _trace(seed: int, n: int = 60) -> list:
    """Requests extending random earlier prefixes (chained ids), timestamps 0, 1, 2, ..."""
    rng = random.Random(seed)
    ids_of: dict = {}
    prompts: list[list[int]] = []
    out = []
    fresh = 0
    for i in range(n):
        base = list(rng.choice(prompts)[: rng.randint(1, 5)]) if prompts and rng.random() < 0.7 else []
        while len(base) < rng.randint(2, 7):
            fresh += 1
            base.append(fresh)
        prompts.append(base)
        keys, parent = [], None
        for c in base:
            parent = ids_of.setdefault((parent, c), len(ids_of))
            keys.append(parent)
        out.append(TraceRequest(float(i), tuple(keys), len(keys) * 4, 4))
    return out


@STAGE.check("s04.release_blocks", hidden=True, sibling="tail_first_whatever_the_block_ids")
def random_trace_lru_hits(impl):
    return [impl.simulate_with(_trace(s), cap, pool_cls=impl.EvictionPool).hit_blocks
            for s in (1, 2) for cap in (8, 16)]


@STAGE.check("s04.release_blocks", hidden=True, sibling="callers_table_of_any_sequence_type_left_alone")
def tables_as_tuples_and_lists(impl):
    pool = impl.EvictionPool(12, 3)
    tables = []
    for rid, tokens in (("a", [4, 4, 4, 5, 5, 5, 6]), ("b", [4, 4, 4, 5, 5, 5, 7, 7, 7]), ("c", [9, 9, 9])):
        tables.append([pool.blocks[i] for i in pool.admit(rid, tokens).block_table])
        pool.commit(rid)
    given = [tuple(tables[0]), list(tables[1]), tuple(tables[2])]
    raised = [caught(lambda t=t: pool.release_blocks(t)) for t in given]
    return record(raised=raised, given_after=[[b.block_id for b in t] for t in given], free=[b.block_id for b in pool.free_queue])


@STAGE.check("s04.release_blocks", hidden=True, sibling="shared_blocks_stay_in_use")
def concurrent_requests_keep_invariants(impl):
    rng = random.Random(9)
    pool = impl.EvictionPool(10, 2)
    prompts = [[rng.randint(0, 2) for _ in range(rng.randint(1, 7))] for _ in range(6)]
    live, trail = [], []
    for step in range(40):
        if live and rng.random() < 0.45:
            pool.release(live.pop(rng.randrange(len(live))))
        else:
            rid = f"r{step}"
            if caught(lambda: pool.admit(rid, rng.choice(prompts))) is None:  # noqa: B023 - caught() calls it at once
                pool.commit(rid)
                live.append(rid)
        trail.append((len(pool.free_queue), [b.block_id for b in pool.free_queue][:4]))
    return trail, pool.violations()


@STAGE.check("s04.release_blocks", hidden=True, sibling="shared_blocks_stay_in_use")
def shared_path_released_by_both(impl):
    out = []
    for order in (("a", "b"), ("b", "a")):
        pool = impl.EvictionPool(10, 1)
        for rid, tail in (("a", [10, 11]), ("b", [20])):
            pool.admit(rid, [1, 2, 3, 4] + tail)
            pool.commit(rid)
        trail = []
        for rid in order:
            pool.release(rid)
            trail.append(record(cached_free_order=cached_ids(pool), ref_counts=[b.ref_count for b in pool.blocks]))
        out.append(record(order=list(order), trail=trail, violations=pool.violations()))
    return out


# -- TODO 5: pin ------------------------------------------------------------------------------------------
@STAGE.check("s04.pin", hidden=True, sibling="pin_in_use_block")
def pinned_shared_block_after_both_release(impl):
    pool = impl.EvictionPool(8, 1, max_pinned=2)
    for rid, tail in (("a", 10), ("b", 20)):
        pool.admit(rid, [1, 2, 3, tail])
        pool.commit(rid)
    block = pool.cached[pool.keys_of([1, 2])[1]]
    ok = pool.pin(block)
    during = record(ref_count=block.ref_count, in_free_queue=block in pool.free_queue)
    pool.release("a")
    pool.release("b")
    after = record(ref_count=block.ref_count, in_free_queue=block in pool.free_queue, violations=pool.violations())
    pool.unpin(block)
    return record(pinned=ok, during=during, after_release=after, after_unpin=cached_ids(pool))


@STAGE.check("s04.pin", hidden=True, sibling="pin_in_use_block")
def pin_a_block_under_a_residence_hold(impl):
    clock = Clock()
    pool = impl.EvictionPool(4, 1, max_pinned=1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])
    block = pool.cached[pool.keys_of([1])[0]]
    ok = caught(lambda: pool.pin(block))
    clock.t = 10.0
    ended = pool.expire()
    return record(pin_raised=ok, ref_count=block.ref_count, in_free_queue=block in pool.free_queue,
                  holds_ended=ended, free_blocks=len(pool.free_queue), violations=pool.violations())


@STAGE.check("s04.pin", hidden=True, sibling="pinned_prefix_survives_churn")
def pinning_replays(impl):
    out = []
    for trace, cap in ((thrashing_traffic(200, num_prompts=8, prompt_blocks=6, seed=3), 30),
                       (rag_traffic(200, num_docs=30, doc_blocks=(2, 6), seed=3), 40)):
        r = impl.simulate_with(trace, cap, impl.Policy("pin", max_pinned=cap // 2), pool_cls=impl.EvictionPool)
        out.append((r.hit_blocks, r.rejected))
    return out


@STAGE.check("s04.pin", hidden=True, sibling="zero_cap_is_a_cap")
def zero_cap_pins_nothing(impl):
    pool = impl.EvictionPool(3, 1, max_pinned=0)
    run(pool, "a", [5, 6])
    block = pool.cached[pool.keys_of([5])[0]]
    return pool.pin(block), pool.num_pinned, block.ref_count, len(pool.free_queue)


# -- TODO 6: expire -------------------------------------------------------------------------------------
@STAGE.check("s04.expire", hidden=True, sibling="holds_end_oldest_first")
def residence_replays(impl):
    trace = thrashing_traffic(200, num_prompts=8, prompt_blocks=6, seed=5)
    out = []
    for t in (0.5, 2.0):
        r = impl.simulate_with(trace, 30, impl.Policy("res", min_residence=t), pool_cls=impl.EvictionPool)
        out.append((r.hit_blocks, r.rejected))
    return out


@STAGE.check("s04.expire", hidden=True, sibling="holds_registered_together_end_together")
def many_holds_end_together(impl):
    clock = Clock()
    pool = impl.EvictionPool(12, 1, min_residence=4.0, clock=clock)
    counts = []
    for i in range(4):
        clock.t = float(i)
        run(pool, f"r{i}", [10 * i + 1, 10 * i + 2])
    for t in (3.9, 5.0, 7.0, 100.0):
        clock.t = t
        counts.append((pool.expire(), len(pool.free_queue)))
    return counts, pool.violations()


@STAGE.check("s04.expire", hidden=True, sibling="young_blocks_are_held")
def expire_reads_the_pools_clock(impl):
    clock = Clock(1e9)
    pool = impl.EvictionPool(6, 1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])
    counts = []
    for t in (1e9 + 5.0, 1e9 + 10.0):
        clock.t = t
        counts.append(record(ended=pool.expire(), free_blocks=len(pool.free_queue)))
    return counts


# -- stale KV on every reuse path ----------------------------------------------------------------------
def _stale_churn(impl, seed: int, steps: int = 160) -> dict:
    """Random traffic through an EvictionPool with pins and a residence time: admissions, commits,
    releases, pins and unpins, so blocks are evicted and reallocated (popleft), revived (remove), held
    (pin, residence) and freed (release_blocks) all the time. The ground truth knows nothing of keys or
    links: a hit must read exactly the prefix it asked for, and no block may be handed out as a fresh
    block while a live request holds it or while it is pinned. Returns how many times either failed,
    the first one, and the first broken invariant."""
    rng = random.Random(seed)
    clock = Clock()
    pool = impl.EvictionPool(8, 2, max_pinned=2, min_residence=1.5, clock=clock)
    prefill = Prefill(pool)
    heads = [[1, 1, 2, 2], [1, 1, 3, 3], [4, 4], [5, 6, 7, 8, 9, 9]]
    live: list[str] = []
    pending: list[str] = []
    pinned: dict[int, object] = {}
    overwritten_pins: list[dict] = []
    broken = None
    for step in range(steps):
        clock.t = step * 0.5
        roll = rng.random()
        if roll < 0.45 or not live:
            rid = f"r{step}"
            tokens = rng.choice(heads) + [rng.randrange(3) for _ in range(rng.randint(0, 3))]
            try:
                a = prefill.admit(rid, tokens)
            except Exception as exc:  # noqa: BLE001 - a refusal is part of the traffic, anything else is the answer
                if type(exc).__name__ != "PoolFullError":
                    raise
            else:
                live.append(rid)
                pending.append(rid)
                overwritten_pins += [record(request=rid, block=b) for b in a.block_table[a.hit_blocks:] if b in pinned]
        elif roll < 0.65 and pending:
            prefill.commit(pending.pop(rng.randrange(len(pending))))
        elif roll < 0.75:
            for key in pool.keys_of(rng.choice(heads)):
                block = pool.cached.get(key)
                if block is None or not pool.pin(block):
                    break
                pinned[block.block_id] = block
        elif roll < 0.8 and pinned:
            pool.unpin(pinned.pop(rng.choice(sorted(pinned))))
        else:
            rid = live.pop(rng.randrange(len(live)))
            if rid in pending:
                pending.remove(rid)
            prefill.release(rid)
        if broken is None and pool.violations():
            broken = record(step=step, violation=pool.violations()[0])
    stale = prefill.stale + overwritten_pins
    return record(stale=len(stale), first_stale=stale[0] if stale else None, first_broken_invariant=broken)


@STAGE.check("s04.popleft", hidden=True, sibling="popped_blocks_leave_the_queue")
def no_stale_kv_through_eviction(impl):
    return [_stale_churn(impl, seed) for seed in (51, 52)]


@STAGE.check("s04.remove", hidden=True, sibling="revive_path_through_the_pool")
def no_stale_kv_through_revival(impl):
    return [_stale_churn(impl, seed) for seed in (53, 54)]


@STAGE.check("s04.release_blocks", hidden=True, sibling="shared_blocks_stay_in_use")
def no_stale_kv_through_release(impl):
    return [_stale_churn(impl, seed) for seed in (55, 56)]


@STAGE.check("s04.pin", hidden=True, sibling="free_block_leaves_the_queue")
def no_stale_kv_through_pins(impl):
    return [_stale_churn(impl, seed) for seed in (57, 58)]

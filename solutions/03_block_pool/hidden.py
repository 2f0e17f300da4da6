"""Hidden checks of stage 3: capacity corner cases, shared blocks, stale hits, the revive path, random
sequences and cost budgets. Never shipped to learners. Like the public ones, no probe depends on the
order in which ``release`` frees blocks.
Their titles and hints, in both languages, are in ``hidden.toml`` beside this module."""
from __future__ import annotations

import random

from autograder.checks.common import record, within_budget
from autograder.checks.s03 import STAGE, Prefill, admission, attempt, committed, ids, pool_state, revive_twice

# -- cost budgets ------------------------------------------------------------------------------------
# A pool of BIG blocks (fewer for lookup and allocate_block, below), every one of them cached (a server
# that has run for a while). The reference
# does each operation with a few dict and queue operations: lookup ~0.2 us per key, allocate_block
# ~1 us, admit ~10 us. One that scans the cache map or walks the pool costs 2-100 ms per call at this
# size (measured on the 2-core CI machine: admit through num_in_use 1.8 ms, a lookup that scans the
# cached keys ~25 ms, an allocate_block that scans the cache map for its key 110 ms). Each probe runs
# a fixed number of calls that the reference finishes in about 0.1 s of CPU (pool included) and
# that an O(pool) implementation needs 10-1000x the budget for; it stops as soon as BUDGET_S of CPU
# is spent (checked every batch, sized so that one batch of the slow variant stays under ~1 s), well
# inside the grader's time limit. So each probe's budget is ~20x what the reference needs there (a
# loaded machine cannot fail it) and ~10x below what the cheapest slow variant needs (a faster machine
# cannot pass it): admit's BUDGET_S, lookup's and allocate_block's SMALL_BUDGET_S (their reference needs
# less than half of admit's). No budget is larger than that margin needs: a wrong answer spends it all.
# CPU time of this process, not wall time: the grader's children share two cores with everything else. The clock is bound here, when the grader imports
# this module, before any learner code runs.
BIG = 100_000
BUDGET_S = 2.0
SMALL_BUDGET_S = 1.0
# The lookup probe's pool is smaller and its calls more: a scan's cost grows with pool size x calls,
# which stays what it was at 100,000 blocks x 2,000 calls, while the reference, whose cost is mostly
# building the pool, needs 0.035 s instead of 0.09 s.
LOOKUP_POOL, LOOKUP_CALLS = 40_000, 5_000
# allocate_block's probe takes at most one block per call, so its calls cannot outnumber the pool. An
# allocate_block that walks the whole cache map to find its block's key (about 18 ns an entry: the map
# shrinks by one each call) needs 10x the budget for 35,000 calls on 50,000 blocks; the reference needs
# about 0.055 s there (0.10 s for 30,000 calls on 100,000 blocks, mostly building the pool).
ALLOCATE_POOL, ALLOCATE_CALLS = 50_000, 35_000


def _within_budget(op, n_calls: int, batch: int = 50, budget_s: float = BUDGET_S) -> bool:
    return within_budget(op, n_calls, budget_s, batch)


def _synthetic_key(i: int) -> bytes:
    """A 32-byte key as chain_keys makes them; admit(..., keys=...) and lookup only compare keys."""
    return b"pcw-cost" + i.to_bytes(24, "big")


def _small_pool_first(impl, op) -> None:
    """Call ``op`` once on a fresh 4-block pool before the big pool is built: an unfilled TODO (or one
    that raises at once) fails here as it would there, without the big pool's cost."""
    op(impl.BlockPool(4, 4))


def _big_cached_pool(impl, n: int = BIG, block_size: int = 4):
    """A pool of ``n`` free blocks, each cached under its own key: as after many requests came and went.
    Built through the pool's documented state (blocks, cached), so no TODO runs while building it."""
    pool = impl.BlockPool(n, block_size)
    keys = [_synthetic_key(i) for i in range(n)]
    for block, key in zip(pool.blocks, keys, strict=False):  # a learner's pool may hold another number
        block.key = key
        pool.cached[key] = block
    return pool, keys


def _random_requests(seed: int, n: int):
    """Prompts that share heads, over a tiny vocabulary."""
    rng = random.Random(seed)
    heads = [[1, 2, 3, 4], [1, 2, 3, 5], [2, 2, 2, 2, 2, 2], []]
    for _ in range(n):
        tokens = rng.choice(heads) + [rng.randrange(3) for _ in range(rng.randint(0, 5))]
        yield tokens or [0]


def _churn(impl, seed: int, num_blocks: int = 6, steps: int = 120) -> dict:
    """Random admit / commit / release on a small pool, so cached blocks are reused all the time.

    Returns only what holds whatever order ``release`` frees blocks in: how many hits were stale
    (read KV written for another prefix, or not written yet), the first one, and the first broken
    invariant after any step."""
    rng = random.Random(seed)
    pool = impl.BlockPool(num_blocks, 2)
    prefill = Prefill(pool)
    heads = [[1, 2, 3, 4], [1, 2, 3, 5], [2, 2], [5, 6, 7, 8, 9, 9]]
    live: list[str] = []
    pending: list[str] = []
    broken = None
    for step in range(steps):
        roll = rng.random()
        if roll < 0.45 or not live:
            rid = f"r{step}"
            tokens = rng.choice(heads) + [rng.randrange(3) for _ in range(rng.randint(0, 3))]
            try:
                prefill.admit(rid, tokens)
            except Exception as exc:  # noqa: BLE001 - a refusal is part of the traffic, anything else is the answer
                if type(exc).__name__ != "PoolFullError":
                    raise
            else:
                live.append(rid)
                pending.append(rid)
        elif roll < 0.75 and pending:
            prefill.commit(pending.pop(rng.randrange(len(pending))))
        else:
            rid = live.pop(rng.randrange(len(live)))
            if rid in pending:
                pending.remove(rid)
            prefill.release(rid)
        if broken is None and pool.violations():
            broken = record(step=step, violation=pool.violations()[0])
    return record(stale_hits=len(prefill.stale), first_stale=prefill.stale[0] if prefill.stale else None,
                  first_broken_invariant=broken)


# -- TODO 1 -------------------------------------------------------------------------------------
@STAGE.check("s03.lookup", hidden=True, sibling="looks_without_touching")
def lookup_changes_nothing(impl):
    pool = committed(impl, 6, 2, [1, 2, 3, 4, 5])
    pool.release("a")
    before = pool_state(pool)
    found = ids(pool.lookup(pool.keys_of([1, 2, 3, 4, 5]), 5))
    return record(found=found, unchanged=before == pool_state(pool), pool=pool_state(pool))


@STAGE.check("s03.lookup", hidden=True, sibling="leaves_one_token_to_compute")
def tiny_prompts(impl):
    pool = committed(impl, 6, 1, [7, 8, 9])
    return record(one_token=ids(pool.lookup(pool.keys_of([7]), 1)), no_keys=ids(pool.lookup([], 3)),
                  two_tokens=ids(pool.lookup(pool.keys_of([7, 8]), 2)))


@STAGE.check("s03.lookup", hidden=True, sibling="stops_at_first_miss")
def random_lookups(impl):
    pool = impl.BlockPool(64, 2)
    out = []
    for i, tokens in enumerate(_random_requests(31, 25)):
        keys = pool.keys_of(tokens)
        out.append(ids(pool.lookup(keys, len(tokens))))
        pool.admit(f"r{i}", tokens)
        pool.commit(f"r{i}")
    return out


@STAGE.check("s03.lookup", hidden=True, sibling="lookup_never_walks_the_pool")
def lookup_cost_does_not_grow_with_the_pool(impl):
    _small_pool_first(impl, lambda pool: pool.lookup(pool.keys_of([1, 2, 3, 4, 5]), 5))
    pool, keys = _big_cached_pool(impl, LOOKUP_POOL)
    rng = random.Random(5)
    queries = []
    for _ in range(LOOKUP_CALLS):
        start = rng.randrange(LOOKUP_POOL - 8)
        queries.append(keys[start: start + 8] + [b"?" * 32])  # 8 cached keys, then a miss
    found: list[int] = []
    fast = _within_budget(lambda i: found.append(len(pool.lookup(queries[i], 9 * 4 + 1))), len(queries), batch=20,
                          budget_s=SMALL_BUDGET_S)
    return record(within_budget=fast, hits_per_lookup=sorted(set(found)) if fast else None)


# -- TODO 2 -------------------------------------------------------------------------------------
@STAGE.check("s03.allocate_block", hidden=True, sibling="other_cached_blocks_stay")
def evicts_only_the_reused_block(impl):
    pool = committed(impl, 3, 2, [1, 2], [3, 4])  # two single-block requests: blocks 0 and 1
    pool.release("a")
    pool.release("a1")
    states = []
    for _ in range(3):
        block = pool.allocate_block()
        states.append(record(block_id=block.block_id, ref_count=block.ref_count, key=block.key, pool=pool_state(pool)))
    return states


@STAGE.check("s03.allocate_block", hidden=True, sibling="overwritten_kv_is_never_hit")
def reuse_through_admit(impl):
    pool = committed(impl, 3, 2, [1, 2, 3, 4, 5])
    pool.release("a")
    b = pool.admit("b", [9] * 5)  # needs all 3 blocks: every cached one is reused
    pool.release("b")
    c = pool.admit("c", [1, 2, 3, 4, 5])
    return record(b_hits=b.hit_blocks, b_blocks=sorted(b.block_table), pool=pool_state(pool),
                  c_hits=c.hit_blocks, c_blocks=sorted(c.block_table))


@STAGE.check("s03.allocate_block", hidden=True, sibling="overwritten_kv_is_never_hit")
def no_stale_hits_under_churn(impl):
    return [_churn(impl, seed) for seed in (41, 42)]


@STAGE.check("s03.allocate_block", hidden=True, sibling="allocate_never_walks_the_pool")
def allocate_cost_does_not_grow_with_the_pool(impl):
    _small_pool_first(impl, lambda pool: pool.allocate_block())
    pool, _ = _big_cached_pool(impl, ALLOCATE_POOL)
    fast = _within_budget(lambda i: pool.allocate_block(), ALLOCATE_CALLS, batch=5, budget_s=SMALL_BUDGET_S)
    return record(within_budget=fast, cached_left=len(pool.cached) if fast else None,
                  free_left=len(pool.free_queue) if fast else None)


# -- TODO 3 -------------------------------------------------------------------------------------
@STAGE.check("s03.admit", hidden=True, sibling="revived_hit_is_not_a_fresh_block")
def revived_hits_count_against_capacity(impl):
    pool = committed(impl, 4, 4, list(range(12)) + [99])  # all 4 blocks, 3 of them cached
    pool.release("a")
    refused = attempt(lambda: admission(pool.admit("b", list(range(12)) + list(range(50, 55)))))
    after_refusal = pool_state(pool)
    fits = admission(pool.admit("c", list(range(12)) + [7]))
    return record(b=refused, after_refusal=after_refusal, c=fits, pool=pool_state(pool))


@STAGE.check("s03.admit", hidden=True, sibling="hits_share_physical_blocks")
def hit_on_a_block_in_use(impl):
    pool = committed(impl, 8, 2, [1, 2, 3, 4, 5])
    b = admission(pool.admit("b", [1, 2, 3, 4, 6]))
    c = admission(pool.admit("c", [1, 2, 7]))
    return record(b=b, c=c, pool=pool_state(pool))


@STAGE.check("s03.admit", hidden=True, sibling="hits_share_physical_blocks")
def aligned_prompt_recomputes_last_block(impl):
    pool = committed(impl, 8, 4, list(range(8)))
    return record(b=admission(pool.admit("b", list(range(8)))), pool=pool_state(pool))


@STAGE.check("s03.admit", hidden=True, sibling="cached_hit_next_in_line")
def hits_are_taken_before_allocating(impl):
    pool = impl.BlockPool(3, 2)
    pool.admit("x", [7])            # block 0
    pool.admit("a", [1, 2])         # block 1
    pool.commit("a")                # block 1 cached as [1, 2]
    pool.release("a")
    pool.release("x")               # free queue: 2, 1, 0
    pool.admit("y", [8])            # takes block 2; the cached block 1 is next in line
    return record(b=admission(pool.admit("b", [1, 2, 9])), pool=pool_state(pool))


@STAGE.check("s03.admit", hidden=True, sibling="revived_blocks_stay_cached")
def revive_again_and_again(impl):
    pool = impl.BlockPool(40, 2)
    salt = [("salt", "t1")]
    rounds = []
    for r in range(4):
        a = admission(pool.admit(f"r{r}", [5, 6, 7, 8, 9, r], salt))
        pool.commit(f"r{r}")
        pool.release(f"r{r}")
        rounds.append(a)
    return record(rounds=rounds, pool=pool_state(pool))


@STAGE.check("s03.admit", hidden=True, sibling="full_pool_refuses_cleanly")
def random_admissions(impl):
    pool = impl.BlockPool(40, 2)
    out = []
    for i, tokens in enumerate(_random_requests(32, 30)):
        out.append(attempt(lambda: admission(pool.admit(f"r{i}", tokens))))  # noqa: B023 - attempt() calls it at once
        if i % 3 != 2 and f"r{i}" in pool.requests:
            pool.commit(f"r{i}")
    return record(admissions=out, pool=pool_state(pool))


@STAGE.check("s03.admit", hidden=True, sibling="admit_never_walks_the_pool")
def admit_cost_does_not_grow_with_the_pool(impl):
    _small_pool_first(impl, lambda pool: pool.admit("r", list(range(9))))
    pool, keys = _big_cached_pool(impl)
    n = 10_000
    # Request i hits two cached free blocks at the far end of the queue and needs one fresh block,
    # taken from the front: hits and fresh blocks never collide.
    # zh: 第 i 个请求命中队列末端的两个空闲缓存块，再从队首取一个新块：命中块和新块互不重叠。
    tokens = list(range(9))
    hit_keys = [[keys[BIG - 1 - 2 * i], keys[BIG - 2 - 2 * i]] for i in range(n)]
    tables: list[int] = []
    fast = _within_budget(lambda i: tables.append(pool.admit(f"r{i}", tokens, keys=hit_keys[i]).hit_blocks), n, batch=20)
    return record(within_budget=fast, hit_blocks=sorted(set(tables)) if fast else None,
                  free_left=len(pool.free_queue) if fast else None)


@STAGE.check("s03.admit", hidden=True, sibling="fresh_blocks_forget_old_keys")
def no_stale_hits_through_admit(impl):
    return [_churn(impl, seed) for seed in (43, 44)]


# -- TODO 4 -------------------------------------------------------------------------------------
@STAGE.check("s03.commit", hidden=True, sibling="first_writer_wins")
def duplicate_of_a_cached_block(impl):
    pool = committed(impl, 8, 4, list(range(8)))
    pool.admit("b", list(range(8)))
    pool.commit("b")
    return pool_state(pool)


@STAGE.check("s03.commit", hidden=True, sibling="overlapping_requests_admitted_before_either_commits")
def three_overlapping_admissions(impl):
    pool = impl.BlockPool(16, 3)
    base = [5, 3, 5, 8, 9, 7, 9, 3, 2]
    pool.admit("mid", base[:6] + [1])
    pool.admit("long", base + [3, 8, 4, 6])
    pool.admit("short", base[:3])
    for rid in ("short", "mid", "long"):
        pool.commit(rid)
    return record(again=admission(pool.admit("again", base + [3, 8, 4, 6])), pool=pool_state(pool))


@STAGE.check("s03.commit", hidden=True, sibling="keys_hashed_with_extra_keys")
def keys_keep_extra_keys(impl):
    pool = impl.BlockPool(8, 2)
    pool.admit("a", [1, 2, 3, 4, 5], [("salt", "t1")])
    pool.commit("a")
    salted = ids(pool.lookup(pool.keys_of([1, 2, 3, 4, 5], [("salt", "t1")]), 5))
    plain = ids(pool.lookup(pool.keys_of([1, 2, 3, 4, 5]), 5))
    return record(salted=salted, plain=plain, pool=pool_state(pool))


@STAGE.check("s03.commit", hidden=True, sibling="registers_full_blocks")
def committed_blocks_can_be_evicted(impl):
    pool = committed(impl, 2, 2, [1, 2, 3])
    pool.release("a")
    pool.admit("c", [7, 7, 7, 7])  # reuses both blocks
    return record(pool=pool_state(pool), lookup_after=ids(pool.lookup(pool.keys_of([1, 2, 3]), 3)))


# -- TODO 5 -------------------------------------------------------------------------------------
@STAGE.check("s03.release", hidden=True, sibling="drops_one_reference")
def release_everything(impl):
    pool = impl.BlockPool(200, 2)  # large enough that no freed block is handed out again
    live = []
    for i, tokens in enumerate(_random_requests(33, 30)):
        pool.admit(f"r{i}", tokens)
        if i % 2 == 0:
            pool.commit(f"r{i}")
        live.append(f"r{i}")
        if i % 4 == 3:
            pool.release(live.pop(0))
    mid = pool_state(pool)
    for rid in live:
        pool.release(rid)
    return record(midway=mid, at_the_end=pool_state(pool))


@STAGE.check("s03.release", hidden=True, sibling="released_before_commit_and_twice")
def release_before_commit(impl):
    pool = impl.BlockPool(6, 2)
    pool.admit("a", [1, 2, 3])
    pool.release("a")
    return record(after_release=pool_state(pool), again=admission(pool.admit("a", [1, 2, 3])), pool=pool_state(pool))


@STAGE.check("s03.release", hidden=True, sibling="released_before_commit_and_twice")
def release_twice(impl):
    pool = committed(impl, 6, 2, [1, 2, 3])
    pool.release("a")
    return record(twice=attempt(lambda: pool.release("a")), unknown=attempt(lambda: pool.release("nope")),
                  pool=pool_state(pool))


@STAGE.check("s03.release", hidden=True, sibling="hits_are_released_too")
def released_hits_can_be_revived_again(impl):
    return revive_twice(impl)

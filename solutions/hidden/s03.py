"""Hidden checks of stage 3: capacity corner cases, shared blocks, random sequences. Never shipped
to learners. Like the public ones, no probe depends on the order in which ``release`` frees blocks."""
from __future__ import annotations

import random

from autograder.checks.s03 import STAGE, admission, attempt, committed, ids, pool_state


def _random_requests(seed: int, n: int):
    """Prompts that share heads, over a tiny vocabulary."""
    rng = random.Random(seed)
    heads = [[1, 2, 3, 4], [1, 2, 3, 5], [2, 2, 2, 2, 2, 2], []]
    for _ in range(n):
        tokens = rng.choice(heads) + [rng.randrange(3) for _ in range(rng.randint(0, 5))]
        yield tokens or [0]


# -- TODO 1 -------------------------------------------------------------------------------------
@STAGE.check("s03.lookup", hidden=True, hint="lookup only looks: no ref count, free queue or cache entry changes.")
def lookup_changes_nothing(impl):
    pool = committed(impl, 6, 2, [1, 2, 3, 4, 5])
    pool.release("a")
    before = pool_state(pool)
    found = ids(pool.lookup(pool.keys_of([1, 2, 3, 4, 5]), 5))
    return found, before == pool_state(pool), pool_state(pool)


@STAGE.check("s03.lookup", hidden=True, hint="A one-token prompt never hits; an empty key list finds nothing.")
def tiny_prompts(impl):
    pool = committed(impl, 6, 1, [7, 8, 9])
    return ids(pool.lookup(pool.keys_of([7]), 1)), ids(pool.lookup([], 3)), ids(pool.lookup(pool.keys_of([7, 8]), 2))


@STAGE.check("s03.lookup", hidden=True, hint="Random prompts against a warm pool: hits are the leading cached run, capped.")
def random_lookups(impl):
    pool = impl.BlockPool(64, 2)
    out = []
    for i, tokens in enumerate(_random_requests(31, 25)):
        keys = pool.keys_of(tokens)
        out.append(ids(pool.lookup(keys, len(tokens))))
        pool.admit(f"r{i}", tokens)
        pool.commit(f"r{i}")
    return out


# -- TODO 2 -------------------------------------------------------------------------------------
@STAGE.check("s03.allocate_block", hidden=True, hint="Evict only the key of the block you hand out; other cached blocks stay.")
def evicts_only_the_reused_block(impl):
    pool = committed(impl, 3, 2, [1, 2], [3, 4])  # two single-block requests: blocks 0 and 1
    pool.release("a")
    pool.release("a1")
    states = []
    for _ in range(3):
        block = pool.allocate_block()
        states.append((block.block_id, block.ref_count, block.key, pool_state(pool)))
    return states


@STAGE.check("s03.allocate_block", hidden=True, hint="After reuse a block holds new content: ref_count 1, no key, old key gone.")
def reuse_through_admit(impl):
    pool = committed(impl, 3, 2, [1, 2, 3, 4, 5])
    pool.release("a")
    b = pool.admit("b", [9] * 5)  # needs all 3 blocks: every cached one is reused
    pool.release("b")
    c = pool.admit("c", [1, 2, 3, 4, 5])
    return (b.hit_blocks, sorted(b.block_table)), pool_state(pool), (c.hit_blocks, sorted(c.block_table))


# -- TODO 3 -------------------------------------------------------------------------------------
@STAGE.check("s03.admit", hidden=True,
             hint="A hit on a free cached block leaves the free queue, so it cannot also be a fresh block: "
                  "count it against the free blocks.")
def revived_hits_count_against_capacity(impl):
    pool = committed(impl, 4, 4, list(range(12)) + [99])  # all 4 blocks, 3 of them cached
    pool.release("a")
    refused = attempt(lambda: admission(pool.admit("b", list(range(12)) + list(range(50, 55)))))
    after_refusal = pool_state(pool)
    fits = admission(pool.admit("c", list(range(12)) + [7]))
    return refused, after_refusal, fits, pool_state(pool)


@STAGE.check("s03.admit", hidden=True, hint="A hit on a block in use just gains a reference; only a free block leaves the free queue.")
def hit_on_a_block_in_use(impl):
    pool = committed(impl, 8, 2, [1, 2, 3, 4, 5])
    b = admission(pool.admit("b", [1, 2, 3, 4, 6]))
    c = admission(pool.admit("c", [1, 2, 7]))
    return b, c, pool_state(pool)


@STAGE.check("s03.admit", hidden=True, hint="A fully cached, block-aligned prompt hits all but its last block.")
def aligned_prompt_recomputes_last_block(impl):
    pool = committed(impl, 8, 4, list(range(8)))
    return admission(pool.admit("b", list(range(8)))), pool_state(pool)


@STAGE.check("s03.admit", hidden=True, hint="Take the hits out of the free queue before you allocate fresh blocks.")
def hits_are_taken_before_allocating(impl):
    pool = impl.BlockPool(3, 2)
    pool.admit("x", [7])            # block 0
    pool.admit("a", [1, 2])         # block 1
    pool.commit("a")                # block 1 cached as [1, 2]
    pool.release("a")
    pool.release("x")               # free queue: 2, 1, 0
    pool.admit("y", [8])            # takes block 2; the cached block 1 is next in line
    return admission(pool.admit("b", [1, 2, 9])), pool_state(pool)


@STAGE.check("s03.admit", hidden=True, hint="Random admissions: hits, fresh blocks and refusals as the reference decides them.")
def random_admissions(impl):
    pool = impl.BlockPool(40, 2)
    out = []
    for i, tokens in enumerate(_random_requests(32, 30)):
        out.append(attempt(lambda: admission(pool.admit(f"r{i}", tokens))))
        if i % 3 != 2 and f"r{i}" in pool.requests:
            pool.commit(f"r{i}")
    return out, pool_state(pool)


# -- TODO 4 -------------------------------------------------------------------------------------
@STAGE.check("s03.commit", hidden=True, hint="The recomputed last block of a fully cached prompt is a duplicate: leave it unkeyed.")
def duplicate_of_a_cached_block(impl):
    pool = committed(impl, 8, 4, list(range(8)))
    pool.admit("b", list(range(8)))
    pool.commit("b")
    return pool_state(pool)


@STAGE.check("s03.commit", hidden=True, hint="Use the keys admit stored (with the request's extra keys), not a fresh hash without them.")
def keys_keep_extra_keys(impl):
    pool = impl.BlockPool(8, 2)
    pool.admit("a", [1, 2, 3, 4, 5], [("salt", "t1")])
    pool.commit("a")
    salted = ids(pool.lookup(pool.keys_of([1, 2, 3, 4, 5], [("salt", "t1")]), 5))
    plain = ids(pool.lookup(pool.keys_of([1, 2, 3, 4, 5]), 5))
    return salted, plain, pool_state(pool)


@STAGE.check("s03.commit", hidden=True, hint="Set block.key too: eviction reads it to drop the block's entry from self.cached.")
def committed_blocks_can_be_evicted(impl):
    pool = committed(impl, 2, 2, [1, 2, 3])
    pool.release("a")
    pool.admit("c", [7, 7, 7, 7])  # reuses both blocks
    return pool_state(pool), ids(pool.lookup(pool.keys_of([1, 2, 3]), 3))


# -- TODO 5 -------------------------------------------------------------------------------------
@STAGE.check("s03.release", hidden=True, hint="After every request is released, every block is free and none is negative.")
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
    return mid, pool_state(pool)


@STAGE.check("s03.release", hidden=True, hint="A request released before commit frees its blocks without keys; its id can be used again.")
def release_before_commit(impl):
    pool = impl.BlockPool(6, 2)
    pool.admit("a", [1, 2, 3])
    pool.release("a")
    return pool_state(pool), admission(pool.admit("a", [1, 2, 3])), pool_state(pool)


@STAGE.check("s03.release", hidden=True, hint="Releasing an unknown or already released request raises KeyError and changes nothing.")
def release_twice(impl):
    pool = committed(impl, 6, 2, [1, 2, 3])
    pool.release("a")
    return attempt(lambda: pool.release("a")), attempt(lambda: pool.release("nope")), pool_state(pool)

"""Stage 3 spec and public checks: block pool, ref counts and block tables.

Probes summarise a pool as plain data (:func:`pool_state`) and never depend on the order in which
``release`` hands blocks to the free queue (stage 4 decides that order): a setup either frees
single-block requests, or reuses every freed block, or leaves enough never-used blocks that no
freed block is handed out again.
"""
from __future__ import annotations

from autograder.checks.common import attempt  # noqa: F401 (hidden checks import it from here)
from autograder.spec import Stage, Todo

STAGE = Stage(
    id="s03",
    title="Block pool and block tables",
    subtitle="块池与块表",
    summary="a block pool: ref-counted physical blocks, per-request block tables, commit after prefill",
    todos=[
        Todo("s03.lookup", 1, target="BlockPool.lookup", points=2, title="find the cached leading blocks"),
        Todo("s03.allocate_block", 2, target="BlockPool.allocate_block", points=2,
             title="hand out a free block, forgetting its old key"),
        Todo("s03.admit", 3, target="BlockPool.admit", points=3, title="admit a request: hits, capacity, fresh blocks"),
        Todo("s03.commit", 4, target="BlockPool.commit", points=2, title="register blocks after prefill"),
        Todo("s03.release", 5, target="BlockPool.release", points=2, title="release a request's blocks"),
    ],
    time_limit_s=10,
    memory_limit_mb=512,
)


def pool_state(pool) -> dict:
    """A pool as plain data: ref counts, number of free blocks, cached and keyed block ids."""
    return {
        "ref_counts": [b.ref_count for b in pool.blocks],
        "free": len(pool.free_queue),
        "cached_blocks": sorted(b.block_id for b in pool.cached.values()),
        "keyed_blocks": [b.block_id for b in pool.blocks if b.key is not None],
        "requests": sorted(pool.requests),
    }


def admission(a) -> list:
    return [a.request_id, a.block_table, a.hit_blocks, a.hit_tokens]


def ids(blocks) -> list:
    return [b.block_id for b in blocks]


def committed(impl, num_blocks: int, block_size: int, *prompts):
    """A pool in which each prompt was admitted (as 'a', then 'a1', 'a2', ...) and committed."""
    pool = impl.BlockPool(num_blocks, block_size)
    for i, tokens in enumerate(prompts):
        rid = f"a{i}" if i else "a"
        pool.admit(rid, tokens)
        pool.commit(rid)
    return pool


# -- TODO 1: lookup -------------------------------------------------------------------------------
@STAGE.check("s03.lookup",
             call="pool = BlockPool(8, 4); admit + commit range(10); ids(pool.lookup(pool.keys_of(range(10)), 10))",
             hint="Return the cached Block objects of the leading keys: self.cached[key] for each hit.")
def hits_after_commit(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return ids(pool.lookup(pool.keys_of(list(range(10))), 10))


@STAGE.check("s03.lookup",
             call="same pool; keys = pool.keys_of(range(10)); ids(lookup([b'?' * 32] + keys[1:], 10)), "
                  "ids(lookup(keys[:1] + [b'?' * 32], 10))",
             hint="Stop at the first key that is not cached; keys after a miss never count.")
def stops_at_first_miss(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    keys = pool.keys_of(list(range(10)))
    return ids(pool.lookup([b"?" * 32] + keys[1:], 10)), ids(pool.lookup(keys[:1] + [b"?" * 32], 10))


@STAGE.check("s03.lookup",
             call="pool with range(8) committed (block size 4); keys = pool.keys_of(range(8)); "
                  "[ids(pool.lookup(keys, n)) for n in (8, 9, 5, 4)]",
             hint="At most (num_tokens - 1) // block_size hits: at least one prompt token is always computed.")
def leaves_one_token_to_compute(impl):
    pool = committed(impl, 8, 4, list(range(8)))
    keys = pool.keys_of(list(range(8)))
    return [ids(pool.lookup(keys, n)) for n in (8, 9, 5, 4)]


# -- TODO 2: allocate_block -----------------------------------------------------------------------
@STAGE.check("s03.allocate_block", call="pool = BlockPool(4, 2); b = pool.allocate_block(); "
                                         "b.block_id, b.ref_count, b.key, pool_state(pool)",
             hint="Pop the next free block, give it ref_count 1 and no key.")
def fresh_pool(impl):
    pool = impl.BlockPool(4, 2)
    b = pool.allocate_block()
    return b.block_id, b.ref_count, b.key, pool_state(pool)


@STAGE.check("s03.allocate_block",
             call="pool = BlockPool(2, 2); admit, commit, release [1, 2, 3]; taken = allocate_block() twice; "
                  "sorted(ids(taken)), pool_state(pool), ids(pool.lookup(pool.keys_of([1, 2, 3]), 3))",
             hint="A reused block's old key must stop hitting: delete it from self.cached and set block.key = None.")
def reuse_forgets_the_old_key(impl):
    pool = impl.BlockPool(2, 2)
    pool.admit("a", [1, 2, 3])
    pool.commit("a")
    pool.release("a")
    taken = [pool.allocate_block(), pool.allocate_block()]
    return sorted(ids(taken)), pool_state(pool), ids(pool.lookup(pool.keys_of([1, 2, 3]), 3))


@STAGE.check("s03.allocate_block", call="pool = BlockPool(1, 2); first = pool.allocate_block(); "
                                         "first.block_id, pool_state(pool), pool.allocate_block().block_id -> ?",
             hint="Take the block out of the free queue (popleft), so it cannot be handed out twice.")
def a_block_is_handed_out_once(impl):
    pool = impl.BlockPool(1, 2)
    first = pool.allocate_block()
    return first.block_id, pool_state(pool), attempt(lambda: pool.allocate_block().block_id)


# -- TODO 3: admit --------------------------------------------------------------------------------
@STAGE.check("s03.admit", call="pool = BlockPool(8, 4); admission(pool.admit('a', list(range(10)))), pool_state(pool)",
             hint="Nothing is cached yet: ceil(10 / 4) = 3 fresh blocks, 0 hits.")
def fresh_admission(impl):
    pool = impl.BlockPool(8, 4)
    return admission(pool.admit("a", list(range(10)))), pool_state(pool)


@STAGE.check("s03.admit",
             call="pool = BlockPool(8, 4); admit + commit 'a' = range(10); "
                  "admission(pool.admit('b', list(range(8)) + [42, 43])), pool_state(pool)",
             hint="A hit shares the physical block: ref_count += 1, and the block goes first in the block table.")
def hits_share_physical_blocks(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return admission(pool.admit("b", list(range(8)) + [42, 43])), pool_state(pool)


@STAGE.check("s03.admit",
             call="pool = BlockPool(8, 2); pool.admit('a', [1, 2, 3]); admission(pool.admit('b', [1, 2, 3])), pool_state(pool)",
             hint="Register nothing in admit: a's KV is not written before commit, so b must not hit it.")
def no_hit_before_commit(impl):
    pool = impl.BlockPool(8, 2)
    pool.admit("a", [1, 2, 3])
    return admission(pool.admit("b", [1, 2, 3])), pool_state(pool)


@STAGE.check("s03.admit",
             call="pool = BlockPool(4, 4); pool.admit('a', range(9)); pool.admit('b', range(100, 109)) -> ?, pool_state(pool)",
             hint="Check capacity before changing anything; raise PoolFullError and leave the pool as it was.")
def full_pool_refuses_cleanly(impl):
    pool = impl.BlockPool(4, 4)
    pool.admit("a", list(range(9)))
    outcome = attempt(lambda: admission(pool.admit("b", list(range(100, 109)))))
    return outcome, pool_state(pool)


# -- TODO 4: commit -------------------------------------------------------------------------------
@STAGE.check("s03.commit", call="pool = BlockPool(8, 4); pool.admit('a', range(10)); pool.commit('a'); pool_state(pool)",
             hint="Register each full block after the hits: block.key = key and self.cached[key] = block.")
def registers_full_blocks(impl):
    pool = impl.BlockPool(8, 4)
    pool.admit("a", list(range(10)))
    pool.commit("a")
    return pool_state(pool)


@STAGE.check("s03.commit", call="pool = BlockPool(8, 4); admit + commit 'a' = range(10); admission(pool.admit('b', range(10))), pool_state(pool)",
             hint="After commit, a request with the same prompt hits every registered block.")
def later_request_hits(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return admission(pool.admit("b", list(range(10)))), pool_state(pool)


@STAGE.check("s03.commit",
             call="pool = BlockPool(8, 2); admit 'a' and 'b' = [1, 2, 3]; commit 'b'; commit 'a'; pool_state(pool)",
             hint="If a key is already cached, keep the block that holds it; don't re-point the key or tag a second block.")
def first_writer_wins(impl):
    pool = impl.BlockPool(8, 2)
    pool.admit("a", [1, 2, 3])
    pool.admit("b", [1, 2, 3])
    pool.commit("b")
    pool.commit("a")
    return pool_state(pool)


# -- TODO 5: release ------------------------------------------------------------------------------
@STAGE.check("s03.release",
             call="pool = BlockPool(6, 2); admit + commit 'a' = [1, 2, 3]; pool.admit('b', [1, 2, 4]); "
                  "pool.release('a'); pool_state(pool)",
             hint="ref_count -= 1 for each block; only blocks that reach 0 go to the free queue.")
def drops_one_reference(impl):
    pool = committed(impl, 6, 2, [1, 2, 3])
    pool.admit("b", [1, 2, 4])
    pool.release("a")
    return pool_state(pool)


@STAGE.check("s03.release",
             call="pool = BlockPool(4, 2); admit + commit 'a' = [1, 2, 3, 4, 5]; pool.release('a'); "
                  "pool_state(pool), admission(pool.admit('b', [1, 2, 3, 4, 9]))",
             hint="A freed block keeps its key: it stays cached until it is reused for other content.")
def freed_blocks_stay_cached(impl):
    pool = committed(impl, 4, 2, [1, 2, 3, 4, 5])
    pool.release("a")
    return pool_state(pool), admission(pool.admit("b", [1, 2, 3, 4, 9]))


@STAGE.check("s03.release",
             call="pool = BlockPool(6, 2); admit + commit 'a' = [1, 2, 3]; pool.admit('b', [1, 2, 4]); "
                  "pool.release('a'); admission(pool.admit('c', [9] * 9)) -> ?, pool_state(pool)",
             hint="Never put a block that a live request still holds into the free queue.")
def shared_block_is_never_handed_out(impl):
    pool = committed(impl, 6, 2, [1, 2, 3])
    pool.admit("b", [1, 2, 4])
    pool.release("a")
    return attempt(lambda: admission(pool.admit("c", [9] * 9))), pool_state(pool)

"""Stage 3 spec and public checks: block pool, ref counts and block tables.

What a learner reads of this stage (titles, contracts, hint tiers, check titles and hints, the quiz)
is in ``s03.toml`` beside this module, in English and Chinese; this module keeps the skeleton and the
probes. Contracts state what to set or return and the invariant, never code; hint tiers go from the
idea (1) over the approach (2) to a skeleton with blanks (3).

Probes summarise a pool as labelled plain data (:func:`pool_state`, :func:`admission`) and never
depend on the order in which ``release`` hands blocks to the free queue (stage 4 decides that
order): a setup either frees single-block requests, or reuses every freed block, or leaves enough
never-used blocks that no freed block is handed out again. :class:`Prefill` is the probes' ground
truth for stale hits: it remembers which prefix each physical block's KV was written for, without
looking at keys, so a hit on overwritten or unwritten KV shows up as a stale hit.
"""
from __future__ import annotations

from autograder.checks.common import attempt, record
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s03",
    minutes=60,
    todos=[
        Todo("s03.lookup", 1, target="BlockPool.lookup", points=2),
        Todo("s03.allocate_block", 2, target="BlockPool.allocate_block", points=2),
        Todo("s03.admit", 3, target="BlockPool.admit", points=3),
        Todo("s03.commit", 4, target="BlockPool.commit", points=2),
        Todo("s03.release", 5, target="BlockPool.release", points=2),
    ],
    quiz=Quiz(number=6, points=2, questions=(
        Question("q1", decimals=0),
        Question("q2", decimals=0),
        Question("q3"),
        Question("q4", decimals=0),
        Question("q5"),
        Question("q6", decimals=0),
    )),
    time_limit_s=10,
    memory_limit_mb=512,
)


# -- probe helpers (hidden checks import them from here) -----------------------------------------
def pool_state(pool) -> dict:
    """A pool as labelled plain data: ref counts, number of free blocks, cached and keyed block ids."""
    return record(
        ref_counts=[b.ref_count for b in pool.blocks],
        free=len(pool.free_queue),
        cached_blocks=sorted(b.block_id for b in pool.cached.values()),
        keyed_blocks=[b.block_id for b in pool.blocks if b.key is not None],
        requests=sorted(pool.requests),
    )


def admission(a) -> dict:
    """An ``Admission`` as a labelled record."""
    return record(request_id=a.request_id, block_table=a.block_table, hit_blocks=a.hit_blocks,
                  hit_tokens=a.hit_tokens)


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


class Prefill:
    """The probes' ground truth: which prefix the KV in each physical block was written for.

    Prefill writes a request's fresh blocks between ``admit`` and ``commit``: at ``admit`` they hold
    nothing valid yet (``None``), at ``commit`` each holds the request's prefix up to its end. A hit
    is *stale* when its block does not hold exactly the prefix the request asked for. This knows
    nothing of keys, so a key left behind on overwritten KV shows up here. Handing out as a fresh
    block one that a live request still holds (its own hits included) overwrites that request's KV
    under it: that is recorded as stale too, whichever path handed the block out.
    """

    def __init__(self, pool) -> None:
        self.pool = pool
        self.written: dict[int, tuple | None] = {}
        self.pending: dict[str, list[tuple[int, tuple]]] = {}
        self.live: dict[str, list[int]] = {}
        self.stale: list[dict] = []

    def content(self, tokens, extra_keys, i: int) -> tuple:
        return tuple(extra_keys or ()), tuple(tokens[: (i + 1) * self.pool.block_size])

    def admit(self, rid: str, tokens, extra_keys=None):
        a = self.pool.admit(rid, tokens, extra_keys)
        for i in range(a.hit_blocks):
            if self.written.get(a.block_table[i]) != self.content(tokens, extra_keys, i):
                self.stale.append(record(request=rid, block_index=i, block=a.block_table[i]))
        fresh = list(enumerate(a.block_table))[a.hit_blocks:]
        for _, b in fresh:
            holders = [r for r, table in self.live.items() if b in table]
            if holders or a.block_table.count(b) > 1:
                self.stale.append(record(request=rid, overwrote_block=b, held_by=holders[0] if holders else rid))
            self.written[b] = None  # being overwritten by this request's prefill
        self.pending[rid] = [(b, self.content(tokens, extra_keys, i)) for i, b in fresh]
        self.live[rid] = list(a.block_table)
        return a

    def commit(self, rid: str) -> None:
        for b, content in self.pending.pop(rid):
            self.written[b] = content
        self.pool.commit(rid)

    def release(self, rid: str) -> None:
        self.pending.pop(rid, None)
        self.live.pop(rid, None)
        self.pool.release(rid)


# What walks a whole container: the cost checks count these calls instead of timing them, so the
# verdict is the same on every machine.
_MAP_WALKS = ("__iter__", "__reversed__", "keys", "values", "items", "copy")
_LIST_WALKS = ("__iter__", "__reversed__", "__getitem__", "__contains__", "index", "count", "copy")


def _counting(base: type, counter: dict, field: str, methods: tuple) -> type:
    """A subclass of ``base`` whose ``methods`` add one to ``counter[field]`` per call."""
    def wrap(name: str):
        original = getattr(base, name)

        def method(self, *args, **kwargs):
            counter[field] += 1
            return original(self, *args, **kwargs)
        return method
    return type(f"Watched_{base.__name__}", (base,), {name: wrap(name) for name in methods})


def watched_pool(impl, num_blocks: int, block_size: int):
    """A pool whose cache map, block list and free queue count every walk over them (iterating,
    ``keys``/``values``/``items``, copying, indexing the block list). Nothing else changes: they are
    a dict, a list and stage 3's queue. Returns the pool and the counter, to be zeroed before the
    operation under test."""
    counter = {"cache_map_walks": 0, "block_list_walks": 0, "free_queue_walks": 0}
    queue = _counting(impl.SimpleFreeQueue, counter, "free_queue_walks", ("__iter__",))()
    pool = impl.BlockPool(num_blocks, block_size, free_queue=queue)
    pool.cached = _counting(dict, counter, "cache_map_walks", _MAP_WALKS)(pool.cached)
    pool.blocks = _counting(list, counter, "block_list_walks", _LIST_WALKS)(pool.blocks)
    return pool, counter


def walks_during(counter: dict, action) -> tuple:
    """``action()``'s result and the walks it made (the counter is zeroed first)."""
    for field in counter:
        counter[field] = 0
    result = action()
    return result, dict(counter)


def revive_twice(impl, num_blocks: int = 16) -> dict:
    """A committed and released; B hits A's blocks (reviving them), commits, is released; then C,
    with the same system prompt, must hit both blocks again. The pool is large enough that no freed
    block is handed out again, so capacity plays no part."""
    system = list(range(8))
    pool = impl.BlockPool(num_blocks, 4)
    pool.admit("A", system + [1, 2, 3])
    pool.commit("A")
    pool.release("A")
    b = admission(pool.admit("B", system + [4, 5, 6]))
    pool.commit("B")
    pool.release("B")
    c = admission(pool.admit("C", system + [7, 8]))
    return record(B=b, C=c, pool=pool_state(pool))


# -- TODO 1: lookup -------------------------------------------------------------------------------
@STAGE.check("s03.lookup")
def hits_after_commit(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return ids(pool.lookup(pool.keys_of(list(range(10))), 10))


@STAGE.check("s03.lookup")
def stops_at_first_miss(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    keys = pool.keys_of(list(range(10)))
    return record(first_key_missing=ids(pool.lookup([b"?" * 32] + keys[1:], 10)),
                  second_key_missing=ids(pool.lookup(keys[:1] + [b"?" * 32], 10)))


@STAGE.check("s03.lookup")
def leaves_one_token_to_compute(impl):
    pool = committed(impl, 8, 4, list(range(8)))
    keys = pool.keys_of(list(range(8)))
    return {f"num_tokens_{n}": ids(pool.lookup(keys, n)) for n in (8, 9, 5, 4)}


@STAGE.check("s03.lookup")
def looks_without_touching(impl):
    pool = committed(impl, 5, 3, [4, 4, 4, 4, 4, 4, 9])
    pool.release("a")
    pool.admit("b", [4, 4, 4, 1])  # block 0 in use again, block 1 free and cached
    before = pool_state(pool)
    found = ids(pool.lookup(pool.keys_of([4, 4, 4, 4, 4, 4, 9]), 7))
    no_keys = ids(pool.lookup([], 1))
    return record(found=found, no_keys=no_keys, pool_unchanged=pool_state(pool) == before)


@STAGE.check("s03.lookup",
             specificity=2)
def lookup_never_walks_the_pool(impl):
    pool, counter = watched_pool(impl, 12, 2)
    pool.admit("a", [5, 5, 6, 6, 7, 7, 8])
    pool.commit("a")
    keys = pool.keys_of([5, 5, 6, 6, 9, 9, 8])
    _, walks = walks_during(counter, lambda: pool.lookup(keys, 7))
    return walks


# -- TODO 2: allocate_block -----------------------------------------------------------------------
@STAGE.check("s03.allocate_block", call="pool = BlockPool(4, 2); b = pool.allocate_block(); "
                                         "b.block_id, b.ref_count, b.key, pool_state(pool)")
def fresh_pool(impl):
    pool = impl.BlockPool(4, 2)
    b = pool.allocate_block()
    return record(block_id=b.block_id, ref_count=b.ref_count, key=b.key, pool=pool_state(pool))


@STAGE.check("s03.allocate_block")
def reuse_forgets_the_old_key(impl):
    pool = impl.BlockPool(2, 2)
    pool.admit("a", [1, 2, 3])
    pool.commit("a")
    pool.release("a")
    taken = [pool.allocate_block(), pool.allocate_block()]
    return record(taken=sorted(ids(taken)), pool=pool_state(pool),
                  lookup_after=ids(pool.lookup(pool.keys_of([1, 2, 3]), 3)))


@STAGE.check("s03.allocate_block")
def overwritten_kv_is_never_hit(impl):
    pool = impl.BlockPool(3, 2)
    prefill = Prefill(pool)
    for rid, tokens in (("A", [1, 2, 3, 4, 5]), ("B", [7] * 5)):
        prefill.admit(rid, tokens)
        prefill.commit(rid)
        prefill.release(rid)
    c = admission(prefill.admit("C", [1, 2, 3, 4, 5]))
    return record(stale_hits=len(prefill.stale), C=c)


@STAGE.check("s03.allocate_block", call="pool = BlockPool(1, 2); first = pool.allocate_block(); "
                                         "first.block_id, pool_state(pool), pool.allocate_block().block_id -> ?")
def a_block_is_handed_out_once(impl):
    pool = impl.BlockPool(1, 2)
    first = pool.allocate_block()
    return record(first=first.block_id, pool=pool_state(pool), second=attempt(lambda: pool.allocate_block().block_id))


@STAGE.check("s03.allocate_block")
def other_cached_blocks_stay(impl):
    pool = impl.BlockPool(3, 2)
    for rid, tokens in (("a", [8, 8]), ("b", [8, 9])):  # one block each: block 0, block 1
        pool.admit(rid, tokens)
        pool.commit(rid)
    pool.release("a")
    pool.release("b")  # free queue: 2 (never used), then a's block 0 and b's block 1, both cached
    pool.allocate_block()  # the never-used block 2
    b = pool.allocate_block()  # a's block: it forgets its key, b's block stays cached
    return record(block_id=b.block_id, key=b.key, pool=pool_state(pool),
                  hits_of_a=ids(pool.lookup(pool.keys_of([8, 8, 0]), 3)),
                  hits_of_b=ids(pool.lookup(pool.keys_of([8, 9, 0]), 3)))


@STAGE.check("s03.allocate_block",
             specificity=2)
def allocate_never_walks_the_pool(impl):
    pool, counter = watched_pool(impl, 12, 2)
    for block in pool.blocks[:12]:  # every block free and cached under its own key
        block.key = bytes([block.block_id]) * 32
        pool.cached[block.key] = block
    _, walks = walks_during(counter, lambda: [pool.allocate_block() for _ in range(12)])
    return walks


# -- TODO 3: admit --------------------------------------------------------------------------------
@STAGE.check("s03.admit", call="pool = BlockPool(8, 4); admission(pool.admit('a', list(range(10)))), pool_state(pool)")
def fresh_admission(impl):
    pool = impl.BlockPool(8, 4)
    return record(a=admission(pool.admit("a", list(range(10)))), pool=pool_state(pool))


@STAGE.check("s03.admit",
             specificity=2)
def hits_share_physical_blocks(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return record(b=admission(pool.admit("b", list(range(8)) + [42, 43])), pool=pool_state(pool))


@STAGE.check("s03.admit",
             call="pool = BlockPool(8, 2); pool.admit('a', [1, 2, 3]); admission(pool.admit('b', [1, 2, 3])), pool_state(pool)",
             specificity=3)
def no_hit_before_commit(impl):
    pool = impl.BlockPool(8, 2)
    pool.admit("a", [1, 2, 3])
    return record(b=admission(pool.admit("b", [1, 2, 3])), pool=pool_state(pool))


@STAGE.check("s03.admit",
             call="pool = BlockPool(4, 4); pool.admit('a', range(9)); pool.admit('b', range(100, 109)) -> ?, pool_state(pool)",
             specificity=1)
def full_pool_refuses_cleanly(impl):
    pool = impl.BlockPool(4, 4)
    pool.admit("a", list(range(9)))
    outcome = attempt(lambda: admission(pool.admit("b", list(range(100, 109)))))
    return record(b=outcome, pool=pool_state(pool))


@STAGE.check("s03.admit",
             specificity=2)
def revived_blocks_stay_cached(impl):
    return revive_twice(impl)


@STAGE.check("s03.admit",
             specificity=1)
def revived_hit_is_not_a_fresh_block(impl):
    pool = committed(impl, 5, 2, [7] * 8 + [1])
    pool.release("a")
    refused = attempt(lambda: admission(pool.admit("b", [7] * 8 + [20, 21, 22, 23])))
    after_refusal = pool_state(pool)
    return record(b=refused, after_refusal=after_refusal, c=admission(pool.admit("c", [7] * 8 + [30])),
                  pool=pool_state(pool))


@STAGE.check("s03.admit",
             specificity=2)
def cached_hit_next_in_line(impl):
    pool = impl.BlockPool(4, 3)
    pool.admit("x", [9])            # block 0
    pool.admit("a", [1, 1, 1])      # block 1
    pool.commit("a")                # block 1 cached as [1, 1, 1]
    pool.release("a")
    pool.release("x")               # free queue: 2, 3, 1, 0
    pool.admit("y", [8, 8])         # block 2
    pool.admit("z", [8])            # block 3; the cached block 1 is next in line
    return record(b=admission(pool.admit("b", [1, 1, 1, 5])), pool=pool_state(pool))


@STAGE.check("s03.admit",
             specificity=3)
def fresh_blocks_forget_old_keys(impl):
    pool = impl.BlockPool(4, 3)
    prefill = Prefill(pool)
    a = [2, 7, 1, 8, 2, 8, 1, 8]
    prefill.admit("A", a)
    prefill.commit("A")
    prefill.release("A")
    prefill.admit("B", [3] * 11)
    a_hits_after_b = ids(pool.lookup(pool.keys_of(a), len(a)))
    prefill.commit("B")
    prefill.release("B")
    c = prefill.admit("C", a)
    return record(a_hits_after_b_admitted=a_hits_after_b, c_hits=c.hit_blocks, stale_hits=len(prefill.stale))


@STAGE.check("s03.admit",
             specificity=2)
def admit_never_walks_the_pool(impl):
    pool, counter = watched_pool(impl, 12, 2)
    pool.admit("a", [5, 5, 6, 6, 7])
    pool.commit("a")
    pool.release("a")
    _, walks = walks_during(counter, lambda: pool.admit("b", [5, 5, 6, 6, 1, 2, 3]))
    return walks


# -- TODO 4: commit -------------------------------------------------------------------------------
@STAGE.check("s03.commit", call="pool = BlockPool(8, 4); pool.admit('a', range(10)); pool.commit('a'); pool_state(pool)")
def registers_full_blocks(impl):
    pool = impl.BlockPool(8, 4)
    pool.admit("a", list(range(10)))
    pool.commit("a")
    return pool_state(pool)


@STAGE.check("s03.commit")
def later_request_hits(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return record(b=admission(pool.admit("b", list(range(10)))), pool=pool_state(pool))


@STAGE.check("s03.commit")
def first_writer_wins(impl):
    pool = impl.BlockPool(8, 2)
    pool.admit("a", [1, 2, 3])
    pool.admit("b", [1, 2, 3])
    pool.commit("b")
    pool.commit("a")
    return pool_state(pool)


@STAGE.check("s03.commit")
def keys_hashed_with_extra_keys(impl):
    pool = impl.BlockPool(6, 2)
    tokens = [3, 1, 4, 1, 5]
    tenant = [("tenant", "".join(("租户", "甲")))]  # built at run time, non-ASCII
    pool.admit("a", tokens, tenant)
    pool.commit("a")
    return record(with_extra_keys=ids(pool.lookup(pool.keys_of(tokens, [("tenant", "租户甲")]), 5)),
                  without=ids(pool.lookup(pool.keys_of(tokens), 5)), pool=pool_state(pool))


@STAGE.check("s03.commit")
def overlapping_requests_admitted_before_either_commits(impl):
    # 'long' shares its first two blocks with 'short', which commits first: its later blocks still count.
    # zh: 'long' 的前两个块和先提交的 'short' 相同：它后面的块照样要登记。
    pool = impl.BlockPool(10, 2)
    pool.admit("short", [1, 2, 3, 4])
    pool.admit("long", list(range(1, 10)))
    pool.commit("short")
    pool.commit("long")
    return record(again=admission(pool.admit("again", list(range(1, 10)))), pool=pool_state(pool))


# -- TODO 5: release ------------------------------------------------------------------------------
@STAGE.check("s03.release")
def drops_one_reference(impl):
    pool = committed(impl, 6, 2, [1, 2, 3])
    pool.admit("b", [1, 2, 4])
    pool.release("a")
    return pool_state(pool)


@STAGE.check("s03.release")
def freed_blocks_stay_cached(impl):
    pool = committed(impl, 4, 2, [1, 2, 3, 4, 5])
    pool.release("a")
    return record(pool=pool_state(pool), b=admission(pool.admit("b", [1, 2, 3, 4, 9])))


@STAGE.check("s03.release")
def shared_block_is_never_handed_out(impl):
    pool = committed(impl, 6, 2, [1, 2, 3])
    pool.admit("b", [1, 2, 4])
    pool.release("a")
    return record(c=attempt(lambda: admission(pool.admit("c", [9] * 9))), pool=pool_state(pool))


@STAGE.check("s03.release")
def hits_are_released_too(impl):
    a = [2, 7, 1, 8, 2, 8, 1]
    pool = committed(impl, 6, 2, a)
    pool.release("a")
    b = admission(pool.admit("b", a[:6] + [9]))
    pool.commit("b")
    pool.release("b")
    after_b = pool_state(pool)
    return record(b=b, after_b=after_b, c=admission(pool.admit("c", a[:4] + [5])))


@STAGE.check("s03.release")
def released_before_commit_and_twice(impl):
    pool = impl.BlockPool(5, 3)
    pool.admit("q", [4, 4, 4, 4])
    pool.release("q")
    after = pool_state(pool)
    twice = attempt(lambda: pool.release("q"))
    return record(after_release=after, release_again=twice, pool_after_the_second=pool_state(pool),
                  again=admission(pool.admit("q", [4, 4, 4, 4])))

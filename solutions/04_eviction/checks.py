"""Stage 4 spec and public checks: LRU eviction, pinning and minimum residence time.

What a learner reads of this stage is in ``s04.toml`` beside this module, in English and Chinese.
Contracts say what to set or return and the invariant, never code; hint tiers go from the idea (1) over the approach (2) to
a skeleton with blanks (3). Each check's hint speaks only about the bug that check detects.
"""
from __future__ import annotations

from autograder.checks.common import raised as caught  # hidden checks import it from here too
from autograder.checks.common import record
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s04",
    subtitle="缓存淘汰：LRU、固定与最短驻留",
    minutes=75,
    todos=[
        Todo("s04.append", 1, target="LRUFreeQueue.append", points=2),
        Todo("s04.popleft", 2, target="LRUFreeQueue.popleft", points=2),
        Todo("s04.remove", 3, target="LRUFreeQueue.remove", points=2),
        Todo("s04.release_blocks", 4, target="EvictionPool.release_blocks", points=2),
        Todo("s04.pin", 5, target="EvictionPool.pin", points=3),
        Todo("s04.expire", 6, target="EvictionPool.expire", points=2),
    ],
    quiz=Quiz(number=7, points=2, questions=(
        Question("q1"),
        Question("q2"),
        Question("q3", decimals=0),
        Question("q4"),
        Question("q5", decimals=0),
        Question("q6"),
    )),
    time_limit_s=20,
    memory_limit_mb=1024,
)


class Clock:
    """An injectable clock for the checks: time moves only when a probe sets ``t``."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def keyed(impl, *ids: int):
    """Blocks that hold cached content (a key), one per id."""
    return [impl.Block(i, key=b"k%d" % i) for i in ids]


def ids(blocks) -> list:
    return [b.block_id for b in blocks]


def cached_ids(pool) -> list:
    """The cached part of a pool's free queue, least recent first."""
    return [b.block_id for b in pool.free_queue if b.key is not None]


def run(pool, rid: str, tokens: list) -> int:
    """Admit, commit and release one request; its number of hit blocks."""
    hits = pool.admit(rid, tokens).hit_blocks
    pool.commit(rid)
    pool.release(rid)
    return hits


def link_reads(impl, op: str, n: int) -> int:
    """How many times one queue operation reads a block's ``prev_free``/``next_free`` on a queue of
    ``2 * n`` blocks (``n`` keyless, then ``n`` cached): a count, not a time, so the same on every machine.
    Only the blocks' reads count (the queue's own sentinels are not watched). ``op``: ``"append"`` (one
    keyless and one cached block), ``"popleft"`` (twice: from the keyless run, then with it empty) or
    ``"remove"`` (a keyless and a cached block from the middle of their runs)."""
    reads = [0]

    class Watched(impl.Block):
        __slots__ = ()

        def __getattribute__(self, name):
            if name in ("prev_free", "next_free"):
                reads[0] += 1
            return object.__getattribute__(self, name)

    q = impl.LRUFreeQueue()
    keyless = [Watched(i) for i in range(n)]
    cached = [Watched(n + i, key=b"k%d" % i) for i in range(n)]
    extra = [Watched(2 * n), Watched(2 * n + 1, key=b"extra")]
    for b in keyless + cached:
        q.append(b)
    reads[0] = 0
    if op == "append":
        for b in extra:
            q.append(b)
    elif op == "popleft":
        for b in keyless[:-1]:  # leave one keyless block: the measured pops take it, then a cached one
            q.remove(b)
        reads[0] = 0
        q.popleft()
        q.popleft()
    else:
        q.remove(keyless[n // 2])
        q.remove(cached[n // 2])
    return reads[0]


def work_grows(impl, op: str) -> dict:
    """Whether ``op`` reads more links on a queue of 80 blocks than on one of 8 (it must not: O(1))."""
    small, large = link_reads(impl, op, 4), link_reads(impl, op, 40)
    return record(link_reads_grow_with_the_queue=large > small)


# -- TODO 1: append -----------------------------------------------------------------------------------
@STAGE.check("s04.append")
def cached_blocks_in_order(impl):
    q = impl.LRUFreeQueue()
    for b in keyed(impl, 0, 1, 2, 3):
        q.append(b)
    return record(order=ids(q), length=len(q))


@STAGE.check("s04.append")
def keyless_blocks_go_first(impl):
    q = impl.LRUFreeQueue()
    b0, b2 = keyed(impl, 0, 2)
    for b in (b0, impl.Block(1), b2, impl.Block(3)):
        q.append(b)
    return record(order=ids(q), length=len(q))


@STAGE.check("s04.append")
def appended_blocks_are_members(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2, 3, 4)
    for b in blocks:
        q.append(b)
    return record(members=[b in q for b in blocks], block0_has_prev=blocks[0].prev_free is not None,
                  block0_next_is_block1=blocks[0].next_free is blocks[1])


@STAGE.check("s04.append",
             specificity=2)
def append_work_does_not_grow(impl):
    return work_grows(impl, "append")


# -- TODO 2: popleft ----------------------------------------------------------------------------------
@STAGE.check("s04.popleft")
def least_recent_first(impl):
    q = impl.LRUFreeQueue()
    for b in keyed(impl, 0, 1, 2, 3):
        q.append(b)
    return record(popped=[q.popleft().block_id for _ in range(2)])


@STAGE.check("s04.popleft")
def keyless_before_cached(impl):
    q = impl.LRUFreeQueue()
    b0, b2 = keyed(impl, 0, 2)
    for b in (b0, impl.Block(1), b2, impl.Block(3)):
        q.append(b)
    return record(popped=[q.popleft().block_id for _ in range(4)])


@STAGE.check("s04.popleft")
def popped_blocks_leave_the_queue(impl):
    q = impl.LRUFreeQueue()
    b7, b8 = keyed(impl, 7, 8)
    q.append(b7)
    q.append(b8)
    popped = [q.popleft().block_id, q.popleft().block_id]
    after = record(length=len(q), block7_in_queue=b7 in q, block7_links_cleared=b7.prev_free is None)
    err = caught(q.popleft)
    q.append(b7)  # a popped block can be freed again
    return record(popped=popped, after_popping=after, pop_from_empty=err, after_append_again=ids(q))


@STAGE.check("s04.popleft")
def length_counts_every_pop(impl):
    # Both paths (a keyless block, a cached block) take one block out, so both count it out.
    # zh: 两条路径（取无 key 的块、取缓存块）都会拿走一个块，所以都要把计数减一。
    q = impl.LRUFreeQueue()
    b0, b2 = keyed(impl, 0, 2)
    for b in (b0, impl.Block(1), b2, impl.Block(3)):
        q.append(b)
    trail = []
    for _ in range(4):
        popped = q.popleft()
        trail.append((popped.block_id, len(q)))
    return record(popped_then_length=trail, pop_from_empty=caught(q.popleft))


@STAGE.check("s04.popleft",
             specificity=2)
def popleft_work_does_not_grow(impl):
    return work_grows(impl, "popleft")


# -- TODO 3: remove -----------------------------------------------------------------------------------
@STAGE.check("s04.remove")
def remove_from_the_middle(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2, 3, 4)
    for b in blocks:
        q.append(b)
    q.remove(blocks[2])
    return record(order=ids(q), length=len(q), block2_in_queue=blocks[2] in q)


@STAGE.check("s04.remove")
def remove_refuses_non_members(impl):
    q = impl.LRUFreeQueue()
    a, b = keyed(impl, 0, 1)
    q.append(a)
    first = caught(lambda: q.remove(b))
    q.remove(a)
    second = caught(lambda: q.remove(a))
    return record(remove_non_member=first, remove_twice=second, length=len(q), order=ids(q))


@STAGE.check("s04.remove")
def hit_then_release_makes_most_recent(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2)
    for b in blocks:
        q.append(b)
    q.remove(blocks[0])
    q.append(blocks[0])
    return record(popped=[q.popleft().block_id for _ in range(3)])


@STAGE.check("s04.remove")
def revive_path_through_the_pool(impl):
    pool = impl.BlockPool(6, 1, free_queue=impl.LRUFreeQueue())  # stage 3's pool: EvictionPool comes later
    a = [1, 2, 3, 4]
    hits = [run(pool, "A", a), run(pool, "B", a + [5]), run(pool, "C", a + [5, 6])]
    return record(hits=hits, free_blocks=len(pool.free_queue), violations=pool.violations())


@STAGE.check("s04.remove",
             specificity=2)
def remove_work_does_not_grow(impl):
    return work_grows(impl, "remove")


# -- TODO 4: release_blocks ---------------------------------------------------------------------------
@STAGE.check("s04.release_blocks")
def tail_is_freed_first(impl):
    pool = impl.EvictionPool(8, 2)
    run(pool, "a", [1, 2, 3, 4, 5, 6])
    return record(cached_free_order=cached_ids(pool))


@STAGE.check("s04.release_blocks")
def shared_blocks_stay_in_use(impl):
    pool = impl.EvictionPool(8, 2)
    pool.admit("a", [1, 1, 2, 2, 3])
    pool.commit("a")
    pool.admit("b", [1, 1, 2, 2, 4])
    pool.commit("b")
    pool.release("a")
    return record(ref_counts=[b.ref_count for b in pool.blocks], cached_free_order=cached_ids(pool))


@STAGE.check("s04.release_blocks")
def lru_evicts_the_tail_before_the_prefix(impl):
    pool = impl.EvictionPool(4, 2)
    a = [5, 5, 6, 6, 7, 7]
    run(pool, "A", a)
    run(pool, "B", [9, 9, 9])
    return record(a_keys_cached=[pool.is_cached(k) for k in pool.keys_of(a)], a_hits_again=run(pool, "A2", a + [0]))


@STAGE.check("s04.release_blocks")
def callers_table_of_any_sequence_type_left_alone(impl):
    # The block table is the caller's: a tuple must work, and a list must come back as it went in.
    # zh: 块表属于调用者：传 tuple 也要能用，传 list 回来时也要原样不变。
    pool = impl.EvictionPool(8, 2)
    table = [pool.blocks[i] for i in pool.admit("a", [1, 2, 3, 4, 5, 6]).block_table]
    pool.commit("a")
    pool.admit("b", [1, 2, 3, 4, 5, 6])  # every block of the table now has two users
    as_tuple, as_list = tuple(table), list(table)
    from_tuple = caught(lambda: pool.release_blocks(as_tuple))
    counts_after_tuple = [b.ref_count for b in pool.blocks]
    from_list = caught(lambda: pool.release_blocks(as_list))
    return record(from_tuple=from_tuple, counts_after_tuple=counts_after_tuple, from_list=from_list,
                  list_after=[b.block_id for b in as_list], cached_free_order=cached_ids(pool))


@STAGE.check("s04.release_blocks")
def tail_first_whatever_the_block_ids(impl):
    pool = impl.EvictionPool(5, 2)
    run(pool, "x", [4] * 8)
    a = pool.admit("a", [6] * 5)  # the never-used block first, then x's least recent ones: ids go down
    pool.commit("a")
    pool.release("a")
    keyless = [b.block_id for b in pool.free_queue if b.key is None]
    return record(a_table=a.block_table, cached_free_order=cached_ids(pool), keyless_free_order=keyless)


# -- TODO 5: pin ----------------------------------------------------------------------------------------
@STAGE.check("s04.pin")
def cap_is_respected(impl):
    pool = impl.EvictionPool(6, 2, max_pinned=2)
    run(pool, "sys", [7] * 6)
    blocks = [pool.cached[k] for k in pool.keys_of([7] * 6)]
    return record(pinned=[pool.pin(b) for b in blocks], num_pinned=pool.num_pinned,
                  ref_counts=[b.ref_count for b in blocks])


@STAGE.check("s04.pin")
def zero_cap_is_a_cap(impl):
    # A cap of 0 is a cap, not "no cap": nothing may be pinned.
    # zh: 上限为 0 也是上限，不是“没有上限”：什么都不能固定。
    pool = impl.EvictionPool(4, 1, max_pinned=0)
    run(pool, "a", [5, 6])
    block = pool.cached[pool.keys_of([5])[0]]
    return record(pinned=pool.pin(block), num_pinned=pool.num_pinned, ref_count=block.ref_count,
                  free_blocks=len(pool.free_queue))


@STAGE.check("s04.pin")
def free_block_leaves_the_queue(impl):
    pool = impl.EvictionPool(4, 1, max_pinned=1)
    run(pool, "a", [3, 4])
    block = pool.cached[pool.keys_of([3])[0]]
    ok = pool.pin(block)
    return record(pinned=ok, ref_count=block.ref_count, in_free_queue=block in pool.free_queue,
                  free_blocks=len(pool.free_queue), violations=pool.violations())


@STAGE.check("s04.pin")
def pin_in_use_block(impl):
    pool = impl.EvictionPool(3, 1, max_pinned=1)
    pool.admit("a", [5, 6])
    pool.commit("a")
    block = pool.cached[pool.keys_of([5])[0]]
    ok = pool.pin(block)
    pool.release("a")
    return record(pinned=ok, ref_count=block.ref_count, in_free_queue=block in pool.free_queue,
                  free_blocks=len(pool.free_queue), violations=pool.violations())


@STAGE.check("s04.pin")
def pinning_twice_is_one_pin(impl):
    # The pinned set holds block ids: pinning a pinned block again finds it there and changes nothing.
    # zh: 固定集合里存的是块的 id：再次固定一个已固定的块，会在集合里找到它，什么都不改。
    pool = impl.EvictionPool(4, 1, max_pinned=2)
    run(pool, "a", [3, 4])
    block = pool.cached[pool.keys_of([3])[0]]
    first, second = pool.pin(block), pool.pin(block)
    pinned = record(ref_count=block.ref_count, num_pinned=pool.num_pinned, is_pinned=pool.is_pinned(block))
    unpinned = caught(lambda: pool.unpin(block))
    return record(first=first, second=second, after_pins=pinned, unpin=unpinned, ref_count_after_unpin=block.ref_count,
                  in_free_queue=block in pool.free_queue, violations=pool.violations())


@STAGE.check("s04.pin")
def pinned_prefix_survives_churn(impl):
    pool = impl.EvictionPool(6, 2, max_pinned=2)
    system = [7] * 4
    run(pool, "sys", system + [0])
    pinned = pool.pin_prefix(pool.keys_of(system))
    for i in range(10):
        run(pool, f"c{i}", [100 + i] * 8)
    return record(pinned=pinned, system_hits=run(pool, "sys2", system + [1]), violations=pool.violations())


# -- TODO 6: expire -------------------------------------------------------------------------------------
@STAGE.check("s04.expire",
             call=("clock.t = 0; pool = EvictionPool(4, 1, min_residence=10, clock=clock); "
                   "run(pool, 'a', [1, 2, 3]); len(pool.free_queue), pool.admit('b', [4, 5, 6]) -> ?"))
def young_blocks_are_held(impl):
    clock = Clock()
    pool = impl.EvictionPool(4, 1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])
    free = len(pool.free_queue)
    err = caught(lambda: pool.admit("b", [4, 5, 6]))
    return record(free_blocks=free, admit_another=err)


@STAGE.check("s04.expire",
             call=("clock.t = 0; pool = EvictionPool(4, 1, min_residence=10, clock=clock); "
                   "run(pool, 'a', [1, 2, 3]); clock.t = 9.5; pool.expire(); clock.t = 10.0; pool.expire(); "
                   "len(pool.free_queue)"))
def hold_ends_at_exactly_t(impl):
    clock = Clock()
    pool = impl.EvictionPool(4, 1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])
    clock.t = 9.5
    early = pool.expire()
    clock.t = 10.0
    on_time = pool.expire()
    return record(ended_at_9_5=early, ended_at_10=on_time, free_blocks=len(pool.free_queue))


@STAGE.check("s04.expire")
def holds_end_oldest_first(impl):
    clock = Clock()
    pool = impl.EvictionPool(8, 1, min_residence=5.0, clock=clock)
    run(pool, "a", [1, 2])
    clock.t = 3.0
    run(pool, "b", [3, 4])
    clock.t = 5.0
    first = record(ended=pool.expire(), free_blocks=len(pool.free_queue))
    clock.t = 8.0
    second = record(ended=pool.expire(), free_blocks=len(pool.free_queue))
    return record(at_t5=first, at_t8=second)


@STAGE.check("s04.expire")
def holds_registered_together_end_together(impl):
    clock = Clock(2.0)
    pool = impl.EvictionPool(9, 1, min_residence=3.0, clock=clock)
    run(pool, "a", [1, 2])
    run(pool, "b", [3, 4])
    clock.t = 4.0
    run(pool, "c", [5, 6])
    out = []
    for t in (4.5, 5.0, 6.9, 7.0):
        clock.t = t
        out.append(record(t=t, ended=pool.expire(), free_blocks=len(pool.free_queue)))
    return out

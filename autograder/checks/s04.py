"""Stage 4 spec and public checks: LRU eviction, pinning and minimum residence time."""
from __future__ import annotations

from autograder.checks.common import raised as caught  # noqa: F401 (hidden checks import it from here)
from autograder.spec import Stage, Todo

STAGE = Stage(
    id="s04",
    title="Eviction: LRU, pinning and residence",
    subtitle="缓存淘汰：LRU、固定与最短驻留",
    summary="eviction: an O(1) LRU free queue, pinning, minimum residence time, hit rates on real traces",
    todos=[
        Todo("s04.append", 1, target="LRUFreeQueue.append", points=2, title="free a block (most recent end)"),
        Todo("s04.popleft", 2, target="LRUFreeQueue.popleft", points=2, title="hand out the least recent block"),
        Todo("s04.remove", 3, target="LRUFreeQueue.remove", points=2, title="O(1) remove from the middle"),
        Todo("s04.release_blocks", 4, target="EvictionPool.release_blocks", points=2,
             title="release a block table tail first"),
        Todo("s04.pin", 5, target="EvictionPool.pin", points=3, title="pin a hot block, within a cap"),
        Todo("s04.expire", 6, target="EvictionPool.expire", points=2, title="end residence holds on time"),
    ],
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


def run(pool, rid: str, tokens: list) -> int:
    """Admit, commit and release one request; its number of hit blocks."""
    hits = pool.admit(rid, tokens).hit_blocks
    pool.commit(rid)
    pool.release(rid)
    return hits


# -- TODO 1: append -----------------------------------------------------------------------------------
@STAGE.check("s04.append", call="q = LRUFreeQueue(); append blocks 0, 1, 2, 3 (all cached); list(q), len(q)",
             hint="Link each cached block just before self._tail (the most recent end) and count it.")
def cached_blocks_in_order(impl):
    q = impl.LRUFreeQueue()
    for b in keyed(impl, 0, 1, 2, 3):
        q.append(b)
    return ids(q), len(q)


@STAGE.check("s04.append",
             call="append cached 0, keyless 1, cached 2, keyless 3; list(q)",
             hint="A block without a key holds nothing reusable: link it just before self._mid, so it is reused first.")
def keyless_blocks_go_first(impl):
    q = impl.LRUFreeQueue()
    b0, b2 = keyed(impl, 0, 2)
    for b in (b0, impl.Block(1), b2, impl.Block(3)):
        q.append(b)
    return ids(q), len(q)


@STAGE.check("s04.append", call="append blocks 0..4; [b in q for b in blocks]; links of block 0 set?",
             hint="Use self._link_before(node, block): it sets block.prev_free/next_free, which is what `in` tests.")
def appended_blocks_are_members(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2, 3, 4)
    for b in blocks:
        q.append(b)
    return [b in q for b in blocks], blocks[0].prev_free is not None, blocks[0].next_free is blocks[1]


# -- TODO 2: popleft ----------------------------------------------------------------------------------
@STAGE.check("s04.popleft", call="append cached 0, 1, 2, 3; [q.popleft().block_id for _ in range(2)], len(q)",
             hint="Least recently used first: take the block right after self._head, not the one before self._tail.")
def least_recent_first(impl):
    q = impl.LRUFreeQueue()
    for b in keyed(impl, 0, 1, 2, 3):
        q.append(b)
    return [q.popleft().block_id for _ in range(2)], len(q)


@STAGE.check("s04.popleft", call="append cached 0, keyless 1, cached 2, keyless 3; pop all four",
             hint="Skip the self._mid sentinel: keyless blocks (between head and mid) come out before cached ones.")
def keyless_before_cached(impl):
    q = impl.LRUFreeQueue()
    b0, b2 = keyed(impl, 0, 2)
    for b in (b0, impl.Block(1), b2, impl.Block(3)):
        q.append(b)
    return [q.popleft().block_id for _ in range(4)], len(q)


@STAGE.check("s04.popleft", call="append 7, 8; popleft twice; popleft again; then append 7 again",
             hint="Unlink the block (self._unlink clears its links) and count it out; an empty queue raises IndexError.")
def popped_blocks_leave_the_queue(impl):
    q = impl.LRUFreeQueue()
    b7, b8 = keyed(impl, 7, 8)
    q.append(b7)
    q.append(b8)
    popped = [q.popleft().block_id, q.popleft().block_id]
    state = (len(q), b7 in q, b7.prev_free is None)
    err = caught(q.popleft)
    q.append(b7)  # a popped block can be freed again
    return popped, state, err, ids(q)


# -- TODO 3: remove -----------------------------------------------------------------------------------
@STAGE.check("s04.remove", call="append cached 0..4; q.remove(block 2); list(q), len(q)",
             hint="Unlink the block where it is (self._unlink) and count it out.")
def remove_from_the_middle(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2, 3, 4)
    for b in blocks:
        q.append(b)
    q.remove(blocks[2])
    return ids(q), len(q), blocks[2] in q


@STAGE.check("s04.remove", call="q.remove(a block that is not in the queue); remove the same block twice",
             hint="Check membership first (block.prev_free is None means not in a queue): raise ValueError, change nothing.")
def remove_refuses_non_members(impl):
    q = impl.LRUFreeQueue()
    a, b = keyed(impl, 0, 1)
    q.append(a)
    first = caught(lambda: q.remove(b))
    q.remove(a)
    second = caught(lambda: q.remove(a))
    return first, second, len(q), ids(q)


@STAGE.check("s04.remove", call="append 0, 1, 2; remove 0 (a hit); append 0 again (its release); pop all",
             hint="After remove the block must be fully unlinked, so that it can be appended again as most recent.")
def hit_then_release_makes_most_recent(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2)
    for b in blocks:
        q.append(b)
    q.remove(blocks[0])
    q.append(blocks[0])
    return [q.popleft().block_id for _ in range(3)]


# -- TODO 4: release_blocks ---------------------------------------------------------------------------
@STAGE.check("s04.release_blocks", call="pool = EvictionPool(8, 2); run a 6-token request; list(pool.free_queue) cached part",
             hint="Free the block table from its tail: for block in reversed(blocks).")
def tail_is_freed_first(impl):
    pool = impl.EvictionPool(8, 2)
    run(pool, "a", [1, 2, 3, 4, 5, 6])
    return [b.block_id for b in pool.free_queue if b.key is not None]


@STAGE.check("s04.release_blocks",
             call="two live requests share 2 blocks; release one; ref counts and free queue",
             hint="ref_count -= 1 for each block; only a block whose count reaches 0 goes to the free queue.")
def shared_blocks_stay_in_use(impl):
    pool = impl.EvictionPool(8, 2)
    pool.admit("a", [1, 1, 2, 2, 3])
    pool.commit("a")
    pool.admit("b", [1, 1, 2, 2, 4])
    pool.commit("b")
    pool.release("a")
    return [b.ref_count for b in pool.blocks], [b.block_id for b in pool.free_queue if b.key is not None]


@STAGE.check("s04.release_blocks",
             call="EvictionPool(4, 2): run A = 3 blocks; run a 2-block request that needs 1 fresh block; which of A's keys stay cached?",
             hint="Tail first keeps the cache prefix-closed: LRU then evicts A's last block, never its first.")
def lru_evicts_the_tail_before_the_prefix(impl):
    pool = impl.EvictionPool(4, 2)
    a = [5, 5, 6, 6, 7, 7]
    run(pool, "A", a)
    run(pool, "B", [9, 9, 9])
    return [pool.is_cached(k) for k in pool.keys_of(a)], run(pool, "A2", a + [0])


# -- TODO 5: pin ----------------------------------------------------------------------------------------
@STAGE.check("s04.pin", call="EvictionPool(6, 2, max_pinned=2); cache 3 blocks; pin each; num_pinned",
             hint="At the cap (len(self._pinned) >= self.max_pinned) return False and change nothing.")
def cap_is_respected(impl):
    pool = impl.EvictionPool(6, 2, max_pinned=2)
    run(pool, "sys", [7] * 6)
    blocks = [pool.cached[k] for k in pool.keys_of([7] * 6)]
    return [pool.pin(b) for b in blocks], pool.num_pinned, [b.ref_count for b in blocks]


@STAGE.check("s04.pin", call="pin a free cached block; its ref_count, `block in pool.free_queue`, len(pool.free_queue)",
             hint="A free block that gets pinned must leave the free queue (self.free_queue.remove) and get one reference.")
def free_block_leaves_the_queue(impl):
    pool = impl.EvictionPool(4, 1, max_pinned=1)
    run(pool, "a", [3, 4])
    block = pool.cached[pool.keys_of([3])[0]]
    ok = pool.pin(block)
    return ok, block.ref_count, block in pool.free_queue, len(pool.free_queue), pool.violations()


@STAGE.check("s04.pin", call="pin the 2 blocks of a system prompt; churn through the pool with 10 other prompts; hits of the system prompt",
             hint="A pinned block holds a reference, so the pool never hands it out: its key keeps hitting.")
def pinned_prefix_survives_churn(impl):
    pool = impl.EvictionPool(6, 2, max_pinned=2)
    system = [7] * 4
    run(pool, "sys", system + [0])
    pinned = pool.pin_prefix(pool.keys_of(system))
    for i in range(10):
        run(pool, f"c{i}", [100 + i] * 8)
    return pinned, run(pool, "sys2", system + [1]), pool.violations()


# -- TODO 6: expire -------------------------------------------------------------------------------------
@STAGE.check("s04.expire", call="clock at 0; EvictionPool(4, 1, min_residence=10); run a 3-block request; "
                                "len(free_queue); admit another 3-block request",
             hint="While less than min_residence has passed, stop (break): the new blocks stay held.")
def young_blocks_are_held(impl):
    clock = Clock()
    pool = impl.EvictionPool(4, 1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])
    free = len(pool.free_queue)
    err = caught(lambda: pool.admit("b", [4, 5, 6]))
    return free, err


@STAGE.check("s04.expire", call="min_residence=10, blocks registered at t=0; expire() at t=9.5 and at t=10.0",
             hint="'Not evicted before T has passed': at exactly T the hold ends (now - registered_at < T means still young).")
def hold_ends_at_exactly_t(impl):
    clock = Clock()
    pool = impl.EvictionPool(4, 1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])
    clock.t = 9.5
    early = pool.expire()
    clock.t = 10.0
    on_time = pool.expire()
    return early, on_time, len(pool.free_queue)


@STAGE.check("s04.expire", call="min_residence=5: request a at t=0, b at t=3; expire() at t=5 and at t=8",
             hint="Holds are oldest first: release each one whose time has passed, stop at the first that is still young.")
def holds_end_oldest_first(impl):
    clock = Clock()
    pool = impl.EvictionPool(8, 1, min_residence=5.0, clock=clock)
    run(pool, "a", [1, 2])
    clock.t = 3.0
    run(pool, "b", [3, 4])
    clock.t = 5.0
    first = (pool.expire(), len(pool.free_queue))
    clock.t = 8.0
    second = (pool.expire(), len(pool.free_queue))
    return first, second

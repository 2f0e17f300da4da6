"""Hidden checks of stage 4: O(1) costs, random traffic, trace replays. Never shipped to learners."""
from __future__ import annotations

import random
import time

from autograder.checks.s04 import STAGE, Clock, caught, ids, keyed, run
from solutions.traces import TraceRequest, rag_traffic, thrashing_traffic

# -- O(1) guards ---------------------------------------------------------------------------------------
# A linked-list operation costs well under 10 us in Python; an O(n) one on a 200k-block queue costs
# milliseconds (a walk) to a millisecond (deque.remove). The budget is 100-1000x what the reference
# needs, so a loaded machine cannot fail it, while an O(n) implementation exceeds it long before the
# grader's time limit: the probe stops early and answers "too slow".
BIG = 200_000  # remove: where deque.remove costs ~1 ms per call
MEDIUM = 50_000  # append/popleft: a walk to either end is O(n) at any size
BUDGET_S = 2.0


def _timed(ops, n_ops: int, batch: int = 50) -> bool:
    """Run ``ops(i)`` for i in range(n_ops); False as soon as the budget is spent."""
    t0 = time.perf_counter()
    for start in range(0, n_ops, batch):
        for i in range(start, min(start + batch, n_ops)):
            ops(i)
        if time.perf_counter() - t0 > BUDGET_S:
            return False
    return True


def _big_queue(impl, n: int = BIG):
    q = impl.LRUFreeQueue()
    blocks = [impl.Block(i, key=b"k") for i in range(n)]
    return q, blocks


@STAGE.check("s04.append", hidden=True,
             hint="append must be O(1): link before a sentinel you already hold, never walk the list to find the end.")
def append_is_constant_time(impl):
    q, blocks = _big_queue(impl, MEDIUM)
    fast = _timed(lambda i: q.append(blocks[i]), MEDIUM, batch=1_000)
    return fast, len(q) if fast else None


@STAGE.check("s04.popleft", hidden=True,
             hint="popleft must be O(1): take the node next to self._head, never search the list.")
def popleft_is_constant_time(impl):
    q, blocks = _big_queue(impl, MEDIUM)
    for b in blocks:
        q.append(b)
    out: list[int] = []
    fast = _timed(lambda i: out.append(q.popleft().block_id), 5_000)
    return fast, out[:3] if fast else None, len(q) if fast else None


@STAGE.check("s04.remove", hidden=True,
             hint="remove must be O(1) for a block anywhere in the queue: unlink it through its own links, "
                  "never search for it (no list.remove / deque.remove / walking).")
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


@STAGE.check("s04.append", hidden=True, hint="Keyless blocks wait before mid in FIFO order; cached ones before tail.")
def random_mix_append(impl):
    return _random_queue_ops(impl, 11)


@STAGE.check("s04.popleft", hidden=True, hint="Keyless first, then least recently freed; count every block out.")
def random_mix_popleft(impl):
    return _random_queue_ops(impl, 12)


@STAGE.check("s04.remove", hidden=True, hint="Unlink exactly the given block and count it out; neighbours stay linked.")
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


@STAGE.check("s04.popleft", hidden=True,
             hint="Plugged into stage 3's pool, the queue must evict the least recently used cached block.")
def pool_evicts_least_recently_used(impl):
    return _lru_pool_trail(impl)


@STAGE.check("s04.remove", hidden=True,
             hint="A hit on a free cached block takes it out of the queue, so it can never be handed out while in use.")
def pool_hits_leave_the_queue(impl):
    pool = impl.BlockPool(5, 1, free_queue=impl.LRUFreeQueue())
    run(pool, "a", [1, 2, 3])
    pool.admit("live", [1, 2, 3, 4])  # hits 1, 2 (removed from the queue)
    pool.commit("live")
    for i in range(4):
        caught(lambda: run(pool, f"x{i}", [10 + i, 20 + i]))
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


@STAGE.check("s04.release_blocks", hidden=True,
             hint="Release tail first and free only blocks whose count reaches 0: replayed traces must hit as the reference does.")
def random_trace_lru_hits(impl):
    return [impl.simulate_with(_trace(s), cap, pool_cls=impl.EvictionPool).hit_blocks
            for s in (1, 2) for cap in (8, 16)]


@STAGE.check("s04.release_blocks", hidden=True,
             hint="With several live requests, a shared block is freed only by its last user; the pool stays consistent.")
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
            if caught(lambda: pool.admit(rid, rng.choice(prompts))) is None:
                pool.commit(rid)
                live.append(rid)
        trail.append((len(pool.free_queue), [b.block_id for b in pool.free_queue][:4]))
    return trail, pool.violations()


# -- TODO 5: pin ------------------------------------------------------------------------------------------
@STAGE.check("s04.pin", hidden=True,
             hint="Pinning a block that is in use adds a reference; when its request ends it must stay out of the free queue.")
def pin_in_use_block(impl):
    pool = impl.EvictionPool(3, 1, max_pinned=1)
    pool.admit("a", [5, 6])
    pool.commit("a")
    block = pool.cached[pool.keys_of([5])[0]]
    ok = pool.pin(block)
    pool.release("a")
    return ok, block.ref_count, block in pool.free_queue, len(pool.free_queue), pool.violations()


@STAGE.check("s04.pin", hidden=True,
             hint="Pins are capped and never evicted: replaying thrashing and RAG traffic must match the reference.")
def pinning_replays(impl):
    out = []
    for trace, cap in ((thrashing_traffic(200, num_prompts=8, prompt_blocks=6, seed=3), 30),
                       (rag_traffic(200, num_docs=30, doc_blocks=(2, 6), seed=3), 40)):
        r = impl.simulate_with(trace, cap, impl.Policy("pin", max_pinned=cap // 2), pool_cls=impl.EvictionPool)
        out.append((r.hit_blocks, r.rejected))
    return out


@STAGE.check("s04.pin", hidden=True, hint="max_pinned=0 means no block may be pinned.")
def zero_cap_pins_nothing(impl):
    pool = impl.EvictionPool(3, 1, max_pinned=0)
    run(pool, "a", [5, 6])
    block = pool.cached[pool.keys_of([5])[0]]
    return pool.pin(block), pool.num_pinned, block.ref_count, len(pool.free_queue)


# -- TODO 6: expire -------------------------------------------------------------------------------------
@STAGE.check("s04.expire", hidden=True,
             hint="Replaying traffic with a minimum residence time must hold and release blocks exactly as the reference.")
def residence_replays(impl):
    trace = thrashing_traffic(200, num_prompts=8, prompt_blocks=6, seed=5)
    out = []
    for t in (0.5, 2.0):
        r = impl.simulate_with(trace, 30, impl.Policy("res", min_residence=t), pool_cls=impl.EvictionPool)
        out.append((r.hit_blocks, r.rejected))
    return out


@STAGE.check("s04.expire", hidden=True,
             hint="expire() returns how many holds it ended; several may end at once, none while still young.")
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

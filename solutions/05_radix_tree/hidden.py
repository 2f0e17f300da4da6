"""Hidden checks of stage 5: random operation sequences, pages, token boundaries, the bookkeeping behind
locks on shared paths and eviction, and the cost of a lookup under a node with very many children.
Never shipped to learners. Their titles and hints, in both languages, are in ``hidden.toml`` beside this module."""
from __future__ import annotations

import random

from autograder.checks.common import record, within_budget
from autograder.checks.s05 import STAGE, checked, make, node_at, sizes, slots_for


def _random_tokens(rng: random.Random, n_max: int = 9) -> list[int]:
    # a vocabulary of 3 makes shared prefixes, partial edges and splits common
    return [rng.randrange(3) for _ in range(rng.randint(1, n_max))]


def _random_ops(impl, seed: int, page_size: int, steps: int = 60):
    """Random insert / match (+ lock) / unlock / evict; record what every call returned."""
    rng = random.Random(seed)
    cache = impl.RadixCache(page_size)
    locked: list = []
    log: list = []
    for i in range(steps):
        op = rng.random()
        if op < 0.4:
            tokens = _random_tokens(rng)
            log.append(record(insert=cache.insert(tokens, slots_for(i, tokens))))
        elif op < 0.7:
            m = cache.match_prefix(_random_tokens(rng))
            log.append(record(match=m.slots))
            if rng.random() < 0.5:
                log.append(record(lock=cache.inc_lock_ref(m.last_node)))
                locked.append(m.last_node)
        elif op < 0.85 and locked:
            log.append(record(unlock=cache.dec_lock_ref(locked.pop(rng.randrange(len(locked))))))
        else:
            log.append(record(evict=cache.evict(rng.randint(0, 6))))
        log.append(sizes(cache))
    return record(log=log, cache=checked(cache))


# -- cost: a lookup under a node with very many children ---------------------------------------------
# A correct match or insert finds the child to follow with one dict lookup: a few microseconds per call
# whatever the fan-out. One that scans the children costs time in proportion to their number: with
# 50,000 children, 0.4-0.8 ms per call even for the cheapest scan (a plain loop over ``items()``), so its
# 9,000 calls need 2-5x the budget, and one that calls a method per child ten times more. The reference
# needs about 0.08 s, mostly building the cache: the budget is about 20x that (CPU time of this process,
# so other load on the machine does not count). The probe stops as soon as the budget is spent and
# answers "too slow". A scan's cost grows with fan-out x calls, the same as at 150,000 children x 3,000
# calls, where building the cache alone cost the reference 0.22 s.
FANOUT = 50_000
CALLS = 9_000
BUDGET_S = 1.5
SYSTEM = (7, 7, 7)


def _wide_cache(impl):
    """A shared 3-token prefix with FANOUT children below it, built node by node (no TODO code runs)."""
    cache = impl.RadixCache()
    inner = cache._new_node(SYSTEM, (0, 1, 2), cache.root, 0)
    cache.root.children[cache._child_key(SYSTEM)] = inner
    for i in range(FANOUT):
        node = cache._new_node((10 + i, 3), (10 + 2 * i, 11 + 2 * i), inner, 0)
        inner.children[cache._child_key(node.key)] = node
    cache.evictable_size = len(SYSTEM) + 2 * FANOUT
    return cache


def _small_cache_first(impl, op) -> None:
    """Call ``op`` once on a fresh cache before the wide one is built: an unfilled TODO (or one that
    raises at once) fails here as it would there, without the wide cache's cost."""
    op(impl.RadixCache())


def _within_budget(op, n_ops: int, batch: int = 50) -> bool:
    return within_budget(op, n_ops, BUDGET_S, batch)


# -- TODO 1: _split_node ----------------------------------------------------------------------------
@STAGE.check("s05._split_node", hidden=True, sibling="split_on_a_page_boundary")
def split_with_pages(impl):
    cache = make(impl, [1, 2, 3, 4, 5, 6], page_size=2)
    leaf = node_at(cache, [1, 2, 3, 4, 5, 6])
    new = cache._split_node(leaf, 4)
    return record(new_key=list(new.key), slots=cache.match_prefix([1, 2, 3, 4, 5, 6]).slots, cache=checked(cache))


@STAGE.check("s05._split_node", hidden=True, sibling="split_twice_then_match")
def split_below_an_inner_node(impl):
    cache = make(impl, [1, 2, 3, 4, 5], [1, 2, 9])
    leaf = node_at(cache, [1, 2, 3, 4, 5])
    cache.inc_lock_ref(leaf)
    cache._split_node(leaf, 2)
    paths = [list(cache.path_tokens(n)) for n in cache.nodes()]
    cache.dec_lock_ref(leaf)
    return record(paths=paths, cache=checked(cache), evicted=cache.evict(100))


@STAGE.check("s05._split_node", hidden=True, sibling="split_keeps_locks")
def random_operations(impl):
    return _random_ops(impl, 51, 1)


# -- TODO 2: match_prefix ---------------------------------------------------------------------------
@STAGE.check("s05.match_prefix", hidden=True, sibling="splits_inside_an_edge")
def lock_after_partial_match(impl):
    cache = make(impl, [1, 2, 3, 4, 5])
    m = cache.match_prefix([1, 2, 3, 9])
    cache.inc_lock_ref(m.last_node)
    return record(length=m.length, cache=checked(cache), evicted=cache.evict(100))


@STAGE.check("s05.match_prefix", hidden=True, sibling="splits_where_the_prompt_ends")
def prompts_ending_inside_edges(impl):
    cache = make(impl, [4, 4, 6, 6, 8, 8], [4, 4, 7, 7], page_size=2)
    lengths = [cache.match_prefix(p).length for p in ([4, 4, 6, 6], [4, 4], [4, 4, 6, 6, 8])]
    return record(lengths=lengths, cache=checked(cache))


@STAGE.check("s05.match_prefix", hidden=True, sibling="whole_pages_only")
def short_key_changes_nothing(impl):
    cache = make(impl, [1, 2, 3, 4, 5, 6], page_size=3)
    before = cache.describe()
    m = cache.match_prefix([1, 2])
    return record(length=m.length, last_node_is_root=m.last_node is cache.root, unchanged=cache.describe() == before,
                  cache=checked(cache))


@STAGE.check("s05.match_prefix", hidden=True, sibling="longest_prefix_and_slots")
def random_matches(impl):
    out = []
    for page_size, seed in ((1, 52), (2, 53), (3, 54)):
        rng = random.Random(seed)
        cache = impl.RadixCache(page_size)
        for i in range(8):
            tokens = _random_tokens(rng)
            cache.insert(tokens, slots_for(i, tokens))
        matches = [cache.match_prefix(_random_tokens(rng)).slots for _ in range(15)]
        out.append(record(page_size=page_size, matches=matches, cache=checked(cache)))
    return out


@STAGE.check("s05.match_prefix", hidden=True, sibling="splits_inside_an_edge")
def repeated_match_is_stable(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 3, 5])
    first = cache.match_prefix([1, 2, 3, 4, 9]).slots
    second = cache.match_prefix([1, 2, 3, 4, 9]).slots
    return record(first=first, second=second, cache=checked(cache))


@STAGE.check("s05.match_prefix", hidden=True, sibling="token_boundaries")
def multi_digit_tokens(impl):
    out = []
    for page_size in (1, 2):
        cache = make(impl, [1, 2, 3, 4], [12, 34, 5, 6], [123, 4], page_size=page_size)
        queries = ([1, 23, 4, 5], [1, 2, 34, 5], [12, 3, 4, 5], [123, 4, 5, 6], [1, 2, 3, 45], [12, 34, 56, 7])
        out.append(record(page_size=page_size, matches=[cache.match_prefix(q).slots for q in queries],
                          cache=checked(cache)))
    return out


@STAGE.check("s05.match_prefix", hidden=True, sibling="one_lookup_per_level")
def match_under_many_children_is_fast(impl):
    _small_cache_first(impl, lambda cache: cache.match_prefix([*SYSTEM, 10, 3]))
    cache = _wide_cache(impl)
    rng = random.Random(71)
    queries = [[*SYSTEM, 10 + rng.randrange(FANOUT), 3, 9] for _ in range(CALLS)]
    found: list[int] = []
    fast = _within_budget(lambda i: found.append(cache.match_prefix(queries[i]).length), CALLS)
    return record(within_budget=fast, lengths=sorted(set(found)) if fast else None,
                  sizes=sizes(cache) if fast else None)


# -- TODO 3: insert ---------------------------------------------------------------------------------
@STAGE.check("s05.insert", hidden=True, sibling="returns_tokens_already_cached")
def random_inserts(impl):
    out = []
    for page_size, seed in ((1, 55), (2, 56), (3, 57)):
        rng = random.Random(seed)
        cache = impl.RadixCache(page_size)
        returned = []
        for i in range(12):
            tokens = _random_tokens(rng)
            returned.append(cache.insert(tokens, slots_for(i, tokens)))
        out.append(record(page_size=page_size, returned=returned, cache=checked(cache)))
    return out


@STAGE.check("s05.insert", hidden=True, sibling="leaf_below_a_locked_path")
def insert_below_a_locked_path(impl):
    cache = make(impl, [1, 2, 3])
    cache.inc_lock_ref(node_at(cache, [1, 2, 3]))
    cache.insert([1, 2, 3, 4, 5], slots_for(1, [1, 2, 3, 4, 5]))
    cache.insert([1, 2, 7], slots_for(2, [1, 2, 7]))
    return record(cache=checked(cache), evicted=cache.evict(100))


@STAGE.check("s05.insert", hidden=True, sibling="returns_tokens_already_cached")
def fully_cached_insert(impl):
    cache = make(impl, [1, 2, 3, 4])
    return record(short=cache.insert([1, 2], slots_for(5, [1, 2])),
                  whole=cache.insert([1, 2, 3, 4], slots_for(6, [1, 2, 3, 4])), cache=checked(cache))


@STAGE.check("s05.insert", hidden=True, sibling="insert_token_boundaries")
def insert_multi_digit_tokens(impl):
    out = []
    for page_size in (1, 2):
        cache = impl.RadixCache(page_size)
        seqs = ([1, 2, 3, 4], [1, 23, 4, 5], [12, 3, 4, 5], [1, 2, 34, 5], [123, 4, 5, 6])
        returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
        out.append(record(page_size=page_size, returned=returned, cache=checked(cache)))
    return out


@STAGE.check("s05.insert", hidden=True, sibling="insert_one_lookup_per_level")
def insert_under_many_children_is_fast(impl):
    _small_cache_first(impl, lambda cache: cache.insert([*SYSTEM, 10, 3], [0, 1, 2, 3, 4]))
    cache = _wide_cache(impl)
    rng = random.Random(72)
    seqs = [[*SYSTEM, 10 + FANOUT + i, rng.randrange(5)] for i in range(CALLS)]
    returned: list[int] = []
    fast = _within_budget(lambda i: returned.append(cache.insert(seqs[i], slots_for(i, seqs[i]))), CALLS)
    return record(within_budget=fast, returned=sorted(set(returned)) if fast else None,
                  sizes=sizes(cache) if fast else None)


# -- TODO 4: inc_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.inc_lock_ref", hidden=True, sibling="locks_the_whole_path")
def locked_path_survives_eviction(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [1, 5], [6])
    cache.inc_lock_ref(node_at(cache, [1, 2, 4]))
    return record(evicted=cache.evict(100), cache=checked(cache))


@STAGE.check("s05.inc_lock_ref", hidden=True, sibling="nested_locks")
def random_locks(impl):
    rng = random.Random(58)
    seqs = [_random_tokens(rng) for _ in range(8)]
    cache = make(impl, *seqs)
    moved = []
    for _ in range(12):
        m = cache.match_prefix(_random_tokens(rng))
        moved.append(record(moved=cache.inc_lock_ref(m.last_node), **sizes(cache)))
    return record(locks=moved, cache=checked(cache))


@STAGE.check("s05.inc_lock_ref", hidden=True, sibling="lock_after_a_miss")
def lock_root(impl):
    cache = make(impl, [1, 2])
    return record(moved=cache.inc_lock_ref(cache.root), cache=checked(cache))


@STAGE.check("s05.inc_lock_ref", hidden=True, sibling="two_requests_lock_a_deep_node")
def two_requests_lock_the_same_deep_node(impl):
    cache = make(impl, [1, 2, 3, 4, 5], [1, 2, 3, 9], [1, 7])
    deep = node_at(cache, [1, 2, 3, 4, 5])
    first = cache.inc_lock_ref(deep)
    second = cache.inc_lock_ref(deep)
    other = cache.inc_lock_ref(node_at(cache, [1, 2, 3, 9]))
    return record(first=first, second=second, other=other, cache=checked(cache))


# -- TODO 5: dec_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.dec_lock_ref", hidden=True, sibling="two_locks_need_two_unlocks")
def random_unlocks(impl):
    return record(page_1=_random_ops(impl, 59, 1), page_2=_random_ops(impl, 60, 2))


@STAGE.check("s05.dec_lock_ref", hidden=True, sibling="two_requests_share_a_deep_node")
def unlock_then_evict(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    leaf = node_at(cache, [1, 2, 3])
    cache.inc_lock_ref(leaf)
    cache.inc_lock_ref(node_at(cache, [1, 2]))
    cache.dec_lock_ref(leaf)
    held = cache.evict(100)
    cache.dec_lock_ref(node_at(cache, [1, 2]))
    return record(held=held, evicted=cache.evict(100), cache=checked(cache))


@STAGE.check("s05.dec_lock_ref", hidden=True, sibling="two_requests_share_a_deep_node")
def shared_path_released_in_any_order(impl):
    out = []
    for order in ((0, 1, 2), (2, 1, 0), (1, 0, 2)):
        cache = make(impl, [1, 2, 3, 4, 5], [1, 2, 3, 9], [1, 7])
        held = [node_at(cache, [1, 2, 3, 4, 5]), node_at(cache, [1, 2, 3, 4, 5]), node_at(cache, [1, 2, 3])]
        for node in held:
            cache.inc_lock_ref(node)
        steps = []
        for i in order:
            moved = cache.dec_lock_ref(held[i])
            steps.append(record(moved=moved, **sizes(cache)))
        out.append(record(order=list(order), steps=steps, cache=checked(cache), evicted=cache.evict(100)))
    return out


# -- TODO 6: evict ----------------------------------------------------------------------------------
@STAGE.check("s05.evict", hidden=True, sibling="least_recently_used_first")
def random_evictions(impl):
    return record(page_1=_random_ops(impl, 61, 1), page_3=_random_ops(impl, 62, 3))


@STAGE.check("s05.evict", hidden=True, sibling="least_recently_used_first")
def refreshed_path_goes_last(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [5, 6], [7])
    cache.match_prefix([1, 2, 3])
    out = []
    while cache.total_size:
        out.append(cache.evict(1))
    return record(one_by_one=out, cache=checked(cache))


@STAGE.check("s05.evict", hidden=True, sibling="locked_nodes_stay")
def more_than_evictable(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5], [6])
    cache.inc_lock_ref(node_at(cache, [1, 2, 5]))
    return record(first=cache.evict(1000), then=cache.evict(1), cache=checked(cache))


@STAGE.check("s05.evict", hidden=True, sibling="evicted_nodes_leave_the_tree")
def evict_everything_then_reuse(impl):
    cache = make(impl, [1, 2], [1, 3], [4])
    freed = cache.evict(100)
    cache.insert([1, 2, 3], slots_for(5, [1, 2, 3]))
    return record(freed=freed, slots=cache.match_prefix([1, 2, 3]).slots, cache=checked(cache))


@STAGE.check("s05.evict", hidden=True, sibling="evicted_nodes_leave_the_tree")
def evicted_node_is_detached(impl):
    cache = make(impl, [1, 2], [3])
    gone = node_at(cache, [1, 2])
    cache.evict(1)
    try:
        cache.inc_lock_ref(gone)
        outcome = "locked"
    except ValueError:
        outcome = "ValueError"
    return record(lock_after_eviction=outcome, parent_is_none=gone.parent is None, cache=checked(cache))


@STAGE.check("s05.evict", hidden=True, sibling="locked_inner_node_loses_its_last_child")
def locked_inner_nodes_outlive_their_children(impl):
    out = []
    for page_size in (1, 2):
        cache = make(impl, [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 7, 8], [1, 2, 9, 9], [5, 5], page_size=page_size)
        deep_inner = node_at(cache, [1, 2, 3, 4])
        cache.inc_lock_ref(deep_inner)
        steps = [record(freed=cache.evict(n), **sizes(cache)) for n in (1, 100)]
        held = checked(cache)
        cache.dec_lock_ref(deep_inner)
        out.append(record(page_size=page_size, steps=steps, held=held, then=cache.evict(100), cache=checked(cache)))
    return out



@STAGE.check("s05.evict", hidden=True, sibling="equal_access_times")
def coarse_clock_ties(impl):
    ticks = iter(range(1, 1_000))
    cache = impl.RadixCache(1, clock=lambda: float(next(ticks) // 3))
    for i, tokens in enumerate(([1, 2, 3], [1, 2, 4], [5, 6], [5, 7], [8], [9, 9])):
        cache.insert(tokens, slots_for(i, tokens))
    cache.match_prefix([5, 6])
    return record(freed=[cache.evict(2) for _ in range(5)], cache=checked(cache))

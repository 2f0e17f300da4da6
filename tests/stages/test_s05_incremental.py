"""Stage 5's given ``IncrementalEviction``: it must evict exactly what the learner's simple ``evict``
(a scan of every leaf per call) evicts, on any sequence of operations.

A Hypothesis state machine drives two caches side by side, the reference ``RadixCache`` and
``IncrementalRadixCache``, with the same random inserts, matches, locks, unlocks and evictions, under
clocks with and without ties; after every step both trees must be the same node for node (ids
included), every eviction must return the same slots in the same order, and the incremental cache's
heap must hold an entry for every eviction candidate.
"""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from solutions.s05_radix_tree import IncrementalEviction, IncrementalRadixCache, RadixCache, TreeNode


def shape(cache: RadixCache) -> list[tuple]:
    """Every node, parents first: id, tokens, slots, locks and access time."""
    return [(n.id, n.key, n.value, n.lock_ref, n.last_access) for n in cache.nodes()]


def test_s05_incremental_is_a_radix_cache_with_the_same_contract():
    cache = IncrementalRadixCache(2)
    assert isinstance(cache, RadixCache) and isinstance(cache, IncrementalEviction)
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    cache.insert([1, 2, 5, 6], [20, 21, 22, 23])
    with pytest.raises(ValueError):
        cache.evict(-1)
    assert cache.evict(0) == []
    assert cache.evict(1) == [12, 13]  # least recent leaf first, whole
    assert cache.evict(100) == [22, 23, 10, 11]  # then its sibling, then the parent left as a leaf
    assert cache.total_size == 0 and cache.evict(5) == []
    cache.check_invariants()


def test_s05_incremental_keeps_the_heap_small_without_evictions():
    cache = IncrementalRadixCache()
    cache.insert([1, 2, 3], [1, 2, 3])
    for _ in range(10_000):  # every match touches the leaf again: one stale entry each time
        cache.match_prefix([1, 2, 3])
    assert len(cache._heap) <= 128
    cache.check_invariants()
    assert cache.evict(1) == [1, 2, 3]


def test_s05_incremental_evicts_a_leaf_that_insert_touched_again():
    cache = IncrementalRadixCache()
    cache.insert([1, 2], [1, 2])
    cache.insert([3, 4], [3, 4])
    cache.insert([1, 2], [7, 8])  # all cached: no new leaf, but [1 2] is now the most recent
    cache.check_invariants()
    assert cache.evict(1) == [3, 4]


def test_s05_incremental_finds_a_leaf_made_without_new_node():
    class Direct(IncrementalEviction, RadixCache):
        """A learner's insert may build the leaf with TreeNode(...) instead of _new_node."""

        def _new_node(self, key, value, parent, now):
            return TreeNode(next(self._ids), key, value, parent, now)

    cache = Direct()
    cache.insert([1, 2, 3], [1, 2, 3])
    cache.insert([1, 2, 4], [4, 5, 6])
    cache.check_invariants()
    assert cache.evict(1) == [3]


tokens_st = st.lists(st.integers(0, 2), max_size=9)


class TwinMachine(RuleBasedStateMachine):
    """The simple and the incremental cache, fed the same operations, must stay identical."""

    @initialize(page_size=st.sampled_from([1, 2]), clock=st.sampled_from(["counter", "ties", "frozen"]))
    def setup(self, page_size: int, clock: str) -> None:
        self.now = 0
        tick = {"counter": lambda: self.now, "ties": lambda: self.now // 3, "frozen": lambda: 0}[clock]
        self.simple = RadixCache(page_size, clock=tick)
        self.fast = IncrementalRadixCache(page_size, clock=tick)
        self.slots = itertools.count()
        self.locks: list[tuple[TreeNode, TreeNode]] = []

    @rule(tokens=tokens_st)
    def insert(self, tokens) -> None:
        self.now += 1
        slots = [next(self.slots) for _ in tokens]
        assert self.simple.insert(tokens, slots) == self.fast.insert(tokens, slots)

    @rule(tokens=tokens_st, lock=st.booleans())
    def match(self, tokens, lock: bool) -> None:
        self.now += 1
        a, b = self.simple.match_prefix(tokens), self.fast.match_prefix(tokens)
        assert (a.slots, a.last_node.id) == (b.slots, b.last_node.id)
        if lock:
            assert self.simple.inc_lock_ref(a.last_node) == self.fast.inc_lock_ref(b.last_node)
            self.locks.append((a.last_node, b.last_node))

    @precondition(lambda self: self.locks)
    @rule(data=st.data())
    def unlock(self, data) -> None:
        a, b = self.locks.pop(data.draw(st.integers(0, len(self.locks) - 1)))
        assert self.simple.dec_lock_ref(a) == self.fast.dec_lock_ref(b)

    @rule(num_tokens=st.integers(0, 14))
    def evict(self, num_tokens: int) -> None:
        assert self.simple.evict(num_tokens) == self.fast.evict(num_tokens)

    @invariant()
    def same_trees(self) -> None:
        if not hasattr(self, "simple"):
            return
        assert shape(self.simple) == shape(self.fast)
        assert (self.simple.evictable_size, self.simple.protected_size) == \
            (self.fast.evictable_size, self.fast.protected_size)
        self.fast.check_invariants()  # the tree's, and a heap entry for every candidate


TwinMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
test_s05_incremental_evicts_exactly_what_the_simple_evict_evicts = TwinMachine.TestCase
pytest.mark.slow(test_s05_incremental_evicts_exactly_what_the_simple_evict_evicts)  # random operations against a model, many examples: the slow lane


class Counting(IncrementalRadixCache):
    """Counts heap compactions."""

    compactions = 0

    def _drop_stale(self) -> None:
        self.compactions += 1
        super()._drop_stale()


def test_s05_incremental_long_random_run_across_heap_compactions():
    """Thousands of random operations: the heap drops its stale entries several times on the way.

    (An evict pops an entry before it pushes a parent, so the heap never grows during an evict.)"""
    import random

    rng = random.Random(5)
    simple, fast = RadixCache(), Counting()
    slots = itertools.count()
    locks: list[tuple[TreeNode, TreeNode]] = []
    for _ in range(4_000):
        op = rng.random()
        tokens = [rng.randrange(4) for _ in range(rng.randint(1, 9))]
        if op < 0.3:
            new = [next(slots) for _ in tokens]
            assert simple.insert(tokens, new) == fast.insert(tokens, new)
        elif op < 0.94:
            a, b = simple.match_prefix(tokens), fast.match_prefix(tokens)
            assert a.slots == b.slots
            if rng.random() < 0.05:
                simple.inc_lock_ref(a.last_node)
                fast.inc_lock_ref(b.last_node)
                locks.append((a.last_node, b.last_node))
        elif op < 0.99 and locks:
            a, b = locks.pop(rng.randrange(len(locks)))
            assert simple.dec_lock_ref(a) == fast.dec_lock_ref(b)
        else:
            n = rng.randrange(30)
            assert simple.evict(n) == fast.evict(n)
    assert shape(simple) == shape(fast)
    fast.check_invariants()
    assert fast.compactions >= 3  # rare evictions: stale entries pile up between them


def test_s05_counting_eviction_counts_unlocked_leaves_and_changes_nothing():
    """The count behind stage 5's answer about eviction cost: per ``evict`` call, the unlocked leaves in
    the tree when it began; the cache evicts exactly what it would without counting."""
    from workbook.radix_sim import CountingEviction

    class Counted(CountingEviction, IncrementalRadixCache):
        pass

    plain, counted = RadixCache(), Counted()
    for cache in (plain, counted):
        cache.insert([1, 2, 5, 6], [0, 1, 2, 3])
        cache.insert([1, 2, 7, 8], [0, 1, 4, 5])
        cache.insert([1, 2, 9], [0, 1, 6])
        locked = cache.match_prefix([1, 2, 9]).last_node
        cache.inc_lock_ref(locked)
    assert counted.examined == 0
    # leaves [5 6], [7 8] and the locked [9]: two unlocked ones to look at
    assert counted.evict(1) == plain.evict(1) and counted.examined == 2
    assert counted.evict(100) == plain.evict(100) and counted.examined == 3
    assert shape(counted) == shape(plain)
    counted.check_invariants()

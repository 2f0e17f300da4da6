"""Hidden checks of stage 5: random operation sequences, pages, and the bookkeeping behind locks and
eviction. Never shipped to learners."""
from __future__ import annotations

import random

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
            log.append(("insert", cache.insert(tokens, slots_for(i, tokens))))
        elif op < 0.7:
            m = cache.match_prefix(_random_tokens(rng))
            log.append(("match", m.slots))
            if rng.random() < 0.5:
                log.append(("lock", cache.inc_lock_ref(m.last_node)))
                locked.append(m.last_node)
        elif op < 0.85 and locked:
            log.append(("unlock", cache.dec_lock_ref(locked.pop(rng.randrange(len(locked))))))
        else:
            log.append(("evict", cache.evict(rng.randint(0, 6))))
        log.append(sizes(cache))
    return log, checked(cache)


# -- TODO 1: _split_node ----------------------------------------------------------------------------
@STAGE.check("s05._split_node", hidden=True,
             hint="With pages, the new node is filed under its first page (a tuple): use self._child_key.")
def split_with_pages(impl):
    cache = make(impl, [1, 2, 3, 4, 5, 6], page_size=2)
    leaf = node_at(cache, [1, 2, 3, 4, 5, 6])
    new = cache._split_node(leaf, 4)
    return list(new.key), cache.match_prefix([1, 2, 3, 4, 5, 6]).slots, checked(cache)


@STAGE.check("s05._split_node", hidden=True,
             hint="Split a node below an inner node: the new node's parent is the old node's parent, not the root.")
def split_below_an_inner_node(impl):
    cache = make(impl, [1, 2, 3, 4, 5], [1, 2, 9])
    leaf = node_at(cache, [1, 2, 3, 4, 5])
    cache.inc_lock_ref(leaf)
    cache._split_node(leaf, 2)
    paths = [list(cache.path_tokens(n)) for n in cache.nodes()]
    cache.dec_lock_ref(leaf)
    return paths, checked(cache), cache.evict(100)


@STAGE.check("s05._split_node", hidden=True, hint="Every random sequence of operations must leave the same tree.")
def random_operations(impl):
    return _random_ops(impl, 51, 1)


# -- TODO 2: match_prefix ---------------------------------------------------------------------------
@STAGE.check("s05.match_prefix", hidden=True,
             hint="After a partial match, locking last_node must lock exactly the matched tokens.")
def lock_after_partial_match(impl):
    cache = make(impl, [1, 2, 3, 4, 5])
    m = cache.match_prefix([1, 2, 3, 9])
    cache.inc_lock_ref(m.last_node)
    return m.length, checked(cache), cache.evict(100)


@STAGE.check("s05.match_prefix", hidden=True,
             hint="A key shorter than one page matches nothing and leaves the tree (and access times) unchanged.")
def short_key_changes_nothing(impl):
    cache = make(impl, [1, 2, 3, 4, 5, 6], page_size=3)
    before = cache.describe()
    m = cache.match_prefix([1, 2])
    return m.length, m.last_node is cache.root, cache.describe() == before, checked(cache)


@STAGE.check("s05.match_prefix", hidden=True,
             hint="Random trees, random queries, page sizes 1-3: longest match, slots and access times.")
def random_matches(impl):
    out = []
    for page_size, seed in ((1, 52), (2, 53), (3, 54)):
        rng = random.Random(seed)
        cache = impl.RadixCache(page_size)
        for i in range(8):
            tokens = _random_tokens(rng)
            cache.insert(tokens, slots_for(i, tokens))
        matches = [cache.match_prefix(_random_tokens(rng)).slots for _ in range(15)]
        out.append((matches, checked(cache)))
    return out


@STAGE.check("s05.match_prefix", hidden=True, hint="Matching the same prefix twice must not split again or move slots.")
def repeated_match_is_stable(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 3, 5])
    first = cache.match_prefix([1, 2, 3, 4, 9]).slots
    second = cache.match_prefix([1, 2, 3, 4, 9]).slots
    return first, second, checked(cache)


# -- TODO 3: insert ---------------------------------------------------------------------------------
@STAGE.check("s05.insert", hidden=True, hint="Random inserts with page sizes 1-3: returned counts and the tree.")
def random_inserts(impl):
    out = []
    for page_size, seed in ((1, 55), (2, 56), (3, 57)):
        rng = random.Random(seed)
        cache = impl.RadixCache(page_size)
        returned = []
        for i in range(12):
            tokens = _random_tokens(rng)
            returned.append(cache.insert(tokens, slots_for(i, tokens)))
        out.append((returned, checked(cache)))
    return out


@STAGE.check("s05.insert", hidden=True,
             hint="A leaf hung under a locked path is unlocked itself: its tokens are evictable.")
def insert_below_a_locked_path(impl):
    cache = make(impl, [1, 2, 3])
    cache.inc_lock_ref(node_at(cache, [1, 2, 3]))
    cache.insert([1, 2, 3, 4, 5], slots_for(1, [1, 2, 3, 4, 5]))
    cache.insert([1, 2, 7], slots_for(2, [1, 2, 7]))
    return checked(cache), cache.evict(100)


@STAGE.check("s05.insert", hidden=True, hint="Inserting a sequence that is fully cached adds nothing and returns its length.")
def fully_cached_insert(impl):
    cache = make(impl, [1, 2, 3, 4])
    return cache.insert([1, 2], slots_for(5, [1, 2])), cache.insert([1, 2, 3, 4], slots_for(6, [1, 2, 3, 4])), \
        checked(cache)


# -- TODO 4: inc_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.inc_lock_ref", hidden=True, hint="Locked paths survive eviction of everything else.")
def locked_path_survives_eviction(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [1, 5], [6])
    cache.inc_lock_ref(node_at(cache, [1, 2, 4]))
    return cache.evict(100), checked(cache)


@STAGE.check("s05.inc_lock_ref", hidden=True, hint="Random lock sequences: moved tokens and sizes after each lock.")
def random_locks(impl):
    rng = random.Random(58)
    seqs = [_random_tokens(rng) for _ in range(8)]
    cache = make(impl, *seqs)
    moved = []
    for _ in range(12):
        m = cache.match_prefix(_random_tokens(rng))
        moved.append((cache.inc_lock_ref(m.last_node), sizes(cache)))
    return moved, checked(cache)


@STAGE.check("s05.inc_lock_ref", hidden=True, hint="Locking the root locks nothing and moves nothing.")
def lock_root(impl):
    cache = make(impl, [1, 2])
    return cache.inc_lock_ref(cache.root), checked(cache)


# -- TODO 5: dec_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.dec_lock_ref", hidden=True, hint="Random lock/unlock sequences: moved tokens and sizes after each step.")
def random_unlocks(impl):
    return _random_ops(impl, 59, 1), _random_ops(impl, 60, 2)


@STAGE.check("s05.dec_lock_ref", hidden=True, hint="After the last unlock, the whole path can be evicted again.")
def unlock_then_evict(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    leaf = node_at(cache, [1, 2, 3])
    cache.inc_lock_ref(leaf)
    cache.inc_lock_ref(node_at(cache, [1, 2]))
    cache.dec_lock_ref(leaf)
    held = cache.evict(100)
    cache.dec_lock_ref(node_at(cache, [1, 2]))
    return held, cache.evict(100), checked(cache)


# -- TODO 6: evict ----------------------------------------------------------------------------------
@STAGE.check("s05.evict", hidden=True, hint="Random trees and amounts: the freed slots, in eviction order.")
def random_evictions(impl):
    return _random_ops(impl, 61, 1), _random_ops(impl, 62, 3)


@STAGE.check("s05.evict", hidden=True,
             hint="Eviction order follows last_access (a match refreshes a whole path), ties by node id.")
def refreshed_path_goes_last(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [5, 6], [7])
    cache.match_prefix([1, 2, 3])
    out = []
    while cache.total_size:
        out.append(cache.evict(1))
    return out, checked(cache)


@STAGE.check("s05.evict", hidden=True, hint="Ask for more than is evictable: free all unlocked tokens, then stop.")
def more_than_evictable(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5], [6])
    cache.inc_lock_ref(node_at(cache, [1, 2, 5]))
    return cache.evict(1000), cache.evict(1), checked(cache)


@STAGE.check("s05.evict", hidden=True,
             hint="Evicting everything empties the tree but never touches the root; the cache stays usable.")
def evict_everything_then_reuse(impl):
    cache = make(impl, [1, 2], [1, 3], [4])
    freed = cache.evict(100)
    cache.insert([1, 2, 3], slots_for(5, [1, 2, 3]))
    return freed, cache.match_prefix([1, 2, 3]).slots, checked(cache)


@STAGE.check("s05.evict", hidden=True,
             hint="Detach an evicted node completely (its parent becomes None), so it cannot be locked later.")
def evicted_node_is_detached(impl):
    cache = make(impl, [1, 2], [3])
    gone = node_at(cache, [1, 2])
    cache.evict(1)
    try:
        cache.inc_lock_ref(gone)
        outcome = "locked"
    except ValueError:
        outcome = "ValueError"
    return outcome, gone.parent is None, checked(cache)

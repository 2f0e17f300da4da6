"""Stage 5 spec and public checks: a radix tree prefix cache.

Most probes return ``cache.describe()``: one ``(start, key, slots, lock_ref, last_access)`` tuple per
node, parents first, siblings in key order; so a check compares the whole shape of the tree, its
locks and access times with the reference's. Slot ids in the fixtures are 100, 101, ... for the
first sequence inserted, 200, 201, ... for the second, and so on.
"""
from __future__ import annotations

from autograder.spec import Stage, Todo

STAGE = Stage(
    id="s05",
    title="A radix tree prefix cache",
    subtitle="基数树前缀缓存",
    summary="a radix tree: longest match, node split, leaf eviction, lock refs, with a live tree view",
    todos=[
        Todo("s05._split_node", 1, target="RadixCache._split_node", points=2,
             title="split an edge in two"),
        Todo("s05.match_prefix", 2, target="RadixCache.match_prefix", points=3,
             title="longest cached prefix, splitting at the boundary"),
        Todo("s05.insert", 3, target="RadixCache.insert", points=3,
             title="insert the uncached remainder"),
        Todo("s05.inc_lock_ref", 4, target="RadixCache.inc_lock_ref", points=2,
             title="lock a path for a request in flight"),
        Todo("s05.dec_lock_ref", 5, target="RadixCache.dec_lock_ref", points=2,
             title="release a lock"),
        Todo("s05.evict", 6, target="RadixCache.evict", points=3,
             title="evict least recently used leaves"),
    ],
    time_limit_s=10,
    memory_limit_mb=512,
)


def slots_for(i: int, tokens) -> list[int]:
    """Slot ids of the ``i``-th sequence inserted by a fixture: 100*(i+1), 100*(i+1)+1, ..."""
    return [100 * (i + 1) + j for j in range(len(tokens))]


def make(impl, *seqs, page_size: int = 1):
    """A cache (default logical clock) with ``seqs`` inserted in order."""
    cache = impl.RadixCache(page_size)
    for i, tokens in enumerate(seqs):
        cache.insert(tokens, slots_for(i, tokens))
    return cache


def sizes(cache) -> tuple[int, int]:
    return cache.evictable_size, cache.protected_size


def node_at(cache, tokens):
    """The node whose edge ends exactly after ``tokens`` (walks the tree; changes nothing)."""
    node, pos = cache.root, 0
    while pos < len(tokens):
        node = node.children[cache._child_key(tuple(tokens), pos)]
        pos += len(node.key)
    if pos != len(tokens):
        raise KeyError(f"no node ends after {len(tokens)} tokens")
    return node


def checked(cache):
    """``describe()`` and the sizes, after the cache's own invariant check."""
    cache.check_invariants()
    return cache.describe(), sizes(cache)


# -- TODO 1: _split_node ----------------------------------------------------------------------------
@STAGE.check("s05._split_node",
             call="insert([1, 2, 3, 4]); new = _split_node(<node [1 2 3 4]>, 2); new.key, new.value, describe()",
             hint="The new node takes the first split_len tokens and slots; the old node keeps the rest, below it.")
def split_in_the_middle(impl):
    cache = make(impl, [1, 2, 3, 4])
    new = cache._split_node(node_at(cache, [1, 2, 3, 4]), 2)
    return list(new.key), list(new.value), checked(cache)


@STAGE.check("s05._split_node",
             call="insert([1, 2, 3]); lock <node [1 2 3]>; _split_node(it, 1); describe(); unlock it; sizes",
             hint="Copy child.lock_ref to the new node: the same locks still cover its tokens.")
def split_keeps_locks(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    cache.inc_lock_ref(leaf)
    cache._split_node(leaf, 1)
    during = checked(cache)
    cache.dec_lock_ref(leaf)
    return during, checked(cache)


@STAGE.check("s05._split_node",
             call="insert([1, 2, 3]) at t=1; insert([9]) at t=2; _split_node(<node [1 2 3]>, 2); describe()",
             hint="The new node copies child.last_access (it was last used when its child was).")
def split_keeps_access_time(impl):
    cache = make(impl, [1, 2, 3], [9])
    cache._split_node(node_at(cache, [1, 2, 3]), 2)
    return checked(cache)


@STAGE.check("s05._split_node",
             call="insert([5, 6, 7, 8]); _split_node(<node>, 1); _split_node(<node [6 7 8]>, 1); "
                  "match_prefix([5, 6, 7, 8]).slots; describe()",
             hint="Hang the new node in parent.children under its first token, and the old one under the new node.")
def split_twice_then_match(impl):
    cache = make(impl, [5, 6, 7, 8])
    leaf = node_at(cache, [5, 6, 7, 8])
    cache._split_node(leaf, 1)
    cache._split_node(leaf, 1)
    return cache.match_prefix([5, 6, 7, 8]).slots, checked(cache)


# -- TODO 2: match_prefix ---------------------------------------------------------------------------
@STAGE.check("s05.match_prefix",
             call="insert([1, 2, 3, 4]); insert([1, 2, 5]); m = match_prefix([1, 2, 5, 9]); m.length, m.slots",
             hint="Follow the child whose edge starts with the next token, as long as its tokens match.")
def longest_prefix_and_slots(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    m = cache.match_prefix([1, 2, 5, 9])
    return m.length, m.slots, cache.path_tokens(m.last_node)


@STAGE.check("s05.match_prefix",
             call="insert([1, 2, 3, 4]); m = match_prefix([1, 2, 3, 9]); m.slots, m.last_node.key, describe()",
             hint="A match that ends inside an edge splits it (self._split_node), and last_node is the new upper part.")
def splits_inside_an_edge(impl):
    cache = make(impl, [1, 2, 3, 4])
    m = cache.match_prefix([1, 2, 3, 9])
    return m.slots, list(m.last_node.key), checked(cache)


@STAGE.check("s05.match_prefix",
             call="insert([1, 2]) (t=1); insert([1, 2, 3]) (t=2); insert([7]) (t=3); match_prefix([1, 2, 3]) (t=4); describe()",
             hint="Set last_access = now on every node of the matched path, not only the last one.")
def stamps_the_whole_path(impl):
    cache = make(impl, [1, 2], [1, 2, 3], [7])
    cache.match_prefix([1, 2, 3])
    return checked(cache)


@STAGE.check("s05.match_prefix",
             call="RadixCache(page_size=2): insert([1, 2, 3, 4, 5, 6]); match_prefix([1, 2, 3, 9]).slots, "
                  "match_prefix([1]).length, describe()",
             hint="Only whole pages match: look children up by self._child_key(key, pos) and use self._common_len.")
def whole_pages_only(impl):
    cache = make(impl, [1, 2, 3, 4, 5, 6], page_size=2)
    return cache.match_prefix([1, 2, 3, 9]).slots, cache.match_prefix([1]).length, checked(cache)


@STAGE.check("s05.match_prefix", call="insert([1, 2]); m = match_prefix([3, 1, 2]); m.length, m.last_node is root",
             hint="No child starts with the first token: nothing matches, and last_node is the root.")
def no_match_returns_root(impl):
    cache = make(impl, [1, 2])
    m = cache.match_prefix([3, 1, 2])
    return m.length, m.slots, m.last_node is cache.root, checked(cache)


# -- TODO 3: insert ---------------------------------------------------------------------------------
@STAGE.check("s05.insert",
             call="[insert(s, slots) for s in ([1, 2, 3], [1, 2, 3, 4], [1, 2], [5])]; describe()",
             hint="Return how many leading tokens were cached before this insert; keep the tree's own slots for them.")
def returns_tokens_already_cached(impl):
    cache = impl.RadixCache()
    seqs = ([1, 2, 3], [1, 2, 3, 4], [1, 2], [5])
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return returned, checked(cache)


@STAGE.check("s05.insert", call="insert([1, 2, 3, 4]); insert([1, 2, 8, 9]); describe()",
             hint="Where the paths diverge inside an edge, split it and hang the new leaf under the split node.")
def splits_where_paths_diverge(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 8, 9])
    return checked(cache)


@STAGE.check("s05.insert", call="insert([4, 4]); insert([4, 4, 4, 4]) (t=2); describe(), evictable_size",
             hint="Add the new leaf's tokens to self.evictable_size, and stamp every node you pass with now.")
def counts_evictable_and_stamps(impl):
    cache = make(impl, [4, 4], [4, 4, 4, 4])
    return checked(cache)


@STAGE.check("s05.insert",
             call="RadixCache(page_size=2): insert([1, 2, 3]), insert([1, 2, 5, 6, 7]), insert([1, 2, 5, 8]); describe()",
             hint="Only whole pages go in; paths diverge at page boundaries (self._common_len rounds down).")
def insert_whole_pages_only(impl):
    cache = impl.RadixCache(2)
    seqs = ([1, 2, 3], [1, 2, 5, 6, 7], [1, 2, 5, 8])
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return returned, checked(cache)


# -- TODO 4: inc_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.inc_lock_ref",
             call="insert([1, 2, 3, 4]); insert([1, 2, 5]); inc_lock_ref(<node [5]>); describe(), sizes",
             hint="Lock every node from `node` up to the root, and move their tokens from evictable to protected.")
def locks_the_whole_path(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    moved = cache.inc_lock_ref(node_at(cache, [1, 2, 5]))
    return moved, checked(cache)


@STAGE.check("s05.inc_lock_ref", call="insert([1, 2, 3]); lock <node [1 2 3]> twice; moved each time, sizes",
             hint="Tokens move to protected only when a node's lock_ref goes from 0 to 1.")
def second_lock_moves_nothing(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    return cache.inc_lock_ref(leaf), cache.inc_lock_ref(leaf), checked(cache)


@STAGE.check("s05.inc_lock_ref",
             call="insert([1, 2, 3]); insert([1, 2, 4]); lock <node [1 2]>, then <node [3]>, then <node [4]>",
             hint="A lock on a child adds one more lock to each ancestor; only newly locked nodes move tokens.")
def nested_locks(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    moved = [cache.inc_lock_ref(node_at(cache, t)) for t in ([1, 2], [1, 2, 3], [1, 2, 4])]
    return moved, checked(cache)


# -- TODO 5: dec_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.dec_lock_ref",
             call="insert([1, 2, 3, 4]); insert([1, 2, 5]); n = <node [5]>; inc_lock_ref(n); dec_lock_ref(n); describe()",
             hint="Drop one lock on every node from `node` up to the root; a node at 0 locks is evictable again.")
def unlock_restores(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    leaf = node_at(cache, [1, 2, 5])
    cache.inc_lock_ref(leaf)
    return cache.dec_lock_ref(leaf), checked(cache)


@STAGE.check("s05.dec_lock_ref", call="insert([1, 2, 3]); lock <node> twice; unlock it twice; moved each time",
             hint="Tokens move back only when lock_ref reaches 0 (after the decrement).")
def two_locks_need_two_unlocks(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    cache.inc_lock_ref(leaf)
    cache.inc_lock_ref(leaf)
    first = cache.dec_lock_ref(leaf)
    middle = checked(cache)
    return first, middle, cache.dec_lock_ref(leaf), checked(cache)


@STAGE.check("s05.dec_lock_ref",
             call="insert([1, 2, 3]); insert([1, 2, 4]); lock <node [3]> and <node [4]>; unlock <node [3]>",
             hint="The shared parent [1 2] stays locked while the other request still holds it.")
def shared_parent_stays_locked(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    a, b = node_at(cache, [1, 2, 3]), node_at(cache, [1, 2, 4])
    cache.inc_lock_ref(a)
    cache.inc_lock_ref(b)
    return cache.dec_lock_ref(a), checked(cache)


# -- TODO 6: evict ----------------------------------------------------------------------------------
@STAGE.check("s05.evict",
             call="insert([1, 1]) (t=1); insert([2, 2]) (t=2); insert([3, 3]) (t=3); match_prefix([1, 1]) (t=4); "
                  "evict(1); evict(3)",
             hint="Pop leaves by (last_access, id): the least recently used first; a whole node goes at once.")
def least_recently_used_first(impl):
    cache = make(impl, [1, 1], [2, 2], [3, 3])
    cache.match_prefix([1, 1])
    first = cache.evict(1)
    return first, cache.evict(3), checked(cache)


@STAGE.check("s05.evict",
             call="insert([1, 2, 3]) (t=1); insert([1, 2, 4]) (t=2); insert([5]) (t=3); evict(4)",
             hint="When a parent loses its last child it becomes a leaf: push it on the heap too (never the root).")
def parent_becomes_a_candidate(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [5])
    return cache.evict(4), checked(cache)


@STAGE.check("s05.evict",
             call="insert([1, 2, 3]); insert([1, 2, 4]); inc_lock_ref(<node [3]>); evict(100)",
             hint="Only leaves with lock_ref == 0 are candidates; locked nodes stay.")
def locked_nodes_stay(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    cache.inc_lock_ref(node_at(cache, [1, 2, 3]))
    return cache.evict(100), checked(cache)


@STAGE.check("s05.evict", call="insert([1, 2]); insert([3, 4]); evict(0), evict(1), describe()",
             hint="Stop as soon as len(freed) >= num_tokens: evict(0) frees nothing; take evictable_size down.")
def stops_when_enough(impl):
    cache = make(impl, [1, 2], [3, 4])
    return cache.evict(0), cache.evict(1), checked(cache)

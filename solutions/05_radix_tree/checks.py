"""Stage 5 spec and public checks: a radix tree prefix cache.

Most probes return :func:`checked`: the tree as labelled records, one per node (parents first,
siblings in key order: ``start`` in tokens, ``key``, ``slots``, ``lock_ref``, ``last_access``), the
two sizes, and whether the cache's invariants hold; so a check compares the whole shape of the tree,
its locks and access times with the reference's, and a failure names the first field that differs.
Slot ids in the fixtures are 100, 101, ... for the first sequence inserted, 200, 201, ... for the
second, and so on.

What a learner reads of this stage is in ``s05.toml`` beside this module, in English and Chinese.
"""
from __future__ import annotations

from autograder.checks.common import record
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo


STAGE = Stage(
    id="s05",
    subtitle="基数树前缀缓存",
    minutes=90,
    todos=[
        Todo("s05._split_node", 1, target="RadixCache._split_node", points=2),
        Todo("s05.match_prefix", 2, target="RadixCache.match_prefix", points=3),
        Todo("s05.insert", 3, target="RadixCache.insert", points=3),
        Todo("s05.inc_lock_ref", 4, target="RadixCache.inc_lock_ref", points=2),
        Todo("s05.dec_lock_ref", 5, target="RadixCache.dec_lock_ref", points=2),
        Todo("s05.evict", 6, target="RadixCache.evict", points=3),
    ],
    quiz=Quiz(number=7, points=2, questions=(
        Question("q1"),
        Question("q2"),
        Question("q3", decimals=0),
        Question("q4"),
        Question("q5", decimals=0),
        Question("q6"),
    )),
    time_limit_s=10,
    memory_limit_mb=512,
)


# -- probe helpers (the hidden checks use them too) -------------------------------------------------
def slots_for(i: int, tokens) -> list[int]:
    """Slot ids of the ``i``-th sequence inserted by a fixture: 100*(i+1), 100*(i+1)+1, ..."""
    return [100 * (i + 1) + j for j in range(len(tokens))]


def make(impl, *seqs, page_size: int = 1):
    """A cache (default logical clock) with ``seqs`` inserted in order."""
    cache = impl.RadixCache(page_size)
    for i, tokens in enumerate(seqs):
        cache.insert(tokens, slots_for(i, tokens))
    return cache


def sizes(cache) -> dict:
    return record(evictable=cache.evictable_size, protected=cache.protected_size)


def node_at(cache, tokens):
    """The node whose edge ends exactly after ``tokens`` (walks the tree; changes nothing)."""
    node, pos = cache.root, 0
    while pos < len(tokens):
        node = node.children[cache._child_key(tuple(tokens), pos)]
        pos += len(node.key)
    if pos != len(tokens):
        raise KeyError(f"no node ends after {len(tokens)} tokens")
    return node


def _order(k) -> tuple:
    # child keys are ints (page size 1) or tuples of ints (pages): both sort as tuples
    return k if isinstance(k, tuple) else (k,)


def tree(cache, limit: int = 2_000) -> list[dict]:
    """Every node as a record, parents first, siblings in key order, found by walking ``children``
    (so a broken parent link shows up in :func:`invariants`, not as a crash here)."""
    out: list[dict] = []
    stack = [(cache.root, 0)]
    while stack:
        node, start = stack.pop()
        if node is not cache.root:
            out.append(record(start=start, key=list(node.key), slots=list(node.value), lock_ref=node.lock_ref,
                              last_access=node.last_access))
            start += len(node.key)
            if len(out) > limit:
                raise RuntimeError("the tree has a cycle (or far more nodes than this check made)")
        stack.extend((node.children[k], start) for k in sorted(node.children, key=_order, reverse=True))
    return out


def invariants(cache) -> str:
    """``"ok"``, or the first invariant the cache's own check finds broken."""
    try:
        cache.check_invariants()
    except AssertionError as exc:
        return f"broken: {exc}"
    return "ok"


def checked(cache) -> dict:
    """The whole tree, both sizes, and whether the invariants hold."""
    return record(tree=tree(cache), **sizes(cache), invariants=invariants(cache))


def big_tokens(*offsets: int) -> list[int]:
    """Token ids of a real vocabulary (above 150,000), computed at run time: each call makes new int
    objects, so two equal ids are equal but not the same object (``is`` tells them apart, ``==`` does not)."""
    base = int("151000")
    return [base + o for o in offsets]


class WalkCounter(dict):
    """A ``children`` dict that counts how often it is walked (iterated, or its keys, values or items
    listed); a lookup (``get``, ``in``, ``[]``) is not a walk."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.walks = 0

    def __iter__(self):
        self.walks += 1
        return super().__iter__()

    def keys(self):
        self.walks += 1
        return super().keys()

    def values(self):
        self.walks += 1
        return super().values()

    def items(self):
        self.walks += 1
        return super().items()


def wide_cache(impl, fanout: int, system=(7, 7, 7)):
    """A shared prefix ``system`` with ``fanout`` two-token children below it, built node by node (no
    TODO code runs); the root's and the prefix node's children dicts count their walks."""
    cache = impl.RadixCache()
    inner = cache._new_node(tuple(system), tuple(range(len(system))), cache.root, 0)
    cache.root.children = WalkCounter({cache._child_key(inner.key): inner})
    inner.children = WalkCounter()
    for i in range(fanout):
        node = cache._new_node((10 + i, 3), (10 + 2 * i, 11 + 2 * i), inner, 0)
        dict.__setitem__(inner.children, cache._child_key(node.key), node)
    cache.evictable_size = len(system) + 2 * fanout
    return cache


def walks(cache) -> int:
    """How often the root's and the shared prefix node's children were walked, and reset the counts."""
    inner = next(iter(dict.values(cache.root.children)))
    n = cache.root.children.walks + inner.children.walks
    cache.root.children.walks = inner.children.walks = 0
    return n


# -- TODO 1: _split_node ----------------------------------------------------------------------------
@STAGE.check("s05._split_node")
def split_in_the_middle(impl):
    cache = make(impl, [1, 2, 3, 4])
    new = cache._split_node(node_at(cache, [1, 2, 3, 4]), 2)
    return record(new_key=list(new.key), new_slots=list(new.value), cache=checked(cache))


@STAGE.check("s05._split_node")
def split_keeps_locks(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    cache.inc_lock_ref(leaf)
    cache._split_node(leaf, 1)
    during = checked(cache)
    cache.dec_lock_ref(leaf)
    return record(locked=during, unlocked=checked(cache))


@STAGE.check("s05._split_node",
             specificity=1)
def split_keeps_access_time(impl):
    cache = make(impl, [1, 2, 3], [9])
    cache._split_node(node_at(cache, [1, 2, 3]), 2)
    return checked(cache)


@STAGE.check("s05._split_node",
             specificity=2)
def split_twice_then_match(impl):
    cache = make(impl, [5, 6, 7, 8])
    leaf = node_at(cache, [5, 6, 7, 8])
    cache._split_node(leaf, 1)
    cache._split_node(leaf, 1)
    return record(slots=cache.match_prefix([5, 6, 7, 8]).slots, cache=checked(cache))


@STAGE.check("s05._split_node")
def split_on_a_page_boundary(impl):
    cache = make(impl, [7, 7, 7, 8, 9, 9], page_size=2)
    new = cache._split_node(node_at(cache, [7, 7, 7, 8, 9, 9]), 2)
    return record(new_key=list(new.key), slots=cache.match_prefix([7, 7, 7, 8, 9, 9]).slots, cache=checked(cache))


# -- TODO 2: match_prefix ---------------------------------------------------------------------------
@STAGE.check("s05.match_prefix",
             call="insert([1, 2, 3, 4]); insert([1, 2, 5]); m = match_prefix([1, 2, 5, 9]); m.length, m.slots, "
                  "path_tokens(m.last_node)")
def longest_prefix_and_slots(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    m = cache.match_prefix([1, 2, 5, 9])
    return record(length=m.length, slots=m.slots, last_node_path=list(cache.path_tokens(m.last_node)))


@STAGE.check("s05.match_prefix")
def splits_inside_an_edge(impl):
    cache = make(impl, [1, 2, 3, 4])
    m = cache.match_prefix([1, 2, 3, 9])
    shown = record(slots=m.slots, last_node_key=list(m.last_node.key), cache=checked(cache))
    return record(**shown, again=cache.match_prefix([1, 2, 3, 9]).slots, tree_after_again=tree(cache))


@STAGE.check("s05.match_prefix")
def splits_where_the_prompt_ends(impl):
    # The prompt [1, 2] ends inside the edge [1, 2, 3, 4]: the boundary becomes a node all the same.
    # zh: 提示词 [1, 2] 在边 [1, 2, 3, 4] 的中间结束：边界同样要成为一个节点。
    cache = make(impl, [1, 2, 3, 4])
    m = cache.match_prefix([1, 2])
    cache.inc_lock_ref(m.last_node)
    return record(slots=m.slots, last_node_key=list(m.last_node.key), cache=checked(cache), evicted=cache.evict(100))


@STAGE.check("s05.match_prefix",
             specificity=1)
def stamps_the_whole_path(impl):
    cache = make(impl, [1, 2], [1, 2, 3], [7])
    cache.match_prefix([1, 2, 3])
    return checked(cache)


@STAGE.check("s05.match_prefix")
def whole_pages_only(impl):
    cache = make(impl, [1, 2, 3, 4, 5, 6], page_size=2)
    return record(slots=cache.match_prefix([1, 2, 3, 9]).slots, length_of_1=cache.match_prefix([1]).length,
                  cache=checked(cache))


@STAGE.check("s05.match_prefix")
def no_match_returns_root(impl):
    cache = make(impl, [1, 2])
    m = cache.match_prefix([3, 1, 2])
    return record(length=m.length, slots=m.slots, last_node_is_root=m.last_node is cache.root, cache=checked(cache))


@STAGE.check("s05.match_prefix")
def token_boundaries(impl):
    cache = make(impl, [1, 2, 3], [12, 5])
    return record(match_1_23_4=cache.match_prefix([1, 23, 4]).slots, match_12_3=cache.match_prefix([12, 3]).slots,
                  cache=checked(cache))


@STAGE.check("s05.match_prefix")
def equal_ids_are_not_identical(impl):
    cache = make(impl, [*big_tokens(643, 644), 9, *big_tokens(645)])
    m = cache.match_prefix([*big_tokens(643, 644), 9, *big_tokens(646)])
    return record(length=m.length, slots=m.slots, cache=checked(cache))


@STAGE.check("s05.match_prefix")
def one_lookup_per_level(impl):
    cache = wide_cache(impl, 1_000)
    m = cache.match_prefix([7, 7, 7, 500, 3, 9])
    return record(length=m.length, slots=m.slots, walks=walks(cache))


# -- TODO 3: insert ---------------------------------------------------------------------------------
@STAGE.check("s05.insert")
def returns_tokens_already_cached(impl):
    cache = impl.RadixCache()
    seqs = ([1, 2, 3], [1, 2, 3, 4], [1, 2], [5])
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return record(returned=returned, cache=checked(cache))


@STAGE.check("s05.insert",
             specificity=1)
def splits_where_paths_diverge(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 8, 9])
    return checked(cache)


@STAGE.check("s05.insert",
             specificity=2)
def counts_evictable_and_stamps(impl):
    cache = make(impl, [4, 4], [4, 4, 4, 4])
    return checked(cache)


@STAGE.check("s05.insert")
def insert_whole_pages_only(impl):
    cache = impl.RadixCache(2)
    seqs = ([1, 2, 3], [1, 2, 5, 6, 7], [1, 2, 5, 8])
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return record(returned=returned, cache=checked(cache))


@STAGE.check("s05.insert")
def insert_token_boundaries(impl):
    cache = impl.RadixCache()
    seqs = ([1, 2, 3], [1, 23, 4], [12, 3], [1, 2, 34])
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return record(returned=returned, cache=checked(cache))


@STAGE.check("s05.insert")
def insert_equal_ids_are_not_identical(impl):
    cache = impl.RadixCache()
    seqs = (big_tokens(1, 2, 3, 4), big_tokens(1, 2, 8), big_tokens(1, 2, 3, 4))
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return record(returned=returned, cache=checked(cache))


@STAGE.check("s05.insert")
def insert_one_lookup_per_level(impl):
    cache = wide_cache(impl, 1_000)
    returned = cache.insert([7, 7, 7, 2000, 5], slots_for(9, [7, 7, 7, 2000, 5]))
    return record(returned=returned, walks=walks(cache), **sizes(cache))


@STAGE.check("s05.insert")
def leaf_below_a_locked_path(impl):
    cache = make(impl, [4, 5])
    cache.inc_lock_ref(node_at(cache, [4, 5]))
    cache.insert([4, 5, 6, 6], slots_for(1, [4, 5, 6, 6]))
    cache.insert([4, 9], slots_for(2, [4, 9]))
    return record(cache=checked(cache), evicted=cache.evict(100))


# -- TODO 4: inc_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.inc_lock_ref")
def locks_the_whole_path(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    moved = cache.inc_lock_ref(node_at(cache, [1, 2, 5]))
    return record(moved=moved, cache=checked(cache))


@STAGE.check("s05.inc_lock_ref")
def second_lock_moves_nothing(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    return record(first=cache.inc_lock_ref(leaf), second=cache.inc_lock_ref(leaf), cache=checked(cache))


@STAGE.check("s05.inc_lock_ref")
def nested_locks(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    moved = [cache.inc_lock_ref(node_at(cache, t)) for t in ([1, 2], [1, 2, 3], [1, 2, 4])]
    return record(moved=moved, cache=checked(cache))


@STAGE.check("s05.inc_lock_ref")
def two_requests_lock_a_deep_node(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5], [1, 6])
    deep = node_at(cache, [1, 2, 3, 4])
    first = cache.inc_lock_ref(deep)
    return record(first=first, second=cache.inc_lock_ref(deep), cache=checked(cache))


@STAGE.check("s05.inc_lock_ref",
             specificity=1)
def lock_after_a_miss(impl):
    cache = make(impl, [1, 2])
    m = cache.match_prefix([8, 8])
    moved = cache.inc_lock_ref(m.last_node)
    return record(moved=moved, root_lock_ref=cache.root.lock_ref, cache=checked(cache))


# -- TODO 5: dec_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.dec_lock_ref")
def unlock_restores(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    leaf = node_at(cache, [1, 2, 5])
    cache.inc_lock_ref(leaf)
    return record(moved=cache.dec_lock_ref(leaf), cache=checked(cache))


@STAGE.check("s05.dec_lock_ref")
def two_locks_need_two_unlocks(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    cache.inc_lock_ref(leaf)
    cache.inc_lock_ref(leaf)
    first = cache.dec_lock_ref(leaf)
    middle = checked(cache)
    return record(first=first, after_first=middle, second=cache.dec_lock_ref(leaf), after_second=checked(cache))


@STAGE.check("s05.dec_lock_ref")
def shared_parent_stays_locked(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    a, b = node_at(cache, [1, 2, 3]), node_at(cache, [1, 2, 4])
    cache.inc_lock_ref(a)
    cache.inc_lock_ref(b)
    return record(moved=cache.dec_lock_ref(a), cache=checked(cache))


@STAGE.check("s05.dec_lock_ref")
def two_requests_share_a_deep_node(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    deep = node_at(cache, [1, 2, 3, 4])
    cache.inc_lock_ref(deep)
    cache.inc_lock_ref(deep)
    first = cache.dec_lock_ref(deep)
    after_first = checked(cache)
    second = cache.dec_lock_ref(deep)
    return record(first=first, after_first=after_first, second=second, after_second=checked(cache),
                  evicted=cache.evict(100))


# -- TODO 6: evict ----------------------------------------------------------------------------------
@STAGE.check("s05.evict",
             specificity=2)
def least_recently_used_first(impl):
    cache = make(impl, [1, 1], [2, 2], [3, 3])
    cache.match_prefix([1, 1])
    first = cache.evict(1)
    return record(first=first, then=cache.evict(3), cache=checked(cache))


@STAGE.check("s05.evict")
def parent_becomes_a_candidate(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [5])
    return record(freed=cache.evict(4), cache=checked(cache))


@STAGE.check("s05.evict")
def locked_nodes_stay(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    cache.inc_lock_ref(node_at(cache, [1, 2, 3]))
    return record(freed=cache.evict(100), cache=checked(cache))


@STAGE.check("s05.evict")
def locked_inner_node_loses_its_last_child(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [5])
    inner = node_at(cache, [1, 2])
    cache.inc_lock_ref(inner)
    first = cache.evict(100)
    during = checked(cache)
    cache.dec_lock_ref(inner)
    return record(freed=first, cache=during, then=cache.evict(100))


@STAGE.check("s05.evict",
             specificity=1)
def stops_when_enough(impl):
    cache = make(impl, [1, 2], [3, 4])
    return record(zero=cache.evict(0), one=cache.evict(1), cache=checked(cache))


@STAGE.check("s05.evict")
def equal_access_times(impl):
    cache = impl.RadixCache(1, clock=lambda: 2.0)
    for i, tokens in enumerate(([7, 1], [7, 2], [3], [4, 4])):
        cache.insert(tokens, slots_for(i, tokens))
    first = cache.evict(3)
    return record(first=first, then=cache.evict(2), cache=checked(cache))


@STAGE.check("s05.evict",
             specificity=3)
def evicted_nodes_leave_the_tree(impl):
    cache = make(impl, [5, 5], [6], [8, 8, 8])
    gone = node_at(cache, [5, 5])
    freed = sorted(cache.evict(100))
    detached = gone.parent is None
    try:
        cache.inc_lock_ref(gone)
        relock = "locked"
    except ValueError:
        relock = "ValueError"
    again = cache.insert([5, 5, 7], slots_for(3, [5, 5, 7]))
    return record(freed=freed, parent_is_none=detached, lock_after_eviction=relock, insert_again=again,
                  slots=cache.match_prefix([5, 5, 7]).slots, cache=checked(cache))

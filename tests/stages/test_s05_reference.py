"""Tests of the stage-5 reference radix tree: unit tests per TODO, and a Hypothesis state machine
that runs random insert/match/lock/unlock/evict sequences against a brute-force model (a dict of
every cached prefix) and checks the tree's invariants after every step."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from solutions.s05_radix_tree import PrefixMatch, RadixCache, TreeNode


def make_cache(page_size: int = 1) -> tuple[RadixCache, list[int]]:
    """A cache whose clock the test moves by hand: ``now[0] += 1``."""
    now = [0]
    return RadixCache(page_size, clock=lambda: now[0]), now


def fresh_slots(tokens, start: int = 100) -> list[int]:
    return list(range(start, start + len(tokens)))


def path_nodes(cache: RadixCache, node: TreeNode) -> list[TreeNode]:
    out = []
    while node is not cache.root:
        out.append(node)
        node = node.parent
    return out


# -- s05._split_node ---------------------------------------------------------------------------------
def test_s05__split_node_keeps_tokens_slots_and_locks():
    cache, _ = make_cache()
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    leaf = cache.match_prefix([1, 2, 3, 4]).last_node
    cache.inc_lock_ref(leaf)
    top = cache._split_node(leaf, 1)
    cache.check_invariants()
    assert top.key == (1,) and top.value == (10,) and top.lock_ref == 1
    assert leaf.key == (2, 3, 4) and leaf.value == (11, 12, 13) and leaf.parent is top
    assert cache.root.children[1] is top and top.children[2] is leaf
    assert (cache.evictable_size, cache.protected_size) == (0, 4)


def test_s05__split_node_copies_last_access():
    cache, now = make_cache()
    now[0] = 5
    cache.insert([1, 2, 3], [10, 11, 12])
    top = cache._split_node(cache.root.children[1], 2)
    assert top.last_access == 5 and top.children[3].last_access == 5


@pytest.mark.parametrize("split_len", [0, 3, 5, -1])
def test_s05__split_node_rejects_out_of_edge_lengths(split_len):
    cache, _ = make_cache()
    cache.insert([1, 2, 3], [10, 11, 12])
    before = cache.describe()
    with pytest.raises(ValueError):
        cache._split_node(cache.root.children[1], split_len)
    assert cache.describe() == before


def test_s05__split_node_rejects_split_inside_a_page():
    cache, _ = make_cache(page_size=2)
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    with pytest.raises(ValueError):
        cache._split_node(cache.root.children[(1, 2)], 1)


# -- s05.match_prefix -------------------------------------------------------------------------------
def test_s05_match_prefix_empty_tree_matches_nothing():
    cache, _ = make_cache()
    match = cache.match_prefix([1, 2, 3])
    assert isinstance(match, PrefixMatch)
    assert (match.length, match.slots, match.last_node) == (0, [], cache.root)


def test_s05_match_prefix_longest_prefix_and_slots():
    cache, _ = make_cache()
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    cache.insert([1, 2, 7], [20, 21, 22])
    match = cache.match_prefix([1, 2, 7, 9, 9])
    assert match.length == 3 and match.slots == [10, 11, 22]
    assert cache.path_tokens(match.last_node) == (1, 2, 7)


def test_s05_match_prefix_splits_inside_an_edge():
    cache, _ = make_cache()
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    match = cache.match_prefix([1, 2, 9])
    assert match.slots == [10, 11]
    assert match.last_node.key == (1, 2)  # the boundary is a node of its own now
    assert [len(n.key) for n in cache.nodes()] == [2, 2]
    cache.check_invariants()


def test_s05_match_prefix_stamps_whole_path():
    cache, now = make_cache()
    now[0] = 1
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    now[0] = 2
    cache.insert([1, 2, 3, 4, 5, 6], [10, 11, 12, 13, 14, 15])
    now[0] = 7
    match = cache.match_prefix([1, 2, 3, 4, 5, 6])
    assert [n.last_access for n in path_nodes(cache, match.last_node)] == [7, 7]


def test_s05_match_prefix_does_not_stamp_other_branches():
    cache, now = make_cache()
    now[0] = 1
    cache.insert([1, 2], [10, 11])
    now[0] = 2
    cache.insert([3, 4], [12, 13])
    now[0] = 3
    cache.match_prefix([1, 2])
    assert {n.key: n.last_access for n in cache.nodes()} == {(1, 2): 3, (3, 4): 2}


def test_s05_match_prefix_whole_pages_only():
    cache, _ = make_cache(page_size=2)
    cache.insert([1, 2, 3, 4, 5, 6], [10, 11, 12, 13, 14, 15])
    assert cache.match_prefix([1, 2, 3, 9]).slots == [10, 11]  # page [3, 9] differs from [3, 4]
    assert cache.match_prefix([1, 2, 3, 4, 5]).slots == [10, 11, 12, 13]  # partial page dropped
    cache.check_invariants()


def test_s05_match_prefix_key_shorter_than_a_page_changes_nothing():
    cache, now = make_cache(page_size=4)
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    before = cache.describe()
    now[0] = 9
    match = cache.match_prefix([1, 2, 3])
    assert (match.length, match.last_node) == (0, cache.root)
    assert cache.describe() == before


# -- s05.insert -------------------------------------------------------------------------------------
def test_s05_insert_returns_tokens_already_cached():
    cache, _ = make_cache()
    assert cache.insert([1, 2, 3], [10, 11, 12]) == 0
    assert cache.insert([1, 2, 3, 4], [20, 21, 22, 23]) == 3
    assert cache.insert([1, 2], [30, 31]) == 2
    assert cache.match_prefix([1, 2, 3, 4]).slots == [10, 11, 12, 23]  # the tree keeps its slots
    assert cache.evictable_size == 4


def test_s05_insert_splits_where_paths_diverge():
    cache, _ = make_cache()
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    assert cache.insert([1, 2, 8, 9], [20, 21, 22, 23]) == 2
    assert [(d, k) for d, k, *_ in cache.describe()] == [(0, [1, 2]), (2, [3, 4]), (2, [8, 9])]
    cache.check_invariants()


def test_s05_insert_drops_the_partial_last_page():
    cache, _ = make_cache(page_size=2)
    assert cache.insert([1, 2, 3], [10, 11, 12]) == 0
    assert cache.describe() == [(0, [1, 2], [10, 11], 0, 0)]
    assert cache.insert([5], [13]) == 0 and cache.total_size == 2


def test_s05_insert_stamps_path():
    cache, now = make_cache()
    now[0] = 1
    cache.insert([1, 2, 3], [10, 11, 12])
    now[0] = 4
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    assert all(n.last_access == 4 for n in cache.nodes())


def test_s05_insert_rejects_mismatched_slots_without_change():
    cache, _ = make_cache()
    with pytest.raises(ValueError):
        cache.insert([1, 2, 3], [10, 11])
    assert cache.describe() == [] and cache.total_size == 0


# -- s05.inc_lock_ref / s05.dec_lock_ref -------------------------------------------------------------
def test_s05_inc_lock_ref_protects_the_whole_path():
    cache, _ = make_cache()
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    cache.insert([1, 2, 5], [20, 21, 22])
    node = cache.match_prefix([1, 2, 5]).last_node
    assert cache.inc_lock_ref(node) == 3
    assert (cache.evictable_size, cache.protected_size) == (2, 3)
    assert cache.inc_lock_ref(node) == 0  # already protected: nothing moves
    assert [n.lock_ref for n in path_nodes(cache, node)] == [2, 2]
    cache.check_invariants()


def test_s05_dec_lock_ref_restores_evictable():
    cache, _ = make_cache()
    cache.insert([1, 2, 3], [10, 11, 12])
    node = cache.match_prefix([1, 2, 3]).last_node
    cache.inc_lock_ref(node)
    cache.inc_lock_ref(node)
    assert cache.dec_lock_ref(node) == 0
    assert cache.dec_lock_ref(node) == 3
    assert (cache.evictable_size, cache.protected_size) == (3, 0)
    cache.check_invariants()


def test_s05_dec_lock_ref_rejects_unlocked_node():
    cache, _ = make_cache()
    cache.insert([1, 2, 3], [10, 11, 12])
    node = cache.match_prefix([1, 2, 3]).last_node
    with pytest.raises(ValueError):
        cache.dec_lock_ref(node)
    assert node.lock_ref == 0 and cache.evictable_size == 3


def test_s05_inc_lock_ref_on_root_is_a_no_op():
    cache, _ = make_cache()
    cache.insert([1], [10])
    assert cache.inc_lock_ref(cache.root) == 0 and cache.dec_lock_ref(cache.root) == 0
    cache.check_invariants()


def test_s05_inc_lock_ref_rejects_evicted_node():
    cache, _ = make_cache()
    cache.insert([1, 2], [10, 11])
    node = cache.match_prefix([1, 2]).last_node
    cache.evict(2)
    with pytest.raises(ValueError):
        cache.inc_lock_ref(node)


# -- s05.evict --------------------------------------------------------------------------------------
def test_s05_evict_least_recently_used_leaf_first():
    cache, now = make_cache()
    for t, tokens in enumerate([[1, 1], [2, 2], [3, 3]], start=1):
        now[0] = t
        cache.insert(tokens, fresh_slots(tokens, 10 * t))
    now[0] = 9
    cache.match_prefix([1, 1])  # [1, 1] is now the most recent
    assert cache.evict(1) == [20, 21]
    assert cache.evict(3) == [30, 31, 10, 11]
    assert cache.total_size == 0


def test_s05_evict_parent_becomes_candidate_when_last_child_goes():
    cache, now = make_cache()
    now[0] = 1
    cache.insert([1, 2, 3], [10, 11, 12])
    now[0] = 2
    cache.insert([1, 2, 4], [20, 21, 22])
    now[0] = 3
    cache.insert([5], [30])
    # leaves by age: [3] (t=1), [4] (t=2), then [1, 2] becomes a leaf (t=2) before [5] (t=3)
    assert cache.evict(4) == [12, 22, 10, 11]
    assert cache.describe() == [(0, [5], [30], 0, 3)]
    cache.check_invariants()


def test_s05_evict_never_drops_locked_nodes():
    cache, _ = make_cache()
    cache.insert([1, 2, 3], [10, 11, 12])
    cache.insert([1, 2, 4], [20, 21, 22])
    node = cache.match_prefix([1, 2, 3]).last_node
    cache.inc_lock_ref(node)
    assert cache.evict(100) == [22]
    assert cache.path_tokens(node) == (1, 2, 3) and cache.total_size == 3
    cache.check_invariants()


def test_s05_evict_stops_at_a_node_boundary():
    cache, _ = make_cache()
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    assert cache.evict(1) == [10, 11, 12, 13]  # nodes go whole
    assert cache.evict(0) == []


def test_s05_evict_rejects_negative():
    cache, _ = make_cache()
    with pytest.raises(ValueError):
        cache.evict(-1)


def test_s05_default_clock_is_a_logical_counter():
    a, b = RadixCache(), RadixCache()
    for cache in (a, b):
        cache.insert([1, 2], [0, 1])
        cache.match_prefix([1])
    assert a.describe() == b.describe()
    assert [n.last_access for n in a.nodes()] == [2, 1]  # the match split [1, 2]


def test_s05_page_size_validated():
    with pytest.raises(ValueError):
        RadixCache(page_size=0)


# -- shared paths, token boundaries, the quiz ---------------------------------------------------------
def test_s05_dec_lock_ref_two_requests_on_one_deep_node_release_fully():
    cache, _ = make_cache()
    cache.insert([1, 2, 3, 4], [10, 11, 12, 13])
    cache.insert([1, 2, 5], [20, 21, 22])
    deep = cache.match_prefix([1, 2, 3, 4]).last_node
    assert cache.inc_lock_ref(deep) == 4 and cache.inc_lock_ref(deep) == 0
    assert [n.lock_ref for n in path_nodes(cache, deep)] == [2, 2]
    assert cache.dec_lock_ref(deep) == 0  # the other request still holds the whole path
    assert [n.lock_ref for n in path_nodes(cache, deep)] == [1, 1]
    assert cache.dec_lock_ref(deep) == 4
    assert (cache.evictable_size, cache.protected_size) == (5, 0)
    assert sorted(cache.evict(100)) == [10, 11, 12, 13, 22]
    cache.check_invariants()


def test_s05_evict_keeps_a_locked_inner_node_that_lost_its_children():
    cache, now = make_cache()
    for t, (tokens, start) in enumerate([([1, 2, 3], 10), ([1, 2, 4], 20), ([5], 30)], start=1):
        now[0] = t
        cache.insert(tokens, fresh_slots(tokens, start))
    inner = cache.match_prefix([1, 2]).last_node
    cache.inc_lock_ref(inner)
    assert cache.evict(100) == [12, 22, 30]  # [1 2] became a leaf, but it is locked
    assert cache.describe()[0][1:4] == ([1, 2], [10, 11], 1)
    cache.dec_lock_ref(inner)
    assert cache.evict(100) == [10, 11]
    cache.check_invariants()


def test_s05_match_prefix_compares_whole_tokens():
    cache, _ = make_cache()
    cache.insert([1, 2, 3], [10, 11, 12])
    cache.insert([12, 5], [20, 21])
    assert cache.match_prefix([1, 23, 4]).slots == [10]
    assert cache.match_prefix([12, 3]).slots == [20]
    assert cache.insert([1, 23, 4], [30, 31, 32]) == 1
    cache.check_invariants()


def test_s05_quiz_answers_agree_with_the_reference():
    from solutions.s05_radix_tree import quiz

    answers = quiz()
    cache = RadixCache()
    cache.insert([1, 2, 3, 4, 5, 6], list(range(6)))
    cache.match_prefix([1, 2, 3, 9])
    cache.match_prefix([1, 9])
    assert "ABCD"[[2, 3, 4, 6].index(len(list(cache.nodes())))] == answers["q1"]
    paged = RadixCache(16)
    paged.insert(list(range(64)), list(range(64)))
    assert paged.match_prefix(list(range(40)) + [999] * 24).length == answers["q3"]
    wide = RadixCache()
    wide.insert([7] * 64, list(range(64)))
    assert len(wide.evict(1)) == answers["q5"]


def test_s05_view_speaks_the_notebook_language():
    import matplotlib

    matplotlib.use("Agg")
    import warnings

    from autograder.core.i18n import set_language
    from autograder.learner.fonts import use_cjk_font
    from workbook.radix_view import RadixView

    set_language("zh")
    try:
        assert use_cjk_font()  # what the Chinese edition's setup cell does
        view = RadixView(RadixCache())
        view.insert([1, 2, 3])
        view.evict(3)
        assert view.caption().startswith("第 2 步：淘汰 3") and "释放了 3 个槽位" in view.caption()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            figure = view.picture(1)
            figure.canvas.draw()
        assert "个节点" in figure.axes[0].get_title()
        assert not [w for w in caught if "missing from" in str(w.message)]
    finally:
        set_language("en")
    assert RadixView(RadixCache()).caption() == "step 0: start"


# -- property-based: random operations against a brute-force model ----------------------------------
tokens_st = st.lists(st.integers(0, 2), max_size=10)


class RadixMachine(RuleBasedStateMachine):
    """Model: ``slot_of[(prefix, i)]`` = slot of token ``i`` of every cached page-aligned prefix
    (``prefix`` ends with the page of token ``i``). The tree must hold exactly these, no more."""

    @initialize(page_size=st.sampled_from([1, 2, 3]))
    def setup(self, page_size: int) -> None:
        self.now = 0
        self.cache = RadixCache(page_size, clock=lambda: self.now)
        self.page = page_size
        self.slot_of: dict[tuple[int, ...], int] = {}
        self.next_slot = itertools.count()
        self.locks: list[TreeNode] = []

    # -- brute force --
    def model_match(self, tokens) -> list[int]:
        key = tuple(tokens)[: len(tokens) - len(tokens) % self.page]
        length = len(key)
        while length and self.entry(key, length - 1) not in self.slot_of:
            length -= self.page
        return [self.slot_of[self.entry(key, i)] for i in range(length)]

    def entry(self, key, i: int) -> tuple[tuple[int, ...], int]:
        """Model key of token ``i`` of ``key``: the page-aligned prefix that ends with its page."""
        return key[: (i // self.page + 1) * self.page], i

    def tree_prefixes(self) -> dict[tuple[int, ...], int]:
        out = {}
        for node in self.cache.nodes():
            path = self.cache.path_tokens(node)
            start = len(path) - len(node.key)
            for i, slot in enumerate(node.value):
                out[self.entry(path, start + i)] = slot
        return out

    # -- rules --
    @rule(tokens=tokens_st)
    def insert(self, tokens) -> None:
        self.now += 1
        slots = [next(self.next_slot) for _ in tokens]
        expected_already = len(self.model_match(tokens))
        already = self.cache.insert(tokens, slots)
        assert already == expected_already
        key = tuple(tokens)[: len(tokens) - len(tokens) % self.page]
        for i in range(already, len(key)):
            self.slot_of[self.entry(key, i)] = slots[i]
        # every node of the inserted path carries the new time
        self.assert_path_stamped(key)

    def assert_path_stamped(self, key) -> None:
        node, pos = self.cache.root, 0
        while pos < len(key):
            node = node.children[self.cache._child_key(key, pos)]
            assert node.last_access == self.now
            pos += len(node.key)

    @rule(tokens=tokens_st, lock=st.booleans())
    def match(self, tokens, lock: bool) -> None:
        self.now += 1
        before = self.tree_prefixes()
        match = self.cache.match_prefix(tokens)
        assert match.slots == self.model_match(tokens)
        assert self.cache.path_tokens(match.last_node) == tuple(tokens[: match.length])
        assert self.tree_prefixes() == before  # a split changes the shape, never the content
        if match.length:
            assert all(n.last_access == self.now for n in path_nodes(self.cache, match.last_node))
        if lock:
            unlocked = sum(len(n.key) for n in path_nodes(self.cache, match.last_node) if n.lock_ref == 0)
            assert self.cache.inc_lock_ref(match.last_node) == unlocked
            self.locks.append(match.last_node)

    @precondition(lambda self: self.locks)
    @rule(data=st.data())
    def unlock(self, data) -> None:
        node = self.locks.pop(data.draw(st.integers(0, len(self.locks) - 1)))
        freed = sum(len(n.key) for n in path_nodes(self.cache, node) if n.lock_ref == 1)
        assert self.cache.dec_lock_ref(node) == freed

    @rule(num_tokens=st.integers(0, 12))
    def evict(self, num_tokens: int) -> None:
        node_of_slot = {s: n for n in self.cache.nodes() for s in n.value}
        evictable_before = self.cache.evictable_size
        locked_paths = [self.cache.path_tokens(n) for n in self.locks]
        freed = self.cache.evict(num_tokens)
        after = self.tree_prefixes()
        # what went is exactly what the model loses, and nothing else changed
        assert set(self.slot_of.values()) - set(after.values()) == set(freed)
        assert all(self.slot_of[p] == s for p, s in after.items())
        assert len(freed) == len(set(freed)) >= min(num_tokens, evictable_before)
        if freed:  # nodes go whole, and the last one was needed
            assert len(freed) - len(node_of_slot[freed[-1]].key) < num_tokens
        assert all(not p or self.entry(p, len(p) - 1) in after for p in locked_paths)
        # least recently used first: nothing left that could go is older than what went
        if freed:
            oldest_gone = max(node_of_slot[s].last_access for s in freed)
            left = [n.last_access for n in self.cache._leaves() if n.lock_ref == 0]
            assert all(t >= oldest_gone for t in left)
        self.slot_of = after

    # -- after every step --
    @invariant()
    def tree_matches_model(self) -> None:
        if not hasattr(self, "cache"):
            return
        self.cache.check_invariants()
        assert self.tree_prefixes() == self.slot_of
        assert self.cache.total_size == len(self.slot_of)


RadixMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_s05_random_operations_match_brute_force_model = RadixMachine.TestCase
pytest.mark.slow(test_s05_random_operations_match_brute_force_model)  # random operations against a model, many examples: the slow lane


# -- the given tree view and the benchmark (smoke) ----------------------------------------------------
def test_s05_view_records_every_step_and_renders_without_widgets(monkeypatch):
    import base64

    import matplotlib

    matplotlib.use("Agg")
    from workbook import radix_view

    view = radix_view.RadixView(RadixCache(), decode=lambda t: "".join(map(chr, t)))
    view.insert([ord(c) for c in "abcd"])
    match = view.match([ord(c) for c in "abx"])
    view.lock(match)
    view.unlock(match)
    assert view.evict(1) == [2, 3]
    assert [s.label.split()[0] for s in view.steps] == ["start", "insert", "match", "lock", "unlock", "evict"]
    # the match split "abcd": the new node "ab" and the old one, now "cd", both changed
    assert match.last_node.id == 2 and view.steps[2].touched == {1, 2}
    assert view.steps[3].touched == {2}  # the lock touched "ab" only
    assert "evicted: #1 'cd'" in view.caption()
    # where ipywidgets cannot be built, the display is the picture alone
    monkeypatch.setattr(radix_view.RadixView, "widget", property(lambda self: 1 / 0))
    bundle = view._repr_mimebundle_()
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert "application/vnd.jupyter.widget-view+json" not in bundle


def test_s05_view_widget_follows_the_newest_step():
    import matplotlib

    matplotlib.use("Agg")
    from workbook.radix_view import RadixView

    view = RadixView(RadixCache())
    widget = view.widget
    view.insert([1, 2, 3])
    slider = widget.children[0].children[1]
    assert (slider.max, slider.value) == (1, 1)
    image = widget.children[2].value
    slider.value = 0  # replaying an earlier step redraws it
    assert widget.children[2].value != image
    assert "application/vnd.jupyter.widget-view+json" in view._repr_mimebundle_()


def test_s05_bench_radix_quick_runs(capsys):
    from benchmarks import bench_radix

    assert bench_radix.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "radix page 16, incremental evict" in out and "radix page 1" in out and "cycles/s" in out
    assert "incremental and scanning evict find the same hit tokens: True" in out
    assert "part 3, full caches" in out and "min " in out and "median " in out

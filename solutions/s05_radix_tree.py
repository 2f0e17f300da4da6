"""Stage 5 reference: a radix tree prefix cache (longest match, node split, lock refs, LRU eviction).

Where stages 2-4 find a prompt's cached prefix by hashing it block by block and probing a table,
the radix tree stores the cached token sequences themselves, sharing common prefixes as shared
paths. One walk from the root finds the longest cached prefix, at token granularity (page size 1)
or at whole-page granularity (page size > 1).

Every node's edge holds a run of tokens (``key``) and the KV slots that hold their keys/values
(``value``, one slot id per token). The cache never allocates or frees slots itself: ``insert``
takes slots the caller computed, and ``evict`` hands back the slots it dropped so the caller can
return them to its allocator.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable, Iterator, Sequence

from solutions.radix_node import PrefixMatch, Tokens, TreeNode


class RadixCache:
    """A prefix cache over token sequences, stored as a radix tree.

    Invariants (checked by :meth:`check_invariants`):
    - the tree holds each cached token sequence once: siblings differ in their first token (first
      page when ``page_size > 1``), and every edge length is a multiple of ``page_size``;
    - ``evictable_size + protected_size == total tokens in the tree``, where ``protected_size``
      counts the tokens of nodes with ``lock_ref > 0`` and ``evictable_size`` the rest;
    - every slot id in the tree appears once;
    - locked nodes (and so their whole path to the root) are never evicted.

    ``clock`` gives access times and must never go backwards; by default a logical counter that
    ticks once per ``match_prefix`` or ``insert``, so runs are deterministic. Methods validate their
    arguments before they change anything.
    """

    def __init__(self, page_size: int = 1, *, clock: Callable[[], float] | None = None) -> None:
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a positive int, got {page_size!r}")
        self.page_size = page_size
        self._clock: Callable[[], float] = clock if clock is not None else itertools.count(1).__next__
        self._ids = itertools.count(1)
        self.root = TreeNode(0, (), (), None)
        self.evictable_size = 0
        self.protected_size = 0

    # -- small helpers (given) -------------------------------------------------------------------
    def _page_aligned(self, tokens: Sequence[int]) -> Tokens:
        """``tokens`` as a tuple, cut down to whole pages (the partial last page is never cached)."""
        key = tuple(tokens)
        return key[: len(key) - len(key) % self.page_size]

    def _child_key(self, key: Tokens, pos: int = 0) -> object:
        """The dict key under which an edge starting at ``key[pos]`` hangs from its parent: the
        first token, or the first whole page when ``page_size > 1``."""
        if self.page_size == 1:
            return key[pos]
        return key[pos: pos + self.page_size]

    def _common_len(self, edge: Tokens, key: Tokens, pos: int) -> int:
        """How many leading tokens of ``edge`` equal ``key[pos:]``, rounded down to whole pages."""
        n = len(edge)
        if key[pos: pos + n] == edge:  # the common case, compared in C: the whole edge matches
            return n
        limit = min(n, len(key) - pos)
        i = 0
        while i < limit and edge[i] == key[pos + i]:
            i += 1
        return i - i % self.page_size

    def _new_node(self, key: Tokens, value: Tokens, parent: TreeNode, now: float) -> TreeNode:
        """A fresh unlocked node; the caller hangs it under ``parent`` and accounts its tokens."""
        return TreeNode(next(self._ids), key, value, parent, now)

    # -- TODOs -------------------------------------------------------------------------------------
    def _split_node(self, child: TreeNode, split_len: int) -> TreeNode:
        """Split ``child``'s edge after ``split_len`` tokens; return the new node that holds the
        first ``split_len`` tokens and now sits between ``child`` and its old parent.

        Sizes do not change: the same tokens are in the tree, under the same locks.
        """
        if child is self.root or not 0 < split_len < len(child.key) or split_len % self.page_size:
            raise ValueError(f"cannot split a {len(child.key)}-token edge at {split_len}")
        # TODO 1 (s05._split_node): make `new`, a node for child.key[:split_len] and its slots,
        # between child.parent and child; child keeps the rest of its key and slots. `new` copies
        # child's lock_ref and last_access, and both parents' children dicts must be right.
        # Hint: self._new_node(key, value, parent, now) makes the node; self._child_key(key) is the
        # dict key of an edge.
        ### BEGIN SOLUTION
        parent = child.parent
        assert parent is not None
        new = self._new_node(child.key[:split_len], child.value[:split_len], parent, child.last_access)
        new.lock_ref = child.lock_ref  # the same locks still cover these tokens
        child.key = child.key[split_len:]
        child.value = child.value[split_len:]
        child.parent = new
        new.children[self._child_key(child.key)] = child
        parent.children[self._child_key(new.key)] = new
        ### END SOLUTION
        return new

    def match_prefix(self, tokens: Sequence[int]) -> PrefixMatch:
        """The longest cached prefix of ``tokens`` (whole pages only) and the node where it ends.

        A match that ends inside an edge splits that edge, so ``last_node`` covers exactly the
        matched tokens (locking it locks nothing more). Every node on the matched path gets the
        current access time. Tokens shorter than one page match nothing and change nothing.
        """
        key = self._page_aligned(tokens)
        node = self.root
        slots: list[int] = []
        if not key:
            return PrefixMatch(slots, node)
        now = self._clock()
        # TODO 2 (s05.match_prefix): walk down from the root. At each node, find the child whose
        # edge starts with the next token (page) of `key`, count how many of its tokens match, and
        # split the child when the match ends inside its edge. Stamp each node you pass with `now`,
        # collect the slots of the matched tokens, and leave `node` at the last matched node.
        # Hint: self._child_key(key, pos), self._common_len(child.key, key, pos), self._split_node.
        ### BEGIN SOLUTION
        pos = 0
        while pos < len(key):
            child = node.children.get(self._child_key(key, pos))
            if child is None:
                break
            matched = self._common_len(child.key, key, pos)
            if matched < len(child.key):
                child = self._split_node(child, matched)  # make the match boundary a node
            child.last_access = now
            slots.extend(child.value)
            node = child
            pos += matched
        ### END SOLUTION
        return PrefixMatch(slots, node)

    def insert(self, tokens: Sequence[int], slots: Sequence[int]) -> int:
        """Cache ``tokens`` (whole pages) with their KV ``slots``; return how many leading tokens
        were cached already.

        For those leading tokens the tree keeps its own slots: the caller's slots at the same
        positions are duplicates, and the caller frees the ones it did not get from a match. The
        partial last page is not cached either; its slots stay the caller's.
        """
        if len(slots) != len(tokens):
            raise ValueError(f"{len(tokens)} tokens but {len(slots)} slots")
        key = self._page_aligned(tokens)
        value = tuple(slots[: len(key)])
        node = self.root
        pos = 0
        if not key:
            return 0
        now = self._clock()
        # TODO 3 (s05.insert): walk down like match_prefix (split where the paths diverge inside
        # an edge, stamp every node you pass with `now`). Where no child continues the path, hang
        # one new leaf holding the rest of `key` and `value`, count its tokens as evictable, and
        # stop: `pos` (returned below) must then be the number of tokens that were already cached.
        # Hint: the new leaf is self._new_node(key[pos:], value[pos:], node, now).
        ### BEGIN SOLUTION
        while pos < len(key):
            child = node.children.get(self._child_key(key, pos))
            if child is None:
                leaf = self._new_node(key[pos:], value[pos:], node, now)
                node.children[self._child_key(key, pos)] = leaf
                self.evictable_size += len(leaf.key)
                break
            matched = self._common_len(child.key, key, pos)
            if matched < len(child.key):
                child = self._split_node(child, matched)
            child.last_access = now
            node = child
            pos += matched
        ### END SOLUTION
        return pos

    def inc_lock_ref(self, node: TreeNode) -> int:
        """Lock the path from ``node`` up to the root (a request in flight uses its KV).

        Returns how many tokens moved from evictable to protected.
        """
        if node is not self.root and node.parent is None:
            raise ValueError(f"{node!r} is not in the tree (evicted?)")
        moved = 0
        # TODO 4 (s05.inc_lock_ref): for every node from `node` up to (not including) the root,
        # add one lock. A node whose lock_ref goes from 0 to 1 moves its tokens from
        # self.evictable_size to self.protected_size; count them in `moved`.
        # Hint: while node is not self.root: ...; node = node.parent
        ### BEGIN SOLUTION
        while node is not self.root:
            if node.lock_ref == 0:
                self.evictable_size -= len(node.key)
                self.protected_size += len(node.key)
                moved += len(node.key)
            node.lock_ref += 1
            node = node.parent
        ### END SOLUTION
        return moved

    def dec_lock_ref(self, node: TreeNode) -> int:
        """Release one lock taken by :meth:`inc_lock_ref` on the same node.

        Returns how many tokens moved from protected back to evictable.
        """
        if node is not self.root and (node.parent is None or node.lock_ref <= 0):
            # ancestors hold at least node's locks, so checking node is enough
            raise ValueError(f"{node!r} is not locked")
        moved = 0
        # TODO 5 (s05.dec_lock_ref): undo inc_lock_ref: for every node from `node` up to (not
        # including) the root, drop one lock; a node whose lock_ref reaches 0 moves its tokens back
        # from self.protected_size to self.evictable_size (count them in `moved`).
        # Hint: the mirror image of inc_lock_ref.
        ### BEGIN SOLUTION
        while node is not self.root:
            node.lock_ref -= 1
            if node.lock_ref == 0:
                self.protected_size -= len(node.key)
                self.evictable_size += len(node.key)
                moved += len(node.key)
            node = node.parent
        ### END SOLUTION
        return moved

    def evict(self, num_tokens: int) -> list[int]:
        """Drop at least ``num_tokens`` tokens (fewer only if not enough are evictable), least
        recently used unlocked leaves first, and return the freed slots in eviction order.

        A node is dropped whole. A parent whose last child goes becomes a leaf, and a candidate
        too. Locked nodes are never dropped.
        """
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        freed: list[int] = []
        # TODO 6 (s05.evict): put the unlocked leaves in a heap ordered by (last_access, id); pop
        # the oldest, detach it (out of parent.children; its parent becomes None), add its slots
        # to `freed`, take its tokens off self.evictable_size, and push the parent when it just
        # became an unlocked leaf (never the root). Stop once len(freed) >= num_tokens or nothing
        # is left to evict.
        # Hint: self._leaves() yields the leaves; heapq.heappush(heap, (n.last_access, n.id, n)).
        ### BEGIN SOLUTION
        heap = [(leaf.last_access, leaf.id, leaf) for leaf in self._leaves() if leaf.lock_ref == 0]
        heapq.heapify(heap)
        while len(freed) < num_tokens and heap:
            _, _, leaf = heapq.heappop(heap)
            parent = leaf.parent
            assert parent is not None
            del parent.children[self._child_key(leaf.key)]
            leaf.parent = None  # mark it detached: locking it later is an error
            freed.extend(leaf.value)
            self.evictable_size -= len(leaf.key)
            if parent is not self.root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(heap, (parent.last_access, parent.id, parent))
        ### END SOLUTION
        return freed

    # -- queries (given) ---------------------------------------------------------------------------
    @property
    def total_size(self) -> int:
        """Tokens in the tree, by the books."""
        return self.evictable_size + self.protected_size

    def nodes(self) -> Iterator[TreeNode]:
        """Every node but the root, parents before children, siblings in key order."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node is not self.root:
                yield node
            # child keys are ints (page size 1) or tuples of ints (pages): both sort as tuples
            order = sorted(node.children, key=lambda k: k if isinstance(k, tuple) else (k,), reverse=True)
            stack.extend(node.children[k] for k in order)

    def _leaves(self) -> Iterator[TreeNode]:
        """Every node without children (not the root), in no particular order."""
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            else:
                yield node

    def path_tokens(self, node: TreeNode) -> Tokens:
        """All tokens from the root down to the end of ``node``'s edge."""
        parts = []
        while node is not None and node is not self.root:
            parts.append(node.key)
            node = node.parent
        return tuple(t for part in reversed(parts) for t in part)

    def cached_sequences(self) -> set[Tokens]:
        """The token sequences that end at a leaf (every cached sequence is a prefix of one)."""
        return {self.path_tokens(leaf) for leaf in self._leaves()}

    def describe(self) -> list[tuple[int, list[int], list[int], int, float]]:
        """Plain data for the tree: ``(depth in tokens, key, slots, lock_ref, last_access)`` per
        node, parents first, siblings in key order (node ids are left out on purpose)."""
        out = []
        depth_of = {id(self.root): 0}
        for node in self.nodes():
            start = depth_of[id(node.parent)]
            depth_of[id(node)] = start + len(node.key)
            out.append((start, list(node.key), list(node.value), node.lock_ref, node.last_access))
        return out

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` naming the first broken invariant (see the class docstring)."""
        p = self.page_size
        assert self.root.parent is None and not self.root.key and self.root.lock_ref == 0, "root"
        evictable = protected = 0
        seen_slots: set[int] = set()
        stack = [self.root]
        while stack:
            node = stack.pop()
            locks_below = 0
            for k, child in node.children.items():
                assert child.parent is node, f"{child!r}: parent link is wrong"
                assert child.key and len(child.key) == len(child.value), f"{child!r}: key/value"
                assert len(child.key) % p == 0, f"{child!r}: edge is not whole pages"
                assert k == self._child_key(child.key), f"{child!r}: filed under the wrong key"
                assert child.lock_ref >= 0, f"{child!r}: negative lock_ref"
                assert node is self.root or node.last_access >= child.last_access, \
                    f"{child!r}: accessed later than its parent {node!r}"
                assert seen_slots.isdisjoint(child.value), f"{child!r}: a slot appears twice"
                seen_slots.update(child.value)
                if child.lock_ref > 0:
                    protected += len(child.key)
                else:
                    evictable += len(child.key)
                locks_below += child.lock_ref
                stack.append(child)
            assert node is self.root or node.lock_ref >= locks_below, \
                f"{node!r}: fewer locks than its children"
        assert (self.evictable_size, self.protected_size) == (evictable, protected), (
            f"books say evictable={self.evictable_size} protected={self.protected_size}, "
            f"tree has evictable={evictable} protected={protected}")



# -- given: eviction without a scan of the tree ----------------------------------------------------
class IncrementalEviction:
    """Mix in before a radix cache class (``class C(IncrementalEviction, RadixCache)``) to make
    ``evict`` cost O(log n) per dropped node instead of a scan of every leaf per call.

    ``RadixCache.evict`` collects every unlocked leaf into a heap on each call: fine when a
    scheduler evicts rarely and in bulk, but a scheduler that evicts only what each request lacks
    pays that scan per request, and it grows with the tree. Here the heap of candidates (unlocked
    leaves other than the root, keyed by ``(last_access, id)``) lives as long as the cache. It is
    kept up to date through ``super()`` by the methods that can make a candidate: ``insert`` (a
    new leaf, or a leaf touched again), ``match_prefix`` (a leaf touched again), ``dec_lock_ref``
    (a leaf unlocked) and ``evict`` itself (a parent that lost its last child). A node that stops
    being a candidate (locked, given a child, touched again, evicted) keeps its old entry: the entry
    is *stale*, is skipped when it reaches the top of the heap (lazy invalidation), and stale
    entries are dropped in one pass when the heap has doubled since the last such pass.

    Invariant: every candidate has an entry ``(node.last_access, node.id, node)``. An entry is
    valid exactly when its node is still a candidate with that access time, so the first valid
    entry popped is the candidate with the smallest ``(last_access, id)``: the node
    ``RadixCache.evict`` pops. Both therefore drop the same nodes, in the same order, and return
    the same slots.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._heap: list[tuple[float, int, TreeNode]] = []
        self._heap_limit = 64  # drop stale entries when the heap grows past this
        self._newest: TreeNode | None = None  # the node _new_node made last (see insert)

    def _is_candidate(self, node: TreeNode) -> bool:
        """An unlocked leaf still in the tree, other than the root."""
        return node.parent is not None and not node.children and node.lock_ref == 0

    def _offer(self, node: TreeNode) -> None:
        """Give ``node`` an entry if it is a candidate now (at most one node per operation is)."""
        if self._is_candidate(node):
            heapq.heappush(self._heap, (node.last_access, node.id, node))
            if len(self._heap) > self._heap_limit:
                self._drop_stale()

    def _drop_stale(self) -> None:
        """Keep one valid entry per candidate; O(heap), once per doubling, so O(1) per push."""
        live = {e[2].id: e for e in self._heap if self._is_candidate(e[2]) and e[2].last_access == e[0]}
        self._heap[:] = live.values()  # in place: evict holds the list
        heapq.heapify(self._heap)
        self._heap_limit = max(64, 2 * len(self._heap))

    def _new_node(self, key: Tokens, value: Tokens, parent: TreeNode, now: float) -> TreeNode:
        node = super()._new_node(key, value, parent, now)
        self._newest = node
        return node

    def match_prefix(self, tokens: Sequence[int]) -> PrefixMatch:
        match = super().match_prefix(tokens)
        self._offer(match.last_node)  # the path was touched; only its last node can be a leaf
        return match

    def insert(self, tokens: Sequence[int], slots: Sequence[int]) -> int:
        self._newest = None
        cached = super().insert(tokens, slots)
        node = self._newest
        if node is None or node.children:
            # No new leaf (the whole sequence was cached: the path may end at a leaf it touched),
            # or it was not made through _new_node: find where the inserted path ends.
            key = self._page_aligned(tokens)
            node, pos = self.root, 0
            while pos < len(key):
                child = node.children.get(self._child_key(key, pos))
                if child is None:
                    break
                node, pos = child, pos + len(child.key)
        self._offer(node)
        return cached

    def dec_lock_ref(self, node: TreeNode) -> int:
        moved = super().dec_lock_ref(node)
        self._offer(node)  # its ancestors all have a child: only `node` can be a leaf
        return moved

    def evict(self, num_tokens: int) -> list[int]:
        """Same contract and result as ``RadixCache.evict``, without looking at the whole tree."""
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        freed: list[int] = []
        heap = self._heap
        while heap and len(freed) < num_tokens:
            last_access, _, leaf = heapq.heappop(heap)
            if not self._is_candidate(leaf) or leaf.last_access != last_access:
                continue  # a stale entry
            parent = leaf.parent
            del parent.children[self._child_key(leaf.key)]
            leaf.parent = None
            freed.extend(leaf.value)
            self.evictable_size -= len(leaf.key)
            self._offer(parent)  # it may have become a leaf (never the root: it has no parent)
        return freed

    def check_invariants(self) -> None:
        """The tree's invariants, and: every candidate has a valid entry in the heap."""
        super().check_invariants()
        valid = {e[2].id for e in self._heap if e[2].last_access == e[0]}
        for leaf in self._leaves():
            assert leaf.lock_ref > 0 or leaf.id in valid, f"{leaf!r}: an eviction candidate without a heap entry"


class IncrementalRadixCache(IncrementalEviction, RadixCache):
    """:class:`RadixCache` with :class:`IncrementalEviction`: what a scheduler that evicts only each
    request's shortfall should use (``benchmarks/bench_radix.py`` measures both)."""

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

from autograder.i18n import tr
from workbook.radix_node import PrefixMatch, Tokens, TreeNode


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

    [zh]
    以基数树（radix tree）存放的前缀缓存，缓存的对象是 token 序列。

    不变量（由 :meth:`check_invariants` 检查）：
    - 每条缓存的 token 序列在树里只存一份：兄弟节点的第一个 token 互不相同（``page_size > 1``
      时是第一页互不相同），每条边的长度都是 ``page_size`` 的整数倍；
    - ``evictable_size + protected_size == 树中 token 总数``，其中 ``protected_size`` 统计
      ``lock_ref > 0`` 的节点上的 token，``evictable_size`` 统计其余的 token；
    - 树中每个槽位（slot）编号只出现一次；
    - 加了锁的节点（因而它到根的整条路径）永远不会被淘汰。

    ``clock`` 提供访问时间，不能倒退；默认是一个逻辑计数器，每次 ``match_prefix`` 或 ``insert``
    加一，所以每次运行的结果都相同。各方法先校验参数，再修改状态。
    """

    def __init__(self, page_size: int = 1, *, clock: Callable[[], float] | None = None) -> None:
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(tr(f"page_size must be a positive int, got {page_size!r}",
                                f"page_size 必须是正整数，实际是 {page_size!r}"))
        self.page_size = page_size
        self._clock: Callable[[], float] = clock if clock is not None else itertools.count(1).__next__
        self._ids = itertools.count(1)
        self.root = TreeNode(0, (), (), None)
        self.evictable_size = 0
        self.protected_size = 0

    # -- small helpers (given) -------------------------------------------------------------------
    # zh: -- 小工具（已给出） -------------------------------------------------------------------
    def _page_aligned(self, tokens: Sequence[int]) -> Tokens:
        """``tokens`` as a tuple, cut down to whole pages (the partial last page is never cached).

        [zh]
        把 ``tokens`` 转成元组，并截到整页（最后不满一页的部分从不缓存）。
        """
        key = tuple(tokens)
        return key[: len(key) - len(key) % self.page_size]

    def _child_key(self, key: Tokens, pos: int = 0) -> object:
        """The dict key under which an edge starting at ``key[pos]`` hangs from its parent: the
        first token, or the first whole page when ``page_size > 1``.

        [zh]
        一条从 ``key[pos]`` 开始的边挂在父节点下时所用的字典键：第一个 token；``page_size > 1``
        时是第一整页。
        """
        if self.page_size == 1:
            return key[pos]
        return key[pos: pos + self.page_size]

    def _common_len(self, edge: Tokens, key: Tokens, pos: int) -> int:
        """How many leading tokens of ``edge`` equal ``key[pos:]``, rounded down to whole pages.

        [zh]
        ``edge`` 开头有多少个 token 与 ``key[pos:]`` 逐个相等，向下取整到整页。
        """
        n = len(edge)
        # The common case, compared in C: the whole edge matches.
        # zh: 最常见的情况（在 C 里比较）：整条边都匹配。
        if key[pos: pos + n] == edge:
            return n
        limit = min(n, len(key) - pos)
        i = 0
        while i < limit and edge[i] == key[pos + i]:
            i += 1
        return i - i % self.page_size

    def _new_node(self, key: Tokens, value: Tokens, parent: TreeNode, now: float) -> TreeNode:
        """A fresh unlocked node; the caller hangs it under ``parent`` and accounts its tokens.

        [zh]
        一个新建的、未加锁的节点；由调用者把它挂到 ``parent`` 下，并把它的 token 记进账里。
        """
        return TreeNode(next(self._ids), key, value, parent, now)

    # -- TODOs -------------------------------------------------------------------------------------
    def _split_node(self, child: TreeNode, split_len: int) -> TreeNode:
        """Split ``child``'s edge after ``split_len`` tokens; return the new node that holds the
        first ``split_len`` tokens and now sits between ``child`` and its old parent.

        Sizes do not change: the same tokens are in the tree, under the same locks.

        [zh]
        在 ``child`` 的边的第 ``split_len`` 个 token 之后把边切开；返回新节点：它持有前
        ``split_len`` 个 token，位于 ``child`` 和它原来的父节点之间。

        两个计数都不变：树里还是同样的 token，受同样的锁保护。
        """
        if child is self.root or not 0 < split_len < len(child.key) or split_len % self.page_size:
            raise ValueError(tr(f"cannot split a {len(child.key)}-token edge at {split_len}",
                                f"无法在位置 {split_len} 切分一条 {len(child.key)} 个 token 的边"))
        # TODO 1 (s05._split_node)
        ### BEGIN SOLUTION
        parent = child.parent
        assert parent is not None
        new = self._new_node(child.key[:split_len], child.value[:split_len], parent, child.last_access)
        # The same locks still cover these tokens.
        # zh: 这些 token 仍然受原来那些锁的保护。
        new.lock_ref = child.lock_ref
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

        [zh]
        ``tokens`` 已缓存的最长前缀（只算整页），以及这段前缀结束处的节点。

        匹配若停在某条边的中间，就把这条边切开，使 ``last_node`` 恰好覆盖匹配上的 token
        （给它加锁不会多锁任何东西）。匹配路径上的每个节点都记下当前访问时间。不足一页的
        tokens 什么也匹配不上，也不改变任何东西。
        """
        key = self._page_aligned(tokens)
        node = self.root
        slots: list[int] = []
        if not key:
            return PrefixMatch(slots, node)
        now = self._clock()
        # TODO 2 (s05.match_prefix)
        ### BEGIN SOLUTION
        pos = 0
        while pos < len(key):
            child = node.children.get(self._child_key(key, pos))
            if child is None:
                break
            matched = self._common_len(child.key, key, pos)
            if matched < len(child.key):
                # Make the match boundary a node.
                # zh: 让匹配的边界成为一个节点。
                child = self._split_node(child, matched)
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

        [zh]
        把 ``tokens``（整页部分）连同它们的 KV 槽位 ``slots`` 放进缓存；返回开头有多少个 token
        原本就已缓存。

        对开头这些 token，树保留它自己的槽位：调用者在相同位置上的槽位是重复的，凡不是从匹配
        得来的，由调用者自己释放。最后不满一页的部分同样不缓存，它的槽位仍归调用者。
        """
        if len(slots) != len(tokens):
            raise ValueError(tr(f"{len(tokens)} tokens but {len(slots)} slots",
                                f"{len(tokens)} 个 token，却有 {len(slots)} 个槽位"))
        key = self._page_aligned(tokens)
        value = tuple(slots[: len(key)])
        node = self.root
        pos = 0
        if not key:
            return 0
        now = self._clock()
        # TODO 3 (s05.insert)
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

        [zh]
        给从 ``node`` 到根的整条路径加锁（一个正在运行的请求要用这些 KV）。

        返回有多少个 token 从可淘汰变成了受保护。
        """
        if node is not self.root and node.parent is None:
            raise ValueError(tr(f"{node!r} is not in the tree (evicted?)", f"{node!r} 不在树里（已被淘汰？）"))
        moved = 0
        # TODO 4 (s05.inc_lock_ref)
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

        [zh]
        释放之前用 :meth:`inc_lock_ref` 在同一个节点上加的一把锁。

        返回有多少个 token 从受保护变回了可淘汰。
        """
        if node is not self.root and (node.parent is None or node.lock_ref <= 0):
            # Ancestors hold at least node's locks, so checking node is enough.
            # zh: 祖先节点的锁数至少等于 node 的锁数，所以只检查 node 就够了。
            raise ValueError(tr(f"{node!r} is not locked", f"{node!r} 没有被锁定"))
        moved = 0
        # TODO 5 (s05.dec_lock_ref)
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

        [zh]
        至少淘汰 ``num_tokens`` 个 token（可淘汰的不够时才少于这个数），最近最少使用的未加锁
        叶子节点先走；按淘汰顺序返回释放出的槽位。

        节点整个淘汰。父节点失去最后一个子节点后就成了叶子节点，也成为候选。加锁的节点永远
        不会被淘汰。
        """
        if num_tokens < 0:
            raise ValueError(tr(f"num_tokens must be >= 0, got {num_tokens}", f"num_tokens 必须 >= 0，实际是 {num_tokens}"))
        freed: list[int] = []
        # TODO 6 (s05.evict)
        ### BEGIN SOLUTION
        heap = [(leaf.last_access, leaf.id, leaf) for leaf in self._leaves() if leaf.lock_ref == 0]
        heapq.heapify(heap)
        while len(freed) < num_tokens and heap:
            _, _, leaf = heapq.heappop(heap)
            parent = leaf.parent
            assert parent is not None
            del parent.children[self._child_key(leaf.key)]
            # Mark it detached: locking it later is an error.
            # zh: 标记为已摘除：之后再给它加锁就是错误。
            leaf.parent = None
            freed.extend(leaf.value)
            self.evictable_size -= len(leaf.key)
            if parent is not self.root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(heap, (parent.last_access, parent.id, parent))
        ### END SOLUTION
        return freed

    # -- queries (given) ---------------------------------------------------------------------------
    # zh: -- 查询（已给出） ---------------------------------------------------------------------------
    @property
    def total_size(self) -> int:
        """Tokens in the tree, by the books.

        [zh]
        按账面计算的树中 token 总数。
        """
        return self.evictable_size + self.protected_size

    def nodes(self) -> Iterator[TreeNode]:
        """Every node but the root, parents before children, siblings in key order.

        [zh]
        除根以外的所有节点：父节点在子节点之前，兄弟节点按键排序。
        """
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node is not self.root:
                yield node
            # Child keys are ints (page size 1) or tuples of ints (pages): both sort as tuples.
            # zh: 子节点的键是 int（页大小为 1）或 int 元组（按页）：统一当作元组排序。
            order = sorted(node.children, key=lambda k: k if isinstance(k, tuple) else (k,), reverse=True)
            stack.extend(node.children[k] for k in order)

    def _leaves(self) -> Iterator[TreeNode]:
        """Every node without children (not the root), in no particular order.

        [zh]
        所有没有子节点的节点（不含根），顺序不定。
        """
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            else:
                yield node

    def path_tokens(self, node: TreeNode) -> Tokens:
        """All tokens from the root down to the end of ``node``'s edge.

        [zh]
        从根一直到 ``node`` 这条边末尾的全部 token。
        """
        parts = []
        while node is not None and node is not self.root:
            parts.append(node.key)
            node = node.parent
        return tuple(t for part in reversed(parts) for t in part)

    def cached_sequences(self) -> set[Tokens]:
        """The token sequences that end at a leaf (every cached sequence is a prefix of one).

        [zh]
        以叶子节点结尾的 token 序列（每条缓存的序列都是其中某一条的前缀）。
        """
        return {self.path_tokens(leaf) for leaf in self._leaves()}

    def describe(self) -> list[tuple[int, list[int], list[int], int, float]]:
        """Plain data for the tree: ``(depth in tokens, key, slots, lock_ref, last_access)`` per
        node, parents first, siblings in key order (node ids are left out on purpose).

        [zh]
        用普通数据描述整棵树：每个节点一个 ``(起始深度（按 token 计）, key, slots, lock_ref,
        last_access)``，父节点在前，兄弟节点按键排序（故意不含节点 id）。
        """
        out = []
        depth_of = {id(self.root): 0}
        for node in self.nodes():
            start = depth_of[id(node.parent)]
            depth_of[id(node)] = start + len(node.key)
            out.append((start, list(node.key), list(node.value), node.lock_ref, node.last_access))
        return out

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` naming the first broken invariant (see the class docstring).

        [zh]
        发现第一个被破坏的不变量时抛出 ``AssertionError`` 并说明是哪一个（见类的文档字符串）。
        """
        p = self.page_size
        assert self.root.parent is None and not self.root.key and self.root.lock_ref == 0, tr("root", "根节点")
        evictable = protected = 0
        seen_slots: set[int] = set()
        stack = [self.root]
        while stack:
            node = stack.pop()
            locks_below = 0
            for k, child in node.children.items():
                assert child.parent is node, tr(f"{child!r}: parent link is wrong", f"{child!r}：父节点链接不对")
                assert child.key and len(child.key) == len(child.value), tr(f"{child!r}: key/value", f"{child!r}：key 与 value 不一致")
                assert len(child.key) % p == 0, tr(f"{child!r}: edge is not whole pages", f"{child!r}：边的长度不是整页")
                assert k == self._child_key(child.key), tr(f"{child!r}: filed under the wrong key", f"{child!r}：登记在错误的 key 下")
                assert child.lock_ref >= 0, tr(f"{child!r}: negative lock_ref", f"{child!r}：lock_ref 为负")
                assert node is self.root or node.last_access >= child.last_access, \
                    tr(f"{child!r}: accessed later than its parent {node!r}",
                       f"{child!r}：访问时间比父节点 {node!r} 还晚")
                assert seen_slots.isdisjoint(child.value), tr(f"{child!r}: a slot appears twice", f"{child!r}：有槽位出现了两次")
                seen_slots.update(child.value)
                if child.lock_ref > 0:
                    protected += len(child.key)
                else:
                    evictable += len(child.key)
                locks_below += child.lock_ref
                stack.append(child)
            assert node is self.root or node.lock_ref >= locks_below, \
                tr(f"{node!r}: fewer locks than its children", f"{node!r}：锁数比子节点的锁数之和还少")
        assert (self.evictable_size, self.protected_size) == (evictable, protected), (
            tr(f"books say evictable={self.evictable_size} protected={self.protected_size}, "
               f"tree has evictable={evictable} protected={protected}",
               f"账上记的是 evictable={self.evictable_size} protected={self.protected_size}，"
               f"树里实际是 evictable={evictable} protected={protected}"))


def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 7 (s05.quiz)
    ### BEGIN SOLUTION
    return {"q1": "B", "q2": "B", "q3": 32, "q4": "A", "q5": 64, "q6": "C"}
    ### END SOLUTION


# -- given: eviction without a scan of the tree ----------------------------------------------------
# zh: -- 给定代码：不扫描整棵树的淘汰 ---------------------------------------------------------------
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

    [zh]
    混入到基数树缓存类的前面（``class C(IncrementalEviction, RadixCache)``），让 ``evict``
    每淘汰一个节点只花 O(log n)，而不是每次调用都扫描所有叶子节点。

    ``RadixCache.evict`` 每次调用都把所有未加锁的叶子节点收进一个堆：调度器偶尔成批淘汰时
    没问题；但如果调度器每个请求只淘汰自己缺的那一点，每个请求都要付一次扫描的代价，而且树
    越大越贵。这里候选者（除根以外、未加锁的叶子节点，按 ``(last_access, id)`` 排序）的堆与
    缓存同寿命。凡是可能产生候选者的方法都通过 ``super()`` 维护它：``insert``（新叶子，或再次
    被访问的叶子）、``match_prefix``（再次被访问的叶子）、``dec_lock_ref``（被解锁的叶子），
    以及 ``evict`` 自己（失去最后一个子节点的父节点）。不再是候选者的节点（被加锁、有了子节点、
    被再次访问、被淘汰）留着旧条目：这个条目*过期*了，到堆顶时直接跳过（惰性失效）；堆的大小
    比上次清理时翻倍后，一次性清掉所有过期条目。

    不变量：每个候选者都有一个条目 ``(node.last_access, node.id, node)``。条目有效当且仅当它的
    节点仍是候选者且访问时间没变，所以弹出的第一个有效条目就是 ``(last_access, id)`` 最小的
    候选者，也就是 ``RadixCache.evict`` 会弹出的那个节点。因此两者淘汰相同的节点、顺序相同、
    返回的槽位也相同。
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._heap: list[tuple[float, int, TreeNode]] = []
        # Drop stale entries when the heap grows past this.
        # zh: 堆超过这个大小时清理过期条目。
        self._heap_limit = 64
        # The node _new_node made last (see insert).
        # zh: _new_node 最近创建的节点（见 insert）。
        self._newest: TreeNode | None = None

    def _is_candidate(self, node: TreeNode) -> bool:
        """An unlocked leaf still in the tree, other than the root.

        [zh]
        仍在树中、未加锁、不是根的叶子节点。
        """
        return node.parent is not None and not node.children and node.lock_ref == 0

    def _offer(self, node: TreeNode) -> None:
        """Give ``node`` an entry if it is a candidate now (at most one node per operation is).

        [zh]
        如果 ``node`` 现在是候选者，就给它一个条目（每次操作最多只有一个节点会成为候选者）。
        """
        if self._is_candidate(node):
            heapq.heappush(self._heap, (node.last_access, node.id, node))
            if len(self._heap) > self._heap_limit:
                self._drop_stale()

    def _drop_stale(self) -> None:
        """Keep one valid entry per candidate; O(heap), once per doubling, so O(1) per push.

        [zh]
        每个候选者只保留一个有效条目；代价 O(堆大小)，每翻倍一次才做一次，摊到每次 push 是 O(1)。
        """
        live = {e[2].id: e for e in self._heap if self._is_candidate(e[2]) and e[2].last_access == e[0]}
        # In place: evict holds the list.
        # zh: 原地修改：evict 手里拿着这个列表。
        self._heap[:] = live.values()
        heapq.heapify(self._heap)
        self._heap_limit = max(64, 2 * len(self._heap))

    def _new_node(self, key: Tokens, value: Tokens, parent: TreeNode, now: float) -> TreeNode:
        node = super()._new_node(key, value, parent, now)
        self._newest = node
        return node

    def match_prefix(self, tokens: Sequence[int]) -> PrefixMatch:
        match = super().match_prefix(tokens)
        # The path was touched; only its last node can be a leaf.
        # zh: 整条路径都被访问过；其中只有最后一个节点可能是叶子。
        self._offer(match.last_node)
        return match

    def insert(self, tokens: Sequence[int], slots: Sequence[int]) -> int:
        self._newest = None
        cached = super().insert(tokens, slots)
        node = self._newest
        if node is None or node.children:
            # No new leaf (the whole sequence was cached: the path may end at a leaf it touched),
            # or it was not made through _new_node: find where the inserted path ends.
            # zh: 没有新叶子（整条序列都已缓存：路径可能停在一个被再次访问的叶子上），
            # zh: 或者新叶子不是用 _new_node 建的：找出插入路径的终点。
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
        # Its ancestors all have a child: only `node` can be a leaf.
        # zh: 它的祖先都有子节点：只有 `node` 可能是叶子。
        self._offer(node)
        return moved

    def evict(self, num_tokens: int) -> list[int]:
        """Same contract and result as ``RadixCache.evict``, without looking at the whole tree.

        [zh]
        与 ``RadixCache.evict`` 的约定和结果完全相同，只是不必查看整棵树。
        """
        if num_tokens < 0:
            raise ValueError(tr(f"num_tokens must be >= 0, got {num_tokens}", f"num_tokens 必须 >= 0，实际是 {num_tokens}"))
        freed: list[int] = []
        heap = self._heap
        while heap and len(freed) < num_tokens:
            last_access, _, leaf = heapq.heappop(heap)
            if not self._is_candidate(leaf) or leaf.last_access != last_access:
                # A stale entry.
                # zh: 过期条目。
                continue
            parent = leaf.parent
            del parent.children[self._child_key(leaf.key)]
            leaf.parent = None
            freed.extend(leaf.value)
            self.evictable_size -= len(leaf.key)
            # It may have become a leaf (never the root: the root has no parent).
            # zh: 父节点可能成了叶子（不会是根：根没有父节点，_is_candidate 会排除它）。
            self._offer(parent)
        return freed

    def check_invariants(self) -> None:
        """The tree's invariants, and: every candidate has a valid entry in the heap.

        [zh]
        树本身的不变量，外加：每个候选者在堆里都有一个有效条目。
        """
        super().check_invariants()
        valid = {e[2].id for e in self._heap if e[2].last_access == e[0]}
        for leaf in self._leaves():
            assert leaf.lock_ref > 0 or leaf.id in valid, tr(f"{leaf!r}: an eviction candidate without a heap entry",
                                                               f"{leaf!r}：是淘汰候选，却不在堆里")


class IncrementalRadixCache(IncrementalEviction, RadixCache):
    """:class:`RadixCache` with :class:`IncrementalEviction`: what a scheduler that evicts only each
    request's shortfall should use (``benchmarks/bench_radix.py`` measures both).

    [zh]
    带 :class:`IncrementalEviction` 的 :class:`RadixCache`：调度器如果每个请求只淘汰自己缺的部分，
    就应该用它（``benchmarks/bench_radix.py`` 对两者都做了测量）。
    """

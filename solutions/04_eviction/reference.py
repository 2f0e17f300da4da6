"""Stage 4 reference: eviction -- which cached block to forget when the pool runs out.

Stage 3's :class:`~solutions.s03_block_pool.BlockPool` keeps freed blocks cached in a free queue
and overwrites them when it needs room. This stage decides *which* free block goes first:

* :class:`LRUFreeQueue` -- the least recently used block first, with O(1) ``append``, ``popleft``
  and ``remove`` from the middle: a doubly linked list threaded through the blocks' own
  ``prev_free``/``next_free`` slots, as production engines do. Blocks without a key (nothing
  cached in them) are handed out before any cached block.
* :class:`EvictionPool` -- stage 3's pool with that queue, a tail-first release order (keeps the
  cache *prefix-closed*: a prompt's last block is evicted before its prefix), and two policies
  that protect blocks by **holding a reference** on them, so that the pool's own rule "only
  ``ref_count == 0`` blocks are evicted" does the protecting:
  - *pinning*: hot prefixes whose blocks are never evicted, at most ``max_pinned`` of them so that
    pins cannot starve the pool;
  - *minimum residence*: a newly computed block is not evicted before ``min_residence`` seconds
    (of an injectable clock) have passed.
* :func:`simulate` -- replay a trace (pre-hashed block ids in Mooncake's format, see
  :mod:`workbook.traces`) through :class:`EvictionPool` and measure hit rates; :func:`belady` is
  the offline optimum (evict the block needed farthest in the future) that bounds every policy.
  Both are given code from :mod:`workbook.cache_sim`.

Held references are recorded as pseudo-requests whose ids start with ``#`` (``#pinned``,
``#young:<n>``), so stage 3's invariant "``ref_count`` = number of live block tables holding the
block" and its ``violations()`` check still hold.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from autograder.i18n import tr
from workbook.block_hash import ROOT_SEED
from workbook.block_pool import Admission, Block, BlockPool, PoolFullError, RequestState
from workbook.cache_sim import LRU, Policy, SimResult, belady, prehashed
from workbook.cache_sim import simulate as simulate_with
from workbook.traces import TraceRequest

__all__ = [
    "LRUFreeQueue",
    "EvictionPool",
    "PrehashedPool",
    "PIN_ID",
    "Policy",
    "LRU",
    "SimResult",
    "simulate",
    "belady",
    "PoolFullError",
    "quiz",
]


class LRUFreeQueue:
    """Free blocks in eviction order: keyless blocks first, then cached ones, least recent first.

    One doubly linked list, threaded through ``Block.prev_free``/``Block.next_free``, with three
    sentinel blocks (id -1, in no pool)::

        head <-> [keyless blocks, oldest first] <-> mid <-> [cached blocks, LRU ... MRU] <-> tail

    Invariants:
    - a block is in the queue exactly when its ``prev_free`` is not ``None`` (then ``next_free``
      is not ``None`` either); a block outside the queue has both slots ``None``;
    - every block in the queue had ``ref_count == 0`` when it was appended; the pool removes a
      block (``remove``) before its count goes up again;
    - ``len(self)`` is the number of blocks in the queue; ``append``, ``popleft`` and ``remove``
      are O(1): no operation walks the list.
    ``popleft`` hands out the block after ``head`` (skipping ``mid``): a block without a key (it
    holds nothing reusable, e.g. a partial tail) before any cached one, and among cached blocks
    the one freed longest ago.

    [zh]
    按淘汰顺序排好的空闲块：先是没有 key 的块，再是缓存着内容的块，后者按最近最少使用（LRU）排列。

    这是一条双向链表，直接穿过每个块自己的 ``Block.prev_free``/``Block.next_free`` 两个字段，
    另有三个哨兵块（id 为 -1，不属于任何块池）::

        head <-> [没有 key 的块，先来的在前] <-> mid <-> [缓存块，LRU ... MRU] <-> tail

    不变量：
    - 块在队列里，当且仅当它的 ``prev_free`` 不是 ``None``（此时 ``next_free`` 也不是 ``None``）；
      不在队列里的块，两个字段都是 ``None``；
    - 队列里的每个块在入队时引用计数都是 0；块池在让它的引用计数重新变大之前，会先把它移出队列（``remove``）；
    - ``len(self)`` 等于队列里块的个数；``append``、``popleft``、``remove`` 都是 O(1)，
      没有任何操作会遍历链表。
    ``popleft`` 交出 ``head`` 后面的那个块（跳过 ``mid``）：没有 key 的块（里面没有可复用的内容，
    比如未满的尾块）先于任何缓存块交出；缓存块之间，空闲最久的先交出。
    """

    def __init__(self) -> None:
        # Sentinels are blocks that no pool owns (id -1): every real block then has a neighbour
        # on both sides, so linking and unlinking never test for the ends of the list.
        # zh: 哨兵是不属于任何块池的块（id 为 -1）：这样每个真实的块两边都有邻居，
        # zh: 插入和摘除时就不必判断是不是到了链表的两端。
        self._head, self._mid, self._tail = Block(-1), Block(-1), Block(-1)
        self._head.next_free, self._mid.prev_free = self._mid, self._head
        self._mid.next_free, self._tail.prev_free = self._tail, self._mid
        self._len = 0

    # -- given helpers ----------------------------------------------------------------------------
    # zh: -- 给定的辅助方法 ---------------------------------------------------------------------------
    @staticmethod
    def _link_before(node: Block, block: Block) -> None:
        """Insert ``block`` just before ``node`` (O(1)).

        [zh]
        把 ``block`` 插到 ``node`` 的正前方（O(1)）。
        """
        prev = node.prev_free
        block.prev_free, block.next_free = prev, node
        prev.next_free = block  # type: ignore[union-attr]
        node.prev_free = block

    @staticmethod
    def _unlink(block: Block) -> None:
        """Take ``block`` out of the list and clear its slots (O(1)).

        [zh]
        把 ``block`` 从链表中摘下，并清空它的两个链接字段（O(1)）。
        """
        prev, nxt = block.prev_free, block.next_free
        prev.next_free = nxt  # type: ignore[union-attr]
        nxt.prev_free = prev  # type: ignore[union-attr]
        block.prev_free = block.next_free = None

    def __len__(self) -> int:
        return self._len

    def __contains__(self, block: object) -> bool:
        return isinstance(block, Block) and block.prev_free is not None

    # -- TODOs ------------------------------------------------------------------------------------
    def append(self, block: Block) -> None:
        """``block`` just became free: it is now the *most* recently used free block.

        A block with a key goes to the cached end (just before ``tail``); a block without a key
        goes to the end of the keyless run (just before ``mid``), so it is reused before any
        cached block. Raises ``ValueError`` for a block already in a queue or still referenced.

        [zh]
        ``block`` 刚刚变成空闲：它现在是*最近*使用过的空闲块。

        有 key 的块放到缓存段的末尾（``tail`` 正前方）；没有 key 的块放到无 key 段的末尾
        （``mid`` 正前方），这样它会先于任何缓存块被复用。块已经在某个队列里、或者仍被引用时，
        抛出 ``ValueError``。
        """
        if block.prev_free is not None or block.next_free is not None:
            raise ValueError(tr(f"block {block.block_id} is already in a free queue (double free)",
                                f"块 {block.block_id} 已经在某个空闲队列里了（重复释放）"))
        if block.ref_count != 0:
            raise ValueError(tr(f"block {block.block_id} is still in use (ref_count {block.ref_count})",
                                f"块 {block.block_id} 还在使用中（ref_count {block.ref_count}）"))
        # TODO 1 (s04.append)
        ### BEGIN SOLUTION
        self._link_before(self._mid if block.key is None else self._tail, block)
        self._len += 1
        ### END SOLUTION

    def popleft(self) -> Block:
        """Take out and return the next block to reuse: the first keyless block if there is one,
        else the least recently used cached block. ``IndexError`` when the queue is empty.

        [zh]
        取出并返回下一个要复用的块：有无 key 的块就取第一个，否则取最近最少使用的缓存块。
        队列为空时抛出 ``IndexError``。
        """
        if self._len == 0:
            raise IndexError(tr("popleft from an empty free queue", "空闲队列是空的，无法 popleft"))
        # TODO 2 (s04.popleft)
        ### BEGIN SOLUTION
        block = self._head.next_free
        if block is self._mid:
            block = self._mid.next_free
        self._unlink(block)  # type: ignore[arg-type]
        self._len -= 1
        return block  # type: ignore[return-value]
        ### END SOLUTION

    def remove(self, block: Block) -> None:
        """A free cached block got a hit: take it out of the queue in O(1), wherever it is.

        ``ValueError`` if it is not in the queue (validate before touching any link).

        [zh]
        一个空闲的缓存块被命中了：不管它在队列的哪个位置，都要在 O(1) 时间内把它移出队列。

        它不在队列里时抛出 ``ValueError``（先校验，再动链接）。
        """
        # TODO 3 (s04.remove)
        ### BEGIN SOLUTION
        if block.prev_free is None:
            raise ValueError(f"block {block.block_id} is not in the free queue")
        self._unlink(block)
        self._len -= 1
        ### END SOLUTION

    # -- given: iteration (after the TODOs) ------------------------------------------------------
    # zh: -- 给定的代码：遍历（写在 TODO 之后） ---------------------------------------------------------
    def __iter__(self) -> Iterator[Block]:
        """The blocks in the order ``popleft`` would hand them out (a snapshot).

        [zh]
        按 ``popleft`` 交出的顺序列出所有块（一份快照）。
        """
        out: list[Block] = []
        node = self._head.next_free
        while node is not self._tail:
            if node is not self._mid:
                out.append(node)  # type: ignore[arg-type]
            node = node.next_free  # type: ignore[union-attr]
        return iter(out)


class EvictionPool(BlockPool):
    """Stage 3's :class:`BlockPool` with LRU eviction, pinning and a minimum residence time.

    Invariants (on top of :class:`BlockPool`'s, which :meth:`violations` still checks):
    - only blocks with ``ref_count == 0`` are in the free queue, so only they can be evicted;
    - a pinned block holds one extra reference (pseudo-request :attr:`PIN_ID`): it is never
      evicted; at most ``max_pinned`` blocks are pinned, and ``max_pinned < num_blocks``;
    - a block that a request computed and registered at clock time ``t`` holds one extra
      reference (pseudo-request ``#young:<n>``) until ``clock() - t >= min_residence``;
      :meth:`expire` drops it, and :meth:`admit` calls :meth:`expire` first;
    - a finished request frees its blocks tail first (:meth:`release_blocks`), so with LRU a
      prompt's last block is evicted before its prefix and the cache stays prefix-closed.
    Request ids starting with ``#`` are reserved for held references.

    [zh]
    第 3 阶段的 :class:`BlockPool`，加上 LRU 淘汰、固定（pinning）和最短驻留时间。

    不变量（在 :class:`BlockPool` 的不变量之上，:meth:`violations` 仍会逐条检查）：
    - 只有引用计数为 0 的块在空闲队列里，所以只有它们可能被淘汰；
    - 被固定的块多持有一个引用（伪请求 :attr:`PIN_ID`），永远不会被淘汰；
      最多固定 ``max_pinned`` 个块，并且 ``max_pinned < num_blocks``；
    - 请求在时刻 ``t`` 算出并登记的块，会多持有一个引用（伪请求 ``#young:<n>``），
      直到 ``clock() - t >= min_residence``；由 :meth:`expire` 释放这个引用，
      :meth:`admit` 一开始就会调用 :meth:`expire`；
    - 请求结束时从尾部开始释放它的块（:meth:`release_blocks`），于是在 LRU 下，
      提示词的最后一块先于它的前缀被淘汰，缓存始终保持“前缀封闭”。
    以 ``#`` 开头的请求 id 留给这些额外持有的引用使用。
    """

    #: Pseudo-request that holds one reference on every pinned block.
    # zh: 伪请求：为每个被固定的块持有一个引用。
    PIN_ID = "#pinned"
    #: Prefix of the pseudo-requests that hold newly computed blocks for ``min_residence``.
    # zh: 伪请求 id 的前缀：这些伪请求在 ``min_residence`` 时间内持有新算出的块。
    YOUNG_PREFIX = "#young:"

    def __init__(
        self,
        num_blocks: int,
        block_size: int,
        *,
        max_pinned: int = 0,
        min_residence: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        root_seed: bytes = ROOT_SEED,
    ) -> None:
        # Explicit base calls (not super()): the grader rebuilds this class around a learner's method.
        # zh: 显式调用基类（不用 super()）：评分器会围绕学习者写的方法重新组装这个类。
        BlockPool.__init__(self, num_blocks, block_size, free_queue=LRUFreeQueue(), root_seed=root_seed)
        if not isinstance(max_pinned, int) or not 0 <= max_pinned < num_blocks:
            raise ValueError(tr(f"max_pinned must be an int in 0..num_blocks-1, got {max_pinned!r}",
                                f"max_pinned 必须是 0..num_blocks-1 之间的整数，实际是 {max_pinned!r}"))
        if not min_residence >= 0:
            raise ValueError(tr(f"min_residence must be >= 0, got {min_residence!r}",
                                f"min_residence 必须 >= 0，实际是 {min_residence!r}"))
        self.max_pinned = max_pinned
        self.min_residence = float(min_residence)
        self.clock = clock
        self.requests[self.PIN_ID] = RequestState([], [], 0, committed=True)
        # Pinned block ids (a set: O(1) membership); residence holds as (registered at, holder id),
        # oldest first.
        # zh: 被固定的块 id（用集合，判断是否固定是 O(1)）；驻留持有记为 (登记时刻, 持有者 id)，早登记的在前。
        self._pinned: set[int] = set()
        self._young: deque[tuple[float, str]] = deque()
        self._young_seq = 0

    # -- queries ----------------------------------------------------------------------------------
    # zh: -- 查询 ----------------------------------------------------------------------------------
    @property
    def num_pinned(self) -> int:
        return len(self._pinned)

    def is_pinned(self, block: Block) -> bool:
        return block.block_id in self._pinned

    def is_cached(self, key: bytes) -> bool:
        return key in self.cached

    # -- request life cycle -----------------------------------------------------------------------
    # zh: -- 请求的生命周期 ---------------------------------------------------------------------------
    def admit(
        self,
        request_id: str,
        tokens: Sequence[int],
        extra_keys: Sequence[tuple[str, str]] | None = None,
        *,
        keys: Sequence[bytes] | None = None,
    ) -> Admission:
        """Stage 3's ``admit`` (``keys``: a lookup's keys, see there), after expiring residence
        holds whose time has come.

        Expiring first is not a mutation of this request's state: it only lets time pass. If the
        request is then refused (``PoolFullError``), the expired holds stay expired.

        [zh]
        先让到期的驻留持有结束，再执行第 3 阶段的 ``admit``（``keys`` 是查找时算好的 key，见那里）。

        先做 expire 并不改变这个请求的状态，只是让时间向前走。即使随后这个请求被拒绝
        （``PoolFullError``），已经到期的持有也保持到期。
        """
        if isinstance(request_id, str) and request_id.startswith("#"):
            raise ValueError(tr(f"request ids starting with '#' are reserved, got {request_id!r}",
                                f"以 '#' 开头的请求 id 是保留的，实际是 {request_id!r}"))
        self.expire()
        return BlockPool.admit(self, request_id, tokens, extra_keys, keys=keys)

    def commit(self, request_id: str) -> None:
        """Stage 3's ``commit``; with a minimum residence, also hold the newly registered blocks.

        [zh]
        第 3 阶段的 ``commit``；设置了最短驻留时间时，还要额外持有这次新登记的块。
        """
        state = self.requests[request_id]
        BlockPool.commit(self, request_id)
        if self.min_residence <= 0:
            return
        # The blocks registered just now: a duplicate of a block another request registered first
        # kept no key. All of them are in use by this request, so none is in the free queue.
        # zh: 刚刚登记的块（和别的请求先登记的内容重复的块没有 key）。它们都被这个请求占用着，
        # zh: 所以都不在空闲队列里。
        fresh = [
            state.blocks[i]
            for i in range(state.hit_blocks, len(state.keys))
            if state.blocks[i].key == state.keys[i]
        ]
        if fresh:
            self._young_seq += 1
            holder = f"{self.YOUNG_PREFIX}{self._young_seq}"
            for block in fresh:
                block.ref_count += 1
            self.requests[holder] = RequestState(fresh, [], 0, committed=True)
            self._young.append((self.clock(), holder))

    def release(self, request_id: str) -> None:
        """The request is done: drop its references, tail first (see :meth:`release_blocks`).

        [zh]
        请求结束：释放它持有的引用，从尾部开始（见 :meth:`release_blocks`）。
        """
        if request_id not in self.requests:
            raise KeyError(request_id)
        if request_id == self.PIN_ID:
            raise ValueError(tr("unpin blocks with unpin(), not release()", "固定的块要用 unpin() 解除，不能用 release()"))
        state = self.requests.pop(request_id)
        self.release_blocks(state.blocks)

    def release_blocks(self, blocks: Sequence[Block]) -> None:
        """Drop one reference on each of ``blocks`` (a block table: prefix first, tail last).

        A block whose ``ref_count`` reaches 0 goes to the free queue. They are handed over from
        the *tail* of the table to its head, so in the LRU queue a prompt's prefix is more recent
        than its tail: the tail is evicted first, and a cached block's prefix is always cached
        too (the cache stays prefix-closed). ``ValueError``, changing nothing, if a block is not
        referenced.

        [zh]
        给 ``blocks``（一张块表：前缀在前，尾块在后）里的每个块释放一个引用。

        引用计数降到 0 的块进入空闲队列。交给队列的顺序是从块表的*尾部*到头部，于是在 LRU 队列里，
        提示词的前缀比它的尾部“更新”：尾部先被淘汰，一个缓存块的前缀也一定还在缓存里
        （缓存保持前缀封闭）。有块没有被引用时抛出 ``ValueError``，并且什么都不改。
        """
        for block in blocks:
            if block.ref_count <= 0:
                raise ValueError(tr(f"block {block.block_id} is not referenced (ref_count {block.ref_count})",
                                    f"块 {block.block_id} 没有被引用（ref_count {block.ref_count}）"))
        # TODO 4 (s04.release_blocks)
        ### BEGIN SOLUTION
        for block in reversed(blocks):
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)
        ### END SOLUTION

    # -- pinning ----------------------------------------------------------------------------------
    # zh: -- 固定（pinning） ----------------------------------------------------------------------
    def pin(self, block: Block) -> bool:
        """Keep ``block``'s cached content forever (until :meth:`unpin`).

        Returns ``True`` if the block is pinned afterwards, ``False`` (changing nothing) when
        ``max_pinned`` blocks are pinned already: the cap keeps pins from starving the pool.
        A pinned block holds one extra reference, so the pool never hands it out; if it was
        free, it leaves the free queue. ``ValueError`` for a block without a key (nothing to keep)
        or a block of another pool.

        [zh]
        永久保留 ``block`` 里缓存的内容（直到 :meth:`unpin`）。

        调用之后块处于固定状态就返回 ``True``；已经固定了 ``max_pinned`` 个块时返回 ``False``，
        并且什么都不改：这个上限防止固定的块把块池占满。被固定的块多持有一个引用，所以块池永远
        不会把它交出去；如果它原本是空闲的，就要离开空闲队列。块没有 key（没有可保留的内容）
        或者不属于这个块池时，抛出 ``ValueError``。
        """
        if block.key is None:
            raise ValueError(tr(f"block {block.block_id} holds no cached content to pin",
                                f"块 {block.block_id} 没有缓存内容，无法固定"))
        if not 0 <= block.block_id < self.num_blocks or self.blocks[block.block_id] is not block:
            raise ValueError(tr("not a block of this pool", "这不是本块池的块"))
        if block.block_id in self._pinned:
            return True
        # TODO 5 (s04.pin)
        ### BEGIN SOLUTION
        if len(self._pinned) >= self.max_pinned:
            return False
        if block.ref_count == 0:
            self.free_queue.remove(block)
        block.ref_count += 1
        self._pinned.add(block.block_id)
        self.requests[self.PIN_ID].blocks.append(block)
        return True
        ### END SOLUTION

    def unpin(self, block: Block) -> None:
        """Undo :meth:`pin`; the block becomes free (most recent) if nothing else uses it.

        [zh]
        撤销 :meth:`pin`；如果没有别的请求在用这个块，它就变成空闲块（最近使用的那一端）。
        """
        if block.block_id not in self._pinned:
            raise ValueError(tr(f"block {block.block_id} is not pinned", f"块 {block.block_id} 没有被固定"))
        self._pinned.discard(block.block_id)
        # O(number of pins): unpinning is rare.
        # zh: 代价是 O(固定块数)：解除固定很少发生。
        self.requests[self.PIN_ID].blocks.remove(block)
        self.release_blocks([block])

    def pin_prefix(self, keys: Sequence[bytes]) -> int:
        """Pin the cached blocks of the leading run of ``keys``; returns how many are pinned.

        Stops at the first key that is not cached or when the cap is reached, so the pinned set
        stays prefix-closed (a pinned block's prefix is pinned too).

        [zh]
        固定 ``keys`` 开头连续命中缓存的那些块；返回固定了多少个。

        遇到第一个不在缓存里的 key，或者达到上限，就停下，所以被固定的块也保持前缀封闭
        （一个被固定的块，它的前缀也被固定了）。
        """
        n = 0
        for key in keys:
            block = self.cached.get(key)
            if block is None or not self.pin(block):
                break
            n += 1
        return n

    # -- minimum residence ------------------------------------------------------------------------
    # zh: -- 最短驻留时间 ---------------------------------------------------------------------------
    def expire(self) -> int:
        """Drop the residence holds that are old enough; returns how many holds were dropped.

        Holds are kept oldest first. A hold registered at clock time ``t`` ends once
        ``clock() - t >= min_residence``: before that, its blocks must stay.

        [zh]
        结束已经到期的驻留持有；返回结束了多少个。

        持有按登记时间从早到晚排列。在时刻 ``t`` 登记的持有，到 ``clock() - t >= min_residence``
        时结束；在那之前，它的块必须留着。
        """
        now = self.clock()
        dropped = 0
        while self._young:
            registered_at, holder = self._young[0]
            # TODO 6 (s04.expire)
            ### BEGIN SOLUTION
            if now - registered_at < self.min_residence:
                break
            ### END SOLUTION
            self._young.popleft()
            self.release(holder)
            dropped += 1
        return dropped


def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 7 (s04.quiz)
    ### BEGIN SOLUTION
    return {"q1": "B", "q2": "A", "q3": 32, "q4": "C", "q5": 13, "q6": "C"}
    ### END SOLUTION


#: Pseudo-request id of the pins (also ``EvictionPool.PIN_ID``).
PIN_ID = EvictionPool.PIN_ID

#: :class:`EvictionPool` replaying chained block ids (Mooncake's ``hash_ids``): one id = one block.
PrehashedPool = prehashed(EvictionPool)


def simulate(trace: Sequence[TraceRequest], num_blocks: int, policy: Policy = LRU, *,
             mode: str = "keys") -> SimResult:
    """Replay ``trace`` through this stage's :class:`EvictionPool` (see :func:`workbook.cache_sim.simulate`)."""
    return simulate_with(trace, num_blocks, policy, pool_cls=EvictionPool, mode=mode)

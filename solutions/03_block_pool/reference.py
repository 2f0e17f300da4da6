"""Stage 3 reference: a pool of physical KV blocks, shared through block keys and ref counts.

A request's *block table* lists the physical blocks that hold its prompt's KV, one per
``block_size`` tokens. Full blocks whose key (stage 2's chained hash) is already in the pool's
``cached`` map are shared instead of recomputed; the rest get fresh blocks. Blocks nobody uses
(``ref_count == 0``) wait in a *free queue* but keep their key, so that a later request can still
hit them, until the queue hands them out for other content.

Where a free block goes and which one is handed out next is the free queue's business: stage 3
ships :class:`SimpleFreeQueue`; stage 4 plugs in LRU eviction through the :class:`FreeQueue`
protocol without changing :class:`BlockPool`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from autograder.i18n import tr
from workbook.block_hash import ROOT_SEED, chain_keys, encode_tokens


@dataclass(eq=False, slots=True)
class Block:
    """One physical KV block.

    ``ref_count`` is the number of live requests whose block table holds this block. ``key`` is
    the chained hash of the content it holds once that content is committed, else ``None``.
    ``prev_free``/``next_free`` are free for a free queue's own bookkeeping (stage 4 links free
    blocks into a doubly linked list through them); the pool never reads them.
    Blocks compare by identity.

    [zh]
    一个物理 KV 块。

    ``ref_count`` 是块表中含有这个块的活跃请求个数。``key`` 是它所存内容的链式哈希，内容提交
    （commit）之后才有，否则为 ``None``。``prev_free``/``next_free`` 留给空闲队列自己记账用
    （第 4 阶段用它们把空闲块串成双向链表）；块池从不读取它们。块按身份（identity）比较。
    """

    block_id: int
    ref_count: int = 0
    key: bytes | None = None
    # Quoted: in a notebook cell (no `from __future__ import annotations`) the class does not exist yet.
    # zh: 加引号：在笔记本单元里（没有 `from __future__ import annotations`）这个类此时还不存在。
    prev_free: "Block | None" = None
    next_free: "Block | None" = None


@runtime_checkable
class FreeQueue(Protocol):
    """Where blocks with ``ref_count == 0`` wait, in the order the queue chooses.

    The pool calls ``append`` when a block's ref count drops to 0, ``popleft`` to get a block for
    new content (the pool then drops that block's old key), and ``remove`` when a free block gets
    a cache hit and so is in use again. A block is in the queue at most once.

    [zh]
    ``ref_count == 0`` 的块在这里等待，顺序由队列自己决定。

    块的引用计数降到 0 时，块池调用 ``append``；要给新内容找块时调用 ``popleft``（块池随后删掉
    这个块原来的 key）；空闲块被缓存命中、重新投入使用时调用 ``remove``。一个块最多在队列里出现一次。
    """

    def append(self, block: Block) -> None: ...

    def popleft(self) -> Block: ...

    def remove(self, block: Block) -> None: ...

    def __len__(self) -> int: ...


class SimpleFreeQueue:
    """First in, first out: ``popleft`` hands out the block that has been free the longest.

    All three operations are O(1): the queue is an insertion-ordered set of blocks (the keys of an
    ``OrderedDict``; blocks hash by identity). Invariant: a block is in the queue at most once;
    ``append`` of a block already in it raises ``ValueError`` (a double free), ``remove`` of a
    block not in it raises ``ValueError``; neither changes the queue then.

    [zh]
    先进先出：``popleft`` 交出空闲时间最长的那个块。

    三个操作都是 O(1)：队列是一个按插入顺序排列的块集合（``OrderedDict`` 的键；块按身份哈希）。
    不变量：一个块最多在队列里出现一次；对已在队列中的块再 ``append`` 会抛出 ``ValueError``
    （重复释放），``remove`` 不在队列中的块也抛出 ``ValueError``；这两种情况下队列都不变。
    """

    def __init__(self) -> None:
        self._blocks: OrderedDict[Block, None] = OrderedDict()

    def append(self, block: Block) -> None:
        if block in self._blocks:
            raise ValueError(tr(f"block {block.block_id} is already free (double free)",
                                f"块 {block.block_id} 已经是空闲的（重复释放）"))
        self._blocks[block] = None

    def popleft(self) -> Block:
        if not self._blocks:
            raise IndexError(tr("popleft from an empty free queue", "空闲队列是空的，无法 popleft"))
        return self._blocks.popitem(last=False)[0]

    def remove(self, block: Block) -> None:
        try:
            del self._blocks[block]
        except KeyError:
            raise ValueError(tr(f"block {block.block_id} is not in the free queue", f"块 {block.block_id} 不在空闲队列里")) from None

    def __len__(self) -> int:
        return len(self._blocks)

    def __iter__(self) -> Iterator[Block]:
        return iter(list(self._blocks))

    def __contains__(self, block: object) -> bool:
        return block in self._blocks


class PoolFullError(RuntimeError):
    """The pool cannot give a request the blocks it needs; nothing was changed.

    [zh]
    块池给不出请求所需的块；池的状态没有任何改变。
    """


@dataclass
class Admission:
    """What ``BlockPool.admit`` decided for one request.

    ``block_table[i]`` is the physical block holding tokens ``i*B .. (i+1)*B - 1``; the first
    ``hit_blocks`` entries are cache hits holding ``hit_tokens = hit_blocks * B`` tokens whose KV
    is reused. ``len(tokens) - hit_tokens`` tokens still need prefill, always at least 1.

    [zh]
    ``BlockPool.admit`` 对一个请求做出的决定。

    ``block_table[i]`` 是存放第 ``i*B .. (i+1)*B - 1`` 个 token 的物理块；前 ``hit_blocks`` 项是缓存
    命中，共 ``hit_tokens = hit_blocks * B`` 个 token 的 KV 被复用。还有 ``len(tokens) - hit_tokens``
    个 token 需要 prefill，至少 1 个。
    """

    request_id: str
    block_table: list[int]
    hit_blocks: int
    hit_tokens: int


@dataclass(eq=False, slots=True)
class RequestState:
    """The pool's record of one live request: its blocks, the keys of its full blocks (hashed
    once at admission and reused by ``commit``), how many leading blocks were hits, and whether
    its KV has been committed.

    [zh]
    块池对一个活跃请求的记录：它的块、它各个满块的 key（接纳时算一次，``commit`` 直接复用）、
    开头有几个块是命中的，以及它的 KV 是否已经提交。
    """

    blocks: list[Block]
    keys: list[bytes]
    hit_blocks: int
    committed: bool = False


class BlockPool:
    """``num_blocks`` physical blocks of ``block_size`` tokens, shared between requests.

    Invariants (checked by :meth:`check_invariants` and :meth:`violations`):
    - every block is either free (``ref_count == 0``, in the free queue once) or in use
      (``ref_count > 0``, not in the free queue): ``num_free + num_in_use == num_blocks``;
    - ``ref_count`` equals the number of live block tables that hold the block, never negative;
      so a block in a live block table is never handed out again;
    - ``cached[k].key == k`` for every key ``k``, and every block with a key is in ``cached``
      under it: a key points at exactly one block, and only at KV that was committed;
    - a block table holds distinct blocks (``ceil(len(tokens) / block_size)`` of them, by
      construction in :meth:`admit`).

    Every method validates its arguments, and ``admit`` its capacity, before it changes anything.

    [zh]
    ``num_blocks`` 个物理块，每块 ``block_size`` 个 token，由各个请求共享。

    不变量（由 :meth:`check_invariants` 和 :meth:`violations` 检查）：
    - 每个块要么空闲（``ref_count == 0``，在空闲队列里恰好一次），要么在使用中（``ref_count > 0``，
      不在空闲队列里）：``num_free + num_in_use == num_blocks``；
    - ``ref_count`` 等于持有这个块的活跃块表个数，永不为负；所以活跃块表里的块绝不会被再次分配；
    - 对缓存表里的每个 key ``k`` 都有 ``cached[k].key == k``，每个带 key 的块都以这个 key 登记在
      ``cached`` 里：一个 key 只指向一个块，而且只指向已经提交的 KV；
    - 一个块表里的块互不相同（共 ``ceil(len(tokens) / block_size)`` 个，由 :meth:`admit` 保证）。

    每个方法都先校验参数（``admit`` 还要先检查容量），再改动状态。
    """

    def __init__(
        self,
        num_blocks: int,
        block_size: int,
        *,
        free_queue: FreeQueue | None = None,
        root_seed: bytes = ROOT_SEED,
    ) -> None:
        for name, value in (("num_blocks", num_blocks), ("block_size", block_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(tr(f"{name} must be a positive int, got {value!r}", f"{name} 必须是正整数，实际是 {value!r}"))
        if not isinstance(root_seed, bytes) or not root_seed:
            raise ValueError(tr("root_seed must be non-empty bytes", "root_seed 必须是非空的 bytes"))
        queue: FreeQueue = SimpleFreeQueue() if free_queue is None else free_queue
        if len(queue) != 0:
            raise ValueError(tr("free_queue must start empty: the pool fills it with its blocks",
                                "free_queue 一开始必须是空的：块池会自己把块放进去"))
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.root_seed = root_seed
        self.blocks: list[Block] = [Block(i) for i in range(num_blocks)]
        self.free_queue: FreeQueue = queue
        # Block 0 first: a fresh pool hands out 0, 1, 2, ...
        # zh: 0 号块排在最前：新池依次交出 0、1、2……
        for block in self.blocks:
            queue.append(block)
        self.cached: dict[bytes, Block] = {}
        self.requests: dict[str, RequestState] = {}

    # -- queries ----------------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        """How many blocks are free: the free queue's length, O(1).

        [zh]
        空闲块的个数：空闲队列的长度，O(1)。
        """
        return len(self.free_queue)

    @property
    def num_in_use(self) -> int:
        """How many blocks have ``ref_count > 0``, counted block by block: O(num_blocks), for the
        invariants and the pictures, never for a decision on the hot path.

        [zh]
        ``ref_count > 0`` 的块有多少个，逐块数出来：O(num_blocks)，只用于检查不变量和画图，
        不要在每个请求都要走的热路径上用它做判断。
        """
        return sum(1 for b in self.blocks if b.ref_count > 0)

    def block_table(self, request_id: str) -> list[int]:
        """A copy of the request's block table (physical block ids, in token order).

        [zh]
        请求块表的一份拷贝（物理块编号，按 token 顺序）。
        """
        return [b.block_id for b in self.requests[request_id].blocks]

    def keys_of(self, tokens: Sequence[int], extra_keys: Sequence[tuple[str, str]] | None = None) -> list[bytes]:
        """The chained keys of the full blocks of ``tokens``, with this pool's root seed.

        [zh]
        ``tokens`` 各个满块的链式 key，用本池的根种子（root seed）计算。
        """
        return chain_keys(tokens, self.block_size, extra_keys, root_seed=self.root_seed)

    def _checked_keys(self, keys: Sequence[bytes], num_tokens: int) -> list[bytes]:
        """A copy of ``keys`` handed to :meth:`admit`, after checking there is one ``bytes`` key per
        full block of a ``num_tokens``-token prompt (the caller's list may change later).

        [zh]
        交给 :meth:`admit` 的 ``keys`` 的一份拷贝；先检查 ``num_tokens`` 个 token 的提示词每个满块
        恰好有一个 ``bytes`` 类型的 key（调用方之后可能会修改自己的列表）。
        """
        if isinstance(keys, (bytes, str)):
            raise TypeError(tr("keys must be a sequence of bytes keys, not a single bytes/str",
                               "keys 必须是由 bytes key 组成的序列，不能是单个 bytes/str"))
        checked = list(keys)
        if len(checked) != num_tokens // self.block_size:
            raise ValueError(tr(f"{len(checked)} keys for a {num_tokens}-token prompt: it has "
                                f"{num_tokens // self.block_size} full blocks of {self.block_size}",
                                f"{num_tokens} 个 token 的提示词给了 {len(checked)} 个 key：它只有 "
                                f"{num_tokens // self.block_size} 个满块（每块 {self.block_size} 个 token）"))
        for key in checked:
            if not isinstance(key, bytes):
                raise TypeError(tr(f"keys must be bytes, got {type(key).__name__}",
                                   f"key 必须是 bytes，实际是 {type(key).__name__}"))
        return checked

    # -- TODOs ------------------------------------------------------------------------------------
    def lookup(self, keys: Sequence[bytes], num_tokens: int) -> list[Block]:
        """The cached blocks of the longest leading run of ``keys``; changes nothing.

        ``keys`` are the full-block keys of a prompt of ``num_tokens`` tokens. At least one token
        must still be computed (prefill has to produce the logits of the last prompt token), so at
        most ``(num_tokens - 1) // block_size`` blocks are returned: a fully cached, block-aligned
        prompt recomputes its last block.

        [zh]
        ``keys`` 从头开始最长一段连续命中的缓存块；不改动任何状态。

        ``keys`` 是一个 ``num_tokens`` 个 token 的提示词的各满块 key。至少要计算一个 token（prefill
        必须产出提示词最后一个 token 的 logits），所以最多返回 ``(num_tokens - 1) // block_size`` 个块：
        一个完全已缓存、长度正好是块大小整数倍的提示词，要重新计算它的最后一个块。
        """
        if num_tokens <= 0:
            raise ValueError(tr("a prompt has at least one token", "提示词至少要有一个 token"))
        max_hits = (num_tokens - 1) // self.block_size
        hits: list[Block] = []
        # TODO 1 (s03.lookup)
        ### BEGIN SOLUTION
        for key in keys[:max_hits]:
            block = self.cached.get(key)
            if block is None:
                break
            hits.append(block)
        ### END SOLUTION
        return hits

    def allocate_block(self) -> Block:
        """Take the next block from the free queue for new content and return it in use.

        The block gets ``ref_count == 1`` and no key. If it still held cached content, that
        content is overwritten from now on: its old key must stop hitting.

        [zh]
        从空闲队列里取下一个块给新内容用，并让它进入使用状态。

        这个块的引用计数为 1，没有 key。如果它还存着已缓存的内容，从现在起这些内容会被覆盖：
        它原来的 key 不能再命中。
        """
        if len(self.free_queue) == 0:
            raise PoolFullError(tr("no free block", "没有空闲块了"))
        # TODO 2 (s03.allocate_block)
        ### BEGIN SOLUTION
        block = self.free_queue.popleft()
        if block.key is not None:
            # Its KV is about to be overwritten: a hit under the old key would read other content.
            # zh: 它的 KV 马上要被覆盖：再用旧 key 命中，读到的就是别的内容了。
            del self.cached[block.key]
            block.key = None
        block.ref_count = 1
        ### END SOLUTION
        return block

    def admit(
        self,
        request_id: str,
        tokens: Sequence[int],
        extra_keys: Sequence[tuple[str, str]] | None = None,
        *,
        keys: Sequence[bytes] | None = None,
    ) -> Admission:
        """Give a request its block table: cached leading blocks, then fresh ones.

        Hits get ``ref_count += 1`` (a free cached hit leaves the free queue); the remaining
        ``ceil(len(tokens) / B) - hits`` blocks come from :meth:`allocate_block`. Raises
        ``PoolFullError`` and changes nothing when the free blocks cannot cover the fresh ones:
        a hit on a *free* cached block takes that block out of the free queue, so it is not also
        available for fresh allocation. Nothing is registered in ``cached`` here: the new blocks'
        KV does not exist until prefill ran (see :meth:`commit`).

        ``keys``, if given, must be ``self.keys_of(tokens, extra_keys)``, computed earlier (say, by a
        scheduler that looked the prompt up before admitting it): the prompt is then not hashed
        again, as engines keep a request's block hashes on the request. Only their number and type
        are checked (``ValueError``/``TypeError``, nothing changed); wrong keys give wrong hits.

        [zh]
        给请求分配块表：先是开头的缓存块，再是新块。

        命中块 ``ref_count += 1``（命中一个空闲的缓存块会把它移出空闲队列）；其余
        ``ceil(len(tokens) / B) - hits`` 个块由 :meth:`allocate_block` 提供。空闲块不够提供这些新块时，
        抛出 ``PoolFullError``，什么都不改：命中一个*空闲*的缓存块会把它移出空闲队列，所以它不能同时
        再被当作新块分配。这里不往 ``cached`` 里登记任何东西：新块的 KV 要等 prefill 跑完才存在
        （见 :meth:`commit`）。

        如果给了 ``keys``，它必须等于之前算好的 ``self.keys_of(tokens, extra_keys)``（比如调度器在接纳
        之前先查过这个提示词）：这样提示词就不会被再哈希一遍，推理引擎也是把请求的块哈希存在请求上。
        这里只检查它们的个数和类型（``ValueError``/``TypeError``，不改任何状态）；key 给错了，命中也会错。
        """
        if not isinstance(request_id, str):
            raise TypeError(tr("request_id must be a str", "request_id 必须是 str"))
        if request_id in self.requests:
            raise ValueError(tr(f"request {request_id!r} is already admitted", f"请求 {request_id!r} 已经被接纳过了"))
        if len(tokens) == 0:
            raise ValueError(tr("a prompt has at least one token", "提示词至少要有一个 token"))
        if keys is None:
            # Hashed once here, reused by commit.
            # zh: 在这里哈希一次，`commit` 时直接复用。
            keys = self.keys_of(tokens, extra_keys)
        else:
            keys = self._checked_keys(keys, len(tokens))
        # The tail is not hashed: validate its tokens too.
        # zh: 尾块不参与哈希：它的 token 也要校验。
        encode_tokens(tokens[len(keys) * self.block_size :])
        hits = self.lookup(keys, len(tokens))
        num_new = -(-len(tokens) // self.block_size) - len(hits)
        # TODO 3 (s03.admit)
        ### BEGIN SOLUTION
        revived = sum(1 for block in hits if block.ref_count == 0)
        # A free cached hit leaves the free queue, so it cannot also be one of the fresh blocks.
        # zh: 空闲的缓存块被命中后会离开空闲队列，所以它不能再算作新块的来源。
        if num_new > len(self.free_queue) - revived:
            raise PoolFullError(
                f"request {request_id!r} needs {num_new} fresh blocks; {len(self.free_queue)} are free, "
                f"{revived} of them are its own cached hits"
            )
        # Take the hits before allocating: a free hit must not be handed out as a fresh block.
        # zh: 先拿下命中块再分配新块：空闲的命中块不能被当作新块分配出去。
        for block in hits:
            if block.ref_count == 0:
                self.free_queue.remove(block)
            block.ref_count += 1
        blocks = hits + [self.allocate_block() for _ in range(num_new)]
        ### END SOLUTION
        self.requests[request_id] = RequestState(blocks, keys, len(hits))
        return Admission(request_id, [b.block_id for b in blocks], len(hits), len(hits) * self.block_size)

    def commit(self, request_id: str) -> None:
        """Prefill has written the request's KV: make its full blocks findable by their keys.

        Only the fresh full blocks are registered (hits are already cached; the partial tail has
        no key). If another block already holds a key (two requests with the same prompt were
        admitted before either committed), the first one stays cached and the new block keeps no
        key: a key points at exactly one block.

        [zh]
        prefill 已经写好了请求的 KV：让它的满块能通过 key 被找到。

        只登记新的满块（命中块本来就在缓存里；未满的尾块没有 key）。如果某个 key 已经由另一个块持有
        （同一个提示词的两个请求都在对方提交之前被接纳），就保留先登记的那个块，新块不带 key：
        一个 key 只指向一个块。
        """
        state = self.requests[request_id]
        if state.committed:
            raise ValueError(tr(f"request {request_id!r} is already committed", f"请求 {request_id!r} 已经提交过了"))
        # TODO 4 (s03.commit)
        ### BEGIN SOLUTION
        for i in range(state.hit_blocks, len(state.keys)):
            key = state.keys[i]
            if key not in self.cached:
                block = state.blocks[i]
                block.key = key
                self.cached[key] = block
        ### END SOLUTION
        state.committed = True

    def release(self, request_id: str) -> None:
        """The request is done: drop its references; blocks no one uses become free.

        A freed block keeps its key (and so stays cached) until :meth:`allocate_block` reuses it.
        The order in which freed blocks enter the free queue decides which cached block is given
        up first; stage 4 chooses it (tail first). Here any order is accepted: the reference goes
        through the block table from its head, and stage 3's checks do not depend on the order.

        [zh]
        请求结束了：去掉它的引用；没人再用的块变为空闲。

        被释放的块保留它的 key（因此仍然缓存着），直到 :meth:`allocate_block` 把它分配出去。
        被释放的块以什么顺序进入空闲队列，决定了哪个缓存块最先被放弃；第 4 阶段会选这个顺序（尾块
        优先）。这里任何顺序都可以：参考实现从块表头部开始，第 3 阶段的检查不依赖这个顺序。
        """
        state = self.requests[request_id]
        # TODO 5 (s03.release)
        ### BEGIN SOLUTION
        for block in state.blocks:
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)
        ### END SOLUTION
        del self.requests[request_id]

    # -- invariants -------------------------------------------------------------------------------
    def violations(self) -> list[str]:
        """Every broken invariant, in words (an empty list when the pool is consistent).

        [zh]
        所有被破坏的不变量，用文字描述（池状态一致时返回空列表）。
        """
        problems: list[str] = []
        holders = [0] * self.num_blocks
        for rid, state in self.requests.items():
            ids = [b.block_id for b in state.blocks]
            if len(set(ids)) != len(ids):
                problems.append(tr(f"request {rid!r} holds a block twice: {ids}", f"请求 {rid!r} 把同一个块持有了两次：{ids}"))
            for b in state.blocks:
                holders[b.block_id] += 1
        for b in self.blocks:
            if b.ref_count < 0:
                problems.append(tr(f"block {b.block_id} has a negative ref_count {b.ref_count}",
                                   f"块 {b.block_id} 的 ref_count 是负数 {b.ref_count}"))
            if b.ref_count != holders[b.block_id]:
                problems.append(tr(f"block {b.block_id}: ref_count {b.ref_count} but {holders[b.block_id]} "
                                   "live block tables hold it",
                                   f"块 {b.block_id}：ref_count 是 {b.ref_count}，但有 {holders[b.block_id]} "
                                   "个仍在使用的块表持有它"))
            if b.key is not None and self.cached.get(b.key) is not b:
                problems.append(tr(f"block {b.block_id} has a key that does not map back to it",
                                   f"块 {b.block_id} 有 key，但缓存表里这个 key 并不指向它"))
        for key, b in self.cached.items():
            if b.key != key:
                problems.append(tr(f"cached key {key.hex()[:8]} points at block {b.block_id}, whose key differs",
                                   f"缓存的 key {key.hex()[:8]} 指向块 {b.block_id}，而这个块的 key 不一样"))
        in_use = self.num_in_use
        if len(self.free_queue) + in_use != self.num_blocks:
            problems.append(tr(f"free ({len(self.free_queue)}) + in use ({in_use}) != total ({self.num_blocks})",
                               f"空闲 ({len(self.free_queue)}) + 使用中 ({in_use}) != 总数 ({self.num_blocks})"))
        # The protocol does not promise iteration.
        # zh: 协议并不保证队列可以迭代。
        if hasattr(self.free_queue, "__iter__"):
            free = list(self.free_queue)  # type: ignore[call-overload]
            if len({id(b) for b in free}) != len(free):
                problems.append(tr("a block is in the free queue twice", "有一个块在空闲队列里出现了两次"))
            for b in free:
                if b.ref_count != 0:
                    problems.append(tr(f"block {b.block_id} is in the free queue with ref_count {b.ref_count}",
                                       f"块 {b.block_id} 在空闲队列里，但 ref_count 是 {b.ref_count}"))
        return problems

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` listing every broken invariant.

        [zh]
        有不变量被破坏时抛出 ``AssertionError``，并列出所有被破坏的不变量。
        """
        problems = self.violations()
        if problems:
            raise AssertionError(tr("block pool invariants broken:\n  " + "\n  ".join(problems),
                                    "块池的不变量被破坏了：\n  " + "\n  ".join(problems)))


def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 6 (s03.quiz)
    ### BEGIN SOLUTION
    return {"q1": 31, "q2": 63, "q3": "B", "q4": 70, "q5": "C", "q6": 13}
    ### END SOLUTION

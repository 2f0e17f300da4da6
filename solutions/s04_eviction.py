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
  :mod:`solutions.traces`) through :class:`EvictionPool` and measure hit rates; :func:`belady` is
  the offline optimum (evict the block needed farthest in the future) that bounds every policy.
  Both are given code from :mod:`solutions.cache_sim`.

Held references are recorded as pseudo-requests whose ids start with ``#`` (``#pinned``,
``#young:<n>``), so stage 3's invariant "``ref_count`` = number of live block tables holding the
block" and its ``violations()`` check still hold.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from solutions.cache_sim import LRU, Policy, SimResult, belady, prehashed
from solutions.cache_sim import simulate as simulate_with
from solutions.s02_block_hash import ROOT_SEED
from solutions.s03_block_pool import Admission, Block, BlockPool, PoolFullError, RequestState
from solutions.traces import TraceRequest

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
    """

    def __init__(self) -> None:
        # Sentinels are blocks that no pool owns (id -1): every real block then has a neighbour
        # on both sides, so linking and unlinking never test for the ends of the list.
        self._head, self._mid, self._tail = Block(-1), Block(-1), Block(-1)
        self._head.next_free, self._mid.prev_free = self._mid, self._head
        self._mid.next_free, self._tail.prev_free = self._tail, self._mid
        self._len = 0

    # -- given helpers ----------------------------------------------------------------------------
    @staticmethod
    def _link_before(node: Block, block: Block) -> None:
        """Insert ``block`` just before ``node`` (O(1))."""
        prev = node.prev_free
        block.prev_free, block.next_free = prev, node
        prev.next_free = block  # type: ignore[union-attr]
        node.prev_free = block

    @staticmethod
    def _unlink(block: Block) -> None:
        """Take ``block`` out of the list and clear its slots (O(1))."""
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
        """
        if block.prev_free is not None or block.next_free is not None:
            raise ValueError(f"block {block.block_id} is already in a free queue (double free)")
        if block.ref_count != 0:
            raise ValueError(f"block {block.block_id} is still in use (ref_count {block.ref_count})")
        # TODO 1 (s04.append): link the block in at the right place and count it.
        # Hint: self._link_before(self._mid or self._tail, block); keyless means block.key is None.
        ### BEGIN SOLUTION
        self._link_before(self._mid if block.key is None else self._tail, block)
        self._len += 1
        ### END SOLUTION

    def popleft(self) -> Block:
        """Take out and return the next block to reuse: the first keyless block if there is one,
        else the least recently used cached block. ``IndexError`` when the queue is empty."""
        if self._len == 0:
            raise IndexError("popleft from an empty free queue")
        # TODO 2 (s04.popleft): find the first block after self._head (skip the self._mid
        # sentinel), unlink it, count it out and return it.
        # Hint: the least recently used end is the head end; never walk further than one step past mid.
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
        """
        # TODO 3 (s04.remove): check membership, unlink the block, count it out.
        # Hint: membership is `block.prev_free is not None`; self._unlink does the pointer work.
        # A list/deque `.remove` would walk the queue: O(n) per hit.
        ### BEGIN SOLUTION
        if block.prev_free is None:
            raise ValueError(f"block {block.block_id} is not in the free queue")
        self._unlink(block)
        self._len -= 1
        ### END SOLUTION

    # -- given: iteration (after the TODOs) ------------------------------------------------------
    def __iter__(self) -> Iterator[Block]:
        """The blocks in the order ``popleft`` would hand them out (a snapshot)."""
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
    """

    #: Pseudo-request that holds one reference on every pinned block.
    PIN_ID = "#pinned"
    #: Prefix of the pseudo-requests that hold newly computed blocks for ``min_residence``.
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
        BlockPool.__init__(self, num_blocks, block_size, free_queue=LRUFreeQueue(), root_seed=root_seed)
        if not isinstance(max_pinned, int) or not 0 <= max_pinned < num_blocks:
            raise ValueError(f"max_pinned must be an int in 0..num_blocks-1, got {max_pinned!r}")
        if not min_residence >= 0:
            raise ValueError(f"min_residence must be >= 0, got {min_residence!r}")
        self.max_pinned = max_pinned
        self.min_residence = float(min_residence)
        self.clock = clock
        self.requests[self.PIN_ID] = RequestState([], [], 0, committed=True)
        self._pinned: set[int] = set()  # block ids, for O(1) membership
        self._young: deque[tuple[float, str]] = deque()  # (registered at, pseudo-request id)
        self._young_seq = 0

    # -- queries ----------------------------------------------------------------------------------
    @property
    def num_pinned(self) -> int:
        return len(self._pinned)

    def is_pinned(self, block: Block) -> bool:
        return block.block_id in self._pinned

    def is_cached(self, key: bytes) -> bool:
        return key in self.cached

    # -- request life cycle -----------------------------------------------------------------------
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
        """
        if isinstance(request_id, str) and request_id.startswith("#"):
            raise ValueError(f"request ids starting with '#' are reserved, got {request_id!r}")
        self.expire()
        return BlockPool.admit(self, request_id, tokens, extra_keys, keys=keys)

    def commit(self, request_id: str) -> None:
        """Stage 3's ``commit``; with a minimum residence, also hold the newly registered blocks."""
        state = self.requests[request_id]
        BlockPool.commit(self, request_id)
        if self.min_residence <= 0:
            return
        fresh = [
            state.blocks[i]
            for i in range(state.hit_blocks, len(state.keys))
            if state.blocks[i].key == state.keys[i]  # registered now (not a duplicate of another)
        ]
        if fresh:
            self._young_seq += 1
            holder = f"{self.YOUNG_PREFIX}{self._young_seq}"
            for block in fresh:  # all in use by `request_id`, so none is in the free queue
                block.ref_count += 1
            self.requests[holder] = RequestState(fresh, [], 0, committed=True)
            self._young.append((self.clock(), holder))

    def release(self, request_id: str) -> None:
        """The request is done: drop its references, tail first (see :meth:`release_blocks`)."""
        if request_id not in self.requests:
            raise KeyError(request_id)
        if request_id == self.PIN_ID:
            raise ValueError("unpin blocks with unpin(), not release()")
        state = self.requests.pop(request_id)
        self.release_blocks(state.blocks)

    def release_blocks(self, blocks: Sequence[Block]) -> None:
        """Drop one reference on each of ``blocks`` (a block table: prefix first, tail last).

        A block whose ``ref_count`` reaches 0 goes to the free queue. They are handed over from
        the *tail* of the table to its head, so in the LRU queue a prompt's prefix is more recent
        than its tail: the tail is evicted first, and a cached block's prefix is always cached
        too (the cache stays prefix-closed). ``ValueError``, changing nothing, if a block is not
        referenced.
        """
        for block in blocks:
            if block.ref_count <= 0:
                raise ValueError(f"block {block.block_id} is not referenced (ref_count {block.ref_count})")
        # TODO 4 (s04.release_blocks): decrement every block's ref_count, tail first; append the
        # blocks that reach 0 to self.free_queue.
        # Hint: reversed(blocks). The head-first order would evict a shared prefix before the
        # private tail that hangs off it, leaving tails that can never hit.
        ### BEGIN SOLUTION
        for block in reversed(blocks):
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)
        ### END SOLUTION

    # -- pinning ----------------------------------------------------------------------------------
    def pin(self, block: Block) -> bool:
        """Keep ``block``'s cached content forever (until :meth:`unpin`).

        Returns ``True`` if the block is pinned afterwards, ``False`` (changing nothing) when
        ``max_pinned`` blocks are pinned already: the cap keeps pins from starving the pool.
        A pinned block holds one extra reference, so the pool never hands it out; if it was
        free, it leaves the free queue. ``ValueError`` for a block without a key (nothing to keep)
        or a block of another pool.
        """
        if block.key is None:
            raise ValueError(f"block {block.block_id} holds no cached content to pin")
        if not 0 <= block.block_id < self.num_blocks or self.blocks[block.block_id] is not block:
            raise ValueError("not a block of this pool")
        if block.block_id in self._pinned:
            return True
        # TODO 5 (s04.pin): refuse (return False) at the cap; otherwise take a free block out of
        # the free queue, add one reference, record the pin (self._pinned and the PIN_ID
        # pseudo-request's block list) and return True.
        # Hint: a free block (ref_count == 0) that stays in the free queue with ref_count 1 would
        # be evicted while pinned.
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
        """Undo :meth:`pin`; the block becomes free (most recent) if nothing else uses it."""
        if block.block_id not in self._pinned:
            raise ValueError(f"block {block.block_id} is not pinned")
        self._pinned.discard(block.block_id)
        self.requests[self.PIN_ID].blocks.remove(block)  # O(pins), rare
        self.release_blocks([block])

    def pin_prefix(self, keys: Sequence[bytes]) -> int:
        """Pin the cached blocks of the leading run of ``keys``; returns how many are pinned.

        Stops at the first key that is not cached or when the cap is reached, so the pinned set
        stays prefix-closed (a pinned block's prefix is pinned too).
        """
        n = 0
        for key in keys:
            block = self.cached.get(key)
            if block is None or not self.pin(block):
                break
            n += 1
        return n

    # -- minimum residence ------------------------------------------------------------------------
    def expire(self) -> int:
        """Drop the residence holds that are old enough; returns how many holds were dropped.

        Holds are kept oldest first. A hold registered at clock time ``t`` ends once
        ``clock() - t >= min_residence``: before that, its blocks must stay.
        """
        now = self.clock()
        dropped = 0
        while self._young:
            registered_at, holder = self._young[0]
            # TODO 6 (s04.expire): stop at the first hold that is still too young (the ones after
            # it are younger still); otherwise fall through, which releases it.
            # Hint: too young means less than self.min_residence has passed since registered_at.
            ### BEGIN SOLUTION
            if now - registered_at < self.min_residence:
                break
            ### END SOLUTION
            self._young.popleft()
            self.release(holder)
            dropped += 1
        return dropped




#: Pseudo-request id of the pins (also ``EvictionPool.PIN_ID``).
PIN_ID = EvictionPool.PIN_ID

#: :class:`EvictionPool` replaying chained block ids (Mooncake's ``hash_ids``): one id = one block.
PrehashedPool = prehashed(EvictionPool)


def simulate(trace: Sequence[TraceRequest], num_blocks: int, policy: Policy = LRU, *,
             mode: str = "keys") -> SimResult:
    """Replay ``trace`` through this stage's :class:`EvictionPool` (see :func:`solutions.cache_sim.simulate`)."""
    return simulate_with(trace, num_blocks, policy, pool_cls=EvictionPool, mode=mode)

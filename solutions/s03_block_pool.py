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

from solutions.s02_block_hash import ROOT_SEED, chain_keys, encode_tokens


@dataclass(eq=False, slots=True)
class Block:
    """One physical KV block.

    ``ref_count`` is the number of live requests whose block table holds this block. ``key`` is
    the chained hash of the content it holds once that content is committed, else ``None``.
    ``prev_free``/``next_free`` are free for a free queue's own bookkeeping (stage 4 links free
    blocks into a doubly linked list through them); the pool never reads them.
    Blocks compare by identity.
    """

    block_id: int
    ref_count: int = 0
    key: bytes | None = None
    # Quoted: in a notebook cell (no `from __future__ import annotations`) the class does not exist yet.
    prev_free: "Block | None" = None
    next_free: "Block | None" = None


@runtime_checkable
class FreeQueue(Protocol):
    """Where blocks with ``ref_count == 0`` wait, in the order the queue chooses.

    The pool calls ``append`` when a block's ref count drops to 0, ``popleft`` to get a block for
    new content (the pool then drops that block's old key), and ``remove`` when a free block gets
    a cache hit and so is in use again. A block is in the queue at most once.
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
    """

    def __init__(self) -> None:
        self._blocks: OrderedDict[Block, None] = OrderedDict()

    def append(self, block: Block) -> None:
        if block in self._blocks:
            raise ValueError(f"block {block.block_id} is already free (double free)")
        self._blocks[block] = None

    def popleft(self) -> Block:
        if not self._blocks:
            raise IndexError("popleft from an empty free queue")
        return self._blocks.popitem(last=False)[0]

    def remove(self, block: Block) -> None:
        try:
            del self._blocks[block]
        except KeyError:
            raise ValueError(f"block {block.block_id} is not in the free queue") from None

    def __len__(self) -> int:
        return len(self._blocks)

    def __iter__(self) -> Iterator[Block]:
        return iter(list(self._blocks))

    def __contains__(self, block: object) -> bool:
        return block in self._blocks


class PoolFullError(RuntimeError):
    """The pool cannot give a request the blocks it needs; nothing was changed."""


@dataclass
class Admission:
    """What ``BlockPool.admit`` decided for one request.

    ``block_table[i]`` is the physical block holding tokens ``i*B .. (i+1)*B - 1``; the first
    ``hit_blocks`` entries are cache hits holding ``hit_tokens = hit_blocks * B`` tokens whose KV
    is reused. ``len(tokens) - hit_tokens`` tokens still need prefill, always at least 1.
    """

    request_id: str
    block_table: list[int]
    hit_blocks: int
    hit_tokens: int


@dataclass(eq=False, slots=True)
class RequestState:
    """The pool's record of one live request: its blocks, the keys of its full blocks (hashed
    once at admission and reused by ``commit``), how many leading blocks were hits, and whether
    its KV has been committed."""

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
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(root_seed, bytes) or not root_seed:
            raise ValueError("root_seed must be non-empty bytes")
        queue: FreeQueue = SimpleFreeQueue() if free_queue is None else free_queue
        if len(queue) != 0:
            raise ValueError("free_queue must start empty: the pool fills it with its blocks")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.root_seed = root_seed
        self.blocks: list[Block] = [Block(i) for i in range(num_blocks)]
        self.free_queue: FreeQueue = queue
        for block in self.blocks:  # block 0 first: a fresh pool hands out 0, 1, 2, ...
            queue.append(block)
        self.cached: dict[bytes, Block] = {}
        self.requests: dict[str, RequestState] = {}

    # -- queries ----------------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        return len(self.free_queue)

    @property
    def num_in_use(self) -> int:
        return sum(1 for b in self.blocks if b.ref_count > 0)

    def block_table(self, request_id: str) -> list[int]:
        """A copy of the request's block table (physical block ids, in token order)."""
        return [b.block_id for b in self.requests[request_id].blocks]

    def keys_of(self, tokens: Sequence[int], extra_keys: Sequence[tuple[str, str]] | None = None) -> list[bytes]:
        """The chained keys of the full blocks of ``tokens``, with this pool's root seed."""
        return chain_keys(tokens, self.block_size, extra_keys, root_seed=self.root_seed)

    def _checked_keys(self, keys: Sequence[bytes], num_tokens: int) -> list[bytes]:
        """A copy of ``keys`` handed to :meth:`admit`, after checking there is one ``bytes`` key per
        full block of a ``num_tokens``-token prompt (the caller's list may change later)."""
        if isinstance(keys, (bytes, str)):
            raise TypeError("keys must be a sequence of bytes keys, not a single bytes/str")
        checked = list(keys)
        if len(checked) != num_tokens // self.block_size:
            raise ValueError(f"{len(checked)} keys for a {num_tokens}-token prompt: it has "
                             f"{num_tokens // self.block_size} full blocks of {self.block_size}")
        for key in checked:
            if not isinstance(key, bytes):
                raise TypeError(f"keys must be bytes, got {type(key).__name__}")
        return checked

    # -- TODOs ------------------------------------------------------------------------------------
    def lookup(self, keys: Sequence[bytes], num_tokens: int) -> list[Block]:
        """The cached blocks of the longest leading run of ``keys``; changes nothing.

        ``keys`` are the full-block keys of a prompt of ``num_tokens`` tokens. At least one token
        must still be computed (prefill has to produce the logits of the last prompt token), so at
        most ``(num_tokens - 1) // block_size`` blocks are returned: a fully cached, block-aligned
        prompt recomputes its last block.
        """
        if num_tokens <= 0:
            raise ValueError("a prompt has at least one token")
        max_hits = (num_tokens - 1) // self.block_size
        # TODO 1 (s03.lookup): collect self.cached[key] for the leading keys that are cached, stop at
        # the first miss, and never return more than `max_hits` blocks.
        # Hint: loop over keys[:max_hits]; self.cached.get(key) is None on a miss.
        hits: list[Block] = []
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
        """
        if len(self.free_queue) == 0:
            raise PoolFullError("no free block")
        # TODO 2 (s03.allocate_block): set `block` to the next free block; if it has a key, forget
        # it (in self.cached and on the block); give it ref_count 1.
        # Hint: self.free_queue.popleft(); `del self.cached[block.key]`; block.key = None.
        ### BEGIN SOLUTION
        block = self.free_queue.popleft()
        if block.key is not None:
            # Its KV is about to be overwritten: a hit under the old key would read other content.
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
        """
        if not isinstance(request_id, str):
            raise TypeError("request_id must be a str")
        if request_id in self.requests:
            raise ValueError(f"request {request_id!r} is already admitted")
        if len(tokens) == 0:
            raise ValueError("a prompt has at least one token")
        if keys is None:
            keys = self.keys_of(tokens, extra_keys)  # hashed once here, reused by commit
        else:
            keys = self._checked_keys(keys, len(tokens))
        encode_tokens(tokens[len(keys) * self.block_size :])  # the tail is not hashed: validate it too
        hits = self.lookup(keys, len(tokens))
        num_new = -(-len(tokens) // self.block_size) - len(hits)
        # TODO 3 (s03.admit): check capacity first (raise PoolFullError, changing nothing), then take
        # the hits (ref_count += 1; a hit with ref_count 0 leaves the free queue) and allocate
        # `num_new` fresh blocks. `blocks` = hits followed by the fresh blocks.
        # Hint: free cached hits are in self.free_queue too, so only len(self.free_queue) minus
        # their number can be allocated; take the hits out *before* allocating.
        ### BEGIN SOLUTION
        revived = sum(1 for block in hits if block.ref_count == 0)
        if num_new > len(self.free_queue) - revived:
            raise PoolFullError(
                f"request {request_id!r} needs {num_new} fresh blocks; {len(self.free_queue)} are free, "
                f"{revived} of them are its own cached hits"
            )
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
        """
        state = self.requests[request_id]
        if state.committed:
            raise ValueError(f"request {request_id!r} is already committed")
        # TODO 4 (s03.commit): for each full block after the hits, register it under its key
        # (block.key and self.cached) unless that key is already cached.
        # Hint: the keys are in state.keys (one per full block), the blocks in state.blocks;
        # start at state.hit_blocks.
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
        """
        state = self.requests[request_id]
        # TODO 5 (s03.release): for each block of the request, ref_count -= 1; a block whose
        # ref_count reaches 0 goes to the free queue (keeping its key).
        # Hint: a block shared with another live request must stay in use.
        ### BEGIN SOLUTION
        for block in state.blocks:
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)
        ### END SOLUTION
        del self.requests[request_id]

    # -- invariants -------------------------------------------------------------------------------
    def violations(self) -> list[str]:
        """Every broken invariant, in words (an empty list when the pool is consistent)."""
        problems: list[str] = []
        holders = [0] * self.num_blocks
        for rid, state in self.requests.items():
            ids = [b.block_id for b in state.blocks]
            if len(set(ids)) != len(ids):
                problems.append(f"request {rid!r} holds a block twice: {ids}")
            for b in state.blocks:
                holders[b.block_id] += 1
        for b in self.blocks:
            if b.ref_count < 0:
                problems.append(f"block {b.block_id} has a negative ref_count {b.ref_count}")
            if b.ref_count != holders[b.block_id]:
                problems.append(f"block {b.block_id}: ref_count {b.ref_count} but {holders[b.block_id]} "
                                "live block tables hold it")
            if b.key is not None and self.cached.get(b.key) is not b:
                problems.append(f"block {b.block_id} has a key that does not map back to it")
        for key, b in self.cached.items():
            if b.key != key:
                problems.append(f"cached key {key.hex()[:8]} points at block {b.block_id}, whose key differs")
        in_use = self.num_in_use
        if len(self.free_queue) + in_use != self.num_blocks:
            problems.append(f"free ({len(self.free_queue)}) + in use ({in_use}) != total ({self.num_blocks})")
        if hasattr(self.free_queue, "__iter__"):  # the protocol does not promise iteration
            free = list(self.free_queue)  # type: ignore[call-overload]
            if len({id(b) for b in free}) != len(free):
                problems.append("a block is in the free queue twice")
            for b in free:
                if b.ref_count != 0:
                    problems.append(f"block {b.block_id} is in the free queue with ref_count {b.ref_count}")
        return problems

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` listing every broken invariant."""
        problems = self.violations()
        if problems:
            raise AssertionError("block pool invariants broken:\n  " + "\n  ".join(problems))

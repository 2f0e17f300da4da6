"""Weak block keys, the collisions they allow, and the two fixes (given code for stage 8).

Stage 2's keys are 256-bit SHA-256 digests chained over the prompt, so two different prefixes
share a key only by a collision nobody can find. This module shortens them on purpose:
:func:`weak_chain_keys` keeps the top ``bits`` bits of each chained key (the next key digests the
*truncated* one, so the whole chain is ``bits`` wide). With 16 bits, a birthday search finds two
different first blocks with the same key after about 320 tries, and a block pool keyed that way
serves one prompt's KV to another:

- :class:`WeakKeyPool` -- stage 3's :class:`BlockPool` with truncated keys (``key_bits=None``:
  full SHA-256, i.e. stage 3's pool unchanged);
- :class:`TokenCheckedPool` -- the same, but a hit counts only if the cached block holds the
  request's tokens *after the same verified parent block*: a collision becomes a miss;
- :func:`key_costs` / :func:`verification_cost` -- what SHA-256 keys and token checks cost.

:mod:`workbook.collision_demo` runs two colliding prompts through stage 6's engine on these
pools. Nothing here imports stage 8's reference: the search itself (stage 8's TODO) is passed in,
and nothing here needs torch.
"""

from __future__ import annotations

import itertools
import math
import random
import time
import timeit
from collections.abc import Callable, Iterable, Iterator, Sequence

from autograder.i18n import tr
from workbook.block_hash import ROOT_SEED, hash_block, split_blocks
from workbook.block_pool import Admission, Block, BlockPool
from workbook.eviction import LRUFreeQueue

Block0 = tuple[int, ...]


# -- truncated keys ---------------------------------------------------------------------------------
def truncate_key(key: bytes, bits: int) -> bytes:
    """The top ``bits`` bits of ``key`` (1 <= bits <= 8 * len(key)), as ``ceil(bits / 8)`` bytes.

    The unused low bits of the last byte are zero, so two keys collide exactly when their top
    ``bits`` bits agree.
    """
    if not isinstance(bits, int) or isinstance(bits, bool) or not 1 <= bits <= 8 * len(key):
        raise ValueError(tr(f"bits must be an int in 1..{8 * len(key)}, got {bits!r}",
                            f"bits 必须是 1..{8 * len(key)} 之间的整数，实际是 {bits!r}"))
    top = int.from_bytes(key, "big") >> (8 * len(key) - bits)
    nbytes = (bits + 7) // 8
    return (top << (8 * nbytes - bits)).to_bytes(nbytes, "big")


def weak_chain_keys(tokens: Sequence[int], block_size: int, bits: int | None,
                    extra_keys: Sequence[tuple[str, str]] | None = None, *,
                    root_seed: bytes = ROOT_SEED) -> list[bytes]:
    """Stage 2's chained keys, each truncated to ``bits`` bits before it becomes the next parent.

    ``bits=None`` gives stage 2's full 256-bit keys (the same as ``chain_keys``).
    """
    keys: list[bytes] = []
    parent: bytes | None = None
    for block in split_blocks(tokens, block_size):
        key = hash_block(parent, block, extra_keys, root_seed=root_seed)
        parent = key if bits is None else truncate_key(key, bits)
        keys.append(parent)
    return keys


def first_block_key(bits: int, *, root_seed: bytes = ROOT_SEED) -> Callable[[Sequence[int]], bytes]:
    """``key_of(block)``: the truncated key of ``block`` as the *first* block of a prompt.

    Two first blocks with equal ``key_of`` make every later block collide too, as long as the
    later tokens agree: a chained key sees its parent only through the (colliding) parent key.

    [zh]
    ``key_of(block)``：把 ``block`` 当作提示词*第一*块时的截短 key。

    两个第一块的 ``key_of`` 相同时，只要后面的 token 一致，后面的每一块也都会碰撞：链式 key 只能通过（已经
    碰撞的）父块 key 看到它的父块。
    """
    truncate_key(b"\0" * 32, bits)  # validate now, not at the first call

    def key_of(block: Sequence[int]) -> bytes:
        return truncate_key(hash_block(None, block, root_seed=root_seed), bits)

    return key_of


def random_blocks(seed: int, block_size: int, vocab: int = 512) -> Iterator[Block0]:
    """An endless, seeded stream of random blocks (tuples of ``block_size`` token ids < ``vocab``).

    [zh]
    无穷无尽、由种子固定的随机块流（每块是 ``block_size`` 个小于 ``vocab`` 的 token id 组成的元组）。
    """
    rng = random.Random(f"blocks/{seed}")
    while True:
        yield tuple(rng.randrange(vocab) for _ in range(block_size))


def second_preimage_search(key_of: Callable[[Sequence[int]], bytes], target: Sequence[int],
                           candidates: Iterable[Block0]) -> tuple[Block0 | None, int]:
    """Search for a block other than ``target`` with ``target``'s key: ``(block or None, tries)``.

    This is what an attacker needs to hit *one given* victim block: about ``2**bits`` tries,
    against ``sqrt(pi/2 * 2**bits)`` for a birthday search, which may collide any two blocks.
    """
    goal, target, tries = key_of(target), tuple(target), 0
    for block in candidates:
        tries += 1
        if key_of(block) == goal and tuple(block) != target:
            return tuple(block), tries
    return None, tries


def expected_birthday_tries(bits: int) -> float:
    """Mean number of random draws until two share one of ``2**bits`` keys: about sqrt(pi/2 * 2**bits).

    [zh]
    随机抽取直到有两次落在 ``2**bits`` 个 key 中同一个上时，平均要抽的次数：约为 sqrt(pi/2 * 2**bits)。
    """
    return math.sqrt(math.pi / 2 * 2.0 ** bits)


# -- pools ------------------------------------------------------------------------------------------
class WeakKeyPool(BlockPool):
    """Stage 3's :class:`BlockPool` keyed by :func:`weak_chain_keys` with ``key_bits`` bits.

    Invariants: stage 3's, with every key ``ceil(key_bits / 8)`` bytes long (32 with
    ``key_bits=None``, where this pool behaves exactly like stage 3's). A hit is decided by key
    alone, so with few bits a hit may hold another prompt's KV: that is the flaw on show.

    [zh]
    以 :func:`weak_chain_keys`（``key_bits`` 位）作 key 的第 3 阶段 :class:`BlockPool`。

    不变量：与第 3 阶段相同，只是每个 key 长 ``ceil(key_bits / 8)`` 字节（``key_bits=None`` 时为 32 字节，这时
    这个块池的行为与第 3 阶段完全一样）。是否命中只看 key，所以位数很少时，一次命中拿到的可能是另一个提示词的
    KV：这正是要展示的缺陷。
    """

    def __init__(self, num_blocks: int, block_size: int, *, key_bits: int | None = 16, **kwargs) -> None:
        if key_bits is not None:
            truncate_key(b"\0" * 32, key_bits)  # validates the width
        super().__init__(num_blocks, block_size, **kwargs)
        self.key_bits = key_bits

    def keys_of(self, tokens: Sequence[int], extra_keys: Sequence[tuple[str, str]] | None = None) -> list[bytes]:
        return weak_chain_keys(tokens, self.block_size, self.key_bits, extra_keys, root_seed=self.root_seed)


class TokenCheckedPool(WeakKeyPool):
    """A :class:`WeakKeyPool` whose hits are verified: a cached block counts only if it holds the
    request's tokens for that block *and* its recorded parent is the request's previous (verified)
    hit block, with the same allocation generation. So a verified run of hits holds exactly the
    request's prefix, whatever the keys do; the first failed check ends the run (a miss).

    Invariants (on top of :class:`WeakKeyPool`'s): for every block with a key, ``tokens_of[id]``
    is the block's content and ``parent_of[id]`` is ``(parent block id, parent generation)``
    (``None`` for a first block), recorded by the :meth:`commit` that registered it;
    ``generation[id]`` counts how often the block was handed out for new content, so a parent that
    was evicted and reused no longer matches. ``rejected`` counts hits refused by the check.

    Cost: ``block_size`` token ids (plus two ints) per cached block, and one tuple comparison per
    hit block -- see :func:`verification_cost`.

    [zh]
    命中要经过核验的 :class:`WeakKeyPool`：一个已缓存的块只有在它存着请求这一块的 token，*并且*它记录的父块
    正是请求上一个（已核验的）命中块、分配代数也相同时，才算命中。所以一段核验过的连续命中恰好就是请求的前缀，
    不管 key 怎样；第一次核验失败就结束这段命中（算作未命中）。

    不变量（在 :class:`WeakKeyPool` 的不变量之上）：对每个有 key 的块，``tokens_of[id]`` 是这个块的内容，
    ``parent_of[id]`` 是 ``(父块 id, 父块代数)``（第一块为 ``None``），都由登记它的那次 :meth:`commit` 记录；
    ``generation[id]`` 记录这个块被重新分配给新内容的次数，所以一个被淘汰又重用的父块不再匹配。``rejected``
    统计被核验拒绝的命中。

    代价：每个已缓存的块多存 ``block_size`` 个 token id（外加两个整数），每个命中块多做一次元组比较——见
    :func:`verification_cost`。
    """

    def __init__(self, num_blocks: int, block_size: int, *, key_bits: int | None = 16, **kwargs) -> None:
        super().__init__(num_blocks, block_size, key_bits=key_bits, **kwargs)
        self.tokens_of: dict[int, Block0] = {}
        self.parent_of: dict[int, tuple[int, int] | None] = {}
        self.generation: list[int] = [0] * num_blocks
        self.rejected = 0
        self._admitting: list[Block0] | None = None  # the blocks of the prompt being admitted
        self._blocks_of: dict[str, list[Block0]] = {}

    def admit(self, request_id: str, tokens: Sequence[int],
              extra_keys: Sequence[tuple[str, str]] | None = None) -> Admission:
        # lookup() has no tokens in its signature: hand them over for the duration of this call.
        blocks = split_blocks(tokens, self.block_size) if len(tokens) else []
        self._admitting = blocks
        try:
            admission = super().admit(request_id, tokens, extra_keys)
        finally:
            self._admitting = None
        self._blocks_of[request_id] = blocks
        return admission

    def lookup(self, keys: Sequence[bytes], num_tokens: int) -> list[Block]:
        hits = super().lookup(keys, num_tokens)
        if self._admitting is None:  # called from outside an admission: keys only, no tokens to check
            return hits
        for i, block in enumerate(hits):
            parent = None if i == 0 else (hits[i - 1].block_id, self.generation[hits[i - 1].block_id])
            if self.tokens_of.get(block.block_id) != self._admitting[i] or self.parent_of.get(block.block_id, -1) != parent:
                self.rejected += 1
                return hits[:i]
        return hits

    def allocate_block(self) -> Block:
        block = super().allocate_block()
        self.generation[block.block_id] += 1
        self.tokens_of.pop(block.block_id, None)
        self.parent_of.pop(block.block_id, None)
        return block

    def commit(self, request_id: str) -> None:
        state = self.requests[request_id]
        super().commit(request_id)
        blocks = self._blocks_of[request_id]
        for i in range(state.hit_blocks, len(state.keys)):
            block = state.blocks[i]
            if self.cached.get(state.keys[i]) is block:  # registered by this commit
                prev = state.blocks[i - 1] if i else None
                self.tokens_of[block.block_id] = blocks[i]
                self.parent_of[block.block_id] = None if prev is None else (prev.block_id, self.generation[prev.block_id])

    def release(self, request_id: str) -> None:
        super().release(request_id)
        self._blocks_of.pop(request_id, None)


# -- costs ------------------------------------------------------------------------------------------
def _best_seconds(fn: Callable[[], object], number: int, repeat: int) -> float:
    # Single-threaded Python work: timed in this process's CPU time, which a neighbour's load does
    # not inflate; timeit disables the garbage collector while timing; the minimum of the repeats
    # is the least disturbed run.
    return min(timeit.Timer(fn, timer=time.process_time).repeat(number=number, repeat=repeat)) / number


def key_costs(num_blocks: int = 256, block_size: int = 16, *, repeat: int = 5) -> dict[str, float]:
    """Nanoseconds (CPU) to key one block, over ``num_blocks`` random blocks with a 32-byte parent:

    - ``sha256``: stage 2's ``hash_block``;
    - ``sha256_truncated_16``: the same cut to 16 bits -- truncating saves no time (it costs a
      little), only memory: 2 instead of 32 bytes per key;
    - ``python_hash``: Python's ``hash((parent, tokens))``, the kind of key vLLM used before
      CVE-2025-25183 -- 64 bits, fast, not collision resistant, with a predictable root.

    [zh]
    为一个块算 key 所需的纳秒数（CPU），在 ``num_blocks`` 个带 32 字节父 key 的随机块上测量：

    - ``sha256``：第 2 阶段的 ``hash_block``；
    - ``sha256_truncated_16``：同样的哈希截短到 16 位——截短不省时间（反而稍微多花一点），只省内存：每个 key
      2 字节而不是 32 字节；
    - ``python_hash``：Python 的 ``hash((parent, tokens))``，就是 vLLM 在 CVE-2025-25183 之前用的那种 key——
      64 位、快、不抗碰撞，根节点的值还可以预测。
    """
    rng = random.Random(0)
    blocks = [tuple(rng.randrange(512) for _ in range(block_size)) for _ in range(num_blocks)]
    parent = bytes(32)
    per = num_blocks / 1e9
    return {
        "sha256": _best_seconds(lambda: [hash_block(parent, b) for b in blocks], 5, repeat) / per,
        "sha256_truncated_16": _best_seconds(lambda: [truncate_key(hash_block(parent, b), 16) for b in blocks],
                                             5, repeat) / per,
        "python_hash": _best_seconds(lambda: [hash((parent, b)) for b in blocks], 5, repeat) / per,
    }


def verification_cost(num_prompts: int = 64, blocks_per_prompt: int = 16, block_size: int = 16, *,
                      repeat: int = 5, key_bits: int | None = None) -> dict[str, float]:
    """Cost of checking tokens on a hit: microseconds per fully cached admission (admit + release
    of a prompt whose blocks all hit), without and with the check, and the bytes it stores per
    block. Keys are full SHA-256 unless ``key_bits``; both pools hash the same way, so the
    difference is the check alone.

    [zh]
    命中时核对 token 的代价：每次完全命中的准入（对所有块都命中的提示词做 admit + release）所需的微秒数，分别
    在不核对和核对时测量，以及核对为每个块多存的字节数。除非给出 ``key_bits``，key 都是完整的 SHA-256；两个
    块池的哈希方式相同，所以差别只来自核对本身。
    """
    rng = random.Random(1)
    n = blocks_per_prompt * block_size + 1  # +1: every full block can hit (one token is recomputed)
    prompts = [[rng.randrange(512) for _ in range(n)] for _ in range(num_prompts)]
    pools = {}
    for name, cls in (("plain", WeakKeyPool), ("checked", TokenCheckedPool)):
        # LRU hands out never-cached blocks first, so the prompts' tails never evict a cached block.
        pool = cls(num_prompts * (blocks_per_prompt + 1) + 1, block_size, key_bits=key_bits,
                   free_queue=LRUFreeQueue())
        for i, p in enumerate(prompts):
            pool.admit(f"warm{i}", p)
            pool.commit(f"warm{i}")
            pool.release(f"warm{i}")
        pools[name] = pool
    counter = itertools.count()

    def run(pool: BlockPool) -> None:
        for p in prompts:
            rid = f"r{next(counter)}"
            if pool.admit(rid, p).hit_blocks != blocks_per_prompt:
                raise AssertionError(tr("a timed admission missed: the measurement would not be of hits",
                                        "有一次计时的接纳没有命中：这次测量测的就不是命中了"))
            pool.release(rid)

    out = {name: _best_seconds(lambda pool=pool: run(pool), 3, repeat) / num_prompts * 1e6 for name, pool in pools.items()}
    out["check_us_per_hit_block"] = (out["checked"] - out["plain"]) / blocks_per_prompt
    out["stored_bytes_per_block"] = 4 * block_size + 16  # token ids as int32, parent id + generation
    return out


"""Stage 6 reference: prefill that reuses cached KV blocks, on a real (small) model.

Stage 3's :class:`BlockPool` decides *which* physical blocks a prompt uses and which of them already
hold its prefix. This stage makes those blocks real: a :class:`kernels.kv_pool.KVPool` stores K and
V per layer in ``[num_blocks, block_size, n_kv_heads, head_dim]`` tensors, and a prefill computes
only the tokens after the hit:

1. the new tokens sit at absolute positions ``hit .. n-1`` (RoPE must see those, not ``0 ..``);
2. token at position ``p`` lives in slot ``block_table[p // B] * B + p % B`` of the pool;
3. each layer writes the new tokens' K/V into their slots;
4. the new queries attend to cached + new keys read through the block table, causally, with the
   mask shifted by the hit length;
5. ``prefill`` ties it together and returns the last token's logits, which must equal a full
   prefill's.

One sequence at a time; the model is :class:`kernels.model.DecoderLM` (no batch dimension).
``full_prefill`` / ``generate_full`` (the no-cache ground truth) come from :mod:`kernels.prefill`.
The engine's default block manager is stage 4's :class:`~solutions.s04_eviction.EvictionPool`, so
the cached blocks it gives up first are the ones stage 4 chose: blocks without a key before cached
ones, least recently used first, and a finished prompt's tail before its prefix.

Every function that creates tensors creates them on the device of its inputs (``device``, the
positions', the queries', the model's): the same code then runs on a CPU and a GPU. The checks probe
that on PyTorch's ``meta`` device, which has shapes and devices but no values, so the validations
below skip value checks on it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.i18n import tr
from kernels.kv_pool import KVPool
from kernels.model import DecoderLM
from kernels.prefill import PagedAttention, full_prefill, generate_full, pool_attention  # noqa: F401 (re-exported)
from workbook.block_pool import BlockPool
from workbook.eviction import EvictionPool


def suffix_positions(hit_tokens: int, num_tokens: int, device: str | torch.device | None = None) -> Tensor:
    """Absolute positions (int64, on ``device``) of the tokens a cached prefill computes:
    ``hit_tokens .. num_tokens-1``.

    Requires ``0 <= hit_tokens < num_tokens``: at least one token is computed.

    [zh]
    带缓存的 prefill 要计算的那些 token 的绝对位置（int64，放在 ``device`` 上）：
    ``hit_tokens .. num_tokens-1``。

    要求 ``0 <= hit_tokens < num_tokens``：至少计算一个 token。
    """
    if not 0 <= hit_tokens < num_tokens:
        raise ValueError(tr(f"need 0 <= hit_tokens < num_tokens, got {hit_tokens} and {num_tokens}",
                            f"要求 0 <= hit_tokens < num_tokens，实际是 {hit_tokens} 和 {num_tokens}"))
    # TODO 1 (s06.suffix_positions)
    ### BEGIN SOLUTION
    positions = torch.arange(hit_tokens, num_tokens, dtype=torch.long, device=device)
    ### END SOLUTION
    return positions


def slot_mapping(block_table: Sequence[int] | Tensor, positions: Tensor, block_size: int) -> Tensor:
    """Pool slot (int64, on the positions' device) of each position: block ``block_table[p // block_size]``,
    row ``p % block_size``.

    The table may list any blocks in any order (a shuffled, non-contiguous table is normal).
    ``ValueError`` if a position is negative or beyond what the table covers.

    [zh]
    每个位置对应的 KV 池槽位（int64，和 positions 在同一设备上）：物理块 ``block_table[p // block_size]``
    里的第 ``p % block_size`` 行。

    块表里的块可以是任意块、任意顺序（打乱的、不连续的块表是常态）。
    位置为负或超出块表覆盖的范围时抛出 ``ValueError``。
    """
    table = torch.as_tensor(block_table, dtype=torch.long, device=positions.device)
    if table.dim() != 1 or positions.dim() != 1:
        raise ValueError(tr("block_table and positions must be 1-D", "block_table 和 positions 都必须是一维的"))
    # A meta tensor has no values to check (the device probes run on one).
    # zh: meta 张量没有数值可查（设备检查就在 meta 设备上运行）。
    if positions.numel() and positions.device.type != "meta" and (
            int(positions.min()) < 0 or int(positions.max()) >= table.numel() * block_size):
        raise ValueError(tr(f"positions must lie in [0, {table.numel() * block_size}) for this block table",
                            f"对这个块表，positions 必须落在 [0, {table.numel() * block_size}) 内"))
    # TODO 2 (s06.slot_mapping)
    ### BEGIN SOLUTION
    slots = table[positions // block_size] * block_size + positions % block_size
    ### END SOLUTION
    return slots


def write_kv(pool: KVPool, layer: int, slots: Tensor, k: Tensor, v: Tensor) -> int:
    """Store ``k[i]`` and ``v[i]`` (``[T, n_kv_heads, head_dim]``) of layer ``layer`` at pool slot ``slots[i]``.

    Other slots and other layers are untouched. Validates everything before it writes anything;
    returns ``T``.

    [zh]
    把第 ``layer`` 层的 ``k[i]`` 和 ``v[i]``（形状 ``[T, n_kv_heads, head_dim]``）写到 KV 池的槽位 ``slots[i]``。

    其他槽位、其他层都不变。写入之前先检查全部参数；返回 ``T``。
    """
    expected = (slots.numel(), pool.n_kv_heads, pool.head_dim)
    if slots.dim() != 1 or tuple(k.shape) != expected or tuple(v.shape) != expected:
        raise ValueError(tr(f"k and v must have shape {expected}, got {tuple(k.shape)} and {tuple(v.shape)}",
                            f"k 和 v 的形状必须是 {expected}，实际是 {tuple(k.shape)} 和 {tuple(v.shape)}"))
    if not 0 <= layer < pool.num_layers:
        raise ValueError(tr(f"layer {layer} out of range", f"层号 {layer} 超出范围"))
    # A meta tensor has no values to check (the device probes run on one).
    # zh: meta 张量没有数值可查（设备检查就在 meta 设备上运行）。
    if slots.numel() and slots.device.type != "meta" and (int(slots.min()) < 0 or int(slots.max()) >= pool.num_slots):
        raise ValueError(tr("slot out of range", "槽位超出范围"))
    # TODO 3 (s06.write_kv)
    ### BEGIN SOLUTION
    pool.flat_k(layer)[slots] = k
    pool.flat_v(layer)[slots] = v
    ### END SOLUTION
    return slots.numel()


def paged_attention(q: Tensor, pool: KVPool, layer: int, block_table: Sequence[int] | Tensor, offset: int) -> Tensor:
    """Causal attention of new queries over cached + new keys read from the pool through the table.

    ``q`` is ``[T, Hq, D]`` for the tokens at positions ``offset .. offset+T-1`` (RoPE applied).
    The K/V of all positions ``0 .. offset+T-1`` must already be in the pool (the new ones written
    by :func:`write_kv`). Query ``i`` sees keys ``0 .. offset+i``. Query head ``h`` reads kv head
    ``h // (Hq // Hkv)`` (grouped-query attention). Returns ``[T, Hq, D]`` on the device of ``q``.

    [zh]
    新 query 对缓存的 key 和新 key 做因果 attention，K/V 通过块表从 KV 池里读出。

    ``q`` 的形状是 ``[T, Hq, D]``，对应位置 ``offset .. offset+T-1`` 上的 token（已经做过 RoPE）。
    位置 ``0 .. offset+T-1`` 的 K/V 必须都已经在 KV 池里（新 token 的那部分由 :func:`write_kv` 写入）。
    第 ``i`` 个 query 能看到 key ``0 .. offset+i``。第 ``h`` 个 query 头读第 ``h // (Hq // Hkv)`` 个
    kv 头（分组查询注意力，GQA）。返回 ``[T, Hq, D]``，和 ``q`` 在同一设备上。
    """
    t, hq, _ = q.shape
    if offset < 0 or hq % pool.n_kv_heads:
        raise ValueError(tr("offset must be >= 0 and Hq a multiple of the pool's kv heads",
                            "offset 必须 >= 0，且 Hq 必须是 KV 池 kv 头数的整数倍"))
    group = hq // pool.n_kv_heads
    # TODO 4 (s06.paged_attention)
    ### BEGIN SOLUTION
    n = offset + t
    table = torch.as_tensor(block_table, dtype=torch.long, device=q.device)
    key_pos = torch.arange(n, device=q.device)
    slots = table[key_pos // pool.block_size] * pool.block_size + key_pos % pool.block_size
    k = pool.flat_k(layer)[slots].repeat_interleave(group, dim=1)
    v = pool.flat_v(layer)[slots].repeat_interleave(group, dim=1)
    query_pos = torch.arange(offset, n, device=q.device)
    mask = key_pos[None, :] <= query_pos[:, None]
    # [None] adds the batch dimension: SDPA's fused kernels take 4-D input only.
    out = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None],
                                         attn_mask=mask)[0].transpose(0, 1)
    ### END SOLUTION
    return out


class PagedPrefiller:
    """A model, a paged K/V pool and a block manager, prefilling one prompt at a time.

    Invariants: ``pool`` has ``blocks.num_blocks`` blocks of ``blocks.block_size`` tokens for every
    layer of ``model``, on the model's device and dtype; a block's K/V rows were written by the
    prefill that committed it, so a block that ``blocks`` reports as a hit holds exactly the K/V a
    full prefill of that prefix would compute (up to float rounding).
    ``blocks`` is stage 4's :class:`EvictionPool` unless another stage-3 :class:`BlockPool` is given:
    keyless blocks are reused before cached ones, cached ones least recently used first, and a
    finished request frees its tail before its prefix, so the cache keeps whole prefixes.
    ``attention`` is :func:`paged_attention` unless a faster one with its signature is given
    (e.g. ``pool_attention(kernel)`` for a :mod:`kernels` kernel).

    [zh]
    一个模型、一个分页的 K/V KV 池和一个块管理器，每次对一个提示词做 prefill。

    不变量：``KV 池`` 为 ``model`` 的每一层准备了 ``blocks.num_blocks`` 个块，每块 ``blocks.block_size``
    个 token，和模型在同一设备、同一 dtype；一个块的 K/V 是提交（commit）它的那次 prefill 写进去的，
    所以 ``blocks`` 报告命中的块，装的正是对这段前缀做完整 prefill 会算出的 K/V（只差浮点舍入）。
    没有传入别的第 3 阶段 :class:`BlockPool` 时，``blocks`` 是第 4 阶段的 :class:`EvictionPool`：
    没有 key 的块先于有缓存内容的块被复用，有缓存内容的块按 LRU 淘汰，请求结束时先释放尾块、后释放前缀，
    所以缓存里留下的总是完整的前缀。
    ``attention`` 默认是 :func:`paged_attention`，也可以传入签名相同的更快实现
    （例如对 :mod:`kernels` 里的 kernel 用 ``pool_attention(kernel)`` 包一层）。
    """

    def __init__(self, model: DecoderLM, num_blocks: int, block_size: int, *,
                 blocks: BlockPool | None = None, attention: PagedAttention | None = None) -> None:
        param = next(model.parameters())
        # Inference only: no autograd graph, no memory for gradients.
        # zh: 只做推理：不建自动求导图，也不为梯度占内存。
        self.model = model.requires_grad_(False)
        self.device = param.device
        # Stage 4's eviction order unless the caller brings its own block manager.
        # zh: 调用方不自带块管理器时，用第 4 阶段的淘汰顺序。
        self.blocks = blocks if blocks is not None else EvictionPool(num_blocks, block_size)
        if (self.blocks.num_blocks, self.blocks.block_size) != (num_blocks, block_size):
            raise ValueError(tr("the block pool's shape differs from num_blocks/block_size",
                                "块池的形状与 num_blocks/block_size 不一致"))
        self.pool = KVPool.for_model(model.config, num_blocks, block_size, dtype=param.dtype, device=param.device)
        self.attention = attention if attention is not None else paged_attention
        self._ids = itertools.count()

    @property
    def block_size(self) -> int:
        return self.blocks.block_size

    def _check_prompt(self, prompt: Sequence[int]) -> list[int]:
        tokens = list(prompt)
        vocab = self.model.config.vocab_size
        if not tokens:
            raise ValueError(tr("a prompt has at least one token", "提示词至少要有一个 token"))
        if any(type(t) is not int or not 0 <= t < vocab for t in tokens):
            raise ValueError(tr(f"tokens must be ints in [0, {vocab})", f"token 必须是 [0, {vocab}) 内的整数"))
        return tokens

    def prefill(self, prompt: Sequence[int], *, request_id: str | None = None,
                keep: bool = False) -> tuple[Tensor, dict[str, int]]:
        """Prefill ``prompt`` reusing cached blocks; returns (last token's logits ``[vocab]``, ledger).

        The ledger is ``{"hit_tokens": h, "computed_tokens": len(prompt) - h}`` where
        ``h = min(admission.hit_tokens, len(prompt) - 1)``: at least the last token is computed, even
        with a block manager that reports the whole prompt as cached. Afterwards the prompt's full
        blocks are cached for later requests. With ``keep=False`` (default) the request is released
        at the end, so its blocks become free but stay cached until reused; with ``keep=True`` it
        holds them until ``self.blocks.release(request_id)``. Tensors are created on ``self.device``.

        [zh]
        复用已缓存的块对 ``提示词`` 做 prefill；返回（最后一个 token 的 logits ``[vocab]``，账目 ledger）。

        ledger 是 ``{"hit_tokens": h, "computed_tokens": len(prompt) - h}``，其中
        ``h = min(admission.hit_tokens, len(提示词) - 1)``：即使块管理器报告整个提示词都已缓存，
        也至少计算最后一个 token。完成后，这个提示词的满块会留在缓存里供后续请求复用。
        ``keep=False``（默认）时请求在最后被释放，它的块变为空闲、但在被复用之前仍然保留缓存内容；
        ``keep=True`` 时请求一直持有这些块，直到调用 ``self.blocks.release(request_id)``。
        新建的张量都放在 ``self.device`` 上。
        """
        tokens = self._check_prompt(prompt)
        request_id = f"req-{next(self._ids)}" if request_id is None else request_id
        # TODO 5 (s06.prefill)
        ### BEGIN SOLUTION
        admission = self.blocks.admit(request_id, tokens)
        hit = min(admission.hit_tokens, len(tokens) - 1)
        positions = suffix_positions(hit, len(tokens), device=self.device)
        table = torch.tensor(admission.block_table, dtype=torch.long, device=self.device)
        slots = slot_mapping(table, positions, self.block_size)

        def attend(layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
            write_kv(self.pool, layer, slots, k, v)
            return self.attention(q, self.pool, layer, table, hit)

        token_ids = torch.tensor(tokens[hit:], dtype=torch.long, device=self.device)
        logits = self.model(token_ids, positions, attend)
        self.blocks.commit(request_id)
        ledger = {"hit_tokens": hit, "computed_tokens": len(tokens) - hit}
        ### END SOLUTION
        if not keep:
            self.blocks.release(request_id)
        return logits, ledger

    def generate(self, prompt: Sequence[int], max_new_tokens: int) -> tuple[list[int], list[dict[str, int]]]:
        """Greedy decoding where every step is a cached prefill of the sequence so far.

        Each step re-admits prompt + generated tokens: all its full blocks hit, so only the tail
        block is recomputed. Returns the new tokens and each step's ledger.

        [zh]
        贪心解码，每一步都是对当前整个序列做一次带缓存的 prefill。

        每一步重新接纳“提示词 + 已生成的 token”：所有满块都命中，只重新计算尾块。
        返回新生成的 token 和每一步的 ledger。
        """
        seq, new, ledgers = self._check_prompt(prompt), [], []
        for _ in range(max_new_tokens):
            logits, ledger = self.prefill(seq)
            token = int(torch.argmax(logits))
            seq.append(token)
            new.append(token)
            ledgers.append(ledger)
        return new, ledgers



def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 6 (s06.quiz)
    ### BEGIN SOLUTION
    return {"q1": 12, "q2": 21, "q3": "C", "q4": "B", "q5": "B", "q6": "B"}
    ### END SOLUTION

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
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from kernels.kv_pool import KVPool
from kernels.model import DecoderLM
from kernels.prefill import PagedAttention, full_prefill, generate_full, pool_attention  # noqa: F401 (re-exported)
from solutions.s03_block_pool import BlockPool


def suffix_positions(hit_tokens: int, num_tokens: int, device: str | torch.device | None = None) -> Tensor:
    """Absolute positions (int64) of the tokens a cached prefill computes: ``hit_tokens .. num_tokens-1``.

    Requires ``0 <= hit_tokens < num_tokens``: at least one token is computed.
    """
    if not 0 <= hit_tokens < num_tokens:
        raise ValueError(f"need 0 <= hit_tokens < num_tokens, got {hit_tokens} and {num_tokens}")
    # TODO 1 (s06.suffix_positions): the positions of the uncached tokens, as an int64 tensor on
    # `device`. They continue after the cached prefix: RoPE rotates each token by its absolute
    # position, and the cached keys were rotated by theirs.
    # Hint: positions = torch.arange(start, end, dtype=torch.long, device=device).
    ### BEGIN SOLUTION
    positions = torch.arange(hit_tokens, num_tokens, dtype=torch.long, device=device)
    ### END SOLUTION
    return positions


def slot_mapping(block_table: Sequence[int] | Tensor, positions: Tensor, block_size: int) -> Tensor:
    """Pool slot (int64) of each position: block ``block_table[p // block_size]``, row ``p % block_size``.

    The table may list any blocks in any order (a shuffled, non-contiguous table is normal).
    ``ValueError`` if a position is negative or beyond what the table covers.
    """
    table = torch.as_tensor(block_table, dtype=torch.long, device=positions.device)
    if table.dim() != 1 or positions.dim() != 1:
        raise ValueError("block_table and positions must be 1-D")
    if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= table.numel() * block_size):
        raise ValueError(f"positions must lie in [0, {table.numel() * block_size}) for this block table")
    # TODO 2 (s06.slot_mapping): the flat slot of each position. Block number p // block_size of
    # the *request* is physical block table[p // block_size] of the *pool*; the row inside it is
    # p % block_size; a flat slot is block * block_size + row.
    # Hint: slots = ...; index the table with a tensor of block numbers, no Python loop needed.
    ### BEGIN SOLUTION
    slots = table[positions // block_size] * block_size + positions % block_size
    ### END SOLUTION
    return slots


def write_kv(pool: KVPool, layer: int, slots: Tensor, k: Tensor, v: Tensor) -> int:
    """Store ``k[i]`` and ``v[i]`` (``[T, n_kv_heads, head_dim]``) of layer ``layer`` at pool slot ``slots[i]``.

    Other slots are untouched. Validates everything before it writes anything; returns ``T``.
    """
    expected = (slots.numel(), pool.n_kv_heads, pool.head_dim)
    if slots.dim() != 1 or tuple(k.shape) != expected or tuple(v.shape) != expected:
        raise ValueError(f"k and v must have shape {expected}, got {tuple(k.shape)} and {tuple(v.shape)}")
    if not 0 <= layer < pool.num_layers:
        raise ValueError(f"layer {layer} out of range")
    if slots.numel() and (int(slots.min()) < 0 or int(slots.max()) >= pool.num_slots):
        raise ValueError("slot out of range")
    # TODO 3 (s06.write_kv): write the new K and V rows into layer `layer` of the pool, at `slots`.
    # Hint: pool.flat_k(layer) is a [num_slots, n_kv_heads, head_dim] *view* of the pool, so
    # assigning into it by index writes the pool itself.
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
    ``h // (Hq // Hkv)`` (grouped-query attention). Returns ``[T, Hq, D]``.
    """
    t, hq, _ = q.shape
    if offset < 0 or hq % pool.n_kv_heads:
        raise ValueError("offset must be >= 0 and Hq a multiple of the pool's kv heads")
    group = hq // pool.n_kv_heads
    # TODO 4 (s06.paged_attention): set `out` [T, Hq, D]: gather K/V of positions 0..offset+T-1
    # through the block table (TODO 2's arithmetic; calling slot_mapping is fine), repeat each kv
    # head for its `group` query heads, and attend with a causal mask *shifted by offset*: query i
    # (absolute position offset+i) may see key j iff j <= offset + i.
    # Hint: F.scaled_dot_product_attention wants 4-D [batch, heads, tokens, dim] (3-D runs a slow
    # unfused kernel), a bool attn_mask [T, offset+T] (True = may attend); Tensor.repeat_interleave(group, dim=1).
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
    """A model, a paged K/V pool and stage 3's block pool, prefilling one prompt at a time.

    Invariants: ``pool`` has ``blocks.num_blocks`` blocks of ``blocks.block_size`` tokens for every
    layer of ``model``, on the model's device and dtype; a block's K/V rows were written by the
    prefill that committed it, so a block that ``blocks`` reports as a hit holds exactly the K/V a
    full prefill of that prefix would compute (up to float rounding).
    ``attention`` is :func:`paged_attention` unless a faster one with its signature is given
    (e.g. ``pool_attention(kernel)`` for a :mod:`kernels` kernel).
    """

    def __init__(self, model: DecoderLM, num_blocks: int, block_size: int, *,
                 blocks: BlockPool | None = None, attention: PagedAttention | None = None) -> None:
        param = next(model.parameters())
        self.model = model.requires_grad_(False)  # inference only: no autograd graph, no grad memory
        self.device = param.device
        self.blocks = blocks if blocks is not None else BlockPool(num_blocks, block_size)
        if (self.blocks.num_blocks, self.blocks.block_size) != (num_blocks, block_size):
            raise ValueError("the block pool's shape differs from num_blocks/block_size")
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
            raise ValueError("a prompt has at least one token")
        if any(type(t) is not int or not 0 <= t < vocab for t in tokens):
            raise ValueError(f"tokens must be ints in [0, {vocab})")
        return tokens

    def prefill(self, prompt: Sequence[int], *, request_id: str | None = None,
                keep: bool = False) -> tuple[Tensor, dict[str, int]]:
        """Prefill ``prompt`` reusing cached blocks; returns (last token's logits ``[vocab]``, ledger).

        The ledger is ``{"hit_tokens": h, "computed_tokens": len(prompt) - h}`` where
        ``h = min(admission.hit_tokens, len(prompt) - 1)``: at least the last token is computed, even
        with a block manager that reports the whole prompt as cached. Afterwards the prompt's full
        blocks are cached for later requests. With ``keep=False`` (default) the request is released
        at the end, so its blocks become free but stay cached until reused; with ``keep=True`` it
        holds them until ``self.blocks.release(request_id)``.
        """
        tokens = self._check_prompt(prompt)
        request_id = f"req-{next(self._ids)}" if request_id is None else request_id
        # TODO 5 (s06.prefill): admit the prompt into self.blocks; compute only the tokens after
        # hit = min(admission.hit_tokens, len(tokens) - 1) (at least the last one: its logits are
        # the point of prefill) with self.model(token_ids, positions, attend), where attend(layer,
        # q, k, v) writes the new K/V at their slots (TODOs 1-3) and returns self.attention(q,
        # self.pool, layer, block_table, hit) (TODO 4). Commit, so new full blocks hit later.
        # Hint: ledger = {"hit_tokens": ..., "computed_tokens": ...}; self.model returns last logits.
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
        """
        seq, new, ledgers = self._check_prompt(prompt), [], []
        for _ in range(max_new_tokens):
            logits, ledger = self.prefill(seq)
            token = int(torch.argmax(logits))
            seq.append(token)
            new.append(token)
            ledgers.append(ledger)
        return new, ledgers


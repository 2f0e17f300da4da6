"""Attention for prefill, in plain torch (any device).

- :func:`causal_attention`: the full-prefill baseline. It is the fastest honest way torch offers to
  attend every token to all earlier ones (``F.scaled_dot_product_attention(is_causal=True)``, which
  picks a flash kernel where one exists); a cached prefill must beat *this*, not a naive loop.
- :func:`paged_attention_torch`: queries of new tokens attend to cached + new keys that live in a
  paged pool and are found through a block table. It is the correctness reference for the Triton
  kernel and runs wherever torch runs.

Shapes (one sequence, no batch): q ``[T, Hq, D]``, k/v ``[T, Hkv, D]``, pool ``[num_blocks,
block_size, Hkv, D]``, block table ``[num_table_blocks]`` (int). ``Hq`` is a multiple of ``Hkv``
(grouped-query attention: query head ``h`` reads kv head ``h // (Hq // Hkv)``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def causal_attention(q: Tensor, k: Tensor, v: Tensor, scale: float | None = None) -> Tensor:
    """Full causal self-attention of ``T`` tokens: token ``i`` sees tokens ``0..i``. Returns ``[T, Hq, D]``."""
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
        is_causal=True, scale=scale, enable_gqa=q.shape[1] != k.shape[1],
    )
    return out.transpose(0, 1)


def _context_slots(block_table: Tensor, num_tokens: int, block_size: int) -> Tensor:
    """Flat pool slots of positions ``0..num_tokens-1`` of a sequence with this block table."""
    pos = torch.arange(num_tokens, device=block_table.device)
    return block_table.long()[pos // block_size] * block_size + pos % block_size


def paged_attention_torch(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_table: Tensor, offset: int,
                          scale: float | None = None) -> Tensor:
    """Causal attention of ``T`` new queries over ``offset + T`` keys read from a paged pool.

    Query ``i`` is the token at absolute position ``offset + i``; it sees keys at positions
    ``0..offset + i``. The keys of *all* those positions (cached prefix and the new tokens alike) must
    already be in ``k_cache``/``v_cache`` at the slots the block table gives:
    position ``p`` lives in block ``block_table[p // block_size]``, row ``p % block_size``.
    Returns ``[T, Hq, D]``.
    """
    t, hq, d = q.shape
    num_blocks, block_size, hkv, dk = k_cache.shape
    if k_cache.shape != v_cache.shape or dk != d or hq % hkv:
        raise ValueError("shape mismatch between q and the pool")
    if offset < 0:
        raise ValueError("offset must be >= 0")
    n = offset + t
    if block_table.dim() != 1 or block_table.numel() * block_size < n:
        raise ValueError(f"block table covers {block_table.numel() * block_size} tokens, need {n}")
    slots = _context_slots(block_table, n, block_size)
    k = k_cache.reshape(num_blocks * block_size, hkv, d).index_select(0, slots)
    v = v_cache.reshape(num_blocks * block_size, hkv, d).index_select(0, slots)
    # Row i may see columns 0..offset+i: the causal mask shifted right by the cached length.
    key_pos = torch.arange(n, device=q.device)
    query_pos = offset + torch.arange(t, device=q.device)
    mask = key_pos[None, :] <= query_pos[:, None]
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
        attn_mask=mask, scale=scale, enable_gqa=hq != hkv,
    )
    return out.transpose(0, 1)

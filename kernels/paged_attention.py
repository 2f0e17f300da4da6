"""Attention for prefill and decode, in plain torch (any device).

- :func:`causal_attention`: the full-prefill baseline. It is the fastest honest way torch offers to
  attend every token to all earlier ones (``F.scaled_dot_product_attention(is_causal=True)`` on 4-D
  tensors, which runs a fused flash kernel on CPU and CUDA); a cached prefill must beat *this*, not
  a naive loop.
- :func:`paged_attention_torch`: queries of new tokens attend to cached + new keys that live in a
  paged pool and are found through a block table. It is the correctness reference for the Triton
  kernel and runs wherever torch runs.
- :func:`paged_decode_attention_torch`: one new query per running request, each over its own
  context in the pool (a batch of decode steps with different lengths).

Shapes (one sequence, no batch): q ``[T, Hq, D]``, k/v ``[T, Hkv, D]``, pool ``[num_blocks,
block_size, Hkv, D]``, block table ``[num_table_blocks]`` (int). ``Hq`` is a multiple of ``Hkv``
(grouped-query attention: query head ``h`` reads kv head ``h // (Hq // Hkv)``).

Why every call adds a batch dimension: ``scaled_dot_product_attention`` runs its fused kernels only
on 4-D ``[batch, heads, tokens, dim]`` inputs. Given 3-D tensors it silently falls back to the
unfused reference ("math") kernel, which on a CPU is several times slower at 1-4k tokens and would
make the no-cache baseline look worse than it is. Grouped-query heads likewise need care on CUDA
(:func:`fused_sdpa`). ``tests/kernels/test_kernels_attention.py`` runs every call site with SDPA restricted
to its fused backends (on CPU; ``benchmarks/gpu_check.py`` does it on CUDA), so a fallback fails there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from autograder.i18n import tr

#: SDPA's fused backends: flash (CPU and CUDA), memory-efficient and cuDNN (CUDA). Everything but "math".
FUSED_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]


@contextlib.contextmanager
def fused_attention_only() -> Iterator[None]:
    """Inside, an SDPA call that cannot use a fused kernel raises ``RuntimeError`` instead of
    falling back to the slow reference kernel (for tests and the GPU check)."""
    with sdpa_kernel(FUSED_BACKENDS):
        yield


def fused_sdpa(q: Tensor, k: Tensor, v: Tensor, *, attn_mask: Tensor | None = None, is_causal: bool = False,
               scale: float | None = None) -> Tensor:
    """SDPA of 4-D ``q [B, Hq, Tq, D]``, ``k/v [B, Hkv, Tk, D]`` in a form a fused kernel accepts; ``[B, Hq, Tq, D]``.

    Grouped-query heads: torch's ``enable_gqa`` is fused on CPU (flash) but on CUDA only in the flash
    kernel, which takes neither a mask nor fp32. There, with a mask or in fp32, the kv heads are
    repeated instead, so the memory-efficient kernel runs (it takes masks and fp32).
    """
    group = q.shape[1] // k.shape[1]
    if group > 1 and q.device.type == "cuda" and (attn_mask is not None or q.dtype == torch.float32):
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        group = 1
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
                                          enable_gqa=group > 1)


def _sdpa(q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
    """SDPA of one sequence given as ``[T, H, D]`` tensors, run as a batch of one; returns ``[T, Hq, D]``."""
    out = fused_sdpa(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], **kwargs)
    return out[0].transpose(0, 1)


def causal_attention(q: Tensor, k: Tensor, v: Tensor, scale: float | None = None) -> Tensor:
    """Full causal self-attention of ``T`` tokens: token ``i`` sees tokens ``0..i``. Returns ``[T, Hq, D]``."""
    return _sdpa(q, k, v, is_causal=True, scale=scale)


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
        raise ValueError(tr("shape mismatch between q and the pool", "q 与 KV 池的形状不匹配"))
    if offset < 0:
        raise ValueError(tr("offset must be >= 0", "offset 必须 >= 0"))
    n = offset + t
    if block_table.dim() != 1 or block_table.numel() * block_size < n:
        raise ValueError(tr(f"block table covers {block_table.numel() * block_size} tokens, need {n}",
                            f"块表只覆盖 {block_table.numel() * block_size} 个 token，需要 {n} 个"))
    slots = _context_slots(block_table, n, block_size)
    k = k_cache.reshape(num_blocks * block_size, hkv, d).index_select(0, slots)
    v = v_cache.reshape(num_blocks * block_size, hkv, d).index_select(0, slots)
    if offset == 0:
        # Nothing cached: plain causal attention, which lets the kernel skip the masked half.
        return _sdpa(q, k, v, is_causal=True, scale=scale)
    # Row i may see columns 0..offset+i: the causal mask shifted right by the cached length.
    key_pos = torch.arange(n, device=q.device)
    query_pos = offset + torch.arange(t, device=q.device)
    mask = key_pos[None, :] <= query_pos[:, None]
    return _sdpa(q, k, v, attn_mask=mask, scale=scale)


def decode_slots(block_tables: Tensor, positions: Tensor, block_size: int) -> Tensor:
    """Pool slot of request ``r``'s token at ``positions[r]``, through row ``r`` of ``block_tables`` ``[R, n]``."""
    rows = torch.arange(block_tables.shape[0], device=block_tables.device)
    return block_tables.long()[rows, positions // block_size] * block_size + positions % block_size


def paged_decode_attention_torch(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_tables: Tensor,
                                 context_lens: Tensor, scale: float | None = None) -> Tensor:
    """One decode step of ``R`` requests: query ``r`` attends to keys ``0..context_lens[r]-1`` of its own table.

    ``q`` is ``[R, Hq, D]`` (request ``r``'s new token, at position ``context_lens[r] - 1``, whose K/V
    must already be in the pool); ``block_tables`` is ``[R, max_blocks]`` (rows padded with any valid
    block id); ``context_lens`` is ``[R]``, each ``>= 1``. Returns ``[R, Hq, D]``.

    The requests' contexts are gathered into one padded ``[R, Hkv, L, D]`` batch (``L`` the longest
    context) and the padding is masked, so one fused SDPA call serves the whole batch.
    """
    r, hq, d = q.shape
    num_blocks, block_size, hkv, dk = k_cache.shape
    if k_cache.shape != v_cache.shape or dk != d or hq % hkv:
        raise ValueError(tr("shape mismatch between q and the pool", "q 与 KV 池的形状不匹配"))
    if block_tables.dim() != 2 or block_tables.shape[0] != r or context_lens.shape != (r,):
        raise ValueError(tr("block_tables must be [R, max_blocks] and context_lens [R]",
                            "block_tables 必须是 [R, max_blocks]，context_lens 必须是 [R]"))
    longest = int(context_lens.max())
    if int(context_lens.min()) < 1 or longest > block_tables.shape[1] * block_size:
        raise ValueError(tr("every context needs 1..max_blocks * block_size tokens",
                            "每个上下文需要 1..max_blocks * block_size 个 token"))
    pos = torch.arange(longest, device=q.device)
    slots = (block_tables.long().index_select(1, pos // block_size) * block_size + pos % block_size).view(-1)
    k = k_cache.reshape(num_blocks * block_size, hkv, d).index_select(0, slots).view(r, longest, hkv, d)
    v = v_cache.reshape(num_blocks * block_size, hkv, d).index_select(0, slots).view(r, longest, hkv, d)
    visible = (pos[None, :] < context_lens.to(q.device)[:, None])[:, None, None, :]  # [R, 1, 1, L]
    out = fused_sdpa(q[:, :, None, :], k.transpose(1, 2), v.transpose(1, 2), attn_mask=visible, scale=scale)
    return out[:, :, 0, :]

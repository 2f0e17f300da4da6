"""Prefill helpers shared by the stage-6 notebook, its checks and the benchmarks.

- :func:`full_prefill` / :func:`generate_full`: the no-cache ground truth (SDPA ``is_causal=True``).
- :data:`PagedAttention` and :func:`pool_attention`: the signature a cached prefill calls per layer,
  and an adapter that turns a :mod:`kernels` paged attention (torch reference or Triton kernel) into it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from kernels.kv_pool import KVPool
from kernels.model import DecoderLM

#: ``attention(q [T, Hq, D], pool, layer, block_table, offset) -> [T, Hq, D]``: new queries at
#: positions ``offset..offset+T-1`` over the keys of positions ``0..offset+T-1`` stored in ``pool``.
PagedAttention = Callable[[Tensor, KVPool, int, "Sequence[int] | Tensor", int], Tensor]


def full_prefill(model: DecoderLM, prompt: Sequence[int]) -> Tensor:
    """Every prompt token through the model, SDPA causal attention; the last token's logits ``[vocab]``."""
    device = next(model.parameters()).device
    with torch.no_grad():
        return model(torch.tensor(list(prompt), dtype=torch.long, device=device))


def generate_full(model: DecoderLM, prompt: Sequence[int], max_new_tokens: int) -> list[int]:
    """Greedy decoding by a full prefill at every step (no cache at all): the ground truth."""
    seq, new = list(prompt), []
    for _ in range(max_new_tokens):
        token = int(torch.argmax(full_prefill(model, seq)))
        seq.append(token)
        new.append(token)
    return new


def pool_attention(kernel: Callable[..., Tensor]) -> PagedAttention:
    """Adapt ``kernel(q, k_cache, v_cache, block_table, offset)`` (e.g. :func:`kernels.device.paged_attention_for`'s
    choice) to :data:`PagedAttention`."""

    def attention(q: Tensor, pool: KVPool, layer: int, block_table: Sequence[int] | Tensor, offset: int) -> Tensor:
        table = torch.as_tensor(block_table, dtype=torch.long, device=q.device)
        return kernel(q, pool.k[layer], pool.v[layer], table, offset)

    return attention

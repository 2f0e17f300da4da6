"""Paged prefill attention as a Triton kernel.

Same contract as :func:`kernels.paged_attention.paged_attention_torch`: ``T`` new queries at
absolute positions ``offset..offset+T-1`` attend causally to the ``offset + T`` keys that sit in a
paged pool at the slots a block table gives.

How it works: one program per (tile of ``BLOCK_M`` queries, query head). It walks the keys in tiles
of ``BLOCK_N`` positions; for each key position it looks up the physical block in the block table
(so a shuffled, non-contiguous table costs nothing extra), loads K and V rows through that block,
and folds the tile into a running ("online") softmax, so the ``T x (offset+T)`` score matrix is
never stored. A tile stops at the last key its last query may see (causal with the offset).

Running it: on CUDA, directly. On CPU only through Triton's interpreter, and the environment variable
``TRITON_INTERPRET=1`` must be set **before this module is imported** (the ``@triton.jit``
decorator reads it); the tests do that in a subprocess.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl
from torch import Tensor

from autograder.i18n import tr


@triton.jit
def _paged_prefill_kernel(
    q_ptr, k_ptr, v_ptr, table_ptr, out_ptr,
    num_queries, offset, block_size, scale,
    stride_qt, stride_qh,
    stride_kb, stride_ks, stride_kh,
    stride_vb, stride_vs, stride_vh,
    stride_ot, stride_oh,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    PRECISION: tl.constexpr,
):
    tile = tl.program_id(0)
    head = tl.program_id(1)
    kv_head = head // GROUP  # grouped-query attention: GROUP query heads share one kv head

    offs_m = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_valid = offs_m < num_queries
    q = tl.load(q_ptr + offs_m[:, None] * stride_qt + head * stride_qh + offs_d[None, :],
                mask=q_valid[:, None], other=0.0)
    q_pos = offset + offs_m  # absolute positions: RoPE and causality both use them

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    num_ctx = offset + num_queries
    # The last key this tile may see is its last real query's own position.
    tile_end = tl.minimum(offset + (tile + 1) * BLOCK_M, num_ctx)
    for start in range(0, tile_end, BLOCK_N):
        k_pos = start + tl.arange(0, BLOCK_N)
        k_valid = k_pos < num_ctx
        block = tl.load(table_ptr + k_pos // block_size, mask=k_valid, other=0).to(tl.int64)
        row = (k_pos % block_size).to(tl.int64)
        k = tl.load(k_ptr + block[:, None] * stride_kb + row[:, None] * stride_ks + kv_head * stride_kh
                    + offs_d[None, :], mask=k_valid[:, None], other=0.0)
        v = tl.load(v_ptr + block[:, None] * stride_vb + row[:, None] * stride_vs + kv_head * stride_vh
                    + offs_d[None, :], mask=k_valid[:, None], other=0.0)

        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        visible = (k_pos[None, :] <= q_pos[:, None]) & k_valid[None, :]
        s = tl.where(visible, s, float("-inf"))
        # Key 0 is visible to every query and sits in the first tile, so m_new is finite from then on.
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new

    acc = acc / l_i[:, None]
    tl.store(out_ptr + offs_m[:, None] * stride_ot + head * stride_oh + offs_d[None, :],
             acc.to(out_ptr.dtype.element_ty), mask=q_valid[:, None])


def interpreter_enabled() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def paged_attention_triton(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_table: Tensor, offset: int,
                           scale: float | None = None, *, block_m: int | None = None,
                           block_n: int | None = None) -> Tensor:
    """Triton version of :func:`kernels.paged_attention.paged_attention_torch` (same arguments)."""
    t, hq, d = q.shape
    _, block_size, hkv, dk = k_cache.shape
    if k_cache.shape != v_cache.shape or dk != d or hq % hkv:
        raise ValueError(tr("shape mismatch between q and the pool", "q 与 KV 池的形状不匹配"))
    if offset < 0 or block_table.dim() != 1 or block_table.numel() * block_size < offset + t:
        raise ValueError(tr("block table does not cover offset + T tokens", "块表没有覆盖 offset + T 个 token"))
    if d & (d - 1) or d < 16:
        raise ValueError(tr(f"head_dim must be a power of two >= 16 for tl.dot, got {d}",
                            f"tl.dot 要求 head_dim 是 >= 16 的 2 的幂，实际是 {d}"))
    if q.device.type != "cuda" and not interpreter_enabled():
        raise RuntimeError(tr("Triton runs on CPU only with TRITON_INTERPRET=1 set before importing "
                              "kernels.triton_paged_attention; use kernels.device.paged_attention_for(device)",
                              "只有在导入 kernels.triton_paged_attention 之前设置 TRITON_INTERPRET=1，Triton 才能在 CPU 上运行；"
                              "请改用 kernels.device.paged_attention_for(device)"))
    if k_cache.stride(-1) != 1 or v_cache.stride(-1) != 1:
        raise ValueError(tr("the pool's last dimension must be contiguous", "KV 池的最后一维必须是连续存储的"))
    q = q if q.stride(-1) == 1 else q.contiguous()
    table = block_table.to(device=q.device, dtype=torch.int32).contiguous()
    out = torch.empty_like(q)
    on_gpu = q.device.type == "cuda"
    block_m = block_m or (64 if on_gpu else 16)
    block_n = block_n or (64 if on_gpu else 16)
    # fp32 inputs: exact fp32 products (tl.dot would otherwise use TF32 on GPUs and drift ~1e-3).
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    grid = (triton.cdiv(t, block_m), hq)
    _paged_prefill_kernel[grid](
        q, k_cache, v_cache, table, out,
        t, offset, block_size, scale if scale is not None else d ** -0.5,
        q.stride(0), q.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        out.stride(0), out.stride(1),
        GROUP=hq // hkv, HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, PRECISION=precision,
    )
    return out

"""Paged attention (torch reference and Triton kernel) against dense causal attention.

The Triton kernel runs on CPU through Triton's interpreter, which must be switched on *before* the
kernel module is imported; so those tests run it in a fresh subprocess with ``TRITON_INTERPRET=1``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.paged_attention import causal_attention, fused_attention_only, paged_attention_torch, paged_decode_attention_torch
from tests.support.machine import scaled

ROOT = Path(__file__).resolve().parents[2]


def scatter_into_pool(k: torch.Tensor, v: torch.Tensor, table: list[int], num_blocks: int, block_size: int):
    """A pool whose blocks ``table`` hold ``k``/``v`` in order; other blocks hold noise."""
    n, hkv, d = k.shape
    gen = torch.Generator().manual_seed(123)
    kc = torch.randn(num_blocks, block_size, hkv, d, generator=gen)
    vc = torch.randn(num_blocks, block_size, hkv, d, generator=gen)
    for p in range(n):
        kc[table[p // block_size], p % block_size] = k[p]
        vc[table[p // block_size], p % block_size] = v[p]
    return kc, vc


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 40), cut=st.data(), block_size=st.sampled_from([1, 3, 4, 8]), group=st.sampled_from([1, 2, 3]),
       seed=st.integers(0, 2**16))
def test_kernels_paged_attention_torch_matches_dense_tail(n, cut, block_size, group, seed):
    offset = cut.draw(st.integers(0, n - 1))
    gen = torch.Generator().manual_seed(seed)
    hkv, d = 2, 8
    q = torch.randn(n, hkv * group, d, generator=gen)
    k, v = torch.randn(n, hkv, d, generator=gen), torch.randn(n, hkv, d, generator=gen)
    dense = causal_attention(q, k, v)
    blocks = -(-n // block_size)
    num_blocks = blocks + 5
    table = torch.randperm(num_blocks, generator=gen)[:blocks]  # shuffled, non-contiguous
    kc, vc = scatter_into_pool(k, v, table.tolist(), num_blocks, block_size)
    paged = paged_attention_torch(q[offset:], kc, vc, table, offset)
    assert (paged - dense[offset:]).abs().max() < 1e-5


def test_kernels_paged_attention_gqa_head_mapping():
    # Query head h must read kv head h // group: make kv heads distinguishable through V.
    t, d = 3, 4
    q = torch.zeros(t, 4, d)
    k = torch.zeros(t, 2, d)
    v = torch.stack([torch.full((t, d), 1.0), torch.full((t, d), 2.0)], dim=1)
    kc, vc = scatter_into_pool(k, v, [0], 1, 4)
    out = paged_attention_torch(q, kc, vc, torch.tensor([0]), 0)
    assert out[:, :, 0].tolist() == [[1.0, 1.0, 2.0, 2.0]] * t


def test_kernels_paged_attention_rejects_short_table():
    q = torch.zeros(5, 2, 8)
    kc = torch.zeros(4, 4, 2, 8)
    with pytest.raises(ValueError, match="covers 4 tokens, need 9"):
        paged_attention_torch(q, kc, kc, torch.tensor([1]), 4)


def test_kernels_paged_decode_matches_one_request_at_a_time():
    # Four requests of different lengths in one padded batch; each must equal its own paged attention.
    gen = torch.Generator().manual_seed(5)
    hq, hkv, d, bs, num_blocks = 6, 2, 8, 4, 40
    kc = torch.randn(num_blocks, bs, hkv, d, generator=gen)
    vc = torch.randn(num_blocks, bs, hkv, d, generator=gen)
    lens = [1, 7, 13, 4]
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    tables, start = [], 0
    for n in lens:
        tables.append(perm[start:start + -(-n // bs)])
        start += len(tables[-1])
    width = max(map(len, tables))
    padded = torch.tensor([t + [0] * (width - len(t)) for t in tables])
    q = torch.randn(len(lens), hq, d, generator=gen)
    out = paged_decode_attention_torch(q, kc, vc, padded, torch.tensor(lens))
    for i, n in enumerate(lens):
        one = paged_attention_torch(q[i:i + 1], kc, vc, torch.tensor(tables[i]), n - 1)
        assert (out[i] - one[0]).abs().max() < 1e-6


def test_kernels_every_attention_call_site_uses_a_fused_sdpa_kernel():
    """With SDPA restricted to its fused backends (flash on CPU), every call site must still run.

    A 3-D call, or a mask the fused kernels cannot take, would fall back to the slow "math" kernel
    and raise here instead."""
    from kernels.kv_pool import KVPool
    from kernels.model import DecoderLM, ModelConfig
    from solutions.s06_paged_prefill import PagedPrefiller, full_prefill, paged_attention

    gen = torch.Generator().manual_seed(0)
    q = torch.randn(9, 4, 16, generator=gen)
    k, v = torch.randn(9, 2, 16, generator=gen), torch.randn(9, 2, 16, generator=gen)
    kc, vc = scatter_into_pool(k, v, [2, 0, 1], 4, 4)
    pool = KVPool(1, 4, 4, 2, 16)
    pool.k[0].copy_(kc)
    pool.v[0].copy_(vc)
    model = DecoderLM.random(ModelConfig.tiny(), seed=0)
    prompt = list(range(3, 40))
    with fused_attention_only():
        outs = {
            "causal_attention": causal_attention(q, k, v),
            "paged_attention_torch offset 0": paged_attention_torch(q, kc, vc, torch.tensor([2, 0, 1]), 0),
            "paged_attention_torch offset 5": paged_attention_torch(q[5:], kc, vc, torch.tensor([2, 0, 1]), 5),
            "paged_decode_attention_torch": paged_decode_attention_torch(
                q[:2], kc, vc, torch.tensor([[2, 0, 1], [2, 0, 0]]), torch.tensor([9, 5])),
            "s06 paged_attention (the TODO's reference)": paged_attention(q[5:], pool, 0, [2, 0, 1], 5),
        }
        full = full_prefill(model, prompt)
        engine = PagedPrefiller(model, 32, 4)
        engine.prefill(prompt[:20])
        cached, ledger = engine.prefill(prompt)
    assert ledger["hit_tokens"] == 20
    assert (full - cached).abs().max() < 1e-4
    dense = causal_attention(q, k, v)
    assert (outs["paged_attention_torch offset 0"] - dense).abs().max() < 1e-5
    assert (outs["s06 paged_attention (the TODO's reference)"] - dense[5:]).abs().max() < 1e-5


def test_kernels_fused_only_rejects_a_3d_sdpa_call():
    # The guard above is a real one: the unbatched call it exists to catch is refused.
    x = torch.randn(2, 5, 8)
    with fused_attention_only(), pytest.raises(RuntimeError):
        torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)


TRITON_SCRIPT = r"""
import json, torch
from kernels.paged_attention import paged_attention_torch
from kernels.triton_paged_attention import paged_attention_triton
gen = torch.Generator().manual_seed(0)
results = []
# (new tokens, cached offset, block size, query heads, kv heads, head dim)
cases = [(5, 0, 4, 4, 2, 16), (9, 7, 4, 4, 2, 16), (30, 16, 8, 2, 2, 32), (1, 33, 16, 4, 1, 16),
         (20, 3, 5, 6, 3, 16), (40, 0, 16, 4, 2, 16)]
for t, offset, bs, hq, hkv, d in cases:
    n = offset + t
    blocks = -(-n // bs)
    num_blocks = blocks + 7
    table = torch.randperm(num_blocks, generator=gen)[:blocks]
    kc = torch.randn(num_blocks, bs, hkv, d, generator=gen)
    vc = torch.randn(num_blocks, bs, hkv, d, generator=gen)
    q = torch.randn(t, hq, d, generator=gen)
    ref = paged_attention_torch(q, kc, vc, table, offset)
    got = paged_attention_triton(q, kc, vc, table, offset)
    results.append([t, offset, bs, float((ref - got).abs().max())])
print(json.dumps(results))
"""


def run_interpreted(script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=scaled(120))


@pytest.mark.slow  # runs Triton's interpreter in a subprocess
def test_kernels_triton_interpreter_matches_torch_reference():
    proc = run_interpreted(TRITON_SCRIPT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) == 6
    for t, offset, bs, diff in results:
        assert diff < 1e-5, (t, offset, bs, diff)


@pytest.mark.slow  # imports Triton in a subprocess
def test_kernels_triton_refuses_cpu_without_interpreter():
    script = ("import os, torch; os.environ.pop('TRITON_INTERPRET', None)\n"
              "from kernels.triton_paged_attention import paged_attention_triton\n"
              "q = torch.zeros(2, 2, 16); kc = torch.zeros(1, 4, 2, 16)\n"
              "try:\n    paged_attention_triton(q, kc, kc, torch.tensor([0]), 0)\n"
              "except RuntimeError as e:\n    print('refused:', e)\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=scaled(120))
    assert "refused: Triton runs on CPU only with TRITON_INTERPRET=1" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: the compiled Triton kernel runs on CUDA only "
                    "(its CPU check is test_kernels_triton_interpreter_matches_torch_reference)")
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.bfloat16, 3e-2)])
def test_kernels_triton_cuda_matches_torch_reference(dtype, tol):
    from kernels.triton_paged_attention import paged_attention_triton

    gen = torch.Generator(device="cuda").manual_seed(0)
    for t, offset, bs in [(64, 4096, 16), (300, 0, 16), (17, 100, 32)]:
        n = offset + t
        blocks = -(-n // bs)
        table = torch.randperm(blocks + 9, generator=gen, device="cuda")[:blocks]
        kc = torch.randn(blocks + 9, bs, 2, 64, generator=gen, device="cuda", dtype=dtype)
        vc = torch.randn(blocks + 9, bs, 2, 64, generator=gen, device="cuda", dtype=dtype)
        q = torch.randn(t, 14, 64, generator=gen, device="cuda", dtype=dtype)
        ref = paged_attention_torch(q.float(), kc.float(), vc.float(), table, offset)
        got = paged_attention_triton(q, kc, vc, table, offset).float()
        assert (ref - got).abs().max().item() < tol

"""A prefill cost model calibrated on the device it predicts: time = work / measured rate.

:mod:`kernels.flops` counts the work of a prefill; it cannot say how long it takes, because a device
does not run every kind of work at one rate. On a CPU a 64-row matmul reads each weight matrix for
only 64 rows and runs at a fraction of a 4,000-row one's FLOP rate; a long causal attention runs at
yet another rate; element-wise work and Python overhead are not FLOPs at all. So this module
*measures*, in the same run as the predictions it feeds, at the sizes actually used:

- **GEMM throughput** of the model's own linear layers (q, k, v, o, gate, up, down of every layer,
  the real weight tensors in the order a forward pass uses them) at a given number of rows;
- the **output head** on one row (a prefill computes the last token's logits only);
- **attention throughput** at (new queries, context length), timing the very attention function
  the prefill calls (full causal SDPA, or paged attention that also writes the new K/V);
- **element-wise seconds** per forward at a row count (norms, RoPE, SwiGLU's product, residuals,
  embedding), a **fixed overhead** per forward (Python and dispatch: a one-token forward minus its
  measured parts), and the block manager's **bookkeeping** per prompt token (hashing, admission,
  commit) for prefills that go through it.

:class:`Calibration` (:mod:`kernels.calibration`, which needs no torch) holds the measured rates;
it and that module's FLOP helpers (``linear_flops``, ``attention_flops``, ``head_flops``) are re-exported
here, since stage 7's learners meet the cost model as ``kernels.cost_model``;
stage 7's ``predict_ttft`` combines them with
:func:`kernels.flops.prefill_flops`. The ``*_probe`` functions return zero-argument callables so
that a benchmark can interleave them with the prefills it predicts (``benchmarks/rounds.py``), and
:meth:`Calibration.from_seconds` turns their times into rates.

[zh]
在要预测的那台设备上校准的 prefill 成本模型：时间 = 工作量 / 测得的速率。

:mod:`kernels.flops` 统计一次 prefill 的工作量；但它说不出要花多长时间，因为设备并不是以同一个速率执行
所有种类的工作。在 CPU 上，64 行的 matmul 每读一遍权重矩阵只用于 64 行，FLOP 速率只有 4,000 行时的一小部分；
长的因果 attention 又是另一个速率；逐元素运算和 Python 开销根本不是 FLOPs。所以本模块在给出预测的同一次
运行里、在实际用到的大小上*测量*：

- 模型自己的线性层（每层的 q、k、v、o、gate、up、down，用真实的权重张量，按前向的顺序）在给定行数下的
  **GEMM 吞吐量**；
- 一行上的**输出头**（prefill 只算最后一个 token 的 logits）；
- (新 query 数, 上下文长度) 下的 **attention 吞吐量**，计时的正是 prefill 调用的那个 attention 函数（完整的
  因果 SDPA，或同时写入新 K/V 的 paged attention）；
- 一次前向在某个行数下的**逐元素运算秒数**（归一化、RoPE、SwiGLU 的乘积、残差、嵌入），每次前向的**固定
  开销**（Python 和调度：只有一个 token 的前向减去已测出的各部分），以及经过块管理器的 prefill 中每个提示词
  token 的**记账**开销（哈希、准入、提交）。

:class:`Calibration`（在 :mod:`kernels.calibration` 中，不需要 torch）保存测得的速率；第 7 阶段的
``predict_ttft`` 把它们和 :func:`kernels.flops.prefill_flops` 结合起来。``*_probe`` 函数返回无参数的可调用
对象，这样基准测试可以把它们和要预测的 prefill 交错运行（``benchmarks/rounds.py``），
:meth:`Calibration.from_seconds` 再把它们的时间换算成速率。
"""
from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.i18n import tr
from kernels.calibration import Calibration, attention_flops, head_flops, linear_flops  # noqa: F401 (re-exported)
from kernels.kv_pool import KVPool
from kernels.model import DecoderLM, apply_rope, rope_cos_sin
from kernels.paged_attention import causal_attention
from kernels.timing import timed

Probe = Callable[[], Any]
#: ``attention(q [T, Hq, D], pool, layer, block_table, offset) -> [T, Hq, D]`` (kernels.prefill.PagedAttention).
PagedAttentionFn = Callable[[Tensor, KVPool, int, Any, int], Tensor]


def _device_dtype(model: DecoderLM) -> tuple[torch.device, torch.dtype]:
    p = next(model.parameters())
    return p.device, p.dtype


def gemm_probe(model: DecoderLM, rows: int, seed: int = 0) -> Probe:
    """Every linear layer of ``model`` (its own weights, in forward order) on ``rows`` rows.

    [zh]
    在 ``rows`` 行上运行 ``model`` 的每个线性层（用它自己的权重，按前向的顺序）。
    """
    cfg = model.config
    device, dtype = _device_dtype(model)
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, cfg.hidden_size, generator=gen, device=device).to(dtype)
    attn_out = torch.randn(rows, cfg.num_attention_heads * cfg.head_dim, generator=gen, device=device).to(dtype)
    mid = torch.randn(rows, cfg.intermediate_size, generator=gen, device=device).to(dtype)
    layers: list[Any] = list(model.model.layers)  # torch types a submodule's attributes as Tensor | Module

    def run() -> None:
        with torch.no_grad():
            for layer in layers:
                a, m = layer.self_attn, layer.mlp
                a.q_proj(x), a.k_proj(x), a.v_proj(x), a.o_proj(attn_out)
                m.gate_proj(x), m.up_proj(x), m.down_proj(mid)

    return run


def head_probe(model: DecoderLM, seed: int = 0) -> Probe:
    """The output head on one row.

    [zh]
    在一行上运行输出头。
    """
    device, dtype = _device_dtype(model)
    x = torch.randn(1, model.config.hidden_size, generator=torch.Generator(device=device).manual_seed(seed),
                    device=device).to(dtype)

    def run() -> None:
        with torch.no_grad():
            model.lm_head(x)

    return run


def full_attention_probe(model: DecoderLM, tokens: int, seed: int = 0) -> Probe:
    """One layer's causal attention of ``tokens`` tokens (the full-prefill baseline's kernel).

    [zh]
    一层对 ``tokens`` 个 token 的因果 attention（完整 prefill 这个基线所用的 kernel）。
    """
    cfg = model.config
    device, dtype = _device_dtype(model)
    gen = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(tokens, cfg.num_attention_heads, cfg.head_dim, generator=gen, device=device).to(dtype)
    k = torch.randn(tokens, cfg.num_key_value_heads, cfg.head_dim, generator=gen, device=device).to(dtype)
    v = torch.randn(tokens, cfg.num_key_value_heads, cfg.head_dim, generator=gen, device=device).to(dtype)

    def run() -> None:
        with torch.no_grad():
            causal_attention(q, k, v)

    return run


def paged_attention_probe(model: DecoderLM, queries: int, context: int, attention: PagedAttentionFn, *,
                          write: Callable[[KVPool, int, Tensor, Tensor, Tensor], Any] | None = None,
                          block_size: int = 16, seed: int = 0) -> Probe:
    """One layer of a cached prefill's attention: write the ``queries`` new tokens' K/V (``write``,
    e.g. stage 6's ``write_kv``), then ``attention`` over ``context`` keys through a shuffled table.

    [zh]
    带缓存的 prefill 中一层的 attention：先写入 ``queries`` 个新 token 的 K/V（``write``，例如第 6 阶段的
    ``write_kv``），再通过一张打乱顺序的块表，用 ``attention`` 对 ``context`` 个 key 计算。
    """
    cfg = model.config
    device, dtype = _device_dtype(model)
    gen = torch.Generator(device=device).manual_seed(seed)
    blocks = -(-context // block_size)
    pool = KVPool(1, blocks + 4, block_size, cfg.num_key_value_heads, cfg.head_dim, dtype=dtype, device=device)
    pool.k[0].normal_(generator=gen)
    pool.v[0].normal_(generator=gen)
    table = torch.randperm(blocks + 4, generator=gen, device=device)[:blocks]
    offset = context - queries
    pos = torch.arange(offset, context, device=device)
    slots = table[pos // block_size] * block_size + pos % block_size
    q = torch.randn(queries, cfg.num_attention_heads, cfg.head_dim, generator=gen, device=device).to(dtype)
    k = torch.randn(queries, cfg.num_key_value_heads, cfg.head_dim, generator=gen, device=device).to(dtype)
    v = torch.randn(queries, cfg.num_key_value_heads, cfg.head_dim, generator=gen, device=device).to(dtype)

    def run() -> None:
        with torch.no_grad():
            if write is not None:
                write(pool, 0, slots, k, v)
            attention(q, pool, 0, table, offset)

    return run


def elementwise_probe(model: DecoderLM, rows: int, seed: int = 0) -> Probe:
    """The non-matmul work of one forward on ``rows`` rows: embedding, RoPE tables, per layer two
    RMSNorms, RoPE on q and k, SwiGLU's product and two residual adds; the final norm of one row.

    [zh]
    一次前向在 ``rows`` 行上的非 matmul 工作：嵌入、RoPE 表，每层两次 RMSNorm、对 q 和 k 做 RoPE、SwiGLU 的
    乘积和两次残差相加；以及最后对一行做的归一化。
    """
    cfg = model.config
    device, dtype = _device_dtype(model)
    gen = torch.Generator(device=device).manual_seed(seed)
    ids = torch.randint(0, cfg.vocab_size, (rows,), generator=gen, device=device)
    positions = torch.arange(rows, device=device)
    q = torch.randn(rows, cfg.num_attention_heads, cfg.head_dim, generator=gen, device=device).to(dtype)
    k = torch.randn(rows, cfg.num_key_value_heads, cfg.head_dim, generator=gen, device=device).to(dtype)
    g = torch.randn(rows, cfg.intermediate_size, generator=gen, device=device).to(dtype)
    u = torch.randn(rows, cfg.intermediate_size, generator=gen, device=device).to(dtype)
    layers: list[Any] = list(model.model.layers)  # torch types a submodule's attributes as Tensor | Module

    def run() -> None:
        with torch.no_grad():
            x = model.model.embed_tokens(ids)
            cos, sin = rope_cos_sin(positions, cfg.head_dim, cfg.rope_theta, x.dtype)
            for layer in layers:
                h = layer.input_layernorm(x)
                apply_rope(q, cos, sin), apply_rope(k, cos, sin)
                x = x + h
                h = layer.post_attention_layernorm(x)
                F.silu(g) * u
                x = x + h
            model.model.norm(x[-1:])

    return run


def forward_probe(model: DecoderLM, tokens: int = 1, seed: int = 0) -> Probe:
    """A whole full-prefill forward of ``tokens`` tokens (one token: mostly fixed overhead).

    [zh]
    对 ``tokens`` 个 token 做一次完整 prefill 的整个前向（只有一个 token 时，主要是固定开销）。
    """
    cfg = model.config
    device, _ = _device_dtype(model)
    ids = torch.randint(0, cfg.vocab_size, (tokens,), generator=torch.Generator(device=device).manual_seed(seed),
                        device=device)

    def run() -> None:
        with torch.no_grad():
            model(ids)

    return run


def bookkeeping_probe(make_pool: Callable[[], Any], prompt_tokens: int, vocab: int, seed: int = 0) -> Probe:
    """Admit, commit and release a fresh prompt of ``prompt_tokens`` tokens in a block pool from
    ``make_pool()`` (hashing every full block): the block manager's share of a cached prefill.

    [zh]
    在 ``make_pool()`` 建出的块池里，对一个有 ``prompt_tokens`` 个 token 的新提示词做 admit、commit 和 release
    （每个满块都要算哈希）：这是带缓存的 prefill 中块管理器那一份开销。
    """
    rng = random.Random(seed)
    pool = make_pool()
    counter = iter(range(10**9))

    def run() -> None:
        rid = f"probe-{next(counter)}"
        tokens = [rng.randrange(vocab) for _ in range(prompt_tokens)]
        pool.admit(rid, tokens)
        pool.commit(rid)
        pool.release(rid)

    return run


def median_seconds(probe: Probe, device: torch.device | str | None, reps: int = 5) -> float:
    """Median wall time of ``reps`` calls after one warm-up call (device work included).

    [zh]
    先预热调用一次，再调用 ``reps`` 次，返回墙钟时间的中位数（包括设备上的工作）。
    """
    probe()
    return statistics.median(timed(probe, device)[0] for _ in range(reps))


def calibrate(model: DecoderLM, *, rows: Iterable[int], full_attention: Iterable[int] = (),
              paged_attention: Iterable[tuple[int, int]] = (), attention: PagedAttentionFn | None = None,
              write: Callable[..., Any] | None = None, make_pool: Callable[[], Any] | None = None,
              block_size: int = 16, reps: int = 5) -> Calibration:
    """Measure everything a :class:`Calibration` holds, each probe ``reps`` times (median).

    ``rows``: row counts of the GEMMs (and element-wise work) to measure; ``full_attention``: token
    counts of full causal attention; ``paged_attention``: (queries, context) of the paged
    ``attention`` function (with ``write`` before it). ``make_pool`` builds the block pool whose
    bookkeeping is measured (skipped when ``None``). Benchmarks that want the calibration to see
    the same load as the prefills it predicts interleave the probes instead (``bench_prefill.py``).

    [zh]
    测量 :class:`Calibration` 所需的全部数据，每个探针测 ``reps`` 次（取中位数）。

    ``rows``：要测量的 GEMM（以及逐元素运算）的行数；``full_attention``：完整因果 attention 的 token 数；
    ``paged_attention``：paged ``attention`` 函数的 (queries, context)（之前先调用 ``write``）。``make_pool``
    建出要测记账开销的块池（为 ``None`` 时跳过）。想让校准承受和被预测的 prefill 相同负载的基准测试，会把探针
    和 prefill 交错运行（``bench_prefill.py``）。
    """
    device, _ = _device_dtype(model)
    cfg = model.config
    rows = sorted(set(rows) | {1})
    gemm = {r: median_seconds(gemm_probe(model, r), device, reps) for r in rows}
    elem = {r: median_seconds(elementwise_probe(model, r), device, reps) for r in rows}
    attn = {(n, n): median_seconds(full_attention_probe(model, n), device, reps) for n in set(full_attention) | {1}}
    if paged_attention and attention is None:
        raise ValueError(tr("paged attention shapes need the attention function to time",
                            "计时 paged attention 的形状需要传入 attention 函数"))
    for q, c in paged_attention:
        attn[(q, c)] = median_seconds(paged_attention_probe(model, q, c, attention, write=write, block_size=block_size),  # type: ignore[arg-type]  # set: checked above
                                      device, reps)
    book = None
    if make_pool is not None:
        book = {n: median_seconds(bookkeeping_probe(make_pool, n, cfg.vocab_size), device, reps)
                for n in sorted({c for _, c in paged_attention} or {256})}
    return Calibration.from_seconds(
        cfg, gemm_s=gemm, head_s=median_seconds(head_probe(model), device, reps), attention_s=attn,
        elementwise_s=elem, forward1_s=median_seconds(forward_probe(model, 1), device, reps), bookkeeping_s=book,
        device=str(device))



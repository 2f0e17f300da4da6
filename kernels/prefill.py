"""Prefill helpers shared by the stage-6 notebook, its checks and the benchmarks.

- :func:`full_prefill` / :func:`generate_full`: the no-cache ground truth (SDPA ``is_causal=True``).
- :data:`PagedAttention` and :func:`pool_attention`: the signature a cached prefill calls per layer,
  and an adapter that turns a :mod:`kernels` paged attention (torch reference or Triton kernel) into it.
- :func:`measure_ttft`: the stage-6 notebook's TTFT measurement, full prefill against a cached prefix.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from autograder.i18n import tr
from kernels.flops import predicted_speedup
from kernels.kv_pool import KVPool
from kernels.model import DecoderLM, ModelConfig
from kernels.timing import steady_timing, timed

#: The stage-6 notebook's TTFT model: wide enough that a 64-token question keeps a CPU busy with
#: matmuls rather than Python overhead, small enough that the whole measurement takes seconds.
TTFT_CONFIG = ModelConfig(vocab_size=4096, hidden_size=512, intermediate_size=2048, num_hidden_layers=2,
                          num_attention_heads=8, num_key_value_heads=2)

#: ``attention(q [T, Hq, D], pool, layer, block_table, offset) -> [T, Hq, D]``: new queries at
#: positions ``offset..offset+T-1`` over the keys of positions ``0..offset+T-1`` stored in ``pool``.
PagedAttention = Callable[[Tensor, KVPool, int, "Sequence[int] | Tensor", int], Tensor]


def full_prefill(model: DecoderLM, prompt: Sequence[int]) -> Tensor:
    """Every prompt token through the model, SDPA causal attention; the last token's logits ``[vocab]``.

    [zh]
    让提示词的每个 token 都经过模型（SDPA 因果 attention），返回最后一个 token 的 logits ``[vocab]``。
    """
    device = next(model.parameters()).device
    with torch.no_grad():
        return model(torch.tensor(list(prompt), dtype=torch.long, device=device))


def generate_full(model: DecoderLM, prompt: Sequence[int], max_new_tokens: int) -> list[int]:
    """Greedy decoding by a full prefill at every step (no cache at all): the ground truth.

    [zh]
    每一步都做一次完整 prefill 的贪心解码（完全不用缓存）：作为标准答案。
    """
    seq, new = list(prompt), []
    for _ in range(max_new_tokens):
        token = int(torch.argmax(full_prefill(model, seq)))
        seq.append(token)
        new.append(token)
    return new


def pool_attention(kernel: Callable[..., Tensor]) -> PagedAttention:
    """Adapt ``kernel(q, k_cache, v_cache, block_table, offset)`` (e.g. :func:`kernels.device.paged_attention_for`'s
    choice) to :data:`PagedAttention`.

    [zh]
    把 ``kernel(q, k_cache, v_cache, block_table, offset)``（例如 :func:`kernels.device.paged_attention_for`
    选出的那个）适配成 :data:`PagedAttention`。
    """

    def attention(q: Tensor, pool: KVPool, layer: int, block_table: Sequence[int] | Tensor, offset: int) -> Tensor:
        table = torch.as_tensor(block_table, dtype=torch.long, device=q.device)
        return kernel(q, pool.k[layer], pool.v[layer], table, offset)

    return attention


@dataclass(frozen=True)
class TTFTRow:
    """One cached-prefix length of :func:`measure_ttft`.

    Invariants: ``speedup == full_s / cached_s``; ``full_s`` and ``cached_s`` are each path's median time
    over the measurement's rounds; ``max_diff`` is the largest |logit difference| between the two paths on
    the prompts both ran, and ``hit_tokens`` the fewest prefix tokens the cached path reported as hits
    (``prefix`` when it reused all).

    [zh]
    :func:`measure_ttft` 中一个缓存前缀长度的结果。

    不变量：``speedup == full_s / cached_s``；``full_s`` 和 ``cached_s`` 分别是两条路径在各轮测量中的中位
    时间；``max_diff`` 是两条路径在都跑过的提示词上 logits 差的最大绝对值，``hit_tokens`` 是带缓存的路径报告的
    最少命中前缀 token 数（全部复用时等于 ``prefix``）。
    """

    prefix: int
    full_s: float
    cached_s: float
    speedup: float
    predicted: float
    max_diff: float
    hit_tokens: int


def measure_ttft(model: DecoderLM, make_engine: Callable[[int], Any], prefixes: Sequence[int],
                 question_len: int = 64, reps: int = 7, seed: int = 1, cached_per_round: int = 3) -> list[TTFTRow]:
    """TTFT of a full prefill and of a prefill after a cached system prompt, for each prefix length.

    ``make_engine(prefix)`` returns a fresh engine whose ``prefill(prompt)`` returns ``(logits, ledger)``
    (the notebook's ``PagedPrefiller``). Each prefix gets a system prompt that one first request caches;
    then each of ``reps`` rounds times one full prefill between ``cached_per_round`` cached ones (one
    before it, the rest after), every prompt with a fresh question, on the clock of
    :func:`kernels.timing.steady_timing`. A round's cached prefills bracket its full one, so a change in
    what else the machine is doing slows both paths alike; the row keeps each path's median time (a round
    that other work slowed more than the rest moves no median).
    Every cached answer is checked (shape, ledger); the one for the full prefill's own prompt is also
    compared with it, value by value.

    [zh]
    对每个前缀长度，测完整 prefill 的 TTFT，以及 system prompt 已缓存时 prefill 的 TTFT。

    ``make_engine(prefix)`` 返回一个新引擎，它的 ``prefill(prompt)`` 返回 ``(logits, ledger)``（即笔记本里的
    ``PagedPrefiller``）。每个前缀长度配一段 system prompt，先由第一个请求把它缓存下来；之后 ``reps`` 轮里，
    每轮计时一次完整 prefill，前后共夹着 ``cached_per_round`` 次带缓存的 prefill（前面一次，其余在后面），
    每个提示词都换一个新问题，计时用 :func:`kernels.timing.steady_timing` 给出的时钟。一轮里带缓存的 prefill
    把完整的那次夹在中间，所以机器上其他工作的变化会同样拖慢两条路径；每行记录每条路径的中位时间（某一轮
    被其他工作拖得特别慢，也不会移动中位数）。
    每个带缓存的结果都会检查（形状、账本）；与完整 prefill 同一个提示词的那个结果，还会和它逐个数值比较。
    """
    if reps < 1 or cached_per_round < 1:
        raise ValueError(tr("reps and cached_per_round must be at least 1", "reps 和 cached_per_round 都至少为 1"))
    device = next(model.parameters()).device
    vocab = model.config.vocab_size
    rng = random.Random(seed)
    rows = []
    with steady_timing(device) as clock:
        full_prefill(model, list(range(question_len)))  # one-time set-up costs are not timed
        for prefix in prefixes:
            system = [rng.randrange(vocab) for _ in range(prefix)]
            engine = make_engine(prefix)
            engine.prefill(system + [rng.randrange(vocab) for _ in range(question_len)])
            full_t, cached_t, diff, hits = [], [], 0.0, prefix
            pair = min(1, cached_per_round - 1)  # the full prefill runs just before this cached one
            for _ in range(reps):
                prompts = [system + [rng.randrange(vocab) for _ in range(question_len)]
                           for _ in range(cached_per_round)]
                answers = []
                for i, prompt in enumerate(prompts):
                    if i == pair:
                        t_full, full_logits = timed(lambda: full_prefill(model, prompts[pair]), device, clock)  # noqa: B023 - timed() calls it at once
                        full_t.append(t_full)
                    t_cached, answer = timed(lambda: engine.prefill(prompt), device, clock)  # noqa: B023 - timed() calls it at once
                    cached_t.append(t_cached)
                    answers.append(answer)
                for i, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
                    cached_logits, ledger = _checked_prefill(answer, full_logits, prompt, prefix)
                    hits = min(hits, int(ledger["hit_tokens"]))
                    if i == pair:
                        diff = max(diff, float((cached_logits.float() - full_logits.float()).abs().max()))
            full_s, cached_s = statistics.median(full_t), statistics.median(cached_t)
            rows.append(TTFTRow(prefix, full_s, cached_s, full_s / cached_s,
                                predicted_speedup(model.config, prefix, question_len), diff, hits))
    return rows


def _checked_prefill(answer: object, full_logits: Tensor, prompt: Sequence[int], prefix: int) -> tuple[Tensor, dict]:
    """The learner's ``prefill`` answer (TODO 5), checked before it is timed or compared: a pair of the last
    token's logits (the full prefill's shape, finite) and a ledger whose hit and computed tokens add up
    to the prompt. A wrong answer stops with one line naming the TODO instead of an error further on."""
    from workbook.contract import ResultError

    todo = "s06.prefill"
    if not (isinstance(answer, tuple) and len(answer) == 2):
        raise ResultError(todo, f"{type(answer).__name__} instead of the pair (logits, ledger)",
                          f"{type(answer).__name__}，而不是 (logits, ledger) 这一对")
    logits, ledger = answer
    if not isinstance(logits, Tensor) or tuple(logits.shape) != tuple(full_logits.shape) \
            or not bool(torch.isfinite(logits).all()):
        shape = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
        raise ResultError(todo, f"logits {shape} where the last token's logits are a finite tensor of shape "
                          f"{tuple(full_logits.shape)}",
                          f"形状为 {shape} 的 logits，而最后一个 token 的 logits 应当是形状为 "
                          f"{tuple(full_logits.shape)} 的有限张量")
    hit = ledger.get("hit_tokens") if isinstance(ledger, dict) else None
    computed = ledger.get("computed_tokens") if isinstance(ledger, dict) else None
    if not (type(hit) is int and type(computed) is int and 0 <= hit <= prefix and hit + computed == len(prompt)):
        raise ResultError(todo, f"the ledger {ledger!r:.80} for a {len(prompt)}-token prompt with a {prefix}-token "
                          "cached prefix: hit_tokens + computed_tokens must be the prompt's length",
                          f"账目 {ledger!r:.80}，而提示词有 {len(prompt)} 个 token、缓存前缀有 {prefix} 个："
                          "hit_tokens + computed_tokens 必须等于提示词的长度")
    return logits, ledger

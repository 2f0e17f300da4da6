"""Seeded synthetic workloads shared by the benchmarks.

A workload is a list of requests; each is one of ``num_prompts`` shared prompts (think: system
prompts or documents many users send) chosen at random, followed by ``fresh_tokens`` random tokens
that only this request has. Same arguments, same workload, on every machine.
"""
from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from autograder.i18n import tr


def make_prompts(seed: int = 0, num_prompts: int = 200, prompt_len: int = 2048, vocab: int = 32_000) -> list[list[int]]:
    """The shared prompts of :func:`make_workload` (same seed, same prompts)."""
    if num_prompts <= 0 or prompt_len < 0 or vocab <= 0:
        raise ValueError(tr("num_prompts and vocab must be positive, prompt_len non-negative",
                            "num_prompts 和 vocab 必须是正数，prompt_len 不能为负"))
    rng = random.Random(f"prompts/{seed}")
    return [[rng.randrange(vocab) for _ in range(prompt_len)] for _ in range(num_prompts)]


def make_workload(
    seed: int = 0,
    num_prompts: int = 200,
    prompt_len: int = 2048,
    num_requests: int = 10_000,
    fresh_tokens: int = 64,
    vocab: int = 32_000,
) -> list[list[int]]:
    """``num_requests`` requests: a shared prompt picked uniformly at random + fresh random tokens.

    [zh]
    ``num_requests`` 个请求：从共享提示词中均匀随机选一个，再接上新的随机 token。
    """
    return list(iter_workload(seed, num_prompts, prompt_len, num_requests, fresh_tokens, vocab))


def iter_workload(
    seed: int = 0,
    num_prompts: int = 200,
    prompt_len: int = 2048,
    num_requests: int | None = 10_000,
    fresh_tokens: int = 64,
    vocab: int = 32_000,
) -> Iterator[list[int]]:
    """The requests of :func:`make_workload` one at a time (its first ``n`` are the same), without
    holding them all; ``num_requests=None`` never stops. For runs too long to keep in memory.

    [zh]
    逐个给出 :func:`make_workload` 的请求（前 ``n`` 个与它相同），不必把它们全部留在内存里；
    ``num_requests=None`` 时永不停止。用于长到无法全部放进内存的运行。
    """
    if (num_requests is not None and num_requests < 0) or fresh_tokens < 0:
        raise ValueError(tr("num_requests and fresh_tokens must be non-negative", "num_requests 和 fresh_tokens 不能为负"))
    prompts = make_prompts(seed, num_prompts, prompt_len, vocab)  # validates the rest, here and now
    rng = random.Random(f"requests/{seed}")

    def requests() -> Iterator[list[int]]:
        for _ in itertools.count() if num_requests is None else range(num_requests):
            prompt = prompts[rng.randrange(num_prompts)]
            yield prompt + [rng.randrange(vocab) for _ in range(fresh_tokens)]

    return requests()

"""Two colliding prompts through stage 6's engine: does the second get the first one's KV? (given code, stage 8)

:func:`collision_demo` prefills one prompt (its blocks get cached), then a second prompt whose first
block has the same *key* but other tokens, on a block pool of the caller's choice from
:mod:`workbook.weak_keys`, and compares the second prompt's logits with a full prefill of it. With
truncated keys the engine serves the first prompt's KV: the logits differ (often the first generated
token too). With full SHA-256 keys, or with token checks on a hit, the second prompt misses and its
logits equal a full prefill's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from autograder.i18n import tr
from kernels.model import DecoderLM
from kernels.prefill import full_prefill
from workbook.block_pool import BlockPool
from workbook.paged_prefill import PagedPrefiller


@dataclass(frozen=True)
class CollisionOutcome:
    """What the second of two colliding prompts got from the engine.

    ``hit_tokens``: tokens served from the cache; ``max_abs_diff``: largest difference between its
    last-token logits and a full prefill's; ``same_argmax``: whether the first generated token agrees.
    ``wrong_kv``: the cache served KV of other tokens (``max_abs_diff`` above ``atol``).
    """

    pool: str
    hit_tokens: int
    max_abs_diff: float
    same_argmax: bool
    wrong_kv: bool


def colliding_prompts(pair: tuple[Sequence[int], Sequence[int]], *, rest_blocks: int = 3, tail: int = 5,
                      block_size: int = 16, vocab: int = 512, seed: int = 0) -> tuple[list[int], list[int]]:
    """Two prompts: each first block of ``pair``, then the same ``rest_blocks`` blocks and ``tail`` tokens.

    [zh]
    两个提示词：各自以 ``pair`` 中的一个块开头，后面是相同的 ``rest_blocks`` 个块和 ``tail`` 个 token。
    """
    first, second = list(pair[0]), list(pair[1])
    if len(first) != block_size or len(second) != block_size or first == second:
        raise ValueError(tr("pair must be two different blocks of block_size tokens",
                            "pair 必须是两个不同的块，每块 block_size 个 token"))
    rng = random.Random(f"rest/{seed}")
    rest = [rng.randrange(vocab) for _ in range(rest_blocks * block_size + tail)]
    return first + rest, second + rest


def collision_demo(model: DecoderLM, prompts: tuple[Sequence[int], Sequence[int]], pool: BlockPool, *,
                   atol: float = 1e-4) -> CollisionOutcome:
    """Prefill ``prompts[0]`` (it gets cached), then ``prompts[1]``; compare the latter with a full prefill.

    ``pool`` is a fresh block pool (its class decides the keys and checks); the engine is stage 6's
    :class:`PagedPrefiller` on it.

    [zh]
    先 prefill ``prompts[0]``（它会被缓存），再 prefill ``prompts[1]``；把后者与完整 prefill 的结果比较。

    ``pool`` 是一个新块池（由它的类决定 key 和检查方式）；引擎是建在它上面的第 6 阶段的 :class:`PagedPrefiller`。
    """
    engine = PagedPrefiller(model, pool.num_blocks, pool.block_size, blocks=pool)
    engine.prefill(list(prompts[0]))
    logits, ledger = engine.prefill(list(prompts[1]))
    truth = full_prefill(model, list(prompts[1]))
    diff = float((logits - truth).abs().max())
    bits = getattr(pool, "key_bits", None)
    name = type(pool).__name__ + ("" if bits is None else f"({bits} bits)")
    return CollisionOutcome(name, ledger["hit_tokens"], diff, int(torch.argmax(logits)) == int(torch.argmax(truth)),
                            diff > atol)



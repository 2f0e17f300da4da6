"""Four kinds of traffic for the serving loop (given code, not a TODO), sized for a 2-core CPU.

Each function returns a list of :class:`~workbook.serving.Request` (token ids, arrival time in
seconds, output length), deterministic given ``seed``:

- :func:`shared_prefix` -- groups of prompts that share a long prefix (a system prompt, a
  document, few-shot examples), in the spirit of SGLang's "generated shared prefix" benchmark:
  ``num_groups`` prefixes, ``prompts_per_group`` questions each, all shuffled, Poisson arrivals.
  The case prefix caching is built for.
- :func:`multiturn` -- chats replayed from the Mooncake conversation trace (Qin et al., FAST 2025;
  Apache-2.0, ``data/README.md``): whole conversations of several turns, each turn re-sending the
  history. The trace's 512-token blocks become ``block_tokens`` tokens each, its timestamps are
  multiplied by ``time_scale``, its output lengths scaled like the blocks.
- :func:`unique` -- every prompt different from its first token on. Caching can only cost here
  (hashing, lookups): it must not make anything worse.
- :func:`thrashing` -- ``num_prefixes`` hot prefixes visited round-robin. When the pool holds fewer
  of them than there are, LRU evicts each one just before it is needed again and the hit rate
  collapses: the regime a pool-size sweep has to find.

Token ids are random in ``[0, vocab)``; a shared prefix is the *same* list of ids, so it shares
exactly its full blocks (stage 2's chained keys).

[zh]
服务循环的四种流量（给定代码，不是 TODO），规模按 2 核 CPU 设定。

每个函数返回一个 :class:`~workbook.serving.Request` 列表（token id、以秒为单位的到达时间、输出长度），给定
``seed`` 时结果确定：

- :func:`shared_prefix`——若干组共享一段长前缀（system prompt、一篇文档、few-shot 示例）的提示词，思路同
  SGLang 的“generated shared prefix”基准：``num_groups`` 个前缀，每个前缀 ``prompts_per_group`` 个问题，
  全部打乱，Poisson 到达。这正是前缀缓存要解决的情形。
- :func:`multiturn`——从 Mooncake 对话 trace（Qin et al., FAST 2025；Apache-2.0，见 ``data/README.md``）
  回放的多轮对话：整段对话有多轮，每一轮都重新发送历史。trace 中 512 个 token 的块各变成 ``block_tokens``
  个 token，时间戳乘以 ``time_scale``，输出长度按块的比例缩放。
- :func:`unique`——每个提示词从第一个 token 起就各不相同。缓存在这里只会带来开销（哈希、查找）：它不能让
  任何东西变差。
- :func:`thrashing`——``num_prefixes`` 个热门前缀轮流访问。块池能容纳的前缀少于总数时，LRU 会在每个前缀
  再次被需要之前恰好把它淘汰，命中率崩溃：这正是块池大小扫描要找的区间。

token id 在 ``[0, vocab)`` 中随机；共享前缀是*同一个* id 列表，所以共享的恰好是它的满块（第 2 阶段的链式
key）。
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from autograder.i18n import tr
from workbook.serving import SERVING_MODEL, Request
from workbook.traces import MOONCAKE_BLOCK_SIZE, MOONCAKE_TRACES, data_dir

__all__ = ["shared_prefix", "multiturn", "unique", "thrashing", "WORKLOADS", "describe", "poisson_arrivals"]

VOCAB = SERVING_MODEL.vocab_size


def poisson_arrivals(n: int, rate: float, rng: random.Random) -> list[float]:
    """``n`` arrival times of a Poisson process of ``rate`` requests/s, the first at 0.

    [zh]
    速率为每秒 ``rate`` 个请求的 Poisson 过程的 ``n`` 个到达时间，第一个为 0。
    """
    if rate <= 0:
        raise ValueError(tr("rate must be positive", "rate 必须是正数"))
    times, t = [], 0.0
    for i in range(n):
        if i:
            t += rng.expovariate(rate)
        times.append(t)
    return times


def _tokens(rng: random.Random, n: int, vocab: int) -> list[int]:
    return [rng.randrange(vocab) for _ in range(n)]


def _span(rng: random.Random, span: tuple[int, int] | int) -> int:
    return rng.randint(*span) if isinstance(span, tuple) else span


def shared_prefix(*, num_groups: int = 4, prompts_per_group: int = 10, prefix_len: int = 512,
                  question_len: tuple[int, int] | int = (16, 48), output_len: int = 8, rate: float = 12.0,
                  vocab: int = VOCAB, seed: int = 0) -> list[Request]:
    """``num_groups * prompts_per_group`` requests: a group's prefix + a unique question; shuffled.

    [zh]
    ``num_groups * prompts_per_group`` 个请求：组的前缀 + 一个独一无二的问题；顺序打乱。
    """
    rng = random.Random(f"shared_prefix/{seed}")
    prefixes = [_tokens(rng, prefix_len, vocab) for _ in range(num_groups)]
    prompts = [(g, prefixes[g] + _tokens(rng, _span(rng, question_len), vocab))
               for g in range(num_groups) for _ in range(prompts_per_group)]
    rng.shuffle(prompts)
    times = poisson_arrivals(len(prompts), rate, rng)
    return [Request(f"gsp-{i:03d}", t, tuple(p), output_len, tag=f"prefix {g}")
            for i, ((g, p), t) in enumerate(zip(prompts, times, strict=True))]


def unique(*, num_requests: int = 40, prompt_len: tuple[int, int] | int = (256, 768), output_len: int = 8,
           rate: float = 12.0, vocab: int = VOCAB, seed: int = 0) -> list[Request]:
    """``num_requests`` prompts that share nothing (each starts with its own first token).

    [zh]
    ``num_requests`` 个没有任何共同部分的提示词（每个都以自己独有的第一个 token 开头）。
    """
    if num_requests > vocab:
        raise ValueError(tr("need a distinct first token per request", "每个请求的第一个 token 必须互不相同"))
    rng = random.Random(f"unique/{seed}")
    firsts = rng.sample(range(vocab), num_requests)  # distinct first tokens: no block is ever shared
    times = poisson_arrivals(num_requests, rate, rng)
    return [Request(f"uniq-{i:03d}", t, tuple([firsts[i]] + _tokens(rng, _span(rng, prompt_len) - 1, vocab)),
                    output_len, tag="unique") for i, t in enumerate(times)]


def thrashing(*, num_prefixes: int = 12, prefix_len: int = 256, rounds: int = 3,
              question_len: tuple[int, int] | int = (16, 48), output_len: int = 8, rate: float = 12.0,
              vocab: int = VOCAB, seed: int = 0) -> list[Request]:
    """``rounds`` passes over ``num_prefixes`` prefixes in the same order (round-robin), a unique question each.

    The defaults make a working set of 12 * 256 = 3,072 prefix tokens (192 blocks of 16): a pool
    that cannot keep them all next to the running requests' own blocks gets no hits at all.

    [zh]
    按相同顺序把 ``num_prefixes`` 个前缀轮流访问 ``rounds`` 遍，每次接一个独一无二的问题。

    默认参数下工作集是 12 * 256 = 3,072 个前缀 token（192 个 16 token 的块）：块池如果在容纳运行中请求自己的
    块之外放不下全部前缀，就一次也命中不了。
    """
    rng = random.Random(f"thrashing/{seed}")
    prefixes = [_tokens(rng, prefix_len, vocab) for _ in range(num_prefixes)]
    n = num_prefixes * rounds
    times = poisson_arrivals(n, rate, rng)
    return [Request(f"thr-{i:03d}", t,
                    tuple(prefixes[i % num_prefixes] + _tokens(rng, _span(rng, question_len), vocab)),
                    output_len, tag=f"prefix {i % num_prefixes}") for i, t in enumerate(times)]


def _conversations(records: list[dict[str, Any]]) -> dict[int, list[int]]:
    """Group trace lines into conversations: a line continues the earliest line that holds its
    longest shared prefix of at least 2 blocks (block 0 is a system prompt shared by every line)."""
    owner: dict[int, int] = {}
    conversation: dict[int, int] = {}
    groups: dict[int, list[int]] = {}
    for i, rec in enumerate(records):
        keys = rec["hash_ids"]
        parent = next((owner[keys[j]] for j in range(len(keys) - 1, 0, -1) if keys[j] in owner), None)
        conversation[i] = conversation[parent] if parent is not None else i
        groups.setdefault(conversation[i], []).append(i)
        for k in keys:
            owner.setdefault(k, i)
    return groups


def multiturn(*, num_conversations: int = 10, min_turns: int = 3, max_turns: int = 4, max_blocks: int = 40,
              block_tokens: int = 16, max_output: int = 16, time_scale: float = 0.01, skip: int = 0,
              vocab: int = VOCAB, seed: int = 0, trace: str = "conversation") -> list[Request]:
    """Conversations of the Mooncake trace, scaled: ``block_tokens`` tokens per 512-token block.

    Takes the first ``num_conversations`` conversations (after ``skip``) that have at least
    ``min_turns`` turns, none longer than ``max_blocks`` blocks, and keeps their first
    ``max_turns`` turns. Arrival = (trace time - first selected time) * ``time_scale``. A block
    id becomes the same ``block_tokens`` random tokens wherever it appears, so turns share exactly
    the blocks the trace says they share; the last block keeps its fraction of a full block.
    Output lengths are scaled like the blocks, clamped to ``1..max_output``.

    [zh]
    按比例缩放的 Mooncake trace 对话：每个 512 token 的块换成 ``block_tokens`` 个 token。

    取（跳过前 ``skip`` 个之后）前 ``num_conversations`` 个至少有 ``min_turns`` 轮、且每轮都不超过
    ``max_blocks`` 块的对话，保留它们的前 ``max_turns`` 轮。到达时间 =（trace 时间 − 第一个选中的时间）×
    ``time_scale``。同一个块 id 不论出现在哪里都变成同样的 ``block_tokens`` 个随机 token，所以各轮共享的
    恰好是 trace 所说的那些块；最后一块保留它占满块的比例。输出长度按块的比例缩放，并限制在 ``1..max_output``。
    """
    path = data_dir() / MOONCAKE_TRACES[trace]
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    picked: list[int] = []
    found = 0
    for turns in _conversations(records).values():
        if len(turns) < min_turns or any(len(records[i]["hash_ids"]) > max_blocks for i in turns):
            continue
        found += 1
        if found <= skip:
            continue
        picked += turns[:max_turns]
        if found - skip == num_conversations:
            break
    picked.sort(key=lambda i: (records[i]["timestamp"], i))
    t0 = records[picked[0]]["timestamp"] if picked else 0
    block_content: dict[int, list[int]] = {}
    out = []
    for n, i in enumerate(picked):
        rec = records[i]
        tokens: list[int] = []
        for key in rec["hash_ids"]:
            if key not in block_content:
                block_content[key] = _tokens(random.Random(f"multiturn/{seed}/{key}"), block_tokens, vocab)
            tokens += block_content[key]
        tail = rec["input_length"] - (len(rec["hash_ids"]) - 1) * MOONCAKE_BLOCK_SIZE
        keep = (len(rec["hash_ids"]) - 1) * block_tokens + max(1, round(tail * block_tokens / MOONCAKE_BLOCK_SIZE))
        output = min(max_output, max(1, round(rec["output_length"] * block_tokens / MOONCAKE_BLOCK_SIZE)))
        out.append(Request(f"chat-{n:03d}", (rec["timestamp"] - t0) / 1000.0 * time_scale, tuple(tokens[:keep]),
                           output, tag=f"line {i}"))
    return out


#: The four workloads of the stage-7 experiments, with their default (CPU-sized) settings.
WORKLOADS: dict[str, Callable[..., list[Request]]] = {
    "shared_prefix": shared_prefix,
    "multiturn": multiturn,
    "unique": unique,
    "thrashing": thrashing,
}


def describe(requests: list[Request], block_size: int = 16) -> dict[str, float]:
    """Size of a workload, and the share of prompt tokens an infinite cache could reuse.

    Reusable = the full blocks of a prompt whose chained content was seen in an earlier prompt
    (at least the last token is always computed), counted per token. An upper bound for any pool.

    [zh]
    一个负载的规模，以及无限大的缓存能复用的提示词 token 比例。

    可复用 = 提示词中那些链式内容在更早的提示词里出现过的满块（最后一个 token 总要计算），按 token 计。这是任何
    块池的上界。
    """
    seen: set[tuple[int, ...]] = set()
    reusable = total = 0
    for r in sorted(requests, key=lambda r: r.arrival_s):
        total += len(r.prompt)
        full = (len(r.prompt) - 1) // block_size  # as stage 3: the last token is always computed
        hit = 0
        for b in range(full):
            if tuple(r.prompt[: (b + 1) * block_size]) not in seen:
                break
            hit = b + 1
        reusable += hit * block_size
        for b in range(len(r.prompt) // block_size):
            seen.add(tuple(r.prompt[: (b + 1) * block_size]))
    span = max(r.arrival_s for r in requests) - min(r.arrival_s for r in requests) if requests else 0.0
    return {
        "requests": len(requests),
        "mean_prompt_tokens": total / len(requests) if requests else 0.0,
        "mean_output_tokens": sum(r.max_new_tokens for r in requests) / len(requests) if requests else 0.0,
        "arrival_span_s": span,
        "reusable_token_fraction": reusable / total if total else 0.0,
    }

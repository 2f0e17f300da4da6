"""Request traces for the prefix-cache simulator (given code, not a TODO).

A trace is a list of :class:`TraceRequest`, each a prompt described at block granularity:
``keys[i]`` names block ``i`` *together with every block before it* (a chained id), so two
requests share a reusable KV prefix of ``n`` blocks exactly when their first ``n`` keys are
equal. This is the format of the Mooncake traces (Qin et al., "Mooncake: Trading More Storage
for Less Computation", USENIX FAST 2025; Apache-2.0; see ``data/README.md``), and the synthetic
generators below produce the same shape so that one simulator replays both.

Synthetic traffic (all deterministic given ``seed``):

* :func:`system_prompt_traffic` -- one long shared system prompt + a short unique question.
* :func:`rag_traffic` -- a short system prompt + one retrieved document (Zipf popularity) + question.
* :func:`multiturn_traffic` -- interleaved chats; turn ``t`` re-sends the whole history.
* :func:`thrashing_traffic` -- many different system prompts visited round-robin: a working set
  larger than the cache, the classic case where LRU gets (almost) nothing.
* :func:`mixed_traffic` -- a few of the above merged by arrival time.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from autograder.i18n import tr

__all__ = [
    "TraceRequest",
    "KeyInterner",
    "MOONCAKE_BLOCK_SIZE",
    "MOONCAKE_TRACES",
    "load_mooncake",
    "trace_stats",
    "request_tokens",
    "system_prompt_traffic",
    "rag_traffic",
    "multiturn_traffic",
    "thrashing_traffic",
    "mixed_traffic",
    "subsample",
]

MOONCAKE_BLOCK_SIZE = 512
#: Trace names and their files under the repository's ``data/`` folder.
MOONCAKE_TRACES = {
    "conversation": "mooncake_conversation_trace.jsonl",
    "synthetic": "mooncake_synthetic_trace.jsonl",
}


def data_dir() -> Path:
    """The repository's ``data/`` folder (``pcw_data`` where the course was installed with pip).

    Looked up when called, not at import: the grader loads this module from a string, without a
    ``__file__``, and never reads data files.
    """
    here = globals().get("__file__")
    root = Path(here).resolve().parent.parent if here else Path.cwd()
    return root / "data" if (root / "data").is_dir() else root / "pcw_data"


@dataclass(frozen=True)
class TraceRequest:
    """One prompt of a trace.

    Invariants: ``keys`` is non-empty; ``(len(keys) - 1) * block_size < num_tokens <=
    len(keys) * block_size`` (only the last block may be partial); ``timestamp`` is in seconds.

    [zh]
    trace 中的一个提示词。

    不变量：``keys`` 不为空；``(len(keys) - 1) * block_size < num_tokens <= len(keys) * block_size``
    （只有最后一块可以不满）；``timestamp`` 以秒为单位。
    """

    timestamp: float
    keys: tuple[int, ...]
    num_tokens: int
    block_size: int

    def __post_init__(self) -> None:
        n = len(self.keys)
        if n == 0:
            raise ValueError(tr("a request needs at least one block", "一个请求至少要有一个块"))
        if self.block_size <= 0:
            raise ValueError(tr("block_size must be positive", "block_size 必须是正数"))
        if not (n - 1) * self.block_size < self.num_tokens <= n * self.block_size:
            raise ValueError(
                tr(f"{self.num_tokens} tokens do not fill {n} blocks of {self.block_size}",
                   f"{self.num_tokens} 个 token 填不满 {n} 个大小为 {self.block_size} 的块")
            )

    def block_tokens(self, i: int) -> int:
        """Number of tokens in block ``i`` (only the last one may be short).

        [zh]
        第 ``i`` 块中的 token 数（只有最后一块可能不满）。
        """
        return min(self.block_size, self.num_tokens - i * self.block_size)


class KeyInterner:
    """Gives chained integer keys to block contents.

    ``key(parent, content)`` returns the same int for the same ``(parent, content)`` pair and a new
    one otherwise, so ``chain([c0, c1, ...])`` is the integer analogue of stage 2's chained hash.
    Invariant: keys are ``0, 1, 2, ...`` in order of first appearance.
    """

    def __init__(self) -> None:
        self._ids: dict[tuple[int | None, int], int] = {}

    def key(self, parent: int | None, content: int) -> int:
        k = self._ids.get((parent, content))
        if k is None:
            k = self._ids[(parent, content)] = len(self._ids)
        return k

    def chain(self, contents: Iterable[int], parent: int | None = None) -> list[int]:
        out = []
        for c in contents:
            parent = self.key(parent, c)
            out.append(parent)
        return out

    def __len__(self) -> int:
        return len(self._ids)


# --------------------------------------------------------------------------------------------
# Mooncake traces
# --------------------------------------------------------------------------------------------
def load_mooncake(
    name_or_path: str | Path = "conversation", *, limit: int | None = None
) -> list[TraceRequest]:
    """Load a Mooncake trace (``"conversation"``, ``"synthetic"`` or a path to a ``.jsonl``).

    Timestamps are converted from ms to seconds. Each line is validated: ``len(hash_ids) ==
    ceil(input_length / 512)``.

    [zh]
    加载 Mooncake trace（``"conversation"``、``"synthetic"`` 或一个 ``.jsonl`` 文件的路径）。

    时间戳从毫秒换算成秒。每一行都会校验：``len(hash_ids) == ceil(input_length / 512)``。
    """
    name = str(name_or_path)
    path = data_dir() / MOONCAKE_TRACES[name] if name in MOONCAKE_TRACES else Path(name_or_path)
    out: list[TraceRequest] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if limit is not None and len(out) >= limit:
                break
            if not line.strip():
                continue
            rec = json.loads(line)
            keys = tuple(rec["hash_ids"])
            n_tok = int(rec["input_length"])
            if len(keys) != math.ceil(n_tok / MOONCAKE_BLOCK_SIZE):
                raise ValueError(tr(f"{path}:{lineno}: {len(keys)} hash_ids for {n_tok} tokens",
                                    f"{path}:{lineno}：{n_tok} 个 token 却有 {len(keys)} 个 hash_id"))
            out.append(TraceRequest(rec["timestamp"] / 1000.0, keys, n_tok, MOONCAKE_BLOCK_SIZE))
    return out


def trace_stats(trace: Sequence[TraceRequest]) -> dict[str, float]:
    """Size of a trace and its hit rate with an infinite cache (every repeated key hits).

    [zh]
    trace 的规模，以及缓存无限大时的命中率（每个重复出现的 key 都命中）。
    """
    seen: set[int] = set()
    accesses = 0
    for r in trace:
        accesses += len(r.keys)
        seen.update(r.keys)
    return {
        "requests": len(trace),
        "block_accesses": accesses,
        "distinct_blocks": len(seen),
        "infinite_cache_block_hit_rate": 1 - len(seen) / accesses if accesses else 0.0,
        "span_s": (trace[-1].timestamp - trace[0].timestamp) if trace else 0.0,
    }


def subsample(trace: Sequence[TraceRequest], every: int) -> list[TraceRequest]:
    """Every ``every``-th request, a cheap way to shrink a trace for a notebook.

    Note: it thins reuse too (a later turn may lose its earlier turn), so hit rates drop a bit;
    compare policies on the same subsample, never across subsamples.
    """
    if every < 1:
        raise ValueError(tr("every must be >= 1", "every 必须 >= 1"))
    return list(trace[::every])


def request_tokens(req: TraceRequest) -> list[int]:
    """Token ids that reproduce ``req``'s block structure in a token-level pool.

    Block ``i`` becomes ``block_size`` tokens derived from ``keys[i]`` (distinct keys give distinct
    blocks); the last block is cut to ``num_tokens``. Because keys are already chained, hashing
    these tokens again (stage 2) yields equal chains exactly for equal key prefixes.
    """
    bs = req.block_size
    toks: list[int] = []
    for k in req.keys:
        toks.extend(range(k * bs, k * bs + bs))
    return toks[: req.num_tokens]


# --------------------------------------------------------------------------------------------
# Synthetic traffic
# --------------------------------------------------------------------------------------------
class _Builder:
    """Shared plumbing: fresh content ids, chained keys, Poisson arrivals."""

    def __init__(self, seed: int, block_size: int, rate: float) -> None:
        if block_size <= 0 or rate <= 0:
            raise ValueError(tr("block_size and rate must be positive", "block_size 和 rate 都必须是正数"))
        self.rng = random.Random(seed)
        self.block_size = block_size
        self.rate = rate
        self.interner = KeyInterner()
        self._next_content = 0
        self.t = 0.0

    def fresh(self, n: int) -> list[int]:
        """``n`` block contents never seen before (unique user text, a new answer, ...)."""
        out = list(range(self._next_content, self._next_content + n))
        self._next_content += n
        return out

    def tick(self) -> float:
        self.t += self.rng.expovariate(self.rate)
        return self.t

    def request(self, contents: Sequence[int], t: float | None = None) -> TraceRequest:
        keys = tuple(self.interner.chain(contents))
        return TraceRequest(self.tick() if t is None else t, keys, len(keys) * self.block_size,
                            self.block_size)


def system_prompt_traffic(
    num_requests: int = 2000,
    *,
    system_blocks: int = 64,
    question_blocks: tuple[int, int] = (1, 8),
    block_size: int = 16,
    rate: float = 20.0,
    seed: int = 0,
) -> list[TraceRequest]:
    """Every request = one long shared system prompt + a unique question of 1..8 blocks.

    The easy case: a cache that holds the system prompt hits ``system_blocks`` blocks per request.

    [zh]
    每个请求 = 一段长的共享 system prompt + 一个 1 到 8 块长的独一无二的问题。

    最简单的情况：缓存住 system prompt，每个请求就命中 ``system_blocks`` 块。
    """
    b = _Builder(seed, block_size, rate)
    system = b.fresh(system_blocks)
    lo, hi = question_blocks
    return [b.request(system + b.fresh(b.rng.randint(lo, hi))) for _ in range(num_requests)]


def rag_traffic(
    num_requests: int = 2000,
    *,
    num_docs: int = 200,
    doc_blocks: tuple[int, int] = (8, 32),
    system_blocks: int = 4,
    question_blocks: tuple[int, int] = (1, 4),
    zipf_s: float = 1.1,
    block_size: int = 16,
    rate: float = 20.0,
    seed: int = 0,
) -> list[TraceRequest]:
    """Short system prompt + one retrieved document + a unique question.

    Document ``d`` is retrieved with probability proportional to ``1 / (d + 1) ** zipf_s``: a few
    hot documents and a long tail, the shape that makes "pin the hot prefixes" attractive.

    [zh]
    简短的 system prompt + 一篇检索到的文档 + 一个独一无二的问题。

    第 ``d`` 篇文档被检索到的概率与 ``1 / (d + 1) ** zipf_s`` 成正比：少数热门文档加一条长尾，正是让“固定热门
    前缀”显得有吸引力的分布形状。
    """
    b = _Builder(seed, block_size, rate)
    system = b.fresh(system_blocks)
    docs = [b.fresh(b.rng.randint(*doc_blocks)) for _ in range(num_docs)]
    weights = [1.0 / (d + 1) ** zipf_s for d in range(num_docs)]
    out = []
    for _ in range(num_requests):
        (doc,) = b.rng.choices(docs, weights)
        out.append(b.request(system + doc + b.fresh(b.rng.randint(*question_blocks))))
    return out


def multiturn_traffic(
    num_conversations: int = 300,
    *,
    turns: tuple[int, int] = (2, 8),
    system_blocks: int = 8,
    user_blocks: tuple[int, int] = (1, 4),
    answer_blocks: tuple[int, int] = (2, 8),
    think_time_s: float = 30.0,
    block_size: int = 16,
    rate: float = 2.0,
    seed: int = 0,
) -> list[TraceRequest]:
    """Chats: turn ``t`` = system prompt + all earlier turns (questions and answers) + a question.

    Conversations start as a Poisson process; within one, turns are ``think_time_s`` apart on
    average, so many chats interleave. Each turn's prompt extends the previous turn's prompt plus
    the previous answer: the prefix reuse a chat service lives on.

    [zh]
    多轮对话：第 ``t`` 轮 = system prompt + 之前所有轮次（问题和回答）+ 一个问题。

    对话的开始是一个 Poisson 过程；同一对话中相邻两轮平均间隔 ``think_time_s``，所以许多对话交错进行。每一轮
    的提示词都是在上一轮提示词后面接上上一轮的回答：这正是聊天服务赖以生存的前缀复用。
    """
    b = _Builder(seed, block_size, rate)
    system = b.fresh(system_blocks)
    pending: list[tuple[float, int, list[int]]] = []  # (time, conversation, contents)
    for conv in range(num_conversations):
        t = b.tick()
        history = list(system)
        for _ in range(b.rng.randint(*turns)):
            history = history + b.fresh(b.rng.randint(*user_blocks))
            pending.append((t, conv, history))
            history = history + b.fresh(b.rng.randint(*answer_blocks))
            t += b.rng.expovariate(1.0 / think_time_s)
    pending.sort(key=lambda x: (x[0], x[1]))
    return [b.request(contents, t) for t, _, contents in pending]


def thrashing_traffic(
    num_requests: int = 2000,
    *,
    num_prompts: int = 40,
    prompt_blocks: int = 32,
    question_blocks: tuple[int, int] = (1, 4),
    round_robin: bool = True,
    block_size: int = 16,
    rate: float = 20.0,
    seed: int = 0,
) -> list[TraceRequest]:
    """Many different system prompts (tenants), visited round-robin (or uniformly at random).

    With a cache smaller than ``num_prompts * prompt_blocks`` blocks, round-robin access evicts
    each prompt just before it is needed again: LRU gets ~0 hits while a policy that *keeps* some
    prompts (pinning, a minimum residence time, Belady) gets a steady fraction.

    [zh]
    许多不同的 system prompt（租户），轮流访问（或均匀随机访问）。

    缓存小于 ``num_prompts * prompt_blocks`` 块时，轮流访问会在每个提示词再次被需要之前恰好把它淘汰：LRU 几乎
    一次也命中不了，而*保留*一部分提示词的策略（固定、最短驻留时间、Belady）能得到稳定的命中比例。
    """
    b = _Builder(seed, block_size, rate)
    prompts = [b.fresh(prompt_blocks) for _ in range(num_prompts)]
    out = []
    for i in range(num_requests):
        p = prompts[i % num_prompts] if round_robin else b.rng.choice(prompts)
        out.append(b.request(p + b.fresh(b.rng.randint(*question_blocks))))
    return out


def mixed_traffic(*traces: Sequence[TraceRequest]) -> list[TraceRequest]:
    """Merge traces by timestamp, renumbering keys so that traces never share a prefix."""
    merged: list[TraceRequest] = []
    offset = 0
    for trace in traces:
        top = -1
        for r in trace:
            merged.append(TraceRequest(r.timestamp, tuple(k + offset for k in r.keys),
                                       r.num_tokens, r.block_size))
            top = max(top, max(r.keys))
        offset += top + 1
    merged.sort(key=lambda r: r.timestamp)  # stable: ties keep trace order
    return merged

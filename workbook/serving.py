"""A small serving loop over the course's pieces (given code, not a TODO).

Requests arrive over time; a scheduler admits them against a block pool, prefills each one (stage
6's :class:`~workbook.paged_prefill.PagedPrefiller`, which skips the cached prefix), then
decodes all running requests together, one token per step, and releases a request's blocks when it
ends. The block pool is stage 3's :class:`~workbook.block_pool.BlockPool` with stage 4's LRU
free queue and tail-first release (:class:`~workbook.eviction.EvictionPool`); with
``cache=False`` the same pool never reports a hit, so "cache off" differs from "cache on" in
exactly one thing.

Scheduling, in the style of a production engine without chunked prefill:

- first come, first served: the oldest arrived request is admitted when ``max_batch`` allows and
  the pool can give it every block it will need (prompt *and* output), counting its cached hits;
  a request that does not fit waits, and so do the ones behind it (no overtaking);
- admitted requests are prefilled one at a time, before the next decode step (prefill first);
  the first output token comes from the prefill's logits, so TTFT ends when its prefill ends;
- one decode step runs every running request's newest token through the model as one batch: each
  token's K/V is written into its request's blocks, and its query attends to its own context only
  (:func:`kernels.paged_attention.paged_decode_attention_torch`, a fused SDPA call over the padded
  batch). Greedy decoding, so cached and uncached runs generate the same tokens;
- a request that has produced ``max_new_tokens`` tokens is released: its blocks become free, and
  with the cache on, its prompt's full blocks stay cached until LRU hands them out again.

Time is measured, not simulated, but idle time is skipped: the clock advances by the measured
wall time of everything the engine does (admission checks, prefills, decode steps, bookkeeping;
device work waited for), and when nothing runs and the next request has not arrived yet, it jumps
to that arrival. A run therefore costs only its compute, and its latencies are those of a server
that never sleeps. Arrival times are in seconds from the start of the run. The clock that measures
is wall time by default; ``clock=time.process_time`` measures the process's own CPU time instead,
which keeps runs on a CPU comparable when other jobs share the cores (with one torch thread, the
two agree on an idle machine).

With ``cost=`` the run's clock is *virtual*: it advances by a cost model's seconds for each prefill
(``cost("prefill", computed, cached)``) and each decode step (``cost("decode", batch, context)``,
context = the tokens the batch attends to) instead of the measured ones, and admission checks cost
nothing. The schedule, the hits and every latency then depend only on the requests and the model of
cost, never on the machine's load; the measured durations are still recorded (``prefill_s``,
``decode_steps``) as the check that the model holds.

Invariants of :func:`serve` (tested): cached and uncached runs generate identical tokens for every
request (fp32); each request's ``hit_tokens + computed_tokens == prompt_tokens``; blocks in use
never exceed the pool; every block is free when the run ends.
"""
from __future__ import annotations

import json
import math
import os
import platform
import resource
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from autograder.i18n import tr
from kernels.device import describe_device, paged_attention_for
from kernels.model import DecoderLM, ModelConfig
from kernels.paged_attention import decode_slots, paged_decode_attention_torch
from kernels.timing import synchronize
from workbook.block_pool import Block
from workbook.eviction import EvictionPool
from workbook.paged_prefill import PagedPrefiller, pool_attention, write_kv

__all__ = [
    "SERVING_MODEL",
    "Request",
    "RequestRecord",
    "RunRecord",
    "ServingPool",
    "ServingEngine",
    "serve",
    "warm_up",
    "blocks_for",
    "compare_outputs",
]

#: The model the serving experiments run on a CPU: stage 6's architecture (GQA, RoPE, SwiGLU) at a
#: width where a 500-token prefill takes tens of milliseconds on 2 cores, so a run of 40 requests
#: takes a few seconds and prefill work (what a prefix cache removes) clearly dominates overhead.
SERVING_MODEL = ModelConfig(vocab_size=4096, hidden_size=256, intermediate_size=1024, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2)


@dataclass(frozen=True)
class Request:
    """One request: its prompt, when it arrives and how many tokens it wants.

    Invariants: ``prompt`` is non-empty, ``max_new_tokens >= 1``, ``arrival_s >= 0``. ``tag`` is a
    free label for plots and tables (e.g. which shared prefix the prompt uses).
    """

    request_id: str
    arrival_s: float
    prompt: tuple[int, ...]
    max_new_tokens: int
    tag: str = ""

    def __post_init__(self) -> None:
        if not self.prompt or self.max_new_tokens < 1 or not self.arrival_s >= 0:
            raise ValueError(tr(f"request {self.request_id!r}: need a prompt, max_new_tokens >= 1 and arrival_s >= 0",
                                f"请求 {self.request_id!r}：需要非空的提示词、max_new_tokens >= 1 且 arrival_s >= 0"))


def blocks_for(request: Request, block_size: int) -> int:
    """Blocks a request holds while it runs: its prompt and every generated token but the last
    (the last one's K/V is never needed: nothing attends to it)."""
    return -(-(len(request.prompt) + request.max_new_tokens - 1) // block_size)


@dataclass
class RequestRecord:
    """What one request saw. Times are seconds on the run's clock (see the module docstring).

    ``hit_tokens + computed_tokens == prompt_tokens``; ``output_tokens`` are the generated token ids;
    ``prefill_s`` is the compute time of its prefill alone (TTFT also counts waiting).
    """

    request_id: str
    tag: str
    arrival_s: float
    prompt_tokens: int
    hit_tokens: int
    computed_tokens: int
    output_tokens: list[int]
    admitted_s: float
    first_token_s: float
    finished_s: float
    prefill_s: float

    @property
    def ttft_s(self) -> float:
        """Time to first token: from arrival to the end of the request's prefill."""
        return self.first_token_s - self.arrival_s

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first (None for a single output token)."""
        n = len(self.output_tokens)
        return (self.finished_s - self.first_token_s) / (n - 1) if n > 1 else None

    @property
    def e2e_s(self) -> float:
        """End-to-end latency: from arrival to the last token."""
        return self.finished_s - self.arrival_s

    @property
    def queue_s(self) -> float:
        """Time spent waiting for admission."""
        return self.admitted_s - self.arrival_s


@dataclass
class RunRecord:
    """The measurements of one run: settings, one record per request, and run-level numbers.

    ``stats`` holds ``makespan_s`` (first arrival to last token), ``requests_per_s``,
    ``output_tokens_per_s``, ``prompt_tokens_per_s``, ``peak_blocks_in_use``, ``kv_bytes_per_block``,
    ``peak_kv_bytes`` (blocks in use at the peak times bytes per block), ``pool_kv_bytes`` (the whole
    preallocated pool), ``peak_rss_bytes`` (process resident memory, sampled every step) and, on
    CUDA, ``peak_cuda_bytes``. ``decode_steps`` lists (batch size, seconds) of every decode step.
    Saved as JSON (:meth:`save`) and loaded back (:meth:`load`) unchanged.
    """

    settings: dict[str, Any]
    requests: list[RequestRecord]
    stats: dict[str, float]
    decode_steps: list[tuple[int, float]] = field(default_factory=list)

    # -- views used by summaries and plots -----------------------------------------------------
    def column(self, name: str) -> list[Any]:
        """One field or property of every request, in request order (``None`` values dropped)."""
        values = [getattr(r, name) for r in self.requests]
        return [v for v in values if v is not None]

    def ledger(self) -> list[dict[str, int]]:
        """Per request: ``prompt_tokens``, ``hit_tokens``, ``computed_tokens`` (the cache's ledger)."""
        return [{"prompt_tokens": r.prompt_tokens, "hit_tokens": r.hit_tokens, "computed_tokens": r.computed_tokens}
                for r in self.requests]

    def outputs(self) -> dict[str, list[int]]:
        return {r.request_id: list(r.output_tokens) for r in self.requests}

    # -- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"settings": self.settings, "stats": self.stats, "decode_steps": [list(s) for s in self.decode_steps],
                "requests": [asdict(r) for r in self.requests]}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunRecord:
        return cls(dict(raw["settings"]), [RequestRecord(**r) for r in raw["requests"]], dict(raw["stats"]),
                   [(int(b), float(s)) for b, s in raw.get("decode_steps", [])])

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> RunRecord:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


class ServingPool(EvictionPool):
    """Stage 4's LRU pool with a cache switch and output-block reservations.

    With ``cache=False``, :meth:`lookup` finds nothing and :meth:`commit` registers nothing: every
    prompt is computed in full, through the same code path. :meth:`reserve` gives a running request
    the extra blocks its output needs; they are listed in its block table, so ``release`` frees them
    like the others and stage 3's invariants (``violations()``) keep holding.

    [zh]
    带缓存开关和输出块预留的第 4 阶段 LRU 块池。

    ``cache=False`` 时，:meth:`lookup` 什么也找不到，:meth:`commit` 什么也不登记：每个提示词都走同一条代码路径
    完整计算。:meth:`reserve` 给运行中的请求分配输出所需的额外块；这些块列在它的块表里，所以 ``release`` 会像
    释放其他块一样释放它们，第 3 阶段的不变量（``violations()``）始终成立。
    """

    def __init__(self, num_blocks: int, block_size: int, *, cache: bool = True) -> None:
        EvictionPool.__init__(self, num_blocks, block_size)
        self.cache = cache

    def lookup(self, keys: Sequence[bytes], num_tokens: int) -> list[Block]:
        return EvictionPool.lookup(self, keys, num_tokens) if self.cache else []

    def commit(self, request_id: str) -> None:
        if self.cache:
            EvictionPool.commit(self, request_id)
        else:
            self.requests[request_id].committed = True

    def can_admit(self, tokens: Sequence[int], total_blocks: int) -> bool:
        """Could a request with this prompt get ``total_blocks`` blocks now (its hits included)? Changes nothing.

        [zh]
        带这个提示词的请求现在能否拿到 ``total_blocks`` 个块（包括它命中的块）？不做任何改动。
        """
        hits = self.lookup(self.keys_of(tokens), len(tokens))
        revived = sum(1 for b in hits if b.ref_count == 0)  # free cached hits leave the free queue
        return total_blocks - len(hits) <= self.num_free - revived

    def reserve(self, request_id: str, total_blocks: int) -> list[int]:
        """Grow the request's block table to ``total_blocks`` fresh blocks; returns the whole table.

        [zh]
        把请求的块表扩展到 ``total_blocks`` 个块（新增的都是新块）；返回整张块表。
        """
        state = self.requests[request_id]
        extra = total_blocks - len(state.blocks)
        if extra > self.num_free:
            raise RuntimeError(tr(f"request {request_id!r} needs {extra} more blocks, {self.num_free} are free",
                                  f"请求 {request_id!r} 还需要 {extra} 个块，但只有 {self.num_free} 个空闲"))
        state.blocks.extend(self.allocate_block() for _ in range(extra))
        return [b.block_id for b in state.blocks]

    @property
    def num_in_use(self) -> int:  # O(1): every block is free or in use
        return self.num_blocks - self.num_free


@dataclass
class _Running:
    request: Request
    record: RequestRecord
    table: list[int]
    tokens: list[int]  # prompt + generated so far; K/V is in the pool for all but the last


def _rss_bytes() -> int:
    """Resident memory of this process now (Linux), else its peak so far."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if platform.system() == "Darwin" else peak * 1024


class ServingEngine:
    """A model, a :class:`ServingPool` and the K/V tensors behind it, serving one list of requests.

    Invariants: the pool and the K/V tensors have the same blocks (``PagedPrefiller``'s); a running
    request's block table covers its prompt and all its output positions from admission on, so a
    decode step never allocates; ``len(running) <= max_batch``. ``clock`` measures every piece of
    work (seconds; device work is waited for before reading it).

    [zh]
    一个模型、一个 :class:`ServingPool` 以及它背后的 K/V 张量，为一组请求服务。

    不变量：块池和 K/V 张量的块是同一批（``PagedPrefiller`` 的）；一个运行中的请求从准入起，块表就覆盖了它的
    提示词和全部输出位置，所以 decode 步骤从不分配块；``len(running) <= max_batch``。``clock`` 计量每一份工作
    （秒；读时钟之前先等设备上的工作完成）。
    """

    def __init__(self, model: DecoderLM, num_blocks: int, block_size: int = 16, *, cache: bool = True,
                 max_batch: int = 8, clock: Callable[[], float] = time.perf_counter,
                 cost: Callable[[str, int, int], float] | None = None) -> None:
        if max_batch < 1:
            raise ValueError(tr("max_batch must be >= 1", "max_batch 必须 >= 1"))
        self.model = model
        self.device = next(model.parameters()).device
        self.pool = ServingPool(num_blocks, block_size, cache=cache)
        kernel_name, kernel = paged_attention_for(self.device)
        self.prefill_kernel = kernel_name
        self.prefiller = PagedPrefiller(model, num_blocks, block_size, blocks=self.pool,
                                        attention=pool_attention(kernel))
        self.max_batch = max_batch
        self.clock = clock
        self.cost = cost  # None: the run's clock advances by measured time; else by this model's seconds

    @property
    def kv_bytes_per_block(self) -> int:
        return self.prefiller.pool.nbytes // self.pool.num_blocks

    def _prefill(self, request: Request, now: float) -> _Running:
        """Admit (the caller checked capacity), prefill, reserve the output blocks; the first token."""
        start = self.clock()
        logits, ledger = self.prefiller.prefill(request.prompt, request_id=request.request_id, keep=True)
        first = int(torch.argmax(logits))  # .item() waits for the device
        prefill_s = self.clock() - start
        return self._running(request, now, ledger, first, prefill_s)

    def _running(self, request: Request, now: float, ledger: dict[str, int], first: int,
                 prefill_s: float) -> _Running:
        """A request whose prompt is admitted (its K/V in the pool) as running: its output blocks
        reserved, its record started with its first token."""
        table = self.pool.reserve(request.request_id, blocks_for(request, self.pool.block_size))
        record = RequestRecord(request.request_id, request.tag, request.arrival_s, len(request.prompt),
                               ledger["hit_tokens"], ledger["computed_tokens"], [first], now, math.nan,
                               math.nan, prefill_s)
        return _Running(request, record, table, [*request.prompt, first])

    def _decode(self, running: list[_Running]) -> list[int]:
        """One greedy decode step of every running request; returns each one's next token."""
        bs = self.pool.block_size
        dev = self.device
        width = max(len(r.table) for r in running)
        # Pad each table with its own first block: a valid slot, masked out by the context length.
        tables = torch.tensor([r.table + [r.table[0]] * (width - len(r.table)) for r in running], device=dev)
        positions = torch.tensor([len(r.tokens) - 1 for r in running], device=dev)
        tokens = torch.tensor([r.tokens[-1] for r in running], device=dev)
        slots = decode_slots(tables, positions, bs)
        lengths = positions + 1
        kv = self.prefiller.pool

        def attend(layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
            write_kv(kv, layer, slots, k, v)
            return paged_decode_attention_torch(q, kv.k[layer], kv.v[layer], tables, lengths)

        with torch.no_grad():
            logits = self.model(tokens, positions, attend, last_only=False)
        return logits.argmax(dim=-1).tolist()

    def run(self, requests: Sequence[Request], *, settings: dict[str, Any] | None = None,
            progress: bool | str = False) -> RunRecord:
        """Serve ``requests`` (any order; arrival times decide) until all have finished; their record.

        ``progress``: show a progress bar (a string is its label). Raises ``ValueError`` before
        doing anything if a request can never fit into the pool, or request ids repeat.

        [zh]
        服务 ``requests``（顺序不限，由到达时间决定），直到全部结束；返回它们的记录。

        ``progress``：显示进度条（字符串就是它的标签）。如果有请求永远装不进块池，或者请求 id 重复，会在做任何事
        之前抛出 ``ValueError``。
        """
        pool, bs = self.pool, self.pool.block_size
        if len({r.request_id for r in requests}) != len(requests):
            raise ValueError(tr("request ids must be unique", "请求 id 必须唯一"))
        too_big = [r.request_id for r in requests if blocks_for(r, bs) > pool.num_blocks]
        if too_big:
            raise ValueError(tr(f"requests {too_big[:3]} need more than the pool's {pool.num_blocks} blocks",
                                f"请求 {too_big[:3]} 需要的块比块池的 {pool.num_blocks} 个块还多"))
        if pool.requests.keys() - {pool.PIN_ID}:
            raise RuntimeError(tr("the engine is still serving another run", "引擎还在服务另一次运行"))
        pending = deque(sorted(requests, key=lambda r: r.arrival_s))
        running: list[_Running] = []
        done: list[RequestRecord] = []
        steps: list[tuple[int, float]] = []
        peak_blocks, peak_rss = pool.num_in_use, _rss_bytes()
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        bar = _progress(len(requests), progress)
        now = pending[0].arrival_s if pending else 0.0

        def finish(r: _Running, at: float) -> None:
            r.record.finished_s = at
            pool.release(r.request.request_id)
            done.append(r.record)
            bar.update(1)

        while pending or running:
            if not running and pending[0].arrival_s > now:
                now = pending[0].arrival_s  # idle: nothing to do until the next arrival
            # Admit and prefill arrived requests, oldest first, while they fit.
            while pending and pending[0].arrival_s <= now and len(running) < self.max_batch:
                request = pending[0]
                synchronize(self.device)
                start = self.clock()
                if not pool.can_admit(request.prompt, blocks_for(request, bs)):
                    now += 0.0 if self.cost else self.clock() - start
                    break
                pending.popleft()
                admitted_at = now
                live = self._prefill(request, admitted_at)
                now += (self.cost("prefill", live.record.computed_tokens, live.record.hit_tokens) if self.cost
                        else self.clock() - start)
                live.record.first_token_s = now
                peak_blocks = max(peak_blocks, pool.num_in_use)
                if request.max_new_tokens == 1:
                    finish(live, now)
                else:
                    running.append(live)
            if not running:
                continue
            # One decode step of every running request.
            synchronize(self.device)
            start = self.clock()
            next_tokens = self._decode(running)
            still = []
            for r, token in zip(running, next_tokens, strict=True):
                r.tokens.append(token)
                r.record.output_tokens.append(token)
            elapsed = self.clock() - start
            now += self.cost("decode", len(running), sum(len(r.tokens) - 1 for r in running)) if self.cost else elapsed
            steps.append((len(running), elapsed))
            for r in running:
                if len(r.record.output_tokens) == r.request.max_new_tokens:
                    finish(r, now)
                else:
                    still.append(r)
            running = still
            peak_rss = max(peak_rss, _rss_bytes())
        bar.close()
        done.sort(key=lambda rec: (rec.arrival_s, rec.request_id))
        return RunRecord(self._settings(settings), done, self._stats(done, peak_blocks, peak_rss), steps)

    def _settings(self, extra: dict[str, Any] | None) -> dict[str, Any]:
        param = next(self.model.parameters())
        out = {"cache": self.pool.cache, "num_blocks": self.pool.num_blocks, "block_size": self.pool.block_size,
               "max_batch": self.max_batch, "model": asdict(self.model.config),
               "dtype": str(param.dtype).removeprefix("torch."), "device": describe_device(self.device),
               "device_type": self.device.type, "prefill_attention": self.prefill_kernel,
               "clock": "virtual (cost model)" if self.cost else getattr(self.clock, "__name__", str(self.clock))}
        out.update(extra or {})
        return out

    def _stats(self, done: list[RequestRecord], peak_blocks: int, peak_rss: int) -> dict[str, float]:
        if not done:
            return {}
        makespan = max(r.finished_s for r in done) - min(r.arrival_s for r in done)
        makespan = max(makespan, 1e-9)
        per_block = self.kv_bytes_per_block
        stats = {
            "requests": len(done),
            "makespan_s": makespan,
            "requests_per_s": len(done) / makespan,
            "output_tokens_per_s": sum(len(r.output_tokens) for r in done) / makespan,
            "prompt_tokens_per_s": sum(r.prompt_tokens for r in done) / makespan,
            "peak_blocks_in_use": peak_blocks,
            "kv_bytes_per_block": per_block,
            "peak_kv_bytes": peak_blocks * per_block,
            "pool_kv_bytes": self.pool.num_blocks * per_block,
            "peak_rss_bytes": peak_rss,
        }
        if self.device.type == "cuda":
            stats["peak_cuda_bytes"] = torch.cuda.max_memory_allocated(self.device)
        return stats


class _NoBar:
    def update(self, n: int) -> None: ...

    def close(self) -> None: ...


def _progress(total: int, progress: bool | str) -> Any:
    if not progress:
        return _NoBar()
    from tqdm.auto import tqdm  # optional dependency of the progress bar only

    return tqdm(total=total, desc=progress if isinstance(progress, str) else "requests", unit="req", leave=False)


def warm_up(model: DecoderLM, block_size: int = 16) -> None:
    """Run a prefill and a few decode steps once, so the first measured request pays no first-call costs.

    [zh]
    先运行一次 prefill 和几个 decode 步骤，让第一个被测量的请求不必承担首次调用的开销。
    """
    vocab = model.config.vocab_size
    reqs = [Request(f"warm-{i}", 0.0, tuple((7 * i + j) % vocab for j in range(40 + 8 * i)), 3) for i in range(2)]
    ServingEngine(model, 16, block_size, max_batch=2).run(reqs)


def serve(model: DecoderLM, requests: Sequence[Request], *, num_blocks: int, block_size: int = 16,
          cache: bool = True, max_batch: int = 8, settings: dict[str, Any] | None = None,
          progress: bool | str = False, clock: Callable[[], float] = time.perf_counter) -> RunRecord:
    """One run on a fresh engine (an empty cache): :meth:`ServingEngine.run`."""
    engine = ServingEngine(model, num_blocks, block_size, cache=cache, max_batch=max_batch, clock=clock)
    return engine.run(requests, settings=settings, progress=progress)


def compare_outputs(a: RunRecord, b: RunRecord) -> list[str]:
    """Request ids whose generated tokens differ between two runs of the same requests.

    [zh]
    同一批请求的两次运行中，生成的 token 不同的那些请求 id。
    """
    out_a, out_b = a.outputs(), b.outputs()
    if out_a.keys() != out_b.keys():
        raise ValueError(tr("the runs served different requests", "两次运行服务的请求不一样"))
    return sorted(rid for rid in out_a if out_a[rid] != out_b[rid])


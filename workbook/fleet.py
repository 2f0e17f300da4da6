"""A fleet of serving replicas in simulated time: the world stage 9's router lives in (given code).

Every stage before stage 9 runs one engine. Here ``N`` replicas serve one request stream, and where a
request's prefix is cached depends on where the router sent the requests before it:

* :class:`Request` -- one prompt of a Mooncake trace at block granularity (512-token chained block
  ids, :mod:`workbook.traces`), with its arrival time in milliseconds; :func:`load_requests`.
* :class:`CostModel` -- what a request costs a replica: stage 7's ``predict_ttft`` (FLOPs over the
  rates of a calibration) for the tokens it must compute, plus the transfer of the KV blocks it fetches
  from the host tier. :data:`FLEET_COST` is the fixed calibration every run of the stage uses, so a
  number printed here is the same on every machine (time is simulated, never read from a clock).
* :class:`Replica` -- a FIFO server with a GPU block cache (LRU, evicting a prompt's tail first, as
  stage 4's pool does) and an optional host-memory tier (LRU too) that receives the GPU's evictions.
* :class:`KVEvent` -- what replicas emit as their caches change (``stored`` / ``removed``, with the
  replica, the tier, the block id and a per-replica sequence number), as vLLM and SGLang emit KV
  events; :class:`EventStream` delivers them to the router late, twice or out of order (seeded).
* :func:`simulate` -- route a trace through a policy (an object with ``choose(request, view)``);
  :func:`replay_assignment` -- evaluate a fixed list of choices (e.g. recorded from another router).
  Both return a :class:`FleetRun`: per request the replica, the blocks hit per tier and the TTFT;
  in summary the token hit rate, TTFT percentiles and the load balance (max / mean work).
* :class:`RoundRobin` and :class:`LeastLoaded` -- the two routers that ignore the caches.

[zh]
一组推理副本（replica）的模拟，时间是模拟出来的：这是第 9 阶段路由器所处的环境（给定代码）。
此前每个阶段都只有一个引擎。这里 ``N`` 个副本共同服务一条请求流，一个请求的前缀缓存在哪个副本上，
取决于路由器之前把请求发到了哪里。请求的代价 = 第 7 阶段的 ``predict_ttft``（按固定校准）计算未命中的
token，加上从主机内存层取回 KV 块的传输时间；固定校准让每台机器上打印的数字都一样。
"""
from __future__ import annotations

import heapq
import math
import random
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple, Protocol

from autograder.i18n import tr
from kernels.calibration import Calibration
from kernels.config import ModelConfig
from workbook.traces import MOONCAKE_BLOCK_SIZE, load_mooncake
from workbook.ttft import predict_ttft

__all__ = [
    "Request", "load_requests", "CostModel", "FLEET_MODEL", "FLEET_CALIBRATION", "FLEET_COST",
    "KVEvent", "EventStream", "Replica", "FleetView", "Policy", "RoundRobin", "LeastLoaded",
    "Fixed", "Served", "FleetRun", "simulate", "replay_assignment", "percentile", "GPU", "HOST",
]

#: The two tiers a block can live in on a replica.
GPU, HOST = "gpu", "host"
STORED, REMOVED = "stored", "removed"


# ------------------------------------------------------------------------------------------------
# Requests
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """One prompt to route.

    Invariants: ``blocks`` is non-empty and holds chained block ids (block ``i`` names the first
    ``i + 1`` blocks of the prompt, so two prompts share a prefix of ``k`` blocks exactly when their
    first ``k`` ids are equal); ``(len(blocks) - 1) * block_size < input_tokens <= len(blocks) *
    block_size``; ``arrival_ms >= 0``; ``output_tokens >= 0``.

    [zh]
    一个待路由的提示词。``blocks`` 是链式块 id：第 ``i`` 个 id 代表提示词的前 ``i + 1`` 个块，
    所以两个提示词前 ``k`` 个 id 相同，当且仅当它们共享 ``k`` 个块的前缀。
    """

    index: int
    arrival_ms: float
    input_tokens: int
    output_tokens: int
    blocks: tuple[int, ...]
    block_size: int = MOONCAKE_BLOCK_SIZE

    def __post_init__(self) -> None:
        n = len(self.blocks)
        if n == 0 or not (n - 1) * self.block_size < self.input_tokens <= n * self.block_size:
            raise ValueError(tr(f"request {self.index}: {self.input_tokens} tokens do not fill {n} blocks",
                                f"请求 {self.index}：{self.input_tokens} 个 token 与 {n} 个块对不上"))
        if self.arrival_ms < 0 or self.output_tokens < 0:
            raise ValueError(tr(f"request {self.index}: negative arrival or output length",
                                f"请求 {self.index}：到达时间或输出长度为负"))


def load_requests(trace: str = "conversation", limit: int | None = None) -> list[Request]:
    """The requests of a Mooncake trace (``"conversation"`` or ``"synthetic"``), in arrival order.

    [zh]
    读取 Mooncake trace（``"conversation"`` 或 ``"synthetic"``）的请求，按到达顺序排列。
    """
    import json

    from workbook.traces import MOONCAKE_TRACES, data_dir

    outputs: list[int] = []
    path = data_dir() / MOONCAKE_TRACES[trace] if trace in MOONCAKE_TRACES else trace
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                outputs.append(int(json.loads(line)["output_length"]))
                if limit is not None and len(outputs) >= limit:
                    break
    return [Request(i, t.timestamp * 1000.0, t.num_tokens, out, t.keys, t.block_size)
            for i, (t, out) in enumerate(zip(load_mooncake(trace, limit=limit), outputs, strict=True))]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between ranks (NaN when empty).

    [zh]
    第 ``q`` 百分位数（0..100），在相邻名次之间线性插值（空列表为 NaN）。
    """
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# ------------------------------------------------------------------------------------------------
# Cost model
# ------------------------------------------------------------------------------------------------
#: The model whose prefills the fleet runs: Llama-3-8B's shape (32 layers, 4096 wide, 8 KV heads).
FLEET_MODEL = ModelConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336,
                          num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                          max_position_embeddings=131072, qkv_bias=False)

#: A fixed calibration with rates of the order a data-center GPU reaches (set, not measured on your
#: machine): GEMMs get faster per FLOP with more rows, attention runs below the GEMM rate.
FLEET_CALIBRATION = Calibration(
    gemm_flops_per_s={1: 3e12, 64: 1.5e14, 512: 5.5e14, 4096: 7e14, 32768: 7.5e14},
    head_flops_per_s=3e13,
    attention_flops_per_s={(1, 1): 1.5e11, (512, 512): 2.5e14, (512, 8192): 4e14, (4096, 4096): 4.5e14,
                           (4096, 32768): 5e14, (32768, 32768): 6e14},
    elementwise_s={1: 1e-5, 4096: 2e-3, 32768: 1.6e-2},
    overhead_s=2e-3,
    device="fixed (stage 9)",
)


@dataclass(frozen=True)
class CostModel:
    """What a request costs the replica that serves it, in milliseconds.

    ``prefill_ms(computed, cached)`` is stage 7's ``predict_ttft`` for ``model`` under ``calibration``
    (computing ``computed`` tokens after ``cached`` reused ones); ``transfer_ms(blocks)`` moves that
    many KV blocks from host memory at ``host_gbps`` (GB/s, 1e9 bytes). Invariants: ``host_gbps > 0``;
    ``block_bytes`` is the KV of one block (K and V, every layer, ``dtype_bytes`` each); predictions
    are memoized, so a call costs a dict lookup after the first.

    [zh]
    一个请求在服务它的副本上的代价（毫秒）。``prefill_ms(computed, cached)`` 就是第 7 阶段的
    ``predict_ttft``；``transfer_ms(blocks)`` 是以 ``host_gbps``（GB/s）从主机内存搬运这么多个 KV 块的时间。
    """

    model: ModelConfig = FLEET_MODEL
    calibration: Calibration = FLEET_CALIBRATION
    block_size: int = MOONCAKE_BLOCK_SIZE
    host_gbps: float = 25.0
    dtype_bytes: int = 2
    _memo: dict[tuple[int, int], float] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.host_gbps > 0 or self.block_size < 1:
            raise ValueError(tr("host_gbps and block_size must be positive", "host_gbps 和 block_size 必须是正数"))

    @property
    def block_bytes(self) -> int:
        m = self.model
        return 2 * m.num_hidden_layers * m.num_key_value_heads * m.head_dim * self.dtype_bytes * self.block_size

    def prefill_ms(self, computed: int, cached: int = 0) -> float:
        """Predicted ms to prefill ``computed`` tokens after ``cached`` reused ones (``computed >= 1``).

        [zh]
        在复用 ``cached`` 个 token 之后计算 ``computed`` 个 token 的预测耗时（毫秒，要求 ``computed >= 1``）。
        """
        key = (computed, cached)
        ms = self._memo.get(key)
        if ms is None:
            ms = self._memo[key] = 1e3 * predict_ttft(self.model, computed, cached, self.calibration)
        return ms

    def transfer_ms(self, blocks: int) -> float:
        """Ms to move ``blocks`` KV blocks from the host tier to the GPU (0 for none).

        [zh]
        把 ``blocks`` 个 KV 块从主机内存层搬到 GPU 的耗时（毫秒，0 个块为 0）。
        """
        if blocks < 0:
            raise ValueError(tr(f"cannot move {blocks} blocks", f"不能搬运 {blocks} 个块"))
        return 1e3 * blocks * self.block_bytes / (self.host_gbps * 1e9)

    def cached_tokens(self, request: Request, blocks: int) -> int:
        """Tokens a prefill reuses when ``blocks`` leading blocks are held: never the whole prompt
        (the last token is always computed, as in stage 3).

        [zh]
        开头 ``blocks`` 个块命中时 prefill 复用的 token 数：永远不是整个提示词（最后一个 token 总要计算，同第 3 阶段）。
        """
        return min(blocks * self.block_size, request.input_tokens - 1)

    def with_bandwidth(self, host_gbps: float) -> CostModel:
        return replace(self, host_gbps=host_gbps, _memo=self._memo)


FLEET_COST = CostModel()


# ------------------------------------------------------------------------------------------------
# KV events
# ------------------------------------------------------------------------------------------------
class KVEvent(NamedTuple):
    """One change of one replica's cache: block ``block`` was ``stored`` in / ``removed`` from ``tier``.

    Invariants: ``kind`` is ``"stored"`` or ``"removed"``; ``tier`` is ``"gpu"`` or ``"host"``;
    ``seq`` numbers the events of one replica from 0 in the order the replica made the changes, so of
    two events about the same block and replica the one with the larger ``seq`` is the newer state;
    ``time_ms`` is when the replica emitted it. (A named tuple, not a checked dataclass: a trace makes
    hundreds of thousands of them; :meth:`checked` validates one built by hand.)

    [zh]
    一个副本缓存的一次变化：块 ``block`` 被存入（``stored``）或移出（``removed``）``tier`` 层。
    ``seq`` 是该副本事件的序号，从 0 开始按发生顺序递增：同一块、同一副本的两个事件，``seq`` 大的是较新的状态。
    """

    kind: str
    replica: int
    tier: str
    block: int
    seq: int
    time_ms: float = 0.0

    def checked(self) -> KVEvent:
        if self.kind not in (STORED, REMOVED) or self.tier not in (GPU, HOST) or self.seq < 0:
            raise ValueError(tr(f"not a KV event: {self!r}", f"不是合法的 KV 事件：{self!r}"))
        return self


class EventStream:
    """Delivers replicas' events to the router ``delay_ms`` after they happen, with seeded faults.

    Each event arrives ``delay_ms + U(0, jitter_ms)`` after its emission (a jitter reorders events),
    and with probability ``duplicate_rate`` a second copy arrives up to ``jitter_ms + delay_ms`` later.
    Invariants: deterministic given ``seed``; :meth:`due` returns every event whose arrival is at or
    before ``now_ms``, in arrival order (ties: emission order), each copy once. Each heap entry holds
    a list of events that arrive together (one event, or without jitter and duplicates, one
    replica's events of one moment): a trace makes millions of events, and one heap operation per
    request instead of per event is most of a simulation's time saved.

    [zh]
    把副本的事件在发生 ``delay_ms`` 之后交给路由器，并按种子注入故障：抖动 ``jitter_ms`` 会打乱顺序，
    ``duplicate_rate`` 的概率重复投递一次。给定 ``seed`` 时完全确定。
    """

    def __init__(self, *, delay_ms: float = 0.0, jitter_ms: float = 0.0, duplicate_rate: float = 0.0,
                 seed: int = 0) -> None:
        if delay_ms < 0 or jitter_ms < 0 or not 0 <= duplicate_rate <= 1:
            raise ValueError(tr("delays must be >= 0 and duplicate_rate in [0, 1]",
                                "延迟必须 >= 0，duplicate_rate 必须在 [0, 1] 之间"))
        self.delay_ms, self.jitter_ms, self.duplicate_rate = delay_ms, jitter_ms, duplicate_rate
        self._rng = random.Random(seed)
        self._heap: list[tuple[float, int, list[KVEvent]]] = []
        self._order = 0
        self.emitted = 0
        self.delivered = 0

    def _push(self, at: float, events: list[KVEvent]) -> None:
        heapq.heappush(self._heap, (at, self._order, events))
        self._order += 1

    def emit(self, event: KVEvent) -> None:
        self.emitted += 1
        base = event.time_ms + self.delay_ms
        self._push(base + (self._rng.uniform(0, self.jitter_ms) if self.jitter_ms else 0.0), [event])
        if self.duplicate_rate and self._rng.random() < self.duplicate_rate:
            self._push(base + self._rng.uniform(0, self.jitter_ms + self.delay_ms), [event])

    def emit_all(self, events: list[KVEvent]) -> None:
        """:meth:`emit` each of ``events`` in order, as one heap entry when they arrive together.

        [zh]
        按顺序对 ``events`` 中每个事件调用 :meth:`emit`；它们同时到达时只占堆里的一项。
        """
        if not events:
            return
        at = events[0].time_ms
        jitter, duplicates = self.jitter_ms, self.duplicate_rate
        if jitter or duplicates or any(e.time_ms != at for e in events):
            # each arrival drawn on its own, as emit() draws it (the same draws in the same order),
            # with the stream's state in locals: this loop runs once per event of a faulty stream
            uniform, draw, push, heap, delay = self._rng.uniform, self._rng.random, heapq.heappush, self._heap, \
                self.delay_ms
            order = self._order
            for event in events:
                base = event.time_ms + delay
                push(heap, (base + (uniform(0, jitter) if jitter else 0.0), order, [event]))
                order += 1
                if duplicates and draw() < duplicates:
                    push(heap, (base + uniform(0, jitter + delay), order, [event]))
                    order += 1
            self._order = order
            self.emitted += len(events)
            return
        # same arrival for all: their ties would be broken by emission order, which the list keeps
        self.emitted += len(events)
        self._push(at + self.delay_ms, list(events))

    def due(self, now_ms: float) -> list[KVEvent]:
        out: list[KVEvent] = []
        while self._heap and self._heap[0][0] <= now_ms:
            out.extend(heapq.heappop(self._heap)[2])
        self.delivered += len(out)
        return out


# ------------------------------------------------------------------------------------------------
# Replicas
# ------------------------------------------------------------------------------------------------
class Replica:
    """One serving replica: a FIFO server, a GPU block cache and an optional host tier.

    Invariants: ``len(gpu) <= gpu_blocks`` and ``len(host) <= host_blocks``; a block is in at most one
    tier; both are LRU (least recently used first in iteration order); a prompt is touched tail first,
    so its head is the most recent and eviction takes a prompt's tail before its head (stage 4's
    order); every change emits one :class:`KVEvent` with the next ``seq`` (so ``seq`` counts the
    changes so far), or with ``record=False`` only counts it: a router that takes no events need not
    have millions built; ``free_at_ms`` is when the last request routed here finishes its prefill.

    [zh]
    一个副本：先进先出的服务队列、GPU 块缓存和可选的主机内存层。两层都按 LRU 淘汰；一个提示词从尾到头
    依次被访问，所以淘汰时先淘汰尾部（与第 4 阶段相同）；每次变化都发出一个带下一个 ``seq`` 的事件。
    """

    def __init__(self, rid: int, gpu_blocks: int, host_blocks: int = 0, *, record: bool = True) -> None:
        if gpu_blocks < 1 or host_blocks < 0:
            raise ValueError(tr("gpu_blocks must be >= 1 and host_blocks >= 0",
                                "gpu_blocks 必须 >= 1，host_blocks 必须 >= 0"))
        self.rid, self.gpu_blocks, self.host_blocks = rid, gpu_blocks, host_blocks
        self.gpu: OrderedDict[int, None] = OrderedDict()
        self.host: OrderedDict[int, None] = OrderedDict()
        self.free_at_ms = 0.0
        self.work_ms = 0.0
        self.seq = 0
        self.record = record

    def held(self, blocks: Sequence[int]) -> tuple[int, int]:
        """(leading blocks on the GPU, further leading blocks in the host tier right after them).

        [zh]
        （开头连续在 GPU 上的块数，紧接其后连续在主机内存层的块数）。
        """
        g = 0
        while g < len(blocks) and blocks[g] in self.gpu:
            g += 1
        h = g
        while h < len(blocks) and blocks[h] in self.host:
            h += 1
        return g, h - g

    def admit(self, blocks: Sequence[int], now_ms: float) -> list[KVEvent]:
        """Hold every block of a served prompt on the GPU (tail first), evicting LRU blocks to the host
        tier (or away); returns the events, in the order the changes happened (none if not ``record``).

        [zh]
        把一个已服务提示词的全部块放进 GPU（从尾到头），按 LRU 把块淘汰到主机内存层（或丢弃）；返回事件。
        """
        # The inner loop of every simulation (millions of blocks per notebook): events are built as plain
        # tuples of the named type (no __new__ call per change) and ``seq`` counts in a local.
        out: list[KVEvent] = []
        emit = out.append if self.record else None
        event = tuple.__new__
        gpu, host, gpu_blocks, host_blocks, rid = self.gpu, self.host, self.gpu_blocks, self.host_blocks, self.rid
        seq = self.seq
        for b in reversed(blocks):
            if b in gpu:
                gpu.move_to_end(b)
                continue
            host.pop(b, None)  # fetched or recomputed: the GPU copy replaces the host one
            gpu[b] = None
            if emit:
                emit(event(KVEvent, (STORED, rid, GPU, b, seq, now_ms)))
            seq += 1
            while len(gpu) > gpu_blocks:
                old, _ = gpu.popitem(last=False)
                if emit:
                    emit(event(KVEvent, (REMOVED, rid, GPU, old, seq, now_ms)))
                seq += 1
                if host_blocks:
                    host[old] = None
                    if emit:
                        emit(event(KVEvent, (STORED, rid, HOST, old, seq, now_ms)))
                    seq += 1
                    while len(host) > host_blocks:
                        gone, _ = host.popitem(last=False)
                        if emit:
                            emit(event(KVEvent, (REMOVED, rid, HOST, gone, seq, now_ms)))
                        seq += 1
        self.seq = seq  # one counter per replica: the order of its own changes
        return out


# ------------------------------------------------------------------------------------------------
# Policies
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FleetView:
    """What a router knows when a request arrives: the time, each replica's predicted queue wait
    (ms until it is free), and the cost model. A router that keeps an index feeds it from the events
    its ``observe`` receives.

    [zh]
    请求到达时路由器知道的信息：当前时间、每个副本预计的排队等待（毫秒）和成本模型。
    """

    now_ms: float
    queue_ms: tuple[float, ...]
    cost: CostModel

    @property
    def replicas(self) -> int:
        return len(self.queue_ms)


class Policy(Protocol):
    """A router: ``choose(request, view) -> replica id``. Optional: ``observe(event)`` receives every
    KV event delivered to the router, before the ``choose`` of the request that arrives after it."""

    name: str

    def choose(self, request: Request, view: FleetView) -> int: ...


class RoundRobin:
    """Replica ``i mod N`` for the ``i``-th request: blind to caches and queues.

    [zh]
    第 ``i`` 个请求发给第 ``i mod N`` 个副本：既不看缓存，也不看排队。
    """

    name = "round-robin"

    def __init__(self) -> None:
        self._next = 0

    def choose(self, request: Request, view: FleetView) -> int:
        r = self._next % view.replicas
        self._next += 1
        return r


class LeastLoaded:
    """The replica with the shortest predicted queue (ties: lowest id): blind to caches.

    [zh]
    选预测排队最短的副本（并列时选编号最小的）：不看缓存。
    """

    name = "least-loaded"

    def choose(self, request: Request, view: FleetView) -> int:
        return min(range(view.replicas), key=lambda r: (view.queue_ms[r], r))


class Fixed:
    """Replays recorded choices: the ``i``-th routed request goes to ``assignment[i]``."""

    name = "recorded"

    def __init__(self, assignment: Sequence[int], name: str = "recorded") -> None:
        self.assignment, self.name = list(assignment), name
        self._i = 0

    def choose(self, request: Request, view: FleetView) -> int:
        r = self.assignment[self._i]
        self._i += 1
        return r


# ------------------------------------------------------------------------------------------------
# Runs
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Served:
    """How one request was served: its replica, the leading blocks found on its GPU and, after them,
    in its host tier, whether those were fetched, the tokens reused, and its wait and TTFT (ms).

    [zh]
    一个请求的服务记录：副本、GPU 命中块数、其后主机内存层命中块数、是否取回、复用的 token、排队与 TTFT（毫秒）。
    """

    index: int
    replica: int
    gpu_hit: int
    host_hit: int
    fetched: bool
    cached_tokens: int
    input_tokens: int
    wait_ms: float
    ttft_ms: float


@dataclass(frozen=True)
class FleetRun:
    """One routed trace. Invariants: ``served`` is in arrival order, one per request; ``work_ms[r]``
    is the prefill + transfer time replica ``r`` spent; every figure is simulated, so a run is the same
    on every machine.

    [zh]
    一次路由后的完整 trace。所有数字都来自模拟时间，在任何机器上都相同。
    """

    policy: str
    replicas: int
    served: tuple[Served, ...]
    work_ms: tuple[float, ...]
    events: int

    @property
    def hit_rate(self) -> float:
        """Prompt tokens reused / prompt tokens. [zh] 复用的提示词 token 占全部提示词 token 的比例。"""
        total = sum(s.input_tokens for s in self.served)
        return sum(s.cached_tokens for s in self.served) / total if total else 0.0

    def ttft(self, q: float) -> float:
        return percentile([s.ttft_ms for s in self.served], q)

    @property
    def balance(self) -> float:
        """Max over mean of per-replica work (1.0 = perfectly even).

        [zh]
        各副本工作量的最大值 / 平均值（1.0 为完全均衡）。
        """
        mean = sum(self.work_ms) / len(self.work_ms)
        return max(self.work_ms) / mean if mean else 1.0

    @property
    def assignment(self) -> list[int]:
        return [s.replica for s in self.served]

    def summary(self) -> dict[str, float | int | str]:
        return {"policy": self.policy, "replicas": self.replicas, "hit_rate": round(self.hit_rate, 4),
                "ttft_p50_ms": round(self.ttft(50), 1), "ttft_p90_ms": round(self.ttft(90), 1),
                "ttft_p99_ms": round(self.ttft(99), 1), "balance": round(self.balance, 3)}


FetchRule = Callable[[Request, int, int, CostModel], bool]


def fetch_always(request: Request, gpu_hit: int, host_hit: int, cost: CostModel) -> bool:
    """The default tier rule: fetch whatever the host tier holds."""
    return host_hit > 0


def simulate(requests: Iterable[Request], policy: Policy, replicas: int, *, gpu_blocks: int,
             host_blocks: int = 0, event_delay_ms: float = 0.0, event_jitter_ms: float = 0.0,
             duplicate_rate: float = 0.0, seed: int = 0, cost: CostModel = FLEET_COST,
             fetch: FetchRule | None = None) -> FleetRun:
    """Route ``requests`` (in arrival order) through ``policy`` over ``replicas`` replicas.

    Per request: deliver the KV events due by its arrival to ``policy.observe`` (if it has one), ask
    ``policy.choose``; on that replica find the leading blocks on its GPU and then in its host tier,
    fetch the host ones when ``fetch`` says so (default: always), and serve it FIFO: it starts when the
    replica is free, takes ``cost.prefill_ms`` of the tokens it computes plus ``cost.transfer_ms`` of
    the blocks it fetches, and its TTFT is its finish minus its arrival. The replica then holds the
    prompt's blocks and emits its events at the request's finish time. ``ValueError`` for a choice
    that is not a replica id.

    [zh]
    把 ``requests``（按到达顺序）经 ``policy`` 路由到 ``replicas`` 个副本上。每个请求：先把到达时刻前应送达的
    KV 事件交给 ``policy.observe``（若有），再问 ``policy.choose``；在选中的副本上找出开头在 GPU、其后在主机
    内存层的块，按 ``fetch`` 决定是否取回（默认总是取回），先进先出地服务：TTFT = 完成时刻 - 到达时刻。
    副本随后缓存该提示词的块，并在请求完成时刻发出事件。
    """
    if replicas < 1:
        raise ValueError(tr("a fleet needs at least one replica", "至少需要一个副本"))
    fetch_rule = fetch or fetch_always
    observe = getattr(policy, "observe", None)
    fleet = [Replica(r, gpu_blocks, host_blocks, record=observe is not None) for r in range(replicas)]
    stream = EventStream(delay_ms=event_delay_ms, jitter_ms=event_jitter_ms, duplicate_rate=duplicate_rate,
                         seed=seed)
    served: list[Served] = []
    last = -math.inf
    for req in requests:
        if req.arrival_ms < last:
            raise ValueError(tr("requests must come in arrival order", "请求必须按到达时间排序"))
        now = last = req.arrival_ms
        if observe is not None:
            for event in stream.due(now):
                observe(event)
        view = FleetView(now, tuple(max(0.0, rep.free_at_ms - now) for rep in fleet), cost)
        r = policy.choose(req, view)
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < replicas:
            raise ValueError(tr(f"{policy.name} chose {r!r}, not a replica id in 0..{replicas - 1}",
                                f"{policy.name} 选了 {r!r}，不是 0..{replicas - 1} 中的副本编号"))
        rep = fleet[r]
        g, h = rep.held(req.blocks)
        fetched = bool(h) and bool(fetch_rule(req, g, h, cost))
        cached = cost.cached_tokens(req, g + h if fetched else g)
        service = cost.prefill_ms(req.input_tokens - cached, cached) + (cost.transfer_ms(h) if fetched else 0.0)
        start = max(now, rep.free_at_ms)
        rep.free_at_ms = start + service
        rep.work_ms += service
        served.append(Served(req.index, r, g, h, fetched, cached, req.input_tokens, start - now,
                             rep.free_at_ms - now))
        stream.emit_all(rep.admit(req.blocks, rep.free_at_ms))
    # every change counted, whether or not its event was built (Replica.seq)
    return FleetRun(policy.name, replicas, tuple(served), tuple(rep.work_ms for rep in fleet),
                    sum(rep.seq for rep in fleet))


def replay_assignment(requests: Sequence[Request], assignment: Sequence[int], replicas: int, *,
                      name: str = "recorded", **kwargs: object) -> FleetRun:
    """Evaluate fixed choices (``assignment[i]`` for the ``i``-th request) like :func:`simulate`.

    [zh]
    像 :func:`simulate` 一样评估一组固定的选择（第 ``i`` 个请求去 ``assignment[i]``）。
    """
    if len(assignment) != len(requests):
        raise ValueError(tr(f"{len(assignment)} choices for {len(requests)} requests",
                            f"{len(requests)} 个请求却有 {len(assignment)} 个选择"))
    return simulate(requests, Fixed(assignment, name), replicas, **kwargs)  # type: ignore[arg-type]

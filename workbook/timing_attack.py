"""The prefix cache's timing side channel, measured on the learner's own engine (given code, stage 8).

A prefix hit skips prefill work, so the time to first token (TTFT) tells whether a prompt's prefix
was already cached -- possibly by *another* user. This module plays both sides against stage 6's
engine, in this process only (no attack leaves the machine):

- :class:`SharedEngine` -- stage 6's :class:`PagedPrefiller` over a :class:`TenantPool`: one cache
  shared by tenants, optionally salted per tenant (``extra_keys_for``, stage 8's TODO);
- :func:`sample_hit_miss` -- labelled TTFT samples in the style of Gu et al. (ICML 2025): a
  *victim* sends a random prompt, then the *attacker* sends a prompt sharing its first
  ``shared_len`` tokens (label hit) or an unrelated one (label miss), and times it;
- :func:`prefix_sweep` -- ROC AUC and medians as the shared prefix grows;
- :func:`recover_secret` -- the victim's prompt starts with one of ``k`` candidate secrets; the
  attacker probes each once and takes the fastest;
- :func:`roc_auc` (SciPy's Mann-Whitney U), :func:`effect_size`, and JSON recording
  (:func:`save_samples` / :func:`load_samples`), so that analyses can run on recorded samples.

The graded TODOs of stage 8 never time anything: they run on recorded or synthetic samples.

Timing on a shared CPU is noisy; every measurement runs inside :func:`quiet` (one torch thread, no
garbage collector), hit and miss trials are interleaved in a seeded random order so that load from
elsewhere hits both alike, and each trial uses fresh random prompts, so no probe is helped by an
earlier probe's blocks.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from scipy import stats

from autograder.i18n import tr
from kernels.model import DecoderLM, ModelConfig
from workbook.paged_prefill import PagedPrefiller
from workbook.tenant_isolation import ExtraKeysFor, TenantPool

VOCAB = 512
#: "wall": what a remote client sees (plus its network's noise); "cpu": the serving thread's CPU
#: time, which a neighbour's load on a shared machine does not inflate (torch runs on this thread
#: inside :func:`quiet`).
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


@contextmanager
def quiet(num_threads: int = 1) -> Iterator[None]:
    """Fewer sources of timing noise while measuring: ``num_threads`` torch threads (one thread is
    not slowed down by a neighbour's burst on the other core) and no garbage-collector pauses."""
    threads, gc_was_on = torch.get_num_threads(), gc.isenabled()
    torch.set_num_threads(num_threads)
    gc.disable()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        if gc_was_on:
            gc.enable()


@dataclass(frozen=True)
class Response:
    """One request as the client sees it (``ttft_s``, ``first_token``) and as the engine logged it."""

    ttft_s: float
    first_token: int
    hit_tokens: int


class SharedEngine:
    """One prefix-caching engine serving several tenants from one block pool.

    Invariants: every request goes through stage 6's :class:`PagedPrefiller` on a
    :class:`TenantPool` acting for the request's tenant; with ``extra_keys_for=None`` all tenants
    share one cache (the vulnerable default of early engines); with stage 8's salting function each
    tenant's blocks are keyed apart. ``submit`` times the prefill and the choice of the first token.

    [zh]
    一个带前缀缓存的引擎，用一个块池为多个租户服务。

    不变量：每个请求都经过第 6 阶段的 :class:`PagedPrefiller`，它建在代表该请求租户的 :class:`TenantPool`
    上；``extra_keys_for=None`` 时所有租户共用一个缓存（早期引擎那种有漏洞的默认做法）；用第 8 阶段的加盐函数
    时，每个租户的块的 key 互不相同。``submit`` 对 prefill 和第一个 token 的选取计时。
    """

    def __init__(self, model: DecoderLM | None = None, *, num_blocks: int = 2048, block_size: int = 16,
                 extra_keys_for: ExtraKeysFor | None = None, clock: str = "cpu") -> None:
        if clock not in CLOCKS:
            raise ValueError(tr(f"clock must be one of {sorted(CLOCKS)}", f"clock 必须是 {sorted(CLOCKS)} 之一"))
        self.clock = CLOCKS[clock]
        self.model = model if model is not None else DecoderLM.random(ModelConfig.tiny(), seed=0)
        self.pool = TenantPool(num_blocks, block_size, extra_keys_for=extra_keys_for)
        self.prefiller = PagedPrefiller(self.model, num_blocks, block_size, blocks=self.pool)

    @property
    def block_size(self) -> int:
        return self.pool.block_size

    def submit(self, prompt: Sequence[int], *, tenant: str) -> Response:
        """Serve ``prompt`` for ``tenant`` up to its first token; its full blocks stay cached.

        [zh]
        为 ``tenant`` 服务 ``prompt``，直到产生第一个 token；它的满块留在缓存里。
        """
        with self.pool.acting_for(tenant):
            start = self.clock()
            logits, ledger = self.prefiller.prefill(prompt)
            token = int(torch.argmax(logits))
            elapsed = self.clock() - start
        return Response(elapsed, token, ledger["hit_tokens"])

    def warm_up(self, prompt_len: int, times: int = 5, seed: int = 0) -> None:
        """A few untimed requests (first calls pay for allocations and lazy initialisation).

        [zh]
        几个不计时的请求（最初的几次调用要承担内存分配和延迟初始化的开销）。
        """
        rng = random.Random(f"warmup/{seed}")
        for _ in range(times):
            self.submit(fresh(rng, prompt_len), tenant="warm-up")


def fresh(rng: random.Random, n: int) -> list[int]:
    """``n`` random token ids: a prompt nobody has sent before (with overwhelming probability)."""
    return [rng.randrange(VOCAB) for _ in range(n)]


# -- samples and their JSON form ----------------------------------------------------------------
@dataclass
class TimingSamples:
    """TTFTs in seconds of attacker requests labelled hit (shared a prefix with a victim's prompt)
    or miss (shared nothing), and how they were taken (``meta``: lengths, tenants, seed...)."""

    hit: list[float]
    miss: list[float]
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> TimingSamples:
        hit, miss = [float(x) for x in raw["hit"]], [float(x) for x in raw["miss"]]
        return cls(hit, miss, dict(raw.get("meta", {})))


def save_samples(path: str | Path, samples: dict[str, TimingSamples]) -> Path:
    """Write named sample sets as JSON (``{"format": ..., "samples": {name: {...}}}``); returns the path."""
    path = Path(path)
    payload = {"format": "prefix-cache-workbook/ttft-samples/v1",
               "samples": {name: s.to_dict() for name, s in samples.items()}}
    path.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return path


def load_samples(path: str | Path) -> dict[str, TimingSamples]:
    """Read what :func:`save_samples` wrote."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if raw.get("format") != "prefix-cache-workbook/ttft-samples/v1":
        raise ValueError(tr(f"{path}: not a TTFT sample file", f"{path}：不是 TTFT 样本文件"))
    return {name: TimingSamples.from_dict(s) for name, s in raw["samples"].items()}


# -- statistics (maintained libraries, not hand-written) ----------------------------------------
def roc_auc(hit: Sequence[float], miss: Sequence[float]) -> float:
    """ROC AUC of the rule "faster = hit": P(a hit sample < a miss sample), ties counting half.

    This is the Mann-Whitney U statistic of (miss, hit) divided by the number of pairs; SciPy's
    ``mannwhitneyu`` computes U (scikit-learn's ``roc_auc_score`` would give the same number).
    0.5 is chance, 1.0 perfect separation.
    """
    if not hit or not miss:
        raise ValueError(tr("need at least one hit and one miss sample", "命中和未命中样本至少各要一个"))
    u = stats.mannwhitneyu(miss, hit, alternative="greater").statistic
    return float(u) / (len(hit) * len(miss))


def effect_size(hit: Sequence[float], miss: Sequence[float]) -> dict[str, float]:
    """How far apart hit and miss TTFTs are: medians (ms), their difference and ratio, ROC AUC, and
    a robust standardised difference (median difference over the pooled MAD, scaled like a SD).

    [zh]
    命中与未命中的 TTFT 相差多远：中位数（毫秒）、它们的差与比、ROC AUC，以及一个稳健的标准化差值（中位数之差
    除以合并的 MAD，按标准差的尺度缩放）。
    """
    mh, mm = statistics.median(hit), statistics.median(miss)
    mad = statistics.median([abs(x - mh) for x in hit] + [abs(x - mm) for x in miss]) * 1.4826
    return {"median_hit_ms": mh * 1e3, "median_miss_ms": mm * 1e3, "difference_ms": (mm - mh) * 1e3,
            "ratio": mm / mh if mh > 0 else float("inf"), "auc": roc_auc(hit, miss),
            "robust_d": (mm - mh) / mad if mad > 0 else float("inf")}


# -- experiments ----------------------------------------------------------------------------------
def sample_hit_miss(engine: SharedEngine, *, n: int, prompt_len: int, shared_len: int, seed: int = 0,
                    victim: str = "victim", attacker: str = "attacker") -> TimingSamples:
    """``n`` hit and ``n`` miss TTFTs of the attacker, taken in a seeded random order.

    Hit trial: the victim sends a fresh ``prompt_len``-token prompt; the attacker then sends its
    first ``shared_len`` tokens followed by fresh ones (``prompt_len`` in all) and is timed. Miss
    trial: the same, but the attacker's prompt shares nothing. Only whole blocks can hit, so a
    shared prefix shorter than one block gives no signal at all. ``meta["hit_tokens"]`` records
    what the engine actually served from the cache on each hit trial.

    [zh]
    攻击者的 ``n`` 个命中 TTFT 和 ``n`` 个未命中 TTFT，按固定种子的随机顺序采集。

    命中试验：受害者发送一个新的、长 ``prompt_len`` 个 token 的提示词；攻击者随后发送它的前 ``shared_len``
    个 token，后面接新 token（总长 ``prompt_len``），并对这次请求计时。未命中试验：同样的流程，只是攻击者的
    提示词与受害者的没有任何共同部分。只有整块才能命中，所以短于一块的共享前缀不会给出任何信号。
    ``meta["hit_tokens"]`` 记录每次命中试验中引擎实际从缓存提供了多少 token。
    """
    if not 0 <= shared_len <= prompt_len - 1 or n < 1:
        raise ValueError(tr("need n >= 1 and 0 <= shared_len < prompt_len",
                            "要求 n >= 1 且 0 <= shared_len < prompt_len"))
    rng = random.Random(f"hit-miss/{seed}/{shared_len}")
    labels = [True] * n + [False] * n
    rng.shuffle(labels)
    hit, miss, served = [], [], []
    with quiet():
        for is_hit in labels:
            secret = fresh(rng, prompt_len)
            engine.submit(secret, tenant=victim)
            head = secret[:shared_len] if is_hit else fresh(rng, shared_len)
            response = engine.submit(head + fresh(rng, prompt_len - shared_len), tenant=attacker)
            if is_hit:
                hit.append(response.ttft_s)
                served.append(response.hit_tokens)
            else:
                miss.append(response.ttft_s)
    meta = {"n": n, "prompt_len": prompt_len, "shared_len": shared_len, "block_size": engine.block_size,
            "victim": victim, "attacker": attacker, "seed": seed, "hit_tokens": served,
            "salted": engine.pool.extra_keys_for is not None}
    return TimingSamples(hit, miss, meta)


@dataclass(frozen=True)
class SweepPoint:
    shared_len: int
    samples: TimingSamples

    @property
    def auc(self) -> float:
        return roc_auc(self.samples.hit, self.samples.miss)

    @property
    def served_tokens(self) -> int:
        """Tokens the engine served from the cache on a hit trial (median over trials)."""
        return int(statistics.median(self.samples.meta["hit_tokens"]))


def prefix_sweep(engine: SharedEngine, lengths: Sequence[int], *, n: int = 30, prompt_len: int | None = None,
                 seed: int = 0, victim: str = "victim", attacker: str = "attacker") -> list[SweepPoint]:
    """:func:`sample_hit_miss` for each shared prefix length (prompts all ``prompt_len`` long, by
    default one block more than the longest prefix, so only the shared part changes).

    [zh]
    对每个共享前缀长度调用 :func:`sample_hit_miss`（提示词都是 ``prompt_len`` 长，默认比最长的前缀多一块，
    这样变化的只有共享的那部分）。
    """
    total = prompt_len if prompt_len is not None else max(lengths) + engine.block_size
    return [SweepPoint(length, sample_hit_miss(engine, n=n, prompt_len=total, shared_len=length, seed=seed,
                                               victim=victim, attacker=attacker)) for length in lengths]


@dataclass
class RecoveryResult:
    """Outcome of :func:`recover_secret`: ``correct`` of ``trials`` guesses right, against chance
    ``1 / num_candidates``; ``p_value`` of a one-sided binomial test (better than chance?), ``ci95``
    the two-sided Clopper-Pearson interval of the accuracy (both from SciPy's ``binomtest``). ``secret`` / ``other``
    are the TTFTs of probes of the right candidate / of the others (labelled samples too)."""

    correct: int
    trials: int
    num_candidates: int
    p_value: float
    ci95: tuple[float, float]
    secret: list[float]
    other: list[float]

    @property
    def accuracy(self) -> float:
        return self.correct / self.trials

    @property
    def chance(self) -> float:
        return 1.0 / self.num_candidates


def recover_secret(engine: SharedEngine, *, num_candidates: int = 8, secret_len: int = 64,
                   question_len: int = 16, probe_suffix_len: int = 16, trials: int = 40, seed: int = 0,
                   victim: str = "victim", attacker: str = "attacker",
                   guess: Callable[[list[float]], int] | None = None) -> RecoveryResult:
    """Each trial: fresh candidate secrets; the victim's prompt is one of them plus a question;
    the attacker probes every candidate (plus a suffix of its own) once, in random order, and
    guesses ``guess(ttfts)`` (default: the fastest). Probing order and secret are seeded.

    [zh]
    每次试验：生成新的候选秘密；受害者的提示词是其中一个再加一个问题；攻击者把每个候选（再加自己的一段后缀）
    按随机顺序各探测一次，然后猜 ``guess(ttfts)``（默认：最快的那个）。探测顺序和秘密都由种子固定。
    """
    if num_candidates < 2 or trials < 1:
        raise ValueError(tr("need at least 2 candidates and 1 trial", "至少要有 2 个候选和 1 次试验"))
    pick = guess or (lambda ttfts: min(range(len(ttfts)), key=ttfts.__getitem__))
    rng = random.Random(f"recover/{seed}")
    correct, secret_t, other_t = 0, [], []
    with quiet():
        for _ in range(trials):
            candidates = [fresh(rng, secret_len) for _ in range(num_candidates)]
            secret = rng.randrange(num_candidates)
            engine.submit(candidates[secret] + fresh(rng, question_len), tenant=victim)
            order = list(range(num_candidates))
            rng.shuffle(order)
            ttfts = [0.0] * num_candidates
            for i in order:
                ttfts[i] = engine.submit(candidates[i] + fresh(rng, probe_suffix_len), tenant=attacker).ttft_s
            correct += pick(ttfts) == secret
            secret_t.append(ttfts[secret])
            other_t += [t for i, t in enumerate(ttfts) if i != secret]
    p_value = stats.binomtest(correct, trials, 1.0 / num_candidates, alternative="greater").pvalue
    ci = stats.binomtest(correct, trials, 1.0 / num_candidates).proportion_ci(confidence_level=0.95)
    return RecoveryResult(correct, trials, num_candidates, float(p_value), (float(ci.low), float(ci.high)),
                          secret_t, other_t)

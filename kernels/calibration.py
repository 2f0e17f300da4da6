"""The rates a prefill cost model measured, and the predictions they give: no torch needed.

:class:`Calibration` holds what :mod:`kernels.cost_model` measured on one device (GEMM, attention
and head FLOP rates by size, element-wise and fixed seconds, the block manager's bookkeeping, and
optionally the seconds of a serving loop's decode step by batch size and context, and of whole
prefills by computed and cached tokens) and interpolates between the measured sizes. It lives
apart from the measuring, which needs torch, so that using a calibration (stage 7's
``predict_ttft``, a grading child of stage 7) does not import torch; :mod:`kernels.cost_model`
re-exports everything here.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise
from typing import Any

from autograder.i18n import tr
from kernels.config import ModelConfig
from kernels.flops import prefill_flops


def linear_flops(cfg: ModelConfig, rows: int) -> float:
    """FLOPs of every layer's projections and MLP for ``rows`` tokens (no head, no attention)."""
    return prefill_flops(cfg, rows)["linear"]


def head_flops(cfg: ModelConfig) -> float:
    return prefill_flops(cfg, 1)["head"]


def attention_flops(cfg: ModelConfig, queries: int, context: int) -> float:
    """FLOPs of every layer's attention: ``queries`` new tokens, the last at position ``context - 1``."""
    return prefill_flops(cfg, queries, context - queries)["attention"]


def _interp_loglog(points: dict[int, float], x: float) -> float:
    """Piecewise linear in log-log between measured points; the end values beyond them."""
    xs = sorted(points)
    if not xs:
        raise ValueError(tr("nothing measured", "没有任何测量"))
    if x <= xs[0]:
        return points[xs[0]]
    if x >= xs[-1]:
        return points[xs[-1]]
    for lo, hi in pairwise(xs):
        if lo <= x <= hi:
            w = (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
            return math.exp((1 - w) * math.log(points[lo]) + w * math.log(points[hi]))
    raise AssertionError(tr("unreachable", "不应运行到这里"))


def _interp_linear(points: dict[int, float], x: float) -> float:
    """Piecewise linear between measured points, extended along the nearest segment (or constant)."""
    xs = sorted(points)
    if len(xs) == 1:
        return points[xs[0]]
    for lo, hi in pairwise(xs):
        if x <= hi or hi == xs[-1]:
            w = (x - lo) / (hi - lo)
            return max(0.0, points[lo] + w * (points[hi] - points[lo]))
    raise AssertionError(tr("unreachable", "不应运行到这里"))


@dataclass(frozen=True)
class Calibration:
    """Rates measured on one device for one model shape.

    Invariants: every rate is positive (FLOP/s) and every time non-negative (s); the tables are
    keyed by the sizes that were measured (rows; ``(queries, context)``), and lookups between them
    interpolate (GEMM rate: log-log; element-wise time: linear; attention: the nearest measured
    shape in log distance; decode step: linear in batch size, then in context per request; whole
    prefill: linear in computed tokens, then in cached tokens), so a table measured at exactly the
    sizes used is read exactly. ``decode_step_s`` and ``prefill_s`` may be empty (a calibration of
    rates only); :meth:`decode_s` and :meth:`prefill_table_s` then refuse. ``prefill_s`` is measured
    on a full grid (every computed size at every cached size), so its lookups never miss a corner.

    [zh]
    在一台设备上、针对一种模型形状测得的速率。

    不变量：每个速率都是正数（FLOP/s），每个时间都不为负（秒）；各张表以实际测过的大小为键（行数；
    ``(queries, context)``），查表时在测过的点之间插值（GEMM 速率：log-log；逐元素运算时间：线性；
    attention：按对数距离取最近的测过的形状；decode 步骤：先按批大小线性插值，再按每个请求的上下文长度
    线性插值；完整的 prefill：先按 computed token 数线性插值，再按缓存的 token 数线性插值），所以正好在测过的
    大小上查表，读到的就是测量值本身。``decode_step_s`` 和 ``prefill_s`` 可以为空（只测了速率的校准），这时
    :meth:`decode_s` 和 :meth:`prefill_table_s` 会拒绝查询。``prefill_s`` 在完整的网格上测量（每个 computed
    大小配每个缓存大小），所以查表时不会缺角。
    """

    gemm_flops_per_s: dict[int, float]
    head_flops_per_s: float
    attention_flops_per_s: dict[tuple[int, int], float]
    elementwise_s: dict[int, float]
    overhead_s: float = 0.0
    bookkeeping_s_per_token: float = 0.0
    device: str = ""
    notes: dict[str, Any] = field(default_factory=dict)
    #: seconds of one decode step of ``batch`` requests, each attending to ``context`` tokens: ``(batch, context)``
    decode_step_s: dict[tuple[int, int], float] = field(default_factory=dict)
    #: seconds of one whole prefill computing ``computed`` tokens after ``cached`` reused ones: ``(computed, cached)``
    prefill_s: dict[tuple[int, int], float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rates = [*self.gemm_flops_per_s.values(), *self.attention_flops_per_s.values(), self.head_flops_per_s]
        if not self.gemm_flops_per_s or not self.attention_flops_per_s or not self.elementwise_s:
            raise ValueError(tr("a calibration needs GEMM, attention and element-wise measurements",
                                "校准需要 GEMM、attention 和逐元素运算三类测量"))
        if any(not r > 0 for r in rates):
            raise ValueError(tr("rates must be positive", "速率必须是正数"))
        if any(not t >= 0 for t in (*self.elementwise_s.values(), *self.decode_step_s.values(),
                                    *self.prefill_s.values(), self.overhead_s, self.bookkeeping_s_per_token)):
            raise ValueError(tr("times must be non-negative", "时间不能为负"))
        computed, cached = {c for c, _ in self.prefill_s}, {k for _, k in self.prefill_s}
        if len(self.prefill_s) != len(computed) * len(cached):
            raise ValueError(tr("the whole-prefill table needs every computed size at every cached size",
                                "完整 prefill 的表需要每个 computed 大小配每个缓存大小"))

    # -- lookups used by the cost model ---------------------------------------------------------
    def gemm_rate(self, rows: int) -> float:
        """FLOP/s of the model's linear layers with ``rows`` rows.

        [zh]
        模型各线性层在 ``rows`` 行时的 FLOP/s。
        """
        return _interp_loglog(self.gemm_flops_per_s, rows)

    def attention_rate(self, queries: int, context: int) -> float:
        """FLOP/s of attention of ``queries`` new tokens over ``context`` keys (nearest measured shape).

        [zh]
        ``queries`` 个新 token 对 ``context`` 个 key 做 attention 时的 FLOP/s（取最近的测过的形状）。
        """
        if (queries, context) in self.attention_flops_per_s:
            return self.attention_flops_per_s[(queries, context)]
        lq, lc = math.log(queries), math.log(context)
        key = min(self.attention_flops_per_s,
                  key=lambda k: (abs(math.log(k[0]) - lq) + abs(math.log(k[1]) - lc), k))
        return self.attention_flops_per_s[key]

    def other_s(self, computed: int, cached: int) -> float:
        """Seconds that are neither matmul nor attention: element-wise work on ``computed`` rows,
        the fixed overhead of a forward pass, and block bookkeeping over all ``computed + cached``
        prompt tokens (zero for a prefill that bypasses the block manager).

        [zh]
        既不是 matmul 也不是 attention 的秒数：``computed`` 行上的逐元素运算、一次前向的固定开销，以及对全部
        ``computed + cached`` 个提示词 token 做的块记账（绕过块管理器的 prefill 这一项为零）。
        """
        return (_interp_linear(self.elementwise_s, computed) + self.overhead_s
                + self.bookkeeping_s_per_token * (computed + cached))

    def decode_s(self, batch: int, context: float) -> float:
        """Seconds of one decode step of ``batch`` requests attending to ``context`` tokens each (on
        average): linear between the measured batch sizes at each measured context, then linear
        between those contexts (both extended along the nearest segment).

        [zh]
        ``batch`` 个请求（平均每个对 ``context`` 个 token 做 attention）的一个 decode 步骤的秒数：先在每个测过的
        上下文长度上，于测过的批大小之间线性插值，再在这些上下文长度之间线性插值（两者都沿最近的一段外推）。
        """
        if not self.decode_step_s:
            raise ValueError(tr("this calibration measured no decode step", "这份校准没有测量 decode 步骤"))
        contexts = sorted({c for _, c in self.decode_step_s})
        at = {c: _interp_linear({b: s for (b, cc), s in self.decode_step_s.items() if cc == c}, batch)
              for c in contexts}
        return _interp_linear(at, context)

    def prefill_table_s(self, computed: float, cached: float) -> float:
        """Seconds of one whole prefill computing ``computed`` tokens after ``cached`` reused ones, read
        from the table of measured prefills: linear between the measured computed sizes at each
        measured cached size, then linear between those cached sizes (both extended along the nearest
        segment). No formula of the work: the prefills themselves were timed.

        [zh]
        在 ``cached`` 个复用的 token 之后计算 ``computed`` 个 token 的一次完整 prefill 的秒数，从实测 prefill 的表里
        读出：先在每个测过的缓存大小上，于测过的 computed 大小之间线性插值，再在这些缓存大小之间线性插值（两者都沿
        最近的一段外推）。这里没有任何计算量公式：计时的就是 prefill 本身。
        """
        if not self.prefill_s:
            raise ValueError(tr("this calibration measured no whole prefill", "这份校准没有测量完整的 prefill"))
        cacheds = sorted({k for _, k in self.prefill_s})
        at = {k: _interp_linear({c: s for (c, kk), s in self.prefill_s.items() if kk == k}, computed)
              for k in cacheds}
        return _interp_linear(at, cached)

    def without_block_manager(self) -> Calibration:
        """The same rates for a prefill that never hashes or admits (a plain full prefill).

        [zh]
        速率不变，只是用于从不算哈希、也不做准入的 prefill（普通的完整 prefill）。
        """
        return replace(self, bookkeeping_s_per_token=0.0)

    # -- construction and JSON ------------------------------------------------------------------
    @classmethod
    def from_seconds(cls, cfg: ModelConfig, *, gemm_s: dict[int, float], head_s: float,
                     attention_s: dict[tuple[int, int], float], elementwise_s: dict[int, float],
                     forward1_s: float | None = None, bookkeeping_s: dict[int, float] | None = None,
                     decode_step_s: dict[tuple[int, int], float] | None = None,
                     prefill_s: dict[tuple[int, int], float] | None = None, device: str = "") -> Calibration:
        """Rates from measured seconds: ``gemm_s[rows]`` (all linear layers), ``head_s`` (one row),
        ``attention_s[(queries, context)]`` (one layer), ``elementwise_s[rows]`` (one forward),
        ``forward1_s`` (a whole one-token forward: its unexplained rest is the fixed overhead) and
        ``bookkeeping_s[prompt tokens]`` (admit + commit + release of a prompt of that length);
        ``decode_step_s[(batch, context)]`` and ``prefill_s[(computed, cached)]`` are kept as measured
        (seconds of a whole decode step, of a whole prefill).

        [zh]
        由测得的秒数算出速率：``gemm_s[rows]``（全部线性层）、``head_s``（一行）、
        ``attention_s[(queries, context)]``（一层）、``elementwise_s[rows]``（一次前向）、
        ``forward1_s``（只有一个 token 的完整前向：其中没被各项解释的部分就是固定开销）和
        ``bookkeeping_s[提示词 token 数]``（对这样长的提示词做一次 admit + commit + release）；
        ``decode_step_s[(batch, context)]`` 和 ``prefill_s[(computed, cached)]`` 按测得的原样保存（一整个 decode 步骤、
        一整次 prefill 的秒数）。
        """
        tiny = 1e-12
        layers = cfg.num_hidden_layers
        cal = cls(
            gemm_flops_per_s={r: linear_flops(cfg, r) / max(s, tiny) for r, s in gemm_s.items()},
            head_flops_per_s=head_flops(cfg) / max(head_s, tiny),
            attention_flops_per_s={k: attention_flops(cfg, *k) / max(layers * s, tiny) for k, s in attention_s.items()},
            elementwise_s=dict(elementwise_s),
            device=device,
            decode_step_s=dict(decode_step_s or {}),
            prefill_s=dict(prefill_s or {}),
        )
        overhead = 0.0
        if forward1_s is not None:
            explained = (linear_flops(cfg, 1) / cal.gemm_rate(1) + head_flops(cfg) / cal.head_flops_per_s
                         + attention_flops(cfg, 1, 1) / cal.attention_rate(1, 1) + cal.other_s(1, 0))
            overhead = max(0.0, forward1_s - explained)
        per_token = 0.0
        if bookkeeping_s:
            per_token = statistics.median(s / n for n, s in bookkeeping_s.items())
        return replace(cal, overhead_s=overhead, bookkeeping_s_per_token=per_token)

    def to_dict(self) -> dict[str, Any]:
        raw = asdict(self)
        raw["gemm_flops_per_s"] = {str(k): v for k, v in self.gemm_flops_per_s.items()}
        raw["attention_flops_per_s"] = {f"{q},{c}": v for (q, c), v in self.attention_flops_per_s.items()}
        raw["elementwise_s"] = {str(k): v for k, v in self.elementwise_s.items()}
        raw["decode_step_s"] = {f"{b},{c}": v for (b, c), v in self.decode_step_s.items()}
        raw["prefill_s"] = {f"{c},{k}": v for (c, k), v in self.prefill_s.items()}
        return raw

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Calibration:
        raw = dict(raw)
        raw["gemm_flops_per_s"] = {int(k): float(v) for k, v in raw["gemm_flops_per_s"].items()}
        raw["attention_flops_per_s"] = {tuple(int(x) for x in k.split(",")): float(v)
                                        for k, v in raw["attention_flops_per_s"].items()}
        raw["elementwise_s"] = {int(k): float(v) for k, v in raw["elementwise_s"].items()}
        raw["decode_step_s"] = {tuple(int(x) for x in k.split(",")): float(v)
                                for k, v in raw.get("decode_step_s", {}).items()}
        raw["prefill_s"] = {tuple(int(x) for x in k.split(",")): float(v) for k, v in raw.get("prefill_s", {}).items()}
        return cls(**raw)


# ------------------------------------------------------------------------------------------------
# Probes: zero-argument callables that do one kind of work at one size, for interleaved timing.
# ------------------------------------------------------------------------------------------------

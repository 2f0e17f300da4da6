"""Stage 7 reference: measure a prefix cache under traffic, explain the numbers, decide a setting.

A serving loop (given: :mod:`workbook.serving`) runs requests through stage 6's prefill with the
cache on or off and records what every request saw. This stage turns those records into an
engineering decision, with four pure functions over measurements:

1. :func:`latency_summary` -- percentiles of a latency list (p50, p90, p99: users feel the tail);
2. :func:`cache_accounting` -- from a run's ledger: the token hit rate and the prefill FLOPs the
   cache saved (the question's attention over the cached prefix is *not* saved);
3. :func:`predict_ttft` -- the time a prefill should take, from its FLOPs and the rates measured on
   this device (:class:`kernels.cost_model.Calibration`), to check that the measurements make sense;
4. :func:`choose_setting` -- given the measurements of several settings (cache on/off, pool sizes)
   and a service-level objective, the cheapest setting that meets it, or none.

Given code after the TODOs (:func:`summarize_run`, :func:`sweep_rows`, :func:`sweep_verdict`,
:func:`same_work_verdict`, :func:`fell_behind`, :func:`evidence_level`, :func:`decision_record`,
:func:`decision_markdown`) builds the tables, the verdicts and the decision record from them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from autograder.i18n import tr
from kernels.calibration import Calibration
from kernels.config import ModelConfig
from kernels.flops import prefill_flops
from workbook.contract import ResultError

#: The percentiles :func:`latency_summary` reports by default.
# zh: :func:`latency_summary` 默认给出的分位数。
PERCENTILES = (50, 90, 99)


def latency_summary(values: Sequence[float], percentiles: Sequence[float] = PERCENTILES) -> dict[str, float]:
    """Summary of a list of latencies (seconds): ``count``, ``mean``, ``max`` and one key per percentile.

    The key of percentile ``p`` is ``f"p{p:g}"`` (``"p50"``, ``"p90"``, ``"p99.9"``). A percentile
    interpolates linearly between the two closest ranks of the *sorted* values: ``p`` sits at
    fractional rank ``p / 100 * (count - 1)`` (rank 0 is the smallest value), so ``p0`` is the
    minimum, ``p100`` the maximum and ``p50`` the median. ``ValueError`` for an empty list, a
    value that is not a finite number, or a percentile outside ``[0, 100]``.

    [zh]
    一组延迟（秒）的汇总：``count``、``mean``、``max``，以及每个分位数一项。

    分位数 ``p`` 的键是 ``f"p{p:g}"``（``"p50"``、``"p90"``、``"p99.9"``）。分位数在*排好序*的值中相邻
    两个位置之间做线性插值：``p`` 位于小数位置 ``p / 100 * (count - 1)``（位置 0 是最小值），所以 ``p0``
    是最小值，``p100`` 是最大值，``p50`` 是中位数。列表为空、含有非有限数、或分位数不在 ``[0, 100]``
    之内时抛出 ``ValueError``。
    """
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError(tr("no values to summarize", "没有可以汇总的数值"))
    if not all(math.isfinite(v) for v in xs):
        raise ValueError(tr("latencies must be finite numbers", "延迟必须是有限的数"))
    if any(not 0 <= p <= 100 for p in percentiles):
        raise ValueError(tr("percentiles must lie in [0, 100]", "分位数必须在 [0, 100] 之间"))
    summary: dict[str, float] = {"count": len(xs), "mean": sum(xs) / len(xs), "max": max(xs)}
    # TODO 1 (s07.latency_summary)
    ### BEGIN SOLUTION
    ordered = sorted(xs)
    for p in percentiles:
        rank = p / 100 * (len(ordered) - 1)
        lo = math.floor(rank)
        hi = min(lo + 1, len(ordered) - 1)
        summary[f"p{p:g}"] = ordered[lo] + (rank - lo) * (ordered[hi] - ordered[lo])
    ### END SOLUTION
    return summary


def cache_accounting(ledger: Sequence[Mapping[str, int]], cfg: ModelConfig) -> dict[str, float]:
    """What the cache did over a run, from its ledger (one entry per request).

    Each entry has ``prompt_tokens``, ``hit_tokens`` (K/V reused) and ``computed_tokens``, with
    ``hit_tokens + computed_tokens == prompt_tokens`` and ``computed_tokens >= 1``. Returns
    ``requests``, ``prompt_tokens`` and ``hit_tokens`` (totals), ``hit_rate`` (hit tokens over
    prompt tokens: a token-weighted rate, 0.0 for an empty ledger), ``requests_with_hit``,
    ``flops_without_cache`` / ``flops_with_cache`` (prefill FLOPs of every request by
    :func:`kernels.flops.prefill_flops`: the whole prompt computed, or only the computed tokens
    after the hit ones), ``saved_flops`` (their difference) and ``saved_fraction`` (saved over
    without; 0.0 when nothing was computed). ``ValueError`` for an inconsistent entry.

    [zh]
    根据一次运行的账目（每个请求一项）统计缓存做了什么。

    每一项有 ``prompt_tokens``、``hit_tokens``（复用了 K/V 的 token）和 ``computed_tokens``，满足
    ``hit_tokens + computed_tokens == prompt_tokens`` 且 ``computed_tokens >= 1``。返回：``requests``、
    ``prompt_tokens`` 和 ``hit_tokens``（总数），``hit_rate``（命中 token 除以提示词 token：按 token 加权，
    账目为空时为 0.0），``requests_with_hit``（至少命中一个 token 的请求数），``flops_without_cache`` /
    ``flops_with_cache``（用 :func:`kernels.flops.prefill_flops` 算出的所有请求的 prefill FLOPs：整个提示词
    都计算，或者只计算命中之后的 computed token），``saved_flops``（两者之差）和 ``saved_fraction``（省下的
    除以不开缓存的；什么都没算时为 0.0）。某一项前后矛盾时抛出 ``ValueError``。
    """
    for i, entry in enumerate(ledger):
        n, hit, computed = entry["prompt_tokens"], entry["hit_tokens"], entry["computed_tokens"]
        if hit < 0 or computed < 1 or hit + computed != n:
            raise ValueError(tr(f"ledger entry {i} is inconsistent: {dict(entry)}", f"账目第 {i} 条前后矛盾：{dict(entry)}"))
    # TODO 2 (s07.cache_accounting)
    ### BEGIN SOLUTION
    prompt = sum(e["prompt_tokens"] for e in ledger)
    hit = sum(e["hit_tokens"] for e in ledger)
    without = sum(prefill_flops(cfg, e["prompt_tokens"])["total"] for e in ledger)
    with_cache = sum(prefill_flops(cfg, e["computed_tokens"], e["hit_tokens"])["total"] for e in ledger)
    totals = {
        "requests": len(ledger),
        "prompt_tokens": prompt,
        "hit_tokens": hit,
        "hit_rate": hit / prompt if prompt else 0.0,
        "requests_with_hit": sum(1 for e in ledger if e["hit_tokens"] > 0),
        "flops_without_cache": without,
        "flops_with_cache": with_cache,
        "saved_flops": without - with_cache,
        "saved_fraction": (without - with_cache) / without if without else 0.0,
    }
    ### END SOLUTION
    return totals


def predict_ttft(cfg: ModelConfig, computed: int, cached: int, cal: Calibration) -> float:
    """Predicted seconds of a prefill computing ``computed`` tokens after ``cached`` reused ones.

    The cost model: each kind of work takes its FLOPs (:func:`kernels.flops.prefill_flops` with
    these ``computed`` and ``cached``) divided by the rate this device reached *for that work at
    these sizes*: the linear layers at ``cal.gemm_rate(rows)`` with one row per computed token,
    attention at ``cal.attention_rate(queries, context)`` (the computed tokens' queries over the
    whole context, cached tokens included), the output head at ``cal.head_flops_per_s``; plus
    ``cal.other_s(computed, cached)``, the measured time that is not FLOPs (element-wise work,
    overhead, block bookkeeping). ``ValueError`` unless ``computed >= 1`` and ``cached >= 0``.

    [zh]
    预测一次 prefill 要多少秒：在 ``cached`` 个复用的 token 之后计算 ``computed`` 个 token。

    成本模型：每一类计算的耗时 = 它的 FLOPs（用 :func:`kernels.flops.prefill_flops` 按这次的 ``computed``
    和 ``cached`` 算出）除以本设备*在这个规模下做这类计算*的实测速率：线性层用 ``cal.gemm_rate(rows)``，
    每个 computed token 一行；attention 用 ``cal.attention_rate(queries, context)``（computed token 的
    query 对整个上下文，包括缓存的 token）；输出头用 ``cal.head_flops_per_s``；再加上
    ``cal.other_s(computed, cached)``，即不属于 FLOPs 的实测时间（逐元素运算、固定开销、块管理）。
    除非 ``computed >= 1`` 且 ``cached >= 0``，否则抛出 ``ValueError``。
    """
    if computed < 1 or cached < 0:
        raise ValueError(tr(f"need computed >= 1 and cached >= 0, got {computed} and {cached}",
                            f"要求 computed >= 1 且 cached >= 0，实际是 {computed} 和 {cached}"))
    # TODO 3 (s07.predict_ttft)
    ### BEGIN SOLUTION
    flops = prefill_flops(cfg, computed, cached)
    seconds = (flops["linear"] / cal.gemm_rate(computed)
               + flops["attention"] / cal.attention_rate(computed, computed + cached)
               + flops["head"] / cal.head_flops_per_s
               + cal.other_s(computed, cached))
    ### END SOLUTION
    return seconds


def _meets(measurement: Mapping[str, Any], slo: Mapping[str, float]) -> bool:
    """Does one measured setting meet every bound of the SLO (``value <= bound``; NaN never does)?

    [zh]
    一个测过的设置是否满足 SLO 的每个上限（``value <= bound``；NaN 永远不满足）？
    """
    return all(float(measurement[m]) <= bound for m, bound in slo.items())


def choose_setting(measurements: Sequence[Mapping[str, Any]], slo: Mapping[str, float]) -> dict[str, Any] | None:
    """The cheapest measured setting that meets a service-level objective, or ``None`` if none does.

    ``measurements``: one dict per measured setting, with ``cache`` (bool), ``num_blocks`` (pool
    size, the memory it costs) and a value for every metric the SLO names. ``slo`` maps metric
    names to upper bounds (e.g. ``{"ttft_p90": 0.5}``); a setting meets it when every named metric
    is ``<=`` its bound (a NaN value never does). Among the settings that meet it: the smallest
    ``num_blocks``; at equal pool size, the lower values of the SLO's metrics, compared in the SLO's
    order (first metric first); then cache off before cache on (the simpler system). Returns a copy
    of the chosen dict. ``ValueError`` for an
    empty SLO or a measurement that lacks one of its metrics.

    [zh]
    满足服务等级目标（SLO）的最省的那个测过的设置；一个都不满足时返回 ``None``。

    ``measurements``：每个测过的设置一个字典，包含 ``cache``（bool）、``num_blocks``（块池大小，也就是它
    占用的显存）以及 SLO 提到的每个指标的值。``slo`` 把指标名映射到上限（例如 ``{"ttft_p90": 0.5}``）；
    一个设置的每个指标都 ``<=`` 上限才算满足（NaN 永远不满足）。在满足的设置里：``num_blocks`` 最小的
    优先；块池一样大时，按 SLO 中指标的顺序比较，值更低的优先（先比第一个指标，一样再比第二个……）；
    都一样时，关缓存优先于开缓存（系统更简单）。
    返回被选中字典的副本。SLO 为空、或某个测量结果缺少 SLO 的指标时抛出 ``ValueError``。
    """
    if not slo:
        raise ValueError(tr("an SLO names at least one metric", "SLO 至少要指定一个指标"))
    for m in measurements:
        missing = [k for k in ("cache", "num_blocks", *slo) if k not in m]
        if missing:
            raise ValueError(tr(f"measurement {dict(m)} lacks {missing}", f"测量结果 {dict(m)} 缺少 {missing}"))
    # TODO 4 (s07.choose_setting)
    ### BEGIN SOLUTION
    meeting = [m for m in measurements if _meets(m, slo)]
    if not meeting:
        chosen = None
    else:
        best = min(meeting, key=lambda m: (m["num_blocks"], *(float(m[k]) for k in slo), bool(m["cache"])))
        chosen = dict(best)
    ### END SOLUTION
    return chosen


# -- given: tables and the decision record, built on the TODOs --------------------------------------
# zh: -- 给定代码：建立在各 TODO 之上的结果表和决策记录 --
def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _same_row(a: Any, b: Mapping[str, Any]) -> bool:
    """Equal mappings, where NaN equals NaN (a metric nobody measured).

    [zh]
    两个映射相等，其中 NaN 与 NaN 视为相等（表示没人测过的指标）。
    """
    def same(x: Any, y: Any) -> bool:
        return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
    return isinstance(a, Mapping) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)


def _checked_summary(values: Sequence[float]) -> dict[str, float]:
    """:func:`latency_summary` of ``values``, checked before a table uses it: every default key,
    each a finite number, each percentile between the smallest and the largest value.

    [zh]
    ``values`` 的 :func:`latency_summary`，在结果表使用之前先检查：默认的每个键都在，每个值都是有限数，
    每个分位数都落在最小值和最大值之间。
    """
    summary = latency_summary(values)
    keys = ("count", "mean", "max", *(f"p{p:g}" for p in PERCENTILES))
    lo, hi = min(values), max(values)
    bad = [k for k in keys if not isinstance(summary, dict) or not _is_number(summary.get(k))]
    bad += [k for k in keys[3:] if k not in bad and not lo - 1e-9 <= summary[k] <= hi + 1e-9]
    if bad:
        raise ResultError("s07.latency_summary",
                          f"a summary whose {', '.join(map(repr, bad))} is missing, not a number, or outside "
                          f"the values' range [{lo:.4g}, {hi:.4g}]",
                          f"一个汇总，其中的 {'、'.join(map(repr, bad))} 缺失、不是数，或者超出了这组值的范围 "
                          f"[{lo:.4g}, {hi:.4g}]")
    return summary


def _checked_accounting(ledger: Sequence[Mapping[str, int]], cfg: ModelConfig) -> dict[str, float]:
    """:func:`cache_accounting` of ``ledger``, checked before a table uses it: the keys it promises,
    as finite numbers, with rates between 0 and 1.

    [zh]
    ``ledger`` 的 :func:`cache_accounting`，在结果表使用之前先检查：它承诺的键都在、都是有限数，
    比例都在 0 到 1 之间。
    """
    acct = cache_accounting(ledger, cfg)
    keys = ("requests", "prompt_tokens", "hit_tokens", "hit_rate", "requests_with_hit", "saved_fraction")
    bad = [k for k in keys if not isinstance(acct, dict) or not _is_number(acct.get(k))]
    bad += [k for k in ("hit_rate", "saved_fraction") if k not in bad and not 0 <= acct[k] <= 1]
    if bad:
        raise ResultError("s07.cache_accounting",
                          f"an account whose {', '.join(map(repr, bad))} is missing, not a number, or (a rate) "
                          f"outside [0, 1]",
                          f"一份账目，其中的 {'、'.join(map(repr, bad))} 缺失、不是数，或者（作为比例）不在 [0, 1] 之内")
    return acct


def summarize_run(record: Any, cfg: ModelConfig | None = None) -> dict[str, Any]:
    """One row of a results table from a :class:`workbook.serving.RunRecord`.

    Latency percentiles (TTFT, TPOT, end to end) by :func:`latency_summary`, hit rate and saved
    FLOPs by :func:`cache_accounting` (``cfg`` defaults to the run's model), throughput and memory
    from the run's own statistics.

    [zh]
    由一条 :class:`workbook.serving.RunRecord` 得到结果表中的一行：延迟分位数（TTFT、TPOT、端到端）
    来自 :func:`latency_summary`，命中率和省下的 FLOPs 来自 :func:`cache_accounting`（``cfg`` 默认是这次
    运行的模型），吞吐量和显存来自运行自己的统计。
    """
    cfg = cfg or ModelConfig(**record.settings["model"])
    ttft = _checked_summary(record.column("ttft_s"))
    tpots = record.column("tpot_s")
    tpot = _checked_summary(tpots) if tpots else {"p50": math.nan, "p90": math.nan}
    e2e = _checked_summary(record.column("e2e_s"))
    acct = _checked_accounting(record.ledger(), cfg)
    s = record.settings
    return {
        "workload": s.get("workload", ""),
        "cache": bool(s["cache"]),
        "num_blocks": int(s["num_blocks"]),
        "requests": acct["requests"],
        "hit_rate": acct["hit_rate"],
        "saved_fraction": acct["saved_fraction"],
        "ttft_p50": ttft["p50"],
        "ttft_p90": ttft["p90"],
        "ttft_p99": ttft["p99"],
        "tpot_p50": tpot["p50"],
        "tpot_p90": tpot["p90"],
        "e2e_p50": e2e["p50"],
        "requests_per_s": record.stats["requests_per_s"],
        "output_tokens_per_s": record.stats["output_tokens_per_s"],
        "peak_blocks_in_use": record.stats["peak_blocks_in_use"],
        "peak_kv_bytes": record.stats["peak_kv_bytes"],
        "pool_kv_bytes": record.stats["pool_kv_bytes"],
        "peak_rss_bytes": record.stats["peak_rss_bytes"],
    }


def repeat_ttft_p90(record: Any) -> float:
    """p90 TTFT (seconds) of a run's *repeat visits*: the requests whose tag (their shared prefix) an
    earlier-arriving request of the same run already had. A first visit must miss whatever the pool
    holds, so this is the latency a pool size can change; NaN if the run has no repeat visit.

    [zh]
    一次运行中*重复访问*的 p90 TTFT（秒）：同一次运行里，已经有更早到达的请求带过同一个标签（即同一个共享前缀）
    的那些请求。第一次访问无论块池多大都一定未命中，所以块池大小能改变的正是这部分延迟；没有重复访问时返回 NaN。
    """
    seen: set[str] = set()
    repeats = []
    for r in sorted(record.requests, key=lambda r: (r.arrival_s, r.request_id)):
        if r.tag in seen:
            repeats.append(r.ttft_s)
        seen.add(r.tag)
    return latency_summary(repeats)["p90"] if repeats else math.nan


def sweep_rows(records: Sequence[Any], cfg: ModelConfig | None = None, *, today: tuple[bool, int] = (False, 160),
               share: float = 0.6) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The summary rows of a pool sweep's runs, each with ``ttft_p90_repeat`` (:func:`repeat_ttft_p90`),
    and the SLO: the repeat visits' p90 TTFT at most ``share`` of today's setting ``today`` =
    ``(cache, num_blocks)``, which must be among the runs.

    [zh]
    一次块池扫描中各次运行的汇总行，每行带上 ``ttft_p90_repeat``（见 :func:`repeat_ttft_p90`）；以及 SLO：
    重复访问的 p90 TTFT 不超过现状 ``today`` = ``(是否开缓存, 块数)`` 的 ``share`` 倍（现状必须在这些运行里）。
    """
    rows = []
    for record in records:
        row = summarize_run(record, cfg)
        row["ttft_p90_repeat"] = repeat_ttft_p90(record)
        rows.append(row)
    now = next(r for r in rows if (r["cache"], r["num_blocks"]) == tuple(today))
    return rows, {"ttft_p90_repeat": round(now["ttft_p90_repeat"] * share, 4)}


def cliff(rows: Sequence[Mapping[str, Any]], *, min_hit_rate: float = 0.05) -> int | None:
    """The smallest pool (blocks) at which the cache on got at least ``min_hit_rate``: the first size past
    the thrashing cliff; ``None`` if no measured pool got there.

    [zh]
    开缓存时命中率至少达到 ``min_hit_rate`` 的最小块池（块数），也就是越过抖动悬崖后的第一个大小；
    没有哪个测过的块池达到时返回 ``None``。
    """
    past = [int(r["num_blocks"]) for r in rows if r["cache"] and r["hit_rate"] >= min_hit_rate]
    return min(past) if past else None


def _against(value: float, bound: float, zh: bool) -> str:
    """``value`` (seconds) against an SLO ``bound`` in words, the comparison taken from the numbers themselves,
    each printed in ms with enough decimals that the printed numbers compare the same way.

    [zh]
    用文字说出 ``value``（秒）和 SLO 上限 ``bound`` 的关系，比较结果直接来自这两个数；两个数都以毫秒打印，
    小数位数足以让打印出来的数也是同样的大小关系。
    """
    value, bound = float(value), float(bound)
    digits = next((d for d in range(1, 7) if value == bound or f"{value * 1e3:.{d}f}" != f"{bound * 1e3:.{d}f}"), 6)
    b = f"{bound * 1e3:.{digits}f}"
    if not math.isfinite(value):
        return f"NaN（没有重复访问；上限 {b} 毫秒）" if zh else f"NaN (no repeat visit; the bound is {b} ms)"
    v = f"{value * 1e3:.{digits}f}"
    if value <= bound:
        return f"{v} 毫秒，不超过上限 {b} 毫秒" if zh else f"{v} ms, within the bound of {b} ms"
    return f"{v} 毫秒，超过了上限 {b} 毫秒" if zh else f"{v} ms, above the bound of {b} ms"


def sweep_verdict(rows: Sequence[Mapping[str, Any]], slo: Mapping[str, float], chosen: Mapping[str, Any] | None,
                  *, lang: str = "en", simulated: bool = False) -> str:
    """One sentence (``lang`` "en" or "zh") that says what the rule chose from a pool sweep and how it
    relates to the thrashing cliff, rendered from the sweep's own numbers.

    Total over its inputs: no pool past the cliff or some; nothing chosen, the cache off chosen, or
    the cache on chosen below, at or past the cliff; a value within, above or missing against the
    bound. Every comparison the sentence states ("within", "above", "below the cliff", "more than")
    is computed from the numbers it prints, so the sentence cannot contradict them. ``slo`` names
    one metric (``ValueError`` otherwise). ``simulated``: the rows come from a simulated clock, and
    the sentence says "simulated" where it would say "measured".

    [zh]
    用一句话（``lang`` 为 "en" 或 "zh"）说明规则从块池扫描中选了什么、它和抖动悬崖是什么关系；
    句中的数字都来自这次扫描本身。

    对所有可能的输入都有定义：有没有块池越过悬崖；什么都没选、选了关缓存、选了悬崖之前/悬崖处/悬崖之后的开缓存；
    数值不超过上限、超过上限或没有测到。句中说出的每个比较（“不超过”“超过”“悬崖之前”“更大”）都由句中给出的数字
    算出来，所以句子不会和它的数字矛盾。``slo`` 只能指定一个指标（否则抛出 ``ValueError``）。``simulated``：
    这些行来自模拟的时钟，句子里本该说“测过的”地方改说“模拟过的”。
    """
    if len(slo) != 1:
        raise ValueError(tr("the sweep's SLO names exactly one metric", "扫描的 SLO 必须恰好指定一个指标"))
    (metric, bound), = slo.items()
    edge = cliff(rows)
    zh = lang == "zh"
    seen = ("模拟过的" if simulated else "测过的") if zh else ("simulated" if simulated else "measured")
    more = ("模拟" if simulated else "测") if zh else ("simulate" if simulated else "measure")
    on = {int(r["num_blocks"]): r for r in rows if r["cache"]}
    if chosen is None:
        if edge is None:
            return (f"没有任何{seen}块池越过悬崖（开缓存时命中率都不到 5%），也没有任何设置满足 SLO：要{more}更大的块池。" if zh else
                    f"No {seen} pool got past the cliff (the cache on hit under 5 % of tokens at every size), and "
                    f"no setting meets the SLO: {more} larger pools.")
        past = [float(r[metric]) for b, r in on.items() if b >= edge and math.isfinite(float(r[metric]))]
        if not past:
            return (f"没有任何{seen}设置满足 SLO：越过悬崖之后（从 {edge} 块开始），没有可以求 p90 的重复访问"
                    f"（上限 {bound * 1e3:.1f} 毫秒）。" if zh else
                    f"No {seen} setting meets the SLO: past the cliff (from {edge} blocks on), there was no repeat "
                    f"visit to take a p90 of (the bound is {bound * 1e3:.1f} ms).")
        best = min(past)
        return (f"没有任何{seen}设置满足 SLO：越过悬崖之后（从 {edge} 块开始），重复访问的 p90 最好是 "
                f"{_against(best, bound, zh)}。" if zh else
                f"No {seen} setting meets the SLO: past the cliff (from {edge} blocks on), the repeat visits' p90 "
                f"is at best {_against(best, bound, zh)}.")
    size = int(chosen["num_blocks"])
    value = float(chosen[metric])
    meets = math.isfinite(value) and value <= bound
    if not chosen["cache"]:
        smaller = sorted({int(r["num_blocks"]) for r in rows if int(r["num_blocks"]) < size and _meets(r, slo)})
        rest = ((f"；更小的 {smaller[0]} 块也满足。" if smaller else "；没有更小的设置满足。") if zh else
                (f"; {smaller[0]} blocks also meets it." if smaller else "; no smaller setting meets it."))
        return (f"规则选的是关缓存、{size} 块：重复访问的 p90 为 {_against(value, bound, zh)}{rest}" if zh else
                f"The rule takes the cache off at {size} blocks: the repeat visits' p90 is {_against(value, bound, zh)}"
                f"{rest}")
    if edge is None or size < edge:
        where = ((f"没有任何{seen}块池越过悬崖" if edge is None else f"越过悬崖后的第一个大小是 {edge} 块") if zh else
                 (f"no {seen} pool got past the cliff" if edge is None else f"the first size past it is {edge} blocks"))
        hit = float(chosen.get("hit_rate", math.nan))
        return (f"规则选的是 {size} 块，在悬崖之前（{where}）：这里缓存只命中了 {hit:.1%} 的 token，几乎没省下计算，"
                f"重复访问的 p90 是 {_against(value, bound, zh)}"
                + ("；一个几乎不省计算的块池能满足上限，说明上限太松或者计时有噪声，不是缓存的功劳。" if meets else "。")
                if zh else
                f"The rule takes {size} blocks, below the cliff ({where}): there the cache hit only {hit:.1%} of the "
                f"tokens and saved almost no work, and the repeat visits' p90 is {_against(value, bound, zh)}"
                + ("; a pool that saves no work meeting the bound means a loose bound or noisy timing, not the "
                   "cache's doing." if meets else "."))
    if size == edge:
        return (f"规则选的是 {size} 块，也就是越过悬崖后第一个{seen}大小：重复访问的 p90 为 {_against(value, bound, zh)}"
                + ("；更大的块池只是为一个已经满足的上限多花显存。" if meets else "。") if zh else
                f"The rule takes {size} blocks, the first {seen} size past the cliff: the repeat visits' p90 is "
                f"{_against(value, bound, zh)}" + ("; a larger pool would cost more memory for a bound already met."
                                                   if meets else "."))
    at_edge = on[edge]
    return (f"规则选的是 {size} 块，比越过悬崖后的第一个大小（{edge} 块）更大：在 {edge} 块时重复访问的 p90 是 "
            f"{_against(float(at_edge[metric]), bound, zh)}；在 {size} 块时是 {_against(value, bound, zh)}。" if zh else
            f"The rule takes {size} blocks, more than the first size past the cliff ({edge} blocks): at {edge} "
            f"blocks the repeat visits' p90 was {_against(float(at_edge[metric]), bound, zh)}; at {size} blocks it "
            f"is {_against(value, bound, zh)}.")


def same_work_verdict(on: Any, off: Any, *, lang: str = "en") -> str:
    """What the cache did to a workload that should share nothing, in one sentence (``lang`` "en" or
    "zh"), from counts and the simulated clock only: ``on`` and ``off`` are the
    :class:`workbook.serving.RunRecord` of the same requests with the cache on and off.

    Total over its inputs: some tokens hit; no hit but the computed tokens differ (not the same
    requests); the same work but another simulated TTFT or TPOT for some request (the schedule
    moved); the same work and the same simulated time for every request. Nothing measured enters:
    on a simulated clock the same work costs the same, so the sentence is the same in every run.

    [zh]
    用一句话（``lang`` 为 "en" 或 "zh"）说明缓存对一个本该什么都不共享的负载做了什么，只依据计数和模拟的时钟：
    ``on`` 和 ``off`` 是同一批请求开、关缓存时的 :class:`workbook.serving.RunRecord`。

    对所有可能的输入都有定义：有 token 命中；没有命中但 computed token 不同（不是同一批请求）；计算相同，但某个请求
    的模拟 TTFT 或 TPOT 不同（调度变了）；计算相同，每个请求的模拟时间也相同。这里不用任何实测值：在模拟的时钟上，
    同样的计算花同样的时间，所以每次运行这句话都一样。
    """
    zh = lang == "zh"
    hit = sum(r.hit_tokens for r in on.requests)
    prompt = sum(r.prompt_tokens for r in on.requests)
    if hit:
        return (f"开缓存时命中了 {hit} 个 token（共 {prompt} 个）：这个负载有可复用的部分。" if zh else
                f"The cache on hit {hit} of {prompt} prompt tokens: this workload has something to reuse.")
    work = {r.request_id: r.computed_tokens for r in on.requests}
    if work != {r.request_id: r.computed_tokens for r in off.requests}:
        return ("没有命中，可开、关缓存两次运行计算的 token 不一样：它们服务的不是同一批请求。" if zh else
                "Nothing hit, yet the two runs computed different tokens: they did not serve the same requests.")
    computed = sum(work.values())
    times = {r.request_id: (r.ttft_s, r.tpot_s) for r in off.requests}
    moved = sorted(r.request_id for r in on.requests if (r.ttft_s, r.tpot_s) != times[r.request_id])
    if moved:
        return (f"没有命中，开、关缓存都计算了同样的 {computed} 个 token，可有 {len(moved)} 个请求的模拟 TTFT 或 TPOT "
                f"不同：调度变了，要找出原因。" if zh else
                f"Nothing hit and both runs computed the same {computed} tokens, yet {len(moved)} requests got another "
                f"simulated TTFT or TPOT: the schedule moved; find out why.")
    return (f"没有命中，开、关缓存计算的是同样的 {computed} 个 token，每个请求的模拟 TTFT 和 TPOT 也完全相同：没有退化。"
            f"模拟的时钟按计算的 token 定价，所以缓存那几微秒的查找不在其中；下面的实测值是检验。" if zh else
            f"Nothing hit, both runs computed the same {computed} tokens, and every request got the same simulated "
            f"TTFT and TPOT: no regression. The simulated clock prices the tokens computed, so the cache's lookups "
            f"(microseconds) are not in it; the measured line below is the check.")


def fell_behind(shares: Mapping[str, float], *, lang: str = "en") -> str:
    """Which runs fell behind, in one sentence (``lang`` "en" or "zh"): ``shares`` maps a run's label to
    the median share of TTFT its requests spent waiting (simulated clock); a run fell behind when that
    share is above one half.

    Total over its inputs: some runs behind, none, and shares that are not numbers (named as such,
    never counted as keeping up).

    [zh]
    用一句话（``lang`` 为 "en" 或 "zh"）说明哪些运行跟不上：``shares`` 把一次运行的标签映射到它的请求在 TTFT 中
    用于等待的比例的中位数（模拟的时钟）；这个比例超过一半，就算跟不上。

    对所有可能的输入都有定义：有运行跟不上、都跟得上，以及比例不是数的情况（会被点名，绝不算作跟得上）。
    """
    zh = lang == "zh"
    sep = "；" if zh else "; "
    behind = [k for k, v in shares.items() if math.isfinite(v) and v > 0.5]
    unknown = [k for k, v in shares.items() if not math.isfinite(v)]
    if behind:
        text = ("服务端跟不上（TTFT 的大部分在等待）的运行：" + sep.join(behind) if zh else
                "the server fell behind (most of TTFT was waiting) in: " + sep.join(behind))
    elif unknown:
        text = "没有哪次运行确定跟不上" if zh else "no run is known to have fallen behind"
    else:
        text = ("每次运行服务端都跟得上：等待在各处都不到 TTFT 的一半" if zh else
                "the server kept up with every run: waiting was less than half of TTFT everywhere")
    if unknown:
        text += ("。没有等待比例可算的运行：" if zh else ". No waiting share to compute in: ") + sep.join(unknown)
    return text


def _model_size(model: Mapping[str, Any]) -> str:
    params = ModelConfig(**model).num_parameters() if model else 0
    return f"{params / 1e9:.1f}B" if params >= 1e8 else f"{params / 1e6:.1f}M"


def evidence_level(settings: Mapping[str, Any], *, real_weights: bool = False, lang: str = "en") -> str:
    """How far a run's numbers carry, in words (``lang`` "en" or "zh"): what ran, and what it is evidence for.

    A CPU run of a small random model shows shapes and trends (which setting wins, where the
    thrashing cliff is), never production latencies; a GPU run at a real model's shape gives
    latencies indicative of that GPU; only real weights and real traffic make production numbers.

    [zh]
    用一句话（``lang`` 为 "en" 或 "zh"）说明这次运行的数字能说明到什么程度：跑的是什么，它是什么的证据。

    在 CPU 上跑小型随机模型，只能说明形状和趋势（哪个设置更好、抖动的悬崖在哪里），绝不是生产环境的延迟；
    在 GPU 上按真实模型的形状运行，延迟对那块 GPU 有参考意义；只有真实权重加真实流量才算生产数字。
    """
    model = settings.get("model", {})
    big = bool(model) and ModelConfig(**model).num_parameters() >= 1e8
    size = _model_size(model)
    gpu = settings.get("device_type") == "cuda"
    if lang == "zh":
        weights = "真实权重" if real_weights else "随机权重"
        if gpu:
            scope = "延迟对这块 GPU、这种模型形状有参考意义；生产结论还需要真实流量" if big else "GPU 上的小模型：只能说明相对效果"
            return f"GPU，{size} 参数模型，{weights}：{scope}"
        return f"CPU，{size} 参数模型，{weights}：只能说明形状和趋势，不代表生产环境的延迟"
    weights = "real weights" if real_weights else "random weights"
    if gpu:
        scope = ("latencies indicative of this GPU at this model shape; production needs real traffic"
                 if big else "GPU, small model: relative effects only")
        return f"GPU, {size}-parameter model, {weights}: {scope}"
    return f"CPU, {size}-parameter model, {weights}: shapes and trends only, not production latencies"


#: The measured numbers a decision record keeps, with and without the cache.
# zh: 决策记录为开、关缓存两种情况各保存的测量数字。
RECORD_METRICS = ("num_blocks", "hit_rate", "ttft_p50", "ttft_p90", "tpot_p50", "requests_per_s", "output_tokens_per_s",
                  "peak_kv_bytes")


def decision_record(workload: str, description: str, on: Mapping[str, Any], off: Mapping[str, Any],
                    sweep: Sequence[Mapping[str, Any]], slo: Mapping[str, float], settings: Mapping[str, Any],
                    *, real_weights: bool = False, lang: str = "en") -> dict[str, Any]:
    """The decision record as plain data (JSON-ready): workload, hardware and model, the measured
    numbers with and without the cache (rows from :func:`summarize_run`), the SLO, every measured
    setting, the one :func:`choose_setting` picks from ``sweep`` (or ``None``) and the evidence
    level (in ``lang``). ``clock`` says whether the latencies are ``"simulated"`` (the runs' clock was
    a cost model: ``settings["clock"]`` starts with "virtual") or ``"measured"``; the keys keep their
    names either way ("measured", "settings_measured").

    [zh]
    纯数据形式（可以直接存成 JSON）的决策记录：负载、硬件和模型，开、关缓存时的测量数字（来自
    :func:`summarize_run` 的行），SLO，测过的每个设置，:func:`choose_setting` 从 ``sweep`` 中选出的设置
    （或 ``None``），以及证据等级（用 ``lang`` 语言写）。``clock`` 说明延迟是 ``"simulated"``（运行的时钟是
    成本模型：``settings["clock"]`` 以 "virtual" 开头）还是 ``"measured"``；两种情况下键名都不变
    （"measured"、"settings_measured"）。
    """
    choice = choose_setting(sweep, slo)
    if choice is not None and not any(_same_row(choice, m) for m in sweep):
        raise ResultError("s07.choose_setting", "a setting that is not one of the measured ones (it returns a copy "
                          "of one of them, or None)", "一个不在测过的设置之中的结果（应返回其中某一个的副本，或者 None）")
    keep = ("cache", "num_blocks", *dict.fromkeys((*slo, "hit_rate")))
    return {
        "clock": "simulated" if str(settings.get("clock", "")).startswith("virtual") else "measured",
        "workload": workload,
        "description": description,
        "hardware": settings.get("device", ""),
        "model": dict(settings.get("model", {})),
        "dtype": settings.get("dtype", ""),
        "measured": {"cache_on": {k: on[k] for k in RECORD_METRICS}, "cache_off": {k: off[k] for k in RECORD_METRICS}},
        "slo": dict(slo),
        "settings_measured": len(sweep),
        "sweep": [{k: m[k] for k in keep if k in m} for m in sorted(sweep, key=lambda m: (m["num_blocks"], m["cache"]))],
        "choice": None if choice is None else {"cache": choice["cache"], "num_blocks": choice["num_blocks"],
                                               **{m: choice[m] for m in slo}},
        "evidence": evidence_level(settings, real_weights=real_weights, lang=lang),
    }


_WORDS = {
    "en": {"title": "Decision record", "hardware": "hardware", "model": "model", "dtype": "dtype",
           "evidence": "evidence", "metric": "metric", "on": "cache on", "off": "cache off", "hit": "hit rate",
           "throughput": "throughput", "kv": "peak KV memory", "decision": "decision",
           "none": "no {seen} setting meets the SLO", "cache": "cache", "yes": "on", "no": "off", "pool": "pool",
           "blocks": "blocks", "layers": "layers", "hidden": "hidden", "heads": "heads", "vocab": "vocab",
           "params": "parameters", "per_s": "req/s"},
    "zh": {"title": "决策记录", "hardware": "硬件", "model": "模型", "dtype": "数据类型", "evidence": "证据等级",
           "metric": "指标", "on": "开缓存", "off": "关缓存", "hit": "命中率", "throughput": "吞吐量",
           "kv": "KV 显存峰值", "decision": "决策",
           "none": "没有任何{seen}设置满足 SLO", "cache": "缓存", "yes": "开", "no": "关", "pool": "块池",
           "blocks": "块", "layers": "层", "hidden": "隐藏维", "heads": "头", "vocab": "词表", "params": "参数",
           "per_s": "请求/秒"},
}


def decision_markdown(record: Mapping[str, Any], lang: str = "en") -> str:
    """The decision record as a short markdown document, in ``lang`` ("en" or "zh").

    [zh]
    把决策记录写成一篇简短的 markdown 文档，语言由 ``lang``（"en" 或 "zh"）决定。
    """
    w = _WORDS["zh" if lang == "zh" else "en"]
    on, off = record["measured"]["cache_on"], record["measured"]["cache_off"]

    def ms(x: float) -> str:
        return f"{x * 1e3:.1f} ms"

    rows = [(w["pool"], f"{on['num_blocks']} {w['blocks']}", f"{off['num_blocks']} {w['blocks']}"),
            (w["hit"], f"{on['hit_rate']:.0%}", f"{off['hit_rate']:.0%}"),
            ("TTFT p50", ms(on["ttft_p50"]), ms(off["ttft_p50"])),
            ("TTFT p90", ms(on["ttft_p90"]), ms(off["ttft_p90"])),
            ("TPOT p50", ms(on["tpot_p50"]), ms(off["tpot_p50"])),
            (w["throughput"], f"{on['requests_per_s']:.1f} {w['per_s']}", f"{off['requests_per_s']:.1f} {w['per_s']}"),
            (w["kv"], f"{on['peak_kv_bytes'] / 2**20:.2f} MiB", f"{off['peak_kv_bytes'] / 2**20:.2f} MiB")]
    slo = ", ".join(f"{k} <= {v * 1e3:.0f} ms" if k.startswith(("ttft", "tpot", "e2e")) else f"{k} <= {v}"
                    for k, v in record["slo"].items())
    choice = record["choice"]
    zh = lang == "zh"
    simulated = record.get("clock") == "simulated"
    seen = ("模拟过的" if simulated else "测过的") if zh else ("simulated" if simulated else "measured")
    if choice is None:
        decision = w["none"].format(seen=seen)
    elif lang == "zh":
        decision = f"缓存**{w['yes'] if choice['cache'] else w['no']}**，块池 **{choice['num_blocks']} 块**"
    else:
        decision = f"cache **{w['yes'] if choice['cache'] else w['no']}**, pool of **{choice['num_blocks']} blocks**"
    sep, comma, semi, left, right = ("：", "，", "；", "（", "）") if zh else (": ", ", ", "; ", " (", ")")
    m = record["model"]
    model = (comma.join((f"{m.get('num_hidden_layers')} {w['layers']}", f"{w['hidden']} {m.get('hidden_size')}",
                         f"{m.get('num_attention_heads')}/{m.get('num_key_value_heads')} {w['heads']}",
                         f"{w['vocab']} {m.get('vocab_size')}")) + f"{left}{_model_size(m)} {w['params']}{right}"
             ) if m else "?"
    n = record["settings_measured"]
    measured = ((f"模拟了 {n} 个设置" if simulated else f"测了 {n} 个设置") if zh else
                f"{n} settings {'simulated' if simulated else 'measured'}")
    lines = [f"### {w['title']}{sep}{record['workload']}", "", record["description"], "",
             f"- {w['hardware']}{sep}{record['hardware']}",
             f"- {w['model']}{sep}{model}{semi}{w['dtype']} {record['dtype']}",
             f"- {w['evidence']}{sep}{record['evidence']}", "",
             f"| {w['metric']} | {w['on']} | {w['off']} |", "|---|---|---|",
             *[f"| {a} | {b} | {c} |" for a, b, c in rows], "",
             f"- SLO{sep}{slo}{left}{measured}{right}", f"- {w['decision']}{sep}{decision}"]
    return "\n".join(lines) + "\n"


def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 5 (s07.quiz)
    ### BEGIN SOLUTION
    return {"q1": 0.71, "q2": "B", "q3": "C", "q4": "A", "q5": "C", "q6": 192}
    ### END SOLUTION

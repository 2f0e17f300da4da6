"""Stage 7 reference: measure a prefix cache under traffic, explain the numbers, decide a setting.

A serving loop (given: :mod:`solutions.serving`) runs requests through stage 6's prefill with the
cache on or off and records what every request saw. This stage turns those records into an
engineering decision, with four pure functions over measurements:

1. :func:`latency_summary` -- percentiles of a latency list (p50, p90, p99: users feel the tail);
2. :func:`cache_accounting` -- from a run's ledger: the token hit rate and the prefill FLOPs the
   cache saved (the question's attention over the cached prefix is *not* saved);
3. :func:`predict_ttft` -- the time a prefill should take, from its FLOPs and the rates measured on
   this device (:class:`kernels.cost_model.Calibration`), to check that the measurements make sense;
4. :func:`choose_setting` -- given the measurements of several settings (cache on/off, pool sizes)
   and a service-level objective, the cheapest setting that meets it, or none.

Given code after the TODOs (:func:`summarize_run`, :func:`evidence_level`, :func:`decision_record`,
:func:`decision_markdown`) builds the tables and the decision record from them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from kernels.cost_model import Calibration
from kernels.flops import prefill_flops
from kernels.model import ModelConfig

#: The percentiles :func:`latency_summary` reports by default.
PERCENTILES = (50, 90, 99)


def latency_summary(values: Sequence[float], percentiles: Sequence[float] = PERCENTILES) -> dict[str, float]:
    """Summary of a list of latencies (seconds): ``count``, ``mean``, ``max`` and one key per percentile.

    The key of percentile ``p`` is ``f"p{p:g}"`` (``"p50"``, ``"p90"``, ``"p99.9"``). A percentile
    interpolates linearly between the two closest ranks of the *sorted* values: ``p`` sits at
    fractional rank ``p / 100 * (count - 1)`` (rank 0 is the smallest value), so ``p0`` is the
    minimum, ``p100`` the maximum and ``p50`` the median. ``ValueError`` for an empty list, a
    value that is not a finite number, or a percentile outside ``[0, 100]``.
    """
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("no values to summarize")
    if not all(math.isfinite(v) for v in xs):
        raise ValueError("latencies must be finite numbers")
    if any(not 0 <= p <= 100 for p in percentiles):
        raise ValueError("percentiles must lie in [0, 100]")
    summary: dict[str, float] = {"count": len(xs), "mean": sum(xs) / len(xs), "max": max(xs)}
    # TODO 1 (s07.latency_summary): add one entry f"p{p:g}" per percentile p of `percentiles`:
    # the value at fractional rank p / 100 * (count - 1) of the values sorted ascending, linearly
    # interpolated between the two neighbouring ranks (an integer rank is that value exactly).
    # Invariants: p0 == min, p100 == max, p50 == the median; the input list is left unchanged.
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
    """
    for i, entry in enumerate(ledger):
        n, hit, computed = entry["prompt_tokens"], entry["hit_tokens"], entry["computed_tokens"]
        if hit < 0 or computed < 1 or hit + computed != n:
            raise ValueError(f"ledger entry {i} is inconsistent: {dict(entry)}")
    # TODO 2 (s07.cache_accounting): set `totals` to the dict described in the docstring (all ten
    # keys). Without the cache a request computes its whole prompt; with it, only its computed
    # tokens, and those still attend to the hit tokens before them (that work is not saved).
    # Invariants: 0 <= hit_rate <= 1; flops_with_cache <= flops_without_cache.
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
    """
    if computed < 1 or cached < 0:
        raise ValueError(f"need computed >= 1 and cached >= 0, got {computed} and {cached}")
    # TODO 3 (s07.predict_ttft): set `seconds` to the predicted prefill time described in the
    # docstring: one term per kind of work, each with the rate measured for that work at this
    # prefill's sizes, plus the time that is not FLOPs.
    # Invariant: more cached tokens never make a prediction faster at the same computed tokens.
    ### BEGIN SOLUTION
    flops = prefill_flops(cfg, computed, cached)
    seconds = (flops["linear"] / cal.gemm_rate(computed)
               + flops["attention"] / cal.attention_rate(computed, computed + cached)
               + flops["head"] / cal.head_flops_per_s
               + cal.other_s(computed, cached))
    ### END SOLUTION
    return seconds


def _meets(measurement: Mapping[str, Any], slo: Mapping[str, float]) -> bool:
    """Does one measured setting meet every bound of the SLO (``value <= bound``; NaN never does)?"""
    return all(float(measurement[m]) <= bound for m, bound in slo.items())


def choose_setting(measurements: Sequence[Mapping[str, Any]], slo: Mapping[str, float]) -> dict[str, Any] | None:
    """The cheapest measured setting that meets a service-level objective, or ``None`` if none does.

    ``measurements``: one dict per measured setting, with ``cache`` (bool), ``num_blocks`` (pool
    size, the memory it costs) and a value for every metric the SLO names. ``slo`` maps metric
    names to upper bounds (e.g. ``{"ttft_p90": 0.5}``); a setting meets it when every named metric
    is ``<=`` its bound (a NaN value never does). Among the settings that meet it: the smallest
    ``num_blocks``; at equal pool size, the lower value of the SLO's *first* metric; then cache off
    before cache on (the simpler system). Returns a copy of the chosen dict. ``ValueError`` for an
    empty SLO or a measurement that lacks one of its metrics.
    """
    if not slo:
        raise ValueError("an SLO names at least one metric")
    for m in measurements:
        missing = [k for k in ("cache", "num_blocks", *slo) if k not in m]
        if missing:
            raise ValueError(f"measurement {dict(m)} lacks {missing}")
    first = next(iter(slo))
    # TODO 4 (s07.choose_setting): set `chosen` to a copy (dict) of the setting picked by the rule
    # in the docstring, or None when no setting meets every bound. `_meets` (given) tells whether
    # one setting meets the SLO.
    # Invariant: the result never depends on the order of `measurements`.
    ### BEGIN SOLUTION
    meeting = [m for m in measurements if _meets(m, slo)]
    if not meeting:
        chosen = None
    else:
        best = min(meeting, key=lambda m: (m["num_blocks"], float(m[first]), bool(m["cache"])))
        chosen = dict(best)
    ### END SOLUTION
    return chosen


# -- given: tables and the decision record, built on the TODOs --------------------------------------
def summarize_run(record: Any, cfg: ModelConfig | None = None) -> dict[str, Any]:
    """One row of a results table from a :class:`solutions.serving.RunRecord`.

    Latency percentiles (TTFT, TPOT, end to end) by :func:`latency_summary`, hit rate and saved
    FLOPs by :func:`cache_accounting` (``cfg`` defaults to the run's model), throughput and memory
    from the run's own statistics.
    """
    cfg = cfg or ModelConfig(**record.settings["model"])
    ttft = latency_summary(record.column("ttft_s"))
    tpots = record.column("tpot_s")
    tpot = latency_summary(tpots) if tpots else {"p50": math.nan, "p90": math.nan}
    e2e = latency_summary(record.column("e2e_s"))
    acct = cache_accounting(record.ledger(), cfg)
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


def evidence_level(settings: Mapping[str, Any], *, real_weights: bool = False) -> str:
    """How far a run's numbers carry, in words: what ran, and what it is evidence for.

    A CPU run of a small random model shows shapes and trends (which setting wins, where the
    thrashing cliff is), never production latencies; a GPU run at a real model's shape gives
    latencies indicative of that GPU; only real weights and real traffic make production numbers.
    """
    model = settings.get("model", {})
    params = ModelConfig(**model).num_parameters() if model else 0
    size = f"{params / 1e9:.1f}B" if params >= 1e8 else f"{params / 1e6:.1f}M"
    weights = "real weights" if real_weights else "random weights"
    if settings.get("device_type") == "cuda":
        scope = ("latencies indicative of this GPU at this model shape; production needs real traffic"
                 if params >= 1e8 else "GPU, small model: relative effects only")
        return f"GPU, {size}-parameter model, {weights}: {scope}"
    return f"CPU, {size}-parameter model, {weights}: shapes and trends only, not production latencies"


def decision_record(workload: str, description: str, on: Mapping[str, Any], off: Mapping[str, Any],
                    sweep: Sequence[Mapping[str, Any]], slo: Mapping[str, float], settings: Mapping[str, Any],
                    *, real_weights: bool = False) -> dict[str, Any]:
    """The decision record as plain data (JSON-ready): workload, hardware and model, the measured
    numbers with and without the cache (rows from :func:`summarize_run`), the SLO, the setting
    :func:`choose_setting` picks from ``sweep`` (or ``None``) and the evidence level."""
    keys = ("hit_rate", "ttft_p50", "ttft_p90", "tpot_p50", "requests_per_s", "output_tokens_per_s", "peak_kv_bytes")
    choice = choose_setting(sweep, slo)
    return {
        "workload": workload,
        "description": description,
        "hardware": settings.get("device", ""),
        "model": dict(settings.get("model", {})),
        "dtype": settings.get("dtype", ""),
        "measured": {"cache_on": {k: on[k] for k in keys}, "cache_off": {k: off[k] for k in keys}},
        "slo": dict(slo),
        "settings_measured": len(sweep),
        "choice": None if choice is None else {"cache": choice["cache"], "num_blocks": choice["num_blocks"],
                                               **{m: choice[m] for m in slo}},
        "evidence": evidence_level(settings, real_weights=real_weights),
    }


def decision_markdown(record: Mapping[str, Any]) -> str:
    """The decision record as a short markdown document."""
    on, off = record["measured"]["cache_on"], record["measured"]["cache_off"]

    def ms(x: float) -> str:
        return f"{x * 1e3:.1f} ms"

    rows = [("hit rate", f"{on['hit_rate']:.0%}", f"{off['hit_rate']:.0%}"),
            ("TTFT p50", ms(on["ttft_p50"]), ms(off["ttft_p50"])),
            ("TTFT p90", ms(on["ttft_p90"]), ms(off["ttft_p90"])),
            ("TPOT p50", ms(on["tpot_p50"]), ms(off["tpot_p50"])),
            ("throughput", f"{on['requests_per_s']:.1f} req/s", f"{off['requests_per_s']:.1f} req/s"),
            ("peak KV memory", f"{on['peak_kv_bytes'] / 2**20:.1f} MiB", f"{off['peak_kv_bytes'] / 2**20:.1f} MiB")]
    slo = ", ".join(f"{k} <= {v * 1e3:.0f} ms" if k.startswith(("ttft", "tpot", "e2e")) else f"{k} <= {v}"
                    for k, v in record["slo"].items())
    choice = record["choice"]
    decision = ("no measured setting meets the SLO" if choice is None else
                f"cache **{'on' if choice['cache'] else 'off'}**, pool of **{choice['num_blocks']} blocks**")
    lines = [f"## Decision record: {record['workload']}", "", record["description"], "",
             f"- hardware: {record['hardware']}; model dtype {record['dtype']}",
             f"- evidence: {record['evidence']}", "",
             "| metric | cache on | cache off |", "|---|---|---|",
             *[f"| {a} | {b} | {c} |" for a, b, c in rows], "",
             f"- SLO: {slo} ({record['settings_measured']} settings measured)", f"- decision: {decision}"]
    return "\n".join(lines) + "\n"

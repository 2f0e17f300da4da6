"""Hidden checks of stage 7: long tails, odd sizes, ties and order. Never shipped."""
from __future__ import annotations

import math
import random

from autograder.checks.s07 import (GFLOP_ATOL, STAGE, TIME_ATOL, calibration, in_gflop, latencies, ledger, ms,
                                   model_config, setting, sweep)


# -- TODO 1 ----------------------------------------------------------------------------------------
@STAGE.check("s07.latency_summary", hidden=True, atol=TIME_ATOL,
             hint="Percentiles of a long-tailed list: sorted, fractional rank p/100*(count-1), linear interpolation.")
def long_tail_thousand(impl):
    return impl.latency_summary(latencies(3, 1000), (50, 90, 99, 99.9))


@STAGE.check("s07.latency_summary", hidden=True, atol=TIME_ATOL,
             hint="One value: every percentile is that value.")
def single_value(impl):
    return impl.latency_summary([0.042], (0, 50, 99, 100))


@STAGE.check("s07.latency_summary", hidden=True, atol=TIME_ATOL,
             hint="Do not sort the caller's list in place: it is their data (and their order).")
def input_left_unchanged(impl):
    values = latencies(4, 9)
    before = list(values)
    summary = impl.latency_summary(values, (50, 90))
    return summary, values == before


@STAGE.check("s07.latency_summary", hidden=True, atol=TIME_ATOL,
             hint="Ties and repeated values: interpolation between equal neighbours gives that value.")
def repeated_values(impl):
    return impl.latency_summary([0.1, 0.1, 0.1, 0.5, 0.5, 2.0], (20, 40, 60, 80, 95))


# -- TODO 2 ----------------------------------------------------------------------------------------
@STAGE.check("s07.cache_accounting", hidden=True, atol=GFLOP_ATOL,
             hint="Sum every request's FLOPs with and without the cache; saved_fraction is saved / without.")
def many_requests_qwen_shape(impl):
    return in_gflop(impl.cache_accounting(ledger(5, 50, prefix=1024, hit_share=0.6), model_config("qwen2-width")))


@STAGE.check("s07.cache_accounting", hidden=True, atol=GFLOP_ATOL,
             hint="An empty ledger: zero requests, zero tokens, hit_rate and saved_fraction 0.0.")
def empty_ledger(impl):
    return in_gflop(impl.cache_accounting([], model_config("small")))


@STAGE.check("s07.cache_accounting", hidden=True, atol=GFLOP_ATOL,
             hint="requests_with_hit counts the requests whose hit_tokens is above 0.")
def no_hits_at_all(impl):
    return in_gflop(impl.cache_accounting(ledger(6, 12, prefix=256, hit_share=0.0), model_config("tiny")))


# -- TODO 3 ----------------------------------------------------------------------------------------
@STAGE.check("s07.predict_ttft", hidden=True, atol=TIME_ATOL,
             hint="Read each rate at this prefill's own sizes: rows = computed tokens, context = computed + cached.")
def qwen_shape_many_sizes(impl):
    cfg = model_config("qwen2-width")
    cases = [(64, 256), (64, 4096), (320, 0), (4160, 0), (200, 700), (1, 4159)]
    return [ms(impl.predict_ttft(cfg, c, h, calibration())) for c, h in cases]


@STAGE.check("s07.predict_ttft", hidden=True, atol=TIME_ATOL,
             hint="Attention has its own rate, far below the GEMMs': never divide attention FLOPs by a GEMM rate.")
def slow_attention(impl):
    cfg = model_config("small")
    return [ms(impl.predict_ttft(cfg, c, h, calibration("slow-attention"))) for c, h in ((64, 4096), (1088, 0))]


@STAGE.check("s07.predict_ttft", hidden=True, atol=TIME_ATOL,
             hint="Include the time that is not FLOPs: cal.other_s(computed, cached).")
def overhead_dominates_tiny(impl):
    return [ms(impl.predict_ttft(model_config("tiny"), c, h, calibration())) for c, h in ((1, 0), (8, 32))]


# -- TODO 4 ----------------------------------------------------------------------------------------
@STAGE.check("s07.choose_setting", hidden=True,
             hint="At equal pool size prefer the lower value of the SLO's first metric; then cache off.")
def ties_at_equal_pool(impl):
    rows = [setting(True, 128, 0.40), setting(False, 128, 0.45), setting(True, 256, 0.10)]
    tie = [setting(True, 64, 0.40), setting(False, 64, 0.40)]
    return impl.choose_setting(rows, {"ttft_p90": 0.5}), impl.choose_setting(tie, {"ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", hidden=True,
             hint="The answer must not depend on the order of the measurements.")
def order_does_not_matter(impl):
    out = []
    for seed in range(3):
        rows = sweep()
        random.Random(seed).shuffle(rows)
        out.append(impl.choose_setting(rows, {"ttft_p90": 0.5}))
    return out


@STAGE.check("s07.choose_setting", hidden=True,
             hint="A value equal to its bound meets the SLO (<=); a NaN never does.")
def bound_is_inclusive_nan_is_not(impl):
    rows = [setting(True, 64, math.nan), setting(False, 128, 0.5), setting(True, 128, 0.6)]
    return impl.choose_setting(rows, {"ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", hidden=True,
             hint="Return a copy of the chosen measurement: all its keys, not only cache and num_blocks.")
def returns_a_copy(impl):
    rows = sweep()
    chosen = impl.choose_setting(rows, {"ttft_p90": 0.95, "hit_rate": 0.5})
    if isinstance(chosen, dict):
        chosen["num_blocks"] = -1
    return chosen, [r["num_blocks"] for r in rows]

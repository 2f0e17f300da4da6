"""Hidden checks of stage 7: long tails, odd sizes, ties and order. Never shipped.
Their titles and hints, in both languages, are in ``hidden.toml`` beside this module."""
from __future__ import annotations

import math
import random

from autograder.checks.common import plain, record
from autograder.checks.s07 import GFLOP_ATOL, STAGE, TIME_ATOL, calibration, in_gflop, latencies, ledger, model_config, ms, setting, sweep


# -- TODO 1 ----------------------------------------------------------------------------------------
@STAGE.check("s07.latency_summary", hidden=True, sibling="skewed_with_repeats", atol=TIME_ATOL)
def long_tail_thousand(impl):
    return plain(impl.latency_summary(latencies(3, 1000), (50, 90, 99, 99.9)))


@STAGE.check("s07.latency_summary", hidden=True, sibling="one_value", atol=TIME_ATOL)
def single_value(impl):
    return plain(impl.latency_summary([0.042], (0, 50, 99, 100)))


@STAGE.check("s07.latency_summary", hidden=True, sibling="skewed_with_repeats", atol=TIME_ATOL)
def input_left_unchanged(impl):
    values = latencies(4, 9)
    before = list(values)
    summary = plain(impl.latency_summary(values, (50, 90)))
    return record(summary=summary, input_unchanged=values == before)


@STAGE.check("s07.latency_summary", hidden=True, sibling="skewed_with_repeats", atol=TIME_ATOL)
def repeated_values(impl):
    return plain(impl.latency_summary([0.1, 0.1, 0.1, 0.5, 0.5, 2.0], (20, 40, 60, 80, 95)))


@STAGE.check("s07.latency_summary", hidden=True, sibling="percentiles_given_as_floats", atol=TIME_ATOL)
def computed_percentiles(impl):
    # percentiles computed by the caller are floats: 0.0, 12.5, 25.0, ... 100.0
    return plain(impl.latency_summary(latencies(7, 25), [100 * k / 8 for k in range(9)]))


@STAGE.check("s07.latency_summary", hidden=True, sibling="no_percentiles_asked", atol=TIME_ATOL)
def empty_percentile_lists(impl):
    values = latencies(9, 7)
    return [plain(impl.latency_summary(values, [])), plain(impl.latency_summary(values, tuple()))]


# -- TODO 2 ----------------------------------------------------------------------------------------
@STAGE.check("s07.cache_accounting", hidden=True, sibling="long_prefix_attention_remains", atol=GFLOP_ATOL)
def many_requests_qwen_shape(impl):
    return in_gflop(impl.cache_accounting(ledger(5, 50, prefix=1024, hit_share=0.6), model_config("qwen2-width")))


@STAGE.check("s07.cache_accounting", hidden=True, sibling="no_requests", atol=GFLOP_ATOL)
def empty_ledger(impl):
    return in_gflop(impl.cache_accounting([], model_config("small")))


@STAGE.check("s07.cache_accounting", hidden=True, sibling="three_requests", atol=GFLOP_ATOL)
def no_hits_at_all(impl):
    return in_gflop(impl.cache_accounting(ledger(6, 12, prefix=256, hit_share=0.0), model_config("tiny")))


# -- TODO 3 ----------------------------------------------------------------------------------------
@STAGE.check("s07.predict_ttft", hidden=True, sibling="growing_prefix", atol=TIME_ATOL)
def qwen_shape_many_sizes(impl):
    cfg = model_config("qwen2-width")
    cases = [(64, 256), (64, 4096), (320, 0), (4160, 0), (200, 700), (1, 4159)]
    return [ms(impl.predict_ttft(cfg, c, h, calibration())) for c, h in cases]


@STAGE.check("s07.predict_ttft", hidden=True, sibling="growing_prefix", atol=TIME_ATOL)
def slow_attention(impl):
    cfg = model_config("small")
    return [ms(impl.predict_ttft(cfg, c, h, calibration("slow-attention"))) for c, h in ((64, 4096), (1088, 0))]


@STAGE.check("s07.predict_ttft", hidden=True, sibling="cached_prefill", atol=TIME_ATOL)
def overhead_dominates_tiny(impl):
    return [ms(impl.predict_ttft(model_config("tiny"), c, h, calibration())) for c, h in ((1, 0), (8, 32))]


# -- TODO 4 ----------------------------------------------------------------------------------------
@STAGE.check("s07.choose_setting", hidden=True, sibling="tie_at_equal_pool_size")
def ties_at_equal_pool(impl):
    rows = [setting(True, 128, 0.40), setting(False, 128, 0.45), setting(True, 256, 0.10)]
    second = [setting(True, 64, 0.40, tpot_p50=0.02), setting(False, 64, 0.40, tpot_p50=0.03)]
    tie = [setting(True, 64, 0.40), setting(False, 64, 0.40)]
    both = {"ttft_p90": 0.5, "tpot_p50": 0.05}
    return record(lower_first_metric=impl.choose_setting(rows, {"ttft_p90": 0.5}),
                  tie_on_first_metric=impl.choose_setting(second, both),
                  full_tie=impl.choose_setting(tie, both))


@STAGE.check("s07.choose_setting", hidden=True, sibling="tie_at_equal_pool_size")
def tie_break_uses_the_slos_first_metric(impl):
    rows = [setting(True, 128, 0.40, tpot_p50=0.030), setting(False, 128, 0.45, tpot_p50=0.020),
            setting(True, 256, 0.10, tpot_p50=0.010)]
    return impl.choose_setting(rows, {"tpot_p50": 0.05, "ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", hidden=True, sibling="tie_at_equal_pool_size")
def order_does_not_matter(impl):
    out = []
    for seed in range(3):
        rows = sweep()
        random.Random(seed).shuffle(rows)
        out.append(impl.choose_setting(rows, {"ttft_p90": 0.5}))
    return out


@STAGE.check("s07.choose_setting", hidden=True, sibling="bound_nan_and_copy")
def bound_is_inclusive_nan_is_not(impl):
    rows = [setting(True, 64, math.nan), setting(False, 128, 0.5), setting(True, 128, 0.6)]
    return impl.choose_setting(rows, {"ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", hidden=True, sibling="bound_nan_and_copy")
def returns_a_copy(impl):
    rows = sweep()
    chosen = impl.choose_setting(rows, {"ttft_p90": 0.95, "hit_rate": 0.5})
    if isinstance(chosen, dict):
        chosen["num_blocks"] = -1
    return record(chosen=chosen, caller_pool_sizes=[r["num_blocks"] for r in rows])


@STAGE.check("s07.choose_setting", hidden=True, sibling="zero_bound_is_a_bound")
def zero_bounds_in_a_sweep(impl):
    rows = [dict(m, errors=(m["num_blocks"] // 64) % 4, evictions=0 if m["num_blocks"] >= 512 else 5) for m in sweep()]
    return record(no_errors=impl.choose_setting(rows, {"errors": 0, "ttft_p90": 0.95}),
                  no_evictions=impl.choose_setting(rows, {"ttft_p90": 0.95, "evictions": 0.0}))

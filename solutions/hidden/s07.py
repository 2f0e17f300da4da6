"""Hidden checks of stage 7: long tails, odd sizes, ties and order. Never shipped."""
from __future__ import annotations

import math
import random

from autograder.checks.common import plain, record
from autograder.checks.s07 import (GFLOP_ATOL, STAGE, TIME_ATOL, calibration, in_gflop, latencies, ledger, ms,
                                   model_config, setting, sweep)
from autograder.i18n import L


# -- TODO 1 ----------------------------------------------------------------------------------------
@STAGE.check("s07.latency_summary", hidden=True, sibling="skewed_with_repeats", atol=TIME_ATOL,
             hint=L("Percentiles of a long-tailed list of 1,000 values, p99.9 included: sort, take the fractional "
                    "rank p/100 × (count − 1), interpolate linearly, and name the key without trailing zeros.",
                    "对 1,000 个长尾分布的值求分位数（包括 p99.9）：排序，取小数位置 p/100 × (count − 1)，线性插值，"
                    "键名去掉末尾的 0。"))
def long_tail_thousand(impl):
    return plain(impl.latency_summary(latencies(3, 1000), (50, 90, 99, 99.9)))


@STAGE.check("s07.latency_summary", hidden=True, sibling="one_value", atol=TIME_ATOL,
             hint=L("One value: every percentile is that value (there is no next rank to interpolate with).",
                    "只有一个值时，每个分位数都是这个值（没有下一个位置可以插值）。"))
def single_value(impl):
    return plain(impl.latency_summary([0.042], (0, 50, 99, 100)))


@STAGE.check("s07.latency_summary", hidden=True, sibling="skewed_with_repeats", atol=TIME_ATOL,
             hint=L("Do not sort the caller's list in place: it is their data, in their order.",
                    "不要原地排序调用者的列表：那是他们的数据，顺序也是他们的。"))
def input_left_unchanged(impl):
    values = latencies(4, 9)
    before = list(values)
    summary = plain(impl.latency_summary(values, (50, 90)))
    return record(summary=summary, input_unchanged=values == before)


@STAGE.check("s07.latency_summary", hidden=True, sibling="skewed_with_repeats", atol=TIME_ATOL,
             hint=L("Repeated values: interpolating between two equal neighbours gives that value.",
                    "有重复值时：在两个相等的相邻值之间插值，结果就是这个值。"))
def repeated_values(impl):
    return plain(impl.latency_summary([0.1, 0.1, 0.1, 0.5, 0.5, 2.0], (20, 40, 60, 80, 95)))


# -- TODO 2 ----------------------------------------------------------------------------------------
@STAGE.check("s07.cache_accounting", hidden=True, sibling="long_prefix_attention_remains", atol=GFLOP_ATOL,
             hint=L("Sum every request's FLOPs with and without the cache, at Qwen2.5-0.5B's width; saved_fraction "
                    "is saved over without.",
                    "在 Qwen2.5-0.5B 的宽度下，把每个请求开、关缓存时的 FLOPs 都加起来；saved_fraction 是省下的除以"
                    "不开缓存时的。"))
def many_requests_qwen_shape(impl):
    return in_gflop(impl.cache_accounting(ledger(5, 50, prefix=1024, hit_share=0.6), model_config("qwen2-width")))


@STAGE.check("s07.cache_accounting", hidden=True, sibling="no_requests", atol=GFLOP_ATOL,
             hint=L("An empty ledger: zero requests and tokens, hit_rate and saved_fraction 0.0 (no division by "
                    "zero).",
                    "账目为空时：请求数和 token 数都是 0，hit_rate 和 saved_fraction 都是 0.0（不要除以 0）。"))
def empty_ledger(impl):
    return in_gflop(impl.cache_accounting([], model_config("small")))


@STAGE.check("s07.cache_accounting", hidden=True, sibling="three_requests", atol=GFLOP_ATOL,
             hint=L("A run without a single hit: requests_with_hit counts only requests whose hit_tokens is above 0, "
                    "and nothing is saved.",
                    "一次都没命中的运行：requests_with_hit 只数 hit_tokens 大于 0 的请求，什么也没省下。"))
def no_hits_at_all(impl):
    return in_gflop(impl.cache_accounting(ledger(6, 12, prefix=256, hit_share=0.0), model_config("tiny")))


# -- TODO 3 ----------------------------------------------------------------------------------------
@STAGE.check("s07.predict_ttft", hidden=True, sibling="growing_prefix", atol=TIME_ATOL,
             hint=L("Read each rate at this prefill's own sizes: rows = computed tokens, context = computed + cached.",
                    "每个速率都按这次 prefill 自己的规模读取：行数 = computed token 数，上下文 = computed + cached。"))
def qwen_shape_many_sizes(impl):
    cfg = model_config("qwen2-width")
    cases = [(64, 256), (64, 4096), (320, 0), (4160, 0), (200, 700), (1, 4159)]
    return [ms(impl.predict_ttft(cfg, c, h, calibration())) for c, h in cases]


@STAGE.check("s07.predict_ttft", hidden=True, sibling="growing_prefix", atol=TIME_ATOL,
             hint=L("Attention has its own rate, far below the GEMMs': never divide attention FLOPs by a GEMM rate.",
                    "attention 有自己的速率，远低于 GEMM：绝不能用 GEMM 速率去除 attention 的 FLOPs。"))
def slow_attention(impl):
    cfg = model_config("small")
    return [ms(impl.predict_ttft(cfg, c, h, calibration("slow-attention"))) for c, h in ((64, 4096), (1088, 0))]


@STAGE.check("s07.predict_ttft", hidden=True, sibling="cached_prefill", atol=TIME_ATOL,
             hint=L("On a tiny model most of the time is not FLOPs: include cal.other_s(computed, cached), and divide "
                    "the head's FLOPs by the head's own rate.",
                    "在很小的模型上，大部分时间都不是 FLOPs：要加上 cal.other_s(computed, cached)，输出头的 FLOPs "
                    "要除以输出头自己的速率。"))
def overhead_dominates_tiny(impl):
    return [ms(impl.predict_ttft(model_config("tiny"), c, h, calibration())) for c, h in ((1, 0), (8, 32))]


# -- TODO 4 ----------------------------------------------------------------------------------------
@STAGE.check("s07.choose_setting", hidden=True, sibling="tie_at_equal_pool_size",
             hint=L("At equal pool size compare the SLO's metrics in its order (a tie on the first one goes to the "
                    "second); only a full tie goes to cache off.",
                    "块池一样大时，按 SLO 中的顺序比较各个指标（第一个指标打平就比第二个）；所有指标都打平才选关缓存。"))
def ties_at_equal_pool(impl):
    rows = [setting(True, 128, 0.40), setting(False, 128, 0.45), setting(True, 256, 0.10)]
    second = [setting(True, 64, 0.40, tpot_p50=0.02), setting(False, 64, 0.40, tpot_p50=0.03)]
    tie = [setting(True, 64, 0.40), setting(False, 64, 0.40)]
    both = {"ttft_p90": 0.5, "tpot_p50": 0.05}
    return record(lower_first_metric=impl.choose_setting(rows, {"ttft_p90": 0.5}),
                  tie_on_first_metric=impl.choose_setting(second, both),
                  full_tie=impl.choose_setting(tie, both))


@STAGE.check("s07.choose_setting", hidden=True, sibling="tie_at_equal_pool_size",
             hint=L("The tie-break uses the SLO's first metric, whichever it is, not always ttft_p90.",
                    "打破平局用的是 SLO 的第一个指标，不管它是哪个，而不是固定用 ttft_p90。"))
def tie_break_uses_the_slos_first_metric(impl):
    rows = [setting(True, 128, 0.40, tpot_p50=0.030), setting(False, 128, 0.45, tpot_p50=0.020),
            setting(True, 256, 0.10, tpot_p50=0.010)]
    return impl.choose_setting(rows, {"tpot_p50": 0.05, "ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", hidden=True, sibling="tie_at_equal_pool_size",
             hint=L("The answer must not depend on the order of the measurements.",
                    "答案不能取决于测量结果的排列顺序。"))
def order_does_not_matter(impl):
    out = []
    for seed in range(3):
        rows = sweep()
        random.Random(seed).shuffle(rows)
        out.append(impl.choose_setting(rows, {"ttft_p90": 0.5}))
    return out


@STAGE.check("s07.choose_setting", hidden=True, sibling="bound_nan_and_copy",
             hint=L("A value equal to its bound meets the SLO (at most, not below); a NaN never does.",
                    "值恰好等于上限也算满足 SLO（是“不超过”，不是“低于”）；NaN 永远不满足。"))
def bound_is_inclusive_nan_is_not(impl):
    rows = [setting(True, 64, math.nan), setting(False, 128, 0.5), setting(True, 128, 0.6)]
    return impl.choose_setting(rows, {"ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", hidden=True, sibling="bound_nan_and_copy",
             hint=L("Return a copy of the chosen measurement with all its keys: changing it must not change the "
                    "caller's list.",
                    "返回被选中那条测量结果的副本，保留它的所有键：修改返回值不能改动调用者的列表。"))
def returns_a_copy(impl):
    rows = sweep()
    chosen = impl.choose_setting(rows, {"ttft_p90": 0.95, "hit_rate": 0.5})
    if isinstance(chosen, dict):
        chosen["num_blocks"] = -1
    return record(chosen=chosen, caller_pool_sizes=[r["num_blocks"] for r in rows])

"""Realistic wrong answers for each stage-7 TODO: each must fail its own TODO only.

Every edit lies inside its TODO's solution region (a learner writes nothing else);
``tests/course/test_mutants.py`` grades each one through the real grader.
"""
from __future__ import annotations

RANK = "        rank = p / 100 * (len(ordered) - 1)\n"
INTERP = '        summary[f"p{p:g}"] = ordered[lo] + (rank - lo) * (ordered[hi] - ordered[lo])\n'
HIT_RATE = '        "hit_rate": hit / prompt if prompt else 0.0,\n'
WITH_CACHE = 'with_cache = sum(prefill_flops(cfg, e["computed_tokens"], e["hit_tokens"])["total"] for e in ledger)'
WITH_HIT = '"requests_with_hit": sum(1 for e in ledger if e["hit_tokens"] > 0),'
SAVED_FRACTION = '"saved_fraction": (without - with_cache) / without if without else 0.0,'
GEMM = 'flops["linear"] / cal.gemm_rate(computed)'
ATTN = 'flops["attention"] / cal.attention_rate(computed, computed + cached)'
FLOPS = "    flops = prefill_flops(cfg, computed, cached)\n"
OTHER = "               + cal.other_s(computed, cached))"
MEETING = "    meeting = [m for m in measurements if _meets(m, slo)]\n"
KEY = 'key=lambda m: (m["num_blocks"], *(float(m[k]) for k in slo), bool(m["cache"]))'
HEAD = 'flops["head"] / cal.head_flops_per_s'
ANSWERS = '    return {"q1": 0.71, "q2": "B", "q3": "C", "q4": "A", "q5": "C", "q6": 192}\n'

MUTANTS = {
    # TODO 1: latency_summary
    "s07.latency_summary/nearest_rank": ("s07.latency_summary", [(INTERP, INTERP.replace(
        "ordered[lo] + (rank - lo) * (ordered[hi] - ordered[lo])", "ordered[round(rank)]"))]),
    "s07.latency_summary/not_sorted": ("s07.latency_summary", [("    ordered = sorted(xs)\n", "    ordered = xs\n")]),
    "s07.latency_summary/rank_scaled_by_count": ("s07.latency_summary", [(RANK, RANK.replace(
        "p / 100 * (len(ordered) - 1)", "min(p / 100 * len(ordered), len(ordered) - 1)"))]),
    "s07.latency_summary/floor_without_interpolation": ("s07.latency_summary", [(INTERP, INTERP.replace(
        "ordered[lo] + (rank - lo) * (ordered[hi] - ordered[lo])", "ordered[lo]"))]),
    "s07.latency_summary/p50_is_the_mean": ("s07.latency_summary", [(INTERP, INTERP + """        if p == 50:
            summary["p50"] = summary["mean"]
""")]),
    "s07.latency_summary/sorts_the_callers_list": ("s07.latency_summary", [("    ordered = sorted(xs)\n", """    if isinstance(values, list):
        values.sort()
    ordered = sorted(xs)
""")]),
    # a key written from the percentile's type: 50.0 gives p50.0
    "s07.latency_summary/key_from_str_of_the_percentile": ("s07.latency_summary", [(INTERP, INTERP.replace(
        'f"p{p:g}"', '"p" + str(p)'))]),
    # an empty tuple of percentiles taken for "not given": the default ones come back
    "s07.latency_summary/no_percentiles_means_the_default": ("s07.latency_summary", [(
        "    ordered = sorted(xs)\n    for p in percentiles:\n", "    ordered = sorted(xs)\n    for p in percentiles or PERCENTILES:\n")]),
    # TODO 2: cache_accounting
    "s07.cache_accounting/mean_of_request_hit_rates": ("s07.cache_accounting", [(HIT_RATE, HIT_RATE.replace(
        "hit / prompt if prompt else 0.0",
        'sum(e["hit_tokens"] / e["prompt_tokens"] for e in ledger) / len(ledger) if ledger else 0.0'))]),
    "s07.cache_accounting/prefix_attention_counted_as_saved": ("s07.cache_accounting", [(WITH_CACHE, WITH_CACHE.replace(
        'e["computed_tokens"], e["hit_tokens"])', 'e["computed_tokens"])'))]),
    "s07.cache_accounting/every_request_counted_as_hit": ("s07.cache_accounting", [(WITH_HIT, WITH_HIT.replace(
        '> 0', '>= 0'))]),
    "s07.cache_accounting/saved_over_with_cache": ("s07.cache_accounting", [(SAVED_FRACTION, SAVED_FRACTION.replace(
        "/ without if without", "/ with_cache if with_cache"))]),
    # TODO 3: predict_ttft
    "s07.predict_ttft/gemm_rate_at_prompt_rows": ("s07.predict_ttft", [(GEMM, GEMM.replace(
        "gemm_rate(computed)", "gemm_rate(computed + cached)"))]),
    "s07.predict_ttft/attention_ignores_cached_context": ("s07.predict_ttft", [(ATTN, ATTN.replace(
        "computed + cached)", "computed)"))]),
    "s07.predict_ttft/one_rate_for_everything": ("s07.predict_ttft", [(ATTN, ATTN.replace(
        "cal.attention_rate(computed, computed + cached)", "cal.gemm_rate(computed)"))]),
    "s07.predict_ttft/flops_without_the_prefix": ("s07.predict_ttft", [(FLOPS, FLOPS.replace(
        "prefill_flops(cfg, computed, cached)", "prefill_flops(cfg, computed)"))]),
    "s07.predict_ttft/head_at_the_gemm_rate": ("s07.predict_ttft", [(HEAD, HEAD.replace(
        "cal.head_flops_per_s", "cal.gemm_rate(computed)"))]),
    "s07.predict_ttft/flops_only_no_other_time": ("s07.predict_ttft", [(OTHER, OTHER.replace(
        "+ cal.other_s(computed, cached))", ")"))]),
    # TODO 4: choose_setting
    "s07.choose_setting/fastest_not_cheapest": ("s07.choose_setting", [(KEY, KEY.replace(
        '(m["num_blocks"], *(float(m[k]) for k in slo), bool(m["cache"]))',
        '(*(float(m[k]) for k in slo), m["num_blocks"], bool(m["cache"]))'))]),
    "s07.choose_setting/strict_bound": ("s07.choose_setting", [(MEETING, MEETING.replace(
        "_meets(m, slo)", "all(float(m[k]) < b for k, b in slo.items())"))]),
    "s07.choose_setting/first_metric_only": ("s07.choose_setting", [(MEETING, MEETING.replace(
        "_meets(m, slo)", "float(m[next(iter(slo))]) <= next(iter(slo.values()))"))]),
    "s07.choose_setting/first_in_input_order": ("s07.choose_setting", [(
        "        best = min(meeting, " + KEY + ")\n", "        best = meeting[0]\n")]),
    "s07.choose_setting/prefers_cache_on_at_ties": ("s07.choose_setting", [(KEY, KEY.replace(
        'bool(m["cache"]))', 'not m["cache"])'))]),
    "s07.choose_setting/tie_break_always_on_ttft": ("s07.choose_setting", [(KEY, KEY.replace(
        '*(float(m[k]) for k in slo)', 'float(m.get("ttft_p90", 0))'))]),
    "s07.choose_setting/tie_break_on_the_first_metric_only": ("s07.choose_setting", [(KEY, KEY.replace(
        '*(float(m[k]) for k in slo)', 'float(m[next(iter(slo))])'))]),
    "s07.choose_setting/returns_the_original": ("s07.choose_setting", [(
        "        chosen = dict(best)\n", "        chosen = best\n")]),
    "s07.choose_setting/ignores_nan": ("s07.choose_setting", [(MEETING, MEETING.replace(
        "_meets(m, slo)", "not any(float(m[k]) > b for k, b in slo.items())"))]),
    # a bound of 0 taken for "no bound"
    "s07.choose_setting/zero_bound_is_no_bound": ("s07.choose_setting", [(MEETING, MEETING.replace(
        "_meets(m, slo)", "all(not b or float(m[k]) <= b for k, b in slo.items())"))]),
    "s07.cache_accounting/empty_ledger_divides_by_zero": ("s07.cache_accounting", [(HIT_RATE, HIT_RATE.replace(
        "hit / prompt if prompt else 0.0", "hit / prompt"))]),
    # TODO 5: quiz
    "s07.quiz/share_of_requests_that_hit": ("s07.quiz", [(ANSWERS, ANSWERS.replace('"q1": 0.71', '"q1": 0.75'))]),
    "s07.quiz/decode_reads_the_cache": ("s07.quiz", [(ANSWERS, ANSWERS.replace('"q2": "B"', '"q2": "A"'))]),
    "s07.quiz/fastest_pool_not_smallest": ("s07.quiz", [(ANSWERS, ANSWERS.replace('"q6": 192', '"q6": 256'))]),
    "s07.quiz/unanswered": ("s07.quiz", [(ANSWERS, '    return {"q1": 0.71}\n')]),
    # audit, issue 41 class 6: the caller's measurements sorted in place
    "s07.choose_setting/sorts_the_callers_list": ("s07.choose_setting", [(MEETING, "    measurements.sort(key=lambda m: m[\"num_blocks\"])\n" + MEETING)]),
}

# The check whose hint each wrong answer must read first (its mistake's own check), by wrong answer.
LEADS = {
    "s07.latency_summary/nearest_rank": "five_values",
    "s07.latency_summary/not_sorted": "five_values",
    "s07.latency_summary/rank_scaled_by_count": "five_values",
    "s07.latency_summary/floor_without_interpolation": "five_values",
    "s07.latency_summary/p50_is_the_mean": "skewed_with_repeats",
    "s07.latency_summary/sorts_the_callers_list": "skewed_with_repeats",
    "s07.latency_summary/key_from_str_of_the_percentile": "percentiles_given_as_floats",
    "s07.latency_summary/no_percentiles_means_the_default": "no_percentiles_asked",
    "s07.cache_accounting/mean_of_request_hit_rates": "three_requests",
    "s07.cache_accounting/prefix_attention_counted_as_saved": "long_prefix_attention_remains",
    "s07.cache_accounting/every_request_counted_as_hit": "three_requests",
    "s07.cache_accounting/saved_over_with_cache": "long_prefix_attention_remains",
    "s07.cache_accounting/empty_ledger_divides_by_zero": "no_requests",
    "s07.predict_ttft/gemm_rate_at_prompt_rows": "cached_prefill",
    "s07.predict_ttft/attention_ignores_cached_context": "cached_prefill",
    "s07.predict_ttft/one_rate_for_everything": "cached_prefill",
    "s07.predict_ttft/flops_without_the_prefix": "cached_prefill",
    "s07.predict_ttft/head_at_the_gemm_rate": "cached_prefill",
    "s07.predict_ttft/flops_only_no_other_time": "cached_prefill",
    "s07.choose_setting/fastest_not_cheapest": "smallest_pool_that_meets",
    "s07.choose_setting/strict_bound": "bound_nan_and_copy",
    "s07.choose_setting/first_metric_only": "every_metric_counts",
    "s07.choose_setting/first_in_input_order": "smallest_pool_that_meets",
    "s07.choose_setting/prefers_cache_on_at_ties": "tie_at_equal_pool_size",
    "s07.choose_setting/tie_break_always_on_ttft": "tie_at_equal_pool_size",
    "s07.choose_setting/tie_break_on_the_first_metric_only": "tie_at_equal_pool_size",
    "s07.choose_setting/returns_the_original": "bound_nan_and_copy",
    "s07.choose_setting/ignores_nan": "bound_nan_and_copy",
    "s07.choose_setting/zero_bound_is_no_bound": "zero_bound_is_a_bound",
    "s07.quiz/share_of_requests_that_hit": "q1",
    "s07.quiz/decode_reads_the_cache": "q2",
    "s07.quiz/fastest_pool_not_smallest": "q6",
    "s07.quiz/unanswered": "q2",
    "s07.choose_setting/sorts_the_callers_list": "bound_nan_and_copy",
}

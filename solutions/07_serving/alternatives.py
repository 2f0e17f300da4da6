"""Correct answers to each stage-7 code TODO written another way than the reference: each must earn
full marks (``tests/course/test_mutants.py`` grades them with the wrong answers). ``ALTERNATIVES`` maps a TODO
id to ``{name: edits}``, the edits being text replacements of the reference module inside that
TODO's function, as in ``mutants.py`` beside this file."""
from __future__ import annotations

from tests.mutants_s07 import KEY, MEETING

LOOP = """    ordered = sorted(xs)
    for p in percentiles:
        rank = p / 100 * (len(ordered) - 1)
        lo = math.floor(rank)
        hi = min(lo + 1, len(ordered) - 1)
        summary[f"p{p:g}"] = ordered[lo] + (rank - lo) * (ordered[hi] - ordered[lo])
"""
ACCOUNTING_START = '    prompt = sum(e["prompt_tokens"] for e in ledger)\n'
TTFT = """    flops = prefill_flops(cfg, computed, cached)
    seconds = (flops["linear"] / cal.gemm_rate(computed)
               + flops["attention"] / cal.attention_rate(computed, computed + cached)
               + flops["head"] / cal.head_flops_per_s
               + cal.other_s(computed, cached))
"""
CHOOSE = """    meeting = [m for m in measurements if _meets(m, slo)]
    if not meeting:
        chosen = None
    else:
        best = min(meeting, """ + KEY + """)
        chosen = dict(best)
"""
assert MEETING in CHOOSE

ALTERNATIVES = {
    "s07.latency_summary": {
        # numpy's default rule is this interpolation; its answers are numpy.float64
        "numpy_percentile": [(LOOP, """    import numpy as np
    for p in percentiles:
        summary[f"p{p:g}"] = np.percentile(xs, p)
""")],
        # torch where the stage needs none: the grader then loads torch before the learner's code
        "torch_quantile": [(LOOP, """    import torch
    ordered = torch.tensor(xs, dtype=torch.float64)
    for p in percentiles:
        summary[f"p{p:g}"] = float(torch.quantile(ordered, p / 100))
""")],
        "modf_and_sort_a_copy_in_place": [(LOOP, """    ordered = list(xs)
    ordered.sort()
    for p in percentiles:
        frac, whole = math.modf(p / 100 * (len(ordered) - 1))
        i = int(whole)
        nxt = ordered[i + 1] if i + 1 < len(ordered) else ordered[i]
        summary[f"p{p:g}"] = ordered[i] * (1 - frac) + nxt * frac if frac else ordered[i]
""")],
        "comprehension_with_a_helper": [(LOOP, """    ordered = sorted(xs)

    def at(rank):
        lo = int(rank)
        if lo == len(ordered) - 1:
            return ordered[lo]
        return ordered[lo] + (rank - lo) * (ordered[lo + 1] - ordered[lo])

    summary.update({f"p{p:g}": at(p / 100 * (len(ordered) - 1)) for p in percentiles})
""")],
        # the key by printf-style formatting: %g drops trailing zeros too (50.0 -> p50)
        "percent_g_key": [(LOOP, LOOP.replace('summary[f"p{p:g}"]', 'summary["p%g" % p]'))],
    },
    "s07.cache_accounting": {
        "one_loop": [(ACCOUNTING_START, """    prompt = hit = without = with_cache = with_hit = 0
    for e in ledger:
        prompt += e["prompt_tokens"]
        hit += e["hit_tokens"]
        without += prefill_flops(cfg, e["prompt_tokens"])["total"]
        with_cache += prefill_flops(cfg, e["computed_tokens"], e["hit_tokens"])["total"]
        with_hit += e["hit_tokens"] > 0
    totals = {"requests": len(ledger), "prompt_tokens": prompt, "hit_tokens": hit,
              "hit_rate": hit / prompt if prompt else 0.0, "requests_with_hit": with_hit,
              "flops_without_cache": without, "flops_with_cache": with_cache, "saved_flops": without - with_cache,
              "saved_fraction": (without - with_cache) / without if without else 0.0}
    return totals
    prompt = sum(e["prompt_tokens"] for e in ledger)
""")],
        "numpy_sums": [(ACCOUNTING_START, """    import numpy as np
    tokens = np.array([[e["prompt_tokens"], e["hit_tokens"]] for e in ledger], dtype=np.int64).reshape(-1, 2)
    flops = np.array([[prefill_flops(cfg, e["prompt_tokens"])["total"],
                       prefill_flops(cfg, e["computed_tokens"], e["hit_tokens"])["total"]] for e in ledger],
                     dtype=np.int64).reshape(-1, 2)
    p_sum, h_sum = tokens.sum(axis=0)
    w_sum, c_sum = flops.sum(axis=0)
    return {"requests": len(ledger), "prompt_tokens": p_sum, "hit_tokens": h_sum,
            "hit_rate": h_sum / p_sum if p_sum else 0.0, "requests_with_hit": np.count_nonzero(tokens[:, 1]),
            "flops_without_cache": w_sum, "flops_with_cache": c_sum, "saved_flops": w_sum - c_sum,
            "saved_fraction": (w_sum - c_sum) / w_sum if w_sum else 0.0}
    prompt = sum(e["prompt_tokens"] for e in ledger)
""")],
        "counter_of_fields": [(ACCOUNTING_START, """    from collections import Counter
    total = Counter()
    for e in ledger:
        total.update(prompt=e["prompt_tokens"], hit=e["hit_tokens"], with_hit=int(e["hit_tokens"] > 0),
                     without=prefill_flops(cfg, e["prompt_tokens"])["total"],
                     with_cache=prefill_flops(cfg, e["computed_tokens"], e["hit_tokens"])["total"])
    saved = total["without"] - total["with_cache"]
    return {"requests": len(ledger), "prompt_tokens": total["prompt"], "hit_tokens": total["hit"],
            "hit_rate": total["hit"] / total["prompt"] if total["prompt"] else 0.0,
            "requests_with_hit": total["with_hit"], "flops_without_cache": total["without"],
            "flops_with_cache": total["with_cache"], "saved_flops": saved,
            "saved_fraction": saved / total["without"] if total["without"] else 0.0}
    prompt = sum(e["prompt_tokens"] for e in ledger)
""")],
    },
    "s07.predict_ttft": {
        "named_terms": [(TTFT, """    f = prefill_flops(cfg, computed, cached)
    linear_s = f["linear"] / cal.gemm_rate(computed)
    attention_s = f["attention"] / cal.attention_rate(computed, computed + cached)
    head_s = f["head"] / cal.head_flops_per_s
    seconds = linear_s + attention_s + head_s + cal.other_s(computed, cached)
""")],
        "rate_table": [(TTFT, """    f = prefill_flops(cfg, computed, cached)
    rates = {"linear": cal.gemm_rate(computed), "attention": cal.attention_rate(computed, computed + cached),
             "head": cal.head_flops_per_s}
    seconds = sum(f[kind] / rate for kind, rate in rates.items()) + cal.other_s(computed, cached)
""")],
        "fsum_of_a_list": [(TTFT, """    f = prefill_flops(cfg, computed, cached)
    seconds = math.fsum([f["linear"] / cal.gemm_rate(computed),
                         f["attention"] / cal.attention_rate(computed, computed + cached),
                         f["head"] / cal.head_flops_per_s, cal.other_s(computed, cached)])
""")],
        # the cost model's own helpers: each part's FLOPs from kernels.calibration, divided by its rate
        "cost_model_helpers": [(TTFT, """    from kernels.calibration import attention_flops, head_flops, linear_flops

    seconds = (linear_flops(cfg, computed) / cal.gemm_rate(computed)
               + attention_flops(cfg, computed, computed + cached) / cal.attention_rate(computed, computed + cached)
               + head_flops(cfg) / cal.head_flops_per_s
               + cal.other_s(computed, cached))
""")],
        # the same helpers imported from the module the notebook calibrates with (it re-exports them)
        "cost_model_module_helpers": [(TTFT, """    from kernels.cost_model import attention_flops, head_flops, linear_flops

    context = computed + cached
    seconds = (linear_flops(cfg, computed) / cal.gemm_rate(computed)
               + attention_flops(cfg, computed, context) / cal.attention_rate(computed, context)
               + head_flops(cfg) / cal.head_flops_per_s
               + cal.other_s(computed, cached))
""")],
    },
    "s07.choose_setting": {
        "sorted_then_first_with_copy_module": [(CHOOSE, """    import copy
    ok = sorted((m for m in measurements if all(float(m[k]) <= b for k, b in slo.items())),
                key=lambda m: (m["num_blocks"], [float(m[k]) for k in slo], m["cache"]))
    chosen = copy.copy(dict(ok[0])) if ok else None
""")],
        "explicit_loop": [(CHOOSE, """    chosen, best_key = None, None
    for m in measurements:
        if not all(float(m[k]) <= bound for k, bound in slo.items()):
            continue
        key = (m["num_blocks"], tuple(float(m[k]) for k in slo), 1 if m["cache"] else 0)
        if best_key is None or key < best_key:
            chosen, best_key = {**m}, key
""")],
        "deepcopy_of_min": [(CHOOSE, """    import copy
    meeting = list(filter(lambda m: _meets(m, slo), measurements))
    chosen = copy.deepcopy(dict(min(meeting, key=lambda m: (m["num_blocks"], *map(lambda k: float(m[k]), slo),
                                                           int(bool(m["cache"])))))) if meeting else None
""")],
    },
}

"""Realistic wrong answers for each stage-8 TODO, graded by the real grader: each fails its TODO only.
Also right answers written differently from the reference, which must pass everything."""
from __future__ import annotations

SEEN = """        earlier = seen.get(key)
        if earlier is None:
            seen[key] = block
        elif earlier != block:
            return earlier, block, tries
"""
COUNT = "        tries += 1\n        key = key_of(block)\n"
SWEEP = """    for a, b in zip(values, values[1:]):
        # Below the midpoint lie exactly the samples <= a: hits there are right, misses wrong.
        # zh: 中点以下恰好是所有 <= a 的样本：其中的命中样本判对了，未命中样本判错了。
        errors = (len(hits) - bisect.bisect_right(hits, a)) + bisect.bisect_right(misses, a)
        if errors < best_errors:
            best, best_errors = (a + b) / 2, errors
"""
KS = '    result = stats.ks_2samp(hit, miss, alternative="greater")\n'
DECIDE = "    detected = p_value < alpha\n"
EMPTY = """    if not tenant:
        raise ValueError("the tenant must not be empty: an empty extra key means no key at all")
"""
OWN = """    if any(kind == TENANT_KIND for kind, _ in keys):
        raise ValueError("a request must not name its own tenant")
"""
COPY = "    keys = list(extra_keys or ())\n"
ADD = "    keys.append((TENANT_KIND, tenant))\n"
ANSWERS = '    return {"q1": "B", "q2": 4, "q3": 0.5, "q4": "B", "q5": "A"}\n'

MUTANTS = {
    # TODO 1: birthday_search
    "s08.birthday_search/only_against_the_first": ("s08.birthday_search", [(SEEN, """        if not seen:
            seen[key] = block
        elif key in seen and seen[key] != block:
            return seen[key], block, tries
""")]),
    "s08.birthday_search/repeat_is_a_collision": ("s08.birthday_search", [(SEEN, """        if key in seen:
            return seen[key], block, tries
        seen[key] = block
""")]),
    "s08.birthday_search/tries_off_by_one": ("s08.birthday_search", [(SEEN, SEEN.replace(
        "return earlier, block, tries", "return earlier, block, tries - 1"))]),
    "s08.birthday_search/pair_swapped": ("s08.birthday_search", [(SEEN, SEEN.replace(
        "return earlier, block, tries", "return block, earlier, tries"))]),
    "s08.birthday_search/pairwise_rehash": ("s08.birthday_search", [(COUNT, "        tries += 1\n"), (SEEN, """        key = key_of(block)
        for earlier in seen.values():
            if key_of(earlier) == key and earlier != block:
                return earlier, block, tries
        seen.setdefault(key, block)
""")]),
    "s08.birthday_search/repeats_not_counted": ("s08.birthday_search", [(COUNT, "        key = key_of(block)\n"), (SEEN, """        earlier = seen.get(key)
        if earlier is None:
            tries += 1
            seen[key] = block
        elif earlier != block:
            return earlier, block, tries + 1
""")]),
    "s08.birthday_search/materialises_the_stream": ("s08.birthday_search", [(
        "    for block in candidates:\n        tries += 1", "    for block in list(candidates):\n        tries += 1")]),
    # TODO 2: fit_threshold
    "s08.fit_threshold/midpoint_of_medians": ("s08.fit_threshold", [(SWEEP, """    best = (sorted(hit)[len(hit) // 2] + sorted(miss)[len(miss) // 2]) / 2
""")]),
    "s08.fit_threshold/between_largest_hit_and_smallest_miss": ("s08.fit_threshold", [(SWEEP, """    best = (max(hit) + min(miss)) / 2
""")]),
    "s08.fit_threshold/sample_values_as_candidates": ("s08.fit_threshold", [(SWEEP, SWEEP.replace(
        "best, best_errors = (a + b) / 2, errors", "best, best_errors = b, errors"))]),
    "s08.fit_threshold/largest_on_a_tie": ("s08.fit_threshold", [(SWEEP, SWEEP.replace(
        "if errors < best_errors:", "if errors <= best_errors:"))]),
    "s08.fit_threshold/balanced_errors": ("s08.fit_threshold", [(SWEEP, SWEEP.replace(
        "errors = (len(hits) - bisect.bisect_right(hits, a)) + bisect.bisect_right(misses, a)",
        "errors = (len(hits) - bisect.bisect_right(hits, a)) / len(hits) + bisect.bisect_right(misses, a) / len(misses)"))]),
    "s08.fit_threshold/hits_above": ("s08.fit_threshold", [(SWEEP, SWEEP.replace(
        "errors = (len(hits) - bisect.bisect_right(hits, a)) + bisect.bisect_right(misses, a)",
        "errors = bisect.bisect_right(hits, a) + (len(misses) - bisect.bisect_right(misses, a))"))]),
    # TODO 3: detect_sharing
    "s08.detect_sharing/two_sided": ("s08.detect_sharing", [(KS, "    result = stats.ks_2samp(hit, miss)\n")]),
    "s08.detect_sharing/wrong_direction": ("s08.detect_sharing", [(KS, KS.replace('"greater"', '"less"'))]),
    "s08.detect_sharing/samples_swapped": ("s08.detect_sharing", [(KS, KS.replace("(hit, miss,", "(miss, hit,"))]),
    "s08.detect_sharing/statistic_against_alpha": ("s08.detect_sharing", [(DECIDE, "    detected = statistic > alpha\n")]),
    "s08.detect_sharing/rejects_at_equality": ("s08.detect_sharing", [(DECIDE, "    detected = p_value <= alpha\n")]),
    "s08.detect_sharing/fixed_level": ("s08.detect_sharing", [(DECIDE, "    detected = p_value < 0.05\n")]),
    "s08.detect_sharing/asymptotic_p_value": ("s08.detect_sharing", [(KS, KS.replace(
        'alternative="greater")', 'alternative="greater", method="asymp")'))]),
    # TODO 4: tenant_extra_keys
    "s08.tenant_extra_keys/drops_request_keys": ("s08.tenant_extra_keys", [(COPY, "    keys = []\n")]),
    "s08.tenant_extra_keys/tenant_as_salt": ("s08.tenant_extra_keys", [(ADD, '    keys.append(("salt", tenant))\n')]),
    "s08.tenant_extra_keys/empty_tenant_allowed": ("s08.tenant_extra_keys", [(EMPTY, "")]),
    "s08.tenant_extra_keys/request_may_name_tenant": ("s08.tenant_extra_keys", [(OWN, "")]),
    "s08.tenant_extra_keys/python_hash": ("s08.tenant_extra_keys", [(ADD, "    keys.append((TENANT_KIND, str(hash(tenant))))\n")]),
    "s08.tenant_extra_keys/mutates_caller_list": ("s08.tenant_extra_keys", [(COPY, """    keys = extra_keys if extra_keys is not None else []
""")]),
    # memoized per tenant: the first call's extra keys stick to the tenant for the rest of the run
    "s08.tenant_extra_keys/memoized_per_tenant": ("s08.tenant_extra_keys", [(COPY + OWN + ADD, """    memo = tenant_extra_keys.__dict__.setdefault("memo", {})
    if tenant not in memo:
        memo[tenant] = list(extra_keys or ())
        if any(kind == TENANT_KIND for kind, _ in memo[tenant]):
            raise ValueError("a request must not name its own tenant")
        memo[tenant].append((TENANT_KIND, tenant))
    keys = list(memo[tenant])
""")]),
    # memoized per (tenant, extra keys), handing out the cached list itself
    "s08.tenant_extra_keys/returns_a_shared_list": ("s08.tenant_extra_keys", [(COPY + OWN + ADD, """    memo = tenant_extra_keys.__dict__.setdefault("memo", {})
    cache_key = (tenant, tuple(extra_keys or ()))
    if cache_key not in memo:
        fresh = list(extra_keys or ())
        if any(kind == TENANT_KIND for kind, _ in fresh):
            raise ValueError("a request must not name its own tenant")
        fresh.append((TENANT_KIND, tenant))
        memo[cache_key] = fresh
    keys = memo[cache_key]
""")]),
    # quiz
    "s08.quiz/full_key_search_cost": ("s08.quiz", [(ANSWERS, ANSWERS.replace('"q1": "B"', '"q1": "D"'))]),
    "s08.quiz/only_the_first_block_hits": ("s08.quiz", [(ANSWERS, ANSWERS.replace('"q2": 4', '"q2": 1'))]),
    "s08.quiz/partial_blocks_leak": ("s08.quiz", [(ANSWERS, ANSWERS.replace('"q3": 0.5', '"q3": 0.9'))]),
    "s08.quiz/salts_block_everyone": ("s08.quiz", [(ANSWERS, ANSWERS.replace('"q4": "B"', '"q4": "D"'))]),
    "s08.quiz/unanswered": ("s08.quiz", [(ANSWERS, '    return {"q1": "B"}\n')]),
}

# Right answers that do not look like the reference: they must pass every TODO.
EQUIVALENT = {
    "birthday_with_enumerate": [
        (COUNT, "        key = key_of(block)\n"),
        ("    for block in candidates:\n", "    for tries, block in enumerate(candidates, start=1):\n")],
    "threshold_quadratic": [(SWEEP, """    best_errors = None
    for a, b in zip(values, values[1:]):
        t = a + (b - a) / 2
        errors = sum(1 for x in hit if x >= t) + sum(1 for x in miss if x < t)
        if best_errors is None or errors < best_errors:
            best, best_errors = t, errors
""")],
    "threshold_via_accuracy": [(SWEEP, """    candidates = [(a + b) / 2 for a, b in zip(values, values[1:])]
    best = max(candidates, key=lambda t: (accuracy(t, hit, miss), -t))
""")],
    "ks_via_scipy_stats_name": [(KS, '    result = stats.ks_2samp(list(hit), list(miss), alternative="greater", method="auto")\n')],
    "tenant_first": [(COPY + OWN + ADD, """    if any(kind == TENANT_KIND for kind, _ in extra_keys or ()):
        raise ValueError("the tenant comes from the caller")
    keys = [(TENANT_KIND, tenant), *(extra_keys or ())]
""")],
}

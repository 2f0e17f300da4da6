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
    # the keys seen kept in a list and scanned at every try: right answers, quadratic time
    "s08.birthday_search/scans_a_list_of_keys": ("s08.birthday_search", [(
        "    for block in candidates:\n        tries += 1", "    pairs = []\n    for block in candidates:\n        tries += 1"),
        (SEEN, """        earlier = next((b for k, b in pairs if k == key), None)
        if earlier is None:
            pairs.append((key, block))
        elif earlier != block:
            return earlier, block, tries
""")]),
    # TODO 2: fit_threshold
    # the caller's lists sorted in place: right threshold, the caller's samples reordered
    "s08.fit_threshold/sorts_the_callers_lists": ("s08.fit_threshold", [("    hits, misses = sorted(hit), sorted(miss)\n", """    if isinstance(hit, list) and isinstance(miss, list):
        hit.sort()
        miss.sort()
    hits, misses = sorted(hit), sorted(miss)
""")]),
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
    # midpoints of consecutive samples, equal ones included: a threshold equal to a sample is a candidate
    "s08.fit_threshold/midpoints_of_equal_samples": ("s08.fit_threshold", [(SWEEP, SWEEP.replace(
        "for a, b in zip(values, values[1:]):", "for a, b in zip(sorted([*hit, *miss]), sorted([*hit, *miss])[1:]):"))]),
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
    # ids that differ only by case, spaces or Unicode form merged into one tenant: a cross-tenant hit
    "s08.tenant_extra_keys/case_folded_tenant": ("s08.tenant_extra_keys", [(ADD, "    keys.append((TENANT_KIND, tenant.casefold()))\n")]),
    "s08.tenant_extra_keys/stripped_tenant": ("s08.tenant_extra_keys", [(ADD, "    keys.append((TENANT_KIND, tenant.strip()))\n")]),
    "s08.tenant_extra_keys/unicode_normalized_tenant": ("s08.tenant_extra_keys", [(ADD, """    keys.append((TENANT_KIND, __import__("unicodedata").normalize("NFKC", tenant)))
""")]),
    # identity where equality is meant: passes only when the request's kind is the very constant object
    "s08.tenant_extra_keys/kind_compared_by_identity": ("s08.tenant_extra_keys", [(OWN, OWN.replace(
        "kind == TENANT_KIND", "kind is TENANT_KIND"))]),
    # pairs collapsed by a dict: two adapters become one, images [C, B] hit the blocks of images [A, B]
    "s08.tenant_extra_keys/pairs_through_a_dict": ("s08.tenant_extra_keys", [(COPY, "    keys = list(dict(extra_keys or ()).items())\n")]),
    # the spoof check looks at the first pair only
    "s08.tenant_extra_keys/spoof_checked_on_first_pair": ("s08.tenant_extra_keys", [(OWN, OWN.replace(
        "if any(kind == TENANT_KIND for kind, _ in keys):", "if keys and keys[0][0] == TENANT_KIND:"))]),
    # another tenant's name refused, the caller's own accepted (the contract says raise for any)
    "s08.tenant_extra_keys/own_tenant_name_accepted": ("s08.tenant_extra_keys", [(OWN, OWN.replace(
        "if any(kind == TENANT_KIND for kind, _ in keys):", "if any(kind == TENANT_KIND and value != tenant for kind, value in keys):"))]),
    # a Chinese tenant name crashes admission
    "s08.tenant_extra_keys/ascii_only_tenant": ("s08.tenant_extra_keys", [(ADD, """    keys.append((TENANT_KIND, tenant.encode("ascii").decode()))
""")]),
    "s08.birthday_search/same_block_by_identity": ("s08.birthday_search", [(SEEN, SEEN.replace(
        "elif earlier != block:", "elif earlier is not block:"))]),
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

# The check whose hint each wrong answer must read first (its mistake's own check), by wrong answer.
LEADS = {
    "s08.birthday_search/only_against_the_first": "sha256_cut_to_12_bits",
    "s08.birthday_search/repeat_is_a_collision": "repeated_block_is_not_a_collision",
    "s08.birthday_search/tries_off_by_one": "small_by_hand",
    "s08.birthday_search/pair_swapped": "small_by_hand",
    "s08.birthday_search/pairwise_rehash": "counts_what_it_takes",
    "s08.birthday_search/repeats_not_counted": "repeated_block_is_not_a_collision",
    "s08.birthday_search/materialises_the_stream": "counts_what_it_takes",
    "s08.birthday_search/same_block_by_identity": "counts_what_it_takes",
    "s08.birthday_search/scans_a_list_of_keys": "time_grows_linearly_with_the_tries",
    "s08.fit_threshold/midpoint_of_medians": "separated",
    "s08.fit_threshold/sorts_the_callers_lists": "callers_samples_left_alone",
    "s08.fit_threshold/between_largest_hit_and_smallest_miss": "overlapping",
    "s08.fit_threshold/sample_values_as_candidates": "separated",
    "s08.fit_threshold/largest_on_a_tie": "tie_takes_the_smallest",
    "s08.fit_threshold/balanced_errors": "every_sample_counts_once",
    "s08.fit_threshold/hits_above": "separated",
    "s08.fit_threshold/midpoints_of_equal_samples": "equal_samples_are_one_value",
    "s08.detect_sharing/two_sided": "hits_slower_is_not_sharing",
    "s08.detect_sharing/wrong_direction": "hits_faster_is_detected",
    "s08.detect_sharing/samples_swapped": "hits_faster_is_detected",
    "s08.detect_sharing/statistic_against_alpha": "alpha_given_is_used",
    "s08.detect_sharing/rejects_at_equality": "alpha_given_is_used",
    "s08.detect_sharing/fixed_level": "alpha_given_is_used",
    "s08.detect_sharing/asymptotic_p_value": "same_distribution",
    "s08.tenant_extra_keys/drops_request_keys": "request_extra_keys_are_kept",
    "s08.tenant_extra_keys/tenant_as_salt": "tenant_and_salt_stay_apart",
    "s08.tenant_extra_keys/empty_tenant_allowed": "empty_tenant_is_refused",
    "s08.tenant_extra_keys/request_may_name_tenant": "request_cannot_choose_its_tenant",
    "s08.tenant_extra_keys/python_hash": "fresh_list_per_call",
    "s08.tenant_extra_keys/mutates_caller_list": "request_extra_keys_are_kept",
    "s08.tenant_extra_keys/memoized_per_tenant": "request_extra_keys_are_kept",
    "s08.tenant_extra_keys/returns_a_shared_list": "fresh_list_per_call",
    "s08.tenant_extra_keys/case_folded_tenant": "ids_kept_exactly",
    "s08.tenant_extra_keys/stripped_tenant": "ids_kept_exactly",
    "s08.tenant_extra_keys/unicode_normalized_tenant": "ids_kept_exactly",
    "s08.tenant_extra_keys/kind_compared_by_identity": "fresh_list_per_call",
    "s08.tenant_extra_keys/ascii_only_tenant": "ids_kept_exactly",
    "s08.tenant_extra_keys/pairs_through_a_dict": "pairs_of_one_kind_all_kept",
    "s08.tenant_extra_keys/spoof_checked_on_first_pair": "any_tenant_pair_is_refused",
    "s08.tenant_extra_keys/own_tenant_name_accepted": "any_tenant_pair_is_refused",
    "s08.quiz/full_key_search_cost": "q1",
    "s08.quiz/only_the_first_block_hits": "q2",
    "s08.quiz/partial_blocks_leak": "q3",
    "s08.quiz/salts_block_everyone": "q4",
    "s08.quiz/unanswered": "q2",
}

"""Correct answers to each stage-8 code TODO written another way than the reference: each must earn
full marks (graded by ``tests/course/test_mutants.py``). Same format as ``solutions/07_serving/alternatives.py``."""
from __future__ import annotations

from tests.mutants_s08 import ADD, COPY, COUNT, KS, OWN, SEEN, SWEEP

LOOP = "    for block in candidates:\n"
BODY = COUNT + SEEN
FIT = "    hits, misses = sorted(hit), sorted(miss)\n    best, best_errors = values[0], len(hits) + len(misses) + 1\n" + SWEEP
TENANT = COPY + OWN + ADD

ALTERNATIVES = {
    "s08.birthday_search": {
        "setdefault": [(BODY, """        tries += 1
        earlier = seen.setdefault(key_of(block), block)
        if earlier != block:
            return earlier, block, tries
""")],
        "itertools_count": [(LOOP + BODY, """    import itertools
    for tries, block in zip(itertools.count(1), candidates):
        key = key_of(block)
        if key in seen and seen[key] != block:
            return seen[key], block, tries
        seen.setdefault(key, block)
""")],
        "iterator_and_next": [(LOOP + BODY, """    stream = iter(candidates)
    while (block := next(stream, None)) is not None:
        tries += 1
        key = key_of(block)
        if key not in seen:
            seen[key] = block
        elif not seen[key] == block:
            return seen[key], block, tries
""")],
    },
    "s08.fit_threshold": {
        "numpy_vectorised": [(FIT, """    import numpy as np
    v = np.asarray(values, dtype=float)
    mids = (v[:-1] + v[1:]) / 2
    h, m = np.asarray(hit, dtype=float), np.asarray(miss, dtype=float)
    errors = (h[None, :] >= mids[:, None]).sum(axis=1) + (m[None, :] < mids[:, None]).sum(axis=1)
    best = mids[int(np.argmin(errors))]
""")],
        "counts_from_a_counter": [(FIT, """    from collections import Counter
    hits_at, misses_at = Counter(hit), Counter(miss)
    wrong = len(hit)  # a threshold below every value: every hit is at or above it
    best, best_errors = None, None
    for a, b in zip(values, values[1:]):
        wrong += misses_at[a] - hits_at[a]
        if best_errors is None or wrong < best_errors:
            best, best_errors = (a + b) / 2, wrong
""")],
        "sorted_candidates_min": [(FIT, """    def errors(t):
        return sum(x >= t for x in hit) + sum(x < t for x in miss)

    best = min(sorted((a + b) / 2 for a, b in zip(values, values[1:])), key=errors)
""")],
    },
    "s08.detect_sharing": {
        "function_imported": [(KS, """    from scipy.stats import ks_2samp
    result = ks_2samp(hit, miss, alternative="greater")
""")],
        "tuple_unpacking": [(KS + "    statistic, p_value = result.statistic, result.pvalue\n", """    statistic, p_value = stats.ks_2samp(hit, miss, alternative="greater")[:2]
""")],
        "numpy_arrays": [(KS, """    import numpy as np
    result = stats.ks_2samp(np.asarray(hit, dtype=float), np.asarray(miss, dtype=float), alternative="greater")
""")],
    },
    "s08.tenant_extra_keys": {
        "tuple_concatenation": [(TENANT, """    request = tuple(extra_keys) if extra_keys else ()
    if TENANT_KIND in [kind for kind, _ in request]:
        raise ValueError("the tenant is who calls, not what the request says")
    keys = list(request + ((TENANT_KIND, tenant),))
""")],
        "comprehension_copy": [(TENANT, """    keys = [(kind, value) for kind, value in (extra_keys or [])]
    for kind, _ in keys:
        if kind == TENANT_KIND:
            raise ValueError("a request must not name a tenant")
    keys += [(TENANT_KIND, tenant)]
""")],
        "copy_module": [(TENANT, """    import copy
    keys = copy.copy(list(extra_keys)) if extra_keys is not None else []
    if {kind for kind, _ in keys} & {TENANT_KIND}:
        raise ValueError("a request must not name a tenant")
    keys.append((TENANT_KIND, tenant))
""")],
    },
}

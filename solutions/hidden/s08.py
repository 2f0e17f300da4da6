"""Hidden checks of stage 8: edge cases and seeded random cases. Never shipped to learners."""
from __future__ import annotations

import itertools
import random

from autograder.checks.s08 import (ATOL, PROMPT, STAGE, _pool_hits, digest, random_blocks, sum_key,
                                   truncated_first_block_key, ttft_samples)


# -- TODO 1: birthday_search ------------------------------------------------------------------------
@STAGE.check("s08.birthday_search", hidden=True,
             hint="Take candidates lazily and stop at the collision: the stream may be endless.")
def stops_at_the_collision(impl):
    taken = 0

    def stream():  # long, not endless: an answer that reads it all fails here instead of hanging
        nonlocal taken
        for block in itertools.islice(random_blocks(11), 30_000):
            taken += 1
            yield block

    result = impl.birthday_search(truncated_first_block_key(10), stream())
    return result, taken


@STAGE.check("s08.birthday_search", hidden=True,
             hint="Call key_of once per candidate and remember the keys: no pairwise recomputation.")
def one_key_per_candidate(impl):
    calls = 0
    inner = truncated_first_block_key(14)

    def key_of(block):
        nonlocal calls
        calls += 1
        return inner(block)

    result = impl.birthday_search(key_of, itertools.islice(random_blocks(12), 20_000))
    return result is not None and result[2], calls


@STAGE.check("s08.birthday_search", hidden=True,
             hint="`earlier` is the first block seen under the colliding key, `tries` counts the colliding candidate too.")
def earlier_is_the_first_holder(impl):
    # keys: 2, 3, 2 (a repeat of the first block), 4, 2 -> the fifth collides with the first
    return impl.birthday_search(sum_key, [(1, 1), (3,), (1, 1), (2, 2), (0, 2)])


@STAGE.check("s08.birthday_search", hidden=True, hint="Random searches at several key widths.")
def random_widths(impl):
    return [impl.birthday_search(truncated_first_block_key(bits), itertools.islice(random_blocks(20 + bits), 3000))
            for bits in (4, 6, 8, 11)]


@STAGE.check("s08.birthday_search", hidden=True, hint="No candidates at all: None.")
def empty_stream(impl):
    return impl.birthday_search(sum_key, []), impl.birthday_search(sum_key, iter([(1,)]))


# -- TODO 2: fit_threshold --------------------------------------------------------------------------
@STAGE.check("s08.fit_threshold", hidden=True, atol=ATOL,
             hint="One candidate only: it wins even when it errs; a rule that errs everywhere is still the best one here.")
def one_midpoint(impl):
    return impl.fit_threshold([1.0], [3.0]), impl.fit_threshold([3.0], [1.0]), impl.fit_threshold([1.0, 3.0], [2.0])


@STAGE.check("s08.fit_threshold", hidden=True, atol=ATOL,
             hint="Count errors, each sample once: with 2 hits and 8 misses a balanced score picks another midpoint.")
def unbalanced_samples(impl):
    return impl.fit_threshold([1.0, 5.0], [2.0, 3.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0])


@STAGE.check("s08.fit_threshold", hidden=True, atol=ATOL,
             hint="Unsorted input, tuples, values shared by hits and misses: midpoints of *distinct* values.")
def duplicates_and_tuples(impl):
    return impl.fit_threshold((3.0, 1.0, 2.0, 2.0), (2.0, 4.0, 3.0, 5.0))


@STAGE.check("s08.fit_threshold", hidden=True, atol=ATOL,
             hint="Random calibration sets: the fewest errors, the smallest midpoint on a tie.")
def random_calibrations(impl):
    out = []
    for seed in range(8):
        hit, miss = ttft_samples(30 + seed, 5 + 7 * seed, 40 - 4 * seed, miss_ms=2.0 + 0.3 * seed, spread=0.4)
        t = impl.fit_threshold(hit, miss)
        out.append((t, impl.accuracy(t, hit, miss)))
    return out


@STAGE.check("s08.fit_threshold", hidden=True, atol=ATOL,
             hint="Small integer samples with many ties.")
def random_small_integers(impl):
    rng = random.Random(41)
    out = []
    for _ in range(30):
        hit = [rng.randrange(6) for _ in range(rng.randint(1, 6))]
        miss = [rng.randrange(2, 8) for _ in range(rng.randint(1, 6))]
        out.append(impl.fit_threshold(hit, miss))
    return out


# -- TODO 3: detect_sharing -------------------------------------------------------------------------
@STAGE.check("s08.detect_sharing", hidden=True, atol=ATOL, hint="Detected means p_value < alpha, with the alpha given.")
def alpha_is_used(impl):
    hit, miss = ttft_samples(50, 12, 12, miss_ms=2.4)
    return [impl.detect_sharing(hit, miss, alpha) for alpha in (1e-12, 1e-3, 0.2, 0.9)]


@STAGE.check("s08.detect_sharing", hidden=True, atol=ATOL,
             hint="Small samples: SciPy's default method (an exact p-value); don't force the asymptotic one.")
def small_samples(impl):
    return impl.detect_sharing([1.0, 2.0, 3.5, 4.0, 6.0], [2.5, 3.0, 5.0, 7.0, 8.0, 9.0])


@STAGE.check("s08.detect_sharing", hidden=True, atol=ATOL,
             hint="The statistic is the largest amount by which hit's CDF exceeds miss's, not the largest gap either way.")
def crossing_cdfs(impl):
    # hits are faster at the bottom and slower at the top: the two one-sided statistics differ
    return impl.detect_sharing([1.0, 1.1, 1.2, 5.0, 5.1, 5.2, 5.3, 5.4], [2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7])


@STAGE.check("s08.detect_sharing", hidden=True, atol=ATOL, hint="Unequal sample sizes, lists or tuples.")
def unequal_sizes(impl):
    hit, miss = ttft_samples(51, 9, 40, miss_ms=2.6)
    return impl.detect_sharing(tuple(hit), miss, 0.01)


# -- TODO 4: tenant_extra_keys ----------------------------------------------------------------------
@STAGE.check("s08.tenant_extra_keys", hidden=True,
             hint="Keys must be the same in every process: use the tenant string itself, never hash().")
def keys_are_reproducible(impl):
    from solutions.s02_block_hash import chain_keys

    return digest(chain_keys(PROMPT, 4, impl.tenant_extra_keys("alice"))), \
        digest(chain_keys(PROMPT, 4, impl.tenant_extra_keys("bob", [("lora", "a")])))


@STAGE.check("s08.tenant_extra_keys", hidden=True,
             hint="Return a new list (of (kind, value) tuples); leave the caller's extra keys as they were.")
def caller_list_is_not_changed(impl):
    extra = [("lora", "adapter-1")]
    result = impl.tenant_extra_keys("alice", extra)
    return extra, type(result).__name__, sorted(result), result is extra


@STAGE.check("s08.tenant_extra_keys", hidden=True,
             hint="A request's extra keys may come as a tuple, or be empty; the tenant is still added.")
def tuple_and_empty_extra_keys(impl):
    return sorted(impl.tenant_extra_keys("t", (("salt", "s"),))), sorted(impl.tenant_extra_keys("t", [])), \
        _pool_hits(impl, [("t", PROMPT, ()), ("t", PROMPT, None)])

"""Hidden checks of stage 8: edge cases and seeded random cases. Never shipped to learners.
Their titles and hints, in both languages, are in ``hidden.toml`` beside this module."""
from __future__ import annotations

import itertools
import random

from autograder.checks.common import attempt, record
from autograder.checks.s08 import (
    ATOL,
    PROMPT,
    STAGE,
    alpha_around_p,
    budgeted_search,
    digest,
    found,
    ks,
    pool_hits,
    random_blocks,
    sum_key,
    truncated_first_block_key,
    ttft_samples,
)


# -- TODO 1: birthday_search ------------------------------------------------------------------------
@STAGE.check("s08.birthday_search", hidden=True, sibling="counts_what_it_takes")
def stops_at_the_collision(impl):
    taken = 0

    def stream():  # long, not endless: an answer that reads it all fails here instead of hanging
        nonlocal taken
        for block in itertools.islice(random_blocks(11), 30_000):
            taken += 1
            yield block

    result = impl.birthday_search(truncated_first_block_key(10), stream())
    return record(result=found(result), taken=taken)


@STAGE.check("s08.birthday_search", hidden=True, sibling="counts_what_it_takes")
def one_key_per_candidate(impl):
    calls = 0
    inner = truncated_first_block_key(14)

    def key_of(block):
        nonlocal calls
        calls += 1
        return inner(block)

    result = impl.birthday_search(key_of, itertools.islice(random_blocks(12), 20_000))
    return record(tries=result is not None and result[2], key_calls=calls)


@STAGE.check("s08.birthday_search", hidden=True, sibling="small_by_hand")
def earlier_is_the_first_holder(impl):
    # keys: 2, 3, 2 (a repeat of the first block), 4, 2 -> the fifth collides with the first
    return found(impl.birthday_search(sum_key, [(1, 1), (3,), (1, 1), (2, 2), (0, 2)]))


@STAGE.check("s08.birthday_search", hidden=True, sibling="sha256_cut_to_12_bits")
def random_widths(impl):
    return [found(impl.birthday_search(truncated_first_block_key(bits), itertools.islice(random_blocks(20 + bits), 3000)))
            for bits in (4, 6, 8, 11)]


@STAGE.check("s08.birthday_search", hidden=True, sibling="counts_what_it_takes")
def empty_stream(impl):
    return record(empty=found(impl.birthday_search(sum_key, [])), one=found(impl.birthday_search(sum_key, iter([(1,)]))))


@STAGE.check("s08.birthday_search", hidden=True, sibling="repeated_block_is_not_a_collision")
def many_repeats(impl):
    return found(impl.birthday_search(sum_key, [(2,)] * 5 + [(4,), (4,), (7,)]))


@STAGE.check("s08.birthday_search", hidden=True, sibling="time_grows_linearly_with_the_tries")
def long_search_with_repeats(impl):
    # 40,000 blocks with scattered 4-byte keys, each sent twice in a row, then a block colliding with one
    # in the middle: 80,001 tries, each key looked up once
    def key_of(block):
        return (block[0] * 2_654_435_761 % 2**32).to_bytes(4, "big")

    blocks = itertools.chain.from_iterable(((i, i), (i, i)) for i in range(40_000))
    return budgeted_search(impl, key_of, itertools.chain(blocks, [(20_000, 1)]))


# -- TODO 2: fit_threshold --------------------------------------------------------------------------
@STAGE.check("s08.fit_threshold", hidden=True, sibling="overlapping", atol=ATOL)
def one_midpoint(impl):
    return record(separated=impl.fit_threshold([1.0], [3.0]), reversed=impl.fit_threshold([3.0], [1.0]),
                  miss_between=impl.fit_threshold([1.0, 3.0], [2.0]))


@STAGE.check("s08.fit_threshold", hidden=True, sibling="every_sample_counts_once", atol=ATOL)
def unbalanced_samples(impl):
    return impl.fit_threshold([1.0, 5.0], [2.0, 3.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0])


@STAGE.check("s08.fit_threshold", hidden=True, sibling="shared_values_and_tuples", atol=ATOL)
def duplicates_and_tuples(impl):
    return impl.fit_threshold((3.0, 1.0, 2.0, 2.0), (2.0, 4.0, 3.0, 5.0))


@STAGE.check("s08.fit_threshold", hidden=True, sibling="equal_samples_are_one_value", atol=ATOL)
def repeated_values_at_the_boundary(impl):
    return [impl.fit_threshold(hit, miss) for hit, miss in
            (([1.0, 1.0, 4.0], [1.0, 4.0, 6.0]), ((5, 5, 5), (5, 8)), ([0.5, 2.0, 2.0], [2.0, 2.0, 3.0]))]


@STAGE.check("s08.fit_threshold", hidden=True, sibling="calibrate_then_hold_out", atol=ATOL)
def random_calibrations(impl):
    out = []
    for seed in range(8):
        hit, miss = ttft_samples(30 + seed, 5 + 7 * seed, 40 - 4 * seed, miss_ms=2.0 + 0.3 * seed, spread=0.4)
        t = impl.fit_threshold(hit, miss)
        out.append(record(threshold=t, accuracy=impl.accuracy(t, hit, miss)))
    return out


@STAGE.check("s08.fit_threshold", hidden=True, sibling="shared_values_and_tuples", atol=ATOL)
def random_small_integers(impl):
    rng = random.Random(41)
    out = []
    for _ in range(30):
        hit = [rng.randrange(6) for _ in range(rng.randint(1, 6))]
        miss = [rng.randrange(2, 8) for _ in range(rng.randint(1, 6))]
        out.append(impl.fit_threshold(hit, miss))
    return out


@STAGE.check("s08.fit_threshold", hidden=True, sibling="callers_samples_left_alone", atol=ATOL)
def random_lists_left_alone(impl):
    hit, miss = ttft_samples(31, 25, 25, miss_ms=3.0)
    before = (list(hit), list(miss))
    threshold = impl.fit_threshold(hit, miss)
    return record(threshold=threshold, left_alone=(hit, miss) == before)


# -- TODO 3: detect_sharing -------------------------------------------------------------------------
@STAGE.check("s08.detect_sharing", hidden=True, sibling="alpha_given_is_used")
def alpha_is_used(impl):
    hit, miss = ttft_samples(50, 12, 12, miss_ms=2.4)
    return alpha_around_p(impl, hit, miss, tiny=lambda p: p * 1e-9, just_below=lambda p: p * (1 - 1e-9),
                          equal=lambda p: p, just_above=lambda p: p + (1 - p) * 1e-9, near_one=lambda p: 1 - (1 - p) * 1e-3)


@STAGE.check("s08.detect_sharing", hidden=True, sibling="hits_faster_is_detected", atol=ATOL)
def small_samples(impl):
    return ks(impl.detect_sharing([1.0, 2.0, 3.5, 4.0, 6.0], [2.5, 3.0, 5.0, 7.0, 8.0, 9.0]))


@STAGE.check("s08.detect_sharing", hidden=True, sibling="hits_slower_is_not_sharing", atol=ATOL)
def crossing_cdfs(impl):
    # hits are faster at the bottom and slower at the top: the two one-sided statistics differ
    return ks(impl.detect_sharing([1.0, 1.1, 1.2, 5.0, 5.1, 5.2, 5.3, 5.4], [2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7]))


@STAGE.check("s08.detect_sharing", hidden=True, sibling="hits_slower_is_not_sharing", atol=ATOL)
def unequal_sizes(impl):
    hit, miss = ttft_samples(51, 9, 40, miss_ms=2.6)
    return ks(impl.detect_sharing(tuple(hit), miss, 0.01))


# -- TODO 4: tenant_extra_keys ----------------------------------------------------------------------
@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="fresh_list_per_call")
def keys_are_reproducible(impl):
    from workbook.block_hash import chain_keys

    return record(alice=digest(chain_keys(PROMPT, 4, impl.tenant_extra_keys("alice"))),
                  bob_lora=digest(chain_keys(PROMPT, 4, impl.tenant_extra_keys("bob", [("lora", "a")]))))


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="fresh_list_per_call")
def caller_list_is_not_changed(impl):
    extra = [("lora", "adapter-1")]
    result = impl.tenant_extra_keys("alice", extra)
    return record(caller=extra, type=type(result).__name__, keys=sorted(result), same_object=result is extra)


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="fresh_list_per_call")
def tuple_and_empty_extra_keys(impl):
    return record(from_tuple=sorted(impl.tenant_extra_keys("t", (("salt", "s"),))),
                  from_empty=sorted(impl.tenant_extra_keys("t", [])),
                  hits=pool_hits(impl, [("empty", "t", PROMPT, ()), ("none", "t", PROMPT, None)]))


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="request_extra_keys_are_kept")
def salts_change_within_one_sequence(impl):
    return pool_hits(impl, [("salt_a", "alice", PROMPT, [("salt", "a")]), ("salt_b", "alice", PROMPT, [("salt", "b")]),
                            ("no_salt", "alice", PROMPT, None), ("salt_a_again", "alice", PROMPT, [("salt", "a")]),
                            ("bob_salt_a", "bob", PROMPT, [("salt", "a")])])


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="pairs_of_one_kind_all_kept")
def repeated_kinds_through_a_pool(impl):
    return pool_hits(impl, [("loras_a_b", "bob", PROMPT, [("lora", "a"), ("lora", "b")]), ("lora_b", "bob", PROMPT, [("lora", "b")]),
                            ("loras_c_b", "bob", PROMPT, (("lora", "c"), ("lora", "b"))),
                            ("three_images", "bob", PROMPT, [("image", "x"), ("salt", "s"), ("image", "y"), ("image", "z")]),
                            ("two_images", "bob", PROMPT, [("image", "y"), ("salt", "s"), ("image", "z")]),
                            ("loras_a_b_again", "bob", PROMPT, [("lora", "a"), ("lora", "b")])])


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="any_tenant_pair_is_refused")
def spoofs_in_every_position(impl):
    out = []
    others = [("salt", "s"), ("lora", "l"), ("image", "i")]
    for at in range(4):
        for named in ("bob", "carol"):
            pairs = others[:at] + [("tenant", named)] + others[at:]
            out.append(attempt(lambda pairs=pairs, caller=(named if at % 2 else "dave"): impl.tenant_extra_keys(caller, pairs)))
    return out


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="fresh_list_per_call")
def results_are_independent(impl):
    first = impl.tenant_extra_keys("alice")
    first.append(("lora", "x"))
    second = impl.tenant_extra_keys("alice")
    return record(second=sorted(second), same_object=first is second)

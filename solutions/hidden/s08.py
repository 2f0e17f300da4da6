"""Hidden checks of stage 8: edge cases and seeded random cases. Never shipped to learners."""
from __future__ import annotations

import itertools
import random

from autograder.checks.common import record
from autograder.checks.s08 import (ATOL, PROMPT, STAGE, alpha_around_p, digest, found, ks, pool_hits, random_blocks,
                                   sum_key, truncated_first_block_key, ttft_samples)
from autograder.i18n import L


# -- TODO 1: birthday_search ------------------------------------------------------------------------
@STAGE.check("s08.birthday_search", hidden=True, sibling="counts_what_it_takes",
             hint=L("Take candidates one at a time and stop at the collision: the stream may be endless, so never "
                    "turn it into a list.",
                    "一次取一个候选块，找到碰撞就停：候选流可能是无穷的，绝不能先把它变成列表。"))
def stops_at_the_collision(impl):
    taken = 0

    def stream():  # long, not endless: an answer that reads it all fails here instead of hanging
        nonlocal taken
        for block in itertools.islice(random_blocks(11), 30_000):
            taken += 1
            yield block

    result = impl.birthday_search(truncated_first_block_key(10), stream())
    return record(result=found(result), taken=taken)


@STAGE.check("s08.birthday_search", hidden=True, sibling="counts_what_it_takes",
             hint=L("Call key_of exactly once per candidate and remember the keys in a dictionary: no recomputing "
                    "the keys of earlier blocks.",
                    "每个候选块恰好调用一次 key_of，并把 key 记在字典里：不要重新计算前面块的 key。"))
def one_key_per_candidate(impl):
    calls = 0
    inner = truncated_first_block_key(14)

    def key_of(block):
        nonlocal calls
        calls += 1
        return inner(block)

    result = impl.birthday_search(key_of, itertools.islice(random_blocks(12), 20_000))
    return record(tries=result is not None and result[2], key_calls=calls)


@STAGE.check("s08.birthday_search", hidden=True, sibling="small_by_hand",
             hint=L("earlier is the *first* block seen under the colliding key, and tries counts the colliding "
                    "candidate too.",
                    "earlier 是*最早*拿到这个碰撞 key 的块，tries 也要把发生碰撞的那个候选块算进去。"))
def earlier_is_the_first_holder(impl):
    # keys: 2, 3, 2 (a repeat of the first block), 4, 2 -> the fifth collides with the first
    return found(impl.birthday_search(sum_key, [(1, 1), (3,), (1, 1), (2, 2), (0, 2)]))


@STAGE.check("s08.birthday_search", hidden=True, sibling="sha256_cut_to_12_bits",
             hint=L("Random searches at several key widths: remember every key seen, count every candidate.",
                    "在几种 key 位宽下随机搜索：记住见过的每个 key，数清每个候选块。"))
def random_widths(impl):
    return [found(impl.birthday_search(truncated_first_block_key(bits), itertools.islice(random_blocks(20 + bits), 3000)))
            for bits in (4, 6, 8, 11)]


@STAGE.check("s08.birthday_search", hidden=True, sibling="counts_what_it_takes",
             hint=L("No candidates at all, or a single one: None.", "一个候选块也没有，或者只有一个：返回 None。"))
def empty_stream(impl):
    return record(empty=found(impl.birthday_search(sum_key, [])), one=found(impl.birthday_search(sum_key, iter([(1,)]))))


@STAGE.check("s08.birthday_search", hidden=True, sibling="repeated_block_is_not_a_collision",
             hint=L("A block repeated many times before the collision: each repeat is a try, none is a collision.",
                    "碰撞之前某个块重复出现了很多次：每次重复都算一次尝试，但都不是碰撞。"))
def many_repeats(impl):
    return found(impl.birthday_search(sum_key, [(2,)] * 5 + [(4,), (4,), (7,)]))


# -- TODO 2: fit_threshold --------------------------------------------------------------------------
@STAGE.check("s08.fit_threshold", hidden=True, sibling="overlapping", atol=ATOL,
             hint=L("One candidate only: it wins even when it errs (a rule that errs everywhere is still the best "
                    "one available).",
                    "只有一个候选阈值时，即使它会判错也选它（一个处处判错的规则，也还是唯一可选的规则）。"))
def one_midpoint(impl):
    return record(separated=impl.fit_threshold([1.0], [3.0]), reversed=impl.fit_threshold([3.0], [1.0]),
                  miss_between=impl.fit_threshold([1.0, 3.0], [2.0]))


@STAGE.check("s08.fit_threshold", hidden=True, sibling="every_sample_counts_once", atol=ATOL,
             hint=L("Count errors, each sample once: with 2 hits and 8 misses a score balanced per class picks "
                    "another midpoint.",
                    "按样本个数数错误，每个样本算一次：2 个命中、8 个未命中时，按类别平衡的打分会选出另一个中点。"))
def unbalanced_samples(impl):
    return impl.fit_threshold([1.0, 5.0], [2.0, 3.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0])


@STAGE.check("s08.fit_threshold", hidden=True, sibling="shared_values_and_tuples", atol=ATOL,
             hint=L("Unsorted input, tuples, values shared by hits and misses: midpoints of *distinct* values, "
                    "and a sample equal to a value lies below the midpoint above it.",
                    "输入没排序、是 tuple、命中和未命中有相同的值：用*不同*取值的中点；等于某个取值的样本，落在"
                    "它上方那个中点的下面。"))
def duplicates_and_tuples(impl):
    return impl.fit_threshold((3.0, 1.0, 2.0, 2.0), (2.0, 4.0, 3.0, 5.0))


@STAGE.check("s08.fit_threshold", hidden=True, sibling="calibrate_then_hold_out", atol=ATOL,
             hint=L("Random calibration sets: the fewest errors, the smallest midpoint on a tie.",
                    "随机的校准集：判错最少，判错一样多时取最小的中点。"))
def random_calibrations(impl):
    out = []
    for seed in range(8):
        hit, miss = ttft_samples(30 + seed, 5 + 7 * seed, 40 - 4 * seed, miss_ms=2.0 + 0.3 * seed, spread=0.4)
        t = impl.fit_threshold(hit, miss)
        out.append(record(threshold=t, accuracy=impl.accuracy(t, hit, miss)))
    return out


@STAGE.check("s08.fit_threshold", hidden=True, sibling="shared_values_and_tuples", atol=ATOL,
             hint=L("Small integer samples with many ties.", "有很多相同值的小整数样本。"))
def random_small_integers(impl):
    rng = random.Random(41)
    out = []
    for _ in range(30):
        hit = [rng.randrange(6) for _ in range(rng.randint(1, 6))]
        miss = [rng.randrange(2, 8) for _ in range(rng.randint(1, 6))]
        out.append(impl.fit_threshold(hit, miss))
    return out


# -- TODO 3: detect_sharing -------------------------------------------------------------------------
@STAGE.check("s08.detect_sharing", hidden=True, sibling="alpha_given_is_used",
             hint=L("Detected means p-value strictly below alpha, for whatever alpha is passed in: an alpha equal "
                    "to the p-value does not reject.",
                    "detected 的意思是 p 值严格小于 alpha，无论传入的 alpha 是多少：alpha 恰好等于 p 值时不拒绝。"))
def alpha_is_used(impl):
    hit, miss = ttft_samples(50, 12, 12, miss_ms=2.4)
    return alpha_around_p(impl, hit, miss, tiny=lambda p: p * 1e-9, just_below=lambda p: p * (1 - 1e-9),
                          equal=lambda p: p, just_above=lambda p: p + (1 - p) * 1e-9, near_one=lambda p: 1 - (1 - p) * 1e-3)


@STAGE.check("s08.detect_sharing", hidden=True, sibling="hits_faster_is_detected", atol=ATOL,
             hint=L("Small samples: keep SciPy's default method (an exact p-value); do not force the asymptotic "
                    "one.",
                    "样本很少时要用 SciPy 的默认方法（精确 p 值），不要强制用渐近方法。"))
def small_samples(impl):
    return ks(impl.detect_sharing([1.0, 2.0, 3.5, 4.0, 6.0], [2.5, 3.0, 5.0, 7.0, 8.0, 9.0]))


@STAGE.check("s08.detect_sharing", hidden=True, sibling="hits_slower_is_not_sharing", atol=ATOL,
             hint=L("The statistic is the largest amount by which hit's CDF exceeds miss's, not the largest gap in "
                    "either direction.",
                    "统计量是命中样本的 CDF 超出未命中样本的 CDF 的最大量，而不是两个方向上的最大差距。"))
def crossing_cdfs(impl):
    # hits are faster at the bottom and slower at the top: the two one-sided statistics differ
    return ks(impl.detect_sharing([1.0, 1.1, 1.2, 5.0, 5.1, 5.2, 5.3, 5.4], [2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7]))


@STAGE.check("s08.detect_sharing", hidden=True, sibling="hits_slower_is_not_sharing", atol=ATOL,
             hint=L("Unequal sample sizes, lists or tuples: the hit samples always come first.",
                    "样本数不相等，列表或 tuple 都可能：命中样本始终放在前面。"))
def unequal_sizes(impl):
    hit, miss = ttft_samples(51, 9, 40, miss_ms=2.6)
    return ks(impl.detect_sharing(tuple(hit), miss, 0.01))


# -- TODO 4: tenant_extra_keys ----------------------------------------------------------------------
@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="fresh_list_per_call",
             hint=L("Keys must be the same in every process: put the tenant string itself into the key, never "
                    "Python's hash() of it (which changes from process to process).",
                    "key 必须在每个进程里都一样：直接把租户字符串放进 key，不要用 Python 的 hash()（每个进程的"
                    "结果都不同）。"))
def keys_are_reproducible(impl):
    from solutions.s02_block_hash import chain_keys

    return record(alice=digest(chain_keys(PROMPT, 4, impl.tenant_extra_keys("alice"))),
                  bob_lora=digest(chain_keys(PROMPT, 4, impl.tenant_extra_keys("bob", [("lora", "a")]))))


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="fresh_list_per_call",
             hint=L("Return a new list of (kind, value) pairs; leave the caller's extra keys as they were.",
                    "返回一个新的列表，元素是 (kind, value) 对；调用者传入的附加 key 要保持原样。"))
def caller_list_is_not_changed(impl):
    extra = [("lora", "adapter-1")]
    result = impl.tenant_extra_keys("alice", extra)
    return record(caller=extra, type=type(result).__name__, keys=sorted(result), same_object=result is extra)


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="fresh_list_per_call",
             hint=L("A request's extra keys may come as a tuple, or be empty; the tenant is still added.",
                    "请求的附加 key 可能是 tuple，也可能为空；租户照样要加上。"))
def tuple_and_empty_extra_keys(impl):
    return record(from_tuple=sorted(impl.tenant_extra_keys("t", (("salt", "s"),))),
                  from_empty=sorted(impl.tenant_extra_keys("t", [])),
                  hits=pool_hits(impl, [("empty", "t", PROMPT, ()), ("none", "t", PROMPT, None)]))


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="request_extra_keys_are_kept",
             hint=L("One tenant, the same prompt, different salts in one sequence of calls: compute the keys "
                    "afresh for every call (nothing remembered from an earlier call).",
                    "同一个租户、同一个提示词、一连串调用里用不同的盐值：每次调用都重新计算 key（不要沿用之前"
                    "调用记下的结果）。"))
def salts_change_within_one_sequence(impl):
    return pool_hits(impl, [("salt_a", "alice", PROMPT, [("salt", "a")]), ("salt_b", "alice", PROMPT, [("salt", "b")]),
                            ("no_salt", "alice", PROMPT, None), ("salt_a_again", "alice", PROMPT, [("salt", "a")]),
                            ("bob_salt_a", "bob", PROMPT, [("salt", "a")])])


@STAGE.check("s08.tenant_extra_keys", hidden=True, sibling="fresh_list_per_call",
             hint=L("Each call returns its own list: changing one result must not change what a later call returns.",
                    "每次调用都返回自己的列表：改动一次调用的结果，不能影响之后调用的返回值。"))
def results_are_independent(impl):
    first = impl.tenant_extra_keys("alice")
    first.append(("lora", "x"))
    second = impl.tenant_extra_keys("alice")
    return record(second=sorted(second), same_object=first is second)

"""Hidden checks of stage 1: edge cases beyond the seed's examples. Never shipped to learners.
Their titles and hints, in both languages, are in ``hidden.toml`` beside this module."""
from __future__ import annotations

import random

from autograder.checks.common import attempt, plain, raised, record
from autograder.checks.s01 import STAGE, boundary_matches, outcome_and_state, seed_fixture, split_record

# Token ids whose decimal digits run into each other: 1 then 23 reads like 12 then 3, or 123. A
# match or ledger computed on text (joined digits, "1 23".startswith("1 2")) goes wrong on them.
MULTI_DIGIT = (1, 2, 3, 12, 23, 123, 11, 111)


def _random_cases(seed: int, n: int = 150, vocab=(0, 1, 2)):
    """Prompts and prefixes over a tiny vocabulary, so that partial and full matches are common."""
    rng = random.Random(seed)
    for _ in range(n):
        prefixes = [[rng.choice(vocab) for _ in range(rng.randint(1, 5))] for _ in range(rng.randint(0, 4))]
        prompt = [rng.choice(vocab) for _ in range(rng.randint(0, 7))]
        yield prefixes, prompt


def _manager(impl, prefixes):
    m = impl.PrefixCacheManager()
    for p in prefixes:
        m.add_prefix(p)
    return m


# -- TODO 1 -------------------------------------------------------------------------------------
@STAGE.check("s01.normalize", hidden=True, sibling="generator_read_once")
def generator_input(impl):
    return impl.PrefixCacheManager()._normalize(t for t in (4, 5, 6))


@STAGE.check("s01.normalize", hidden=True, sibling="rejects_whole_float")
def rejects_float(impl):
    return impl.PrefixCacheManager()._normalize([1, 2.0])


@STAGE.check("s01.normalize", hidden=True, sibling="returns_a_new_list")
def returns_a_copy(impl):
    given = [9, 8, 7]
    out = impl.PrefixCacheManager()._normalize(given)
    return record(returned_the_callers_list=out is given, callers_list_after=given)


@STAGE.check("s01.normalize", hidden=True, sibling="falsy_tokens_are_checked_too")
def falsy_non_tokens_anywhere(impl):
    m = impl.PrefixCacheManager()
    cases = [[0, 1, False, 0.0], [7, 8, b""], [(), 4], [0, 0, 0], [[], 1]]
    return [attempt(lambda c=c: m._normalize(c)) for c in cases]


@STAGE.check("s01.normalize", hidden=True, sibling="empty_and_one_token")
def empty_is_fine(impl):
    return impl.PrefixCacheManager()._normalize([])


# -- TODO 2 -------------------------------------------------------------------------------------
@STAGE.check("s01.add_prefix", hidden=True, sibling="same_tokens_any_container")
def list_and_tuple_dedupe(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([1, 2])
    m.add_prefix((1, 2))
    m.add_prefix(x for x in [1, 2])
    return m.cached_prefixes


@STAGE.check("s01.add_prefix", hidden=True, sibling="bad_token_stores_nothing")
def empty_stores_nothing(impl):
    m = seed_fixture(impl)
    return outcome_and_state(lambda: m.add_prefix([]), m)


@STAGE.check("s01.add_prefix", hidden=True, sibling="empty_in_any_container_is_refused")
def empty_iterators_store_nothing(impl):
    m = seed_fixture(impl)
    return record(raised=[raised(lambda s=s: m.add_prefix(s)) for s in (iter([]), iter(()), (x for x in range(0)))],
                  cached_prefixes=m.cached_prefixes)


@STAGE.check("s01.add_prefix", hidden=True, sibling="seed_registration")
def stores_tuple_copy(impl):
    m = impl.PrefixCacheManager()
    given = [5, 6, 7]
    m.add_prefix(given)
    given.append(8)
    return m.cached_prefixes


# -- TODO 3 -------------------------------------------------------------------------------------
@STAGE.check("s01.match_prefix", hidden=True, sibling="seed_match_3")
def longer_added_after_shorter(impl):
    m = _manager(impl, ([1], [1, 2, 3], [1, 2]))
    return m.match_prefix([1, 2, 3, 4])


@STAGE.check("s01.match_prefix", hidden=True, sibling="whole_prompt_one_token_and_empty")
def prefix_longer_than_prompt(impl):
    m = _manager(impl, ([1, 2, 3, 4, 5], [1, 2]))
    return record(prompt_1_2=m.match_prefix([1, 2]), prompt_1=m.match_prefix([1]), empty_prompt=m.match_prefix([]))


@STAGE.check("s01.match_prefix", hidden=True, sibling="seed_no_match")
def random_prompts(impl):
    return [_manager(impl, prefixes).match_prefix(prompt) for prefixes, prompt in _random_cases(11)]


@STAGE.check("s01.match_prefix", hidden=True, sibling="any_iterable_prompt")
def tuple_prompt(impl):
    m = seed_fixture(impl)
    prompt = [1, 2, 9, 9]
    return record(tuple_prompt=m.match_prefix(tuple(prompt)), list_prompt=m.match_prefix(prompt), prompt_after=prompt)


@STAGE.check("s01.match_prefix", hidden=True, sibling="token_boundaries")
def multi_digit_token_boundaries(impl):
    cases = [([1, 2], [1, 23]), ([12], [1, 2, 3]), ([1, 23], [123]), ([11, 1], [1, 11, 5]), ([1, 2, 3], [12, 3, 4]),
             ([2], [23, 2]), ([1], [11])]
    return boundary_matches(impl, cases)


@STAGE.check("s01.match_prefix", hidden=True, sibling="token_boundaries")
def random_multi_digit_prompts(impl):
    return [_manager(impl, prefixes).match_prefix(prompt)
            for prefixes, prompt in _random_cases(14, vocab=MULTI_DIGIT)]


# -- TODO 4 -------------------------------------------------------------------------------------
@STAGE.check("s01.split_prompt", hidden=True, sibling="tuple_or_generator_gives_lists")
def tuple_input_gives_lists(impl):
    return split_record(seed_fixture(impl).split_prompt((1, 2, 9, 4, 4)))


@STAGE.check("s01.split_prompt", hidden=True, sibling="seed_split")
def random_splits(impl):
    return [split_record(_manager(impl, prefixes).split_prompt(prompt)) for prefixes, prompt in _random_cases(12)]


@STAGE.check("s01.split_prompt", hidden=True, sibling="seed_split")
def multi_digit_splits(impl):
    return [split_record(_manager(impl, prefixes).split_prompt(prompt))
            for prefixes, prompt in _random_cases(15, n=60, vocab=MULTI_DIGIT)]


# -- TODO 5 -------------------------------------------------------------------------------------
@STAGE.check("s01.cache_stats", hidden=True, sibling="ratio_rounded_to_4_decimals")
def ratio_needs_rounding(impl):
    m = _manager(impl, ([1], [4, 4]))
    return plain([m.cache_stats([1, 2, 3]), m.cache_stats([4, 4, 5]), m.cache_stats([1])])


@STAGE.check("s01.cache_stats", hidden=True, sibling="seed_stats")
def random_ledgers(impl):
    return plain([_manager(impl, prefixes).cache_stats(prompt) for prefixes, prompt in _random_cases(13)])


@STAGE.check("s01.cache_stats", hidden=True, sibling="seed_stats")
def multi_digit_ledgers(impl):
    return plain([_manager(impl, prefixes).cache_stats(prompt)
                  for prefixes, prompt in _random_cases(16, n=60, vocab=MULTI_DIGIT)])


@STAGE.check("s01.cache_stats", hidden=True, sibling="empty_iterator_prompt")
def empty_iterables_as_prompts(impl):
    m = _manager(impl, ([1, 2], [3]))
    prompts = [(t for t in ()), iter([]), map(int, []), filter(None, [0, 0]), {}.keys()]
    return plain([attempt(lambda p=p: m.cache_stats(p)) for p in prompts])


@STAGE.check("s01.cache_stats", hidden=True, sibling="generator_prompt_read_once")
def iterator_prompts(impl):
    # each prompt starts with a registered prefix, so a ledger counted on the spent iterator shows
    # zh: 每个提示词都以一个已登记的前缀开头，在读空了的迭代器上数出来的账本就会露馅
    return plain([_manager(impl, prefixes).cache_stats(iter((prefixes[-1] if prefixes else []) + prompt))
                  for prefixes, prompt in _random_cases(17, n=20)])

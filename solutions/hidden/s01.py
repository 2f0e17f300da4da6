"""Hidden checks of stage 1: edge cases beyond the seed's examples. Never shipped to learners."""
from __future__ import annotations

import random

from autograder.checks.s01 import STAGE, outcome_and_state, seed_fixture


def _random_cases(seed: int, n: int = 150):
    """Prompts and prefixes over a tiny vocabulary, so that partial and full matches are common."""
    rng = random.Random(seed)
    for _ in range(n):
        prefixes = [[rng.randrange(3) for _ in range(rng.randint(1, 5))] for _ in range(rng.randint(0, 4))]
        prompt = [rng.randrange(3) for _ in range(rng.randint(0, 7))]
        yield prefixes, prompt


# -- TODO 1 -------------------------------------------------------------------------------------
@STAGE.check("s01.normalize", hidden=True, hint="Any iterable of ints can come in, a generator too.")
def generator_input(impl):
    return impl.PrefixCacheManager()._normalize(t for t in (4, 5, 6))


@STAGE.check("s01.normalize", hidden=True, hint="A float is not a token, even 1.0.")
def rejects_float(impl):
    return impl.PrefixCacheManager()._normalize([1, 2.0])


@STAGE.check("s01.normalize", hidden=True, hint="Return a new list; never change or return the caller's.")
def returns_a_copy(impl):
    given = [9, 8, 7]
    out = impl.PrefixCacheManager()._normalize(given)
    return out is given, given


@STAGE.check("s01.normalize", hidden=True, hint="An empty sequence is a valid (empty) list.")
def empty_is_fine(impl):
    return impl.PrefixCacheManager()._normalize([])


# -- TODO 2 -------------------------------------------------------------------------------------
@STAGE.check("s01.add_prefix", hidden=True, hint="A list and a tuple with the same tokens are the same prefix.")
def list_and_tuple_dedupe(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([1, 2])
    m.add_prefix((1, 2))
    m.add_prefix(x for x in [1, 2])
    return m.cached_prefixes


@STAGE.check("s01.add_prefix", hidden=True, hint="Validate before you store: an empty prefix leaves the list as it was.")
def empty_stores_nothing(impl):
    m = seed_fixture(impl)
    return outcome_and_state(lambda: m.add_prefix([]), m)


@STAGE.check("s01.add_prefix", hidden=True, hint="Store a tuple of the tokens, not the caller's object.")
def stores_tuple_copy(impl):
    m = impl.PrefixCacheManager()
    given = [5, 6, 7]
    m.add_prefix(given)
    given.append(8)
    return m.cached_prefixes


# -- TODO 3 -------------------------------------------------------------------------------------
@STAGE.check("s01.match_prefix", hidden=True, hint="The longest matching prefix wins, whatever the order of registration.")
def longer_added_after_shorter(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([1])
    m.add_prefix([1, 2, 3])
    m.add_prefix([1, 2])
    return m.match_prefix([1, 2, 3, 4])


@STAGE.check("s01.match_prefix", hidden=True, hint="A prefix longer than the prompt cannot match; equal length can.")
def prefix_longer_than_prompt(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([1, 2, 3, 4, 5])
    m.add_prefix([1, 2])
    return m.match_prefix([1, 2]), m.match_prefix([1]), m.match_prefix([])


@STAGE.check("s01.match_prefix", hidden=True, hint="Compare all tokens of the prefix with the start of the prompt.")
def random_prompts(impl):
    results = []
    for prefixes, prompt in _random_cases(11):
        m = impl.PrefixCacheManager()
        for p in prefixes:
            m.add_prefix(p)
        results.append(m.match_prefix(prompt))
    return results


@STAGE.check("s01.match_prefix", hidden=True, hint="Accept a tuple prompt like a list one; don't change the input.")
def tuple_prompt(impl):
    m = seed_fixture(impl)
    prompt = [1, 2, 9, 9]
    return m.match_prefix(tuple(prompt)), m.match_prefix(prompt), prompt


# -- TODO 4 -------------------------------------------------------------------------------------
@STAGE.check("s01.split_prompt", hidden=True, hint="Both parts are lists, whatever container came in.")
def tuple_input_gives_lists(impl):
    return seed_fixture(impl).split_prompt((1, 2, 9, 4, 4))


@STAGE.check("s01.split_prompt", hidden=True, hint="prefix + suffix must give back the prompt, and the hit is len(prefix).")
def random_splits(impl):
    results = []
    for prefixes, prompt in _random_cases(12):
        m = impl.PrefixCacheManager()
        for p in prefixes:
            m.add_prefix(p)
        results.append(m.split_prompt(prompt))
    return results


# -- TODO 5 -------------------------------------------------------------------------------------
@STAGE.check("s01.cache_stats", hidden=True, hint="Round the ratio to 4 decimals with round(x, 4).")
def ratio_needs_rounding(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([1])
    m.add_prefix([4, 4])
    return m.cache_stats([1, 2, 3]), m.cache_stats([4, 4, 5]), m.cache_stats([1])


@STAGE.check("s01.cache_stats", hidden=True, hint="hit + uncached must equal the prompt length, on every prompt.")
def random_ledgers(impl):
    results = []
    for prefixes, prompt in _random_cases(13):
        m = impl.PrefixCacheManager()
        for p in prefixes:
            m.add_prefix(p)
        results.append(m.cache_stats(prompt))
    return results

"""Stage 1 spec and public checks: longest-prefix match (the seed exercise's contract)."""
from __future__ import annotations

from autograder.checks.common import raised
from autograder.spec import Stage, Todo

STAGE = Stage(
    id="s01",
    title="Prefix cache matching and reuse",
    subtitle="Prefix Cache 匹配与复用",
    summary="longest-prefix match: normalize, register, match, split, the reuse ledger",
    todos=[
        Todo("s01.normalize", 1, target="PrefixCacheManager._normalize", points=2,
             title="normalize a token sequence"),
        Todo("s01.add_prefix", 2, target="PrefixCacheManager.add_prefix", points=2,
             title="register a shared prefix"),
        Todo("s01.match_prefix", 3, target="PrefixCacheManager.match_prefix", points=3,
             title="longest prefix match"),
        Todo("s01.split_prompt", 4, target="PrefixCacheManager.split_prompt", points=2,
             title="split a prompt into reusable prefix and suffix"),
        Todo("s01.cache_stats", 5, target="PrefixCacheManager.cache_stats", points=2,
             title="the reuse ledger"),
    ],
    time_limit_s=5,  # the reference needs ~0.1 s per TODO; an endless loop costs 5 s
    memory_limit_mb=512,
)


def seed_fixture(impl):
    """The seed exercise's fixture: [1,2,3], [1,2,9], then [1,2,3] again."""
    m = impl.PrefixCacheManager()
    m.add_prefix([1, 2, 3])
    m.add_prefix([1, 2, 9])
    m.add_prefix([1, 2, 3])
    return m


def outcome_and_state(action, m):
    """Run ``action``; return (exception type name or None, cached_prefixes afterwards)."""
    return raised(action), m.cached_prefixes


# -- TODO 1: _normalize -------------------------------------------------------------------------
@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize([3, 1, 2])",
             hint="Keep the order: the result is list(tokens), not sorted.")
def keeps_order(impl):
    return impl.PrefixCacheManager()._normalize([3, 1, 2])


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize((5, 6))",
             hint="Return a list even when a tuple comes in.")
def tuple_becomes_list(impl):
    return impl.PrefixCacheManager()._normalize((5, 6))


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize([1, 'bad'])",
             hint="Raise TypeError as soon as one token is not an int.")
def rejects_string_token(impl):
    return impl.PrefixCacheManager()._normalize([1, "bad"])


# -- TODO 2: add_prefix -------------------------------------------------------------------------
@STAGE.check("s01.add_prefix", call="add_prefix([1,2,3]); add_prefix([1,2,9]); add_prefix([1,2,3]); cached_prefixes",
             hint="Store each prefix once, as a tuple, in the order first added.")
def seed_registration(impl):
    return seed_fixture(impl).cached_prefixes


@STAGE.check("s01.add_prefix", call="add_prefix([])",
             hint="An empty prefix cannot be reused: raise ValueError.")
def rejects_empty(impl):
    return impl.PrefixCacheManager().add_prefix([])


@STAGE.check("s01.add_prefix", call="add_prefix([1, 'bad']); cached_prefixes",
             hint="Normalize first: a bad token raises TypeError and nothing is stored.")
def bad_token_stores_nothing(impl):
    m = impl.PrefixCacheManager()
    return outcome_and_state(lambda: m.add_prefix([1, "bad"]), m)


# -- TODO 3: match_prefix -----------------------------------------------------------------------
@STAGE.check("s01.match_prefix", call="seed fixture; match_prefix([1, 2, 3, 9])",
             hint="[1,2,3] is the beginning of the prompt, so 3 tokens hit.")
def seed_match_3(impl):
    return seed_fixture(impl).match_prefix([1, 2, 3, 9])


@STAGE.check("s01.match_prefix", call="seed fixture; match_prefix([1, 2, 9, 8])",
             hint="Check every registered prefix, not only the first one.")
def seed_match_other_prefix(impl):
    return seed_fixture(impl).match_prefix([1, 2, 9, 8])


@STAGE.check("s01.match_prefix", call="seed fixture; match_prefix([1, 2, 0])",
             hint="A prefix matches only when all of its tokens equal the prompt's first tokens.")
def seed_no_match(impl):
    return seed_fixture(impl).match_prefix([1, 2, 0])


@STAGE.check("s01.match_prefix", call="add_prefix([2, 3]); match_prefix([1, 2, 3])",
             hint="Equal tokens in the middle of the prompt do not count: compare with prompt[:len(prefix)].")
def middle_does_not_count(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([2, 3])
    return m.match_prefix([1, 2, 3])


# -- TODO 4: split_prompt -----------------------------------------------------------------------
@STAGE.check("s01.split_prompt", call="seed fixture; split_prompt([1, 2, 3, 9])",
             hint="(prompt[:hit], prompt[hit:], hit)")
def seed_split(impl):
    return seed_fixture(impl).split_prompt([1, 2, 3, 9])


@STAGE.check("s01.split_prompt", call="seed fixture; split_prompt([7, 8])",
             hint="With no hit, the prefix is empty and the suffix is the whole prompt.")
def split_without_hit(impl):
    return seed_fixture(impl).split_prompt([7, 8])


@STAGE.check("s01.split_prompt", call="seed fixture; split_prompt([1, 2, 3])",
             hint="A fully cached prompt leaves an empty suffix.")
def split_full_hit(impl):
    return seed_fixture(impl).split_prompt([1, 2, 3])


# -- TODO 5: cache_stats ------------------------------------------------------------------------
@STAGE.check("s01.cache_stats", call="seed fixture; cache_stats([1, 2, 3, 9])",
             hint="3 of 4 tokens hit: ratio 0.75.")
def seed_stats(impl):
    return seed_fixture(impl).cache_stats([1, 2, 3, 9])


@STAGE.check("s01.cache_stats", call="seed fixture; cache_stats([])",
             hint="An empty prompt has 0 hit, 0 uncached and ratio 0.0 (no division by zero).")
def empty_prompt_stats(impl):
    return seed_fixture(impl).cache_stats([])


@STAGE.check("s01.cache_stats", call="seed fixture; cache_stats([5, 6])",
             hint="No hit: every token is uncached and the ratio is 0.0.")
def no_hit_stats(impl):
    return seed_fixture(impl).cache_stats([5, 6])

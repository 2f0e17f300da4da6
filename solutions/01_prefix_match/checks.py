"""Stage 1 spec and public checks: longest-prefix match (the seed exercise's contract).

What a learner reads of this stage (titles, contracts, hint tiers, check titles and hints, the quiz)
is in ``s01.toml`` beside this module, in English and Chinese; this module keeps the skeleton and the
probes. Contracts state what to set or return and the invariant, never code; hint tiers go from the
idea (1) over the approach (2) to a skeleton with blanks (3).
"""
from __future__ import annotations

from autograder.checks.common import attempt, plain, raised, record
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s01",
    subtitle="前缀缓存的匹配与复用",
    minutes=45,
    todos=[
        Todo("s01.normalize", 1, target="PrefixCacheManager._normalize", points=2),
        Todo("s01.add_prefix", 2, target="PrefixCacheManager.add_prefix", points=2),
        Todo("s01.match_prefix", 3, target="PrefixCacheManager.match_prefix", points=3),
        Todo("s01.split_prompt", 4, target="PrefixCacheManager.split_prompt", points=2),
        Todo("s01.cache_stats", 5, target="PrefixCacheManager.cache_stats", points=2),
    ],
    quiz=Quiz(number=6, points=1, questions=(
        Question("q1"),
        Question("q2"),
        Question("q3"),
        Question("q4"),
        Question("q5", decimals=2),
    )),
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


def outcome_and_state(action, m) -> dict:
    """Run ``action``; the exception it raised (or None) and ``cached_prefixes`` afterwards."""
    return record(raised=raised(action), cached_prefixes=m.cached_prefixes)


def split_record(result) -> dict:
    """``split_prompt``'s triple with its parts named."""
    prefix, suffix, hit = result
    return record(reusable_prefix=prefix, suffix=suffix, hit_len=hit)


def boundary_matches(impl, cases) -> list[dict]:
    """For each (prefix, prompt): a manager holding only ``prefix``, and the hit it reports."""
    out = []
    for prefix, prompt in cases:
        m = impl.PrefixCacheManager()
        m.add_prefix(prefix)
        out.append(record(prefix=prefix, prompt=prompt, hit=m.match_prefix(prompt)))
    return out


# -- TODO 1: _normalize -------------------------------------------------------------------------
@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize([3, 1, 3, 2, 1])", specificity=1)
def keeps_order(impl):
    return impl.PrefixCacheManager()._normalize([3, 1, 3, 2, 1])


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize((5, 6))", specificity=2)
def tuple_becomes_list(impl):
    return impl.PrefixCacheManager()._normalize((5, 6))


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize([1, 'bad'])")
def rejects_string_token(impl):
    return impl.PrefixCacheManager()._normalize([1, "bad"])


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize([4, 5.0, 6])")
def rejects_whole_float(impl):
    return impl.PrefixCacheManager()._normalize([4, 5.0, 6])


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize(t * t for t in (3, 1, 2))", specificity=1)
def generator_read_once(impl):
    return impl.PrefixCacheManager()._normalize(t * t for t in (3, 1, 2))


@STAGE.check("s01.normalize", specificity=1)
def returns_a_new_list(impl):
    given = [7, 7, 5]
    out = impl.PrefixCacheManager()._normalize(given)
    return record(same_object=out is given, returned=out, callers_list_after=given)


@STAGE.check("s01.normalize", call="_normalize([3, 0.0]), _normalize([None]), _normalize(['', 2]), _normalize([0, 5])")
def falsy_tokens_are_checked_too(impl):
    # A falsy token is checked like any other: 0.0, None and '' are no token ids, 0 is one.
    # zh: 假值 token 和别的 token 一样要检查：0.0、None 和 '' 都不是 token id，0 是。
    m = impl.PrefixCacheManager()
    return record(zero_float=attempt(lambda: m._normalize([3, 0.0])), none=attempt(lambda: m._normalize([None])),
                  empty_text=attempt(lambda: m._normalize(["", 2])), zero=attempt(lambda: m._normalize([0, 5])))


@STAGE.check("s01.normalize", call="_normalize([]), _normalize((42,))")
def empty_and_one_token(impl):
    m = impl.PrefixCacheManager()
    return record(empty=attempt(lambda: m._normalize([])), one_token=attempt(lambda: m._normalize((42,))))


# -- TODO 2: add_prefix -------------------------------------------------------------------------
@STAGE.check("s01.add_prefix", call="add_prefix([1,2,3]); add_prefix([1,2,9]); add_prefix([1,2,3]); cached_prefixes")
def seed_registration(impl):
    return seed_fixture(impl).cached_prefixes


@STAGE.check("s01.add_prefix", call="add_prefix([])")
def rejects_empty(impl):
    return impl.PrefixCacheManager().add_prefix([])


@STAGE.check("s01.add_prefix", call="add_prefix([1, 'bad']); cached_prefixes", specificity=1)
def bad_token_stores_nothing(impl):
    m = impl.PrefixCacheManager()
    return outcome_and_state(lambda: m.add_prefix([1, "bad"]), m)


@STAGE.check("s01.add_prefix", specificity=1,
             call="add_prefix([300, 301]); add_prefix((300, 301)); add_prefix(t for t in (300, 301)); "
                  "add_prefix([301]); cached_prefixes")
def same_tokens_any_container(impl):
    m = impl.PrefixCacheManager()
    base = int("300")  # built at run time
    steps = [[base, base + 1], (base, base + 1), (t for t in (base, base + 1)), [base + 1]]
    return record(raised=[raised(lambda s=s: m.add_prefix(s)) for s in steps], cached_prefixes=m.cached_prefixes)


@STAGE.check("s01.add_prefix",
             call="add_prefix(()); add_prefix(range(0)); add_prefix(t for t in []); cached_prefixes")
def empty_in_any_container_is_refused(impl):
    # A generator is truthy even when it yields nothing: only the normalized tokens say "empty".
    # zh: 生成器即使什么都不产出也是真值：只有规范化后的 token 才能说明“空”。
    m = impl.PrefixCacheManager()
    steps = [(), range(0), (t for t in [])]
    return record(raised=[raised(lambda s=s: m.add_prefix(s)) for s in steps], cached_prefixes=m.cached_prefixes)


# -- TODO 3: match_prefix -----------------------------------------------------------------------
@STAGE.check("s01.match_prefix")
def seed_match_3(impl):
    return seed_fixture(impl).match_prefix([1, 2, 3, 9])


@STAGE.check("s01.match_prefix")
def seed_match_other_prefix(impl):
    return seed_fixture(impl).match_prefix([1, 2, 9, 8])


@STAGE.check("s01.match_prefix")
def seed_no_match(impl):
    return seed_fixture(impl).match_prefix([1, 2, 0])


@STAGE.check("s01.match_prefix", call="add_prefix([2, 3]); match_prefix([1, 2, 3])", specificity=1)
def middle_does_not_count(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([2, 3])
    return m.match_prefix([1, 2, 3])


@STAGE.check("s01.match_prefix")
def token_boundaries(impl):
    return boundary_matches(impl, [([1, 2], [1, 23, 4]), ([1, 23], [12, 3, 5]), ([1, 2], [1, 2, 34])])


@STAGE.check("s01.match_prefix", specificity=1)
def whole_prompt_one_token_and_empty(impl):
    m = seed_fixture(impl)
    m.add_prefix([4])
    return record(whole_prompt=m.match_prefix([1, 2, 9]), one_token=m.match_prefix([4]), empty=m.match_prefix([]))


@STAGE.check("s01.match_prefix", specificity=1)
def any_iterable_prompt(impl):
    m = seed_fixture(impl)
    return record(tuple_prompt=attempt(lambda: m.match_prefix((1, 2, 9, 8))),
                  generator_prompt=attempt(lambda: m.match_prefix(t for t in [1, 2, 3, 3])))


@STAGE.check("s01.match_prefix",
             call="vocab = 50_000; add_prefix([vocab + i for i in (7, 1, 7)]); "
                  "match_prefix([vocab + i for i in (7, 1, 7, 2)]), match_prefix([vocab + i for i in (7, 1, 8)])")
def large_ids_built_at_run_time(impl):
    vocab = int("50000")
    m = impl.PrefixCacheManager()
    m.add_prefix([vocab + i for i in (7, 1, 7)])
    return record(equal_ids=m.match_prefix([vocab + i for i in (7, 1, 7, 2)]),
                  last_id_differs=m.match_prefix([vocab + i for i in (7, 1, 8)]))


# -- TODO 4: split_prompt -----------------------------------------------------------------------
@STAGE.check("s01.split_prompt")
def seed_split(impl):
    return split_record(seed_fixture(impl).split_prompt([1, 2, 3, 9]))


@STAGE.check("s01.split_prompt")
def split_without_hit(impl):
    return split_record(seed_fixture(impl).split_prompt([7, 8]))


@STAGE.check("s01.split_prompt")
def split_full_hit(impl):
    return split_record(seed_fixture(impl).split_prompt([1, 2, 3]))


@STAGE.check("s01.split_prompt")
def tuple_or_generator_gives_lists(impl):
    m = seed_fixture(impl)
    return record(from_tuple=attempt(lambda: split_record(m.split_prompt((1, 2, 9, 9, 7)))),
                  from_generator=attempt(lambda: split_record(m.split_prompt(t for t in [1, 2, 3, 3]))))


@STAGE.check("s01.split_prompt")
def empty_and_one_token_prompts(impl):
    m = seed_fixture(impl)
    return record(empty=split_record(m.split_prompt([])), one_token=split_record(m.split_prompt([5])))


# -- TODO 5: cache_stats ------------------------------------------------------------------------
@STAGE.check("s01.cache_stats")
def seed_stats(impl):
    return plain(seed_fixture(impl).cache_stats([1, 2, 3, 9]))


@STAGE.check("s01.cache_stats")
def empty_prompt_stats(impl):
    return plain(seed_fixture(impl).cache_stats([]))


@STAGE.check("s01.cache_stats")
def no_hit_stats(impl):
    return plain(seed_fixture(impl).cache_stats([5, 6]))


@STAGE.check("s01.cache_stats")
def ratio_rounded_to_4_decimals(impl):
    m = seed_fixture(impl)
    return plain([m.cache_stats([1, 2, 3, 5, 5, 5, 5]), m.cache_stats([1, 2, 9] + [8] * 6)])


@STAGE.check("s01.cache_stats")
def full_hit_and_one_token(impl):
    m = seed_fixture(impl)
    return plain([m.cache_stats([1, 2, 3]), m.cache_stats([7])])


@STAGE.check("s01.cache_stats")
def generator_prompt_read_once(impl):
    # A generator can be read once, and TODO 1's copy has read it: count on that copy.
    # zh: 生成器只能读一遍，TODO 1 的复制已经把它读完了：后面要用那份复制来数。
    m = seed_fixture(impl)
    return plain([m.cache_stats(t for t in [1, 2, 3, 9]), m.cache_stats((1, 2, 3, 9)), m.cache_stats(range(1, 4))])


@STAGE.check("s01.cache_stats", call="cache_stats(t for t in []), cache_stats(iter(())), cache_stats(range(0))")
def empty_iterator_prompt(impl):
    # An empty generator is truthy: only the normalized prompt says whether there is a token to divide by.
    # zh: 空生成器也是真值：有没有 token 可以做除数，只能看规范化后的提示词。
    m = seed_fixture(impl)
    return plain(record(generator=attempt(lambda: m.cache_stats(t for t in [])),
                        iterator=attempt(lambda: m.cache_stats(iter(()))), range=attempt(lambda: m.cache_stats(range(0)))))

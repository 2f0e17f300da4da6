"""Hidden checks of stage 1: edge cases beyond the seed's examples. Never shipped to learners."""
from __future__ import annotations

import random

from autograder.checks.common import plain, record
from autograder.checks.s01 import STAGE, boundary_matches, outcome_and_state, seed_fixture, split_record
from autograder.i18n import L

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
@STAGE.check("s01.normalize", hidden=True, sibling="generator_read_once",
             hint=L("Any iterable of ints can come in, a generator too.",
                    "传进来的可以是任何 int 的可迭代对象，生成器也可以。"))
def generator_input(impl):
    return impl.PrefixCacheManager()._normalize(t for t in (4, 5, 6))


@STAGE.check("s01.normalize", hidden=True, sibling="rejects_whole_float",
             hint=L("A float is not a token id, even 1.0 or 2.0.",
                    "浮点数不是 token id，1.0、2.0 也不是。"))
def rejects_float(impl):
    return impl.PrefixCacheManager()._normalize([1, 2.0])


@STAGE.check("s01.normalize", hidden=True, sibling="returns_a_new_list",
             hint=L("Return a new list; never return or change the caller's own list.",
                    "返回一个新列表；不能把调用者自己的列表返回，也不能修改它。"))
def returns_a_copy(impl):
    given = [9, 8, 7]
    out = impl.PrefixCacheManager()._normalize(given)
    return record(returned_the_callers_list=out is given, callers_list_after=given)


@STAGE.check("s01.normalize", hidden=True, sibling="empty_and_one_token",
             hint=L("An empty sequence is valid: it gives an empty list.",
                    "空序列是合法的：结果是空列表。"))
def empty_is_fine(impl):
    return impl.PrefixCacheManager()._normalize([])


# -- TODO 2 -------------------------------------------------------------------------------------
@STAGE.check("s01.add_prefix", hidden=True, sibling="same_tokens_any_container",
             hint=L("A list, a tuple and a generator with the same tokens are one prefix.",
                    "装着相同 token 的 list、tuple 和生成器是同一个前缀。"))
def list_and_tuple_dedupe(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([1, 2])
    m.add_prefix((1, 2))
    m.add_prefix(x for x in [1, 2])
    return m.cached_prefixes


@STAGE.check("s01.add_prefix", hidden=True, sibling="bad_token_stores_nothing",
             hint=L("Validate before you store: an empty prefix leaves the index as it was.",
                    "先校验再存储：空前缀不能改变索引。"))
def empty_stores_nothing(impl):
    m = seed_fixture(impl)
    return outcome_and_state(lambda: m.add_prefix([]), m)


@STAGE.check("s01.add_prefix", hidden=True, sibling="seed_registration",
             hint=L("Store a tuple of the tokens, not the caller's object: changing it "
                    "later must not change the index.",
                    "存 token 组成的 tuple，而不是调用者的对象：之后修改那个对象不能影响索引。"))
def stores_tuple_copy(impl):
    m = impl.PrefixCacheManager()
    given = [5, 6, 7]
    m.add_prefix(given)
    given.append(8)
    return m.cached_prefixes


# -- TODO 3 -------------------------------------------------------------------------------------
@STAGE.check("s01.match_prefix", hidden=True, sibling="seed_match_3",
             hint=L("The longest matching prefix wins, whatever the order of registration.",
                    "最长的匹配前缀胜出，和登记顺序无关。"))
def longer_added_after_shorter(impl):
    m = _manager(impl, ([1], [1, 2, 3], [1, 2]))
    return m.match_prefix([1, 2, 3, 4])


@STAGE.check("s01.match_prefix", hidden=True, sibling="whole_prompt_one_token_and_empty",
             hint=L("A prefix longer than the prompt cannot match; one of equal length can.",
                    "比提示词还长的前缀不可能匹配；一样长的可以。"))
def prefix_longer_than_prompt(impl):
    m = _manager(impl, ([1, 2, 3, 4, 5], [1, 2]))
    return record(prompt_1_2=m.match_prefix([1, 2]), prompt_1=m.match_prefix([1]), empty_prompt=m.match_prefix([]))


@STAGE.check("s01.match_prefix", hidden=True, sibling="seed_no_match",
             hint=L("Compare every token of the prefix with the start of the prompt.",
                    "把前缀的每个 token 都和提示词开头逐个比较。"))
def random_prompts(impl):
    return [_manager(impl, prefixes).match_prefix(prompt) for prefixes, prompt in _random_cases(11)]


@STAGE.check("s01.match_prefix", hidden=True, sibling="any_iterable_prompt",
             hint=L("Accept a tuple prompt like a list one, and don't change the input.",
                    "tuple 形式的提示词要和 list 一样处理，而且不能修改输入。"))
def tuple_prompt(impl):
    m = seed_fixture(impl)
    prompt = [1, 2, 9, 9]
    return record(tuple_prompt=m.match_prefix(tuple(prompt)), list_prompt=m.match_prefix(prompt), prompt_after=prompt)


@STAGE.check("s01.match_prefix", hidden=True, sibling="token_boundaries",
             hint=L("Token ids whose digits run into each other (1, 23 against 12, 3 or 123): compare ids, never text.",
                    "数字会连在一起的 token id（1, 23 对比 12, 3 或 123）：比较 id，绝不比较文本。"))
def multi_digit_token_boundaries(impl):
    cases = [([1, 2], [1, 23]), ([12], [1, 2, 3]), ([1, 23], [123]), ([11, 1], [1, 11, 5]), ([1, 2, 3], [12, 3, 4]),
             ([2], [23, 2]), ([1], [11])]
    return boundary_matches(impl, cases)


@STAGE.check("s01.match_prefix", hidden=True, sibling="token_boundaries",
             hint=L("Random prompts over multi-digit token ids: a match is id for id from position 0.",
                    "随机生成、含多位数 token id 的提示词：匹配必须从第 0 个位置起逐个 id 相等。"))
def random_multi_digit_prompts(impl):
    return [_manager(impl, prefixes).match_prefix(prompt)
            for prefixes, prompt in _random_cases(14, vocab=MULTI_DIGIT)]


# -- TODO 4 -------------------------------------------------------------------------------------
@STAGE.check("s01.split_prompt", hidden=True, sibling="tuple_or_generator_gives_lists",
             hint=L("Both parts are lists, whatever container came in.",
                    "不管传进来的是什么容器，两部分都是 list。"))
def tuple_input_gives_lists(impl):
    return split_record(seed_fixture(impl).split_prompt((1, 2, 9, 4, 4)))


@STAGE.check("s01.split_prompt", hidden=True, sibling="seed_split",
             hint=L("The prefix and the suffix together give back the prompt, and the hit is the prefix's length.",
                    "前缀和后缀拼起来就是原提示词，命中长度就是前缀的长度。"))
def random_splits(impl):
    return [split_record(_manager(impl, prefixes).split_prompt(prompt)) for prefixes, prompt in _random_cases(12)]


@STAGE.check("s01.split_prompt", hidden=True, sibling="seed_split",
             hint=L("Cut at the hit, counted in tokens (never in characters of the prompt written as text).",
                    "在命中长度处切开，单位是 token（而不是提示词写成文本后的字符）。"))
def multi_digit_splits(impl):
    return [split_record(_manager(impl, prefixes).split_prompt(prompt))
            for prefixes, prompt in _random_cases(15, n=60, vocab=MULTI_DIGIT)]


# -- TODO 5 -------------------------------------------------------------------------------------
@STAGE.check("s01.cache_stats", hidden=True, sibling="ratio_rounded_to_4_decimals",
             hint=L("Round the ratio to 4 decimals.", "复用率保留 4 位小数。"))
def ratio_needs_rounding(impl):
    m = _manager(impl, ([1], [4, 4]))
    return plain([m.cache_stats([1, 2, 3]), m.cache_stats([4, 4, 5]), m.cache_stats([1])])


@STAGE.check("s01.cache_stats", hidden=True, sibling="seed_stats",
             hint=L("Hit plus uncached tokens must equal the prompt length, on every prompt.",
                    "在每个提示词上，命中数加未命中数都必须等于提示词长度。"))
def random_ledgers(impl):
    return plain([_manager(impl, prefixes).cache_stats(prompt) for prefixes, prompt in _random_cases(13)])


@STAGE.check("s01.cache_stats", hidden=True, sibling="seed_stats",
             hint=L("Count tokens, not characters: a prompt of multi-digit ids has as many tokens as ids.",
                    "数的是 token，不是字符：由多位数 id 组成的提示词，有几个 id 就有几个 token。"))
def multi_digit_ledgers(impl):
    return plain([_manager(impl, prefixes).cache_stats(prompt)
                  for prefixes, prompt in _random_cases(16, n=60, vocab=MULTI_DIGIT)])

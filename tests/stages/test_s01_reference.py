"""The stage-1 reference against the seed's contract and a brute-force model (Hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions.s01_prefix_match import PrefixCacheManager

tokens = st.lists(st.integers(0, 3), max_size=8)


def seeded() -> PrefixCacheManager:
    m = PrefixCacheManager()
    for p in ([1, 2, 3], [1, 2, 9], [1, 2, 3]):
        m.add_prefix(p)
    return m


def test_s01_seed_examples_hold():
    m = seeded()
    assert m.cached_prefixes == [(1, 2, 3), (1, 2, 9)]
    assert m.match_prefix([1, 2, 3, 9]) == 3
    assert m.match_prefix([1, 2, 9, 8]) == 3
    assert m.match_prefix([1, 2, 0]) == 0
    assert m.split_prompt([1, 2, 3, 9]) == ([1, 2, 3], [9], 3)
    assert m.cache_stats([1, 2, 3, 9]) == {"hit_tokens": 3, "uncached_tokens": 1, "reuse_ratio": 0.75}
    assert m.cache_stats([]) == {"hit_tokens": 0, "uncached_tokens": 0, "reuse_ratio": 0.0}


@pytest.mark.parametrize("bad", [[], [1, "bad"], [1.0]])
def test_s01_add_prefix_rejects_bad_input_without_change(bad):
    m = seeded()
    with pytest.raises((ValueError, TypeError)):
        m.add_prefix(bad)
    assert m.cached_prefixes == [(1, 2, 3), (1, 2, 9)]


@settings(max_examples=200, deadline=None)
@given(prefixes=st.lists(tokens.filter(bool), max_size=5), prompt=tokens)
def test_s01_match_prefix_equals_brute_force(prefixes, prompt):
    m = PrefixCacheManager()
    for p in prefixes:
        m.add_prefix(p)
    brute = max((len(p) for p in prefixes if prompt[: len(p)] == p), default=0)
    assert m.match_prefix(prompt) == brute
    pre, suf, hit = m.split_prompt(prompt)
    assert pre + suf == prompt and hit == len(pre) == brute
    stats = m.cache_stats(prompt)
    assert stats["hit_tokens"] + stats["uncached_tokens"] == len(prompt)
    assert stats["reuse_ratio"] == (round(brute / len(prompt), 4) if prompt else 0.0)
    assert len(set(m.cached_prefixes)) == len(m.cached_prefixes)


@pytest.mark.parametrize("prefix, prompt", [([1, 2], [1, 23, 4]), ([1, 23], [12, 3, 5]), ([12], [1, 2, 3]),
                                            ([1, 2, 3], [123]), ([1], [11])])
def test_s01_match_prefix_compares_token_ids_not_text(prefix, prompt):
    m = PrefixCacheManager()
    m.add_prefix(prefix)
    assert m.match_prefix(prompt) == 0
    assert m.cache_stats(prompt)["hit_tokens"] == 0


@settings(max_examples=200, deadline=None)
@given(prefixes=st.lists(st.lists(st.sampled_from([1, 2, 3, 12, 23, 123]), min_size=1, max_size=4), max_size=4),
       prompt=st.lists(st.sampled_from([1, 2, 3, 12, 23, 123]), max_size=6))
def test_s01_match_prefix_multi_digit_ids_equal_brute_force(prefixes, prompt):
    m = PrefixCacheManager()
    for p in prefixes:
        m.add_prefix(p)
    assert m.match_prefix(prompt) == max((len(p) for p in prefixes if prompt[: len(p)] == p), default=0)


def test_s01_quiz_answers_are_valid_for_their_questions():
    from autograder.core.quiz import canonical
    from autograder.core.spec import load_stage
    from solutions.s01_prefix_match import quiz

    answers = quiz()
    for q in load_stage("s01", hidden=False).quiz.questions:
        assert canonical(q, answers[q.id]), q.id
    assert round(128 / (4096 + 128), 2) == answers["q5"]

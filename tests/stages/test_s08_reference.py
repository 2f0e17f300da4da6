"""The stage-8 reference against brute-force models (Hypothesis) and its documented contracts.

Grading (reference full marks, stub "not implemented", each wrong answer failing its own TODO only) is
covered for every stage by ``tests/course/test_stages.py`` and ``tests/course/test_mutants.py``; the given experiment
modules by ``tests/stages/test_s08_experiments.py``.
"""
from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from autograder.core.quiz import canonical
from autograder.core.spec import load_stage
from solutions.s02_block_hash import chain_keys
from solutions.s03_block_pool import BlockPool
from solutions.s08_cache_attacks import TENANT_KIND, accuracy, birthday_search, detect_sharing, fit_threshold, quiz, tenant_extra_keys
from workbook.weak_keys import expected_birthday_tries, first_block_key, random_blocks

blocks = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=30)


def tiny_key(block) -> bytes:
    return bytes([sum(block) % 3])


# -- TODO 1: birthday_search ------------------------------------------------------------------------
def brute_force_collision(key_of, candidates):
    """The first j whose block differs from the first holder of its key: (holder, block j, j + 1)."""
    for j, block in enumerate(candidates):
        holder = next(b for b in candidates[: j + 1] if key_of(b) == key_of(block))
        if holder != block:
            return holder, block, j + 1
    return None


@given(blocks)
@settings(max_examples=300, deadline=None)
def test_s08_birthday_search_matches_brute_force(candidates):
    assert birthday_search(tiny_key, candidates) == brute_force_collision(tiny_key, candidates)


@given(blocks)
@settings(max_examples=100, deadline=None)
def test_s08_birthday_search_takes_nothing_after_the_collision_and_keys_each_candidate_once(candidates):
    calls, taken = [], 0

    def key_of(block):
        calls.append(block)
        return tiny_key(block)

    def stream():
        nonlocal taken
        for block in candidates:
            taken += 1
            yield block

    result = birthday_search(key_of, stream())
    assert taken == (result[2] if result else len(candidates)) == len(calls)
    if result:
        earlier, later, _ = result
        assert earlier != later and tiny_key(earlier) == tiny_key(later)


def test_s08_birthday_search_on_an_endless_stream_follows_the_square_root_law():
    tries = [birthday_search(first_block_key(12), random_blocks(seed, 4))[2] for seed in range(30)]
    assert 0.75 * expected_birthday_tries(12) < sum(tries) / len(tries) < 1.25 * expected_birthday_tries(12)


# -- TODO 2: fit_threshold --------------------------------------------------------------------------
def brute_force_threshold(hit, miss):
    values = sorted(set(hit) | set(miss))
    if len(values) == 1:
        return float(values[0])
    candidates = [(a + b) / 2 for a, b in pairwise(values)]
    errors = [sum(x >= t for x in hit) + sum(x < t for x in miss) for t in candidates]
    return min(t for t, e in zip(candidates, errors, strict=True) if e == min(errors))


samples = st.lists(st.integers(0, 12).map(lambda x: x / 4), min_size=1, max_size=15)


@given(samples, samples)
@settings(max_examples=300, deadline=None)
def test_s08_fit_threshold_matches_brute_force(hit, miss):
    assert fit_threshold(hit, miss) == pytest.approx(brute_force_threshold(hit, miss), abs=1e-12)


@given(samples, samples)
@settings(max_examples=100, deadline=None)
def test_s08_fit_threshold_is_at_least_as_accurate_as_any_threshold_inside_the_samples(hit, miss):
    # a threshold equal to a sample value v (above the smallest) labels like the midpoint below v
    values = sorted(set(hit) | set(miss))
    best = accuracy(fit_threshold(hit, miss), hit, miss)
    assert all(best >= accuracy(t, hit, miss) - 1e-12 for t in values[1:])


def test_s08_fit_threshold_contract_edges():
    assert fit_threshold([2.0, 2.0], [2.0]) == 2.0  # one value only
    assert fit_threshold((3.0,), (1.0,)) == 2.0  # the only candidate, even though it errs everywhere
    for hit, miss in (([], [1.0]), ([1.0], [])):
        with pytest.raises(ValueError):
            fit_threshold(hit, miss)


# -- TODO 3: detect_sharing -------------------------------------------------------------------------
def one_sided_d(hit, miss):
    """max over x of F_hit(x) - F_miss(x), by hand."""
    cdf = lambda xs, x: sum(v <= x for v in xs) / len(xs)  # noqa: E731
    return max(max(cdf(hit, x) - cdf(miss, x) for x in set(hit) | set(miss)), 0.0)


@given(st.lists(st.integers(0, 20), min_size=1, max_size=20), st.lists(st.integers(0, 20), min_size=1, max_size=20),
       st.sampled_from([1e-3, 0.05, 0.5]))
@settings(max_examples=200, deadline=None)
def test_s08_detect_sharing_is_scipys_one_sided_ks_test(hit, miss, alpha):
    statistic, p_value, detected = detect_sharing(hit, miss, alpha)
    assert statistic == pytest.approx(one_sided_d(hit, miss), abs=1e-12)
    assert p_value == pytest.approx(stats.ks_2samp(hit, miss, alternative="greater").pvalue, abs=1e-12)
    assert detected == (p_value < alpha)


def test_s08_detect_sharing_only_flags_faster_hits():
    fast, slow = [1.0 + i / 100 for i in range(30)], [2.0 + i / 100 for i in range(30)]
    assert detect_sharing(fast, slow)[2] is True
    assert detect_sharing(slow, fast) == (0.0, 1.0, False)
    for alpha in (0.0, 1.0, -1.0):
        with pytest.raises(ValueError):
            detect_sharing(fast, slow, alpha)
    with pytest.raises(ValueError):
        detect_sharing([], slow)


# -- TODO 4: tenant_extra_keys ----------------------------------------------------------------------
tenants = st.text(alphabet="abxy-", min_size=1, max_size=4)
extras = st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(["lora", "salt"]), st.text("ab", min_size=1, max_size=2)),
                                       max_size=2))


@given(tenants, tenants, extras)
@settings(max_examples=200, deadline=None)
def test_s08_tenant_extra_keys_isolates_tenants_and_keeps_each_tenants_keys(a, b, extra):
    prompt = list(range(9))
    before = None if extra is None else list(extra)
    keys_a = chain_keys(prompt, 4, tenant_extra_keys(a, extra))
    assert keys_a == chain_keys(prompt, 4, tenant_extra_keys(a, extra))
    assert (keys_a == chain_keys(prompt, 4, tenant_extra_keys(b, extra))) == (a == b)
    assert extra == before
    result = tenant_extra_keys(a, extra)
    assert result is not extra and sorted(result) == sorted([*(extra or []), (TENANT_KIND, a)])


def test_s08_tenant_extra_keys_refuses_what_would_cross_tenants():
    with pytest.raises(ValueError):
        tenant_extra_keys("")
    with pytest.raises(ValueError):
        tenant_extra_keys("mallory", [(TENANT_KIND, "alice")])
    with pytest.raises(TypeError):
        tenant_extra_keys(7)  # type: ignore[arg-type]


def test_s08_salted_pool_shares_within_a_tenant_only():
    pool, prompt, hits = BlockPool(32, 4), list(range(17)), []
    for i, (tenant, extra) in enumerate([("alice", None), ("bob", None), ("alice", None), ("alice", [("lora", "x")])]):
        hits.append(pool.admit(f"r{i}", prompt, tenant_extra_keys(tenant, extra)).hit_tokens)
        pool.commit(f"r{i}")
        pool.release(f"r{i}")
    assert hits == [0, 0, 16, 0]


# -- quiz -------------------------------------------------------------------------------------------
def test_s08_quiz_answers_every_question_validly():
    stage = load_stage("s08", hidden=False)
    answers = quiz()
    assert set(answers) == {q.id for q in stage.quiz.questions}
    assert all(canonical(q, answers[q.id]) for q in stage.quiz.questions)


def test_s08_quiz_numbers_agree_with_the_stage():
    answers = quiz()
    letters = "ABCD"
    choices = {"20": 0, "1300": 1, "500000": 2, "1000000": 3}
    nearest = min(choices, key=lambda c: abs(int(c) - expected_birthday_tries(20)))
    assert answers["q1"] == letters[choices[nearest]]
    assert answers["q2"] == 4 and answers["q3"] == 0.5

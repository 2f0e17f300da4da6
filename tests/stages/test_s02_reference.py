"""Unit and property tests of stage 2's reference module (chained block hashing)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions.s02_block_hash import (
    ROOT_SEED,
    chain_keys,
    encode_tokens,
    frame,
    hash_block,
    longest_cached_run,
    lookup,
    normalize_extra_keys,
    split_blocks,
)

ROOT = Path(__file__).resolve().parents[2]
tokens_st = st.lists(st.integers(0, 5), max_size=40)
block_size_st = st.integers(1, 6)
extra_st = st.one_of(
    st.none(),
    st.lists(st.tuples(st.sampled_from(["salt", "lora"]), st.sampled_from(["", "X", "Y"])), max_size=3),
)
FAST = settings(max_examples=150, deadline=None)


def france_spain() -> tuple[list[int], list[int]]:
    a = list("The capital of France is Paris. What is 2+2?".encode())
    b = list("The capital of Spain is Paris. What is 2+2?".encode())
    return a, b


# -- split_blocks ---------------------------------------------------------------------------------
def test_s02_split_blocks_drops_partial_tail():
    assert split_blocks([1, 2, 3, 4, 5], 2) == [(1, 2), (3, 4)]


def test_s02_split_blocks_exact_multiple_and_short_prompt():
    assert split_blocks([1, 2, 3, 4], 2) == [(1, 2), (3, 4)]
    assert split_blocks([1, 2, 3], 4) == []
    assert split_blocks([], 4) == []


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, None])
def test_s02_split_blocks_rejects_bad_block_size(bad):
    with pytest.raises(ValueError):
        split_blocks([1, 2, 3], bad)


@FAST
@given(tokens_st, block_size_st)
def test_s02_split_blocks_property_full_blocks_in_order(tokens, bs):
    blocks = split_blocks(tokens, bs)
    assert len(blocks) == len(tokens) // bs
    assert all(isinstance(b, tuple) and len(b) == bs for b in blocks)
    assert [t for b in blocks for t in b] == tokens[: len(blocks) * bs]


# -- hash_block -----------------------------------------------------------------------------------
def test_s02_hash_block_matches_documented_encoding():
    parent = hashlib.sha256(b"p").digest()
    got = hash_block(parent, [1, 2, 3], [("salt", "abc")])
    data = frame(parent) + frame(encode_tokens([1, 2, 3])) + frame(b"salt") + frame(b"abc")
    assert got == hashlib.sha256(data).digest()
    assert len(got) == 32 and isinstance(got, bytes)


def test_s02_hash_block_root_seed_stands_in_for_missing_parent():
    assert hash_block(None, [1, 2]) == hash_block(ROOT_SEED, [1, 2])
    assert hash_block(None, [1, 2], root_seed=b"other") != hash_block(None, [1, 2])


def test_s02_hash_block_parent_changes_key():
    p1, p2 = hashlib.sha256(b"1").digest(), hashlib.sha256(b"2").digest()
    assert hash_block(p1, [7, 7]) != hash_block(p2, [7, 7])
    assert hash_block(p1, [7, 7]) != hash_block(None, [7, 7])


def test_s02_hash_block_token_order_and_length_matter():
    assert hash_block(None, [1, 2]) != hash_block(None, [2, 1])
    assert hash_block(None, [1, 2]) != hash_block(None, [1, 2, 0])


def test_s02_hash_block_encoding_is_unambiguous():
    # without framing, token 0x0201 and tokens (1, 2) or a parent/tokens boundary shift could collide
    assert hash_block(None, [258]) != hash_block(None, [2, 1])
    assert hash_block(None, [1], [("salt", "ab")]) != hash_block(None, [1], [("salta", "b")])


def test_s02_hash_block_extra_keys_are_tagged_by_kind():
    salt = hash_block(None, [1, 2], [("salt", "X")])
    lora = hash_block(None, [1, 2], [("lora", "X")])
    assert salt != lora != hash_block(None, [1, 2])


def test_s02_hash_block_empty_salt_is_no_salt():
    assert hash_block(None, [1, 2], [("salt", "")]) == hash_block(None, [1, 2])
    assert hash_block(None, [1, 2], []) == hash_block(None, [1, 2], None)


def test_s02_hash_block_extra_key_order_does_not_matter():
    a = hash_block(None, [1], [("salt", "s"), ("lora", "l")])
    b = hash_block(None, [1], [("lora", "l"), ("salt", "s")])
    assert a == b


@pytest.mark.parametrize("tokens, exc", [([-1], ValueError), ([2**32], ValueError), ([1.0], TypeError),
                                         (["a"], TypeError)])
def test_s02_hash_block_rejects_bad_tokens(tokens, exc):
    with pytest.raises(exc):
        hash_block(None, tokens)


@pytest.mark.parametrize("extra", ["salt", [("salt",)], [("salt", 1)], [("", "x")], [["salt", "x"]]])
def test_s02_hash_block_rejects_bad_extra_keys(extra):
    with pytest.raises((TypeError, ValueError)):
        hash_block(None, [1], extra)


def test_s02_hash_block_rejects_non_bytes_parent_and_seed():
    with pytest.raises(TypeError):
        hash_block("abc", [1])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        hash_block(None, [1], root_seed=b"")


def test_s02_hash_block_same_in_every_process():
    """Keys must survive a restart: run the hash in children with different PYTHONHASHSEED."""
    code = ("import sys; sys.path.insert(0, %r); from solutions.s02_block_hash import chain_keys; "
            "print(chain_keys([1, 2, 3, 4, 5], 2, [('salt', 's')])[-1].hex(), hash('abc'))") % str(ROOT)
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                   check=True).stdout.split())
    assert outs[0][0] == outs[1][0] == chain_keys([1, 2, 3, 4, 5], 2, [("salt", "s")])[-1].hex()
    assert outs[0][1] != outs[1][1]  # ... while Python's own hash() of a str does change


def test_s02_normalize_extra_keys_sorts_and_drops_empty():
    assert normalize_extra_keys([("salt", "b"), ("lora", ""), ("lora", "a")]) == (("lora", "a"), ("salt", "b"))
    assert normalize_extra_keys(None) == ()


# -- chain_keys -----------------------------------------------------------------------------------
def test_s02_chain_keys_france_spain_last_block_same_tokens_different_key():
    a, b = france_spain()
    # "France" is one byte longer than "Spain": only 1-token blocks line the two tails up.
    bs = 1
    ka, kb = chain_keys(a, bs), chain_keys(b, bs)
    shared_tail = len(" is Paris. What is 2+2?")
    assert split_blocks(a, bs)[-shared_tail:] == split_blocks(b, bs)[-shared_tail:]
    assert all(x != y for x, y in zip(ka[-shared_tail:], kb[-shared_tail:], strict=True))
    # the per-block hash (no parent) would call those blocks equal
    assert hash_block(None, a[-1:]) == hash_block(None, b[-1:])


def test_s02_chain_keys_one_token_in_block_0_changes_every_key():
    tokens = list(range(20))
    changed = [99] + tokens[1:]
    ka, kb = chain_keys(tokens, 4), chain_keys(changed, 4)
    assert all(x != y for x, y in zip(ka, kb, strict=True)) and len(ka) == 5


def test_s02_chain_keys_partial_tail_has_no_key():
    assert len(chain_keys(list(range(10)), 4)) == 2
    assert chain_keys(list(range(8)) + [1], 4) == chain_keys(list(range(8)) + [2], 4)


@FAST
@given(tokens_st, block_size_st, extra_st)
def test_s02_chain_keys_property_is_the_hash_block_chain(tokens, bs, extra):
    keys = chain_keys(tokens, bs, extra)
    parent = None
    expected = []
    for block in split_blocks(tokens, bs):
        parent = hash_block(parent, block, extra)
        expected.append(parent)
    assert keys == expected


def _hash_block_loop(tokens, bs, extra=None, root_seed=ROOT_SEED):
    """The straightforward chain the hint describes: hash_block per full block, on the previous key."""
    keys, parent = [], None
    for block in split_blocks(tokens, bs):
        parent = hash_block(parent, block, extra, root_seed=root_seed)
        keys.append(parent)
    return keys


def _outcome(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the exception's type is the outcome compared
        return type(exc)


@FAST
@given(st.lists(st.integers(0, 2**32 - 1), max_size=70), block_size_st, extra_st, st.binary(min_size=1, max_size=40))
def test_s02_chain_keys_property_bit_identical_to_the_hash_block_loop(tokens, bs, extra, seed):
    # the reference builds hash_block's bytes itself (faster): the keys must not change by one bit
    assert chain_keys(tokens, bs, extra, root_seed=seed) == _hash_block_loop(tokens, bs, extra, seed)
    assert chain_keys(tuple(tokens), bs, extra, root_seed=seed) == _hash_block_loop(tokens, bs, extra, seed)


def test_s02_chain_keys_bit_identical_on_a_long_prompt():
    import random

    rng = random.Random(17)
    tokens = [rng.randrange(32_000) for _ in range(2_112)]
    for bs in (1, 16, 64):
        assert chain_keys(tokens, bs) == _hash_block_loop(tokens, bs)
        assert chain_keys(tokens, bs, [("salt", "t")]) == _hash_block_loop(tokens, bs, [("salt", "t")])


bad_token_st = st.one_of(st.integers(-3, 5), st.integers(2**32 - 2, 2**32 + 2), st.just(1.5), st.just("7"), st.booleans())


@FAST
@given(st.lists(bad_token_st, max_size=14), st.one_of(block_size_st, st.sampled_from([0, -1, True, 2.0])),
       st.one_of(extra_st, st.sampled_from(["salt", [("", "x")], [("salt", 3)], [("salt",)]])),
       st.sampled_from([ROOT_SEED, b"", "seed"]))
def test_s02_chain_keys_property_raises_what_the_hash_block_loop_raises(tokens, bs, extra, seed):
    # same validation, in the same order: bad block size, then (with a full block) the root seed, the
    # extra keys, and the first block with a bad token; the tail and a prompt without a full block are
    # never validated, as hash_block never sees them
    assert _outcome(chain_keys, tokens, bs, extra, root_seed=seed) == _outcome(_hash_block_loop, tokens, bs, extra, seed)


@FAST
@given(tokens_st, tokens_st, block_size_st, extra_st)
def test_s02_chain_keys_property_equal_key_iff_equal_prefix(a, b, bs, extra):
    ka, kb = chain_keys(a, bs, extra), chain_keys(b, bs, extra)
    for i in range(min(len(ka), len(kb))):
        same_prefix = a[: (i + 1) * bs] == b[: (i + 1) * bs]
        assert (ka[i] == kb[i]) == same_prefix


@FAST
@given(tokens_st, block_size_st)
def test_s02_chain_keys_property_salt_separates_tenants(tokens, bs):
    plain = chain_keys(tokens, bs)
    salted = chain_keys(tokens, bs, [("salt", "tenant-a")])
    assert all(x != y for x, y in zip(plain, salted, strict=True))
    assert chain_keys(tokens, bs, [("salt", "")]) == plain


# -- longest_cached_run / lookup -------------------------------------------------------------------
def test_s02_longest_cached_run_stops_at_first_miss():
    table = {b"a": 0, b"c": 2}
    assert longest_cached_run([b"a", b"b", b"c"], table) == 1
    assert longest_cached_run([b"b", b"a"], table) == 0
    assert longest_cached_run([], table) == 0
    assert longest_cached_run([b"a", b"c"], table) == 2


@FAST
@given(st.lists(st.sampled_from([b"a", b"b", b"c", b"d"]), max_size=8),
       st.sets(st.sampled_from([b"a", b"b", b"c", b"d"])))
def test_s02_longest_cached_run_property_brute_force(keys, present):
    table = dict.fromkeys(present, 1)
    n = longest_cached_run(keys, table)
    assert all(k in table for k in keys[:n])
    assert n == len(keys) or keys[n] not in table


def test_s02_lookup_counts_hit_blocks_and_tokens():
    prompt = list(range(10))
    table = dict.fromkeys(chain_keys(prompt[:8], 4))
    assert lookup(prompt, 4, table) == (2, 8)
    assert lookup([9] + prompt[1:], 4, table) == (0, 0)
    assert lookup(prompt, 4, table, [("salt", "s")]) == (0, 0)


# -- the notebook's given code is the reference's --------------------------------------------------


# -- token boundaries, keys remembered between calls, cost of the run count (issue 12) ---------------
def test_s02_hash_block_token_boundaries_give_different_keys():
    keys = [hash_block(None, block) for block in ([1, 23], [12, 3], [123], [1, 2, 3])]
    assert len(set(keys)) == 4
    assert chain_keys([1, 23, 4, 5], 2) != chain_keys([12, 3, 4, 5], 2)


def _fresh_key(parent, block, extra, seed):
    """hash_block's documented bytes, computed here from scratch (no state shared between calls)."""
    data = frame(seed if parent is None else parent) + frame(encode_tokens(block))
    for kind, value in normalize_extra_keys(extra):
        data += frame(kind.encode()) + frame(value.encode())
    return hashlib.sha256(data).digest()


call_st = st.tuples(st.lists(st.integers(0, 1), min_size=1, max_size=2), extra_st,
                    st.sampled_from([ROOT_SEED, b"seed-1", b"seed-2"]), st.booleans())


@FAST
@given(st.lists(call_st, min_size=1, max_size=25))
def test_s02_keys_depend_on_every_input_whatever_came_before(calls):
    parents: list = [None]
    for block, extra, seed, chained in calls:
        parent = parents[-1] if chained else None
        key = hash_block(parent, block, extra, root_seed=seed)
        assert key == _fresh_key(parent, block, extra, seed)
        parents.append(key)
        assert chain_keys(block * 2, len(block), extra, root_seed=seed) == _hash_block_loop(block * 2, len(block), extra, seed)


class _NoScanTable(dict):
    """A table that answers membership tests and refuses to be walked or copied."""

    def _refuse(self, *args, **kwargs):
        raise AssertionError("longest_cached_run must not scan the table")

    __iter__ = keys = values = items = copy = __len__ = _refuse


def test_s02_longest_cached_run_never_scans_the_table():
    table = _NoScanTable({b"a": 0, b"b": 1, b"d": 3})
    assert longest_cached_run([b"a", b"b", b"c", b"d"], table) == 2


def test_s02_quiz_answers_follow_from_the_reference():
    from autograder.core.quiz import canonical
    from autograder.core.spec import load_stage
    from solutions.s02_block_hash import quiz

    answers = quiz()
    assert all(canonical(q, answers[q.id]) for q in load_stage("s02", hidden=False).quiz.questions)
    assert answers["q1"] == len(chain_keys(list(range(1000)), 16))
    a, b = list(range(12)), list(range(12))
    b[5] = 99
    assert [x == y for x, y in zip(chain_keys(a, 4), chain_keys(b, 4), strict=True)] == [True, False, False]  # q2: B
    assert not set(chain_keys(a, 4, [("salt", "A")])) & set(chain_keys(a, 4, [("salt", "B")]))  # q4: C
    keys = chain_keys(list(range(64)), 16)
    assert 16 * longest_cached_run(keys, dict.fromkeys([keys[0], keys[1], keys[3]])) == answers["q5"]

"""Hidden checks of stage 2: edge cases, random cases, memoized keys, token boundaries and the cost of
the run count. Never shipped to learners.
Their titles and hints, in both languages, are in ``hidden.toml`` beside this module."""
from __future__ import annotations

import random

from autograder.checks.common import plain, record, within_budget
from autograder.checks.s02 import FRANCE, SPAIN, STAGE, TENANT_A, byte_tokens, keys_stand_for_the_default_seed

# Token ids whose decimal digits run into each other: 1 then 23 reads like 12 then 3, or 123.
MULTI_DIGIT = (1, 2, 3, 12, 23, 123, 11, 111)
EXTRAS = (None, [("salt", "a")], [("salt", "b")], [("lora", "a")], [("salt", "a"), ("lora", "a")])
SEEDS = (None, b"seed-1", b"seed-2")


def _random_prompts(seed: int, n: int = 40, vocab=(0, 1, 2)):
    """Prompts over a tiny vocabulary, so equal blocks after different prefixes are common."""
    rng = random.Random(seed)
    for _ in range(n):
        yield [rng.choice(vocab) for _ in range(rng.randint(0, 13))], rng.randint(1, 4)


def _options(extra, seed) -> dict:
    """Keyword arguments for one call: the extra keys and, unless None, the root seed."""
    kw: dict = {"extra_keys": extra}
    if seed is not None:
        kw["root_seed"] = seed
    return kw


# -- TODO 1 -------------------------------------------------------------------------------------
@STAGE.check("s02.split_blocks", hidden=True, sibling="any_sequence_left_alone")
def tuple_and_range_input(impl):
    return record(from_tuple=impl.split_blocks((1, 2, 3, 4, 5), 2), from_range=impl.split_blocks(range(7), 3))


@STAGE.check("s02.split_blocks", hidden=True, sibling="exact_multiple")
def random_splits(impl):
    return [impl.split_blocks(tokens, bs) for tokens, bs in _random_prompts(21)]


@STAGE.check("s02.split_blocks", hidden=True, sibling="repeats_size_one_and_empty")
def empty_and_size_one(impl):
    return record(empty_prompt=impl.split_blocks([], 3), size_one=impl.split_blocks([4, 5, 6], 1))


# -- TODO 2 -------------------------------------------------------------------------------------
@STAGE.check("s02.hash_block", hidden=True, sibling="same_tokens_other_extra_keys_in_one_sequence")
def uses_the_given_root_seed(impl):
    return record(seed_B=impl.hash_block(None, [1, 2], root_seed=b"deployment-B"), default=impl.hash_block(None, [1, 2]))


@STAGE.check("s02.hash_block", hidden=True, sibling="order_of_extra_keys_does_not_matter")
def several_extra_keys(impl):
    return [impl.hash_block(None, [9], extra) for extra in
            ([("salt", "s"), ("lora", "l")], [("lora", "l"), ("salt", "s")], [("lora", "sl")], [("lora", "s"), ("salt", "l")])]


@STAGE.check("s02.hash_block", hidden=True, sibling="pairs_of_one_kind_all_count")
def repeated_kinds(impl):
    return [impl.hash_block(None, [2, 4], extra) for extra in
            ([("lora", "a"), ("lora", "b")], [("lora", "b")], [("lora", "a")], [("image", "x"), ("image", "y"), ("image", "z")],
             [("image", "z"), ("image", "y")], [("image", "x"), ("image", "x")])]


@STAGE.check("s02.hash_block", hidden=True, sibling="framing_keeps_kind_and_value_apart")
def framing_keeps_fields_apart(impl):
    return [impl.hash_block(None, [1], [("salt", "ab")]), impl.hash_block(None, [1], [("salta", "b")]),
            impl.hash_block(None, [258]), impl.hash_block(None, [2, 1])]


@STAGE.check("s02.hash_block", hidden=True, sibling="parent_is_digested")
def random_chains(impl):
    out = []
    for tokens, bs in _random_prompts(22, 15):
        parent = None
        for i in range(0, len(tokens) - bs + 1, bs):
            parent = impl.hash_block(parent, tokens[i:i + bs])
        out.append(parent)
    return out


@STAGE.check("s02.hash_block", hidden=True, sibling="token_boundaries")
def multi_digit_token_boundaries(impl):
    out = []
    for tokens, bs in _random_prompts(25, 15, vocab=MULTI_DIGIT):
        parent = None
        for i in range(0, len(tokens) - bs + 1, bs):
            parent = impl.hash_block(parent, tokens[i:i + bs], TENANT_A)
        out.append(parent)
    k = impl.hash_block(None, [7])
    return out + [impl.hash_block(k, [1, 23]), impl.hash_block(k, [12, 3]), impl.hash_block(k, [11, 1]),
                  impl.hash_block(k, [1, 11])]


@STAGE.check("s02.hash_block", hidden=True, sibling="same_tokens_other_extra_keys_in_one_sequence")
def memoized_keys_interleaved(impl):
    t0, t1 = [91, 92], [93, 94]
    k0 = impl.hash_block(None, t0)
    return [k0, impl.hash_block(k0, t1), impl.hash_block(k0, t1, [("salt", "s1")]),
            impl.hash_block(k0, t1, [("lora", "s1")]), impl.hash_block(None, t0, root_seed=b"seed-2"),
            impl.hash_block(None, t0, [("salt", "s1")], root_seed=b"seed-2"), impl.hash_block(k0, t1),
            impl.hash_block(None, t0)]


@STAGE.check("s02.hash_block", hidden=True, sibling="same_tokens_other_extra_keys_in_one_sequence")
def random_calls_with_extra_keys_and_seeds(impl):
    rng = random.Random(26)
    parents: list = [None]
    out = []
    for _ in range(80):
        tokens = [rng.randrange(2) for _ in range(2)]
        key = impl.hash_block(rng.choice(parents), tokens, **_options(rng.choice(EXTRAS), rng.choice(SEEDS)))
        parents.append(key)
        out.append(key)
    return out


# -- TODO 3 -------------------------------------------------------------------------------------
@STAGE.check("s02.chain_keys", hidden=True, sibling="same_prompt_other_salts_in_one_sequence")
def root_seed_is_passed_on(impl):
    return impl.chain_keys([1, 2, 3, 4], 2, root_seed=b"deployment-B")


@STAGE.check("s02.chain_keys", hidden=True, sibling="france_and_spain_differ")
def one_token_changes_every_key(impl):
    a = impl.chain_keys(list(range(16)), 4)
    b = impl.chain_keys([99] + list(range(1, 16)), 4)
    return record(equal_positions=[x == y for x, y in zip(a, b, strict=False)], keys_a=len(a), keys_b=len(b))  # lengths may differ: keys_a/b say


@STAGE.check("s02.chain_keys", hidden=True, sibling="three_blocks")
def random_prompt_chains(impl):
    return [impl.chain_keys(tokens, bs) for tokens, bs in _random_prompts(23)]


@STAGE.check("s02.chain_keys", hidden=True, sibling="no_full_block_no_key")
def no_full_block(impl):
    return record(empty=impl.chain_keys([], 4), shorter_than_a_block=impl.chain_keys(byte_tokens(FRANCE)[:3], 4),
                  with_adapter=impl.chain_keys(byte_tokens(SPAIN), 16, [("lora", "adapter-1")]))


@STAGE.check("s02.chain_keys", hidden=True, sibling="three_blocks")
def multi_digit_prompts(impl):
    return [impl.chain_keys(p, bs) for p, bs in
            (([1, 23, 4, 5], 2), ([12, 3, 4, 5], 2), ([1, 23, 4, 5], 1), ([12, 3, 4, 5], 1), ([123, 4], 1))]


@STAGE.check("s02.chain_keys", hidden=True, sibling="same_prompt_other_salts_in_one_sequence")
def memoized_prefixes_under_other_salts(impl):
    base = list(range(70, 82))  # 3 blocks of 4
    return [impl.chain_keys(base[:8], 4, TENANT_A), impl.chain_keys(base, 4, [("salt", "tenant-b")]),
            impl.chain_keys(base, 4), impl.chain_keys(base[:8], 4, root_seed=b"deployment-B"),
            impl.chain_keys(base, 4, TENANT_A), impl.chain_keys(base[:4], 4, [("lora", "tenant-a")])]


@STAGE.check("s02.chain_keys", hidden=True, sibling="same_prompt_other_salts_in_one_sequence")
def random_calls_with_salts_and_seeds(impl):
    rng = random.Random(27)
    prompts = [[rng.randrange(2) for _ in range(rng.randint(2, 8))] for _ in range(6)]
    return [impl.chain_keys(rng.choice(prompts), 2, **_options(rng.choice(EXTRAS), rng.choice(SEEDS)))
            for _ in range(60)]


# -- TODO 4 -------------------------------------------------------------------------------------
@STAGE.check("s02.chain_keys", hidden=True, sibling="pairs_of_one_kind_count_in_every_block")
def repeated_kinds_in_every_block(impl):
    tokens = list(range(30, 39))
    return [impl.chain_keys(tokens, 3, extra) for extra in
            ([("image", "p"), ("image", "q")], [("image", "r"), ("image", "q")], [("image", "q")],
             [("lora", "a"), ("salt", "s"), ("lora", "b")])]


@STAGE.check("s02.chain_keys", hidden=True, sibling="empty_root_seed_is_not_the_default")
def falsy_root_seeds(impl):
    tokens = list(range(8))
    default = impl.chain_keys(tokens, 2)
    return record(falsy=[keys_stand_for_the_default_seed(impl, seed, tokens, default) for seed in (b"", None, bytes(), bytearray())],
                  zero_byte=impl.chain_keys(tokens, 2, root_seed=b"\x00"))


@STAGE.check("s02.chain_keys", hidden=True, sibling="fresh_list_per_call")
def answers_changed_by_the_caller(impl):
    out = []
    for tokens in ([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], [9, 9]):
        keys = impl.chain_keys(tokens, 2, [("salt", "s")])
        out.append(len(keys))
        if type(keys) is list and keys:
            keys.pop()
    return out


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="stored_value_does_not_matter")
def falsy_values_are_hits(impl):
    table = {b"a": 0, b"b": None, b"c": ""}
    return plain(impl.longest_cached_run([b"a", b"b", b"c", b"d"], table))


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="no_keys_or_empty_table")
def no_keys(impl):
    return plain(record(no_keys=impl.longest_cached_run([], {b"a": 1}), empty_table=impl.longest_cached_run([b"a"], {})))


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="stops_at_first_miss")
def random_tables(impl):
    rng = random.Random(24)
    out = []
    for _ in range(60):
        keys = [bytes([rng.randrange(4)]) for _ in range(rng.randint(0, 6))]
        table = {bytes([k]): k for k in range(4) if rng.random() < 0.6}
        out.append(impl.longest_cached_run(keys, table))
    return plain(out)


@STAGE.check("s02.hash_block", hidden=True, sibling="empty_parent_is_a_parent")
def falsy_parents_are_parents(impl):
    # b'' and a zero byte are parents as given: only None takes the root seed
    parents = [None, bytes(0), bytes(1), b"\x00" * 32]
    keys = [impl.hash_block(p, [3, 1, 4]) for p in parents]
    return record(distinct=len(set(keys)), keys=keys)


@STAGE.check("s02.chain_keys", hidden=True, sibling="callers_tokens_left_alone")
def callers_lists_of_any_length(impl):
    rng = random.Random(41)
    out = []
    for n in (1, 3, 6, 7, 9, 10):
        tokens = [rng.randrange(50) for _ in range(n)]
        before = list(tokens)
        keys = impl.chain_keys(tokens, 3)
        out.append(record(keys=len(keys), left_alone=tokens == before))
    return out


# -- cost guards (TODO 4) ------------------------------------------------------------------------------
# A membership test in a dict costs well under a microsecond, so the reference spends a few milliseconds
# on each probe below. An answer that copies or scans the table on every call (set(table), list(table),
# a walk over its items) pays for all 50k entries each time; one that re-checks the keys it already
# counted (all() over a growing slice, keys.index) pays n^2 / 2 on a run of 8k keys. The budget is ten
# times what the reference needs on a loaded machine, so such a machine cannot fail it, while such
# answers exceed it long before the grader's time limit: the probe then stops and answers "not within
# budget". It is no larger than that margin needs: each wrong answer spends all of it, in every run.
BUDGET_S = 1.0
BIG_TABLE = 50_000    # entries of the table the run count is asked about, thousands of times
SHORT_CALLS = 5_000
LONG_RUN = 8_000      # leading hits of one long prompt, asked about a few times
LONG_CALLS = 20


def _key(i: int) -> bytes:
    return i.to_bytes(8, "little")


def _within_budget(calls) -> dict:
    """Run the calls in order; stop as soon as the budget is spent."""
    calls, results = list(calls), []
    fast = within_budget(lambda i: results.append(calls[i]()), len(calls), BUDGET_S, batch=1)
    return record(within_budget=fast, results=sorted(set(plain(results))) if fast else None)


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="lookups_stay_cheap")
def cost_does_not_grow_with_the_table(impl):
    table = {_key(i): i for i in range(BIG_TABLE)}
    missing = b"missing!"
    runs = [[_key((j * 8 + k) % BIG_TABLE) for k in range(8)] + [missing, _key(j)] for j in range(SHORT_CALLS)]
    return _within_budget(lambda keys=keys: impl.longest_cached_run(keys, table) for keys in runs)


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="lookups_stay_cheap")
def cost_is_linear_in_the_run(impl):
    table = {_key(i): i for i in range(LONG_RUN)}
    keys = list(table) + [b"missing!"]
    return _within_budget(lambda: impl.longest_cached_run(keys, table) for _ in range(LONG_CALLS))

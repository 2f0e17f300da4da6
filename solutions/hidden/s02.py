"""Hidden checks of stage 2: edge cases and random cases. Never shipped to learners."""
from __future__ import annotations

import random

from autograder.checks.s02 import FRANCE, SPAIN, STAGE, byte_tokens


def _random_prompts(seed: int, n: int = 40):
    """Prompts over a tiny vocabulary, so equal blocks after different prefixes are common."""
    rng = random.Random(seed)
    for _ in range(n):
        yield [rng.randrange(3) for _ in range(rng.randint(0, 13))], rng.randint(1, 4)


# -- TODO 1 -------------------------------------------------------------------------------------
@STAGE.check("s02.split_blocks", hidden=True, hint="Any sequence may come in (a tuple, a range); blocks are tuples.")
def tuple_and_range_input(impl):
    return impl.split_blocks((1, 2, 3, 4, 5), 2), impl.split_blocks(range(7), 3)


@STAGE.check("s02.split_blocks", hidden=True, hint="Block i holds tokens[i*B:(i+1)*B]; none overlap, none is short.")
def random_splits(impl):
    return [impl.split_blocks(tokens, bs) for tokens, bs in _random_prompts(21)]


@STAGE.check("s02.split_blocks", hidden=True, hint="An empty prompt has no blocks; block_size 1 makes one block per token.")
def empty_and_size_one(impl):
    return impl.split_blocks([], 3), impl.split_blocks([4, 5, 6], 1)


# -- TODO 2 -------------------------------------------------------------------------------------
@STAGE.check("s02.hash_block", hidden=True, hint="Block 0's parent is the root_seed argument, not always ROOT_SEED.")
def uses_the_given_root_seed(impl):
    return impl.hash_block(None, [1, 2], root_seed=b"deployment-B"), impl.hash_block(None, [1, 2])


@STAGE.check("s02.hash_block", hidden=True,
             hint="Every normalized extra key is digested, tagged by its kind, in the normalized order.")
def several_extra_keys(impl):
    return [impl.hash_block(None, [9], extra) for extra in
            ([("salt", "s"), ("lora", "l")], [("lora", "l"), ("salt", "s")], [("lora", "sl")], [("lora", "s"), ("salt", "l")])]


@STAGE.check("s02.hash_block", hidden=True, hint="Frame every field, so that different inputs never give the same bytes.")
def framing_keeps_fields_apart(impl):
    return [impl.hash_block(None, [1], [("salt", "ab")]), impl.hash_block(None, [1], [("salta", "b")]),
            impl.hash_block(None, [258]), impl.hash_block(None, [2, 1])]


@STAGE.check("s02.hash_block", hidden=True, hint="Chained keys over random blocks must match sha256 of the canonical bytes.")
def random_chains(impl):
    out = []
    for tokens, bs in _random_prompts(22, 15):
        parent = None
        for i in range(0, len(tokens) - bs + 1, bs):
            parent = impl.hash_block(parent, tokens[i:i + bs])
        out.append(parent)
    return out


# -- TODO 3 -------------------------------------------------------------------------------------
@STAGE.check("s02.chain_keys", hidden=True, hint="Pass root_seed on to hash_block.")
def root_seed_is_passed_on(impl):
    return impl.chain_keys([1, 2, 3, 4], 2, root_seed=b"deployment-B")


@STAGE.check("s02.chain_keys", hidden=True, hint="Changing one token of block 0 changes every later key.")
def one_token_changes_every_key(impl):
    a = impl.chain_keys(list(range(16)), 4)
    b = impl.chain_keys([99] + list(range(1, 16)), 4)
    return [x == y for x, y in zip(a, b)], len(a), len(b)


@STAGE.check("s02.chain_keys", hidden=True, hint="Random prompts: one key per full block, each chained on the previous one.")
def random_prompt_chains(impl):
    return [impl.chain_keys(tokens, bs) for tokens, bs in _random_prompts(23)]


@STAGE.check("s02.chain_keys", hidden=True, hint="An empty prompt or one shorter than a block has no keys.")
def no_full_block(impl):
    return impl.chain_keys([], 4), impl.chain_keys(byte_tokens(FRANCE)[:3], 4), \
        impl.chain_keys(byte_tokens(SPAIN), 16, [("lora", "adapter-1")])


# -- TODO 4 -------------------------------------------------------------------------------------
@STAGE.check("s02.longest_cached_run", hidden=True, hint="Test membership (`key in table`), not the value: a stored 0 or None is a hit.")
def falsy_values_are_hits(impl):
    table = {b"a": 0, b"b": None, b"c": ""}
    return impl.longest_cached_run([b"a", b"b", b"c", b"d"], table)


@STAGE.check("s02.longest_cached_run", hidden=True, hint="No keys: a run of 0; always return an int.")
def no_keys(impl):
    return impl.longest_cached_run([], {b"a": 1}), impl.longest_cached_run([b"a"], {})


@STAGE.check("s02.longest_cached_run", hidden=True, hint="Random tables: count leading hits only.")
def random_tables(impl):
    rng = random.Random(24)
    out = []
    for _ in range(60):
        keys = [bytes([rng.randrange(4)]) for _ in range(rng.randint(0, 6))]
        table = {bytes([k]): k for k in range(4) if rng.random() < 0.6}
        out.append(impl.longest_cached_run(keys, table))
    return out

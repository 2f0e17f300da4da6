"""Stage 2 spec and public checks: chained block hashing."""
from __future__ import annotations

from autograder.spec import Stage, Todo

STAGE = Stage(
    id="s02",
    title="Chained block hashing",
    subtitle="链式块哈希",
    summary="chained block hashing: `key_i = H(key_{i-1}, tokens of block i, extra keys)`, full blocks only",
    todos=[
        Todo("s02.split_blocks", 1, target="split_blocks", points=2, title="split a prompt into full blocks"),
        Todo("s02.hash_block", 2, target="hash_block", points=3, title="hash one block with its parent"),
        Todo("s02.chain_keys", 3, target="chain_keys", points=3, title="chain the keys of a prompt"),
        Todo("s02.longest_cached_run", 4, target="longest_cached_run", points=2,
             title="the longest cached run of leading blocks"),
    ],
    time_limit_s=10,
    memory_limit_mb=512,
)

FRANCE = "The capital of France is Paris. What is 2+2?"
SPAIN = "The capital of Spain is Paris. What is 2+2?"


def byte_tokens(text: str) -> list[int]:
    """The course's toy tokenizer: one token per UTF-8 byte."""
    return list(text.encode())


# -- TODO 1: split_blocks -------------------------------------------------------------------------
@STAGE.check("s02.split_blocks", call="split_blocks([1, 2, 3, 4, 5], block_size=2)",
             hint="Only full blocks: the partial tail [5] is never cached, so drop it.")
def tail_is_dropped(impl):
    return impl.split_blocks([1, 2, 3, 4, 5], block_size=2)


@STAGE.check("s02.split_blocks", call="split_blocks([1, 2, 3, 4, 5, 6], block_size=3)",
             hint="Consecutive, non-overlapping blocks of exactly block_size tokens, each a tuple.")
def exact_multiple(impl):
    return impl.split_blocks([1, 2, 3, 4, 5, 6], block_size=3)


@STAGE.check("s02.split_blocks", call="split_blocks([7, 8, 9], block_size=4)",
             hint="A prompt shorter than one block has no full block: return [].")
def shorter_than_a_block(impl):
    return impl.split_blocks([7, 8, 9], block_size=4)


# -- TODO 2: hash_block ---------------------------------------------------------------------------
@STAGE.check("s02.hash_block", call="hash_block(None, [1, 2, 3, 4])",
             hint="sha256 over frame(root_seed) + frame(encode_tokens(block_tokens)); return .digest() (32 bytes).")
def first_block(impl):
    return impl.hash_block(None, [1, 2, 3, 4])


@STAGE.check("s02.hash_block", call="k0 = hash_block(None, [1, 2]); hash_block(k0, [3, 4])",
             hint="A block with a parent digests the parent's key in place of the root seed.")
def parent_is_digested(impl):
    k0 = impl.hash_block(None, [1, 2])
    return impl.hash_block(k0, [3, 4])


@STAGE.check("s02.hash_block",
             call="[hash_block(None, [1, 2], extra) for extra in ([('salt', 'X')], [('lora', 'X')])]",
             hint="Digest each extra key as frame(kind) + frame(value): a salt 'X' and an adapter 'X' must differ.")
def extra_keys_are_tagged(impl):
    return [impl.hash_block(None, [1, 2], extra) for extra in ([("salt", "X")], [("lora", "X")])]


@STAGE.check("s02.hash_block", call="a = hash_block(None, [5, 6], [('salt', '')]); a == hash_block(None, [5, 6]), a",
             hint="Loop over `tags` (already normalized: empty values dropped, sorted), not over extra_keys.")
def empty_salt_is_no_salt(impl):
    a = impl.hash_block(None, [5, 6], [("salt", "")])
    b = impl.hash_block(None, [5, 6])
    return a == b, a


# -- TODO 3: chain_keys ---------------------------------------------------------------------------
@STAGE.check("s02.chain_keys", call="chain_keys(list(range(12)), block_size=4)",
             hint="Key i = hash_block(key i-1, block i); block 0 gets parent None.")
def three_blocks(impl):
    return impl.chain_keys(list(range(12)), block_size=4)


@STAGE.check("s02.chain_keys", call="len(chain_keys(list(range(10)), block_size=4))",
             hint="One key per *full* block: the partial tail gets none.")
def partial_tail_has_no_key(impl):
    return len(impl.chain_keys(list(range(10)), block_size=4))


@STAGE.check("s02.chain_keys",
             call="a, b = chain_keys(list(FRANCE.encode()), 1), chain_keys(list(SPAIN.encode()), 1); a[-1] == b[-1], a[-1]",
             hint="Pass the previous key as the parent: equal last blocks after different prefixes need different keys.")
def france_and_spain_differ(impl):
    a = impl.chain_keys(byte_tokens(FRANCE), 1)
    b = impl.chain_keys(byte_tokens(SPAIN), 1)
    return a[-1] == b[-1], a[-1]


@STAGE.check("s02.chain_keys", call="chain_keys([1, 2, 3, 4], 2, [('salt', 'tenant-a')])",
             hint="Hand extra_keys (and root_seed) on to hash_block for every block.")
def extra_keys_reach_every_block(impl):
    return impl.chain_keys([1, 2, 3, 4], 2, [("salt", "tenant-a")])


# -- TODO 4: longest_cached_run -------------------------------------------------------------------
@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'a', b'b', b'c'], {b'a': 0, b'c': 2})",
             hint="Stop at the first key that is missing: b'c' after the miss does not count.")
def stops_at_first_miss(impl):
    return impl.longest_cached_run([b"a", b"b", b"c"], {b"a": 0, b"c": 2})


@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'a', b'b'], {b'a': 0, b'b': 1})",
             hint="When every key is cached, the run is all of them.")
def all_cached(impl):
    return impl.longest_cached_run([b"a", b"b"], {b"a": 0, b"b": 1})


@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'x', b'a'], {b'a': 0})",
             hint="A miss on the first key means no hit at all: 0.")
def first_key_missing(impl):
    return impl.longest_cached_run([b"x", b"a"], {b"a": 0})

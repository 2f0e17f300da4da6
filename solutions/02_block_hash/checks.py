"""Stage 2 spec and public checks: chained block hashing.

What a learner reads of this stage (titles, contracts, hint tiers, check titles and hints, the quiz)
is in ``s02.toml`` beside this module, in English and Chinese; this module keeps the skeleton and the
probes. Contracts state what to set or return and the invariant, never code; hint tiers go from the
idea (1) over the approach (2) to a skeleton with blanks (3).
"""
from __future__ import annotations

import unicodedata

from autograder.checks.common import attempt, plain, record, within_budget
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s02",
    subtitle="链式块哈希",
    minutes=60,
    todos=[
        Todo("s02.split_blocks", 1, target="split_blocks", points=2),
        Todo("s02.hash_block", 2, target="hash_block", points=3),
        Todo("s02.chain_keys", 3, target="chain_keys", points=3),
        Todo("s02.longest_cached_run", 4, target="longest_cached_run", points=2),
    ],
    quiz=Quiz(number=5, points=1, questions=(
        Question("q1", decimals=0),
        Question("q2"),
        Question("q3"),
        Question("q4"),
        Question("q5", decimals=0),
    )),
    time_limit_s=10,
    memory_limit_mb=512,
)

FRANCE = "The capital of France is Paris. What is 2+2?"
SPAIN = "The capital of Spain is Paris. What is 2+2?"
TENANT_A = [("salt", "tenant-a")]


def byte_tokens(text: str) -> list[int]:
    """The course's toy tokenizer: one token per UTF-8 byte."""
    return list(text.encode())


# -- TODO 1: split_blocks -------------------------------------------------------------------------
@STAGE.check("s02.split_blocks", call="split_blocks([1, 2, 3, 4, 5], block_size=2)")
def tail_is_dropped(impl):
    return impl.split_blocks([1, 2, 3, 4, 5], block_size=2)


@STAGE.check("s02.split_blocks", call="split_blocks([1, 2, 3, 4, 5, 6], block_size=3)", specificity=1)
def exact_multiple(impl):
    return impl.split_blocks([1, 2, 3, 4, 5, 6], block_size=3)


@STAGE.check("s02.split_blocks", call="split_blocks([7, 8, 9], block_size=4)")
def shorter_than_a_block(impl):
    return impl.split_blocks([7, 8, 9], block_size=4)


@STAGE.check("s02.split_blocks",
             call="given = [1, 2, 3, 4, 5]; split_blocks(given, 2), given; split_blocks((5, 5, 6, 5, 6, 6, 5), 3); "
                  "split_blocks(range(10, 17), 2)")
def any_sequence_left_alone(impl):
    given = [1, 2, 3, 4, 5]
    return record(from_list=attempt(lambda: impl.split_blocks(given, 2)), list_after=given,
                  from_tuple=attempt(lambda: impl.split_blocks((5, 5, 6, 5, 6, 6, 5), 3)),
                  from_range=attempt(lambda: impl.split_blocks(range(10, 17), 2)))


@STAGE.check("s02.split_blocks", call="split_blocks([7] * 5, 2), split_blocks([4, 4, 4], 1), split_blocks([], 3)")
def repeats_size_one_and_empty(impl):
    return record(repeats=impl.split_blocks([7] * 5, 2), size_one=impl.split_blocks([4, 4, 4], 1),
                  empty=impl.split_blocks([], 3))


# -- TODO 2: hash_block ---------------------------------------------------------------------------
@STAGE.check("s02.hash_block", call="hash_block(None, [1, 2, 3, 4])")
def first_block(impl):
    return impl.hash_block(None, [1, 2, 3, 4])


@STAGE.check("s02.hash_block", call="k0 = hash_block(None, [1, 2]); hash_block(k0, [3, 4])")
def parent_is_digested(impl):
    k0 = impl.hash_block(None, [1, 2])
    return impl.hash_block(k0, [3, 4])


@STAGE.check("s02.hash_block", call="hash_block(b'', [1, 2]) == hash_block(None, [1, 2]), hash_block(b'', [1, 2])")
def empty_parent_is_a_parent(impl):
    # Only None means "no parent": b'' is falsy, yet it is the parent given, digested as it is.
    # zh: 只有 None 才表示“没有父 key”：b'' 是假值，但它就是传进来的父 key，要原样摘要。
    empty = bytes(0)
    key = impl.hash_block(empty, [1, 2])
    return record(same_as_no_parent=key == impl.hash_block(None, [1, 2]), key=key)


@STAGE.check("s02.hash_block",
             call="hash_block(None, [1, 2], [('salt', 'X')]), hash_block(None, [1, 2], [('lora', 'X')])")
def extra_keys_are_tagged(impl):
    return record(salt_X=impl.hash_block(None, [1, 2], [("salt", "X")]),
                  lora_X=impl.hash_block(None, [1, 2], [("lora", "X")]))


@STAGE.check("s02.hash_block", call="a = hash_block(None, [5, 6], [('salt', '')]); a == hash_block(None, [5, 6]), a")
def empty_salt_is_no_salt(impl):
    a = impl.hash_block(None, [5, 6], [("salt", "")])
    b = impl.hash_block(None, [5, 6])
    return record(same_as_no_salt=a == b, key=a)


@STAGE.check("s02.hash_block",
             call="a = hash_block(None, [9, 9], [('salt', 's'), ('lora', 'l')]); "
                  "a == hash_block(None, [9, 9], [('lora', 'l'), ('salt', 's')]), a")
def order_of_extra_keys_does_not_matter(impl):
    a = impl.hash_block(None, [9, 9], [("salt", "s"), ("lora", "l")])
    b = impl.hash_block(None, [9, 9], [("lora", "l"), ("salt", "s")])
    return record(same_key=a == b, key=a)


@STAGE.check("s02.hash_block", specificity=1,
             call="hash_block(None, [1], [('salt', 'ab')]) == hash_block(None, [1], [('salta', 'b')]), "
                  "hash_block(None, [1], [('lora', 'x'), ('salt', 'y')]) == hash_block(None, [1], [('lora', 'xsalty')])")
def framing_keeps_kind_and_value_apart(impl):
    return record(salt_ab_same_as_salta_b=impl.hash_block(None, [1], [("salt", "ab")]) ==
                  impl.hash_block(None, [1], [("salta", "b")]),
                  two_keys_same_as_one=impl.hash_block(None, [1], [("lora", "x"), ("salt", "y")]) ==
                  impl.hash_block(None, [1], [("lora", "xsalty")]))


@STAGE.check("s02.hash_block", specificity=1)
def extra_key_values_kept_exactly(impl):
    nfc = "caf" + "\u00e9"
    values = ["tenant-a", "Tenant-A", " tenant-a", "tenant-a ", nfc, unicodedata.normalize("NFD", nfc),
              "租户甲", "租户乙"]
    keys = [impl.hash_block(None, [1, 2], [("salt", v)]) for v in values]
    again = impl.hash_block(None, [1, 2], [("salt", "".join(["tenant", "-a"]))])
    return record(values=len(values), distinct_keys=len(set(keys)), built_at_run_time_same_key=again == keys[0])


@STAGE.check("s02.hash_block")
def pairs_of_one_kind_all_count(impl):
    # Two images (or two adapters) of one request are two pairs of one kind: each must reach the key.
    # zh: 一个请求的两张图片（或两个适配器）是同一种类的两对：每一对都要进入 key。
    tokens = [7, 7, 8]
    a_b = impl.hash_block(None, tokens, [("image", "A"), ("image", "B")])
    c_b = impl.hash_block(None, tokens, [("image", "C"), ("image", "B")])
    b = impl.hash_block(None, tokens, [("image", "B")])
    return record(images_A_B_same_as_C_B=a_b == c_b, images_A_B_same_as_B=a_b == b)


@STAGE.check("s02.hash_block", call="[hash_block(None, block) for block in ([1, 23], [12, 3], [123], [1, 2, 3])]")
def token_boundaries(impl):
    keys = [impl.hash_block(None, block) for block in ([1, 23], [12, 3], [123], [1, 2, 3])]
    return record(distinct_keys=len(set(keys)), keys=keys)


@STAGE.check("s02.hash_block", specificity=2)
def same_tokens_other_extra_keys_in_one_sequence(impl):
    tokens = [41, 42, 43, 44]
    calls = [{}, {"extra_keys": [("salt", "tenant-a")]}, {"extra_keys": [("salt", "tenant-b")]},
             {"extra_keys": [("lora", "adapter-1")]}, {"root_seed": b"deployment-B"}, {}]
    keys = [impl.hash_block(None, tokens, **kw) for kw in calls]
    return record(distinct_among_first_five=len(set(keys[:5])), last_equals_first=keys[5] == keys[0])


# -- TODO 3: chain_keys ---------------------------------------------------------------------------
@STAGE.check("s02.chain_keys", call="chain_keys(list(range(12)), block_size=4)")
def three_blocks(impl):
    return impl.chain_keys(list(range(12)), block_size=4)


@STAGE.check("s02.chain_keys", call="len(chain_keys(list(range(10)), block_size=4))")
def partial_tail_has_no_key(impl):
    return len(impl.chain_keys(list(range(10)), block_size=4))


@STAGE.check("s02.chain_keys",
             call="a, b = chain_keys(list(FRANCE.encode()), 1), chain_keys(list(SPAIN.encode()), 1); a[-1] == b[-1], a[-1]")
def france_and_spain_differ(impl):
    a = impl.chain_keys(byte_tokens(FRANCE), 1)
    b = impl.chain_keys(byte_tokens(SPAIN), 1)
    return record(same_last_key=a[-1] == b[-1], france_last_key=a[-1])


@STAGE.check("s02.chain_keys", call="chain_keys([1, 2, 3, 4], 2, [('salt', 'tenant-a')])")
def extra_keys_reach_every_block(impl):
    return impl.chain_keys([1, 2, 3, 4], 2, TENANT_A)


@STAGE.check("s02.chain_keys")
def same_prompt_other_salts_in_one_sequence(impl):
    tokens = list(range(60, 68))
    calls = [{}, {"extra_keys": TENANT_A}, {"extra_keys": [("salt", "tenant-b")]}, {"root_seed": b"deployment-B"}, {}]
    runs = [impl.chain_keys(tokens, 4, **kw) for kw in calls]
    return record(distinct_among_first_four=len({tuple(r) for r in runs[:4]}), last_equals_first=runs[4] == runs[0],
                  last_keys=[r[-1] if r else None for r in runs])


@STAGE.check("s02.chain_keys", call="chain_keys([], 4), chain_keys([5, 5, 5], 4), chain_keys([7], 1)")
def no_full_block_no_key(impl):
    return record(empty=impl.chain_keys([], 4), short=impl.chain_keys([5, 5, 5], 4), one_block=impl.chain_keys([7], 1))


@STAGE.check("s02.chain_keys")
def non_ascii_extra_keys_in_any_order(impl):
    tokens = [5, 5, 5, 9, 5, 5]
    a = impl.chain_keys(tokens, 2, [("salt", "租户-甲"), ("lora", "café")])
    b = impl.chain_keys(tokens, 2, [("lora", "caf" + "é"), ("salt", "".join(["租户", "-甲"]))])
    plain_keys = impl.chain_keys(tokens, 2)
    upper = impl.chain_keys(tokens, 2, [("salt", "Tenant-A")])
    lower = impl.chain_keys(tokens, 2, [("salt", "tenant-a")])
    return record(keys=len(a), same_keys_in_any_order=a == b, shares_a_key_with_no_extra_keys=bool(set(a) & set(plain_keys)),
                  case_ignored=upper == lower)


@STAGE.check("s02.chain_keys")
def pairs_of_one_kind_count_in_every_block(impl):
    # The KV of a prompt with images [C, B] is not the KV of one with images [A, B]: every pair counts.
    # zh: 带图片 [C, B] 的提示词的 KV 不是带图片 [A, B] 的 KV：每一对都算数。
    tokens = [3, 1, 4, 1, 5, 9]
    a_b = impl.chain_keys(tokens, 2, [("image", "A"), ("image", "B")])
    c_b = impl.chain_keys(tokens, 2, [("image", "C"), ("image", "B")])
    b = impl.chain_keys(tokens, 2, [("image", "B")])
    two_loras = impl.chain_keys(tokens, 2, [("lora", "a"), ("lora", "b")])
    lora_b = impl.chain_keys(tokens, 2, [("lora", "b")])
    return record(keys=len(a_b), images_C_B_share_with_A_B=bool(set(a_b) & set(c_b)),
                  images_B_share_with_A_B=bool(set(a_b) & set(b)), loras_a_b_share_with_b=bool(set(two_loras) & set(lora_b)))


@STAGE.check("s02.chain_keys",
             call="tokens = [4, 4, 4, 4]; a = chain_keys(tokens, 2); a.append(b'extra'); b = chain_keys(tokens, 2); len(b), tokens")
def fresh_list_per_call(impl):
    # The returned list is the caller's to change: the next call must not see those changes.
    # zh: 返回的列表归调用者所有，随便怎么改：下一次调用不能受影响。
    tokens = [4, 4, 4, 4]
    first = impl.chain_keys(tokens, 2)
    first_len = len(first)
    if type(first) is list:
        first.append(b"extra")
    second = impl.chain_keys(tokens, 2)
    return record(first_len=first_len, second_len=len(second), same_object=first is second, tokens_after=tokens)


@STAGE.check("s02.chain_keys", call="tokens = [1, 2, 3, 4, 5]; chain_keys(tokens, 2); tokens; chain_keys((1, 2, 3), 2); "
                                        "chain_keys(range(5), 2)")
def callers_tokens_left_alone(impl):
    # The tokens are the caller's prompt: read them, never trim the partial tail off their list.
    # zh: token 是调用者的提示词：只读它们，绝不能把未满的尾块从调用者的列表里删掉。
    tokens = [1, 2, 3, 4, 5]
    keys = impl.chain_keys(tokens, 2)
    return record(keys=len(keys), tokens_after=tokens, tuple_keys=len(impl.chain_keys((1, 2, 3), 2)),
                  range_keys=len(impl.chain_keys(range(5), 2)))


def keys_stand_for_the_default_seed(impl, seed, tokens, default) -> bool:
    """Whether ``chain_keys(tokens, 2, root_seed=seed)`` answers with the default seed's keys (refusing the
    seed, as hash_block does, is not)."""
    try:
        keys = impl.chain_keys(tokens, 2, root_seed=seed)
    except (ValueError, TypeError):
        return False
    return keys == default


@STAGE.check("s02.chain_keys")
def empty_root_seed_is_not_the_default(impl):
    # An empty seed is a wrong seed, not "no seed given": hash_block refuses it, and so must the chain.
    # zh: 空种子是错的种子，不是“没给种子”：hash_block 会拒绝它，整条链也必须拒绝。
    tokens = [1, 2, 3, 4]
    default = impl.chain_keys(tokens, 2)
    return record(empty_gives_default_keys=keys_stand_for_the_default_seed(impl, bytes(0), tokens, default),
                  none_gives_default_keys=keys_stand_for_the_default_seed(impl, None, tokens, default))


# -- TODO 4: longest_cached_run -------------------------------------------------------------------
@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'a', b'b', b'c'], {b'a': 1, b'c': 3})")
def stops_at_first_miss(impl):
    return plain(impl.longest_cached_run([b"a", b"b", b"c"], {b"a": 1, b"c": 3}))


@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'a', b'b'], {b'a': 1, b'b': 2})")
def all_cached(impl):
    return plain(impl.longest_cached_run([b"a", b"b"], {b"a": 1, b"b": 2}))


@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'x', b'a'], {b'a': 1})")
def first_key_missing(impl):
    return plain(impl.longest_cached_run([b"x", b"a"], {b"a": 1}))


@STAGE.check("s02.longest_cached_run")
def stored_value_does_not_matter(impl):
    def k(i):  # equal keys built at run time are equal, not the same object
        return bytes([i]) * 4

    table = {k(0): 0, k(1): None, k(2): "", k(3): False}
    return plain(impl.longest_cached_run([k(0), k(1), k(0), k(2), k(3), k(4), k(0)], table))


@STAGE.check("s02.longest_cached_run", call="longest_cached_run([], {b'a': 1}), longest_cached_run([b'a'], {})")
def no_keys_or_empty_table(impl):
    return plain(record(no_keys=attempt(lambda: impl.longest_cached_run([], {b"a": 1})),
                        empty_table=attempt(lambda: impl.longest_cached_run([b"a"], {}))))


@STAGE.check("s02.longest_cached_run")
def lookups_stay_cheap(impl):
    table = {i.to_bytes(8, "big"): i + 1 for i in range(60_000)}
    runs = [[(j * 7 + k).to_bytes(8, "big") for k in range(5)] + [b"absent!!"] for j in range(6_000)]
    long_run = [i.to_bytes(8, "big") for i in range(6_000)] + [b"absent!!"]
    calls = [lambda keys=keys: impl.longest_cached_run(keys, table) for keys in runs]
    calls += [lambda: impl.longest_cached_run(long_run, table)] * 15
    results: list = []
    fast = within_budget(lambda i: results.append(calls[i]()), len(calls), 2.0, batch=1)
    return record(within_budget=fast, results=sorted(set(plain(results))) if fast else None)

"""Hidden checks of stage 2: edge cases, random cases, memoized keys, token boundaries and the cost of
the run count. Never shipped to learners."""
from __future__ import annotations

import random

from autograder.checks.common import plain, record, within_budget
from autograder.checks.s02 import FRANCE, SPAIN, STAGE, TENANT_A, byte_tokens
from autograder.i18n import L

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
@STAGE.check("s02.split_blocks", hidden=True, sibling="any_sequence_left_alone",
             hint=L("Any sequence may come in (a tuple, a range); the blocks are always tuples.",
                    "传进来的可以是任何序列（tuple、range）；块始终是 tuple。"))
def tuple_and_range_input(impl):
    return record(from_tuple=impl.split_blocks((1, 2, 3, 4, 5), 2), from_range=impl.split_blocks(range(7), 3))


@STAGE.check("s02.split_blocks", hidden=True, sibling="exact_multiple",
             hint=L("Block i holds the tokens from i times block_size on, exactly block_size of them; none overlap, "
                    "none is short.",
                    "第 i 块装的是从第 i × block_size 个位置起的恰好 block_size 个 token；块之间不重叠，也没有短块。"))
def random_splits(impl):
    return [impl.split_blocks(tokens, bs) for tokens, bs in _random_prompts(21)]


@STAGE.check("s02.split_blocks", hidden=True, sibling="repeats_size_one_and_empty",
             hint=L("An empty prompt has no blocks; block_size 1 makes one block per token.",
                    "空提示词没有块；block_size 为 1 时每个 token 自成一块。"))
def empty_and_size_one(impl):
    return record(empty_prompt=impl.split_blocks([], 3), size_one=impl.split_blocks([4, 5, 6], 1))


# -- TODO 2 -------------------------------------------------------------------------------------
@STAGE.check("s02.hash_block", hidden=True, sibling="same_tokens_other_extra_keys_in_one_sequence",
             hint=L("Block 0 is hashed on the root_seed argument it is given, not always on the module's ROOT_SEED.",
                    "第 0 块用传进来的 root_seed 参数做哈希，而不是总用模块里的 ROOT_SEED。"))
def uses_the_given_root_seed(impl):
    return record(seed_B=impl.hash_block(None, [1, 2], root_seed=b"deployment-B"), default=impl.hash_block(None, [1, 2]))


@STAGE.check("s02.hash_block", hidden=True, sibling="order_of_extra_keys_does_not_matter",
             hint=L("Every normalized extra key is digested, tagged by its kind, in the normalized order.",
                    "每个规范化后的附加 key 都要按规范化后的顺序摘要进去，并带上它的 kind。"))
def several_extra_keys(impl):
    return [impl.hash_block(None, [9], extra) for extra in
            ([("salt", "s"), ("lora", "l")], [("lora", "l"), ("salt", "s")], [("lora", "sl")], [("lora", "s"), ("salt", "l")])]


@STAGE.check("s02.hash_block", hidden=True, sibling="framing_keeps_kind_and_value_apart",
             hint=L("Frame every field, so that different inputs never give the same bytes.",
                    "每个字段都要加长度帧，这样不同的输入永远不会得到相同的字节。"))
def framing_keeps_fields_apart(impl):
    return [impl.hash_block(None, [1], [("salt", "ab")]), impl.hash_block(None, [1], [("salta", "b")]),
            impl.hash_block(None, [258]), impl.hash_block(None, [2, 1])]


@STAGE.check("s02.hash_block", hidden=True, sibling="parent_is_digested",
             hint=L("Chained keys over random blocks must equal sha256 of the canonical bytes.",
                    "对随机的块链式求出的 key，必须等于规范字节的 sha256。"))
def random_chains(impl):
    out = []
    for tokens, bs in _random_prompts(22, 15):
        parent = None
        for i in range(0, len(tokens) - bs + 1, bs):
            parent = impl.hash_block(parent, tokens[i:i + bs])
        out.append(parent)
    return out


@STAGE.check("s02.hash_block", hidden=True, sibling="token_boundaries",
             hint=L("Token ids whose digits run into each other (1, 23 against 12, 3): encode ids, never their text, "
                    "with and without a parent.",
                    "数字会连在一起的 token id（1, 23 对比 12, 3）：编码的是 id，绝不是它们的文本，有没有父 key 都一样。"))
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


@STAGE.check("s02.hash_block", hidden=True, sibling="same_tokens_other_extra_keys_in_one_sequence",
             hint=L("Keys remembered between calls must be remembered under the parent, the tokens, the extra keys "
                    "and the root seed together: the same block under a new parent, salt or seed gets a new key.",
                    "在多次调用之间记住的 key，必须按父 key、token、附加 key 和根种子四者一起来记：同一个块换了父 key、"
                    "盐值或根种子，就得到新的 key。"))
def memoized_keys_interleaved(impl):
    t0, t1 = [91, 92], [93, 94]
    k0 = impl.hash_block(None, t0)
    return [k0, impl.hash_block(k0, t1), impl.hash_block(k0, t1, [("salt", "s1")]),
            impl.hash_block(k0, t1, [("lora", "s1")]), impl.hash_block(None, t0, root_seed=b"seed-2"),
            impl.hash_block(None, t0, [("salt", "s1")], root_seed=b"seed-2"), impl.hash_block(k0, t1),
            impl.hash_block(None, t0)]


@STAGE.check("s02.hash_block", hidden=True, sibling="same_tokens_other_extra_keys_in_one_sequence",
             hint=L("A random sequence of calls that repeat tokens under other parents, extra keys and root seeds: "
                    "each call's key depends on all of its inputs.",
                    "一串随机调用，同样的 token 反复搭配不同的父 key、附加 key 和根种子：每次调用的 key 都取决于它的全部输入。"))
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
@STAGE.check("s02.chain_keys", hidden=True, sibling="same_prompt_other_salts_in_one_sequence",
             hint=L("Pass root_seed on to the hashing of the blocks.", "把 root_seed 传给每一块的哈希。"))
def root_seed_is_passed_on(impl):
    return impl.chain_keys([1, 2, 3, 4], 2, root_seed=b"deployment-B")


@STAGE.check("s02.chain_keys", hidden=True, sibling="france_and_spain_differ",
             hint=L("Changing one token of block 0 changes every later key.", "改动第 0 块的一个 token，之后的每个 key 都会变。"))
def one_token_changes_every_key(impl):
    a = impl.chain_keys(list(range(16)), 4)
    b = impl.chain_keys([99] + list(range(1, 16)), 4)
    return record(equal_positions=[x == y for x, y in zip(a, b)], keys_a=len(a), keys_b=len(b))


@STAGE.check("s02.chain_keys", hidden=True, sibling="three_blocks",
             hint=L("Random prompts: one key per full block, each chained on the key before it.",
                    "随机提示词：每个满块一个 key，每个都接在前一个 key 之后。"))
def random_prompt_chains(impl):
    return [impl.chain_keys(tokens, bs) for tokens, bs in _random_prompts(23)]


@STAGE.check("s02.chain_keys", hidden=True, sibling="no_full_block_no_key",
             hint=L("An empty prompt, or one shorter than a block, has no keys.", "空提示词，或者比一个块还短的提示词，没有 key。"))
def no_full_block(impl):
    return record(empty=impl.chain_keys([], 4), shorter_than_a_block=impl.chain_keys(byte_tokens(FRANCE)[:3], 4),
                  with_adapter=impl.chain_keys(byte_tokens(SPAIN), 16, [("lora", "adapter-1")]))


@STAGE.check("s02.chain_keys", hidden=True, sibling="three_blocks",
             hint=L("Token ids whose digits run into each other: prompts 1, 23, ... and 12, 3, ... share no key.",
                    "数字会连在一起的 token id：提示词 1, 23, ... 和 12, 3, ... 没有任何相同的 key。"))
def multi_digit_prompts(impl):
    return [impl.chain_keys(p, bs) for p, bs in
            (([1, 23, 4, 5], 2), ([12, 3, 4, 5], 2), ([1, 23, 4, 5], 1), ([12, 3, 4, 5], 1), ([123, 4], 1))]


@STAGE.check("s02.chain_keys", hidden=True, sibling="same_prompt_other_salts_in_one_sequence",
             hint=L("A prompt that shares its first blocks with an earlier call under another salt or root seed shares "
                    "none of its keys: never reuse an earlier call's keys for a prefix of the tokens alone.",
                    "一个提示词即使和之前某次调用的前几块相同，只要盐值或根种子不同，就没有一个 key 相同："
                    "绝不能只凭 token 前缀沿用之前调用的 key。"))
def memoized_prefixes_under_other_salts(impl):
    base = list(range(70, 82))  # 3 blocks of 4
    return [impl.chain_keys(base[:8], 4, TENANT_A), impl.chain_keys(base, 4, [("salt", "tenant-b")]),
            impl.chain_keys(base, 4), impl.chain_keys(base[:8], 4, root_seed=b"deployment-B"),
            impl.chain_keys(base, 4, TENANT_A), impl.chain_keys(base[:4], 4, [("lora", "tenant-a")])]


@STAGE.check("s02.chain_keys", hidden=True, sibling="same_prompt_other_salts_in_one_sequence",
             hint=L("A random sequence of calls that repeat prompts under other extra keys and root seeds: each call's "
                    "keys depend on all of its inputs.",
                    "一串随机调用，同样的提示词反复搭配不同的附加 key 和根种子：每次调用的 key 都取决于它的全部输入。"))
def random_calls_with_salts_and_seeds(impl):
    rng = random.Random(27)
    prompts = [[rng.randrange(2) for _ in range(rng.randint(2, 8))] for _ in range(6)]
    return [impl.chain_keys(rng.choice(prompts), 2, **_options(rng.choice(EXTRAS), rng.choice(SEEDS)))
            for _ in range(60)]


# -- TODO 4 -------------------------------------------------------------------------------------
@STAGE.check("s02.longest_cached_run", hidden=True, sibling="stored_value_does_not_matter",
             hint=L("Test whether the table holds the key, not its value: a stored 0, None or empty string is a hit.",
                    "检查的是表里有没有这个 key，而不是它的值：存的值是 0、None 或空字符串也算命中。"))
def falsy_values_are_hits(impl):
    table = {b"a": 0, b"b": None, b"c": ""}
    return plain(impl.longest_cached_run([b"a", b"b", b"c", b"d"], table))


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="no_keys_or_empty_table",
             hint=L("No keys give a run of 0, and so does an empty table; always return an int.",
                    "没有 key 时结果是 0，表为空时也是 0；始终返回 int。"))
def no_keys(impl):
    return plain(record(no_keys=impl.longest_cached_run([], {b"a": 1}), empty_table=impl.longest_cached_run([b"a"], {})))


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="stops_at_first_miss",
             hint=L("Random tables: count the leading hits only.", "随机的表：只数开头连续的命中。"))
def random_tables(impl):
    rng = random.Random(24)
    out = []
    for _ in range(60):
        keys = [bytes([rng.randrange(4)]) for _ in range(rng.randint(0, 6))]
        table = {bytes([k]): k for k in range(4) if rng.random() < 0.6}
        out.append(impl.longest_cached_run(keys, table))
    return plain(out)


# -- cost guards (TODO 4) ------------------------------------------------------------------------------
# A membership test in a dict costs well under a microsecond, so the reference spends a few milliseconds
# on each probe below. An answer that copies or scans the table on every call (set(table), list(table),
# a walk over its items) pays for all 50k entries each time; one that re-checks the keys it already
# counted (all() over a growing slice, keys.index) pays n^2 / 2 on a run of 8k keys. The budget is
# hundreds of times what the reference needs, so a loaded machine cannot fail it, while such answers
# exceed it long before the grader's time limit: the probe then stops and answers "not within budget".
BUDGET_S = 2.0
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


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="lookups_stay_cheap",
             hint=L("The cost must not grow with the table: look each key up in it directly (one membership test "
                    "per key), never copy, convert or scan the table.",
                    "开销不能随表的大小增长：直接在表里查每个 key（每个 key 一次成员测试），绝不复制、转换或扫描整张表。"))
def cost_does_not_grow_with_the_table(impl):
    table = {_key(i): i for i in range(BIG_TABLE)}
    missing = b"missing!"
    runs = [[_key((j * 8 + k) % BIG_TABLE) for k in range(8)] + [missing, _key(j)] for j in range(SHORT_CALLS)]
    return _within_budget(lambda keys=keys: impl.longest_cached_run(keys, table) for keys in runs)


@STAGE.check("s02.longest_cached_run", hidden=True, sibling="lookups_stay_cheap",
             hint=L("The cost must grow linearly with the run: look at each key once, in order, and never re-check "
                    "the keys already counted (no slices of the keys so far, no searching the key list).",
                    "开销必须随命中长度线性增长：按顺序每个 key 只看一次，不要重复检查已经数过的 key"
                    "（不要对已走过的 key 切片，也不要在 key 列表里查找）。"))
def cost_is_linear_in_the_run(impl):
    table = {_key(i): i for i in range(LONG_RUN)}
    keys = list(table) + [b"missing!"]
    return _within_budget(lambda: impl.longest_cached_run(keys, table) for _ in range(LONG_CALLS))

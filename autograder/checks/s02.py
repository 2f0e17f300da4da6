"""Stage 2 spec and public checks: chained block hashing.

Everything a learner reads here exists in English and Chinese (``L(en, zh)``): titles, contracts,
hint tiers, check hints, the quiz. Contracts state what to set or return and the invariant, never
code; hint tiers go from the idea (1) over the approach (2) to a skeleton with blanks (3).
"""
from __future__ import annotations

import unicodedata

from autograder.checks.common import attempt, plain, record, within_budget
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s02",
    title=L("Chained block hashing", "链式块哈希"),
    subtitle="链式块哈希",
    summary=L("chained block hashing: `key_i = H(key_{i-1}, tokens of block i, extra keys)`, full blocks only",
              "链式块哈希：`key_i = H(key_{i-1}, 第 i 块的 token, 附加 key)`，只给满块算 key"),
    minutes=60,
    todos=[
        Todo("s02.split_blocks", 1, target="split_blocks", points=2,
             title=L("split a prompt into full blocks", "把提示词切成满块"),
             contract=L(
                 "Set `blocks` to the full blocks of the prompt,\n"
                 "in order: a list of tuples of exactly block_size tokens each, consecutive and not overlapping.\n"
                 "The partial tail (fewer than block_size tokens left at the end) gets no block.\n"
                 "Invariant: the blocks put together are the prompt without its partial tail.",
                 "把提示词的满块按顺序赋给 `blocks`：\n"
                 "一个 list，每个元素是恰好 block_size 个 token 组成的 tuple，块与块首尾相接、互不重叠。\n"
                 "未满的尾块（结尾剩下不足 block_size 个 token）不成块。\n"
                 "不变量：所有块拼起来，就是去掉未满尾块之后的提示词。"),
             hints=(
                 L("Only a full block's KV is final: the tail is still being written by the next tokens, so another "
                   "request must never find it in the cache.",
                   "只有满块的 KV 是最终结果：尾块还会被后面的 token 继续写入，所以绝不能让别的请求在缓存里找到它。"),
                 L("Count the full blocks with integer division, then take block i as the tokens from position "
                   "i times block_size up to (but not including) position (i + 1) times block_size, as a tuple.",
                   "先用整除算出有几个满块，再把第 i 块取成从第 i × block_size 个位置到第 (i + 1) × block_size 个位置"
                   "（不含）的 token，转成 tuple。"),
                 L("num_full = ___\n"
                   "blocks = [tuple(tokens[___:___]) for i in range(num_full)]",
                   "num_full = ___\n"
                   "blocks = [tuple(tokens[___:___]) for i in range(num_full)]"))),
        Todo("s02.hash_block", 2, target="hash_block", points=3,
             title=L("hash one block with its parent", "对一个块连同父 key 做哈希"),
             contract=L(
                 "Set `key` to the 32-byte sha256 digest of this block's canonical bytes,\n"
                 "which are, one after the other: the framed parent key (the framed root seed when there is no\n"
                 "parent), the framed encoded tokens, then the framed kind and the framed value of each\n"
                 "normalized extra key, as UTF-8 and in the normalized order.\n"
                 "Invariant: the same inputs give the same key in every process and on every machine; a change\n"
                 "of parent, tokens, root seed or any extra key (its kind or its value) gives another key.",
                 "把这个块的规范字节做 sha256，得到的 32 字节摘要赋给 `key`。\n"
                 "规范字节依次是：加了长度帧的父 key（没有父 key 时换成加了长度帧的根种子）、加了长度帧的 token 编码，\n"
                 "然后按规范化后的顺序，对每个附加 key 依次放入加了长度帧的 kind 和 value（UTF-8 编码）。\n"
                 "不变量：同样的输入在任何进程、任何机器上都得到同样的 key；父 key、token、根种子或任何一个附加 key\n"
                 "（kind 或 value）变了，key 就跟着变。"),
             hints=(
                 L("A key names the whole prefix, not one block: it digests the parent's key together with the "
                   "block's tokens. Caches outlive processes, so the bytes must be unambiguous and the hash a real "
                   "cryptographic one, never Python's hash().",
                   "一个 key 代表的是整个前缀而不只是一个块：它把父 key 和本块的 token 一起做摘要。缓存比进程活得久，"
                   "所以字节必须没有歧义，哈希必须用真正的密码学哈希，绝不能用 Python 的 hash()。"),
                 L("Build one bytes object by concatenating the framed fields in the documented order (parent or root "
                   "seed; encoded tokens; kind and value of every normalized extra key, taken from the already "
                   "normalized tags), then digest it once with sha256.",
                   "按文档给出的顺序，把加了长度帧的各个字段拼成一个 bytes（父 key 或根种子；token 编码；每个规范化后的"
                   "附加 key 的 kind 和 value，直接取自已经规范化好的 tags），然后用 sha256 对它做一次摘要。"),
                 L("data = frame(___) + frame(encode_tokens(block_tokens))\n"
                   "for kind, value in tags:\n"
                   "    data += frame(___) + frame(___)\n"
                   "key = hashlib.sha256(___).digest()",
                   "data = frame(___) + frame(encode_tokens(block_tokens))\n"
                   "for kind, value in tags:\n"
                   "    data += frame(___) + frame(___)\n"
                   "key = hashlib.sha256(___).digest()"))),
        Todo("s02.chain_keys", 3, target="chain_keys", points=3,
             title=L("chain the keys of a prompt", "把提示词的 key 串成链"),
             contract=L(
                 "Append to `keys` one key per full block of the prompt,\n"
                 "in order. Block 0 is hashed without a parent; every later block is hashed on the key of the\n"
                 "block before it. Every block gets the same extra keys and the same root seed.\n"
                 "Invariant: key i of two prompts is equal exactly when their first i + 1 blocks, their extra keys\n"
                 "and their root seed are equal; the partial tail gets no key.",
                 "按顺序为提示词的每个满块往 `keys` 里追加一个 key。\n"
                 "第 0 块没有父 key；之后的每一块都以前一块的 key 作为父 key。每一块都用同样的附加 key 和同样的根种子。\n"
                 "不变量：两个提示词的第 i 个 key 相等，当且仅当它们的前 i + 1 个块、附加 key 和根种子都相同；\n"
                 "未满的尾块没有 key。"),
             hints=(
                 L("Each key stands for the whole prefix up to its block because it digests the key before it: walk "
                   "the blocks in order and carry the last key along.",
                   "每个 key 之所以能代表到它为止的整个前缀，是因为它把前一个 key 也摘要进去了：按顺序遍历各块，"
                   "一路带着上一个 key 往前走。"),
                 L("Cut the prompt with TODO 1, then hash block after block with TODO 2, passing the previous key as "
                   "the parent (none for the first block) and handing on the extra keys and the root seed each time.",
                   "先用 TODO 1 切块，再用 TODO 2 一块接一块地哈希：父 key 传前一块的 key（第一块传 None），"
                   "每次都把附加 key 和根种子原样传下去。"),
                 L("parent = None\n"
                   "for block in split_blocks(tokens, block_size):\n"
                   "    parent = hash_block(___, block, ___, root_seed=___)\n"
                   "    keys.append(parent)",
                   "parent = None\n"
                   "for block in split_blocks(tokens, block_size):\n"
                   "    parent = hash_block(___, block, ___, root_seed=___)\n"
                   "    keys.append(parent)"))),
        Todo("s02.longest_cached_run", 4, target="longest_cached_run", points=2,
             title=L("the longest cached run of leading blocks", "开头连续命中的最长块数"),
             contract=L(
                 "Set `hits` to the number of leading keys the table holds:\n"
                 "count from the first key and stop at the first key that is missing. A key after a miss never\n"
                 "counts, and a key counts whatever value the table stores for it.\n"
                 "Invariant: the work grows with the keys you look at, one membership test each, never with the\n"
                 "size of the table.",
                 "把表里从开头起连续存在的 key 的个数赋给 `hits`：\n"
                 "从第一个 key 开始数，遇到第一个不在表里的 key 就停。未命中之后的 key 一律不算；只要 key 在表里就算，\n"
                 "不管表里给它存的值是什么。\n"
                 "不变量：工作量只随你查看的 key 数增长（每个 key 查一次是否在表中），绝不随表的大小增长。"),
             hints=(
                 L("Prefill computes one contiguous run of tokens, from the first uncached token to the end of the "
                   "prompt: a cached block after a miss would sit inside that run, so it is of no use.",
                   "prefill 计算的是一段连续的 token：从第一个未缓存的 token 一直到提示词末尾。未命中之后的已缓存块"
                   "正落在这段里，所以用不上。"),
                 L("Walk the keys from the start and ask the table whether it holds each one (a dict answers in "
                   "constant time); stop at the first miss. Never copy or scan the table, and never re-check keys "
                   "you already counted.",
                   "从头遍历 key，逐个问表里有没有它（dict 的查询是常数时间）；遇到第一个未命中就停。"
                   "不要复制或扫描整张表，也不要重复检查已经数过的 key。"),
                 L("for key in keys:\n"
                   "    if ___:\n"
                   "        break\n"
                   "    hits += 1",
                   "for key in keys:\n"
                   "    if ___:\n"
                   "        break\n"
                   "    hits += 1"))),
    ],
    quiz=Quiz(number=5, points=1, questions=(
        Question("q1", L("A prompt has 1,000 tokens and the block size is 16. How many keys does chain_keys return?",
                         "一个提示词有 1,000 个 token，块大小为 16。chain_keys 返回几个 key？"),
                 L("Only full blocks get a key.", "只有满块才有 key。"), decimals=0),
        Question("q2", L("Two prompts are equal except at token 5 (counting from 0); the block size is 4. Which of "
                         "their keys are equal?",
                         "两个提示词只有第 5 个 token（从 0 开始数）不同；块大小为 4。它们的哪些 key 相等？"),
                 L("Find the block that holds token 5, then remember what every later key digests.",
                   "先找出第 5 个 token 落在哪一块，再想想之后的每个 key 都摘要了什么。"),
                 choices=(L("all keys except the key of block 1", "除了第 1 块的 key，其余都相等"),
                          L("only the key of block 0", "只有第 0 块的 key 相等"),
                          L("none of them", "全都不相等"))),
        Question("q3", L("Why are the keys sha256 digests and not Python's hash()?",
                         "为什么 key 用 sha256 摘要，而不用 Python 的 hash()？"),
                 L("Think of a cache shared by several worker processes, or one that survives a restart.",
                   "想象一个由多个 worker 进程共享的缓存，或者一个在重启后仍然保留的缓存。"),
                 choices=(L("hash() of a str or bytes changes from one process to the next, and its collisions are "
                            "easy to construct", "str 或 bytes 的 hash() 每个进程都不一样，而且很容易构造碰撞"),
                          L("sha256 is faster than hash()", "sha256 比 hash() 更快"),
                          L("hash() cannot take bytes", "hash() 不能处理 bytes"))),
        Question("q4", L("Tenants A and B send the same prompt, each with its own salt. How many of B's blocks hit "
                         "the blocks that A's request cached?",
                         "租户 A 和 B 发来同一个提示词，各自带着自己的盐值。B 的块里有多少个能命中 A 的请求缓存下来的块？"),
                 L("The salt is digested into the key of block 0, and every later key digests the key before it.",
                   "盐值被摘要进第 0 块的 key，而之后的每个 key 又都摘要了前一个 key。"),
                 choices=(L("all of them", "全部"), L("all but the last one", "除最后一块外全部"), L("none", "一个也没有"))),
        Question("q5", L("The block size is 16. A prompt's keys are k0, k1, k2, k3 and the table holds k0, k1 and k3. "
                         "How many of the prompt's tokens come from the cache?",
                         "块大小为 16。一个提示词的 key 是 k0、k1、k2、k3，表里有 k0、k1 和 k3。这个提示词有多少个 token "
                         "来自缓存？"),
                 L("Count the leading run of hits, then turn blocks into tokens.", "先数开头连续命中的块，再把块数换算成 token 数。"),
                 decimals=0),
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
@STAGE.check("s02.split_blocks", call="split_blocks([1, 2, 3, 4, 5], block_size=2)",
             title=L("the partial tail is dropped", "未满的尾块被丢掉"),
             hint=L("Only full blocks: the partial tail [5] is never cached, so it gets no block.",
                    "只要满块：未满的尾块 [5] 永远不会被缓存，所以它不成块。"))
def tail_is_dropped(impl):
    return impl.split_blocks([1, 2, 3, 4, 5], block_size=2)


@STAGE.check("s02.split_blocks", call="split_blocks([1, 2, 3, 4, 5, 6], block_size=3)", specificity=1,
             title=L("consecutive blocks of block_size tokens, as tuples", "首尾相接、每块 block_size 个 token 的 tuple"),
             hint=L("Every full block, the last one included: consecutive, non-overlapping blocks of exactly "
                    "block_size tokens, each a tuple.",
                    "每个满块都要有，最后一个也不例外：块与块首尾相接、互不重叠，每块恰好 block_size 个 token，"
                    "每块是一个 tuple。"))
def exact_multiple(impl):
    return impl.split_blocks([1, 2, 3, 4, 5, 6], block_size=3)


@STAGE.check("s02.split_blocks", call="split_blocks([7, 8, 9], block_size=4)",
             title=L("a prompt shorter than one block", "比一个块还短的提示词"),
             hint=L("A prompt shorter than one block has no full block: the result is an empty list.",
                    "比一个块还短的提示词没有满块：结果是空列表。"))
def shorter_than_a_block(impl):
    return impl.split_blocks([7, 8, 9], block_size=4)


@STAGE.check("s02.split_blocks",
             call="given = [1, 2, 3, 4, 5]; split_blocks(given, 2), given; split_blocks((5, 5, 6, 5, 6, 6, 5), 3); "
                  "split_blocks(range(10, 17), 2)",
             title=L("a list left as it was, a tuple, a range", "list 保持原样，以及 tuple 和 range"),
             hint=L("Any sequence may come in (a list, a tuple, a range): read it, never change it (it is the "
                    "caller's prompt), and make every block a tuple.",
                    "传进来的可以是任何序列（list、tuple、range）：只读它，绝不修改它（那是调用者的提示词），"
                    "每个块都做成 tuple。"))
def any_sequence_left_alone(impl):
    given = [1, 2, 3, 4, 5]
    return record(from_list=attempt(lambda: impl.split_blocks(given, 2)), list_after=given,
                  from_tuple=attempt(lambda: impl.split_blocks((5, 5, 6, 5, 6, 6, 5), 3)),
                  from_range=attempt(lambda: impl.split_blocks(range(10, 17), 2)))


@STAGE.check("s02.split_blocks", call="split_blocks([7] * 5, 2), split_blocks([4, 4, 4], 1), split_blocks([], 3)",
             title=L("repeated blocks, one-token blocks, no tokens", "重复的块、单 token 的块、没有 token"),
             hint=L("Every full block is kept in its place, even when it equals an earlier one (blocks are positions "
                    "in the prompt, not a set); block_size 1 gives one block per token; no tokens give no blocks.",
                    "每个满块都留在它自己的位置上，即使它和前面的某块相同（块是提示词里的位置，而不是集合）；"
                    "block_size 为 1 时每个 token 自成一块；没有 token 就没有块。"))
def repeats_size_one_and_empty(impl):
    return record(repeats=impl.split_blocks([7] * 5, 2), size_one=impl.split_blocks([4, 4, 4], 1),
                  empty=impl.split_blocks([], 3))


# -- TODO 2: hash_block ---------------------------------------------------------------------------
@STAGE.check("s02.hash_block", call="hash_block(None, [1, 2, 3, 4])",
             title=L("the first block: root seed and tokens", "第一个块：根种子和 token"),
             hint=L("sha256 over frame(root seed) + frame(encode_tokens(tokens)): the given encoder, 4 bytes per id "
                    "(never the tokens' text), and a real digest (never Python's hash()); the key is the 32-byte "
                    "digest.",
                    "对 frame(根种子) + frame(encode_tokens(tokens)) 做 sha256：用给定的编码函数，每个 id 占 4 字节"
                    "（绝不用 token 的文本），用真正的摘要算法（绝不用 Python 的 hash()）；key 是 32 字节的摘要。"))
def first_block(impl):
    return impl.hash_block(None, [1, 2, 3, 4])


@STAGE.check("s02.hash_block", call="k0 = hash_block(None, [1, 2]); hash_block(k0, [3, 4])",
             title=L("a block with a parent digests the parent's key", "有父 key 的块要摘要父 key"),
             hint=L("A block with a parent digests the parent's key in place of the root seed.",
                    "有父 key 的块用父 key 代替根种子参与摘要。"))
def parent_is_digested(impl):
    k0 = impl.hash_block(None, [1, 2])
    return impl.hash_block(k0, [3, 4])


@STAGE.check("s02.hash_block",
             call="hash_block(None, [1, 2], [('salt', 'X')]), hash_block(None, [1, 2], [('lora', 'X')])",
             title=L("extra keys are tagged by their kind", "附加 key 带着它的 kind"),
             hint=L("Digest the kind of each extra key as well as its value: a salt 'X' and an adapter 'X' must "
                    "give different keys.",
                    "每个附加 key 的 kind 和 value 都要摘要进去：盐值 'X' 和适配器 'X' 必须得到不同的 key。"))
def extra_keys_are_tagged(impl):
    return record(salt_X=impl.hash_block(None, [1, 2], [("salt", "X")]),
                  lora_X=impl.hash_block(None, [1, 2], [("lora", "X")]))


@STAGE.check("s02.hash_block", call="a = hash_block(None, [5, 6], [('salt', '')]); a == hash_block(None, [5, 6]), a",
             title=L("an empty salt is no salt", "空盐值等于没有盐值"),
             hint=L("Digest the normalized tags (empty values already dropped, pairs sorted), not the raw extra keys.",
                    "摘要的是规范化后的 tags（空值已去掉、已排序），而不是原始的 extra_keys。"))
def empty_salt_is_no_salt(impl):
    a = impl.hash_block(None, [5, 6], [("salt", "")])
    b = impl.hash_block(None, [5, 6])
    return record(same_as_no_salt=a == b, key=a)


@STAGE.check("s02.hash_block",
             call="a = hash_block(None, [9, 9], [('salt', 's'), ('lora', 'l')]); "
                  "a == hash_block(None, [9, 9], [('lora', 'l'), ('salt', 's')]), a",
             title=L("the order of the extra keys does not matter", "附加 key 的顺序无关紧要"),
             hint=L("Walk the normalized tags (sorted, empty values dropped), never the extra keys as they came: the "
                    "same extra keys in another order are the same request.",
                    "遍历的是规范化后的 tags（已排序、空值已去掉），而不是传进来的原始附加 key：同样的附加 key 换个顺序，"
                    "还是同一个请求。"))
def order_of_extra_keys_does_not_matter(impl):
    a = impl.hash_block(None, [9, 9], [("salt", "s"), ("lora", "l")])
    b = impl.hash_block(None, [9, 9], [("lora", "l"), ("salt", "s")])
    return record(same_key=a == b, key=a)


@STAGE.check("s02.hash_block", specificity=1,
             call="hash_block(None, [1], [('salt', 'ab')]) == hash_block(None, [1], [('salta', 'b')]), "
                  "hash_block(None, [1], [('lora', 'x'), ('salt', 'y')]) == hash_block(None, [1], [('lora', 'xsalty')])",
             title=L("framing keeps the kind and the value apart", "长度帧让 kind 和 value 彼此分开"),
             hint=L("Frame the kind and the value of every extra key separately (frame(kind) + frame(value)): "
                    "unframed, ('salt', 'ab') and ('salta', 'b') are the same bytes, and so are two extra keys and "
                    "one that spells them out.",
                    "每个附加 key 的 kind 和 value 都要分别加长度帧（frame(kind) + frame(value)）：不加帧的话，"
                    "('salt', 'ab') 和 ('salta', 'b') 是同样的字节，两个附加 key 和一个把它们拼写出来的附加 key 也一样。"))
def framing_keeps_kind_and_value_apart(impl):
    return record(salt_ab_same_as_salta_b=impl.hash_block(None, [1], [("salt", "ab")]) ==
                  impl.hash_block(None, [1], [("salta", "b")]),
                  two_keys_same_as_one=impl.hash_block(None, [1], [("lora", "x"), ("salt", "y")]) ==
                  impl.hash_block(None, [1], [("lora", "xsalty")]))


@STAGE.check("s02.hash_block", specificity=1,
             call=L("hash_block(None, [1, 2], [('salt', v)]) for v in 'tenant-a', 'Tenant-A', ' tenant-a', "
                    "'tenant-a ', 'café' (NFC), 'café' (NFD), '租户甲', '租户乙', and for 'tenant' + '-a' built at "
                    "run time: how many distinct keys, and does the last one equal the first?",
                    "对 v 依次取 'tenant-a'、'Tenant-A'、' tenant-a'、'tenant-a '、'café'（NFC）、'café'（NFD）、"
                    "'租户甲'、'租户乙'，计算 hash_block(None, [1, 2], [('salt', v)])，再对运行时拼出来的 "
                    "'tenant' + '-a' 算一次：一共有几个不同的 key，最后一个是否等于第一个？"),
             title=L("extra-key values are kept exactly: case, spaces, Unicode form, Chinese",
                     "附加 key 的值原样保留：大小写、空格、Unicode 形式、中文"),
             hint=L("Digest each value exactly as given, encoded as UTF-8: values that differ only in case, "
                    "surrounding spaces or Unicode form are different tenants (merging them is a cross-tenant cache "
                    "hit), any text, Chinese included, is valid, and equal values give equal keys.",
                    "每个值都按原样、用 UTF-8 编码后摘要：只差大小写、首尾空格或 Unicode 形式的值就是不同的租户"
                    "（把它们合并就会跨租户命中缓存）；任何文字（包括中文）都合法；相等的值得到相等的 key。"))
def extra_key_values_kept_exactly(impl):
    nfc = "caf" + "\u00e9"
    values = ["tenant-a", "Tenant-A", " tenant-a", "tenant-a ", nfc, unicodedata.normalize("NFD", nfc),
              "租户甲", "租户乙"]
    keys = [impl.hash_block(None, [1, 2], [("salt", v)]) for v in values]
    again = impl.hash_block(None, [1, 2], [("salt", "".join(["tenant", "-a"]))])
    return record(values=len(values), distinct_keys=len(set(keys)), built_at_run_time_same_key=again == keys[0])


@STAGE.check("s02.hash_block", call="[hash_block(None, block) for block in ([1, 23], [12, 3], [123], [1, 2, 3])]",
             title=L("token boundaries: 1, 23 and 12, 3 and 123 are different blocks",
                     "token 边界：1, 23、12, 3 和 123 是不同的块"),
             hint=L("Encode the token ids themselves (the given encoder, 4 bytes per id), never their digits as "
                    "text: \"1\" + \"23\", \"12\" + \"3\" and \"123\" are the same string.",
                    "编码的是 token id 本身（用给定的编码函数，每个 id 占 4 字节），绝不是它们的数字文本："
                    "\"1\" + \"23\"、\"12\" + \"3\" 和 \"123\" 是同一个字符串。"))
def token_boundaries(impl):
    keys = [impl.hash_block(None, block) for block in ([1, 23], [12, 3], [123], [1, 2, 3])]
    return record(distinct_keys=len(set(keys)), keys=keys)


@STAGE.check("s02.hash_block", specificity=2,
             call=L("block [41, 42, 43, 44], hashed 6 times in a row: no extra keys; salt 'tenant-a'; salt 'tenant-b'; "
                    "adapter 'adapter-1'; root_seed=b'deployment-B'; no extra keys again: how many distinct keys "
                    "among the first five, and does the last one equal the first?",
                    "块 [41, 42, 43, 44] 连续哈希 6 次：不带附加 key；盐值 'tenant-a'；盐值 'tenant-b'；适配器 "
                    "'adapter-1'；root_seed=b'deployment-B'；再次不带附加 key。前五个 key 里有几个不同，最后一个是否"
                    "等于第一个？"),
             title=L("the same tokens under other extra keys or another root seed, one call after another",
                     "同样的 token 换上别的附加 key 或根种子，连续调用"),
             hint=L("Every input of a key is part of it: hash block 0 on the root_seed argument given (not the "
                    "module's ROOT_SEED), and if you remember keys between calls, remember each one under its parent "
                    "(or root seed), its tokens and its extra keys together, or do not remember them.",
                    "key 的每一项输入都是它的一部分：第 0 块要用传进来的 root_seed 参数做哈希（而不是模块里的 ROOT_SEED）；"
                    "如果你在多次调用之间记住 key，就必须按父 key（或根种子）、token 和附加 key 三者一起来记；"
                    "否则干脆不要记。"))
def same_tokens_other_extra_keys_in_one_sequence(impl):
    tokens = [41, 42, 43, 44]
    calls = [{}, {"extra_keys": [("salt", "tenant-a")]}, {"extra_keys": [("salt", "tenant-b")]},
             {"extra_keys": [("lora", "adapter-1")]}, {"root_seed": b"deployment-B"}, {}]
    keys = [impl.hash_block(None, tokens, **kw) for kw in calls]
    return record(distinct_among_first_five=len(set(keys[:5])), last_equals_first=keys[5] == keys[0])


# -- TODO 3: chain_keys ---------------------------------------------------------------------------
@STAGE.check("s02.chain_keys", call="chain_keys(list(range(12)), block_size=4)",
             title=L("three blocks, each chained on the one before", "三个块，每块接在前一块之后"),
             hint=L("Key i is the hash of block i on key i - 1; block 0 is hashed without a parent.",
                    "第 i 个 key 是以第 i - 1 个 key 为父 key 对第 i 块做的哈希；第 0 块没有父 key。"))
def three_blocks(impl):
    return impl.chain_keys(list(range(12)), block_size=4)


@STAGE.check("s02.chain_keys", call="len(chain_keys(list(range(10)), block_size=4))",
             title=L("the partial tail gets no key", "未满的尾块没有 key"),
             hint=L("One key per *full* block: the partial tail gets none.",
                    "每个*满*块一个 key：未满的尾块没有。"))
def partial_tail_has_no_key(impl):
    return len(impl.chain_keys(list(range(10)), block_size=4))


@STAGE.check("s02.chain_keys",
             call="a, b = chain_keys(list(FRANCE.encode()), 1), chain_keys(list(SPAIN.encode()), 1); a[-1] == b[-1], a[-1]",
             title=L("same last block after different prefixes: different keys", "前缀不同、最后一块相同：key 不同"),
             hint=L("Hash every block on the previous key: equal last blocks after different prefixes need different "
                    "keys.",
                    "每一块都要以前一个 key 为父 key 做哈希：前缀不同时，即使最后一块相同，key 也必须不同。"))
def france_and_spain_differ(impl):
    a = impl.chain_keys(byte_tokens(FRANCE), 1)
    b = impl.chain_keys(byte_tokens(SPAIN), 1)
    return record(same_last_key=a[-1] == b[-1], france_last_key=a[-1])


@STAGE.check("s02.chain_keys", call="chain_keys([1, 2, 3, 4], 2, [('salt', 'tenant-a')])",
             title=L("the extra keys reach every block", "每一块都带上附加 key"),
             hint=L("Hand the extra keys (and the root seed) on to every block, not only to the first.",
                    "把附加 key（和根种子）传给每一块，而不只是第一块。"))
def extra_keys_reach_every_block(impl):
    return impl.chain_keys([1, 2, 3, 4], 2, TENANT_A)


@STAGE.check("s02.chain_keys",
             call=L("prompt list(range(60, 68)), block_size 4, chained 5 times in a row: no extra keys; salt "
                    "'tenant-a'; salt 'tenant-b'; root_seed=b'deployment-B'; no extra keys again",
                    "提示词 list(range(60, 68))，block_size 4，连续串链 5 次：不带附加 key；盐值 'tenant-a'；盐值 "
                    "'tenant-b'；root_seed=b'deployment-B'；再次不带附加 key"),
             title=L("the same prompt under other salts or another root seed, one call after another",
                     "同一个提示词换上别的盐值或根种子，连续调用"),
             hint=L("The keys of a prompt depend on its tokens, its extra keys and its root seed: hand the root_seed "
                    "given on to the hashing (not the module's ROOT_SEED), and never reuse the keys of an earlier call "
                    "for the same tokens under other extra keys or another root seed.",
                    "一个提示词的 key 取决于它的 token、附加 key 和根种子：把传进来的 root_seed 交给哈希（而不是模块里的 "
                    "ROOT_SEED）；同样的 token 换了附加 key 或根种子，绝不能沿用之前那次调用的 key。"))
def same_prompt_other_salts_in_one_sequence(impl):
    tokens = list(range(60, 68))
    calls = [{}, {"extra_keys": TENANT_A}, {"extra_keys": [("salt", "tenant-b")]}, {"root_seed": b"deployment-B"}, {}]
    runs = [impl.chain_keys(tokens, 4, **kw) for kw in calls]
    return record(distinct_among_first_four=len({tuple(r) for r in runs[:4]}), last_equals_first=runs[4] == runs[0],
                  last_keys=[r[-1] if r else None for r in runs])


@STAGE.check("s02.chain_keys", call="chain_keys([], 4), chain_keys([5, 5, 5], 4), chain_keys([7], 1)",
             title=L("no full block, and a single one-token block", "没有满块，以及只有一个单 token 的块"),
             hint=L("No full block means no key (an empty prompt, or one shorter than a block); a single full block "
                    "gets one key, hashed without a parent.",
                    "没有满块就没有 key（空提示词，或者比一个块还短的提示词）；只有一个满块时得到一个 key，它没有父 key。"))
def no_full_block_no_key(impl):
    return record(empty=impl.chain_keys([], 4), short=impl.chain_keys([5, 5, 5], 4), one_block=impl.chain_keys([7], 1))


@STAGE.check("s02.chain_keys",
             call=L("tokens = [5, 5, 5, 9, 5, 5]; a = chain_keys(tokens, 2, [('salt', '租户-甲'), ('lora', 'café')]); "
                    "a == chain_keys(tokens, 2, [('lora', 'café'), ('salt', '租户-甲')]) (values built at run time); "
                    "do a and chain_keys(tokens, 2) share a key?; chain_keys(tokens, 2, [('salt', 'Tenant-A')]) == "
                    "chain_keys(tokens, 2, [('salt', 'tenant-a')])",
                    "tokens = [5, 5, 5, 9, 5, 5]；a = chain_keys(tokens, 2, [('salt', '租户-甲'), ('lora', 'café')])；"
                    "a == chain_keys(tokens, 2, [('lora', 'café'), ('salt', '租户-甲')])（值在运行时拼出）；"
                    "a 和 chain_keys(tokens, 2) 有没有相同的 key？chain_keys(tokens, 2, [('salt', 'Tenant-A')]) == "
                    "chain_keys(tokens, 2, [('salt', 'tenant-a')])"),
             title=L("Chinese and accented extra keys, in any order; case kept", "中文和带重音的附加 key，顺序任意；大小写保留"),
             hint=L("Hand the extra keys on as they are and let them be normalized (sorted, empty values dropped, "
                    "encoded as UTF-8): their order does not matter, any text is valid, and values that differ in "
                    "case are different.",
                    "把附加 key 原样传下去，交给规范化处理（排序、去掉空值、按 UTF-8 编码）：它们的顺序无关紧要，"
                    "任何文字都合法，只差大小写的值也是不同的值。"))
def non_ascii_extra_keys_in_any_order(impl):
    tokens = [5, 5, 5, 9, 5, 5]
    a = impl.chain_keys(tokens, 2, [("salt", "租户-甲"), ("lora", "café")])
    b = impl.chain_keys(tokens, 2, [("lora", "caf" + "é"), ("salt", "".join(["租户", "-甲"]))])
    plain_keys = impl.chain_keys(tokens, 2)
    upper = impl.chain_keys(tokens, 2, [("salt", "Tenant-A")])
    lower = impl.chain_keys(tokens, 2, [("salt", "tenant-a")])
    return record(keys=len(a), same_keys_in_any_order=a == b, shares_a_key_with_no_extra_keys=bool(set(a) & set(plain_keys)),
                  case_ignored=upper == lower)


# -- TODO 4: longest_cached_run -------------------------------------------------------------------
@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'a', b'b', b'c'], {b'a': 1, b'c': 3})",
             title=L("stops at the first miss", "在第一个未命中处停下"),
             hint=L("Stop at the first key that is missing: b'c' after the miss does not count.",
                    "遇到第一个缺失的 key 就停：未命中之后的 b'c' 不算。"))
def stops_at_first_miss(impl):
    return plain(impl.longest_cached_run([b"a", b"b", b"c"], {b"a": 1, b"c": 3}))


@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'a', b'b'], {b'a': 1, b'b': 2})",
             title=L("every key cached", "所有 key 都已缓存"),
             hint=L("When every key is cached, the run is all of them.", "所有 key 都在表里时，命中的就是全部。"))
def all_cached(impl):
    return plain(impl.longest_cached_run([b"a", b"b"], {b"a": 1, b"b": 2}))


@STAGE.check("s02.longest_cached_run", call="longest_cached_run([b'x', b'a'], {b'a': 1})",
             title=L("a miss on the first key", "第一个 key 就未命中"),
             hint=L("Count from the first key on: a miss on the first key means no hit at all (0), whatever follows.",
                    "从第一个 key 开始数：第一个 key 就未命中，说明一个也没命中（0），不管后面是什么。"))
def first_key_missing(impl):
    return plain(impl.longest_cached_run([b"x", b"a"], {b"a": 1}))


@STAGE.check("s02.longest_cached_run",
             call=L("k = lambda i: bytes([i]) * 4 (a new object per call); table = {k(0): 0, k(1): None, "
                    "k(2): '', k(3): False}; longest_cached_run([k(0), k(1), k(0), k(2), k(3), k(4), k(0)], table)",
                    "k = lambda i: bytes([i]) * 4（每次调用都得到一个新对象）；table = {k(0): 0, k(1): None, "
                    "k(2): '', k(3): False}；longest_cached_run([k(0), k(1), k(0), k(2), k(3), k(4), k(0)], table)"),
             title=L("the stored value does not matter; a repeated key counts again", "存的值无关紧要；重复的 key 照样计数"),
             hint=L("Ask whether the table holds each key (key in table), whatever it stores: 0, None, '' and False "
                    "are hits too. Count every leading key, a repeated one too, up to the first miss.",
                    "问的是表里有没有这个 key（key in table），不管它存的是什么：0、None、'' 和 False 也都算命中。"
                    "开头的每个 key 都要数，重复的也算，一直数到第一个未命中为止。"))
def stored_value_does_not_matter(impl):
    def k(i):  # equal keys built at run time are equal, not the same object
        return bytes([i]) * 4

    table = {k(0): 0, k(1): None, k(2): "", k(3): False}
    return plain(impl.longest_cached_run([k(0), k(1), k(0), k(2), k(3), k(4), k(0)], table))


@STAGE.check("s02.longest_cached_run", call="longest_cached_run([], {b'a': 1}), longest_cached_run([b'a'], {})",
             title=L("no keys, and an empty table", "没有 key，以及空表"),
             hint=L("No keys, or an empty table, give a run of 0 (an int).", "没有 key 或者表为空时，结果都是 0（int）。"))
def no_keys_or_empty_table(impl):
    return plain(record(no_keys=attempt(lambda: impl.longest_cached_run([], {b"a": 1})),
                        empty_table=attempt(lambda: impl.longest_cached_run([b"a"], {}))))


@STAGE.check("s02.longest_cached_run",
             call=L("6,000 runs of 6 keys against a table of 60,000 keys, then a run of 6,000 hits 15 times: "
                    "within 2 s of CPU?",
                    "在一张 60,000 个 key 的表上查 6,000 组、每组 6 个 key，再把一段 6,000 个命中的 key 查 15 次："
                    "能否在 2 秒 CPU 时间内完成？"),
             title=L("the cost grows with the run, not with the table", "开销随命中长度增长，而不随表的大小增长"),
             hint=L("Look each key up in the table directly (one membership test per key, in order, each key "
                    "once): never copy, convert or scan the table, and never re-check the keys already counted.",
                    "直接在表里查每个 key（按顺序，每个 key 只做一次成员测试）：绝不复制、转换或扫描整张表，也不要"
                    "重复检查已经数过的 key。"))
def lookups_stay_cheap(impl):
    table = {i.to_bytes(8, "big"): i + 1 for i in range(60_000)}
    runs = [[(j * 7 + k).to_bytes(8, "big") for k in range(5)] + [b"absent!!"] for j in range(6_000)]
    long_run = [i.to_bytes(8, "big") for i in range(6_000)] + [b"absent!!"]
    calls = [lambda keys=keys: impl.longest_cached_run(keys, table) for keys in runs]
    calls += [lambda: impl.longest_cached_run(long_run, table)] * 15
    results: list = []
    fast = within_budget(lambda i: results.append(calls[i]()), len(calls), 2.0, batch=1)
    return record(within_budget=fast, results=sorted(set(plain(results))) if fast else None)

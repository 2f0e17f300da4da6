"""Stage 1 spec and public checks: longest-prefix match (the seed exercise's contract).

Everything a learner reads here exists in English and Chinese (``L(en, zh)``): titles, contracts,
hint tiers, check hints, the quiz. Contracts state what to set or return and the invariant, never
code; hint tiers go from the idea (1) over the approach (2) to a skeleton with blanks (3).
"""
from __future__ import annotations

from autograder.checks.common import attempt, plain, raised, record
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s01",
    title=L("Prefix cache matching and reuse", "前缀缓存的匹配与复用"),
    subtitle="前缀缓存的匹配与复用",
    summary=L("longest-prefix match: normalize, register, match, split, the reuse ledger",
              "最长前缀匹配：规范化、登记、匹配、拆分、复用账本"),
    minutes=45,
    todos=[
        Todo("s01.normalize", 1, target="PrefixCacheManager._normalize", points=2,
             title=L("normalize a token sequence", "规范化 token 序列"),
             contract=L(
                 "Return a new list of the given tokens,\n"
                 "in their original order, whatever iterable came in (a list, a tuple, a generator).\n"
                 "Raise TypeError as soon as one token is not an int.\n"
                 "Invariant: the caller's sequence is never returned itself and never changed.",
                 "返回一个新的 list，按原顺序装着传入的 token；\n"
                 "传入的可能是 list、tuple，也可能是生成器。\n"
                 "只要有一个 token 不是 int，就抛出 TypeError。\n"
                 "不变量：不能把调用者的序列原样返回，也不能修改它。"),
             hints=(
                 L("Every later method compares token sequences, so each one first turns its input into one trusted "
                   "form: a fresh list of ints. A bad token must be stopped here, before it reaches the index.",
                   "后面的每个方法都要比较 token 序列，所以它们都先把输入变成同一种可靠的形式：一个全新的 int 列表。"
                   "坏 token 要在这里拦下，不能让它进入索引。"),
                 L("Copy the input into a new list first (a generator can be read only once), then walk over the "
                   "copy and check the type of every token; return the copy.",
                   "先把输入复制成一个新列表（生成器只能读一遍），再遍历这个副本，逐个检查 token 的类型；最后返回副本。"),
                 L("normalized = list(tokens)\n"
                   "for token in normalized:\n"
                   "    if ___:\n"
                   "        raise TypeError(...)\n"
                   "return normalized",
                   "normalized = list(tokens)\n"
                   "for token in normalized:\n"
                   "    if ___:\n"
                   "        raise TypeError(...)\n"
                   "return normalized"))),
        Todo("s01.add_prefix", 2, target="PrefixCacheManager.add_prefix", points=2,
             title=L("register a shared prefix", "登记共享前缀"),
             contract=L(
                 "Set `prefix` to the normalized tokens as a tuple,\n"
                 "so that a list, a tuple and a generator holding the same tokens are the same prefix.\n"
                 "Refuse an empty prefix with ValueError.\n"
                 "Invariant: validate before anything is stored; the line after your code stores the prefix\n"
                 "unless it is registered already.",
                 "把规范化后的 token 转成 tuple，赋给 `prefix`；\n"
                 "这样装着相同 token 的 list、tuple 和生成器就是同一个前缀。空前缀要用 ValueError 拒绝。\n"
                 "不变量：先校验、再存储（你的代码后面那一行会在 `prefix` 尚未登记时把它存进去）。"),
             hints=(
                 L("Registered prefixes are compared with ==, and a list never equals a tuple: store one canonical, "
                   "immutable form of every prefix.",
                   "已登记的前缀之间用 == 比较，而 list 永远不等于 tuple：每个前缀都要存成同一种规范的、不可变的形式。"),
                 L("Let TODO 1 validate and copy the tokens, turn the result into a tuple, and raise on an empty one "
                   "before the append that follows your lines.",
                   "先让 TODO 1 校验并复制 token，再把结果转成 tuple；如果它是空的，就在你代码后面的 append 之前抛出异常。"),
                 L("prefix = tuple(___)\n"
                   "if ___:\n"
                   "    raise ValueError(...)",
                   "prefix = tuple(___)\n"
                   "if ___:\n"
                   "    raise ValueError(...)"))),
        Todo("s01.match_prefix", 3, target="PrefixCacheManager.match_prefix", points=3,
             title=L("longest prefix match", "最长前缀匹配"),
             contract=L(
                 "Set `is_match` to whether `cached_prefix` is exactly\n"
                 "the start of the prompt: its first token equals the prompt's token 0, its second equals\n"
                 "token 1, and so on to its last token.\n"
                 "Tokens are compared as whole integer ids: equal tokens in the middle of the prompt never\n"
                 "count, and neither does a prefix that merely looks like the prompt's start when written as\n"
                 "text (a prefix 1, 2 never matches a prompt 1, 23, ...).",
                 "把“`cached_prefix` 是否恰好就是提示词的开头”赋给 `is_match`：\n"
                 "前缀的每个 token 都等于提示词同一位置上的 token（前缀第 0 个对提示词第 0 个，第 1 个对第 1 个，\n"
                 "依此类推），一直比到前缀的最后一个 token。\n"
                 "token 按完整的整数 id 比较：提示词中间出现相同的 token 不算；写成文本后“看起来像”开头也不算\n"
                 "（前缀 1, 2 绝不能匹配提示词 1, 23, ...）。"),
             hints=(
                 L("The KV of a token depends on every token before it, so a registered prefix helps only if it is "
                   "exactly the start of the prompt, id for id.",
                   "一个 token 的 KV 取决于它前面的所有 token，所以已登记的前缀只有在逐个 id 都等于提示词开头时才有用。"),
                 L("Take as many tokens from the start of the prompt as the prefix has, and compare the two as "
                   "sequences of ints of the same type (tuple with tuple). Never turn them into strings: the digits "
                   "of 1, 23 and of 12, 3 read the same.",
                   "从提示词开头取出和前缀一样多的 token，把两者当作同类型的整数序列来比较（tuple 对 tuple）。"
                   "不要转成字符串：1, 23 和 12, 3 拼起来的数字是一样的。"),
                 L("# compare like with like: cached_prefix is a tuple of tokens\n"
                   "is_match = ___ == cached_prefix",
                   "# 比较的双方要同类：cached_prefix 是 token 组成的 tuple\n"
                   "is_match = ___ == cached_prefix"))),
        Todo("s01.split_prompt", 4, target="PrefixCacheManager.split_prompt", points=2,
             title=L("split a prompt into reusable prefix and suffix", "把提示词拆成可复用前缀和后缀"),
             contract=L(
                 "Cut the prompt at `hit_len`:\n"
                 "`reusable_prefix` holds its first `hit_len` tokens and `suffix` the rest, both as lists.\n"
                 "Invariant: the two put together give back the whole prompt, and the suffix (what still\n"
                 "needs prefill) starts at the first token the cache does not cover.",
                 "在 `hit_len` 处把提示词切开：\n"
                 "`reusable_prefix` 是前 `hit_len` 个 token，`suffix` 是剩下的部分，两者都是 list。\n"
                 "不变量：两段拼起来就是完整的提示词；后缀（仍需 prefill 的部分）从缓存覆盖不到的第一个 token 开始。"),
             hints=(
                 L("Everything before the hit length comes from the cache; everything from there on still needs "
                   "prefill.",
                   "命中长度之前的部分来自缓存；从那里往后的部分仍然需要 prefill。"),
                 L("Two slices of the normalized prompt, cut at the same index: no token may be lost or counted twice.",
                   "对规范化后的提示词切两刀，位置相同：不能丢掉任何 token，也不能重复计算。"),
                 L("reusable_prefix = prompt[:___]\n"
                   "suffix = prompt[___:]",
                   "reusable_prefix = prompt[:___]\n"
                   "suffix = prompt[___:]"))),
        Todo("s01.cache_stats", 5, target="PrefixCacheManager.cache_stats", points=2,
             title=L("the reuse ledger", "复用账本"),
             contract=L(
                 "Set the three numbers of the ledger:\n"
                 "`hit_tokens` is the longest match, `uncached_tokens` the tokens still to prefill, and\n"
                 "`reuse_ratio` the hit tokens over the prompt's length, rounded to 4 decimals (0.0 for an\n"
                 "empty prompt). Invariant: hit and uncached tokens add up to the prompt's length.",
                 "填好账本的三个数：\n"
                 "`hit_tokens` 是最长匹配的长度，`uncached_tokens` 是仍需 prefill 的 token 数，\n"
                 "`reuse_ratio` 是命中 token 数除以提示词长度，保留 4 位小数（空提示词为 0.0）。\n"
                 "不变量：命中数加未命中数等于提示词长度。"),
             hints=(
                 L("The ledger says what the cache saved on this prompt: hits and misses together are the whole "
                   "prompt.",
                   "账本说明缓存在这个提示词上省下了多少：命中和未命中加起来就是整个提示词。"),
                 L("Ask TODO 3 for the hit, subtract it from the length, and guard the division against an empty "
                   "prompt; round the ratio to 4 decimals.",
                   "向 TODO 3 要命中长度，用总长度减去它；除法前要防住空提示词；复用率保留 4 位小数。"),
                 L("hit_tokens = ___\n"
                   "uncached_tokens = ___\n"
                   "reuse_ratio = round(___, 4) if prompt else 0.0",
                   "hit_tokens = ___\n"
                   "uncached_tokens = ___\n"
                   "reuse_ratio = round(___, 4) if prompt else 0.0"))),
    ],
    quiz=Quiz(number=6, points=1, questions=(
        Question("q1", L("Registered prefixes: [1, 2, 3] and [1, 2, 3, 4, 5]. What does match_prefix return for the "
                         "prompt [1, 2, 3, 4, 9]?",
                         "已登记的前缀是 [1, 2, 3] 和 [1, 2, 3, 4, 5]。对提示词 [1, 2, 3, 4, 9]，match_prefix 返回多少？"),
                 L("This manager reuses whole registered prefixes only: a prefix counts when all of its tokens match.",
                   "这个管理器只复用完整的已登记前缀：一个前缀的所有 token 都对上了才算数。"),
                 choices=(L("5", "5"), L("4", "4"), L("3", "3"))),
        Question("q2", L("Registered prefix: [1, 2]. How many tokens of the prompt [1, 23, 5] hit?",
                         "已登记的前缀是 [1, 2]。提示词 [1, 23, 5] 有多少个 token 命中？"),
                 L("Tokens are whole ids. Written as text, \"1 2\" is the start of \"1 23 5\", but token 23 is not "
                   "token 2.",
                   "token 是完整的 id。写成文本时 \"1 2\" 是 \"1 23 5\" 的开头，但 token 23 不是 token 2。"),
                 choices=(L("0", "0"), L("1", "1"), L("2", "2"))),
        Question("q3", L("Why can equal tokens in the middle of two prompts not reuse each other's KV?",
                         "为什么两个提示词中间相同的 token 不能互相复用 KV？"),
                 L("Think about what attention computes for a token: which other tokens does it look at?",
                   "想一想 attention 为一个 token 计算了什么：它会看哪些别的 token？"),
                 choices=(L("a prefix cache only stores the first few tokens of a prompt",
                            "前缀缓存只保存提示词最前面的几个 token"),
                          L("the KV of a token depends on every token before it",
                            "一个 token 的 KV 取决于它前面的所有 token"),
                          L("searching the middle of a prompt would be too slow", "在提示词中间查找太慢了"))),
        Question("q4", L("Which work does prefix caching not make cheaper?", "前缀缓存不能让哪部分工作变便宜？"),
                 L("The cache skips computing K and V for tokens it already holds. Which phase computes them?",
                   "缓存省掉的是已缓存 token 的 K、V 计算。是哪个阶段在计算它们？"),
                 choices=(L("prefill of the cached prefix", "对已缓存前缀做 prefill"),
                          L("decode: generating the answer token by token", "decode：逐个 token 生成回答"),
                          L("both of them", "两者都能变便宜"))),
        Question("q5", L("A 4,096-token system prompt is cached and a request appends 128 new tokens. What share of "
                         "the request's tokens still needs prefill? (2 decimals)",
                         "一段 4,096 个 token 的 system prompt 已缓存，某个请求在它后面追加了 128 个新 token。"
                         "这个请求的 token 中还有多大比例需要 prefill？（保留 2 位小数）"),
                 L("Only the suffix is prefilled: its length over the length of the whole request.",
                   "只有后缀需要 prefill：用后缀长度除以整个请求的长度。"),
                 decimals=2),
    )),
    time_limit_s=5,  # the reference needs ~0.1 s per TODO; an endless loop costs 5 s
    memory_limit_mb=512,
)


def seed_fixture(impl):
    """The seed exercise's fixture: [1,2,3], [1,2,9], then [1,2,3] again."""
    m = impl.PrefixCacheManager()
    m.add_prefix([1, 2, 3])
    m.add_prefix([1, 2, 9])
    m.add_prefix([1, 2, 3])
    return m


def outcome_and_state(action, m) -> dict:
    """Run ``action``; the exception it raised (or None) and ``cached_prefixes`` afterwards."""
    return record(raised=raised(action), cached_prefixes=m.cached_prefixes)


def split_record(result) -> dict:
    """``split_prompt``'s triple with its parts named."""
    prefix, suffix, hit = result
    return record(reusable_prefix=prefix, suffix=suffix, hit_len=hit)


def boundary_matches(impl, cases) -> list[dict]:
    """For each (prefix, prompt): a manager holding only ``prefix``, and the hit it reports."""
    out = []
    for prefix, prompt in cases:
        m = impl.PrefixCacheManager()
        m.add_prefix(prefix)
        out.append(record(prefix=prefix, prompt=prompt, hit=m.match_prefix(prompt)))
    return out


# -- TODO 1: _normalize -------------------------------------------------------------------------
@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize([3, 1, 3, 2, 1])", specificity=1,
             title=L("keeps every token in its order, repeats included", "保留每个 token 及其顺序，重复的也保留"),
             hint=L("Keep every token in the order it came, repeats included: a prompt's order is its meaning, so "
                    "never sort it or drop a repeated token.",
                    "按进来的顺序保留每个 token，重复的也要保留：提示词的顺序就是它的含义，不能排序，也不能去掉重复的 token。"))
def keeps_order(impl):
    return impl.PrefixCacheManager()._normalize([3, 1, 3, 2, 1])


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize((5, 6))", specificity=2,
             title=L("a tuple comes back as a list", "传入 tuple，返回 list"),
             hint=L("Return a list whatever container came in (here a tuple).",
                    "不管传进来的是什么容器（这里是 tuple），都要返回 list。"))
def tuple_becomes_list(impl):
    return impl.PrefixCacheManager()._normalize((5, 6))


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize([1, 'bad'])",
             title=L("a token that is not an int is refused", "不是 int 的 token 会被拒绝"),
             hint=L("Raise TypeError as soon as one token is not an int: check each token's type, never convert it "
                    "(int('bad') raises ValueError, and int(5.0) would hide a float).",
                    "只要有一个 token 不是 int，就抛出 TypeError：检查每个 token 的类型，不要转换它"
                    "（int('bad') 抛出的是 ValueError，int(5.0) 则会把浮点数掩盖过去）。"))
def rejects_string_token(impl):
    return impl.PrefixCacheManager()._normalize([1, "bad"])


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize([4, 5.0, 6])",
             title=L("a whole float is not a token either", "整数值的浮点数也不是 token"),
             hint=L("Check each token's type, never convert it: 5.0 is a float, not a token id, even though int(5.0) "
                    "is 5 (and int() would turn the text '5' into a token too). Raise TypeError.",
                    "检查每个 token 的类型，不要转换它：5.0 是浮点数，不是 token id，哪怕 int(5.0) 等于 5"
                    "（int() 还会把文本 '5' 也变成 token）。应该抛出 TypeError。"))
def rejects_whole_float(impl):
    return impl.PrefixCacheManager()._normalize([4, 5.0, 6])


@STAGE.check("s01.normalize", call="PrefixCacheManager()._normalize(t * t for t in (3, 1, 2))", specificity=1,
             title=L("a generator is read once", "生成器只能读一遍"),
             hint=L("A generator can be read only once: copy it into a list first, then check the tokens of the copy "
                    "(checking first and copying afterwards leaves nothing to copy).",
                    "生成器只能读一遍：先把它复制成 list，再检查副本里的 token（先检查、后复制，就什么也复制不到了）。"))
def generator_read_once(impl):
    return impl.PrefixCacheManager()._normalize(t * t for t in (3, 1, 2))


@STAGE.check("s01.normalize", specificity=1,
             call=L("given = [7, 7, 5]; out = _normalize(given); out is given, out, given",
                    "given = [7, 7, 5]；out = _normalize(given)；依次看 out is given、out 和调用后的 given"),
             title=L("a new list, the caller's left alone", "返回新列表，调用者的列表不动"),
             hint=L("Return a new list even when a list came in: the caller's list is never returned itself (a later "
                    "change to one would change the other) and never changed.",
                    "即使传进来的就是 list，也要返回一个新列表：不能把调用者的列表原样返回（否则改动其中一个，另一个也跟着变），"
                    "也不能修改它。"))
def returns_a_new_list(impl):
    given = [7, 7, 5]
    out = impl.PrefixCacheManager()._normalize(given)
    return record(same_object=out is given, returned=out, callers_list_after=given)


@STAGE.check("s01.normalize", call="_normalize([]), _normalize((42,))",
             title=L("no tokens, and a single token", "没有 token，以及只有一个 token"),
             hint=L("An empty sequence is valid and gives an empty list (refusing empty prefixes is TODO 2's job); "
                    "a single token gives a list of one.",
                    "空序列是合法的，结果是空列表（拒绝空前缀是 TODO 2 的事）；只有一个 token 时结果是只含它的列表。"))
def empty_and_one_token(impl):
    m = impl.PrefixCacheManager()
    return record(empty=attempt(lambda: m._normalize([])), one_token=attempt(lambda: m._normalize((42,))))


# -- TODO 2: add_prefix -------------------------------------------------------------------------
@STAGE.check("s01.add_prefix", call="add_prefix([1,2,3]); add_prefix([1,2,9]); add_prefix([1,2,3]); cached_prefixes",
             title=L("the seed's prefixes, stored once each as tuples", "基础示例的前缀：每个只存一次，存成 tuple"),
             hint=L("Store each prefix once, as a tuple, in the order it was first added.",
                    "每个前缀只存一次，存成 tuple，按第一次登记的顺序。"))
def seed_registration(impl):
    return seed_fixture(impl).cached_prefixes


@STAGE.check("s01.add_prefix", call="add_prefix([])",
             title=L("an empty prefix is refused", "空前缀会被拒绝"),
             hint=L("An empty prefix can never be reused: raise ValueError.",
                    "空前缀永远不可能被复用：抛出 ValueError。"))
def rejects_empty(impl):
    return impl.PrefixCacheManager().add_prefix([])


@STAGE.check("s01.add_prefix", call="add_prefix([1, 'bad']); cached_prefixes", specificity=1,
             title=L("a bad token stores nothing", "含坏 token 的前缀什么也不存"),
             hint=L("Normalize first: a bad token raises TypeError, and nothing may be stored.",
                    "先规范化：坏 token 会抛出 TypeError，而且什么都不能存进去。"))
def bad_token_stores_nothing(impl):
    m = impl.PrefixCacheManager()
    return outcome_and_state(lambda: m.add_prefix([1, "bad"]), m)


@STAGE.check("s01.add_prefix", specificity=1,
             call="add_prefix([300, 301]); add_prefix((300, 301)); add_prefix(t for t in (300, 301)); "
                  "add_prefix([301]); cached_prefixes",
             title=L("a list, a tuple and a generator of the same tokens are one prefix",
                     "装着相同 token 的 list、tuple 和生成器是同一个前缀"),
             hint=L("Turn what TODO 1 returns into a tuple: the same tokens then make the same prefix whatever "
                    "container brought them, and a generator, which can be read only once, is read by TODO 1 alone.",
                    "把 TODO 1 返回的结果转成 tuple：这样不管相同的 token 装在什么容器里，都是同一个前缀；"
                    "生成器只能读一遍，只能让 TODO 1 去读它。"))
def same_tokens_any_container(impl):
    m = impl.PrefixCacheManager()
    base = int("300")  # built at run time
    steps = [[base, base + 1], (base, base + 1), (t for t in (base, base + 1)), [base + 1]]
    return record(raised=[raised(lambda s=s: m.add_prefix(s)) for s in steps], cached_prefixes=m.cached_prefixes)


# -- TODO 3: match_prefix -----------------------------------------------------------------------
@STAGE.check("s01.match_prefix", call=L("seed fixture; match_prefix([1, 2, 3, 9])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；match_prefix([1, 2, 3, 9])"),
             title=L("a registered prefix at the start of the prompt", "提示词开头就是一个已登记前缀"),
             hint=L("[1, 2, 3] is exactly the beginning of the prompt, so 3 tokens hit.",
                    "[1, 2, 3] 恰好就是提示词的开头，所以命中 3 个 token。"))
def seed_match_3(impl):
    return seed_fixture(impl).match_prefix([1, 2, 3, 9])


@STAGE.check("s01.match_prefix", call=L("seed fixture; match_prefix([1, 2, 9, 8])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；match_prefix([1, 2, 9, 8])"),
             title=L("the second registered prefix matches too", "第二个已登记前缀也能匹配"),
             hint=L("Try every registered prefix, not only the first one.",
                    "每个已登记的前缀都要试，不能只看第一个。"))
def seed_match_other_prefix(impl):
    return seed_fixture(impl).match_prefix([1, 2, 9, 8])


@STAGE.check("s01.match_prefix", call=L("seed fixture; match_prefix([1, 2, 0])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；match_prefix([1, 2, 0])"),
             title=L("a prefix that matches only partly gives nothing", "只匹配了一部分的前缀不算"),
             hint=L("A prefix matches only when all of its tokens equal the prompt's first tokens.",
                    "只有前缀的所有 token 都等于提示词开头的 token，才算匹配。"))
def seed_no_match(impl):
    return seed_fixture(impl).match_prefix([1, 2, 0])


@STAGE.check("s01.match_prefix", call="add_prefix([2, 3]); match_prefix([1, 2, 3])", specificity=1,
             title=L("equal tokens in the middle do not count", "中间相同的 token 不算"),
             hint=L("Only the start of the prompt counts: equal tokens in the middle or at the end do not. Compare "
                    "the prefix with the prompt's tokens from position 0 on.",
                    "只有提示词的开头才算：中间或末尾相同的 token 都不算。要拿前缀和提示词从第 0 个位置起的 token 比较。"))
def middle_does_not_count(impl):
    m = impl.PrefixCacheManager()
    m.add_prefix([2, 3])
    return m.match_prefix([1, 2, 3])


@STAGE.check("s01.match_prefix",
             call=L("for each (prefix, prompt): add_prefix(prefix); match_prefix(prompt) with "
                    "([1, 2], [1, 23, 4]), ([1, 23], [12, 3, 5]), ([1, 2], [1, 2, 34])",
                    "对每一组 (prefix, prompt)：add_prefix(prefix)；match_prefix(prompt)，三组分别是 "
                    "([1, 2], [1, 23, 4])、([1, 23], [12, 3, 5])、([1, 2], [1, 2, 34])"),
             title=L("token boundaries: a prefix 1, 2 is not the start of 1, 23", "token 边界：1, 2 不是 1, 23 的开头"),
             hint=L("Compare token ids, not their text: as strings, \"1 2\" starts \"1 23\" and \"123\" equals "
                    "\"12\" + \"3\", but token 23 is not token 2.",
                    "比较的是 token id，不是它们的文本：写成字符串时 \"1 2\" 是 \"1 23\" 的开头，\"123\" 也等于 "
                    "\"12\" + \"3\"，但 token 23 不是 token 2。"))
def token_boundaries(impl):
    return boundary_matches(impl, [([1, 2], [1, 23, 4]), ([1, 23], [12, 3, 5]), ([1, 2], [1, 2, 34])])


@STAGE.check("s01.match_prefix", specificity=1,
             call=L("seed fixture; add_prefix([4]); match_prefix([1, 2, 9]), match_prefix([4]), match_prefix([])",
                    "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；add_prefix([4])；match_prefix([1, 2, 9])、"
                    "match_prefix([4])、match_prefix([])"),
             title=L("a prefix as long as the prompt, a one-token prompt, an empty prompt",
                     "和提示词一样长的前缀、只有一个 token 的提示词、空提示词"),
             hint=L("A prefix as long as the prompt matches when every token is equal: the whole prompt hits "
                    "(nothing needs to be left over). An empty prompt hits nothing.",
                    "和提示词一样长的前缀，只要每个 token 都相等就算匹配：整个提示词都命中（不需要剩下任何 token）。"
                    "空提示词什么也命中不了。"))
def whole_prompt_one_token_and_empty(impl):
    m = seed_fixture(impl)
    m.add_prefix([4])
    return record(whole_prompt=m.match_prefix([1, 2, 9]), one_token=m.match_prefix([4]), empty=m.match_prefix([]))


@STAGE.check("s01.match_prefix", specificity=1,
             call=L("seed fixture; match_prefix((1, 2, 9, 8)), match_prefix(t for t in [1, 2, 3, 3])",
                    "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；match_prefix((1, 2, 9, 8))、"
                    "match_prefix(t for t in [1, 2, 3, 3])"),
             title=L("a tuple or a generator as the prompt", "提示词是 tuple 或生成器"),
             hint=L("Compare with `prompt`, the list TODO 1 made, never with the caller's `prompt_tokens`: that may be "
                    "a tuple, or a generator that TODO 1 has already read to the end.",
                    "要和 `prompt`（TODO 1 生成的列表）比较，而不是调用者传进来的 `prompt_tokens`：它可能是 tuple，"
                    "也可能是一个已经被 TODO 1 读到头的生成器。"))
def any_iterable_prompt(impl):
    m = seed_fixture(impl)
    return record(tuple_prompt=attempt(lambda: m.match_prefix((1, 2, 9, 8))),
                  generator_prompt=attempt(lambda: m.match_prefix(t for t in [1, 2, 3, 3])))


@STAGE.check("s01.match_prefix",
             call="vocab = 50_000; add_prefix([vocab + i for i in (7, 1, 7)]); "
                  "match_prefix([vocab + i for i in (7, 1, 7, 2)]), match_prefix([vocab + i for i in (7, 1, 8)])",
             title=L("token ids above 256, built at run time", "运行时算出来的、大于 256 的 token id"),
             hint=L("Compare token ids by value (==), never by identity (is): two equal ids above 256 computed at run "
                    "time are usually two different objects (real vocabularies have tens of thousands of ids).",
                    "按值（==）比较 token id，绝不能按身份（is）比较：运行时算出来的两个相等的、大于 256 的 id，"
                    "通常是两个不同的对象（真实词表有好几万个 id）。"))
def large_ids_built_at_run_time(impl):
    vocab = int("50000")
    m = impl.PrefixCacheManager()
    m.add_prefix([vocab + i for i in (7, 1, 7)])
    return record(equal_ids=m.match_prefix([vocab + i for i in (7, 1, 7, 2)]),
                  last_id_differs=m.match_prefix([vocab + i for i in (7, 1, 8)]))


# -- TODO 4: split_prompt -----------------------------------------------------------------------
@STAGE.check("s01.split_prompt", call=L("seed fixture; split_prompt([1, 2, 3, 9])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；split_prompt([1, 2, 3, 9])"),
             title=L("the seed's split", "基础示例的拆分"),
             hint=L("The first hit_len tokens are the reusable prefix, the rest is the suffix; both are lists.",
                    "前 hit_len 个 token 是可复用前缀，其余是后缀；两者都是 list。"))
def seed_split(impl):
    return split_record(seed_fixture(impl).split_prompt([1, 2, 3, 9]))


@STAGE.check("s01.split_prompt", call=L("seed fixture; split_prompt([7, 8])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；split_prompt([7, 8])"),
             title=L("no hit: the whole prompt is the suffix", "没有命中：整个提示词都是后缀"),
             hint=L("With no hit, the reusable prefix is empty and the suffix is the whole prompt.",
                    "没有命中时，可复用前缀为空，后缀就是整个提示词。"))
def split_without_hit(impl):
    return split_record(seed_fixture(impl).split_prompt([7, 8]))


@STAGE.check("s01.split_prompt", call=L("seed fixture; split_prompt([1, 2, 3])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；split_prompt([1, 2, 3])"),
             title=L("a fully cached prompt leaves an empty suffix", "整个提示词都命中时后缀为空"),
             hint=L("When every token hits, nothing is left to prefill: the suffix is empty.",
                    "所有 token 都命中时，没有要 prefill 的内容：后缀为空。"))
def split_full_hit(impl):
    return split_record(seed_fixture(impl).split_prompt([1, 2, 3]))


@STAGE.check("s01.split_prompt",
             call=L("seed fixture; split_prompt((1, 2, 9, 9, 7)), split_prompt(t for t in [1, 2, 3, 3])",
                    "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；split_prompt((1, 2, 9, 9, 7))、"
                    "split_prompt(t for t in [1, 2, 3, 3])"),
             title=L("a tuple or a generator as the prompt: both parts are lists", "提示词是 tuple 或生成器：两部分都是 list"),
             hint=L("Cut `prompt`, the list TODO 1 made, never the caller's `prompt_tokens`: that may be a tuple, or "
                    "a generator already read to the end. Both parts are lists.",
                    "要切的是 `prompt`（TODO 1 生成的列表），而不是调用者传进来的 `prompt_tokens`：它可能是 tuple，"
                    "也可能是一个已经读到头的生成器。两部分都是 list。"))
def tuple_or_generator_gives_lists(impl):
    m = seed_fixture(impl)
    return record(from_tuple=attempt(lambda: split_record(m.split_prompt((1, 2, 9, 9, 7)))),
                  from_generator=attempt(lambda: split_record(m.split_prompt(t for t in [1, 2, 3, 3]))))


@STAGE.check("s01.split_prompt",
             call=L("seed fixture; split_prompt([]), split_prompt([5])",
                    "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；split_prompt([])、split_prompt([5])"),
             title=L("an empty prompt and a one-token prompt", "空提示词和只有一个 token 的提示词"),
             hint=L("An empty prompt splits into two empty lists; a one-token prompt that does not hit is all suffix.",
                    "空提示词拆成两个空列表；只有一个 token 且没有命中的提示词，整个都是后缀。"))
def empty_and_one_token_prompts(impl):
    m = seed_fixture(impl)
    return record(empty=split_record(m.split_prompt([])), one_token=split_record(m.split_prompt([5])))


# -- TODO 5: cache_stats ------------------------------------------------------------------------
@STAGE.check("s01.cache_stats", call=L("seed fixture; cache_stats([1, 2, 3, 9])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；cache_stats([1, 2, 3, 9])"),
             title=L("the seed's ledger", "基础示例的账本"),
             hint=L("3 of 4 tokens hit, 1 is left to prefill: the ratio is the hit tokens over all of them, 3 / 4 = "
                    "0.75 (a fraction, not a percentage).",
                    "4 个 token 命中了 3 个，剩 1 个要 prefill：复用率是命中数除以总数，3 / 4 = 0.75（是比例，不是百分数）。"))
def seed_stats(impl):
    return plain(seed_fixture(impl).cache_stats([1, 2, 3, 9]))


@STAGE.check("s01.cache_stats", call=L("seed fixture; cache_stats([])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；cache_stats([])"),
             title=L("an empty prompt", "空提示词"),
             hint=L("An empty prompt has 0 hit, 0 uncached tokens and ratio 0.0: never divide by zero.",
                    "空提示词命中 0 个、未命中 0 个、复用率 0.0：不能除以零。"))
def empty_prompt_stats(impl):
    return plain(seed_fixture(impl).cache_stats([]))


@STAGE.check("s01.cache_stats", call=L("seed fixture; cache_stats([5, 6])", "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；cache_stats([5, 6])"),
             title=L("no hit", "没有命中"),
             hint=L("No hit: every token is uncached and the ratio is 0.0.",
                    "没有命中：每个 token 都未命中，复用率是 0.0。"))
def no_hit_stats(impl):
    return plain(seed_fixture(impl).cache_stats([5, 6]))


@STAGE.check("s01.cache_stats",
             call=L("seed fixture; cache_stats([1, 2, 3, 5, 5, 5, 5]), cache_stats([1, 2, 9] + [8] * 6)",
                    "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；cache_stats([1, 2, 3, 5, 5, 5, 5])、"
                    "cache_stats([1, 2, 9] + [8] * 6)"),
             title=L("a ratio that needs rounding: 3 of 7 tokens", "需要舍入的复用率：7 个 token 命中 3 个"),
             hint=L("Round the ratio to 4 decimals (round to nearest, as round(x, 4) does): 3 / 7 is 0.4286, not "
                    "0.428571... and not 0.4285.",
                    "复用率保留 4 位小数（四舍五入到最近，和 round(x, 4) 一样）：3 / 7 是 0.4286，不是 0.428571...，"
                    "也不是 0.4285。"))
def ratio_rounded_to_4_decimals(impl):
    m = seed_fixture(impl)
    return plain([m.cache_stats([1, 2, 3, 5, 5, 5, 5]), m.cache_stats([1, 2, 9] + [8] * 6)])


@STAGE.check("s01.cache_stats",
             call=L("seed fixture; cache_stats([1, 2, 3]), cache_stats([7])",
                    "基础示例（依次登记 [1,2,3]、[1,2,9]、[1,2,3]）；cache_stats([1, 2, 3])、cache_stats([7])"),
             title=L("a fully cached prompt and a one-token prompt", "整个命中的提示词和只有一个 token 的提示词"),
             hint=L("A fully cached prompt has no uncached token and ratio 1.0; a single token that does not hit is "
                    "all uncached, ratio 0.0.",
                    "整个命中的提示词没有未命中的 token，复用率是 1.0；只有一个 token 且没有命中时，它就是未命中的，"
                    "复用率 0.0。"))
def full_hit_and_one_token(impl):
    m = seed_fixture(impl)
    return plain([m.cache_stats([1, 2, 3]), m.cache_stats([7])])

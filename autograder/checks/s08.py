"""Stage 8 spec and public checks: attacks on a shared prefix cache, and the defences.

Everything a learner reads here exists in English and Chinese (``L(en, zh)``). No check measures
time: TTFT samples are seeded synthetic numbers (:func:`ttft_samples`), so every verdict is the same
on every machine. Probes return plain data: labelled records, rounded floats, booleans, exception
types.
"""
from __future__ import annotations

import hashlib
import random
import unicodedata

from autograder.checks.common import attempt, plain, record
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s08",
    title=L("Attacks on a shared prefix cache", "共享前缀缓存的攻击与防御"),
    summary=L("attacks on a shared cache: key collisions (birthday search), a TTFT timing side channel "
              "(threshold, one-sided KS test), per-tenant salts and what isolation costs",
              "共享缓存上的攻击：key 碰撞（生日攻击搜索）、TTFT 计时侧信道（阈值、单侧 KS 检验）、"
              "按租户加盐以及隔离的代价"),
    minutes=75,
    todos=[
        Todo("s08.birthday_search", 1, target="birthday_search", points=3,
             title=L("a birthday search for two blocks with one key", "生日攻击搜索：找两个 key 相同的块"),
             contract=L(
                 "Take the candidates in order and return the triple\n"
                 "(earlier, later, tries) of the docstring as soon as a candidate's key equals the key of an\n"
                 "earlier, different block; tries counts every candidate taken, the colliding one included.\n"
                 "If the candidates run out, the code after this region returns None.\n"
                 "Invariants: the two blocks differ and share one key; a block sent again is not a collision;\n"
                 "each candidate's key is computed once, nothing after the collision is taken, and the time\n"
                 "grows linearly with the tries (thousands of them at 24 bits).",
                 "按顺序取候选块，一旦某个候选块的 key\n"
                 "等于前面某个*不同*块的 key，就返回 docstring 里说的三元组 (earlier, later, tries)。\n"
                 "tries 统计取过的每一个候选块，发生碰撞的那个也算。候选块取完还没找到时，本区域之后的\n"
                 "代码会返回 None。\n"
                 "不变量：两个块不同且 key 相同；同一个块再出现一次不算碰撞；每个候选块的 key 只算一次，\n"
                 "碰撞之后的候选块一个也不取，耗时随尝试次数线性增长（24 位时要试几千次）。"),
             hints=(
                 L("Any two blocks may collide, not just a new block and one fixed target: that is why about the "
                   "square root of the number of keys is enough (the birthday paradox). So remember every key seen "
                   "so far, not only the first or the last one.",
                   "任意两个块都可能碰撞，而不只是新块和某一个固定目标碰撞：所以大约试到 key 总数的平方根就够了"
                   "（生日悖论）。因此要记住到目前为止见过的每一个 key，而不只是第一个或最后一个。"),
                 L("Keep a dictionary from each key to the first block that had it. For every candidate: count it, "
                   "compute its key once, look the key up. Unknown key: remember the block. Known key held by a "
                   "different block: that is the collision. Known key held by the same block: just go on.",
                   "用一个字典记录每个 key 对应的第一个块。对每个候选块：先计数，再算一次它的 key，然后查字典。"
                   "key 没见过：记下这个块；key 见过且对应的是另一个块：这就是碰撞；key 见过且是同一个块："
                   "继续往下找。"),
                 L("for block in candidates:\n"
                   "    tries += 1\n"
                   "    key = key_of(block)\n"
                   "    earlier = seen.get(key)\n"
                   "    if earlier is None:\n"
                   "        ___\n"
                   "    elif ___:\n"
                   "        return earlier, block, tries",
                   "for block in candidates:\n"
                   "    tries += 1\n"
                   "    key = key_of(block)\n"
                   "    earlier = seen.get(key)\n"
                   "    if earlier is None:\n"
                   "        ___\n"
                   "    elif ___:\n"
                   "        return earlier, block, tries"),
             )),
        Todo("s08.fit_threshold", 2, target="fit_threshold", points=3,
             title=L("a hit/miss threshold from calibration samples", "用校准样本定出命中/未命中的阈值"),
             contract=L(
                 "Set best to the candidate threshold of the docstring\n"
                 "(a midpoint of two neighbouring distinct sample values) that misclassifies the fewest\n"
                 "calibration samples; on a tie, the smallest one.\n"
                 "An error is a hit sample at or above the threshold, or a miss sample below it. Count errors\n"
                 "as whole samples, hits and misses alike (not as a rate per class). Quadratic time in the\n"
                 "number of samples is fine.",
                 "把 best 设为 docstring 里定义的候选阈值\n"
                 "（相邻两个不同样本值的中点）中，在校准样本上判错最少的那个；判错一样多时取最小的。\n"
                 "判错是指命中样本大于等于阈值，或者未命中样本小于阈值。按样本个数数错误，命中和未命中\n"
                 "一视同仁（不要按类别算比例）。耗时是样本数的平方级也没关系。"),
             hints=(
                 L("Only the order of the samples matters: every threshold between the same two neighbouring "
                   "values labels every sample the same way, so the midpoints of neighbouring distinct values are "
                   "all the candidates there are.",
                   "只有样本的大小顺序要紧：落在同一对相邻取值之间的阈值，对每个样本的判定都一样，所以相邻"
                   "不同取值的中点就是全部候选。"),
                 L("Walk over the neighbouring pairs a < b of the sorted distinct values; for t = (a + b) / 2 count "
                   "the hits at or above t plus the misses below t, and keep t only when its count is strictly "
                   "smaller than the best so far (strictly: then the smallest t wins a tie).",
                   "遍历排好序的不同取值里每一对相邻的 a < b；对 t = (a + b) / 2，数出大于等于 t 的命中样本和"
                   "小于 t 的未命中样本，只有当这个数严格小于目前最好的结果时才换成 t（严格小于：这样判错一样"
                   "多时留下的是最小的 t）。"),
                 L("best, best_errors = values[0], len(hit) + len(miss) + 1\n"
                   "for a, b in zip(values, values[1:]):\n"
                   "    t = ___\n"
                   "    # an error: a hit at or above t, or a miss below t\n"
                   "    errors = ___\n"
                   "    if ___:\n"
                   "        best, best_errors = t, errors",
                   "best, best_errors = values[0], len(hit) + len(miss) + 1\n"
                   "for a, b in zip(values, values[1:]):\n"
                   "    t = ___\n"
                   "    # 判错：命中样本 >= t，或者未命中样本 < t\n"
                   "    errors = ___\n"
                   "    if ___:\n"
                   "        best, best_errors = t, errors"),
             )),
        Todo("s08.detect_sharing", 3, target="detect_sharing", points=2,
             title=L("the one-sided KS audit of Gu et al.", "Gu 等人的单侧 KS 审计"),
             contract=L(
                 "Set statistic and p_value to those of SciPy's\n"
                 "two-sample Kolmogorov-Smirnov test of the hit samples against the miss samples: one-sided,\n"
                 "with the alternative that the empirical CDF of hit lies above that of miss (hits are\n"
                 "faster), by SciPy's default method. Set detected to whether that p-value is below alpha.\n"
                 "Invariant: hits that are slower than misses are never reported as sharing.",
                 "把 statistic 和 p_value 设为 SciPy\n"
                 "两样本 Kolmogorov-Smirnov 检验（命中样本对未命中样本）的结果：单侧检验，备择假设是命中样本\n"
                 "的经验 CDF 位于未命中样本的上方（命中更快），用 SciPy 的默认方法计算。detected 设为这个\n"
                 "p 值是否小于 alpha。\n"
                 "不变量：命中比未命中慢时，绝不报告为共享。"),
             hints=(
                 L("The question is one-sided: a shared cache shows up only as hits being *faster*. The CDF of "
                   "faster samples rises earlier, so it lies above the other one.",
                   "这个问题是单侧的：共享缓存只会表现为命中*更快*。更快的样本，CDF 升得更早，所以位于另一条 "
                   "CDF 的上方。"),
                 L("Call SciPy's ks_2samp with the hit samples first and the alternative that says 'the first "
                   "CDF is greater'; leave the method alone. Its result carries the statistic and the p-value; "
                   "compare the p-value (not the statistic) with alpha.",
                   "调用 SciPy 的 ks_2samp，命中样本放在前面，备择假设选“第一个 CDF 更大”；method 用默认值。"
                   "结果里有统计量和 p 值；拿 p 值（不是统计量）和 alpha 比较。"),
                 L("result = stats.ks_2samp(hit, miss, alternative=___)\n"
                   "statistic, p_value = result.statistic, result.pvalue\n"
                   "detected = ___",
                   "result = stats.ks_2samp(hit, miss, alternative=___)\n"
                   "statistic, p_value = result.statistic, result.pvalue\n"
                   "detected = ___"),
             )),
        Todo("s08.tenant_extra_keys", 4, target="tenant_extra_keys", points=3,
             title=L("per-tenant salts in the block keys", "在块 key 里按租户加盐"),
             contract=L(
                 "Set keys to a new list: the request's extra keys\n"
                 "(none when it has none) plus one pair whose kind is TENANT_KIND and whose value is the\n"
                 "tenant. Raise ValueError when the tenant is empty, or when the request's extra keys already\n"
                 "hold a pair of that kind.\n"
                 "Invariants: two tenants sending the same prompt get different block keys; one tenant sending\n"
                 "it again gets the same keys, in every process; requests of one tenant with different extra\n"
                 "keys stay apart; the caller's extra keys are left as they were.",
                 "把 keys 设为一个新列表：请求自己的附加 key\n"
                 "（没有就为空），再加上一对 key——种类是 TENANT_KIND，值是租户名。租户为空，或者请求的\n"
                 "附加 key 里已经有这种种类的一对时，抛出 ValueError。\n"
                 "不变量：两个租户发送同一个提示词，块 key 不同；同一个租户再发一次，key 相同（在任何进程里\n"
                 "都一样）；同一租户里附加 key 不同的请求互不共享；调用者传入的附加 key 保持原样。"),
             hints=(
                 L("Stage 2's chained keys already mix the extra keys (a LoRA adapter, a cache salt) into every "
                   "block key. A per-tenant salt is one more extra key: the hash then keeps tenants apart for you.",
                   "第 2 阶段的链式 key 已经把附加 key（LoRA 适配器、缓存盐值）混进了每个块 key。按租户加盐"
                   "就是再多加一个附加 key：哈希会替你把不同租户分开。"),
                 L("Validate first (an empty tenant; a request that already names a tenant), then copy the "
                   "request's extra keys into a new list and append the tenant's own pair, with TENANT_KIND as "
                   "its kind (not 'salt': a tenant called x must not look like a salt x).",
                   "先做校验（租户为空；请求自己写了租户），再把请求的附加 key 复制到一个新列表里，并追加租户"
                   "自己的一对 key，种类用 TENANT_KIND（不要用 'salt'：名叫 x 的租户不能和值为 x 的盐值混淆）。"),
                 L("if ___:\n"
                   "    raise ValueError(...)\n"
                   "keys = list(extra_keys or ())\n"
                   "if ___:\n"
                   "    raise ValueError(...)\n"
                   "keys.append(___)",
                   "if ___:\n"
                   "    raise ValueError(...)\n"
                   "keys = list(extra_keys or ())\n"
                   "if ___:\n"
                   "    raise ValueError(...)\n"
                   "keys.append(___)"),
             )),
    ],
    quiz=Quiz(number=5, points=2, questions=(
        Question("q1", L("Block keys cut to 20 bits (about a million different keys). About how many random blocks "
                         "does a birthday search take until two of them share a key?",
                         "块 key 截断到 20 位（大约一百万种不同的 key）。生日攻击搜索大约要试多少个随机块，"
                         "才会有两个块的 key 相同？"),
                 L("Every pair of blocks tried so far is a chance to collide, and the number of pairs grows "
                   "with the square of the number of blocks.",
                   "已经试过的块里，每一对都有机会碰撞，而块对的数量随块数的平方增长。"),
                 choices=(L("about 20", "大约 20 个"), L("about 1,300", "大约 1,300 个"),
                          L("about 500,000", "大约 500,000 个"), L("about 1,000,000", "大约 1,000,000 个"))),
        Question("q2", L("Two prompts of 4 full blocks (plus a short tail) differ only in their first block, and "
                         "the truncated keys of those first blocks collide. The engine looks blocks up by truncated "
                         "chained keys. How many full blocks of the second prompt hit?",
                         "两个提示词各有 4 个满块（外加一个短尾巴），只有第一个块不同，而两者第一个块截断后的 "
                         "key 恰好碰撞。引擎用截断的链式 key 来查缓存。第二个提示词有几个满块会命中？"),
                 L("A chained key sees its parent only through the parent's key, never through its tokens.",
                   "链式 key 只通过父 key 看到前面的内容，看不到前面块里的 token。"), decimals=0),
        Question("q3", L("The attacker's prompt shares its first 10 tokens with the victim's; the block size is 16. "
                         "What ROC AUC do you expect from the timing attack (0.5 = chance, 1.0 = perfect)?",
                         "攻击者的提示词和受害者的前 10 个 token 相同，块大小是 16。你预计计时攻击的 ROC AUC "
                         "是多少（0.5 = 瞎猜，1.0 = 完美）？"),
                 L("Which blocks can a prefix cache look up and reuse?", "前缀缓存能查找、复用的是哪些块？"),
                 decimals=1),
        Question("q4", L("The cache salts every block key per tenant. The victim's prompt is cached. Which request "
                         "still hits those blocks?",
                         "缓存按租户给每个块 key 加盐，受害者的提示词已经在缓存里。下面哪个请求还能命中这些块？"),
                 L("A salt changes the key of every block for one tenant, and only for that tenant.",
                   "盐值会改变某个租户的每一个块 key，而且只影响这个租户。"),
                 choices=(L("the attacker, sending the victim's exact prompt", "攻击者发送和受害者一模一样的提示词"),
                          L("the victim, sending its own prompt again", "受害者再次发送自己的提示词"),
                          L("both", "两者都能"), L("neither", "两者都不能"))),
        Question("q5", L("A remote attacker can only time TTFT with a wall clock, across a network. Compared with "
                         "this notebook's CPU-time measurement, what changes?",
                         "远程攻击者只能隔着网络，用墙钟时间测 TTFT。和本笔记本用 CPU 时间测量相比，会有什么变化？"),
                 L("A hit skips the same prefill work whoever times it; what differs is what else the clock "
                   "picks up along the way.",
                   "不管谁来计时，命中省掉的 prefill 工作都一样；不同的是时钟顺带还测进了哪些别的东西。"),
                 choices=(L("the hit still saves the same work, but the noise grows: the attacker needs more "
                            "samples per guess, or longer shared prefixes",
                            "命中省下的工作没变，但噪声变大了：攻击者每个猜测要多测几次，或者需要更长的共享前缀"),
                          L("the signal disappears: network latency hides prefill time completely",
                            "信号消失了：网络延迟把 prefill 时间完全盖住了"),
                          L("nothing: both clocks measure the same thing", "没有变化：两种时钟测的是同一个东西"))),
    )),
    time_limit_s=20,
    memory_limit_mb=2048,  # NumPy + SciPy map several hundred MB of address space
    preload=["scipy.stats"],
)

ATOL = 1e-9  # thresholds and p-values: (a + b) / 2 and a + (b - a) / 2 may round differently


# -- helpers shared with the hidden checks ----------------------------------------------------------
def sum_key(block) -> bytes:
    """A deliberately tiny key: the sum of the tokens mod 5 (collisions are easy to predict by hand)."""
    return bytes([sum(block) % 5])


def truncated_first_block_key(bits: int):
    """Stage 2's key of a first block, cut to its top ``bits`` bits (what :mod:`solutions.weak_keys`
    does, written here so the checks need neither torch nor the given modules)."""
    from solutions.s02_block_hash import hash_block

    def key_of(block) -> bytes:
        top = int.from_bytes(hash_block(None, block), "big") >> (256 - bits)
        return top.to_bytes((bits + 7) // 8, "big")

    return key_of


def random_blocks(seed: int, block_size: int = 8, vocab: int = 512):
    """An endless seeded stream of random blocks (tuples)."""
    rng = random.Random(f"check-blocks/{seed}")
    while True:
        yield tuple(rng.randrange(vocab) for _ in range(block_size))


def ttft_samples(seed: int, n_hit: int, n_miss: int, *, hit_ms: float = 2.0, miss_ms: float = 6.0,
                 spread: float = 0.25) -> tuple[list[float], list[float]]:
    """Synthetic TTFTs in seconds: log-normal around ``hit_ms`` / ``miss_ms``, rounded to the
    microsecond (so some values repeat, as clock readings do)."""
    rng = random.Random(f"ttft/{seed}")

    def draw(ms: float, n: int) -> list[float]:
        return [round(ms * 1e-3 * rng.lognormvariate(0.0, spread), 6) for _ in range(n)]

    return draw(hit_ms, n_hit), draw(miss_ms, n_miss)


def digest(keys) -> str:
    """A short fingerprint of a list of byte keys (equal lists, equal fingerprints)."""
    return hashlib.sha256(b"".join(keys)).hexdigest()[:16]


def labelled(result, *names: str):
    """A result tuple as a record with field ``names``; anything else unchanged (so a wrong type or
    length is shown as it is, and differs from the reference's record)."""
    if type(result) is tuple and len(result) == len(names):
        return record(**plain(dict(zip(names, result))))  # numpy's (SciPy's) scalars are numbers too
    return result


def found(result):
    """What :func:`birthday_search` returned, labelled."""
    return labelled(result, "earlier", "later", "tries")


def ks(result):
    """What :func:`detect_sharing` returned, labelled."""
    return labelled(result, "statistic", "p_value", "detected")


def pool_hits(impl, sends):
    """Admit + commit + release each ``(label, tenant, tokens, extra keys)`` in order through a fresh
    stage-3 ``BlockPool(64, 4)``, keyed with ``tenant_extra_keys(tenant, extra keys)``; the hit tokens
    of each, as a record by label."""
    from solutions.s03_block_pool import BlockPool

    pool = BlockPool(64, 4)
    out = {}
    for i, (label, tenant, tokens, extra) in enumerate(sends):
        admission = pool.admit(f"r{i}", tokens, impl.tenant_extra_keys(tenant, extra))
        pool.commit(f"r{i}")
        pool.release(f"r{i}")
        out[label] = admission.hit_tokens
    return record(**out)


PROMPT = list(range(100, 117))  # 4 full blocks of 4 tokens + 1 (pool_hits uses blocks of 4)


# -- TODO 1: birthday_search ------------------------------------------------------------------------
@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(1, 2), (0, 1), (2, 2), (4, 4), (1, 1)])",
             title=L("a collision found by hand", "一个手算得出的碰撞"),
             hint=L("Remember the first block seen under each key; the first later block with a known key "
                    "collides with it.",
                    "记住每个 key 第一次出现时对应的块；后面第一个 key 已经见过的块，就和它发生了碰撞。"))
def small_by_hand(impl):
    return found(impl.birthday_search(sum_key, [(1, 2), (0, 1), (2, 2), (4, 4), (1, 1)]))


@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(1, 1), (3, 0), (1, 1), (0, 2)])",
             title=L("a repeated block is not a collision", "同一个块重复出现不算碰撞"),
             hint=L("The same block sent twice is not a collision: skip it (it still counts as a try) and keep "
                    "searching.",
                    "同一个块出现两次不算碰撞：跳过它（但它仍然算一次尝试），继续找。"))
def repeated_block_is_not_a_collision(impl):
    return found(impl.birthday_search(sum_key, [(1, 1), (3, 0), (1, 1), (0, 2)]))


@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(0,), (1,), (2,), (3,), (4,), (0,)])",
             title=L("no collision: None", "没有碰撞时返回 None"),
             hint=L("When the candidates run out without two different blocks sharing a key, return nothing "
                    "(None).",
                    "候选块取完了，还没有两个不同的块共用一个 key 时，什么也不返回（也就是 None）。"))
def no_collision_gives_none(impl):
    return impl.birthday_search(sum_key, [(0,), (1,), (2,), (3,), (4,), (0,)])


@STAGE.check("s08.birthday_search",
             call=L("counted: birthday_search(counting sum_key, a counting stream of (2, 2), (2, 2), (1, 3), (0, 4), "
                    "(9, 9)...); then [] and [(5, 5)]",
                    "计数：birthday_search(会计数的 sum_key，会计数的候选流 (2, 2), (2, 2), (1, 3), (0, 4), "
                    "(9, 9)...)；然后是 [] 和 [(5, 5)]"),
             title=L("one key per candidate, nothing taken after the collision; no or one candidate",
                     "每个候选块只算一次 key，碰撞之后一个也不取；没有或只有一个候选块"),
             hint=L("Take the candidates one at a time, compute each one's key once, and stop at the collision "
                    "(the stream may be endless); two equal blocks are one block (compare them with ==, not is); "
                    "with no candidate or a single one there is no collision.",
                    "一次取一个候选块，每个只算一次 key，碰到碰撞就停（候选流可能没有尽头）；两个相等的块就是同一个块"
                    "（用 == 比较，不要用 is）；一个候选块也没有、或者只有一个时，没有碰撞。"))
def counts_what_it_takes(impl):
    calls, taken = [0], [0]

    def key_of(block):
        calls[0] += 1
        return sum_key(block)

    def stream():
        # blocks built at run time: equal blocks are equal, not the same object
        for a, b in [(2, 2), (2, 2), (1, 3), (0, 4), (9, 9), (8, 8)]:
            taken[0] += 1
            yield tuple([a, b])

    result = found(impl.birthday_search(key_of, stream()))
    return record(result=result, key_calls=calls[0], taken=taken[0],
                  empty=impl.birthday_search(sum_key, []), single=impl.birthday_search(sum_key, [(5, 5)]))


@STAGE.check("s08.birthday_search",
             call="birthday_search(truncated_first_block_key(12), itertools.islice(random_blocks(1), 5000))",
             title=L("SHA-256 cut to 12 bits", "截断到 12 位的 SHA-256"),
             hint=L("Compare each candidate's key with the keys of *all* earlier candidates (a dictionary), not "
                    "only with the first or the previous one.",
                    "把每个候选块的 key 和前面*所有*候选块的 key 比较（用字典），而不只是和第一个或上一个比较。"))
def sha256_cut_to_12_bits(impl):
    import itertools

    return found(impl.birthday_search(truncated_first_block_key(12), itertools.islice(random_blocks(1), 5000)))


# -- TODO 2: fit_threshold --------------------------------------------------------------------------
@STAGE.check("s08.fit_threshold", call="fit_threshold([1.0, 1.2, 1.1], [2.0, 2.5, 2.2])", atol=ATOL,
             title=L("separated samples", "完全分开的两组样本"),
             hint=L("Separated samples: the threshold is the midpoint between the largest hit and the smallest "
                    "miss.",
                    "两组样本完全分开时，阈值就是最大的命中样本和最小的未命中样本的中点。"))
def separated(impl):
    return impl.fit_threshold([1.0, 1.2, 1.1], [2.0, 2.5, 2.2])


@STAGE.check("s08.fit_threshold", call="fit_threshold([1, 2, 3, 6], [4, 5, 7, 8])", atol=ATOL,
             title=L("overlapping samples", "有重叠的两组样本"),
             hint=L("When the samples overlap, try every midpoint of neighbouring distinct values and count the "
                    "hits at or above it plus the misses below it; a hit is faster, so it belongs below.",
                    "两组样本有重叠时，逐个试相邻不同取值的中点，数出大于等于它的命中样本和小于它的未命中样本；"
                    "命中更快，应该落在阈值下方。"))
def overlapping(impl):
    return impl.fit_threshold([1, 2, 3, 6], [4, 5, 7, 8])


@STAGE.check("s08.fit_threshold", call="fit_threshold([1, 3], [2, 4])", atol=ATOL,
             title=L("a tie goes to the smallest threshold", "判错一样多时取最小的阈值"),
             hint=L("Several midpoints may make equally few errors: return the smallest of them.",
                    "可能有几个中点判错一样少：返回其中最小的。"))
def tie_takes_the_smallest(impl):
    return impl.fit_threshold([1, 3], [2, 4])


@STAGE.check("s08.fit_threshold", call="fit_threshold([1.0, 4.0], [2.0, 3.0, 5.0, 6.0, 7.0, 8.0, 9.0])", atol=ATOL,
             title=L("every sample counts once", "每个样本只算一次"),
             hint=L("Count errors as samples, each one once: with 2 hits and 7 misses, a score that weighs the two "
                    "classes equally (an error rate per class) picks another threshold.",
                    "按样本个数数错误，每个样本只算一次：2 个命中、7 个未命中时，把两类等权看待的打分（按类别算"
                    "错误率）会选出另一个阈值。"))
def every_sample_counts_once(impl):
    return impl.fit_threshold([1.0, 4.0], [2.0, 3.0, 5.0, 6.0, 7.0, 8.0, 9.0])


@STAGE.check("s08.fit_threshold", call="fit_threshold((3, 1, 2, 2, 7), (2, 6, 4, 4, 9))", atol=ATOL,
             title=L("unsorted tuples, values shared by hits and misses", "未排序的元组，命中和未命中有相同的值"),
             hint=L("Any sequence, in any order, with repeated values: the candidates are the midpoints of "
                    "neighbouring *distinct* values of both samples together.",
                    "任何序列、任何顺序、有重复值都一样：候选阈值是两组样本合在一起后，相邻的*不同*取值的中点。"))
def shared_values_and_tuples(impl):
    return plain(impl.fit_threshold((3, 1, 2, 2, 7), (2, 6, 4, 4, 9)))


@STAGE.check("s08.fit_threshold",
             call="hit, miss = ttft_samples(1, 40, 40, miss_ms=3.0); t = fit_threshold(hit[:20], miss[:20]); "
                  "t, accuracy(t, hit[20:], miss[20:])",
             atol=ATOL, title=L("calibrate on one half, score on the other", "一半样本校准，另一半评估"),
             hint=L("Count every misclassified calibration sample once (hits at or above the threshold, misses "
                    "below it) and take the midpoint with the fewest.",
                    "每个判错的校准样本算一次（命中样本大于等于阈值、未命中样本小于阈值），取判错最少的中点。"))
def calibrate_then_hold_out(impl):
    hit, miss = ttft_samples(1, 40, 40, miss_ms=3.0)
    t = impl.fit_threshold(hit[:20], miss[:20])
    return record(threshold=t, held_out_accuracy=impl.accuracy(t, hit[20:], miss[20:]))


# -- TODO 3: detect_sharing -------------------------------------------------------------------------
@STAGE.check("s08.detect_sharing", call="hit, miss = ttft_samples(2, 30, 30); detect_sharing(hit, miss)", atol=ATOL,
             title=L("faster hits are detected", "命中更快时能检测出来"),
             hint=L("Return SciPy's two-sample KS statistic and p-value for hits against misses, one-sided in the "
                    "direction 'hit's CDF lies above miss's', and detected = p-value below alpha.",
                    "返回 SciPy 两样本 KS 检验（命中对未命中）的统计量和 p 值，单侧方向是“命中样本的 CDF 位于未命中样本"
                    "之上”；detected 表示 p 值小于 alpha。"))
def hits_faster_is_detected(impl):
    hit, miss = ttft_samples(2, 30, 30)
    return ks(impl.detect_sharing(hit, miss))


@STAGE.check("s08.detect_sharing",
             call="fast, slow = ttft_samples(3, 30, 30); detect_sharing(hit=slow, miss=fast)", atol=ATOL,
             title=L("slower hits are not sharing", "命中更慢不算共享"),
             hint=L("The test is one-sided: hits that are *slower* must not count as sharing (a two-sided test, "
                    "or the other direction, rejects here).",
                    "这是单侧检验：命中*更慢*不能算共享（双侧检验或者方向反了，在这里都会拒绝原假设）。"))
def hits_slower_is_not_sharing(impl):
    fast, slow = ttft_samples(3, 30, 30)
    return ks(impl.detect_sharing(slow, fast))


@STAGE.check("s08.detect_sharing", call="a, b = ttft_samples(4, 30, 30, miss_ms=2.0); detect_sharing(a, b)",
             atol=ATOL, title=L("one distribution: nothing detected", "同一个分布：检测不到"),
             hint=L("Samples from one distribution: nothing to detect. The p-value is the one-sided one (a "
                    "two-sided p-value is about twice as large here), and it is the p-value, not the statistic, "
                    "that is compared with alpha.",
                    "两组样本来自同一个分布：没有什么可检测的。p 值要用单侧检验的（双侧 p 值在这里大约是它的两倍），"
                    "而且要拿 p 值（不是统计量）和 alpha 比较。"))
def same_distribution(impl):
    a, b = ttft_samples(4, 30, 30, miss_ms=2.0)
    return ks(impl.detect_sharing(a, b))


def alpha_around_p(impl, hit, miss, **alphas):
    """``detected`` of the learner's own test at levels placed around its own p-value (so only the use
    of alpha decides the outcome): each keyword maps a label to a function of p giving alpha."""
    result = impl.detect_sharing(hit, miss)
    p = result[1] if type(result) is tuple and len(result) == 3 else None
    if not (isinstance(p, float) and 0.0 < p < 1.0):
        return record(p_value=p)  # no usable p-value: shown as it is (a bug of another check)
    return record(**{label: impl.detect_sharing(hit, miss, level(p))[2] for label, level in alphas.items()})


@STAGE.check("s08.detect_sharing",
             call="hit, miss = ttft_samples(43, 12, 12, miss_ms=2.4); alpha_around_p(impl, hit, miss, "
                  "below_p=lambda p: p / 2, at_p=lambda p: p, above_p=lambda p: (1 + p) / 2)", specificity=1,
             title=L("the alpha given is used", "用的是传入的 alpha"),
             hint=L("Detected means p-value strictly below the alpha passed in (an alpha equal to the p-value does "
                    "not reject), not below a fixed level (and not the statistic compared with alpha).",
                    "detected 的意思是 p 值严格小于传入的 alpha（alpha 恰好等于 p 值时不拒绝），而不是小于某个固定的"
                    "水平（也不是拿统计量和 alpha 比）。"))
def alpha_given_is_used(impl):
    hit, miss = ttft_samples(43, 12, 12, miss_ms=2.4)
    return alpha_around_p(impl, hit, miss, below_p=lambda p: p / 2, at_p=lambda p: p, above_p=lambda p: (1 + p) / 2)


# -- TODO 4: tenant_extra_keys ----------------------------------------------------------------------
@STAGE.check("s08.tenant_extra_keys",
             call="pool_hits(impl, [('alice', 'alice', PROMPT, None), ('bob', 'bob', PROMPT, None), "
                  "('alice_again', 'alice', PROMPT, None)])",
             title=L("tenants share nothing, but each shares with itself", "租户之间不共享，但各自能命中自己的块"),
             hint=L("Add the tenant as one more extra key: equal prompts of two tenants then get different keys, "
                    "and a tenant's own prompt keeps its keys.",
                    "把租户作为多出来的一个附加 key：两个租户的相同提示词就会得到不同的 key，而同一个租户的"
                    "提示词 key 不变。"))
def tenants_share_nothing_but_with_themselves(impl):
    return pool_hits(impl, [("alice", "alice", PROMPT, None), ("bob", "bob", PROMPT, None),
                            ("alice_again", "alice", PROMPT, None)])


@STAGE.check("s08.tenant_extra_keys",
             call="lora = [('lora', 'adapter-1')]; pool_hits(impl, [('alice_lora', 'alice', PROMPT, lora), "
                  "('alice', 'alice', PROMPT, None), ('alice_lora_again', 'alice', PROMPT, lora), "
                  "('bob_lora', 'bob', PROMPT, lora)])",
             specificity=1, title=L("the request's own extra keys are kept", "保留请求自己的附加 key"),
             hint=L("Keep the request's own extra keys (and compute them afresh for every call): a LoRA request "
                    "and a plain one of the same tenant must not share.",
                    "保留请求自己的附加 key（而且每次调用都重新算）：同一个租户的 LoRA 请求和普通请求不能共享。"))
def request_extra_keys_are_kept(impl):
    lora = [("lora", "adapter-1")]
    return pool_hits(impl, [("alice_lora", "alice", PROMPT, lora), ("alice", "alice", PROMPT, None),
                            ("alice_lora_again", "alice", PROMPT, lora), ("bob_lora", "bob", PROMPT, lora)])


@STAGE.check("s08.tenant_extra_keys", call="tenant_extra_keys('')",
             title=L("an empty tenant is refused", "拒绝空租户"),
             hint=L("An empty tenant would add an extra key with an empty value, which stage 2 drops (so it "
                    "would share with everyone): raise ValueError instead.",
                    "空租户会加入一个值为空的附加 key，而第 2 阶段会丢掉它（于是和所有人共享）：应该抛出 "
                    "ValueError。"))
def empty_tenant_is_refused(impl):
    return impl.tenant_extra_keys("")


@STAGE.check("s08.tenant_extra_keys", call="tenant_extra_keys('mallory', [('tenant', 'alice')])", specificity=1,
             title=L("a request cannot choose its tenant", "请求不能自己指定租户"),
             hint=L("A request whose own extra keys name a tenant could read that tenant's cache: raise "
                    "ValueError.",
                    "如果请求能在自己的附加 key 里写上租户，它就能读那个租户的缓存：应该抛出 ValueError。"))
def request_cannot_choose_its_tenant(impl):
    return impl.tenant_extra_keys("mallory", [("tenant", "alice")])


@STAGE.check("s08.tenant_extra_keys",
             call="pool_hits(impl, [('x_salt_y', 'x', PROMPT, [('salt', 'y')]), ('y_salt_x', 'y', PROMPT, "
                  "[('salt', 'x')])])",
             specificity=2, title=L("a tenant is not a salt", "租户不是盐值"),
             hint=L("Give the tenant its own kind of extra key (TENANT_KIND): tenant 'x' with salt 'y' must not "
                    "look like tenant 'y' with salt 'x'.",
                    "租户要用它自己的附加 key 种类（TENANT_KIND）：租户 'x' 加盐值 'y'，不能和租户 'y' 加盐值 "
                    "'x' 看起来一样。"))
def tenant_and_salt_stay_apart(impl):
    return pool_hits(impl, [("x_salt_y", "x", PROMPT, [("salt", "y")]), ("y_salt_x", "y", PROMPT, [("salt", "x")])])


@STAGE.check("s08.tenant_extra_keys", specificity=2,
             call="pool_hits(impl, tenants 'alice', 'Alice', ' alice', 'zoë' (NFC), 'zoë' (NFD), "
                  "'租户甲' with [('lora', '适配器')] twice)",
             title=L("tenant ids are kept exactly: case, spaces, Unicode form, Chinese names",
                     "租户 id 原样保留：大小写、空格、Unicode 形式、中文名"),
             hint=L("A tenant id is an opaque string: two ids that differ only in case, surrounding spaces or "
                    "Unicode form are two tenants (merging them is a cross-tenant hit), and any text, Chinese "
                    "included, is a valid id.",
                    "租户 id 是一个不透明的字符串：只差大小写、首尾空格或 Unicode 形式的两个 id 就是两个租户"
                    "（把它们合并就会跨租户命中），任何文字（包括中文）都是合法的 id。"))
def ids_kept_exactly(impl):
    nfc = "zo" + "\u00eb"
    nfd = unicodedata.normalize("NFD", nfc)
    lora = [("lora", "适配" + "器")]
    return pool_hits(impl, [("alice", "".join(["ali", "ce"]), PROMPT, None), ("Alice", "Alice", PROMPT, None),
                            ("spaced", " alice", PROMPT, None), ("zoe_nfc", nfc, PROMPT, None),
                            ("zoe_nfd", nfd, PROMPT, None), ("zh", "租户" + "甲", PROMPT, lora),
                            ("zh_again", "".join(["租户", "甲"]), PROMPT, list(lora))])


@STAGE.check("s08.tenant_extra_keys", specificity=1,
             call=L("salt = [('salt', 's')]; a = tenant_extra_keys('bob', salt); a.append(...); "
                    "b = tenant_extra_keys('bob', tuple(salt)); the keys of b in another process",
                    "salt = [('salt', 's')]; a = tenant_extra_keys('bob', salt); a.append(...); "
                    "b = tenant_extra_keys('bob', tuple(salt))；另一个进程里 b 的 key"),
             title=L("a fresh list per call, the caller's keys untouched, the same keys in every process",
                     "每次调用返回新列表、不改调用者的 key、在每个进程里 key 都一样"),
             hint=L("Build a new list on every call from the request's keys (a list or a tuple), leave the "
                    "caller's keys as they were, and put the tenant string itself into the key (never Python's "
                    "hash(), which differs from process to process); a request key whose kind is 'tenant', however "
                    "that string was built, is refused.",
                    "每次调用都根据请求的 key（列表或元组）新建一个列表，不改调用者的 key，并且把租户字符串本身放进 "
                    "key（不要用 Python 的 hash()，它在每个进程里都不一样）；kind 是 'tenant' 的请求 key，不管这个"
                    "字符串是怎么拼出来的，都要拒绝。"))
def fresh_list_per_call(impl):
    from solutions.s02_block_hash import chain_keys

    salt = [("salt", "s")]
    first = impl.tenant_extra_keys("bob", salt)
    # the order of the extra keys is free (a block's key does not depend on it): compare them sorted
    first_copy = sorted(first, key=repr) if type(first) is list else first
    if type(first) is list:
        first.append(("lora", "x"))
    second = impl.tenant_extra_keys("bob", tuple(salt))
    named = "".join(["ten", "ant"])  # equal to TENANT_KIND, not the same object
    keys = chain_keys(PROMPT, 4, second) if type(second) is list else []
    return record(first=first_copy, second=sorted(second, key=repr) if type(second) is list else second,
                  caller_keys=salt, keys=digest(keys),
                  own_tenant=attempt(lambda: impl.tenant_extra_keys("mallory", [(named, "alice")])))


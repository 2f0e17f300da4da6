"""Stage 8 spec and public checks: attacks on a shared prefix cache, and the defences.

What a learner reads of this stage is in ``s08.toml`` beside this module, in English and Chinese.
No check measures
time: TTFT samples are seeded synthetic numbers (:func:`ttft_samples`), so every verdict is the same
on every machine. Probes return plain data: labelled records, rounded floats, booleans, exception
types.
"""
from __future__ import annotations

import hashlib
import itertools
import random
import time
import unicodedata

from autograder.checks.common import attempt, plain, record
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s08",
    minutes=75,
    todos=[
        Todo("s08.birthday_search", 1, target="birthday_search", points=3),
        Todo("s08.fit_threshold", 2, target="fit_threshold", points=3),
        Todo("s08.detect_sharing", 3, target="detect_sharing", points=2,
             preload=("scipy.stats",)),  # only its child imports SciPy (seconds of CPU)
        Todo("s08.tenant_extra_keys", 4, target="tenant_extra_keys", points=3),
    ],
    quiz=Quiz(number=5, points=2, questions=(
        Question("q1"),
        Question("q2", decimals=0),
        Question("q3", decimals=1),
        Question("q4"),
        Question("q5"),
    )),
    time_limit_s=20,
    memory_limit_mb=2048,  # NumPy + SciPy map several hundred MB of address space
)

ATOL = 1e-9  # thresholds and p-values: (a + b) / 2 and a + (b - a) / 2 may round differently
# CPU time of the grading child, bound when the grader imports this module, before any learner code
# runs (learner code may replace time.process_time afterwards); children share two cores, so no wall time.
_cpu_clock = time.process_time
SEARCH_BUDGET_S = 1.5  # CPU seconds for a search of 60,000 tries: the reference needs well under 0.1 s


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


def index_key(block) -> bytes:
    """A key as wide as the search needs: the block's first token (distinct firsts, distinct keys)."""
    return block[0].to_bytes(4, "big")


def budgeted_search(impl, key_of, blocks, budget_s: float = SEARCH_BUDGET_S):
    """``birthday_search(key_of, blocks)`` with a stream that ends once ``budget_s`` of CPU time is spent:
    a search whose cost per try grows with the tries then finds nothing, inside the grader's time limit."""
    spent = [False]

    def stream():
        t0 = _cpu_clock()
        for i, block in enumerate(blocks):
            if i % 500 == 0 and _cpu_clock() - t0 > budget_s:
                spent[0] = True
                return
            yield block

    result = impl.birthday_search(key_of, stream())
    return record(within_budget=not spent[0], result=None if spent[0] else found(result))


PROMPT = list(range(100, 117))  # 4 full blocks of 4 tokens + 1 (pool_hits uses blocks of 4)


# -- TODO 1: birthday_search ------------------------------------------------------------------------
@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(1, 2), (0, 1), (2, 2), (4, 4), (1, 1)])")
def small_by_hand(impl):
    return found(impl.birthday_search(sum_key, [(1, 2), (0, 1), (2, 2), (4, 4), (1, 1)]))


@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(1, 1), (3, 0), (1, 1), (0, 2)])")
def repeated_block_is_not_a_collision(impl):
    return found(impl.birthday_search(sum_key, [(1, 1), (3, 0), (1, 1), (0, 2)]))


@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(0,), (1,), (2,), (3,), (4,), (0,)])")
def no_collision_gives_none(impl):
    return impl.birthday_search(sum_key, [(0,), (1,), (2,), (3,), (4,), (0,)])


@STAGE.check("s08.birthday_search")
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
             call="birthday_search(truncated_first_block_key(12), itertools.islice(random_blocks(1), 5000))")
def sha256_cut_to_12_bits(impl):
    import itertools

    return found(impl.birthday_search(truncated_first_block_key(12), itertools.islice(random_blocks(1), 5000)))


@STAGE.check("s08.birthday_search")
def time_grows_linearly_with_the_tries(impl):
    # The keys seen so far are looked up, never scanned: a scan costs a pass over every earlier try, at each try.
    # zh: 见过的 key 要查找，而不是逐个扫描：扫描在每次尝试时都要把之前的尝试过一遍。
    n = 60_000
    return budgeted_search(impl, index_key, itertools.chain(((i, i) for i in range(n)), [(0, 1)]))


# -- TODO 2: fit_threshold --------------------------------------------------------------------------
@STAGE.check("s08.fit_threshold", call="fit_threshold([1.0, 1.2, 1.1], [2.0, 2.5, 2.2])", atol=ATOL)
def separated(impl):
    return impl.fit_threshold([1.0, 1.2, 1.1], [2.0, 2.5, 2.2])


@STAGE.check("s08.fit_threshold", call="fit_threshold([1, 2, 3, 6], [4, 5, 7, 8])", atol=ATOL)
def overlapping(impl):
    return impl.fit_threshold([1, 2, 3, 6], [4, 5, 7, 8])


@STAGE.check("s08.fit_threshold", call="fit_threshold([1, 3], [2, 4])", atol=ATOL)
def tie_takes_the_smallest(impl):
    return impl.fit_threshold([1, 3], [2, 4])


@STAGE.check("s08.fit_threshold", call="fit_threshold([1.0, 4.0], [2.0, 3.0, 5.0, 6.0, 7.0, 8.0, 9.0])", atol=ATOL)
def every_sample_counts_once(impl):
    return impl.fit_threshold([1.0, 4.0], [2.0, 3.0, 5.0, 6.0, 7.0, 8.0, 9.0])


@STAGE.check("s08.fit_threshold", call="fit_threshold((3, 1, 2, 2, 7), (2, 6, 4, 4, 9))", atol=ATOL)
def shared_values_and_tuples(impl):
    return plain(impl.fit_threshold((3, 1, 2, 2, 7), (2, 6, 4, 4, 9)))


@STAGE.check("s08.fit_threshold", call="fit_threshold([1, 1, 3], [1, 3, 3]), fit_threshold([2, 2], [2, 5])", atol=ATOL)
def equal_samples_are_one_value(impl):
    # Equal samples are one value: no threshold sits between two equal samples.
    # zh: 相等的样本是同一个取值：两个相等的样本之间不放阈值。
    return plain([impl.fit_threshold([1, 1, 3], [1, 3, 3]), impl.fit_threshold([2, 2], [2, 5])])


@STAGE.check("s08.fit_threshold",
             call="hit, miss = ttft_samples(1, 40, 40, miss_ms=3.0); t = fit_threshold(hit[:20], miss[:20]); "
                  "t, accuracy(t, hit[20:], miss[20:])",
             atol=ATOL)
def calibrate_then_hold_out(impl):
    hit, miss = ttft_samples(1, 40, 40, miss_ms=3.0)
    t = impl.fit_threshold(hit[:20], miss[:20])
    return record(threshold=t, held_out_accuracy=impl.accuracy(t, hit[20:], miss[20:]))


@STAGE.check("s08.fit_threshold", call="hit, miss = [1.3, 1.1, 1.2], [2.2, 2.0, 2.1]; fit_threshold(hit, miss); hit, miss",
             atol=ATOL)
def callers_samples_left_alone(impl):
    # The samples are the caller's: sort copies, never their lists in place.
    # zh: 样本归调用者所有：要排序就排副本，绝不能原地排序他们的列表。
    hit, miss = [1.3, 1.1, 1.2], [2.2, 2.0, 2.1]
    threshold = plain(impl.fit_threshold(hit, miss))
    return record(threshold=threshold, hit_after=hit, miss_after=miss)


# -- TODO 3: detect_sharing -------------------------------------------------------------------------
@STAGE.check("s08.detect_sharing", call="hit, miss = ttft_samples(2, 30, 30); detect_sharing(hit, miss)", atol=ATOL)
def hits_faster_is_detected(impl):
    hit, miss = ttft_samples(2, 30, 30)
    return ks(impl.detect_sharing(hit, miss))


@STAGE.check("s08.detect_sharing",
             call="fast, slow = ttft_samples(3, 30, 30); detect_sharing(hit=slow, miss=fast)", atol=ATOL)
def hits_slower_is_not_sharing(impl):
    fast, slow = ttft_samples(3, 30, 30)
    return ks(impl.detect_sharing(slow, fast))


@STAGE.check("s08.detect_sharing", call="a, b = ttft_samples(4, 30, 30, miss_ms=2.0); detect_sharing(a, b)",
             atol=ATOL)
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
                  "below_p=lambda p: p / 2, at_p=lambda p: p, above_p=lambda p: (1 + p) / 2)", specificity=1)
def alpha_given_is_used(impl):
    hit, miss = ttft_samples(43, 12, 12, miss_ms=2.4)
    return alpha_around_p(impl, hit, miss, below_p=lambda p: p / 2, at_p=lambda p: p, above_p=lambda p: (1 + p) / 2)


# -- TODO 4: tenant_extra_keys ----------------------------------------------------------------------
@STAGE.check("s08.tenant_extra_keys",
             call="pool_hits(impl, [('alice', 'alice', PROMPT, None), ('bob', 'bob', PROMPT, None), "
                  "('alice_again', 'alice', PROMPT, None)])")
def tenants_share_nothing_but_with_themselves(impl):
    return pool_hits(impl, [("alice", "alice", PROMPT, None), ("bob", "bob", PROMPT, None),
                            ("alice_again", "alice", PROMPT, None)])


@STAGE.check("s08.tenant_extra_keys",
             call="lora = [('lora', 'adapter-1')]; pool_hits(impl, [('alice_lora', 'alice', PROMPT, lora), "
                  "('alice', 'alice', PROMPT, None), ('alice_lora_again', 'alice', PROMPT, lora), "
                  "('bob_lora', 'bob', PROMPT, lora)])",
             specificity=1)
def request_extra_keys_are_kept(impl):
    lora = [("lora", "adapter-1")]
    return pool_hits(impl, [("alice_lora", "alice", PROMPT, lora), ("alice", "alice", PROMPT, None),
                            ("alice_lora_again", "alice", PROMPT, lora), ("bob_lora", "bob", PROMPT, lora)])


@STAGE.check("s08.tenant_extra_keys", call="tenant_extra_keys('')")
def empty_tenant_is_refused(impl):
    return impl.tenant_extra_keys("")


@STAGE.check("s08.tenant_extra_keys", call="tenant_extra_keys('mallory', [('tenant', 'alice')])", specificity=1)
def request_cannot_choose_its_tenant(impl):
    return impl.tenant_extra_keys("mallory", [("tenant", "alice")])


@STAGE.check("s08.tenant_extra_keys")
def any_tenant_pair_is_refused(impl):
    # The rule holds for every pair, wherever it stands, and for the caller's own name too.
    # zh: 这条规则对每一对都成立，不管它在哪个位置，也包括调用者自己的名字。
    named = "".join(["ten", "ant"])  # equal to TENANT_KIND, not the same object
    return record(
        second_of_two=attempt(lambda: impl.tenant_extra_keys("alice", [("lora", "a"), (named, "bob")])),
        last_of_three=attempt(lambda: impl.tenant_extra_keys("alice", (("salt", "s"), ("lora", "x"), (named, "mallory")))),
        own_name=attempt(lambda: impl.tenant_extra_keys("alice", [(named, "alice")])),
        own_name_after_a_salt=attempt(lambda: impl.tenant_extra_keys("alice", [("salt", "s"), (named, "alice")])))


@STAGE.check("s08.tenant_extra_keys",
             call="pool_hits(impl, [('x_salt_y', 'x', PROMPT, [('salt', 'y')]), ('y_salt_x', 'y', PROMPT, "
                  "[('salt', 'x')])])",
             specificity=2)
def tenant_and_salt_stay_apart(impl):
    return pool_hits(impl, [("x_salt_y", "x", PROMPT, [("salt", "y")]), ("y_salt_x", "y", PROMPT, [("salt", "x")])])


@STAGE.check("s08.tenant_extra_keys", specificity=2,
             call="pool_hits(impl, tenants 'alice', 'Alice', ' alice', 'zoë' (NFC), 'zoë' (NFD), "
                  "'租户甲' with [('lora', '适配器')] twice)")
def ids_kept_exactly(impl):
    nfc = "zo" + "\u00eb"
    nfd = unicodedata.normalize("NFD", nfc)
    lora = [("lora", "适配" + "器")]
    return pool_hits(impl, [("alice", "".join(["ali", "ce"]), PROMPT, None), ("Alice", "Alice", PROMPT, None),
                            ("spaced", " alice", PROMPT, None), ("zoe_nfc", nfc, PROMPT, None),
                            ("zoe_nfd", nfd, PROMPT, None), ("zh", "租户" + "甲", PROMPT, lora),
                            ("zh_again", "".join(["租户", "甲"]), PROMPT, list(lora))])


@STAGE.check("s08.tenant_extra_keys")
def pairs_of_one_kind_all_kept(impl):
    # A request with two images (or two adapters) carries two pairs of one kind: both stay in its keys.
    # zh: 带两张图片（或两个适配器）的请求有两对同一种类的 key：两对都要留在它的 key 里。
    images_ab = [("image", "A"), ("image", "B")]
    images_cb = [("image", "C"), ("image", "B")]
    loras = [("lora", "a"), ("lora", "b")]
    kept = impl.tenant_extra_keys("alice", loras)
    return record(two_loras_kept=sorted(kept) if type(kept) is list else kept,
                  hits=pool_hits(impl, [("images_A_B", "alice", PROMPT, images_ab), ("images_C_B", "alice", PROMPT, images_cb),
                                        ("images_B", "alice", PROMPT, [("image", "B")]),
                                        ("images_A_B_again", "alice", PROMPT, list(images_ab))]))


@STAGE.check("s08.tenant_extra_keys", specificity=1)
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


"""Stage 8 spec and public checks: attacks on a shared prefix cache, and the defences.

No check measures time: TTFT samples are seeded synthetic numbers (:func:`ttft_samples`), so every
verdict is the same on every machine. Probes return plain data (tuples of ints, rounded floats,
booleans, exception types).
"""
from __future__ import annotations

import hashlib
import random

from autograder.spec import Stage, Todo

STAGE = Stage(
    id="s08",
    title="Attacks on a shared prefix cache",
    subtitle="共享前缀缓存的攻击与防御",
    todos=[
        Todo("s08.birthday_search", 1, target="birthday_search", points=3,
             title="a birthday search for two blocks with one key"),
        Todo("s08.fit_threshold", 2, target="fit_threshold", points=3, title="a hit/miss threshold from calibration"),
        Todo("s08.detect_sharing", 3, target="detect_sharing", points=2, title="the one-sided KS audit"),
        Todo("s08.tenant_extra_keys", 4, target="tenant_extra_keys", points=3, title="per-tenant salts"),
    ],
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


# -- TODO 1: birthday_search ------------------------------------------------------------------------
@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(1, 2), (0, 1), (2, 2), (4, 4), (1, 1)])",
             hint="Remember the first block seen under each key; the first later block with a known key collides with it.")
def small_by_hand(impl):
    return impl.birthday_search(sum_key, [(1, 2), (0, 1), (2, 2), (4, 4), (1, 1)])


@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(1, 1), (3, 0), (1, 1), (0, 2)])",
             hint="The same block sent twice is not a collision: skip it and keep searching.")
def repeated_block_is_not_a_collision(impl):
    return impl.birthday_search(sum_key, [(1, 1), (3, 0), (1, 1), (0, 2)])


@STAGE.check("s08.birthday_search", call="birthday_search(sum_key, [(0,), (1,), (2,), (3,), (4,), (0,)])",
             hint="Return None when the candidates run out without two different blocks sharing a key.")
def no_collision_gives_none(impl):
    return impl.birthday_search(sum_key, [(0,), (1,), (2,), (3,), (4,), (0,)])


@STAGE.check("s08.birthday_search",
             call="birthday_search(truncated_first_block_key(12), itertools.islice(random_blocks(1), 5000))",
             hint="Compare each candidate's key with the keys of *all* earlier ones (a dict), not with the first only.")
def sha256_cut_to_12_bits(impl):
    import itertools

    return impl.birthday_search(truncated_first_block_key(12), itertools.islice(random_blocks(1), 5000))


# -- TODO 2: fit_threshold --------------------------------------------------------------------------
@STAGE.check("s08.fit_threshold", call="fit_threshold([1.0, 1.2, 1.1], [2.0, 2.5, 2.2])", atol=ATOL,
             hint="Separated samples: the midpoint between the largest hit and the smallest miss.")
def separated(impl):
    return impl.fit_threshold([1.0, 1.2, 1.1], [2.0, 2.5, 2.2])


@STAGE.check("s08.fit_threshold", call="fit_threshold([1, 2, 3, 6], [4, 5, 7, 8])", atol=ATOL,
             hint="Try every midpoint of consecutive distinct values; count hits >= t plus misses < t.")
def overlapping(impl):
    return impl.fit_threshold([1, 2, 3, 6], [4, 5, 7, 8])


@STAGE.check("s08.fit_threshold", call="fit_threshold([1, 3], [2, 4])", atol=ATOL,
             hint="Several midpoints may make equally few errors: return the smallest of them.")
def tie_takes_the_smallest(impl):
    return impl.fit_threshold([1, 3], [2, 4])


@STAGE.check("s08.fit_threshold",
             call="hit, miss = ttft_samples(1, 40, 40, miss_ms=3.0); t = fit_threshold(hit[:20], miss[:20]); "
                  "t, accuracy(t, hit[20:], miss[20:])",
             atol=ATOL, hint="Fit on the calibration half only; the held-out half measures the rule.")
def calibrate_then_hold_out(impl):
    hit, miss = ttft_samples(1, 40, 40, miss_ms=3.0)
    t = impl.fit_threshold(hit[:20], miss[:20])
    return t, impl.accuracy(t, hit[20:], miss[20:])


# -- TODO 3: detect_sharing -------------------------------------------------------------------------
@STAGE.check("s08.detect_sharing", call="hit, miss = ttft_samples(2, 30, 30); detect_sharing(hit, miss)", atol=ATOL,
             hint="scipy.stats.ks_2samp(hit, miss, alternative=...): hits faster means hit's CDF lies above miss's.")
def hits_faster_is_detected(impl):
    hit, miss = ttft_samples(2, 30, 30)
    return impl.detect_sharing(hit, miss)


@STAGE.check("s08.detect_sharing",
             call="fast, slow = ttft_samples(3, 30, 30); detect_sharing(hit=slow, miss=fast)", atol=ATOL,
             hint="One-sided: 'hits are slower' must not count as sharing (a two-sided test would reject here).")
def hits_slower_is_not_sharing(impl):
    fast, slow = ttft_samples(3, 30, 30)
    return impl.detect_sharing(slow, fast)


@STAGE.check("s08.detect_sharing", call="a, b = ttft_samples(4, 30, 30, miss_ms=2.0); detect_sharing(a, b)",
             atol=ATOL, hint="Same distribution: a large p-value, nothing detected.")
def same_distribution(impl):
    a, b = ttft_samples(4, 30, 30, miss_ms=2.0)
    return impl.detect_sharing(a, b)


# -- TODO 4: tenant_extra_keys ----------------------------------------------------------------------
def _pool_hits(impl, sends):
    """Admit + commit + release each (tenant, tokens, extra keys) in order through stage 3's pool; hit tokens."""
    from solutions.s03_block_pool import BlockPool

    pool = BlockPool(64, 4)
    out = []
    for i, (tenant, tokens, extra) in enumerate(sends):
        admission = pool.admit(f"r{i}", tokens, impl.tenant_extra_keys(tenant, extra))
        pool.commit(f"r{i}")
        pool.release(f"r{i}")
        out.append(admission.hit_tokens)
    return out


PROMPT = list(range(100, 117))  # 4 full blocks of 4 tokens + 1


@STAGE.check("s08.tenant_extra_keys",
             call="hit tokens of alice, bob, alice sending the same 17-token prompt through BlockPool(64, 4)",
             hint="Add the tenant as one more extra key: equal prompts of two tenants then get different keys.")
def tenants_share_nothing_but_with_themselves(impl):
    return _pool_hits(impl, [("alice", PROMPT, None), ("bob", PROMPT, None), ("alice", PROMPT, None)])


@STAGE.check("s08.tenant_extra_keys",
             call="hit tokens of alice+lora, alice, alice+lora, bob+lora (same prompt)",
             hint="Keep the request's own extra keys: a LoRA request and a plain one of the same tenant must not share.")
def request_extra_keys_are_kept(impl):
    lora = [("lora", "adapter-1")]
    return _pool_hits(impl, [("alice", PROMPT, lora), ("alice", PROMPT, None), ("alice", PROMPT, lora),
                             ("bob", PROMPT, lora)])


@STAGE.check("s08.tenant_extra_keys", call="tenant_extra_keys('')",
             hint="An empty tenant would add an empty extra key, which stage 2 drops: raise ValueError instead.")
def empty_tenant_is_refused(impl):
    return impl.tenant_extra_keys("")


@STAGE.check("s08.tenant_extra_keys", call="tenant_extra_keys('mallory', [('tenant', 'alice')])",
             hint="A request that names a tenant itself could read another tenant's cache: raise ValueError.")
def request_cannot_choose_its_tenant(impl):
    return impl.tenant_extra_keys("mallory", [("tenant", "alice")])


@STAGE.check("s08.tenant_extra_keys", call="hit tokens of tenant 'x' with salt 'y', then tenant 'y' with salt 'x' (same prompt)",
             hint="Give the tenant its own kind of extra key (TENANT_KIND): tenant 'x' with salt 'y' is not tenant 'y' with salt 'x'.")
def tenant_and_salt_stay_apart(impl):
    return _pool_hits(impl, [("x", PROMPT, [("salt", "y")]), ("y", PROMPT, [("salt", "x")])])

"""Stage 8 reference: attacks on a shared prefix cache, and the defences.

Sharing KV blocks across requests shares information across users. Four pieces, each one TODO:

1. :func:`birthday_search` -- with block keys cut to ``k`` bits, two *different* prefixes with the
   same key turn up after about ``2**(k/2)`` random tries; an engine keyed that way serves one
   prompt's KV to the other (the given :mod:`solutions.weak_keys` shows it on stage 6's engine).
2. :func:`fit_threshold` -- a prefix hit shortens the time to first token (TTFT); from labelled
   samples, the threshold below which a TTFT says "hit" (scored with :func:`accuracy`).
3. :func:`detect_sharing` -- the audit of Gu et al. (ICML 2025): a one-sided two-sample
   Kolmogorov-Smirnov test of "hit TTFTs are smaller than miss TTFTs".
4. :func:`tenant_extra_keys` -- the defence: a per-tenant salt in every block key, through stage
   2's extra keys, so tenants share nothing and each tenant still shares with itself.

Every TODO is deterministic: none of them measures time, they run on recorded or synthetic samples.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence

from scipy import stats

Block = tuple[int, ...]

#: The kind of the extra key that carries a request's tenant (stage 2 tags every extra key by kind).
TENANT_KIND = "tenant"


def birthday_search(key_of: Callable[[Block], bytes], candidates: Iterable[Block]) -> tuple[Block, Block, int] | None:
    """Find two different blocks with the same key among ``candidates``, taken in order.

    Returns ``(earlier, later, tries)``: ``later`` is the first candidate whose key equals the key
    of an earlier candidate that is a *different* block, ``earlier`` the first candidate that had
    that key, and ``tries`` the number of candidates taken, ``later`` included. Returns ``None``
    when the candidates run out first. ``candidates`` may be an endless generator: nothing after
    ``later`` is taken. ``key_of`` is called once per candidate.
    """
    seen: dict[bytes, Block] = {}
    tries = 0
    # TODO 1 (s08.birthday_search): return (earlier, later, tries) for the first candidate whose
    # key was already seen on a different block, as the docstring says; count in `tries` every
    # candidate taken. A repeated block is not a collision. One call of key_of per candidate, and
    # time linear in the number of tries (thousands of them at 24 bits).
    ### BEGIN SOLUTION
    for block in candidates:
        tries += 1
        key = key_of(block)
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = block
        elif earlier != block:
            return earlier, block, tries
    ### END SOLUTION
    return None


def accuracy(threshold: float, hit: Sequence[float], miss: Sequence[float]) -> float:
    """Fraction of samples that the rule "hit iff TTFT < threshold" labels right."""
    if not hit and not miss:
        raise ValueError("no samples")
    right = sum(1 for t in hit if t < threshold) + sum(1 for t in miss if t >= threshold)
    return right / (len(hit) + len(miss))


def fit_threshold(hit: Sequence[float], miss: Sequence[float]) -> float:
    """The threshold for the rule "hit iff TTFT < threshold" that errs on the fewest calibration samples.

    Candidates are the midpoints ``(a + b) / 2`` of consecutive distinct values ``a < b`` of all
    samples (hit and miss together); an error is a hit sample ``>= threshold`` or a miss sample
    ``< threshold``. Among candidates with the fewest errors the smallest wins. If all samples
    have one value, that value is returned. ``ValueError`` if ``hit`` or ``miss`` is empty.
    """
    if not hit or not miss:
        raise ValueError("need at least one hit and one miss sample")
    values = sorted(set(hit) | set(miss))
    if len(values) == 1:
        return float(values[0])
    # TODO 2 (s08.fit_threshold): set `best` to the candidate midpoint with the fewest errors
    # (the smallest one on a tie), as the docstring defines them. Count errors exactly (integers);
    # n log n or n**2 in the number of samples are both fine here.
    ### BEGIN SOLUTION
    hits, misses = sorted(hit), sorted(miss)
    best, best_errors = values[0], len(hits) + len(misses) + 1
    for a, b in zip(values, values[1:]):
        # Below the midpoint lie exactly the samples <= a: hits there are right, misses wrong.
        errors = (len(hits) - bisect.bisect_right(hits, a)) + bisect.bisect_right(misses, a)
        if errors < best_errors:
            best, best_errors = (a + b) / 2, errors
    ### END SOLUTION
    return float(best)


def detect_sharing(hit: Sequence[float], miss: Sequence[float], alpha: float = 1e-3) -> tuple[float, float, bool]:
    """Gu et al.'s audit of one pair of samples: are hit TTFTs stochastically smaller than miss TTFTs?

    Runs SciPy's two-sample Kolmogorov-Smirnov test (default method) with the null hypothesis "the
    hit samples are not smaller" against the one-sided alternative that they are, i.e. that the
    empirical CDF of ``hit`` lies *above* that of ``miss`` somewhere. Returns ``(statistic,
    p_value, p_value < alpha)``: sharing is detected when the test rejects at level ``alpha``.
    """
    if not hit or not miss:
        raise ValueError("need at least one hit and one miss sample")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must lie in (0, 1)")
    # TODO 3 (s08.detect_sharing): set `statistic` and `p_value` to those of SciPy's one-sided
    # two-sample KS test whose alternative is "the CDF of hit lies above the CDF of miss" (hits
    # are faster), and `detected` to whether it rejects at level alpha.
    ### BEGIN SOLUTION
    result = stats.ks_2samp(hit, miss, alternative="greater")
    statistic, p_value = result.statistic, result.pvalue
    detected = p_value < alpha
    ### END SOLUTION
    return float(statistic), float(p_value), bool(detected)


def tenant_extra_keys(tenant: str, extra_keys: Sequence[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """The extra keys under which ``tenant``'s request is cached: the request's own extra keys
    (a LoRA adapter, a cache salt...) plus ``(TENANT_KIND, tenant)``.

    With stage 2's chained keys this makes two tenants share no block, while one tenant hits its
    own blocks as before, and requests of one tenant with different extra keys stay apart.
    ``ValueError`` if ``tenant`` is empty (stage 2 drops an extra key whose value is empty, so that
    tenant would share with everyone) or if the request's extra keys already name a tenant (the
    tenant comes from who is calling, never from what the request says).
    """
    if not isinstance(tenant, str):
        raise TypeError(f"tenant must be a str, got {type(tenant).__name__}")
    # TODO 4 (s08.tenant_extra_keys): set `keys` to a new list: the request's extra keys (none if
    # extra_keys is None) plus the tenant's own (TENANT_KIND, tenant) pair; raise ValueError in the
    # two cases the docstring names. The caller's list must not change.
    ### BEGIN SOLUTION
    if not tenant:
        raise ValueError("the tenant must not be empty: an empty extra key means no key at all")
    keys = list(extra_keys or ())
    if any(kind == TENANT_KIND for kind, _ in keys):
        raise ValueError("a request must not name its own tenant")
    keys.append((TENANT_KIND, tenant))
    ### END SOLUTION
    return keys

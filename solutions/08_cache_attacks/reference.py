"""Stage 8 reference: attacks on a shared prefix cache, and the defences.

Sharing KV blocks across requests shares information across users. Four pieces, each one TODO:

1. :func:`birthday_search` -- with block keys cut to ``k`` bits, two *different* prefixes with the
   same key turn up after about ``2**(k/2)`` random tries; an engine keyed that way serves one
   prompt's KV to the other (the given :mod:`workbook.weak_keys` shows it on stage 6's engine).
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
import math
from collections.abc import Callable, Iterable, Sequence

from autograder.i18n import tr
from workbook.contract import ResultError

#: The messages the reference raises inside its TODO regions, in Chinese: the grader shows a Chinese-edition
#: learner "expected: raises ..." with them (a learner writes their own message; only the type is graded).
RAISED_ZH = {
    "the tenant must not be empty: an empty extra key means no key at all": "租户不能为空：值为空的附加 key 等于没有 key",
    "a request must not name its own tenant": "请求不能自己指定租户",
}

#: A block of token ids, as stage 2 splits a prompt (a tuple: it can be compared and stored).
# zh: 一个块的 token id，和第 2 阶段切分提示词时一样（用 tuple：可以比较，也可以存起来）。
Block = tuple[int, ...]

#: The kind of the extra key that carries a request's tenant (stage 2 tags every extra key by kind).
# zh: 携带请求所属租户的那个附加 key 的种类（第 2 阶段给每个附加 key 都标了种类）。
TENANT_KIND = "tenant"


def birthday_search(key_of: Callable[[Block], bytes], candidates: Iterable[Block]) -> tuple[Block, Block, int] | None:
    """Find two different blocks with the same key among ``candidates``, taken in order.

    Returns ``(earlier, later, tries)``: ``later`` is the first candidate whose key equals the key
    of an earlier candidate that is a *different* block, ``earlier`` the first candidate that had
    that key, and ``tries`` the number of candidates taken, ``later`` included. Returns ``None``
    when the candidates run out first. ``candidates`` may be an endless generator: nothing after
    ``later`` is taken. ``key_of`` is called once per candidate.

    [zh]
    在 ``candidates`` 里按顺序找两个 key 相同的*不同*块。

    返回 ``(earlier, later, tries)``：``later`` 是第一个这样的候选块——它的 key 和前面某个*不同*
    的块的 key 相同；``earlier`` 是最早拿到这个 key 的候选块；``tries`` 是一共取了多少个候选块
    （``later`` 也算）。候选块取完还没找到就返回 ``None``。``candidates`` 可能是无穷的生成器：
    ``later`` 之后一个候选块也不再取。每个候选块只调用一次 ``key_of``。
    """
    seen: dict[bytes, Block] = {}
    tries = 0
    # TODO 1 (s08.birthday_search)
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
    """Fraction of samples that the rule "hit iff TTFT < threshold" labels right.

    [zh]
    规则“TTFT < ``threshold`` 就判为命中”判对的样本所占的比例。
    """
    if not hit and not miss:
        raise ValueError(tr("no samples", "没有样本"))
    # The threshold comes from fit_threshold (TODO 2): a number of seconds, checked before it is used.
    # zh: 阈值来自 fit_threshold（TODO 2）：一个以秒为单位的数，用之前先检查。
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ResultError("s08.fit_threshold", f"{threshold!r:.60} as a threshold, not a finite number of seconds",
                          f"{threshold!r:.60} 作为阈值，而不是一个有限的秒数")
    right = sum(1 for t in hit if t < threshold) + sum(1 for t in miss if t >= threshold)
    return right / (len(hit) + len(miss))


def fit_threshold(hit: Sequence[float], miss: Sequence[float]) -> float:
    """The threshold for the rule "hit iff TTFT < threshold" that errs on the fewest calibration samples.

    Candidates are the midpoints ``(a + b) / 2`` of consecutive distinct values ``a < b`` of all
    samples (hit and miss together); an error is a hit sample ``>= threshold`` or a miss sample
    ``< threshold``. Among candidates with the fewest errors the smallest wins. If all samples
    have one value, that value is returned. ``ValueError`` if ``hit`` or ``miss`` is empty.

    [zh]
    为规则“TTFT < 阈值就判为命中”选一个阈值：在校准样本上判错最少的那个。

    候选阈值是全部样本（命中和未命中合在一起）里相邻两个不同取值 ``a < b`` 的中点 ``(a + b) / 2``；
    判错是指命中样本 ``>= threshold``，或者未命中样本 ``< threshold``。判错同样少的候选里取最小的。
    所有样本都是同一个值时，返回这个值。``hit`` 或 ``miss`` 为空时抛出 ``ValueError``。
    """
    if not hit or not miss:
        raise ValueError(tr("need at least one hit and one miss sample", "命中和未命中样本至少各要一个"))
    values = sorted(set(hit) | set(miss))
    if len(values) == 1:
        return float(values[0])
    # TODO 2 (s08.fit_threshold)
    ### BEGIN SOLUTION
    hits, misses = sorted(hit), sorted(miss)
    best, best_errors = values[0], len(hits) + len(misses) + 1
    for a, b in zip(values, values[1:]):
        # Below the midpoint lie exactly the samples <= a: hits there are right, misses wrong.
        # zh: 中点以下恰好是所有 <= a 的样本：其中的命中样本判对了，未命中样本判错了。
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

    [zh]
    Gu 等人对一对样本做的审计：命中的 TTFT 是否（在统计意义上）比未命中的小？

    用 SciPy 的两样本 Kolmogorov–Smirnov 检验（默认方法）。原假设是“命中样本并不更小”，单侧的
    备择假设是“命中样本更小”，也就是 ``hit`` 的经验分布函数（CDF）在某处位于 ``miss`` 的*上方*。
    返回 ``(statistic, p_value, p_value < alpha)``：检验在显著性水平 ``alpha`` 下拒绝原假设，
    就算检测到了缓存共享。
    """
    if not hit or not miss:
        raise ValueError(tr("need at least one hit and one miss sample", "命中和未命中样本至少各要一个"))
    if not 0.0 < alpha < 1.0:
        raise ValueError(tr("alpha must lie in (0, 1)", "alpha 必须在 (0, 1) 之间"))
    # Imported here, not at the top: SciPy takes seconds to import, and only this function needs it.
    # zh: 在这里导入而不是放在文件开头：导入 SciPy 要好几秒，而只有这个函数用得到它。
    from scipy import stats

    # TODO 3 (s08.detect_sharing)
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

    [zh]
    ``tenant`` 的请求在缓存里用的附加 key：请求自己的附加 key（LoRA 适配器、缓存盐值……），
    再加上 ``(TENANT_KIND, tenant)``。

    配合第 2 阶段的链式 key，两个租户不会共享任何块，同一个租户照常命中自己的块；同一租户里
    附加 key 不同的请求也互不共享。``tenant`` 为空时抛出 ``ValueError``（第 2 阶段会丢掉值为空的
    附加 key，这个租户就会和所有人共享）；请求自己的附加 key 里已经写了租户时，也抛出
    ``ValueError``（租户由调用者的身份决定，绝不由请求内容决定）。
    """
    if not isinstance(tenant, str):
        raise TypeError(tr(f"tenant must be a str, got {type(tenant).__name__}",
                           f"tenant 必须是 str，实际是 {type(tenant).__name__}"))
    # TODO 4 (s08.tenant_extra_keys)
    ### BEGIN SOLUTION
    if not tenant:
        raise ValueError("the tenant must not be empty: an empty extra key means no key at all")
    keys = list(extra_keys or ())
    if any(kind == TENANT_KIND for kind, _ in keys):
        raise ValueError("a request must not name its own tenant")
    keys.append((TENANT_KIND, tenant))
    ### END SOLUTION
    return keys


def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 5 (s08.quiz)
    ### BEGIN SOLUTION
    return {"q1": "B", "q2": 4, "q3": 0.5, "q4": "B", "q5": "A"}
    ### END SOLUTION

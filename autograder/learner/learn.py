"""Learner helpers besides ``check()``: hints in tiers and predict-then-run.

``hint("s02.hash_block")`` shows the next tier each time it is called (1 the idea, 2 the approach,
3 a code skeleton whose key expressions are left as ``___``); ``hint("s02.hash_block", 3)`` jumps to
a tier. Right after a ``check()`` of the TODO failed, the first ``hint()`` is the hint of the check
that led its report (the one about the mistake made), and the tiers follow. It prints the text and
returns nothing, so a notebook shows it once. Using hints costs nothing.

``reveal(prediction, actual, why, within=...)`` shows a demo's result next to what the learner
predicted before running it, and one sentence on the gap. A whole-number answer is right only when
equal; a fractional one when within the absolute tolerance ``within`` that the prediction declares
(chosen so that the misconception the prediction targets is judged wrong). Nothing here is graded.
"""
from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from autograder.core.i18n import L, text
from autograder.core.spec import Check, load_stage, stage_of
from autograder.grading.verdict import check_title

TIER_NAMES = (L("the idea", "思路"), L("the approach", "做法"), L("a skeleton to fill in", "待补全的代码骨架"))
_shown: dict[str, int] = {}
_failed: dict[str, Check] = {}  # per TODO: the check its last check() in this kernel led with, not yet hinted


def note_failure(todo_id: str, check: Check | None) -> None:
    """What ``check(todo_id)`` found: the failing check it led with (the most specific one), or None
    when nothing failed for a reason of this TODO's own. The next :func:`hint` starts from it."""
    if check is None:
        _failed.pop(todo_id, None)
    else:
        _failed[todo_id] = check


def hint(todo_id: str, tier: int | None = None) -> None:
    """Print the next hint tier of ``todo_id`` (or tier ``tier``, 1-3); returns nothing.

    [zh]
    打印 ``todo_id`` 的下一层提示（或第 ``tier`` 层，1 到 3）；不返回任何值。
    """
    stage = load_stage(stage_of(todo_id), hidden=False)
    todo = stage.todo(todo_id)
    failed = _failed.pop(todo_id, None) if tier is None else None
    if failed is not None and text(failed.hint):
        # the hint about the mistake made comes first: the one of the check that just failed; the
        # TODO's tiers, written for every way of getting it wrong, come after it
        head = text(L("💡 {label} · the check that failed: {title}", "💡 {label} · 未通过的检查：{title}")).format(
            label=todo.label, title=check_title(failed))
        more = text(L('(call hint("{id}") again for the TODO\'s hints, idea first)',
                      '（再调用一次 hint("{id}") 看这个 TODO 的分层提示，从思路开始）')).format(id=todo_id)
        print(f"{head}\n{text(failed.hint)}\n{more}")
        return
    if not todo.hints:
        print(text(L("{label} has no hints.", "{label} 没有提示。")).format(label=todo.label))
        return
    if tier is None:
        tier = min(_shown.get(todo_id, 0) + 1, len(todo.hints))
    if not 1 <= tier <= len(todo.hints):
        raise ValueError(f"hint tiers are 1 to {len(todo.hints)}")
    _shown[todo_id] = max(_shown.get(todo_id, 0), tier)
    head = text(L("💡 {label} · hint {tier}/{n} ({name})", "💡 {label} · 提示 {tier}/{n}（{name}）")).format(
        label=todo.label, tier=tier, n=len(todo.hints), name=text(TIER_NAMES[tier - 1]))
    body = text(todo.hints[tier - 1])
    if tier == len(todo.hints):
        more = "\n" + text(L("(each ___ is yours to write)", "（每个 ___ 由你自己补上）"))
    else:
        more = "\n" + text(
            L('(call hint("{id}") again for the next tier)', '（再调用一次 hint("{id}") 看下一条）')).format(id=todo_id)
    print(f"{head}\n{body}{more}")


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value) if isinstance(value, str) else str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def judged(prediction: Any, actual: Any, within: float | None = None, relative: float | None = None,
           bounds: tuple[float, float] | None = None) -> bool | None:
    """Whether ``prediction`` counts as right for ``actual``; None when no prediction was made.

    A whole-number answer (an int) is right only when the prediction equals it. A fractional answer
    is right when the prediction is within ``within`` of it (absolute) or within ``relative`` times
    it (for a measured ratio whose scale depends on the machine); the prediction declares one of the
    two, since no default width can both accept a close guess and reject the misconception that a
    given prediction targets. Anything else (a choice letter, a bool) must be equal; letters ignore case.

    The tolerance applies to ``actual`` as computed: pass the exact value, never a rounded one (0.26
    is 0.051 from 0.209, outside ±0.05; against 0.21, the answer rounded, it would pass).
    ``bounds``: the range the question asks for (e.g. ``(0, 1)`` for a rate); a number outside it is
    wrong, however close to the answer.
    """
    if prediction is None or prediction is ...:
        return None
    if bounds is not None and _is_number(prediction) and not bounds[0] <= prediction <= bounds[1]:
        return False
    width = [w for w in (within, relative) if w is not None]
    if any(w < 0 for w in width) or len(width) > 1:
        raise ValueError("declare one non-negative tolerance: within= (absolute) or relative=")
    if _is_number(actual) and isinstance(actual, Integral):
        if width:
            raise ValueError("a whole-number answer is judged exactly: declare no tolerance for it")
        return _is_number(prediction) and prediction == actual
    if _is_number(actual):
        if not width:
            raise ValueError("a fractional answer needs its tolerance: reveal(..., within=...) or relative=...")
        limit = within if within is not None else relative * abs(actual)
        # the tolerance is a decimal the learner reads: 0.95 is within 0.02 of 0.97, whatever binary floats say
        return _is_number(prediction) and abs(prediction - actual) <= limit * (1 + 1e-9) + 1e-12
    if isinstance(prediction, str) and isinstance(actual, str):
        return prediction.strip().upper() == actual.strip().upper()
    if isinstance(actual, bool):
        return isinstance(prediction, bool) and prediction == actual
    return bool(prediction == actual)


def reveal(prediction: Any, actual: Any, why: L | str = "", *, within: float | None = None,
           relative: float | None = None, bounds: tuple[float, float] | None = None) -> None:
    """Print the prediction next to the answer and one sentence on the gap; returns nothing.

    ``within`` / ``relative``: the tolerance of a fractional answer, applied to ``actual`` exactly as
    given; ``bounds``: the range the question asks for (see :func:`judged`).

    [zh]
    把你的预测和答案并排打印出来，再用一句话说明两者的差距；不返回任何值。

    ``within`` / ``relative``：小数答案的容差，严格作用在给定的 ``actual`` 上；``bounds``：题目要求的取值范围
    （见 :func:`judged`）。
    """
    matched = judged(prediction, actual, within, relative, bounds)
    if matched is None:
        print(text(L("🔎 You did not write a prediction. The answer: {a}", "🔎 你没有写下预测。答案是：{a}")).format(a=_show(actual)))
    else:
        mark = "✅" if matched else "🤔"
        print(text(L("{m} You predicted {p}; the answer is {a}.", "{m} 你的预测是 {p}；实际是 {a}。")).format(
            m=mark, p=_show(prediction), a=_show(actual)))
        if bounds is not None and _is_number(prediction) and not bounds[0] <= prediction <= bounds[1]:
            print("   " + text(L("(the question asks for a number between {lo} and {hi}; {p} is outside that range)",
                                 "（题目要的是 {lo} 到 {hi} 之间的数；{p} 不在这个范围里）")).format(
                lo=_show(bounds[0]), hi=_show(bounds[1]), p=_show(prediction)))
        elif within is not None or relative is not None:
            width = _show(within) if within is not None else f"{relative:.0%}"
            print("   " + text(L("(a prediction within ±{w} of the answer counts as right)",
                                 "（与答案相差不超过 ±{w} 的预测算对）")).format(w=width))
    if why:
        print("   " + text(why))

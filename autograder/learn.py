"""Learner helpers besides ``check()``: hints in tiers and predict-then-run.

``hint("s02.hash_block")`` shows the next tier each time it is called (1 the idea, 2 the approach,
3 near-code); ``hint("s02.hash_block", 3)`` jumps to a tier. It prints and returns the text, so it
works in any kernel and in plain Python. Using hints costs nothing.

``reveal(prediction, actual, why)`` shows a demo's result next to what the learner predicted
before running it, and one sentence on the gap. Nothing here is graded.
"""
from __future__ import annotations

from typing import Any

from autograder.i18n import L, text
from autograder.spec import load_stage, stage_of

TIER_NAMES = (L("the idea", "思路"), L("the approach", "做法"), L("near-code", "接近代码"))
_shown: dict[str, int] = {}


def hint(todo_id: str, tier: int | None = None) -> str:
    """Print and return the next hint tier of ``todo_id`` (or tier ``tier``, 1-3)."""
    stage = load_stage(stage_of(todo_id), hidden=False)
    todo = stage.todo(todo_id)
    if not todo.hints:
        message = text(L("{label} has no hints.", "{label} 没有提示。")).format(label=todo.label)
        print(message)
        return message
    if tier is None:
        tier = min(_shown.get(todo_id, 0) + 1, len(todo.hints))
    if not 1 <= tier <= len(todo.hints):
        raise ValueError(f"hint tiers are 1 to {len(todo.hints)}")
    _shown[todo_id] = max(_shown.get(todo_id, 0), tier)
    head = text(L("💡 {label} · hint {tier}/{n} ({name})", "💡 {label} · 提示 {tier}/{n}（{name}）")).format(
        label=todo.label, tier=tier, n=len(todo.hints), name=text(TIER_NAMES[tier - 1]))
    body = text(todo.hints[tier - 1])
    more = "" if tier == len(todo.hints) else "\n" + text(
        L('(call hint("{id}") again for the next tier)', '（再调用一次 hint("{id}") 看下一条）')).format(id=todo_id)
    print(f"{head}\n{body}{more}")
    return body


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value) if isinstance(value, str) else str(value)


def reveal(prediction: Any, actual: Any, why: L | str = "") -> bool | None:
    """Print the prediction next to the measured answer and one sentence on the gap.

    Returns whether the prediction matched (numbers within 10 %, others equal), or None when no
    prediction was made.
    """
    if prediction is None or prediction is ...:
        print(text(L("🔎 You did not write a prediction. The answer: {a}", "🔎 你没有写下预测。答案是：{a}")).format(a=_show(actual)))
        matched = None
    else:
        if isinstance(prediction, (int, float)) and isinstance(actual, (int, float)) and not isinstance(prediction, bool):
            matched = abs(prediction - actual) <= 0.1 * max(abs(actual), 1e-12)
        else:
            matched = prediction == actual or (isinstance(prediction, str) and isinstance(actual, str)
                                               and prediction.strip().upper() == actual.strip().upper())
        mark = "✅" if matched else "🤔"
        print(text(L("{m} You predicted {p}; the answer is {a}.", "{m} 你的预测是 {p}；实际是 {a}。")).format(
            m=mark, p=_show(prediction), a=_show(actual)))
    if why:
        print("   " + text(why))
    return matched

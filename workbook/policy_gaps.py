"""What one eviction policy did against another, capacity by capacity, in words (given code, not a TODO).

Stage 4 compares pinning with plain LRU on the Mooncake traces at a few capacities. A fixed
sentence about that comparison ("pinning loses here") was false at one of the capacities plotted;
:func:`policy_gap_sentence` renders it from the hit rates instead, so that what it says (above,
within one point of, or below the baseline, and where) is what the numbers beside it show. The
simulations are deterministic, so the sentence is the same on every machine.
"""
from __future__ import annotations

from collections.abc import Sequence

from autograder.i18n import tr

__all__ = ["POINT", "gap_classes", "policy_gap_sentence"]

#: The threshold in percentage points: a difference no larger than this is "within one point"
#: (stage 4's prediction about pinning uses the same threshold).
POINT = 1.0


def _points(base: float, other: float) -> float:
    """``other - base`` in percentage points, rounded as the sentence prints it (two decimals)."""
    return round((other - base) * 100, 2)


def gap_classes(base: Sequence[float], other: Sequence[float], *, tolerance: float = POINT) -> list[str]:
    """Per capacity: ``"above"``, ``"within"`` or ``"below"`` -- ``other``'s hit rate against ``base``'s.

    Judged on the difference as printed (points, two decimals), so that a printed "+1.00" is never
    called "more than one point": "within" when ``|difference| <= tolerance``. ``ValueError`` if the
    lists differ in length.

    [zh]
    逐个容量给出 ``other`` 的命中率相对 ``base`` 的位置：``"above"``、``"within"`` 或 ``"below"``。按打印出来的
    差值（百分点，两位小数）判断，所以打印成 “+1.00” 的差值不会被说成“高出一个百分点以上”。
    """
    if len(base) != len(other):
        raise ValueError(tr("one hit rate per capacity in both lists", "两组命中率必须每个容量各有一个"))
    return ["above" if d > tolerance else "below" if d < -tolerance else "within"
            for d in (_points(b, o) for b, o in zip(base, other, strict=True))]


_PHRASE = {
    "en": {"above": "more than one point above {base}", "within": "within one point of {base}",
           "below": "more than one point below {base}"},
    "zh": {"above": "比{base}高出一个百分点以上", "within": "与{base}相差不到一个百分点",
           "below": "比{base}低一个百分点以上"},
}


def _join(items: list[str], zh: bool) -> str:
    if zh:
        return "、".join(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def policy_gap_sentence(label: str, capacities: Sequence[str], base: Sequence[float], other: Sequence[float], *,
                        base_name: str, other_name: str, lang: str = "en") -> str:
    """One sentence (``lang`` "en" or "zh"): ``other_name``'s hit rate against ``base_name``'s on trace
    ``label`` at each capacity (``capacities``: their labels, e.g. "2 %"), the signed difference in
    points, and which capacities fall above, within one point of, or below the baseline.

    Invariant: each capacity is named in exactly one group, the group its printed difference puts it
    in (a difference of +1.004 points prints as +1.00 and is "within one point").

    [zh]
    一句话（``lang`` 为 "en" 或 "zh"）：在 trace ``label`` 上，``other_name`` 的命中率在每个容量下相对
    ``base_name`` 的差值（百分点，带符号），以及哪些容量高出一个百分点以上、相差不到一个百分点或低一个百分点以上。
    不变量：每个容量恰好出现在一组里，就是它打印出来的差值所属的那一组。
    """
    if not len(capacities) == len(base) == len(other) or not capacities:
        raise ValueError(tr("one label and one hit rate per capacity in both lists, at least one capacity",
                            "每个容量要有一个标签，两组命中率也要每个容量各有一个；至少一个容量"))
    zh = lang == "zh"
    classes = gap_classes(base, other)
    diffs = ("、" if zh else ", ").join(f"{_points(b, o):+.2f}" for b, o in zip(base, other, strict=True))
    groups = []
    for kind in sorted(set(classes), key=classes.index):  # in the order the capacities first show them
        where = [c for c, k in zip(capacities, classes, strict=True) if k == kind]
        phrase = _PHRASE["zh" if zh else "en"][kind].format(base=_spaced(base_name) if zh else base_name)
        if len(where) == len(capacities):
            groups.append(f"在每个容量下都{phrase}" if zh else f"{phrase} at every capacity")
        else:
            groups.append(f"在 {_join(where, zh)} 时{phrase}" if zh else f"{phrase} at {_join(where, zh)}")
    caps = _join(list(capacities), zh)
    if zh:
        return (f"{label}：{other_name}的命中率减去{_spaced(base_name)}的，在 {caps} 时分别为 {diffs} 个百分点："
                f"{other_name}{'；'.join(groups)}。")
    return (f"{label}: {other_name} minus {base_name} at {caps}: {diffs} points; {other_name} is "
            f"{'; '.join(groups)}.")


def _spaced(name: str) -> str:
    """A Latin name set off by spaces inside Chinese text (as Chinese typesetting does); a Chinese one as is."""
    return f" {name} " if name.isascii() else name

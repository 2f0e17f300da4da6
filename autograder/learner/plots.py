"""Plot helpers for the notebooks: axes a learner can read without counting grid lines."""
from __future__ import annotations

from typing import Any


def log_axis(ax: Any, axis: str = "x", base: int = 10) -> None:
    """Put ``ax``'s ``axis`` ("x" or "y") on a log scale whose ticks carry plain numbers.

    Matplotlib labels only whole powers of the base on a log axis, so a range inside one decade
    (TTFTs of 20 to 90 ms) shows no label at all. Here base 10 gets labelled ticks at 1, 2 and 5
    times each power (100, 200, 500, 1,000) and base 2 at every power; minor ticks stay unlabelled.

    [zh]
    把 ``ax`` 的 ``axis``（"x" 或 "y"）设为对数刻度，刻度上标普通数字。

    在对数轴上 Matplotlib 只标注底数的整数次幂，所以落在同一个数量级内的范围（20 到 90 ms 的 TTFT）一个标注都
    没有。这里底数为 10 时，在每个幂的 1、2、5 倍处（100、200、500、1,000）标注刻度，底数为 2 时每个幂都标注；
    次刻度不标注。
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if axis not in ("x", "y"):
        raise ValueError(f"axis is 'x' or 'y', got {axis!r}")
    getattr(ax, f"set_{axis}scale")("log", base=base)
    scale = ax.xaxis if axis == "x" else ax.yaxis
    scale.set_major_locator(LogLocator(base=base, subs=(1.0, 2.0, 5.0) if base == 10 else (1.0,)))
    scale.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
    scale.set_minor_formatter(NullFormatter())

"""Plot helpers for the notebooks: axes a learner can read without counting grid lines."""
from __future__ import annotations

from typing import Any


def log_axis(ax: Any, axis: str = "x", base: int = 10) -> None:
    """Put ``ax``'s ``axis`` ("x" or "y") on a log scale whose ticks carry plain numbers.

    Matplotlib labels only whole powers of the base on a log axis, so a range inside one decade
    (TTFTs of 20 to 90 ms) shows no label at all. Here base 10 gets labelled ticks at 1, 2 and 5
    times each power (100, 200, 500, 1,000) and base 2 at every power; minor ticks stay unlabelled.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if axis not in ("x", "y"):
        raise ValueError(f"axis is 'x' or 'y', got {axis!r}")
    getattr(ax, f"set_{axis}scale")("log", base=base)
    scale = ax.xaxis if axis == "x" else ax.yaxis
    scale.set_major_locator(LogLocator(base=base, subs=(1.0, 2.0, 5.0) if base == 10 else (1.0,)))
    scale.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
    scale.set_minor_formatter(NullFormatter())

"""Wall-clock timing that counts the work an accelerator does, for notebooks and benchmarks alike.

CUDA kernels run asynchronously: a timer read right after a call would measure only the launch.
:func:`timed` waits for the device before starting and before stopping the clock, so the time is
the call's own, on CPU and GPU.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")


def synchronize(device: torch.device | str | None) -> None:
    """Wait until ``device`` has finished all queued work (a no-op on CPU)."""
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], T], device: torch.device | str | None) -> tuple[float, T]:
    """``(seconds, result)`` of one call of ``fn``, with the device's queued work included."""
    synchronize(device)
    start = time.perf_counter()
    out = fn()
    synchronize(device)
    return time.perf_counter() - start, out

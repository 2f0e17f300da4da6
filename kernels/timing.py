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


def add_torch_arguments(parser) -> None:
    """``--device`` and ``--threads``, as every benchmark takes them."""
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice); 1 is steadier on a machine shared with "
                             "other jobs, where several threads wait on each other")


def apply_torch_arguments(args) -> torch.device:
    """Set torch's thread count from ``--threads``; the ``--device`` to run on."""
    if args.threads:
        torch.set_num_threads(args.threads)
    return torch.device(args.device)

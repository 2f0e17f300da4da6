"""Timing that counts the work an accelerator does, for notebooks and benchmarks alike.

CUDA kernels run asynchronously: a timer read right after a call would measure only the launch.
:func:`timed` waits for the device before starting and before stopping the clock, so the time is
the call's own, on CPU and GPU.

:func:`steady_timing` is for a number a notebook states: on a CPU it times this process's CPU seconds
on one torch thread (other programs on the machine then neither add waiting time nor make torch's
threads spin on each other), and callers alternate the runs they compare, so that a change in
what else the machine does slows both alike and identical measurements agree; on a GPU it times the wall clock, with the device
synchronized.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import torch

T = TypeVar("T")


def synchronize(device: torch.device | str | None) -> None:
    """Wait until ``device`` has finished all queued work (a no-op on CPU).

    [zh]
    等待 ``device`` 完成所有排队的工作（在 CPU 上什么也不做）。
    """
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], T], device: torch.device | str | None,
          clock: Callable[[], float] = time.perf_counter) -> tuple[float, T]:
    """``(seconds, result)`` of one call of ``fn``, with the device's queued work included.

    [zh]
    调用一次 ``fn``，返回 ``(秒数, 结果)``，设备上排队的工作也计算在内。
    """
    synchronize(device)
    start = clock()
    out = fn()
    synchronize(device)
    return clock() - start, out


@contextlib.contextmanager
def steady_timing(device: torch.device | str | None) -> Iterator[Callable[[], float]]:
    """The clock to time with on ``device`` (see the module docstring); torch's thread count is restored after.

    [zh]
    在 ``device`` 上计时要用的时钟（见模块说明）；之后会恢复 torch 原来的线程数。
    """
    if device is not None and torch.device(device).type == "cuda":
        yield time.perf_counter
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield time.process_time
    finally:
        torch.set_num_threads(before)


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

"""Run-time choice of the paged-attention implementation for a device.

CUDA with Triton importable: the Triton kernel. Anything else (CPU, MPS, CUDA without Triton): the
torch reference, which is exact and runs everywhere. Importing this module does not import Triton.
"""

from __future__ import annotations

import platform
from collections.abc import Callable

import torch
from torch import Tensor

from kernels.paged_attention import paged_attention_torch

PagedAttentionFn = Callable[..., Tensor]


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def paged_attention_for(device: str | torch.device) -> tuple[str, PagedAttentionFn]:
    """``(name, fn)`` of the paged attention to use on ``device``; ``fn`` has the torch reference's signature."""
    if torch.device(device).type == "cuda" and triton_available():
        from kernels.triton_paged_attention import paged_attention_triton

        return "triton", paged_attention_triton
    return "torch", paged_attention_torch


def describe_device(device: str | torch.device | None = None) -> str:
    """One line naming the hardware that ran, for benchmark and notebook output."""
    device = torch.device(device) if device is not None else default_device()
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}, torch {torch.__version__}"
    return (f"cpu: {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
            f"torch {torch.__version__}")

"""Run-time choice of the paged-attention implementation for a device.

CUDA with Triton importable: the Triton kernel. Anything else (CPU, MPS, CUDA without Triton): the
torch reference, which is exact and runs everywhere. Importing this module does not import Triton.
"""

from __future__ import annotations

import platform
from collections.abc import Callable

import torch
from torch import Tensor

from autograder.i18n import tr
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


class WithFallback:
    """A fast kernel that, the first time it fails to compile or run, gives way to the torch reference
    for good, saying so in one line: a GPU whose Triton setup is broken never strands a learner.

    Invariant: after the first failure ``fallen`` is True and every call goes to ``fallback``.

    [zh]
    一个快速 kernel：它第一次编译或运行失败时，就永久让位给 torch 参考实现，并用一行文字说明。
    所以即使某块 GPU 上的 Triton 环境坏了，学习者也不会卡住。

    不变量：第一次失败之后 ``fallen`` 为 True，之后每次调用都交给 ``fallback``。
    """

    def __init__(self, name: str, primary: PagedAttentionFn, fallback: PagedAttentionFn = paged_attention_torch,
                 say: Callable[[str], None] = print) -> None:
        self.name, self.primary, self.fallback, self.say = name, primary, fallback, say
        self.fallen = False

    def __call__(self, *args, **kwargs) -> Tensor:
        if not self.fallen:
            try:
                return self.primary(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - compile and launch errors have many types
                self.fallen = True
                said = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
                self.say(tr(f"⚠️ the {self.name} kernel failed on this machine ({said}); using the torch path instead "
                            "(same results, slower).",
                            f"⚠️ {self.name} kernel 在本机运行失败（{said}），已改用 torch 实现（结果相同，速度较慢）。"))
        return self.fallback(*args, **kwargs)


def paged_attention_for(device: str | torch.device) -> tuple[str, PagedAttentionFn]:
    """``(name, fn)`` of the paged attention to use on ``device``; ``fn`` has the torch reference's signature.

    On CUDA with Triton importable: the Triton kernel, falling back to the torch reference (with one
    line saying so) if it fails to compile or run there.

    [zh]
    在 ``device`` 上使用的 paged attention，返回 ``(name, fn)``；``fn`` 的签名与 torch 参考实现相同。

    在能导入 Triton 的 CUDA 设备上用 Triton kernel；如果它在这台机器上编译或运行失败，就退回 torch 参考实现
    （并打印一行说明）。
    """
    if torch.device(device).type == "cuda" and triton_available():
        try:
            from kernels.triton_paged_attention import paged_attention_triton
        except Exception as exc:  # noqa: BLE001 - a broken Triton install
            print(tr(f"⚠️ Triton could not be loaded ({type(exc).__name__}); using the torch path instead.",
                     f"⚠️ 无法加载 Triton（{type(exc).__name__}），改用 torch 实现。"))
            return "torch", paged_attention_torch
        return "triton", WithFallback("Triton", paged_attention_triton)
    return "torch", paged_attention_torch


def describe_device(device: str | torch.device | None = None) -> str:
    """One line naming the hardware that ran, for benchmark and notebook output.

    [zh]
    一行文字，说明运行所用的硬件，供基准测试和笔记本输出使用。
    """
    device = torch.device(device) if device is not None else default_device()
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}, torch {torch.__version__}"
    n = torch.get_num_threads()
    threads = tr(f"{n} torch thread{'' if n == 1 else 's'}", f"{n} 个 torch 线程")
    return f"cpu: {platform.processor() or platform.machine()}{tr(', ', '，')}{threads}{tr(', ', '，')}torch {torch.__version__}"

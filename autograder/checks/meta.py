"""PyTorch's ``meta`` device for the probes of a device contract (shapes and devices, no values).

A tensor created on the wrong device fails such a probe on a CPU-only machine too. The price: every
op on ``meta`` runs PyTorch's Python meta kernels. The first one (even ``arange``) imports SymPy
through ``torch._check`` (about 0.7 s of CPU); the first elementwise one would import ``torch._dynamo``
as well (about 1.7 s more, once per grading child), only to wrap the kernel in "do not trace this
under ``torch.compile``", which changes nothing for code that runs eagerly. :func:`meta_probe` marks
those kernels as already wrapped for the length of a probe, so a probe pays neither that import nor
anything else it would not pay in a notebook; a kernel the scan misses just imports it as before.
"""
from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable
from typing import TypeVar

P = TypeVar("P", bound=Callable)

# Where torch keeps the Python meta kernels and the reference ops they are built from.
_KERNEL_MODULES = ("torch._refs", "torch._decomp", "torch._prims", "torch._prims_common", "torch._meta_registrations")
_MARK = "__dynamo_disable"  # the attribute torch._compile._disable_dynamo caches its wrapper in
_kernels: list[types.FunctionType] | None = None


def meta_device() -> str:
    """The ``meta`` device, ready for the probes.

    The ``torch._dynamo`` import (when a probe still makes it) asks :mod:`tempfile` for a directory,
    which tries to create and delete a file; a grading child may not delete files, so torch then
    gets the child's own working directory for its cache (never used by these probes)."""
    import os
    import tempfile

    if "torch._dynamo" not in sys.modules and "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        try:
            tempfile.gettempdir()
        except OSError:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.getcwd()
    return "meta"


def on_meta(action):
    """``action()``, which runs learner code on meta tensors. Copying a meta tensor to the host (tolist,
    cpu, numpy) makes torch raise ``NotImplementedError("Cannot copy out of meta tensor")``, which the
    grader would read as an unfinished TODO: it becomes a ``RuntimeError`` saying what happened."""
    try:
        return action()
    except NotImplementedError as exc:
        if "meta tensor" not in str(exc):
            raise
        raise RuntimeError(f"a tensor was copied to the host (tolist, cpu, numpy ...): {exc}") from None


def meta_probe(probe: P) -> P:
    """Decorator for a probe that runs on ``meta``: see the module docstring. The marks are set only
    where torch has set none and removed after the probe, so the process's torch is as it was."""

    @functools.wraps(probe)
    def run(*args, **kwargs):
        marked = [fn for fn in _dynamo_wrapped_kernels() if _MARK not in fn.__dict__]
        for fn in marked:
            fn.__dict__[_MARK] = fn  # what torch would cache, minus the "not under torch.compile" wrapper
        try:
            return probe(*args, **kwargs)
        finally:
            for fn in marked:
                if fn.__dict__.get(_MARK) is fn:
                    del fn.__dict__[_MARK]

    return run  # type: ignore[return-value]


def _dynamo_wrapped_kernels() -> list[types.FunctionType]:
    """The functions torch wrapped with ``torch._compile._disable_dynamo`` in its kernel modules, found
    once per process: from each module's functions and tables of functions (the dispatcher's Python
    kernels), through ``__wrapped__`` and the functions each one closes over. Plain reads of dicts and
    closure cells only, so no lazy attribute of torch runs. Empty where torch is not imported or builds
    that wrapper otherwise."""
    global _kernels
    if _kernels is not None:
        return _kernels
    compile_module = sys.modules.get("torch._compile")
    wrapper = getattr(getattr(compile_module, "_disable_dynamo", None), "__code__", None)
    if wrapper is None:
        return []
    inner = next((c for c in wrapper.co_consts if isinstance(c, types.CodeType) and c.co_name == "inner"), None)
    found: dict[int, types.FunctionType] = {}
    seen: set[int] = set()
    todo: list[object] = []
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and any(name == k or name.startswith(k + ".") for k in _KERNEL_MODULES):
            for value in list(vars(module).values()):
                todo.extend(value.values() if type(value) is dict else (value,))
    while todo:
        fn = todo.pop()
        if not isinstance(fn, types.FunctionType) or id(fn) in seen:
            continue
        seen.add(id(fn))
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
        if fn.__code__ is inner and "fn" in cells:
            target = cells["fn"].cell_contents
            if isinstance(target, types.FunctionType):
                found[id(target)] = target
        todo.append(fn.__dict__.get("__wrapped__"))
        for cell in cells.values():
            try:
                todo.append(cell.cell_contents)
            except ValueError:  # a cell not filled yet
                pass
    _kernels = list(found.values())
    return _kernels

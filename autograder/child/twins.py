"""Given code that already does what a TODO asks (its "twins"), made unusable while that TODO is judged.

A TODO names its twins in its spec (``Todo(..., twins=("kernels.paged_attention:paged_attention_torch",))``):
functions or methods of modules the learner can import (the kernels, an earlier stage's reference)
that implement the TODO on their own. Calling one instead of writing the TODO would earn its points
with no code of one's own, so while the TODO is judged every twin raises ``PermissionError``.

The function object itself is changed (its ``__code__`` is swapped), not the name that points to it,
so every alias is blocked as well: a re-import, an attribute of another module, a reference saved
in a cell before the checks ran, a ``functools.partial``, the ``__wrapped__`` chain of a decorator.
In the grading child the swap is for good (:func:`block`), before any learner code runs, and the
original code object is dropped, so learner code cannot put it back; and the copies of the twins'
modules that child may read have the twins' definitions replaced (:func:`blocked_source`), so that
re-importing, reloading or executing the module file gives a blocked twin too. In a learner's
notebook, ``check()`` blocks them for the duration of its probes only (:func:`blocked`).

Invariant: a blocked twin keeps its name, signature defaults and closure; only calling it changes.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import types
from collections.abc import Iterable, Iterator


class Unavailable(Exception):
    """The twin's module cannot be imported on this machine (e.g. Triton is missing): nobody can
    call it here, so there is nothing to block."""


def resolve(name: str) -> object:
    """The object ``"package.module:Qualified.name"`` names (importing the module)."""
    module, _, qualname = name.partition(":")
    if not module or not qualname:
        raise ValueError(f"a twin is named 'module:qualname', not {name!r}")
    try:
        obj: object = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - whatever stops the import stops a learner's import too
        raise Unavailable(f"{module}: {type(exc).__name__}: {exc}") from exc
    for part in qualname.split("."):
        obj = vars(obj)[part] if isinstance(obj, type) and part in vars(obj) else getattr(obj, part)
    return obj


def _functions(obj: object) -> list[types.FunctionType]:
    """The plain functions behind ``obj``: itself (or what a static/class method or property wraps)
    and every function on its ``__wrapped__`` chain."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        return [f for part in (obj.fget, obj.fset, obj.fdel) if part is not None for f in _functions(part)]
    out: list[types.FunctionType] = []
    seen: set[int] = set()
    given = obj
    while obj is not None and id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
        if isinstance(obj, types.FunctionType):
            out.append(obj)
        # a decorator's wrapper, or a compiled kernel's Python function (Triton's JITFunction.fn)
        obj = getattr(obj, "__wrapped__", None) or getattr(obj, "fn", None)
    if not out:
        raise TypeError(f"{given!r} is not a Python function; only functions and methods can be blocked")
    return out


def message(twin: str, label: str) -> str:
    return (f"grading: {label} must be your own code; calling the given {twin.replace(':', '.')}, "
            "which already does it, is not allowed there")


def _blocker(fn: types.FunctionType, text: str) -> types.CodeType:
    """A code object that raises ``PermissionError(text)``, with ``fn``'s free variables (so that it
    can replace ``fn.__code__`` whatever closure ``fn`` has)."""
    free = fn.__code__.co_freevars
    lines = ["def _outer():", *(f"    {n} = None" for n in free), "    def _blocked(*args, **kwargs):"]
    if free:
        lines.append(f"        ({', '.join(free)},)")
    lines += [f"        raise PermissionError({text!r})", "    return _blocked"]
    namespace: dict = {}
    exec(compile("\n".join(lines), "<given code blocked while this TODO is graded>", "exec"), namespace)
    code = namespace["_outer"]().__code__
    assert code.co_freevars == free
    return code


def _swap(names: Iterable[str], label: str) -> list[tuple[types.FunctionType, types.CodeType]]:
    swapped = []
    for name in names:
        try:
            obj = resolve(name)
        except Unavailable:
            continue
        for fn in _functions(obj):
            swapped.append((fn, fn.__code__))
            fn.__code__ = _blocker(fn, message(name, label))
    return swapped


def block(names: Iterable[str], label: str) -> None:
    """Block every twin in ``names`` for the rest of this process (the grading child)."""
    _swap(names, label)


@contextlib.contextmanager
def blocked(names: Iterable[str], label: str) -> Iterator[None]:
    """Block every twin in ``names`` while the ``with`` body runs (``check()`` in a notebook)."""
    swapped = _swap(names, label)
    try:
        yield
    finally:
        for fn, code in reversed(swapped):
            fn.__code__ = code


def blocked_source(text: str, qualnames: Iterable[str], label: str, module: str) -> str:
    """``text`` (a module's source) with the definitions of ``qualnames`` replaced by ones that raise,
    decorators and body included (the file a child may read then no longer holds the twin)."""
    from autograder.core.pysource import definition_span

    lines = text.splitlines()
    spans = []
    for qual in qualnames:
        start, end = definition_span(text, qual, with_comments_above=False)
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        stub = [f"{indent}def {qual.split('.')[-1]}(*args, **kwargs):",
                f"{indent}    raise PermissionError({message(f'{module}:{qual}', label)!r})"]
        spans.append((start, end, stub))
    for start, end, stub in sorted(spans, reverse=True):
        lines[start:end] = stub
    return "\n".join(lines) + "\n"


def by_module(files: dict[str, "os.PathLike"]) -> dict:
    """``{file: (module, [qualname, ...])}`` for the twins (``module:qualname`` -> the module's file)
    whose file exists; a twin in a module that is not a file of the child's (e.g. a ``solutions``
    module, which arrives as text) is left out."""
    out: dict = {}
    for twin, path in files.items():
        module, _, qual = twin.partition(":")
        if os.path.isfile(path):
            out.setdefault(path, (module, []))[1].append(qual)
    return out

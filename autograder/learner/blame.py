"""Blaming the right TODO inline, and spotting code the grader will not see.

When a check of TODO k fails in the learner's notebook, the cause may be an earlier TODO that k's
code calls. The grader avoids that by running k with the course's code for every other TODO; inline,
:func:`find_blame` does the same where the course's reference is importable: re-run the check on that
hybrid, and if it passes, name the other TODO that fails its own checks as the grader would judge it.
Where the reference is not importable (a classroom release) it looks at which other TODOs the check
called and names one that fails its own visible checks.

:func:`names_outside_graded_cells` finds global names a TODO's code uses that are defined in the
notebook outside the graded (TODO) cells, which grading never runs; :func:`graded_cell_sources`
gives the source of those cells.
"""
from __future__ import annotations

import builtins
import dis
import functools
import importlib
import importlib.util
import inspect
import linecache
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from autograder.child.hybrid import MissingTarget, build_impl
from autograder.child.probe import run_probe
from autograder.core import data
from autograder.core.pysource import defined_names
from autograder.core.spec import Check, Stage, Todo


@contextmanager
def calls_recorded() -> Iterator[set[str]]:
    """Names of the Python functions called inside the block (a profile hook, restored after)."""
    names: set[str] = set()
    old = sys.getprofile()

    def hook(frame, event, arg):
        if event == "call":
            names.add(frame.f_code.co_name)

    sys.setprofile(hook)
    try:
        yield names
    finally:
        sys.setprofile(old)


def _fresh_reference(stage: Stage) -> types.ModuleType | None:
    """A private copy of the stage's reference module (the hybrid rebinds names in it), or None
    where the reference is not part of this copy of the course."""
    try:
        importlib.import_module(stage.reference)  # dataclasses resolve names through sys.modules
        spec = importlib.util.find_spec(stage.reference)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - no reference, no hybrid
        return None
    return module


def as_graded(stage: Stage, todo: Todo, learner: dict, only: Todo | None = None) -> Any | None:
    """The learner's ``todo`` with the course's code for every other TODO (or for ``only`` that one),
    as the grader builds it; None where the reference is not part of this copy of the course."""
    reference = _fresh_reference(stage)
    if reference is None:
        return None
    if only is not None:
        stage = replace(stage, todos=[todo, only], checks=[], quiz=None)
    try:
        return build_impl(stage, todo, dict(learner), reference)
    except MissingTarget:
        return None


def _fails(stage: Stage, todo: Todo, impl: Any, expected: dict[str, dict], run: Callable[[Check, Any], dict]) -> bool:
    """Whether ``todo`` fails one of its own visible checks on ``impl``."""
    return any(c.key in expected and not data.outcomes_equal(expected[c.key], run(c, impl), c.atol)
               for c in stage.checks_for(todo.id, hidden=False))


def find_blame(stage: Stage, own: Todo, check: Check, impl: Any, learner: dict, expected: dict[str, dict],
               called: set[str], run: Callable[[Check, Any], dict] = run_probe) -> tuple[Todo, bool] | None:
    """The other TODO to fix first for this failed check, or None when its own TODO is at fault.

    Returns ``(todo, seen)``: ``seen`` is True when that TODO fails its own visible checks, False when
    only the course's version of it makes this check pass (its bug is one its visible checks miss).
    """
    others = [t for t in stage.todos if t.id != own.id and t.target != "quiz"]
    was_called = sorted((t for t in others if t.function_name in called), key=lambda t: t.number)
    hybrid = as_graded(stage, own, learner) if others else None
    if hybrid is None:  # no reference here (a classroom release): trust what the check called
        for t in was_called:
            if _fails(stage, t, impl, expected, run):
                return t, True
        return None
    if data.outcomes_equal(expected[check.key], run(check, hybrid), check.atol):
        rest = sorted((t for t in others if t not in was_called), key=lambda t: t.number)
        for t in was_called + rest:  # judged as the grader judges it: with the course's code around it
            other = as_graded(stage, t, learner)
            if other is not None and _fails(stage, t, other, expected, run):
                return t, True
        for t in was_called:  # a bug its visible checks miss: the one whose course version fixes this
            swapped = as_graded(stage, own, learner, only=t)
            if swapped is not None and data.outcomes_equal(expected[check.key], run(check, swapped), check.atol):
                return t, False
        return (was_called[0], False) if was_called else None
    return None  # fails with the course's code for the others too: this TODO's own bug


# -- names the grader will not see ---------------------------------------------------------------
def _global_names(code: types.CodeType) -> set[str]:
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return {n for n in names if isinstance(n, str)}


def _functions_of(obj: Any) -> list[types.FunctionType]:
    if isinstance(obj, types.FunctionType):
        return [obj]
    if isinstance(obj, type):
        out = []
        for v in vars(obj).values():
            v = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v
            if isinstance(v, types.FunctionType):
                out.append(v)
        return out
    return []


def _cell_source(fn: types.FunctionType) -> str:
    """The notebook cell (or module) where ``fn`` was written; empty when it cannot be found."""
    source = "".join(linecache.getlines(fn.__code__.co_filename))
    if not source:
        try:
            source = inspect.getsource(inspect.getmodule(fn) or fn)
        except (OSError, TypeError):
            return ""
    return source


def _cell_names(fn: types.FunctionType) -> frozenset[str]:
    """Top-level names defined by the notebook cell where ``fn`` was written."""
    source = _cell_source(fn)
    return _names_in(source) if source else frozenset()


def graded_cell_sources(stage: Stage, namespace: dict) -> list[str]:
    """The source of each cell where the notebook wrote one of the stage's TODO names: the cells that
    grading runs (each once, in no particular order)."""
    return list(dict.fromkeys(s for t in stage.todos for fn in _functions_of(namespace.get(t.owner))
                              if (s := _cell_source(fn))))


@functools.lru_cache(maxsize=256)
def _names_in(source: str) -> frozenset[str]:
    """:func:`defined_names`, once per source text: every ``check()`` reads the same cells again."""
    return frozenset(defined_names(source))


def names_outside_graded_cells(stage: Stage, todo: Todo, namespace: dict, given_names: set[str]) -> list[str]:
    """Global names ``todo``'s code uses that the notebook defines only outside the graded cells."""
    mine = namespace.get(todo.owner)
    if mine is None:
        return []
    graded: set[str] = {t.owner for t in stage.todos}
    for t in stage.todos:
        for fn in _functions_of(namespace.get(t.owner)):
            graded |= _cell_names(fn)
    target = getattr(mine, todo.function_name, None) if "." in todo.target else mine
    used = set().union(*(_global_names(fn.__code__) for fn in _functions_of(target))) if target else set()
    if isinstance(mine, type):  # the class's other code in the same cell runs too
        used |= set().union(*(_global_names(fn.__code__) for fn in _functions_of(mine)))
    return sorted(n for n in used if n in namespace and n not in graded and n not in given_names
                  and not hasattr(builtins, n))

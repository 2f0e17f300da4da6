"""Hybrid implementations: the learner's code for one TODO, the reference for everything else.

Grading TODO k this way blames a mistake on the TODO that made it: a wrong ``_normalize`` cannot
fail the checks of ``match_prefix``. The reference given here is already stubbed at TODO k (see
:func:`autograder.core.pysource.stub_region`), so the process that runs learner code never holds the answer it is graded on.
"""
from __future__ import annotations

import types
from typing import Any

from autograder.core.spec import Stage, Todo


class MissingTarget(Exception):
    """The learner's notebook does not define the object or method a TODO needs."""


def _rebind(fn: Any, globals_: dict, class_cells: list | None = None) -> Any:
    """A copy of a function that resolves global names in ``globals_``.

    A method using zero-argument ``super()`` holds a ``__class__`` cell naming the class it was
    written in; the copy gets a fresh cell, collected in ``class_cells`` so that the caller can
    point it at the hybrid class once that exists.
    """
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(_rebind(fn.__func__, globals_, class_cells))
    if isinstance(fn, property):
        return property(*(_rebind(f, globals_, class_cells) if f else None for f in (fn.fget, fn.fset, fn.fdel)), fn.__doc__)  # type: ignore[call-arg]  # 3 + doc
    if not isinstance(fn, types.FunctionType):
        return fn
    closure = fn.__closure__
    if closure and "__class__" in fn.__code__.co_freevars and class_cells is not None:
        cells = list(closure)
        i = fn.__code__.co_freevars.index("__class__")
        cells[i] = types.CellType()
        class_cells.append(cells[i])
        closure = tuple(cells)
    new = types.FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__dict__.update(fn.__dict__)
    return new


def build_impl(stage: Stage, todo: Todo, learner: dict, reference: types.ModuleType,
               notes: list[str] | None = None) -> types.SimpleNamespace:
    """Namespace for probing ``todo``: the learner's graded cells, with the reference for every other TODO.

    The graded unit is the learner's whole TODO cell: for a method TODO, the learner's class (its
    ``__init__``, helpers and class attributes included) with the reference's versions of the class's
    *other* TODO methods; for a function TODO, the learner's function; the learner's top-level helpers
    stay. Every other TODO's target comes from the reference, so a mistake there is not blamed here.
    Whatever the grader had to take from the course instead is described in ``notes``.
    """
    notes = notes if notes is not None else []
    ref_names = {k: v for k, v in vars(reference).items() if not k.startswith("__")}
    owner = todo.owner
    g: dict = dict(ref_names)
    g.update(learner)
    for t in stage.todos:  # other TODO cells: the reference
        if t.owner != owner and t.owner in ref_names:
            g[t.owner] = ref_names[t.owner]
    if owner not in learner:
        raise MissingTarget(f"your notebook defines no `{owner}` (was its TODO cell deleted, or the name changed?)")
    mine = learner[owner]
    if "." in todo.target:
        method = todo.function_name
        ref_cls = ref_names[owner]
        if not isinstance(mine, type):
            raise MissingTarget(f"`{owner}` in your notebook is not a class")
        if method not in vars(mine):
            raise MissingTarget(f"class `{owner}` in your notebook has no method `{method}` (renamed?)")
        cells: list = []
        attrs = {k: _rebind(v, g, cells) for k, v in vars(mine).items() if k not in ("__dict__", "__weakref__")}
        others = {t.function_name for t in stage.todos if t.owner == owner and t.id != todo.id}
        for k, v in vars(ref_cls).items():
            if k in ("__dict__", "__weakref__"):
                continue
            if k in others or k not in attrs:
                if k not in others and not k.startswith("__"):
                    notes.append(f"`{owner}.{k}`")
                # reference code keeps the reference module's globals
                attrs[k] = _rebind(v, v.__globals__ if isinstance(v, types.FunctionType) else g, cells)
        hybrid = type(owner, mine.__bases__, attrs)
        for cell in cells:
            cell.cell_contents = hybrid  # zero-argument super() inside the hybrid's methods
        g[owner] = hybrid
    else:
        if not callable(mine):
            raise MissingTarget(f"`{owner}` in your notebook is not a function")
        g[owner] = _rebind(mine, g)
    # The reference module here is this child's own stubbed copy: point its name at the hybrid too,
    # so reference code that calls the TODO (e.g. a reference `prefill` calling the TODO function
    # `suffix_positions`) runs the learner's version instead of the stub.
    vars(reference)[owner] = g[owner]
    # The learner's own top-level functions resolve names in the hybrid namespace too.
    for k, v in learner.items():
        if k != owner and g.get(k) is v and isinstance(v, types.FunctionType) and v.__globals__ is learner:
            g[k] = _rebind(v, g)
    return types.SimpleNamespace(**g)

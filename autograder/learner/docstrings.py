"""``help()`` in the notebook's language: each docstring of the course's code shows its edition's part.

A docstring of the course's given code (``kernels/``, ``workbook/``, the references of earlier stages)
and of the helpers a notebook calls (``check``, ``hint``, ...) is one text in two languages: the English, then a line ``[zh]``, then the Chinese (the convention
:mod:`autograder.authoring.localize` reads when it puts code into a notebook). Python keeps both in
``__doc__``, so ``help(prefill_flops)`` in a Chinese notebook would show the English first.

:func:`localize_docstrings` sets the ``__doc__`` of every module, class, function, method and
property of those modules to the part of the current language (:func:`autograder.core.i18n.language`):
for the modules imported already, and, through an import hook, for each one imported afterwards. The
bilingual text stays where it is written (one source); only the kernel's objects change, and only in
a learner's kernel (the first cell's :func:`autograder.learner.runtime.start`; never a grading child).

Invariants: a docstring without a ``[zh]`` line is left as it is; the bilingual original of every
docstring changed is kept (:data:`_original`), so switching the language again picks the other part.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import sys
import textwrap
import threading
import types
from typing import Any

from autograder.core.i18n import language

COURSE_PACKAGES = ("kernels", "workbook", "solutions")  # where the course's given code lives
# and the helpers a notebook calls (check, demo, hint, progress, reveal, set_language, tr, pad, log_axis)
LEARNER_MODULES = ("autograder.learner", "autograder.core.i18n", "autograder.core.textwidth")
MARK = "[zh]"

_original: dict[int, tuple[object, str]] = {}  # id(obj) -> (obj, its bilingual docstring); obj kept alive
_lock = threading.Lock()


def doc_part(doc: str, lang: str) -> str:
    """The ``lang`` part of a bilingual docstring (cleaned as :func:`inspect.cleandoc` does);
    ``doc`` itself when it has no ``[zh]`` line."""
    lines = doc.splitlines()
    mark = next((i for i, line in enumerate(lines) if line.strip() == MARK), None)
    if mark is None:
        return doc
    if lang == "zh":  # every line of the Chinese part is indented alike
        return textwrap.dedent("\n".join(lines[mark + 1:])).strip()
    return inspect.cleandoc("\n".join(lines[:mark])).rstrip()


def _targets(obj: object) -> list[object]:
    """The objects whose ``__doc__`` ``help(obj)`` shows for ``obj`` itself: a function's (the one a
    classmethod, staticmethod or property wraps), a class's."""
    if isinstance(obj, (classmethod, staticmethod)):
        return [obj.__func__]
    if isinstance(obj, property):
        return [obj, *(f for f in (obj.fget,) if f is not None)]
    return [obj]


def _set(obj: object, lang: str) -> None:
    key = id(obj)
    known = _original.get(key)
    doc = known[1] if known is not None and known[0] is obj else getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or MARK not in doc:
        return
    try:
        obj.__doc__ = doc_part(doc, lang)
    except (AttributeError, TypeError):  # a built-in type or a read-only attribute: left as it is
        return
    _original[key] = (obj, doc)


def localize_module(module: types.ModuleType, lang: str) -> None:
    """Every docstring of ``module`` and of what it defines (classes, their members) in ``lang``."""
    _set(module, lang)
    name = module.__name__
    for value in list(vars(module).values()):
        if getattr(value, "__module__", None) != name:
            continue  # imported from elsewhere: localized with its own module
        if inspect.isclass(value):
            _set(value, lang)
            for member in list(vars(value).values()):
                for target in _targets(member):
                    if inspect.isfunction(target) or isinstance(target, property) or inspect.isclass(target):
                        _set(target, lang)
        elif inspect.isfunction(value):
            _set(value, lang)


def _is_course(name: str) -> bool:
    return name.split(".", 1)[0] in COURSE_PACKAGES or \
        any(name == m or name.startswith(m + ".") for m in LEARNER_MODULES)


class _Localizing(importlib.abc.Loader):
    """A loader that runs the real one, then localizes the module it made (every other attribute is
    the real loader's, so source lookups and resources work as before)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._inner.exec_module(module)
        localize_module(module, language())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds a course module with the finders after it and wraps its loader in :class:`_Localizing`."""

    def find_spec(self, fullname: str, path: Any, target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not _is_course(fullname):
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, _Finder) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module") and \
                        not isinstance(spec.loader, _Localizing):
                    spec.loader = _Localizing(spec.loader)
                return spec
        return None


def localize_docstrings(lang: str | None = None) -> None:
    """The course's docstrings in ``lang`` (default: the current language) from now on: those of the
    modules imported already, and of each course module imported later (the hook is installed once)."""
    lang = lang or language()
    with _lock:
        if not any(isinstance(f, _Finder) for f in sys.meta_path):
            sys.meta_path.insert(0, _Finder())
        modules = [m for name, m in list(sys.modules.items()) if _is_course(name) and isinstance(m, types.ModuleType)]
    for module in modules:
        localize_module(module, lang)

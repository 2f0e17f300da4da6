"""A learner's notebook namespace without a kernel: the stage's reference module executed with some
TODO regions replaced by the learner's stub (or by a planted slip), as the notebook's setup, given and
TODO cells would define it. Used by the tests of ``check()`` in any order and of the demo guard."""
from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterable, Iterator

from autograder.core import layout, pysource
from autograder.core.spec import Stage


def module_text(stage: Stage, stubbed: Iterable[str] = (), edits: Iterable[tuple[str, str]] = ()) -> str:
    """The reference's text with each TODO id in ``stubbed`` stubbed and each ``(old, new)`` edit made
    (``old`` must occur exactly once, as in ``tests/mutants_sNN.py``)."""
    text = layout.stage_files(stage.id).reference.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, f"{stage.id}: edit does not occur exactly once: {old[:60]!r}"
        text = text.replace(old, new)
    for tid in stubbed:
        text = pysource.stub_region(text, stage.todo(tid).target)
    return text


@contextlib.contextmanager
def notebook_namespace(text: str, name: str = "pcw_learner_notebook") -> Iterator[dict]:
    """The globals of a notebook whose cells define what ``text`` defines (its own module object, so
    that dataclasses and pickling resolve names as they do in a kernel's ``__main__``)."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    sys.modules[name] = module
    try:
        exec(compile(text, module.__file__, "exec"), vars(module))
        yield vars(module)
    finally:
        sys.modules.pop(name, None)

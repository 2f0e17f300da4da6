"""Running one probe against one implementation, turning whatever happens into an outcome."""
from __future__ import annotations

import errno
import importlib
import types
from typing import Any

from autograder.core import data
from autograder.core.spec import Check, Stage, Todo


def innermost_function(tb: types.TracebackType | None) -> str:
    """Name of the function where an exception was raised (the last frame of its traceback)."""
    name = "?"
    while tb is not None:
        name = tb.tb_frame.f_code.co_name
        tb = tb.tb_next
    return name


def run_probe(check: Check, impl: Any) -> dict:
    """The outcome of ``check.probe(impl)``: a value, an exception type, or an unfilled TODO.

    ``BaseException`` subclasses other than the interpreter's own exit signals are caught too, so
    that learner code raising ``SystemExit`` or ``KeyboardInterrupt`` fails the check instead of
    ending the run.
    """
    try:
        value = check.probe(impl)
    except NotImplementedError as exc:
        return {"kind": "todo", "function": innermost_function(exc.__traceback__)}
    except RecursionError:
        return {"kind": "raised", "type": "RecursionError", "message": "maximum recursion depth exceeded"}
    except OSError as exc:
        if exc.errno == errno.EFBIG:  # the child's file-size limit: far too much printed output
            return {"kind": "raised", "type": "OSError", "message": "output limit exceeded (printed more than 32 MB)"}
        return data.raised(exc)
    except BaseException as exc:  # noqa: BLE001 - learner code may raise anything
        return data.raised(exc)
    try:
        return data.ok(value)
    except Exception as exc:  # an unencodable or oversized result is the learner's answer, not a crash
        return {"kind": "error", "message": f"the result could not be compared: {exc}"}


def todo_of_function(stage: Stage, function: str) -> Todo | None:
    for t in stage.todos:
        if t.function_name == function:
            return t
    return None


def reference_outcome(check: Check, reference: str) -> dict:
    """The outcome of ``check`` on the reference module named ``reference`` (trusted code only)."""
    return run_probe(check, importlib.import_module(reference))

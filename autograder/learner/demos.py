"""``demo(...)``: a notebook cell that runs a learner's code only when that code passes its checks.

A demo, a prediction's ``reveal(...)`` or a plot that runs on a learner's TODO says something true
only if the TODO is right. So a demo cell names the TODOs it runs::

    with demo("s04.release_blocks", "s04.expire"):
        ...

and, before its body runs, each of them is judged on its visible checks (as ``check()`` judges it:
the learner's code for that TODO, the course's for the others), once per version of the learner's
code. While one of them is unfinished or fails, the cell prints one line naming the first such TODO
(in notebook order) and skips its body: no number, no "answer", no plot from wrong code.

When the body runs, it runs under two bounds, so that no learner bug can hang or kill the kernel: a
time limit, and a cap on the memory the kernel may add. Whatever stops it (a bound, a
:class:`~workbook.contract.ResultError` from given code that checked a learner's value, any other
exception) ends the cell with one line that names the TODO to look at, never a traceback through
the course's code. ``KeyboardInterrupt`` (the stop button) is left alone.

How the body is skipped: the guard sets a trace function on the cell's frame that raises a private
exception at the body's first line, and the guard's ``__exit__`` swallows it. This is CPython's
documented ``frame.f_trace`` hook; the previous trace function (a debugger's) is put back.
"""
from __future__ import annotations

import builtins
import contextlib
import os
import signal
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any

from autograder.core import messages
from autograder.core.i18n import text
from autograder.core.spec import Stage, Todo, load_stage, stage_of

#: The longest a demo body may run (the slowest demo of the course takes well under a minute on 2 cores).
DEMO_TIME_LIMIT_S = 300
#: How much memory a demo body may add to the kernel, at most (and at most 80 % of what is available).
DEMO_MEMORY_GB = 8


class _Skip(Exception):
    """Raised by the guard's trace function at the first line of a skipped body."""


@dataclass
class _Verdict:
    """What the guard found for one TODO: ``state`` is "ok", "todo" (unfinished) or "failing";
    ``culprit`` the TODO to name (another one, where a classroom copy blames an unfinished dependency)."""

    state: str
    culprit: Todo


# todo id -> (the learner objects it was judged on, its verdict); kept alive so ids are not reused
_judged: dict[str, tuple[tuple, _Verdict]] = {}


def _learner_objects(namespace: dict) -> tuple:
    """The functions and classes the notebook itself defined: a new cell run makes a new version."""
    home = namespace.get("__name__")
    return tuple(sorted(((k, v) for k, v in namespace.items()
                         if isinstance(v, (types.FunctionType, type)) and getattr(v, "__module__", None) == home),
                        key=lambda kv: kv[0]))


def judge_todo(todo: Todo, stage: Stage, namespace: dict) -> _Verdict:
    """``todo``'s visible checks on the notebook ``namespace``, cached per version of the learner's code."""
    from autograder.learner.inline import evaluate

    version = _learner_objects(namespace)
    cached = _judged.get(todo.id)
    if cached is not None and len(cached[0]) == len(version) and all(
            a[0] == b[0] and a[1] is b[1] for a, b in zip(cached[0], version, strict=True)):
        return cached[1]
    report = evaluate(todo.id, namespace=namespace)
    first = report.verdicts[0] if report.verdicts else None
    if first is not None and first.not_implemented:
        verdict = _Verdict("todo", stage.todo(first.not_implemented))
    else:
        verdict = _Verdict("ok" if report.passed else "failing", todo)
    _judged[todo.id] = (version, verdict)
    return verdict


def _target_code(todo: Todo, namespace: dict) -> types.CodeType | None:
    owner = namespace.get(todo.owner)
    fn = vars(owner).get(todo.function_name) if isinstance(owner, type) and "." in todo.target else owner
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "__code__", None)


def _todo_in_traceback(tb: types.TracebackType | None, codes: dict[types.CodeType, Todo]) -> Todo | None:
    """The innermost frame of the traceback that is a learner's TODO function, as its TODO."""
    found = None
    while tb is not None:
        found = codes.get(tb.tb_frame.f_code, found)
        tb = tb.tb_next
    return found


def _missing_notebook_name(exc: BaseException, tb: types.TracebackType | None, namespace: dict[str, Any]) -> str | None:
    """The name, when ``exc`` is a name the notebook's own code looked up and the notebook never
    defined (a skipped or deleted cell, a mistyped name such as an unquoted letter): the innermost
    frame runs in the notebook's namespace, so no course module and no TODO's value is involved."""
    name = getattr(exc, "name", None)
    if not isinstance(exc, NameError) or isinstance(exc, UnboundLocalError) or not isinstance(name, str):
        return None
    inner = tb
    while inner is not None and inner.tb_next is not None:
        inner = inner.tb_next
    missing = (inner is not None and inner.tb_frame.f_globals is namespace and name not in namespace
               and not hasattr(builtins, name))
    return name if missing else None


def _error_text(exc: BaseException, limits: _Limits) -> str:
    if isinstance(exc, MemoryError):
        return text(messages.DEMO_OUT_OF_MEMORY).format(gb=limits.memory_gb)
    if isinstance(exc, TimeoutError) and limits.fired:
        return text(messages.DEMO_TOO_LONG).format(s=limits.seconds)
    said = str(exc).strip().splitlines()
    return type(exc).__name__ + (f": {said[0][:160]}" if said else "")


class _Limits:
    """A time limit (SIGALRM, main thread on Unix) and a cap on added address space (RLIMIT_AS, Linux)
    around a demo body; both are put back as they were afterwards."""

    def __init__(self, seconds: int) -> None:
        self.seconds, self.fired = seconds, False
        self.memory_gb: float = DEMO_MEMORY_GB
        self._alarm: Any = None  # the SIGALRM handler before, as signal.signal() returned it
        self._rlimit: tuple[int, int] | None = None

    def __enter__(self) -> _Limits:
        if hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread():
            def on_alarm(signum, frame):
                self.fired = True
                raise TimeoutError(self.seconds)
            self._alarm = signal.signal(signal.SIGALRM, on_alarm)
            signal.alarm(self.seconds)
        self._cap_memory()
        return self

    def _cap_memory(self) -> None:
        try:
            import resource

            with open("/proc/self/status") as f:
                size_kb = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
            with open("/proc/meminfo") as f:
                avail_kb = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
        except (ImportError, OSError, StopIteration, ValueError):
            return  # not Linux: no cap
        add = int(min(DEMO_MEMORY_GB * 2**20, avail_kb * 0.8)) << 10
        self.memory_gb = round(add / 2**30, 1)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size_kb * 1024 + add
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if soft == resource.RLIM_INFINITY or cap < soft:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
            self._rlimit = (soft, hard)

    def __exit__(self, *exc: object) -> None:
        if self._alarm is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, self._alarm)
        if self._rlimit is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, self._rlimit)


class demo(contextlib.AbstractContextManager):  # noqa: N801 - used like a function in notebooks
    """Run the ``with`` body only when every TODO in ``todo_ids`` passes its visible checks.

    ``todo_ids`` are the TODOs whose code the body runs (directly or through given code); all of one
    stage. ``limit_s`` bounds the body's time.

    [zh]
    只有当 ``todo_ids`` 中的每个 TODO 都通过了它的可见检查时，才运行 ``with`` 里的代码。

    ``todo_ids`` 是这段代码（直接或经由给定代码）要用到的 TODO，必须属于同一个阶段。``limit_s`` 限制这段代码
    的运行时间。
    """

    def __init__(self, *todo_ids: str, limit_s: int | None = None) -> None:
        if not todo_ids or len({stage_of(t) for t in todo_ids}) != 1:
            raise ValueError("demo() names one or more TODO ids of one stage")
        self.stage = load_stage(stage_of(todo_ids[0]), hidden=False)
        self.needs = sorted({self.stage.todo(t) for t in todo_ids}, key=lambda t: t.number)
        self._ids = {t.id for t in self.stage.todos}
        self.limit_s = limit_s or DEMO_TIME_LIMIT_S
        self._skipping = False
        self._limits: _Limits | None = None

    def __enter__(self) -> demo:
        frame = sys._getframe(1)
        self._namespace = frame.f_globals
        for todo in self.needs:
            verdict = judge_todo(todo, self.stage, self._namespace)
            if verdict.state != "ok":
                said = messages.FINISH_TO_SEE if verdict.state == "todo" else messages.DEMO_FIX_FIRST
                print(text(said).format(label=verdict.culprit.label, id=verdict.culprit.id))
                self._skip(frame)
                return self
        self._limits = _Limits(self.limit_s).__enter__()
        return self

    def _skip(self, frame: types.FrameType) -> None:
        def raise_skip(frame, event, arg):
            raise _Skip

        self._skipping = True
        self._frame, self._old_frame_trace, self._old_trace = frame, frame.f_trace, sys.gettrace()
        sys.settrace(self._old_trace or (lambda *args: None))  # frame tracing needs a global trace function
        frame.f_trace = raise_skip

    def __exit__(self, typ, exc, tb) -> bool:
        if self._skipping:
            self._frame.f_trace = self._old_frame_trace
            sys.settrace(self._old_trace)
            del self._frame
            return typ is _Skip
        limits = self._limits
        if limits is not None:
            limits.__exit__()
        if exc is None or not isinstance(exc, Exception) or os.environ.get("PCW_DEMO_RAISE"):
            return False  # KeyboardInterrupt and the like stop the cell as usual
        print(self.explain(exc, tb, limits or _Limits(self.limit_s)))
        return True

    def explain(self, exc: BaseException, tb: types.TracebackType | None, limits: _Limits) -> str:
        """The one line that says which TODO to look at after ``exc`` stopped the body.

        [zh]
        ``exc`` 让这段代码停下之后，用一行文字指出应该去看哪个 TODO。
        """
        if getattr(exc, "todo", None) in self._ids and callable(getattr(exc, "line", None)):
            return "❌ " + exc.line()  # type: ignore[attr-defined]  # given code checked the value and named its TODO (a ResultError)
        codes = {code: t for t in self.stage.todos if (code := _target_code(t, self._namespace)) is not None}
        error = _error_text(exc, limits)
        culprit = _todo_in_traceback(tb, codes)
        missing = _missing_notebook_name(exc, tb, self._namespace) if culprit is None else None
        if missing is not None:
            return text(messages.DEMO_NAME_MISSING).format(name=missing)
        if culprit is not None and isinstance(exc, NotImplementedError):
            return text(messages.FINISH_TO_SEE).format(label=culprit.label)
        if culprit is not None:
            return text(messages.DEMO_STOPPED_IN).format(label=culprit.label, error=error, id=culprit.id)
        labels = ", ".join(t.label for t in self.needs)
        return text(messages.DEMO_STOPPED).format(labels=labels, error=error)

"""Delegation: can a TODO be passed by calling given code that already does it?

For one stage, every callable a learner of that stage can reach without writing it (functions and
methods of the kernels, of the ``solutions`` modules the stage may see, and the given parts of its
own reference module) is tried as the whole body of each TODO: the TODO's solution region becomes
``return <callable>(<the TODO's own arguments>)`` (for a method also ``(self, ...)``), and, where a
visible adapter takes a callable (``kernels.prefill.pool_attention``), ``return
<adapter>(<callable>)(...)``. Each such variant is judged in this process, exactly as the grader
judges (the hybrid of :mod:`autograder.child.hybrid`, every public and hidden check, the reference's
expected outcomes); the variants that pass every check are the TODO's twins, which its spec must
declare (``Todo(twins=...)``) so that grading blocks them.
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import signal
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass

from autograder.child import hybrid, twins
from autograder.child.probe import run_probe
from autograder.core import data, layout
from autograder.core.pysource import solution_region, stub_region
from autograder.core.spec import Stage, Todo, load_stage
from autograder.grading.trusted import expected_outcomes

FIRST_CHECK_S = 0.5    # a delegation that fails fast fails here; the reference's checks take milliseconds
CANDIDATE_TIME_S = 5   # any later check


@dataclass(frozen=True)
class Delegation:
    """``todo``'s region replaced by ``return <expr>``, where ``expr`` calls ``twin`` (``module:qualname``)."""

    todo: str
    twin: str
    expr: str

    def variant(self, reference_text: str, stage: Stage) -> str:
        """The reference module's text with the TODO's region replaced by the delegating return."""
        todo = stage.todo(self.todo)
        lines = reference_text.splitlines()
        begin, end = solution_region(reference_text, todo.target)
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        return "\n".join(lines[:begin] + [indent + "import importlib", indent + f"return {self.expr}"] + lines[end + 1:]) + "\n"


def kernel_modules() -> list[str]:
    return [f"kernels.{p.stem}" for p in sorted(layout.KERNELS.glob("*.py")) if p.stem != "__init__"]


def candidates(stage: Stage) -> dict[str, object]:
    """``module:qualname`` -> callable, for everything of the kernels, the visible ``solutions``
    modules and the stage's own reference module that is not one of the stage's TODO targets."""
    own = {t.target for t in stage.todos}
    out: dict[str, object] = {}
    for name in [*kernel_modules(), *layout.visible_modules(stage.id), stage.reference]:
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a kernel that needs a GPU stack: nothing to delegate to here
            continue
        for attr, obj in vars(module).items():
            if getattr(obj, "__module__", None) != name or attr.startswith("__"):
                continue
            if inspect.isfunction(obj) and (name != stage.reference or attr not in own):
                out[f"{name}:{attr}"] = obj
            elif inspect.isclass(obj):
                for meth, fn in vars(obj).items():
                    target = f"{attr}.{meth}"
                    raw = fn.__func__ if isinstance(fn, (staticmethod, classmethod)) else fn
                    if inspect.isfunction(raw) and not meth.startswith("__") and (name != stage.reference or target not in own):
                        out[f"{name}:{target}"] = obj.__dict__[meth]
    return out


def _params(reference_text: str, todo: Todo) -> tuple[list[str], bool]:
    """The call that forwards a TODO's own arguments (``a, b, *, c=c``), and whether it is a method."""
    node: ast.AST = ast.parse(reference_text)
    for part in todo.target.split("."):
        node = next(n for n in node.body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == part)
    args = node.args
    pos = [a.arg for a in [*args.posonlyargs, *args.args]]
    method = "." in todo.target
    if method:
        pos = pos[1:]
    out = pos + ([f"*{args.vararg.arg}"] if args.vararg else []) + [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    out += [f"**{args.kwarg.arg}"] if args.kwarg else []
    return out, method


def _access(twin: str) -> str:
    module, qual = twin.split(":")
    return f'importlib.import_module("{module}").{qual}'


def _adapters(cands: dict[str, object]) -> list[str]:
    """Visible functions of one parameter annotated as a callable: they turn a kernel into a TODO."""
    out = []
    for name, fn in cands.items():
        if inspect.isfunction(fn):
            params = list(inspect.signature(fn).parameters.values())
            if len(params) == 1 and "Callable" in str(params[0].annotation):
                out.append(name)
    return out


def _accepts(fn: object, args: list[str]) -> bool:
    """Whether ``fn`` can be called with these forwarded arguments (by its signature alone)."""
    raw = fn.__func__ if isinstance(fn, (staticmethod, classmethod)) else fn
    if isinstance(fn, classmethod):
        return False
    try:
        sig = inspect.signature(raw)
        pos = [a for a in args if "=" not in a and not a.startswith("*")]
        kw = {a.split("=")[0]: None for a in args if "=" in a}
        sig.bind(*pos, **kw)
    except (TypeError, ValueError):
        return False
    return True


def delegations(stage: Stage, todo: Todo, cands: dict[str, object]) -> list[Delegation]:
    """Every call of a candidate (directly, or through an adapter) that fits the TODO's arguments."""
    text = layout.stage_files(stage.id).reference.read_text(encoding="utf-8")
    args, method = _params(text, todo)
    forms = [args] + ([["self", *args]] if method else [])
    adapters = _adapters(cands)
    out = []
    for name, fn in cands.items():
        for form in forms:
            if _accepts(fn, form):
                out.append(Delegation(todo.id, name, f"{_access(name)}({', '.join(form)})"))
        for a in adapters:
            adapted = _adapt(cands[a], fn)
            if a != name and adapted is not None and _accepts(adapted, args):
                out.append(Delegation(todo.id, name, f"{_access(a)}({_access(name)})({', '.join(args)})"))
    return out


def _adapt(adapter: object, fn: object) -> object | None:
    """``adapter(fn)`` when it is a callable taking ``fn``'s kind (a plain function), else None."""
    if not inspect.isfunction(fn):
        return None
    try:
        out = adapter(fn)
    except Exception:  # noqa: BLE001 - not an adapter for this one
        return None
    return out if callable(out) else None


#: What given functions import on their first call (radix_view draws with matplotlib, stage 8 tests with
#: SciPy): imported before any candidate is timed, so that no candidate's verdict depends on how long a
#: first import takes on this machine.
LAZY_IMPORTS = ("matplotlib.pyplot", "matplotlib.patches", "scipy.stats", "ipywidgets", "tqdm.auto")


def _import_lazy_dependencies() -> None:
    for name in LAZY_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional dependency that is not installed: its users fail either way
            pass


#: How often a limit that has run out fires again until its ``TimeoutError`` leaves the block (one can be
#: swallowed where Python cannot raise: a ``__del__``, a weakref or GC callback reports it as unraisable).
REFIRE_S = 0.05


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise ``TimeoutError`` in the block once it has used ``seconds`` of this process's CPU time, or
    three times that on the clock scaled to the machine (tests/support/machine.py; for a block that
    waits without computing). CPU time, so that a candidate's verdict does not depend on the load.

    The limit holds even when its exception cannot get out: a signal handler runs wherever the
    interpreter is, and a ``TimeoutError`` raised inside a GC callback or a ``__del__`` is swallowed
    (reported as unraisable). So the timer keeps firing every :data:`REFIRE_S` until one leaves the
    block, and a block that still ends normally after a fired limit raises ``TimeoutError`` on leaving.

    The alarm can land inside an import, which then fails half done and leaves the package's submodules
    behind (a later ``import matplotlib`` in this process breaks on them): when it fired, every module the
    block added is dropped, so the next import of it starts afresh."""
    from tests.support.machine import scaled

    fired: list[bool] = []
    armed = [True]

    def on_limit(signum, frame):
        fired.append(True)
        if armed[0]:
            raise TimeoutError(f"the block ran past its limit of {seconds} CPU-s")

    before = set(sys.modules)
    old = {sig: signal.signal(sig, on_limit) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, seconds, REFIRE_S)
    signal.setitimer(signal.ITIMER_REAL, scaled(3 * seconds), REFIRE_S)
    try:
        yield
    finally:
        while armed[0]:  # the timers refire: one may land here, before they are stopped; then stop them again
            try:
                armed[0] = False
                signal.setitimer(signal.ITIMER_PROF, 0)
                signal.setitimer(signal.ITIMER_REAL, 0)
            except TimeoutError:
                armed[0] = True
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if fired:
            for name in set(sys.modules) - before:
                sys.modules.pop(name, None)
    if fired:  # each exception it raised was swallowed: the block ran past its limit all the same
        raise TimeoutError(f"the block ran past its limit of {seconds} CPU-s (its exception was swallowed)")


class Judge:
    """Judges delegations of one TODO in this process, exactly as the grading child would: the
    reference stubbed at the TODO (imported under the reference's name while probes run), the
    learner's namespace with the delegating target, the hybrid, every check (public and hidden)."""

    def __init__(self, stage: Stage, todo: Todo) -> None:
        _import_lazy_dependencies()
        self.stage, self.todo = stage, todo
        files = layout.stage_files(stage.id)
        self.text = files.reference.read_text(encoding="utf-8")
        self.expected = expected_outcomes(stage)
        self.stub = types.ModuleType(stage.reference)
        self.stub.__file__ = str(files.reference)
        exec(compile(stub_region(self.text, todo.target), str(files.reference), "exec"), self.stub.__dict__)
        self.base: dict = {"__name__": "__main__"}
        exec(compile(self.text, "<learner cells>", "exec"), self.base)  # the other names, as a learner has them
        args, _ = _params(self.text, todo)
        params = self._signature()
        self.wrapper_src = f"def {todo.function_name}({params}):\n    import importlib\n    return {{expr}}\n"
        self.args = args

    def _signature(self) -> str:
        node: ast.AST = ast.parse(self.text)
        for part in self.todo.target.split("."):
            node = next(n for n in node.body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == part)
        node.args.defaults = [ast.Constant(None) for _ in node.args.defaults]  # defaults are not evaluated here
        node.args.kw_defaults = [ast.Constant(None) if d is not None else None for d in node.args.kw_defaults]
        for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            a.annotation = None
        return ast.unparse(node.args)

    def learner(self, d: Delegation) -> dict:
        ns: dict = {}
        exec(compile(self.wrapper_src.format(expr=d.expr), "<delegating cell>", "exec"), self.base, ns)
        fn = ns[self.todo.function_name]
        learner = dict(self.base)
        if "." in self.todo.target:
            cls = self.base[self.todo.owner]
            learner[self.todo.owner] = type(cls.__name__, cls.__bases__,
                                            {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
                                            | {self.todo.function_name: fn})
        else:
            learner[self.todo.owner] = fn
        return learner

    def passes(self, d: Delegation, blocked: tuple[str, ...] = ()) -> bool:
        saved_module = sys.modules.get(self.stage.reference)
        saved_owner = vars(self.stub).get(self.todo.owner)
        try:
            impl = hybrid.build_impl(self.stage, self.todo, self.learner(d), self.stub)
            sys.modules[self.stage.reference] = self.stub
            with twins.blocked(blocked, self.todo.label):
                for i, c in enumerate(self.stage.checks_for(self.todo.id)):
                    with _time_limit(FIRST_CHECK_S if i == 0 else CANDIDATE_TIME_S):
                        got = run_probe(c, impl)
                    if not data.outcomes_equal(self.expected[c.key], got, c.atol):
                        return False
            return True
        except Exception:  # noqa: BLE001 - a candidate that breaks the variant does not pass
            return False
        finally:
            vars(self.stub)[self.todo.owner] = saved_owner
            if saved_module is not None:
                sys.modules[self.stage.reference] = saved_module


def screen(stage_id: str) -> dict[str, list[Delegation]]:
    """TODO id -> the delegations that pass all its checks (twins not blocked)."""
    stage = load_stage(stage_id, hidden=True)
    cands = candidates(stage)
    out = {}
    for t in stage.todos:
        judge = Judge(stage, t)
        out[t.id] = [d for d in delegations(stage, t, cands) if judge.passes(d)]
    return out

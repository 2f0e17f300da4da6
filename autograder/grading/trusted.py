"""Trusted material for grading a stage, computed in the grader and cached per stage or TODO.

The reference's outcome of every check, the setup cells (from the instructor notebook, never from a
submission), the course modules a child may import (given modules, earlier references; the stage's own
reference stubbed at the TODO under test: see :func:`autograder.core.layout.visible_modules` for the
rule), and of the hidden checks only the TODO's own (a child never holds another TODO's hidden checks),
compiled here: a child gets their code, never their source text (:func:`child_code`).
"""
from __future__ import annotations

import ast
import base64
import functools
import importlib.util
import json
import marshal
import threading
from pathlib import Path

from autograder.child.probe import reference_outcome
from autograder.child.sandbox import compile_given, is_package, module_file
from autograder.core import layout, stage_text
from autograder.core.i18n import L
from autograder.core.pysource import checks_only_of, names_defined, parse, stub_region
from autograder.core.spec import Stage, Todo
from autograder.grading import trusted_store
from autograder.grading.leaks import LeakGuard
from autograder.grading.submission import cell_source

# Each item is computed once per process, whichever thread asks first (parsing has its own lock,
# :func:`autograder.core.pysource.parse`). What runs the reference (the expected outcomes) or learns
# from the secrets (the leak guard) is computed under ``_probe_lock``, one at a time, as it would be
# in a process of its own (probes seed and read process-wide state); what is read from the files (the
# setup cells, a child's modules, the given members) under ``_lock``, so that a child about to start
# never waits behind stage 6's probes. An item already computed is read without a lock (a dict read
# is atomic; an entry is stored only once it is whole).
_lock = threading.Lock()
_probe_lock = threading.Lock()
_expected: dict[str, dict[str, dict]] = {}
_setup: dict[str, list[str]] = {}
_modules: dict[tuple[str, str], dict[str, str]] = {}
_members: dict[tuple[str, str], frozenset[str]] = {}
_code: dict[tuple[str, str], dict[str, str]] = {}
# The file name every hidden check's code carries in a child: no file, nothing linecache can find.
HIDDEN_CODE_FILE = "<hidden check>"


def expected_outcomes(stage: Stage) -> dict[str, dict]:
    """The reference's outcome for every check of the stage, computed here (or read from the
    persistent store, which holds what this computation returned), once per process."""
    if (done := _expected.get(stage.id)) is not None:
        return done
    with _probe_lock:
        if stage.id not in _expected:
            keys = [c.key for c in stage.checks]

            def whole(value: object) -> bool:  # a stored entry names every check, each with an outcome
                return isinstance(value, dict) and list(value) == keys and \
                    all(isinstance(o, dict) and isinstance(o.get("kind"), str) for o in value.values())

            _expected[stage.id] = trusted_store.cached(
                "expected", stage, lambda: {c.key: reference_outcome(c, stage.reference) for c in stage.checks}, check=whole)
        return _expected[stage.id]


def setup_cells(stage: Stage) -> list[str]:
    """Setup and given cells come from the instructor notebook, never from the submission."""
    if (done := _setup.get(stage.id)) is not None:
        return done
    with _lock:
        if stage.id not in _setup:
            nb = json.loads(layout.stage_files(stage.id).instructor().read_text(encoding="utf-8"))
            _setup[stage.id] = [cell_source(c) for c in nb["cells"] if "setup" in c.get("metadata", {}).get("tags", [])]
        return _setup[stage.id]


def stage_words(stage: Stage) -> dict:
    """The stage's public text file (``checks.toml``: what learners read) parsed, for its children: each
    would otherwise parse the same file. Parsed again when the file changed."""
    path = layout.stage_text_file(stage.id)
    try:
        seen = path.stat()
    except OSError:
        return {}
    return _words(str(path), seen.st_mtime_ns, seen.st_size)


@functools.lru_cache(maxsize=32)
def _words(path: str, _mtime_ns: int, _size: int) -> dict:
    return stage_text.parse(Path(path))


def child_modules(stage: Stage, todo: Todo) -> dict[str, str]:
    """Source of every course module the child may import, and of the course packages (``solutions``'s
    maps the given modules' former names, which a notebook of an earlier release imports); the stage's
    own reference is stubbed at ``todo``. The hidden checks are not among them: the child gets their
    code (:func:`child_code`)."""
    key = (stage.id, todo.id)
    if (done := _modules.get(key)) is not None:
        return done
    with _lock:
        if key not in _modules:
            files = layout.stage_files(stage.id)
            paths = {**layout.package_inits(), **layout.visible_modules(stage.id)}
            modules = {name: path.read_text(encoding="utf-8") for name, path in paths.items()}
            modules[files.reference_module] = stub_region(files.reference, todo.target)
            _modules[key] = modules
        return _modules[key]


def hidden_checks_text(stage: Stage, todo: Todo) -> str:
    """The source of ``todo``'s own hidden checks (a child runs no other TODO's), "" where there are none.
    It stays in the grader: a child gets it compiled (:func:`child_code`)."""
    files = layout.stage_files(stage.id)
    return checks_only_of(files.hidden.read_text(encoding="utf-8"), todo.id) if files.hidden.exists() else ""


def child_code(stage: Stage, todo: Todo) -> dict[str, str]:
    """``{module: base64 of the interpreter's magic number + marshalled code}`` for the modules a child
    gets compiled instead of as text: ``todo``'s hidden checks. Learner code runs in that child, so
    whatever text it holds can be read and encoded into a report; compiled here it holds no source
    text at all: no docstring (``optimize=2``), no function annotation (kept as strings under ``from
    __future__ import annotations``), every position line 1, column 0 (no layout), and the
    file name :data:`HIDDEN_CODE_FILE` (no file, no line cache entry, nothing ``inspect.getsource`` finds).
    What a probe needs to run stays: its names and constants (the inputs it passes). Children run
    this very interpreter (``sys.executable``), whose marshal format the magic number pins."""
    key = (stage.id, todo.id)
    if (done := _code.get(key)) is not None:
        return done
    with _lock:
        if key not in _code:
            text = hidden_checks_text(stage, todo)
            code = {layout.stage_files(stage.id).hidden_module: _compiled(text)} if text else {}
            _code[key] = code
        return _code[key]


def given_code(modules: dict[str, str], root: str) -> dict[str, str]:
    """``{module: base64 of the magic number + marshalled code}`` of every module of ``modules`` (a
    child's :func:`child_modules`), compiled from that text for a child importing from ``root`` exactly
    as the child would compile it (:func:`autograder.child.sandbox.compile_given`): the same code, but
    compiled once per run's import root for all its children instead of in each (a later stage's given
    code is most of what its children would compile). The text still goes with it: these modules are
    not secret."""
    return {name: _given_compiled(root, name, source) for name, source in modules.items()}


@functools.lru_cache(maxsize=256)  # a few runs' worth: each module's text per import root
def _given_compiled(root: str, name: str, source: str) -> str:
    code = compile_given(source, module_file(root, name, is_package(name)))
    return base64.b64encode(importlib.util.MAGIC_NUMBER + marshal.dumps(code)).decode("ascii")


def _compiled(text: str) -> str:
    tree = parse(text)
    for node in ast.walk(tree):
        if "lineno" in node._attributes:  # every position the same: the layout of the text is not carried
            for attr, value in (("lineno", 1), ("end_lineno", 1), ("col_offset", 0), ("end_col_offset", 0)):
                setattr(node, attr, value)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # annotations would stay as text
            node.returns = None
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg,
                        node.args.kwarg):
                if arg is not None:
                    arg.annotation = None
    code = compile(tree, HIDDEN_CODE_FILE, "exec", optimize=2, dont_inherit=True)
    return base64.b64encode(importlib.util.MAGIC_NUMBER + marshal.dumps(code)).decode("ascii")


def given_members(stage: Stage, owner: str) -> frozenset[str]:
    """``Owner.member`` for each member of the course's class ``owner`` that is not a TODO: given code
    the learner's cell may lack, which the child then takes from the course (a
    :class:`~autograder.child.protocol.CourseVersions` event). The released notebook shows every one of
    them, so naming them in a report reveals nothing; a name the child sends outside this set is
    not shown (the child is untrusted)."""
    key = (stage.id, owner)
    if (done := _members.get(key)) is not None:
        return done
    with _lock:
        if key not in _members:
            tree = parse(layout.stage_files(stage.id).reference.read_text(encoding="utf-8"))
            cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
            names = names_defined(cls.body if cls is not None else [], imports=False)
            todos = {t.function_name for t in stage.todos if t.owner == owner and "." in t.target}
            _members[key] = frozenset(f"{owner}.{m}" for m in names - todos if not m.startswith("__"))
        return _members[key]


_guards: dict[str, LeakGuard] = {}


def _both(value: L | str) -> str:
    """Both editions of a text: learners see either one."""
    return f"{value.en} {value.zh}" if isinstance(value, L) else str(value)


def leak_guard(stage: Stage) -> LeakGuard:
    """What learners must never read back (this stage's reference and hidden checks), minus what
    they already have (their notebook, the public checks and modules, every name and hint shown).
    Learned once per process, or read from the persistent store (its state as plain data)."""
    if (done := _guards.get(stage.id)) is not None:
        return done
    with _probe_lock:
        if stage.id not in _guards:
            state = trusted_store.cached("leak-guard", stage, lambda: _learn_guard(stage).state(), check=_guard_state)
            _guards[stage.id] = LeakGuard.from_state(state)
        return _guards[stage.id]


def _learn_guard(stage: Stage) -> LeakGuard:
    files = layout.stage_files(stage.id)
    secrets = [p.read_text(encoding="utf-8") for p in (files.reference, files.hidden) if p.exists()]
    public = [p.read_text(encoding="utf-8") for p in (files.spec, files.expected, *layout.visible_modules(stage.id).values(),
                                                       *layout.child_files()) if p.exists()]
    for lang in layout.LANGUAGES:
        if files.learner(lang).exists():
            nb = json.loads(files.learner(lang).read_text(encoding="utf-8"))
            public += [cell_source(c) for c in nb["cells"]]
    public += [f"{c.name} {_both(c.hint)} {_both(c.title)} {_both(c.call)}" for c in stage.checks]
    public += [" ".join([t.id, t.target, *map(_both, (t.title, t.contract, *t.hints))]) for t in stage.todos]
    public += [_both(stage.title), _both(stage.summary), stage.subtitle]
    return LeakGuard(secrets, public)


def _guard_state(value: object) -> bool:
    """A stored leak guard's state: three lists of strings."""
    return isinstance(value, dict) and sorted(value) == ["public_words", "secret", "shifted"] and \
        all(isinstance(v, list) and all(type(s) is str for s in v) for v in value.values())

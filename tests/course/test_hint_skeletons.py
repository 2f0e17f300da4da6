"""Tier 3 of every hint is a skeleton that still leaves the learner a step.

Each code TODO's last hint tier is Python code with the key expressions left as ``___``: the
structure and the names, never the answer. The tests paste each tier-3 hint, in each language, into
its TODO of the reference module (the rest of the module as the course has it) and run that TODO's
visible checks the way ``check()`` does: with the blanks left as they are, or bound to a placeholder
value, the hint is never a passing solution. Filled with the right expressions (each stage folder's
``fills.toml``, a developer's answer key), the same skeleton passes: the skeleton's structure and names are right.
"""
from __future__ import annotations

import ast
import importlib
import linecache
import sys
import tomllib
import types

import pytest

from autograder.child import twins
from autograder.child.probe import run_probe
from autograder.core import layout
from autograder.core.spec import load_stage
from autograder.grading.verdict import judge
from autograder.learner.inline import _run_limited, load_expected
from tests.support.variants import graft

BLANK = "___"
#: Values a placeholder name for the blanks may be bound to (unbound: NameError on the first one).
PLACEHOLDERS = (None, 1)

#: For every code TODO, the expressions that fill its skeleton's blanks, in order: each stage folder's
#: ``fills.toml`` (its TODOs by name).
FILLS: dict[str, list[str]] = {f"{f.id}.{name}": exprs for f in layout.all_stages() if f.slug is not None and f.fills.exists()
                               for name, exprs in tomllib.loads(f.fills.read_text(encoding="utf-8")).items()}

CODE_TODOS = [(sid, t) for sid in layout.built_stages() for t in load_stage(sid, hidden=False).todos
              if t.target != "quiz"]
IDS = [t.id for _, t in CODE_TODOS]


def _load(text: str, name: str) -> dict:
    """``text`` run as a module the way a notebook holds it (its source in linecache)."""
    filename = f"<hint {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    module = types.ModuleType(f"hint_{name.replace('.', '_')}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(text, filename, "exec"), module.__dict__)
    return module.__dict__


_warm: set[str] = set()


def _warm_up(stage_id: str) -> None:
    """Run the stage's visible probes once on the reference, untimed: the first meta-device operation
    of a process loads torch's meta kernels (16 s on a busy 2-core machine), which must not count
    against the first judged probe's time limit."""
    if stage_id in _warm:
        return
    stage = load_stage(stage_id, hidden=False)
    reference = importlib.import_module(stage.reference)
    for c in stage.checks:
        run_probe(c, reference)
    _warm.add(stage_id)


def _passes(stage_id: str, todo, code: str, **bound) -> bool:
    """Whether ``code`` pasted into the TODO passes every visible check, judged as ``check()`` judges
    it (the probe run under its time limit with the TODO's twins blocked, against the stored expected
    outcome); code that does not compile or load is not a passing solution. Stops at the first failure."""
    try:
        ns = _load(graft(stage_id, todo.target, code), todo.id)
    except Exception:  # noqa: BLE001 - whatever stops it from loading, it is not a passing solution
        return False
    ns.update(bound)
    _warm_up(stage_id)
    stage = load_stage(stage_id, hidden=False)
    expected = load_expected(stage_id)["checks"]
    impl = types.SimpleNamespace(**ns)
    checks = stage.checks_for(todo.id, hidden=False)
    for c in checks:
        with twins.blocked(todo.twins, todo.label):
            got = _run_limited(c, impl)
        if not judge(stage, c, expected[c.key], got).passed:
            return False
    return bool(checks)


def test_every_code_todo_has_its_fills():
    assert set(FILLS) == set(IDS), set(FILLS) ^ set(IDS)


@pytest.mark.parametrize("stage_id,todo", CODE_TODOS, ids=IDS)
def test_tier_three_is_a_skeleton_with_blanks(stage_id, todo):
    """Code in both languages, the same code (only comments differ), with blanks, and no full-width
    punctuation between statements."""
    tier3 = todo.hints[2]
    trees = {}
    for lang in ("en", "zh"):
        code = tier3.get(lang)
        assert BLANK in code, f"{todo.id} ({lang}): tier 3 leaves no blank"
        assert "；" not in code, f"{todo.id} ({lang}): statements are separated by newlines, not '；'"
        trees[lang] = ast.dump(ast.parse(code))  # a SyntaxError here: tier 3 is not code
    assert trees["en"] == trees["zh"], f"{todo.id}: the two editions' skeletons differ in code, not only comments"
    assert tier3.en.count(BLANK) == len(FILLS[todo.id]), f"{todo.id}: FILLS has one expression per blank"


@pytest.mark.parametrize("stage_id,todo", CODE_TODOS, ids=IDS)
def test_tier_three_pasted_into_its_todo_does_not_pass(stage_id, todo):
    for lang in ("en", "zh"):
        code = todo.hints[2].get(lang)
        assert not _passes(stage_id, todo, code), f"{todo.id} ({lang}): tier 3 as pasted passes its checks"
        for value in PLACEHOLDERS:
            assert not _passes(stage_id, todo, code, **{BLANK: value}), \
                f"{todo.id} ({lang}): tier 3 passes its checks with every blank set to {value!r}"


@pytest.mark.parametrize("stage_id,todo", CODE_TODOS, ids=IDS)
def test_tier_three_filled_in_passes(stage_id, todo):
    code = todo.hints[2].en
    for fill in FILLS[todo.id]:
        code = code.replace(BLANK, fill, 1)
    assert _passes(stage_id, todo, code), f"{todo.id}: the skeleton, filled in, fails its checks:\n{code}"

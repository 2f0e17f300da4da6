"""Stage 7's checks judged in-process, before the stage has a notebook: the reference passes every
check, the unfilled stub fails every check as "not implemented", and each wrong answer of
``tests/mutants_s07.py`` fails at least one check of its own TODO and none of another.

This mirrors what the grader does (each TODO judged with the reference standing in for the other
TODOs; probes compared with ``autograder.verdict.judge``), without child processes. Once the
notebook is built, ``tests/test_stages.py`` and ``tests/test_mutants.py`` grade the same data through
the real, isolated grader.
"""
from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from autograder.probe import run_probe
from autograder.spec import load_stage
from autograder.testing import apply_edits
from autograder.verdict import judge
from tests import mutants_s07

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "solutions" / "s07_serving.py").read_text(encoding="utf-8")
STAGE = load_stage("s07", hidden=True)


def load_source(text: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - our own reference module
    return module


REF = load_source(REFERENCE, "s07_reference")


def impl_for(todo_id: str, module: types.ModuleType) -> types.SimpleNamespace:
    """The reference's names, with the TODO's own function taken from ``module`` (as when grading)."""
    owner = STAGE.todo(todo_id).owner
    names = {k: v for k, v in vars(REF).items() if not k.startswith("__")}
    names[owner] = getattr(module, owner)
    return types.SimpleNamespace(**names)


def region(text: str, function: str) -> tuple[int, int]:
    """Character span of the solution region inside ``def function``."""
    start = re.search(rf"^def {function}\(", text, re.M).start()
    begin = text.index("### BEGIN SOLUTION", start)
    end = text.index("### END SOLUTION", begin)
    return begin, end


def stub(text: str, function: str) -> str:
    begin, end = region(text, function)
    line_start = text.rfind("\n", 0, begin) + 1
    indent = text[line_start:begin]
    body = f"### BEGIN SOLUTION\n{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError()\n{indent}"
    return text[:begin] + body + text[end:]


def verdicts(todo_id: str, module: types.ModuleType) -> list:
    impl = impl_for(todo_id, module)
    ref = impl_for(todo_id, REF)
    return [judge(STAGE, c, run_probe(c, ref), run_probe(c, impl)) for c in STAGE.checks_for(todo_id)]


TODOS = [t.id for t in STAGE.todos]


@pytest.mark.parametrize("todo_id", TODOS)
def test_s07_todo_has_enough_checks_and_one_region(todo_id):
    assert len(STAGE.checks_for(todo_id, hidden=False)) >= 3
    assert len(STAGE.checks_for(todo_id, hidden=True)) >= 2
    function = STAGE.todo(todo_id).function_name
    begin, end = region(REFERENCE, function)
    number = STAGE.todo(todo_id).number
    assert f"# TODO {number} ({todo_id}):" in REFERENCE[REFERENCE.rfind("def ", 0, begin):begin]
    assert REFERENCE.count("### BEGIN SOLUTION") == len(TODOS)


def test_s07_reference_passes_every_check_deterministically():
    for check in STAGE.checks:
        first = run_probe(check, impl_for(check.todo, REF))
        second = run_probe(check, impl_for(check.todo, load_source(REFERENCE, "again")))
        assert first["kind"] == "ok", (check.key, first)
        assert judge(STAGE, check, first, second).passed, check.key


@pytest.mark.parametrize("todo_id", TODOS)
def test_s07_stub_fails_every_check_as_not_implemented(todo_id):
    module = load_source(stub(REFERENCE, STAGE.todo(todo_id).function_name), "stub")
    for v in verdicts(todo_id, module):
        assert not v.passed and v.not_implemented == todo_id, (v.check.key, v.summary)


@pytest.mark.parametrize("name", sorted(mutants_s07.MUTANTS))
def test_s07_mutant_fails_its_own_todo_only(name):
    todo_id, edits = mutants_s07.MUTANTS[name]
    function = STAGE.todo(todo_id).function_name
    begin, end = region(REFERENCE, function)
    for old, _ in edits:  # a learner writes inside the region only
        at = REFERENCE.index(old)
        assert begin < at and at + len(old) <= end, f"{name}: edit outside the region of {function}"
    module = load_source(apply_edits(REFERENCE, edits), "mutant")
    failed = [v for v in verdicts(todo_id, module) if not v.passed]
    assert failed, f"{name} passes every check of {todo_id}"
    assert all(v.not_implemented is None for v in failed)
    for other in TODOS:
        if other != todo_id:
            assert all(v.passed for v in verdicts(other, module)), (name, other)


@pytest.mark.parametrize("todo_id", TODOS)
def test_s07_todo_has_three_mutants(todo_id):
    named = [n for n, (t, _) in mutants_s07.MUTANTS.items() if t == todo_id]
    assert len(named) >= 3 and all(n.startswith(todo_id + "/") for n in named)

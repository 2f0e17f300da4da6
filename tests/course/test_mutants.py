"""Realistic wrong answers, per TODO, graded by the real grader: each fails its own TODO only.

The wrong answers of stage NN live in its folder's ``mutants.py`` (module ``tests.mutants_sNN``): ``MUTANTS`` maps
``"<todo id>/<what is wrong>"`` to ``(todo id, edits)`` (text replacements in the reference module),
and an optional ``EQUIVALENT`` maps names to edits that are correct but written differently, which
must earn every point. Each stage's variants are graded in one parallel run, once per session.

Grading every TODO of every wrong answer would mostly re-prove one property: a TODO is graded on the
learner's own code for it and the reference for the rest, so an edit inside one TODO's function
cannot move another TODO. The first wrong answer of each TODO proves that on the real grader (every
TODO graded); the others are graded on their own TODO, and a static test keeps every edit inside its
TODO's function, where that property covers it. The same holds for a correct answer: an alternative is
graded on its TODO, and an equivalent answer on the TODOs whose functions its edits change (every TODO
when an edit lies outside them all), the others being the reference's, whose full marks
tests/course/test_stages.py's reference grading shows.
"""
from __future__ import annotations

import importlib

import pytest

from autograder.core import layout
from autograder.core.pysource import definition_span
from autograder.core.spec import load_stage
from autograder.grading.verdict import check_title
from tests.support.variants import assert_all_pass, assert_blamed_on, grade_variants

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades every stage's wrong answers on the real grader
# graded() keeps each stage's results per process: xdist gives all of a stage's tests to one worker (tests/conftest.py)

# Built stages only: a half-written stage is named by tests/engine/test_layout.py's completeness test.
DATA = {sid: importlib.import_module(layout.stage_files(sid).mutants_module) for sid in layout.built_stages()}


def _alternatives(sid: str) -> dict:
    """The stage folder's ``alternatives.py``'s ``ALTERNATIVES`` ({todo id: {name: edits}}), {} where not written yet."""
    name = layout.stage_files(sid).alternatives_module
    try:
        return importlib.import_module(name).ALTERNATIVES
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return {}


ALTS = {sid: _alternatives(sid) for sid in DATA}
ALTERNATIVES = [(sid, todo, name) for sid, alts in ALTS.items() for todo, named in alts.items() for name in named]
# Stages whose every code TODO has its alternatives and every wrong answer its declared lead check.
AUDITED = tuple(layout.built_stages())  # every stage: siblings, leads and alternatives
MUTANTS = [(sid, name) for sid, mod in DATA.items() for name in mod.MUTANTS]
EQUIVALENT = [(sid, name) for sid, mod in DATA.items() for name in getattr(mod, "EQUIVALENT", {})]
TODOS = [(sid, t.id) for sid in DATA for t in load_stage(sid, hidden=False).todos]
_graded: dict[str, dict] = {}


def _lines_inside(text: str, span: tuple[int, int], edits) -> bool:
    """Whether every edit's old text lies on lines of the ``[start, end)`` span of ``text``."""
    start, end = span
    for old, _ in edits:
        line = text[:text.index(old)].count("\n")
        if not (start <= line and line + old.count("\n") < end):
            return False
    return True


def todos_edited(stage_id: str, edits) -> set[str] | None:
    """The TODOs whose functions hold each of ``edits`` (an edit inside two nested ones counts for
    both); None when some edit lies outside every TODO's function: then every TODO must be graded."""
    text = layout.stage_files(stage_id).reference.read_text(encoding="utf-8")
    todos = load_stage(stage_id, hidden=False).todos
    spans = {t.id: definition_span(text, t.target, with_comments_above=False) for t in todos}
    found: set[str] = set()
    for edit in edits:
        inside = {tid for tid, span in spans.items() if _lines_inside(text, span, [edit])}
        if not inside:
            return None
        found |= inside
    return found


def graded(stage_id: str) -> dict:
    if stage_id not in _graded:
        mod = DATA[stage_id]
        variants = {name: edits for name, (_, edits) in mod.MUTANTS.items()}
        variants.update({f"ok/{name}": edits for name, edits in getattr(mod, "EQUIVALENT", {}).items()})
        first = {todo: name for name, (todo, _) in reversed(mod.MUTANTS.items())}.values()
        only = {name: {todo} for name, (todo, _) in mod.MUTANTS.items() if name not in first}
        for name, edits in getattr(mod, "EQUIVALENT", {}).items():
            if (todos := todos_edited(stage_id, edits)) is not None:
                only[f"ok/{name}"] = todos
        for todo, named in ALTS[stage_id].items():  # an alternative's edits stay in its TODO's function
            variants.update({f"alt/{name}": edits for name, edits in named.items()})
            only.update({f"alt/{name}": {todo} for name in named})
        _graded[stage_id] = grade_variants(stage_id, variants, only=only)
    return _graded[stage_id]


@pytest.mark.parametrize("stage_id,name", MUTANTS, ids=[name for _, name in MUTANTS])
def test_todo_mutant_fails_its_own_todo_only(stage_id, name):
    result = graded(stage_id)[name]
    assert result.error is None, result.error
    assert_blamed_on(result, DATA[stage_id].MUTANTS[name][0])


@pytest.mark.parametrize("stage_id,name", MUTANTS, ids=[name for _, name in MUTANTS])
def test_todo_mutant_edits_stay_in_its_own_function(stage_id, name):
    todo_id, edits = DATA[stage_id].MUTANTS[name]
    text = layout.stage_files(stage_id).reference.read_text(encoding="utf-8")
    start, end = definition_span(text, load_stage(stage_id, hidden=False).todo(todo_id).target, with_comments_above=False)
    for old, _ in edits:
        line = text[:text.index(old)].count("\n")
        assert start <= line and line + old.count("\n") < end, f"{name}: edit {old[:60]!r} is outside {todo_id}'s function"


@pytest.mark.parametrize("stage_id,name", EQUIVALENT, ids=[f"{s}/{n}" for s, n in EQUIVALENT])
def test_todo_equivalent_answer_passes(stage_id, name):
    result = graded(stage_id)[f"ok/{name}"]
    assert result.error is None, result.error
    assert_all_pass(result)


@pytest.mark.parametrize("stage_id,todo_id", TODOS, ids=[t for _, t in TODOS])
def test_todo_has_three_mutants(stage_id, todo_id):
    named = [n for n, (t, _) in DATA[stage_id].MUTANTS.items() if t == todo_id]
    assert len(named) >= 3, f"{todo_id} has {len(named)} wrong answers; write at least 3"
    assert all(n.startswith(todo_id + "/") for n in named)


def _lead_line(result, todo_id: str) -> str:
    return next(t.message for t in result.todos if t.id == todo_id)


@pytest.mark.parametrize("stage_id,name", MUTANTS, ids=[name for _, name in MUTANTS])
def test_todo_mutant_leads_with_its_declared_check(stage_id, name):
    """The first hint a wrong answer reads is about its mistake: the check it declares in ``LEADS`` leads
    the TODO's message, and every other failing check is named after it."""
    leads = getattr(DATA[stage_id], "LEADS", {})
    if name not in leads:
        if stage_id in AUDITED:
            pytest.fail(f"{name}: declare the check whose hint must come first in LEADS")
        pytest.skip(f"{stage_id}: wrong answers do not declare their lead check yet")
    todo_id = DATA[stage_id].MUTANTS[name][0]
    result = graded(stage_id)[name]
    check = next(c for c in load_stage(stage_id).checks_for(todo_id) if c.name == leads[name])
    head = f"hidden check '{check.name}' failed" if check.hidden else f"check '{check.name}' failed"
    if check.secret:
        head = check_title(check, "en")
    message = _lead_line(result, todo_id)
    assert message.startswith(head), f"{name}: expected the lead {check.key}, got: {message[:300]}"
    failing = next(c for c in result.todos if c.id == todo_id).checks
    if sum(not v.passed for v in failing) > 1:
        assert "also failing:" in message, message


@pytest.mark.parametrize("stage_id,todo_id,name", ALTERNATIVES, ids=[f"{t}/{n}" for _, t, n in ALTERNATIVES])
def test_todo_alternative_earns_full_marks(stage_id, todo_id, name):
    result = graded(stage_id)[f"alt/{name}"]
    assert result.error is None, result.error
    assert_all_pass(result)


@pytest.mark.parametrize("stage_id,todo_id,name", ALTERNATIVES, ids=[f"{t}/{n}" for _, t, n in ALTERNATIVES])
def test_todo_alternative_edits_stay_in_its_own_function(stage_id, todo_id, name):
    text = layout.stage_files(stage_id).reference.read_text(encoding="utf-8")
    start, end = definition_span(text, load_stage(stage_id, hidden=False).todo(todo_id).target, with_comments_above=False)
    for old, _ in ALTS[stage_id][todo_id][name]:
        line = text[:text.index(old)].count("\n")
        assert start <= line and line + old.count("\n") < end, f"{name}: edit {old[:60]!r} is outside {todo_id}'s function"


@pytest.mark.parametrize("stage_id,todo_id", TODOS, ids=[t for _, t in TODOS])
def test_todo_has_three_alternatives(stage_id, todo_id):
    if todo_id.endswith(".quiz"):
        pytest.skip("a quiz has one right answer per question")
    if stage_id not in AUDITED and not ALTS[stage_id]:
        pytest.skip(f"{stage_id}: no {layout.rel(layout.stage_files(stage_id).alternatives)} yet")
    assert len(ALTS[stage_id].get(todo_id, {})) >= 3, f"{todo_id}: write at least 3 correct alternatives"

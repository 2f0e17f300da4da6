"""Properties every stage must have: the reference passes, the stub fails as "not implemented",
every TODO has enough checks, generated files match their sources."""
from __future__ import annotations

import pytest

from autograder.build import build, reference_path
from autograder.hybrid import solution_region
from autograder.spec import load_stage
from tests.conftest import built_stages

STAGES = built_stages()
TODOS = [(s, t.id) for s in STAGES for t in load_stage(s, hidden=False).todos]


def test_generated_files_match_their_sources():
    stale = build(check_only=True)
    assert not stale, f"regenerate with `python -m autograder build`: {[str(p) for p in stale]}"


@pytest.mark.parametrize("stage_id,todo_id", TODOS, ids=[t for _, t in TODOS])
def test_todo_reference_passes(graded_reference_and_stub, stage_id, todo_id):
    r = graded_reference_and_stub[(stage_id, "reference")]
    t = next(t for t in r.todos if t.id == todo_id)
    assert t.passed and t.points == t.max_points, t.message


@pytest.mark.parametrize("stage_id,todo_id", TODOS, ids=[t for _, t in TODOS])
def test_todo_stub_fails_as_not_implemented(graded_reference_and_stub, stage_id, todo_id):
    r = graded_reference_and_stub[(stage_id, "stub")]
    t = next(t for t in r.todos if t.id == todo_id)
    todo = load_stage(stage_id, hidden=False).todo(todo_id)
    assert not t.passed and t.points == 0
    assert t.message == f"{todo.label} is not implemented yet", t.message


@pytest.mark.parametrize("stage_id,todo_id", TODOS, ids=[t for _, t in TODOS])
def test_todo_has_enough_checks_and_one_region(stage_id, todo_id):
    stage = load_stage(stage_id, hidden=True)
    todo = stage.todo(todo_id)
    assert len(stage.checks_for(todo_id, hidden=False)) >= 3, "at least 3 public checks per TODO"
    assert len(stage.checks_for(todo_id, hidden=True)) >= 2, "at least 2 hidden checks per TODO"
    text = reference_path(stage).read_text(encoding="utf-8")
    begin, end = solution_region(text, todo.target)
    above = "\n".join(text.splitlines()[max(0, begin - 6):begin])
    assert f"TODO {todo.number} ({todo.id})" in above, "the region must be introduced by its TODO comment"


@pytest.mark.parametrize("stage_id", STAGES)
def test_stage_scores_add_up(graded_reference_and_stub, stage_id):
    stage = load_stage(stage_id, hidden=False)
    r = graded_reference_and_stub[(stage_id, "reference")]
    assert r.score == r.max_score == stage.max_score
    assert graded_reference_and_stub[(stage_id, "stub")].score == 0

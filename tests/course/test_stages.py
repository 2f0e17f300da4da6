"""Properties every stage must have: the reference passes, the stub fails as "not implemented",
every TODO has enough checks, generated files match their sources."""
from __future__ import annotations

import pytest

from autograder.authoring.build import build
from autograder.core import layout
from autograder.core.pysource import solution_region
from autograder.core.spec import load_stage
from tests.conftest import stage_params


def _todo_params() -> list:
    """(stage, TODO) for every TODO of every stage with a spec; a half-written stage's are skipped."""
    out = []
    for p in stage_params():
        sid = p.values[0]
        for t in load_stage(sid, hidden=False).todos if layout.stage_files(sid).spec.exists() else []:
            out.append(pytest.param(sid, t.id, marks=p.marks, id=t.id))
    return out


TODOS = _todo_params()


def test_generated_files_match_their_sources():
    stale = build(check_only=True)
    assert not stale, f"regenerate with `python -m autograder build`: {[str(p) for p in stale]}"


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
@pytest.mark.parametrize("stage_id,todo_id", TODOS)
def test_todo_reference_passes(graded_reference_and_stub, stage_id, todo_id):
    r = graded_reference_and_stub[(stage_id, "reference")]
    t = next(t for t in r.todos if t.id == todo_id)
    assert t.passed and t.points == t.max_points, t.message


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
@pytest.mark.parametrize("stage_id,todo_id", TODOS)
def test_todo_stub_fails_as_not_implemented(graded_reference_and_stub, stage_id, todo_id):
    r = graded_reference_and_stub[(stage_id, "stub")]
    t = next(t for t in r.todos if t.id == todo_id)
    todo = load_stage(stage_id, hidden=False).todo(todo_id)
    assert not t.passed and t.points == 0
    assert t.message == f"{todo.label} is not implemented yet", t.message


@pytest.mark.parametrize("stage_id,todo_id", TODOS)
def test_todo_has_enough_checks_and_one_region(stage_id, todo_id):
    stage = load_stage(stage_id, hidden=True)
    todo = stage.todo(todo_id)
    if todo.target == "quiz":  # one public check per question, no hidden ones
        assert len(stage.checks_for(todo_id, hidden=False)) == len(stage.quiz.questions)
    else:
        assert len(stage.checks_for(todo_id, hidden=False)) >= 3, "at least 3 public checks per TODO"
        assert len(stage.checks_for(todo_id, hidden=True)) >= 2, "at least 2 hidden checks per TODO"
    text = layout.stage_files(stage_id).reference.read_text(encoding="utf-8")
    begin, end = solution_region(text, todo.target)
    above = "\n".join(text.splitlines()[max(0, begin - 6):begin])
    assert f"TODO {todo.number} ({todo.id})" in above, "the region must be introduced by its TODO comment"


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
@pytest.mark.parametrize("stage_id", stage_params())
def test_stage_scores_add_up(graded_reference_and_stub, stage_id):
    stage = load_stage(stage_id, hidden=False)
    r = graded_reference_and_stub[(stage_id, "reference")]
    assert r.score == r.max_score == stage.max_score
    assert graded_reference_and_stub[(stage_id, "stub")].score == 0


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
@pytest.mark.parametrize("stage_id", stage_params())
def test_stub_reports_every_check_as_not_implemented(graded_reference_and_stub, stage_id):
    """No check of an unfilled TODO reads as a wrong answer (in the table, JSON, CSV or Gradescope)."""
    for t in graded_reference_and_stub[(stage_id, "stub")].todos:
        assert t.status.value == "not_implemented", (t.id, t.message)
        assert all("not implemented yet" in c.message for c in t.checks if not c.passed), (t.id, t.checks)


@pytest.mark.parametrize("stage_id", stage_params())
def test_load_stage_public_holds_public_checks_only_whatever_was_imported(stage_id):
    full = load_stage(stage_id, hidden=True)          # imports the hidden checks first
    public = load_stage(stage_id, hidden=False)
    assert public.checks and not any(c.hidden for c in public.checks)
    assert [c.key for c in public.checks] == [c.key for c in full.checks if not c.hidden]
    assert any(c.hidden for c in load_stage(stage_id, hidden=True).checks)


@pytest.mark.parametrize("stage_id", stage_params())
def test_every_learner_edition_has_every_todo_stubbed(stage_id):
    """No edition's learner notebook carries a solution: one stub per TODO, no solution marker left."""
    import json

    files = layout.stage_files(stage_id)
    todos = load_stage(stage_id, hidden=False).todos
    for lang in files.languages:
        cells = json.loads(files.learner(lang).read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                         for c in cells if c["cell_type"] == "code")
        assert "BEGIN SOLUTION" not in code and "END SOLUTION" not in code and "BEGIN HIDDEN TESTS" not in code, lang
        assert code.count("raise NotImplementedError()") >= len(todos), (lang, code.count("raise NotImplementedError()"))
        for t in todos:
            assert f"# TODO {t.number} ({t.id})" in code, (lang, t.id)

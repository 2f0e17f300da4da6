"""A stage's words live in ``autograder/checks/sNN.toml``, apart from its code: every stage has them all,
the spec modules hold none, and a text file that does not fit its spec stops the stage with a clear line."""
from __future__ import annotations

import ast

import pytest

from autograder.core import layout, stage_text
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo, load_stage
from autograder.core.stage_text import StageTextError

STAGES = layout.built_stages()


@pytest.mark.parametrize("sid", STAGES)
def test_every_word_a_learner_reads_of_the_spec_comes_from_the_text_file(sid):
    stage = load_stage(sid, hidden=False)
    assert isinstance(stage.title, L) and isinstance(stage.summary, L)
    for todo in stage.todos:
        assert isinstance(todo.title, L) and isinstance(todo.contract, L), todo.id
        assert len(todo.hints) == 3 and all(isinstance(h, L) for h in todo.hints), todo.id
    for check in stage.checks:
        assert isinstance(check.hint, L) and isinstance(check.title, L), check.key
    for q in stage.quiz.questions:
        assert isinstance(q.text, L) and isinstance(q.explain, L), q.id
        assert q.decimals is not None or len(q.choices) >= 2, q.id


@pytest.mark.parametrize("sid", STAGES)
def test_hidden_checks_take_their_words_from_the_hidden_text_file(sid):
    hidden = load_stage(sid).checks_for
    checks = [c for t in load_stage(sid).todos for c in hidden(t.id, hidden=True)]
    assert checks and all(isinstance(c.hint, L) for c in checks), sid


@pytest.mark.parametrize("sid", STAGES)
def test_the_spec_modules_write_no_words(sid):
    """One owner per text: the spec and hidden modules hold code; an ``L(...)`` there would be a second place."""
    files = layout.stage_files(sid)
    for path in (files.spec, files.hidden):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "L"]
        assert not calls, f"{layout.rel(path)} writes text at lines {calls}: move it to {path.stem}.toml beside it"


@pytest.mark.parametrize("sid", STAGES)
def test_the_hidden_words_are_never_released_nor_seen_by_a_child(sid):
    hidden_text = layout.stage_files(sid).hidden_text
    assert hidden_text.is_file()
    assert hidden_text not in [p for p, _ in layout.release_files(sid)] and hidden_text not in layout.child_files()
    assert layout.stage_files(sid).text in layout.child_files()  # the public words: a child loads its stage


def _stage() -> Stage:
    stage = Stage(id="s98", todos=[Todo("s98.count", 1, target="count")],
                  quiz=Quiz(number=2, points=1, questions=tuple(Question(f"q{i}", decimals=0) for i in range(1, 5))))
    stage.check("s98.count")(lambda impl: impl.count())
    return stage


def _file(tmp_path, text: str):
    path = tmp_path / "s98.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = '''
[todos.count.title]
en = "count"
zh = "计数"
[checks.count."<lambda>".hint]
en = "Count them."
zh = "数一数。"
[quiz.q1.text]
en = "How many?"
zh = "有几个？"
'''


def test_a_hidden_text_file_binds_only_hidden_checks(tmp_path):
    stage = _stage()
    with pytest.raises(StageTextError, match="names no hidden check"):
        stage_text.apply(stage, _file(tmp_path, '[checks.count."<lambda>".hint]\nen = "a"\nzh = "甲"\n'), hidden=True)
    with pytest.raises(StageTextError, match="unknown section"):
        stage_text.apply(_stage(), _file(tmp_path, GOOD), hidden=True)


def test_words_join_their_todo_check_and_question(tmp_path):
    stage = _stage()
    stage_text.apply(stage, _file(tmp_path, GOOD))
    assert stage.todo("s98.count").title == L("count", "计数")
    assert stage.checks_for("s98.count")[0].hint == L("Count them.", "数一数。")
    quiz_check = stage.checks_for("s98.quiz")[0]
    assert quiz_check.title == L("How many?", "有几个？") and stage.quiz.questions[0].text == quiz_check.title
    stage_text.apply(stage, _file(tmp_path, GOOD + "[stage.title]\nen = 'x'\nzh = '乙'\n"))  # applied once
    assert stage.title == ""


@pytest.mark.parametrize("bad, named", [
    ("[todos.counts.title]\nen = 'a'\nzh = '甲'\n", "todos.counts"),
    ("[checks.count.no_such_check.hint]\nen = 'a'\nzh = '甲'\n", "checks.count.no_such_check"),
    ("[quiz.q9.text]\nen = 'a'\nzh = '甲'\n", "quiz.q9"),
    ("[todos.count.title]\nen = 'only English'\n", "todos.count.title"),
    ("[todos.count.title]\nen = 'a'\nzh = ''\n", "todos.count.title"),
    ("[todos.count.tittle]\nen = 'a'\nzh = '甲'\n", "todos.count"),
    ("[hints]\nen = 'a'\nzh = '甲'\n", "hints"),
])
def test_an_entry_that_binds_to_nothing_stops_the_stage_and_is_named(tmp_path, bad, named):
    with pytest.raises(StageTextError) as err:
        stage_text.apply(_stage(), _file(tmp_path, bad))
    assert "s98.toml" in str(err.value) and named in str(err.value)


def test_a_text_written_in_both_places_is_refused(tmp_path):
    stage = Stage(id="s98", todos=[Todo("s98.count", 1, target="count", title=L("count", "计数"))])
    with pytest.raises(StageTextError, match="also written in the spec module"):
        stage_text.apply(stage, _file(tmp_path, "[todos.count.title]\nen = 'count'\nzh = '计数'\n"))

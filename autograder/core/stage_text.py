"""A stage's words, apart from its code: its folder's ``checks.toml``, the file translators edit (and
``hidden.toml`` for the hidden checks' titles and hints, which never ship to learners).

It holds, in English and Chinese, everything a learner reads of a stage's spec: the stage's title and
summary; each TODO's title, contract and three hint tiers; each public check's title, hint and input
(where the input is words, not only code); and the quiz's questions, explanations and choices. The
spec module (``checks.py``, imported as ``autograder.checks.sNN``) keeps the skeleton (ids, targets, points, limits) and the
probes; :func:`apply` joins the two when the stage is loaded.

The file's shape (every text is a table with ``en`` and ``zh``; a TODO or check is named without its
stage, e.g. ``normalize`` for ``s01.normalize``)::

    [stage.title]                       en = "..."  zh = "..."
    [todos.NAME.title] / .contract      [[todos.NAME.hints]] (three)
    [checks.NAME.CHECK.title] / .hint / .call
    [quiz.QID.text] / .explain          [[quiz.QID.choices]]

Invariants: every entry binds to something the spec defines (a key that names no TODO, check or
question, or a field the spec module also gives, is an error naming the file and the key); every
text has exactly both languages; after :func:`apply` the stage is what it would be had the words been
written in the spec module itself, and applying twice changes nothing.
"""
from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from autograder.core.i18n import LANGUAGES, L
from autograder.core.quiz import Quiz

TODO_FIELDS = ("title", "contract", "hints")
CHECK_FIELDS = ("title", "hint", "call")
QUESTION_FIELDS = ("text", "explain", "choices")
STAGE_FIELDS = ("title", "summary")


class StageTextError(ValueError):
    """A stage's text file does not fit its spec: the message names the file and the key."""


def read(path: Path, parsed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The file as nested tables of :class:`L` (an empty dict when the stage has no text file).
    ``parsed``: the file's TOML as :func:`parse` returned it, where the caller has it already (a
    grading child gets it from the grader, instead of parsing the same file in every child)."""
    if parsed is None:
        parsed = parse(path)
    return _texts(parsed, path, ()) if parsed else {}


def parse(path: Path) -> dict[str, Any]:
    """The file's TOML as plain tables, lists and strings ({} when there is no such file)."""
    if not path.is_file():
        return {}
    with path.open("rb") as f:
        return tomllib.load(f)


def _texts(node: Any, path: Path, where: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return tuple(_texts(v, path, (*where, str(i))) for i, v in enumerate(node))
    if not isinstance(node, dict):
        raise StageTextError(f"{path.name}: {'.'.join(where)} must be a table with {' and '.join(LANGUAGES)}")
    if set(node) & set(LANGUAGES):
        if set(node) != set(LANGUAGES) or not all(isinstance(node[k], str) and node[k] for k in LANGUAGES):
            raise StageTextError(f"{path.name}: {'.'.join(where)} needs exactly {', '.join(LANGUAGES)}, each a non-empty text")
        return L(*(node[k] for k in LANGUAGES))
    return {k: _texts(v, path, (*where, k)) for k, v in node.items()}


def apply(stage: Any, path: Path, *, hidden: bool = False, parsed: dict[str, Any] | None = None) -> None:
    """Join the words of ``path`` to ``stage`` (a :class:`autograder.core.spec.Stage` with its public
    checks registered; with ``hidden``, the hidden checks' file, once they are registered too).
    ``parsed``: the file already parsed (:func:`read`). Raises :class:`StageTextError` for an entry
    that binds to nothing."""
    flag = "_hidden_text_applied" if hidden else "_text_applied"
    if getattr(stage, flag, False):
        return
    data = read(path, parsed)
    unknown = set(data) - ({"checks"} if hidden else {"stage", "todos", "checks", "quiz"})
    if unknown:
        raise StageTextError(f"{path.name}: unknown section(s) {sorted(unknown)}")
    short = {t.id.split(".", 1)[1]: t for t in stage.todos}
    for field, value in _fields(data.get("stage", {}), STAGE_FIELDS, path, "stage").items():
        _refuse_both(getattr(stage, field), path, f"stage.{field}")
        setattr(stage, field, value)
    for name, fields in data.get("todos", {}).items():
        todo = short.get(name)
        if todo is None:
            raise StageTextError(f"{path.name}: todos.{name} names no TODO of {stage.id}")
        fields = _fields(fields, TODO_FIELDS, path, f"todos.{name}")
        for field in fields:
            _refuse_both(getattr(todo, field), path, f"todos.{name}.{field}")
        stage.todos[stage.todos.index(todo)] = replace(todo, **fields)
    for name, checks in data.get("checks", {}).items():
        todo = short.get(name)
        if todo is None or not isinstance(checks, dict):
            raise StageTextError(f"{path.name}: checks.{name} names no TODO of {stage.id}")
        for check_name, fields in checks.items():
            i = next((i for i, c in enumerate(stage.checks) if c.todo == todo.id and c.name == check_name and c.hidden == hidden),
                     None)
            if i is None:
                kind = "hidden" if hidden else "public"
                raise StageTextError(f"{path.name}: checks.{name}.{check_name} names no {kind} check of {todo.id}")
            fields = _fields(fields, CHECK_FIELDS, path, f"checks.{name}.{check_name}")
            for field in fields:
                _refuse_both(getattr(stage.checks[i], field), path, f"checks.{name}.{check_name}.{field}")
            stage.checks[i] = replace(stage.checks[i], **fields)
    if "quiz" in data:
        if stage.quiz is None:
            raise StageTextError(f"{path.name}: [quiz] but {stage.id} has no quiz")
        by_id = {q.id: q for q in stage.quiz.questions}
        questions = dict(by_id)
        for qid, fields in data["quiz"].items():
            if qid not in by_id:
                raise StageTextError(f"{path.name}: quiz.{qid} names no question of {stage.id}")
            fields = _fields(fields, QUESTION_FIELDS, path, f"quiz.{qid}")
            for field in fields:
                _refuse_both(getattr(by_id[qid], field), path, f"quiz.{qid}.{field}")
            questions[qid] = replace(by_id[qid], **fields)
        stage.set_quiz(Quiz(stage.quiz.number, stage.quiz.points, tuple(questions[q.id] for q in stage.quiz.questions)))
    setattr(stage, flag, True)


def _fields(table: Any, allowed: tuple[str, ...], path: Path, where: str) -> dict[str, Any]:
    if isinstance(table, L) or not isinstance(table, dict) or set(table) - set(allowed):
        extra = sorted(set(table) - set(allowed)) if isinstance(table, dict) else table
        raise StageTextError(f"{path.name}: {where} may hold {', '.join(allowed)}, not {extra}")
    return table


def _refuse_both(in_code: Any, path: Path, where: str) -> None:
    """One owner per text: a field the spec module gives is not given again by the file."""
    if in_code not in ("", (), None):
        raise StageTextError(f"{path.name}: {where} is also written in the spec module; keep it in one place")

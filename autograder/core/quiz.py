"""The concept quiz at the end of every stage: a TODO of its own (``sNN.quiz``), checked per question.

The learner answers in a function ``quiz()`` that returns ``{question id: answer}``: a letter for a
multiple-choice question, a number for a numeric one. What ``check()`` compares against is a salted
digest of the canonical answer, so reading ``autograder/expected/sNN.json`` (or a check's output)
does not show the answer; the answers themselves live only in the reference module.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

from autograder.core.i18n import L

LETTERS = "ABCDEFGH"


@dataclass(frozen=True)
class Question:
    """One quiz question.

    Invariants: ``id`` is a short identifier (``q1``); a choice question has 2-8 ``choices`` and
    ``decimals`` is None; a numeric question has no choices, and answers are compared after rounding
    to ``decimals`` places. ``explain`` is what a wrong answer shows: it teaches, never gives the
    answer away.
    """

    id: str
    text: L | str = ""     # the words arrive from the stage's text file (:mod:`autograder.core.stage_text`)
    explain: L | str = ""
    choices: tuple[L | str, ...] = ()
    decimals: int | None = None

    def __post_init__(self) -> None:
        if not self.id.isidentifier():
            raise ValueError(f"quiz question id {self.id!r} must be an identifier like 'q1'")
        if not self.text:
            return  # words not joined yet: a choice question's choices come with them
        if self.choices and self.decimals is not None:
            raise ValueError(f"{self.id}: a question has choices or a number answer, not both")
        if not self.choices and self.decimals is None:
            raise ValueError(f"{self.id}: give choices, or decimals= for a number answer")
        if self.choices and not 2 <= len(self.choices) <= len(LETTERS):
            raise ValueError(f"{self.id}: 2 to {len(LETTERS)} choices")

    @property
    def kind(self) -> str:
        return "choice" if self.choices else "number"


@dataclass(frozen=True)
class Quiz:
    """The quiz of a stage: its TODO number, its points, and 4-6 questions."""

    number: int
    points: int
    questions: tuple[Question, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not 4 <= len(self.questions) <= 6:
            raise ValueError("a stage's quiz has 4 to 6 questions")
        if len({q.id for q in self.questions}) != len(self.questions):
            raise ValueError("quiz question ids must be unique")
        if not 1 <= self.points <= 2:
            raise ValueError("a quiz is worth 1 or 2 points")


def canonical(question: Question, answer: Any) -> str:
    """The answer as compared: ``"B"`` for a choice, ``"0.25"`` for a number; ``""`` when unanswered
    or not an answer of the right kind (a wrong kind is simply not correct)."""
    if answer is None:
        return ""
    if question.kind == "choice":
        if not isinstance(answer, str):
            return ""
        letter = answer.strip().upper()
        return letter if len(letter) == 1 and letter in LETTERS[: len(question.choices)] else ""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
        return ""
    value = round(float(answer), question.decimals)
    return f"{value + 0.0:.{question.decimals}f}"  # + 0.0 turns -0.0 into 0.0


def digest(stage_id: str, question: Question, answer: Any) -> str:
    """What the quiz checks compare: a salted digest of the canonical answer (16 hex digits)."""
    text = canonical(question, answer)
    if not text:
        return "unanswered or not a valid answer"
    return hashlib.sha256(f"prefix-cache-workbook/quiz/{stage_id}/{question.id}/{text}".encode()).hexdigest()[:16]

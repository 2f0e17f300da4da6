"""What a stage is made of: its TODOs and the checks that judge each of them.

A stage spec lives in its folder's ``checks.py`` (public checks, which learners may read; imported as
``autograder.checks.sNN``) and is extended by its ``hidden.py`` (hidden checks, which ship to the grader
only; imported as ``solutions.hidden.sNN``); :mod:`autograder.core.layout` owns those names. Every report,
pytest name, nbgrader ``grade_id`` and inline ``check()`` call names a TODO by the same id.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from autograder.core import cell_ids, layout, stage_text
from autograder.core.i18n import L
from autograder.core.layout import stage_number
from autograder.core.pysource import imported_modules
from autograder.core.quiz import Quiz
from autograder.core.quiz import digest as quiz_digest

Probe = Callable[[Any], Any]

_TODO_ID = re.compile(r"^s\d\d\.[A-Za-z_][A-Za-z0-9_]*$")

QUIZ_TITLE = L("concept quiz", "概念小测")
QUIZ_CONTRACT = L(
    "Return a dict from each question id above to your answer: a capital letter for a choice\n"
    "question, a number for a numeric one (rounded as the question says). Unanswered questions\n"
    "count as wrong; each question is checked on its own.",
    "返回一个字典：键是上面每道题的编号，值是你的答案——选择题填大写字母，数值题填数字\n"
    "（按题目要求保留小数）。没作答的题按答错计；每道题单独判分。")
QUIZ_HINTS = (
    L("Each question is about one idea of this stage; a wrong answer's explanation says which.",
      "每道题考查本阶段的一个要点；答错时给出的解释会告诉你是哪一个。"),
    L("Re-run the demo the question refers to, and compare your prediction with what it printed.",
      "重新运行题目提到的演示单元，把你的预测和它的输出对照一下。"),
    # the third tier names the stage: :func:`quiz_hints` fills ``{stage}``
    L("Answer format: return {{\"q1\": \"B\", \"q2\": 0.75, ...}}; check(\"{stage}.quiz\") marks each question.",
      "答案格式：return {{\"q1\": \"B\", \"q2\": 0.75, ...}}。check(\"{stage}.quiz\") 会逐题判分。"),
)


def quiz_hints(stage_id: str) -> tuple[L, ...]:
    """The quiz's three hint tiers for stage ``stage_id`` (its id in the last one, never a placeholder)."""
    return tuple(h.format(stage=stage_id) for h in QUIZ_HINTS)


@dataclass(frozen=True)
class Todo:
    """One thing a learner writes: exactly one function or method of the reference module.

    ``contract`` is what the TODO comment says in the notebook (what to set or return and the
    invariant that must hold, never code); ``hints`` are the three tiers :func:`autograder.hint`
    reveals one at a time: the idea, the approach, a code skeleton with blanks (``___``).

    Invariants: ``id`` looks like ``sNN.name``; ``target`` is ``name`` or ``Class.name`` and names a
    top-level object (or a method of one) in the stage's reference module; ``points > 0``; ``hints``
    is empty or has exactly three tiers; ``twins`` name given functions (``"module:qualname"``) that
    already do what this TODO asks, which are blocked while it is judged (see :mod:`autograder.child.twins`).
    ``preload`` names modules this TODO's own code needs that the rest of the stage does not (SciPy):
    the child grading it imports them before learner code, as the stage's preload, and so does any
    other child whose learner code might reach this TODO's function (see
    :func:`autograder.grading.grade.child_preload`).
    """

    id: str
    number: int
    target: str
    points: int = 1
    title: L | str = ""
    contract: L | str = ""
    hints: tuple[L | str, ...] = ()
    twins: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _TODO_ID.match(self.id):
            raise ValueError(f"TODO id {self.id!r} must look like 'sNN.name'")
        if self.points <= 0:
            raise ValueError(f"TODO {self.id}: points must be positive")
        if self.hints and len(self.hints) != 3:
            raise ValueError(f"TODO {self.id}: hints come in exactly three tiers (idea, approach, skeleton)")
        if any(":" not in t for t in self.twins):
            raise ValueError(f"TODO {self.id}: twins are named 'module:qualname'")

    @property
    def owner(self) -> str:
        """The top-level name the learner's cell defines (the class for a method target)."""
        return self.target.split(".")[0]

    @property
    def function_name(self) -> str:
        return self.target.split(".")[-1]

    @property
    def grade_id(self) -> str:
        """The nbgrader ``grade_id`` of its test cell (:mod:`autograder.core.cell_ids`)."""
        return cell_ids.grade_id(self.id)

    @property
    def label(self) -> str:
        return f"TODO {self.number} ({self.id})"


@dataclass(frozen=True)
class Check:
    """A probe of one TODO. The verdict compares ``probe(learner)`` with ``probe(reference)``.

    ``call`` is the input as a learner reads it; hidden checks never show ``call``, expected or got.
    ``atol`` switches the comparison of floats from exact to absolute tolerance.
    """

    todo: str
    name: str
    probe: Probe
    hint: L | str = ""    # the stage's text file gives it for a public check (:mod:`autograder.core.stage_text`)
    call: L | str = ""   # the input, as the learner reads it (bilingual when it has words, not only code)
    hidden: bool = False
    atol: float | None = None
    secret: bool = False  # never show expected or got (a quiz answer), only the hint
    title: L | str = ""   # what the check checks, in words (defaults to its name)
    # How narrow the mistake is that this check's hint names: when several checks of a TODO fail, the
    # most specific one leads (its hint is about the mistake made); ties keep the stage's order.
    specificity: int = 0
    # A hidden check's visible sibling: the public check of the same TODO that exercises the same rule
    # on other inputs, so that no rule is enforced by hidden checks alone (tests/e2e/test_feedback.py).
    sibling: str = ""

    @property
    def key(self) -> str:
        return f"{self.todo}:{'hidden:' if self.hidden else ''}{self.name}"


#: Native libraries a stage preloads only where it needs them and a learner might import anyway
#: (:meth:`Stage.not_preloaded`).
OPTIONAL_PACKAGES = ("torch",)


@dataclass
class Stage:
    """A stage of the course: its TODOs in order, and the checks registered on them.

    Where the stage's files live is not stated here: :mod:`autograder.core.layout` finds them, and
    :func:`load_stage` fills in ``notebook`` and ``reference`` from it.

    Invariants: TODO ids and numbers are unique and belong to this stage; every check names one of
    this stage's TODOs; check names are unique per TODO and visibility.
    """

    id: str
    todos: list[Todo]
    title: L | str = ""    # the stage's text file gives it (:mod:`autograder.core.stage_text`)
    subtitle: str = ""
    summary: L | str = ""  # one line for the README's "what you build" table
    minutes: int = 0       # an honest estimate of the time a learner needs
    quiz: Quiz | None = None
    time_limit_s: float = 10.0
    memory_limit_mb: int = 1024
    preload: list[str] = field(default_factory=list)  # imported in the child before learner code (e.g. torch)
    checks: list[Check] = field(default_factory=list)
    notebook: str = field(default="", compare=False)   # filled by load_stage (layout), e.g. "02_block_hash"
    reference: str = field(default="", compare=False)  # filled by load_stage, e.g. "solutions.s02_block_hash"

    def __post_init__(self) -> None:
        stage_number(self.id)  # validates the id
        ids = [t.id for t in self.todos]
        if len(set(ids)) != len(ids) or len({t.number for t in self.todos}) != len(ids):
            raise ValueError(f"stage {self.id}: TODO ids and numbers must be unique")
        for t in self.todos:
            if not t.id.startswith(self.id + "."):
                raise ValueError(f"TODO {t.id} does not belong to stage {self.id}")
        if self.quiz is not None and not any(t.target == "quiz" for t in self.todos):
            self._add_quiz(self.quiz)

    def _add_quiz(self, quiz: Quiz) -> None:
        """The quiz as TODO ``sNN.quiz`` (target ``quiz()``), with one public check per question."""
        todo = Todo(f"{self.id}.quiz", quiz.number, target="quiz", points=quiz.points, title=QUIZ_TITLE,
                    contract=QUIZ_CONTRACT, hints=quiz_hints(self.id))
        if any(t.number == todo.number for t in self.todos):
            raise ValueError(f"stage {self.id}: the quiz's TODO number {todo.number} is taken")
        self.todos.append(todo)
        self.checks.extend(self._quiz_checks(quiz))

    def _quiz_checks(self, quiz: Quiz) -> list[Check]:
        out = []
        for q in quiz.questions:
            def probe(impl, q=q, sid=self.id):
                answers = impl.quiz()
                return quiz_digest(sid, q, answers.get(q.id)) if type(answers) is dict else "quiz() must return a dict"
            out.append(Check(f"{self.id}.quiz", q.id, probe, q.explain, secret=True, title=q.text))
        return out

    def set_quiz(self, quiz: Quiz) -> None:
        """Replace the quiz's questions (their words arrive from the stage's text file): its checks are
        made anew where the old ones stood, since each check's probe holds its question."""
        at = next(i for i, c in enumerate(self.checks) if c.todo == f"{self.id}.quiz")
        self.checks = [c for c in self.checks if c.todo != f"{self.id}.quiz"]
        self.checks[at:at] = self._quiz_checks(quiz)
        self.quiz = quiz

    @property
    def number(self) -> int:
        return stage_number(self.id)

    # -- what its grading children preload ------------------------------------------------------
    # A grading child loads native libraries (torch's) only before the learner's first cell: from then
    # on its audit hook refuses native code. So what a child preloads, and with it its budget
    # (autograder.grading.grade.limits_for), follows from the stage's declaration alone: a cell that
    # names torch, run or not (`if False: import torch`), adds no preload and buys no budget, and an
    # import of torch in a stage that preloads none fails when it runs during grading. check() and the
    # grader's report both say so (messages.STAGE_WITHOUT_PACKAGE, for each of not_preloaded()).
    @property
    def declared_preload(self) -> tuple[str, ...]:
        """Every module this stage's children may preload: the stage's own, then each TODO's, once each."""
        return tuple(dict.fromkeys([*self.preload, *(m for t in self.todos for m in t.preload)]))

    def preloads(self, package: str) -> bool:
        """Whether some child of this stage preloads ``package`` (a top-level name: ``torch``)."""
        return any(m.split(".")[0] == package for m in self.declared_preload)

    def not_preloaded(self, sources: Iterable[str]) -> list[str]:
        """The :data:`OPTIONAL_PACKAGES` the cells ``sources`` import (anywhere, run or not) that no
        child of this stage preloads: those imports fail when they run during grading."""
        found = set().union(*(imported_modules(s) for s in sources))
        return [p for p in OPTIONAL_PACKAGES if p in found and not self.preloads(p)]

    # -- registration -------------------------------------------------------------------------
    def check(
        self,
        todo: str,
        *,
        hint: L | str = "",
        call: L | str = "",
        hidden: bool = False,
        atol: float | None = None,
        name: str | None = None,
        title: L | str = "",
        specificity: int = 0,
        sibling: str = "",
    ) -> Callable[[Probe], Probe]:
        """Decorator: register ``probe`` as a check of ``todo``."""
        self.todo(todo)  # validates the id before anything is registered
        if sibling and not hidden:
            raise ValueError(f"{todo}: only a hidden check names a visible sibling")

        def register(probe: Probe) -> Probe:
            check = Check(todo, name or probe.__name__, probe, hint, call, hidden, atol, title=title,
                          specificity=specificity, sibling=sibling)
            if any(c.key == check.key for c in self.checks):
                raise ValueError(f"duplicate check {check.key}")
            self.checks.append(check)
            return probe

        return register

    # -- queries ------------------------------------------------------------------------------
    def todo(self, todo_id: str) -> Todo:
        for t in self.todos:
            if t.id == todo_id:
                return t
        raise KeyError(f"stage {self.id} has no TODO {todo_id!r}; TODOs: {[t.id for t in self.todos]}")

    def checks_for(self, todo_id: str, *, hidden: bool | None = None) -> list[Check]:
        return [c for c in self.checks if c.todo == todo_id and (hidden is None or c.hidden == hidden)]

    def sibling_of(self, check: Check) -> Check | None:
        """The visible check a hidden check names as its sibling (None when it names none or no such check)."""
        return next((c for c in self.checks_for(check.todo, hidden=False) if c.name == check.sibling), None)

    @property
    def max_score(self) -> int:
        return sum(t.points for t in self.todos)

    @property
    def owners(self) -> list[str]:
        """Top-level names that learners' solution cells define, in TODO order, without repeats."""
        return list(dict.fromkeys(t.owner for t in self.todos))


def available_stages() -> list[str]:
    """The stage ids whose spec module exists (see :mod:`autograder.core.layout`)."""
    return [s.id for s in layout.all_stages() if s.spec.exists()]


def load_stage(stage_id: str, *, hidden: bool = True, reference: str | None = None,
               words: dict | None = None) -> Stage:
    """The stage spec with its public checks, plus hidden checks when ``hidden`` and available.

    Hidden checks are absent from a learner's copy of the course; asking for them there is not an
    error, there are just none. With ``hidden=False`` the result holds only public checks, whatever
    was imported before. ``reference`` names the reference module where the layout cannot be read
    (the grading child sees no ``solutions/`` folder). ``words``: the stage's text file already
    parsed (:func:`autograder.core.stage_text.parse`; a grading child gets it from the grader).
    """
    files = layout.stage_files(stage_id)
    module = importlib.import_module(files.spec_module)
    stage: Stage = module.STAGE
    stage_text.apply(stage, layout.stage_text_file(stage_id), parsed=words)  # the words, before hidden checks join
    if hidden:
        try:
            importlib.import_module(files.hidden_module)
        except ModuleNotFoundError as exc:
            if exc.name not in ("solutions", "solutions.hidden", files.hidden_module):
                raise
        else:  # a grading child has the checks but not their words: it shows none
            stage_text.apply(stage, layout.hidden_text_file(stage_id), hidden=True)
    if reference is not None:
        stage.reference = reference
    elif not stage.reference:
        if files.slug is not None:
            stage.notebook, stage.reference = files.notebook, files.reference_module
    if not hidden:
        return replace(stage, checks=[c for c in stage.checks if not c.hidden])
    return stage


def has_hidden_checks(stage_id: str) -> bool:
    return importlib.util.find_spec("solutions") is not None and \
        importlib.util.find_spec(layout.stage_files(stage_id).hidden_module) is not None


def stage_of(todo_id: str) -> str:
    return todo_id.split(".")[0]

"""What grading returns: per TODO and per submission, with an explicit status.

These are plain data: the CLI table, JSON, CSV, nbgrader's gradebook and Gradescope's results are all
written from them, so every report agrees.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum

from autograder.core.i18n import L


class TodoStatus(str, Enum):
    """How one TODO ended."""

    PASSED = "passed"                     # every check (public and hidden) passed
    FAILED = "failed"                     # a check failed: wrong answer
    NOT_IMPLEMENTED = "not_implemented"   # the TODO (or one it needs) is still the stub
    MISSING = "missing"                   # the notebook does not define what the TODO needs
    STOPPED = "stopped"                   # the child was stopped: time, memory, exit, crash
    TAMPERED = "tampered"                 # the child broke the result channel's rules (autograder.child.protocol)
    GRADER_ERROR = "grader_error"         # a fault of the grader itself, reported on this TODO


class SubmissionStatus(str, Enum):
    GRADED = "graded"          # every TODO has a result (``warnings`` may still say something)
    NOT_GRADED = "not_graded"  # the file could not be graded at all; ``error`` says why


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one check of one TODO, as every report shows it."""

    name: str
    """The check's name (the grader's, from the stage's spec)."""
    hidden: bool
    """Whether it is a hidden check (learners see its name and a hint, never its inputs)."""
    passed: bool
    """Whether the learner's code passed it."""
    message: str
    """One line composed by the grader: the check's summary, or why it failed or did not run."""
    title: str = ""
    """How a report names it in the submission's language (its title in Chinese; empty: its name)."""


@dataclass
class TodoResult:
    """The verdict on one TODO of one submission.

    Invariants: ``0 <= points <= max_points``; ``passed`` iff ``status is PASSED``; ``message`` is
    one line composed by the grader; ``checks`` holds one :class:`CheckResult` per check, in the
    order the stage lists them.
    """

    id: str
    number: int
    title: L | str  # a bilingual title stays both texts until a report picks one
    points: float
    max_points: float
    status: TodoStatus
    message: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status is TodoStatus.PASSED

    def to_json(self) -> dict:
        d = asdict(self)
        d["status"] = self.status.value
        d["passed"] = self.passed
        return d


@dataclass
class SubmissionResult:
    """The verdict on one notebook.

    Invariants: ``status is NOT_GRADED`` iff ``error`` is set, and then ``todos`` is empty;
    a graded submission has one :class:`TodoResult` per TODO of its stage, in TODO order.
    """

    path: str
    stage: str | None
    status: SubmissionStatus = SubmissionStatus.GRADED
    todos: list[TodoResult] = field(default_factory=list)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    isolation: str = ""  # the isolation level its children ran under (autograder.isolation.levels)
    lang: str = ""       # its messages' language: its notebook's edition, or --lang; "" when unread (the current language)

    @classmethod
    def not_graded(cls, path: str, reason: str, stage: str | None = None) -> "SubmissionResult":
        return cls(path, stage, SubmissionStatus.NOT_GRADED, error=reason)

    @property
    def graded(self) -> bool:
        return self.status is SubmissionStatus.GRADED

    @property
    def score(self) -> float:
        return sum(t.points for t in self.todos)

    @property
    def max_score(self) -> float:
        return sum(t.max_points for t in self.todos)

    def failed_todos(self) -> set[str]:
        return {t.id for t in self.todos if not t.passed}

    @classmethod
    def from_json(cls, d: dict, seconds: float = 0.0) -> SubmissionResult:
        """The result :meth:`to_json` wrote (its derived ``score``, ``max_score`` and ``passed`` are
        recomputed from the rest; ``seconds``, which it leaves out, is given)."""
        def title(t: dict):  # a bilingual title is written as its two texts
            return L(**t["title"]) if isinstance(t["title"], dict) else t["title"]

        todos = [TodoResult(t["id"], t["number"], title(t), t["points"], t["max_points"], TodoStatus(t["status"]),
                            t["message"], [CheckResult(**c) for c in t["checks"]]) for t in d["todos"]]
        return cls(d["path"], d["stage"], SubmissionStatus(d["status"]), todos, d["error"], list(d["warnings"]),
                   seconds, d["isolation"], d["lang"])

    def to_json(self) -> dict:
        return {"path": self.path, "stage": self.stage, "status": self.status.value, "score": self.score,
                "max_score": self.max_score, "error": self.error, "warnings": self.warnings, "isolation": self.isolation,
                "lang": self.lang, "todos": [t.to_json() for t in self.todos]}

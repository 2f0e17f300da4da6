"""``course.toml``: where the course lives (badges, the setup cell) and how it is graded.

One place for settings an instructor or a fork changes; ``python -m autograder build`` writes them
into the notebooks, and the grader reads the grading mode from here.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from autograder import layout

GRADING_MODES = ("all-or-nothing", "partial")


@dataclass(frozen=True)
class Course:
    """The course's settings. Invariant: ``grading`` is one of :data:`GRADING_MODES`.

    ``grading``: ``"all-or-nothing"`` gives a TODO its points when every check (hidden ones included)
    passes; ``"partial"`` gives a TODO ``points * passed checks / checks``.
    """

    repository: str
    branch: str
    name: str
    grading: str = "all-or-nothing"

    def __post_init__(self) -> None:
        if self.grading not in GRADING_MODES:
            raise ValueError(f"course.toml: [grading] mode must be one of {GRADING_MODES}, not {self.grading!r}")

    @property
    def raw_clone_url(self) -> str:
        return self.repository + ".git"

    def colab_url(self, path: str) -> str:
        gh = self.repository.removeprefix("https://github.com/")
        return f"https://colab.research.google.com/github/{gh}/blob/{self.branch}/{path}"


def load_course(path: Path | None = None) -> Course:
    raw = tomllib.loads((path or layout.COURSE_TOML).read_text(encoding="utf-8"))
    cfg = raw["course"]
    return Course(cfg["repository"].rstrip("/"), cfg.get("branch", "main"), cfg.get("name", "prefix-cache-workbook"),
                  raw.get("grading", {}).get("mode", "all-or-nothing"))

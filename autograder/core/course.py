"""``course.toml``: where the course lives (badges, the first cell's install sources) and how it is graded.

One place for settings an instructor or a fork changes; ``python -m autograder build`` writes them
into the notebooks and README, and the grader reads the grading mode from here.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core import layout

GRADING_MODES = ("all-or-nothing", "partial")
FEEDBACK_LEVELS = ("values", "titles")  # see autograder.grading.disclosure


@dataclass(frozen=True)
class Course:
    """The course's settings. Invariants: ``grading`` is one of :data:`GRADING_MODES`; there is at
    least one install source; link templates contain ``{path}`` where they link to one notebook.

    ``grading``: ``"all-or-nothing"`` gives a TODO its points when every check (hidden ones included)
    passes; ``"partial"`` gives a TODO ``points * passed checks / checks``.

    ``feedback``: what a failed hidden check shows a learner, in every report (CLI, nbgrader,
    Gradescope): ``"values"`` what any failure shows, within the report's budget of learner-derived
    text; ``"titles"`` only the check's name, title and hint (:mod:`autograder.grading.disclosure`).
    """

    repository: str
    branch: str
    name: str
    grading: str = "all-or-nothing"
    sources: tuple[str, ...] = ()
    timeout_s: int = 180
    archive: str = ""
    links: dict[str, str] = field(default_factory=dict)
    torch_index: str = ""            # [binder] torch_index: where Binder gets a CPU torch
    gradescope_torch_index: str = ""  # [gradescope] torch_index, else [binder]'s
    torch_version: str = ""          # [torch] version: installed where a machine has no torch
    feedback: str = "values"

    def __post_init__(self) -> None:
        if self.grading not in GRADING_MODES:
            raise ValueError(f"course.toml: [grading] mode must be one of {GRADING_MODES}, not {self.grading!r}")
        if self.feedback not in FEEDBACK_LEVELS:
            raise ValueError(f"course.toml: [grading] feedback must be one of {FEEDBACK_LEVELS}, not {self.feedback!r}")
        if not self.sources:
            raise ValueError("course.toml: [install] sources needs at least one source")

    def link(self, kind: str, path: str) -> str:
        """The ``kind`` link (colab, modelscope, binder) for the notebook at repository path ``path``."""
        return self.links[kind].format(path=path)

    def badges(self, path: str) -> str:
        """Markdown badges that open the notebook at ``path`` on Colab, ModelScope and Binder."""
        images = {"colab": "https://colab.research.google.com/assets/colab-badge.svg",
                  "modelscope": "https://img.shields.io/badge/ModelScope-Notebook-624aff",
                  "binder": "https://mybinder.org/badge_logo.svg"}
        labels = {"colab": "Open In Colab", "modelscope": "Open in ModelScope", "binder": "Launch Binder"}
        return " ".join(f"[![{labels[k]}]({images[k]})]({self.link(k, path)})" for k in images if k in self.links)


def load_course(path: Path | None = None) -> Course:
    raw = tomllib.loads((path or layout.COURSE_TOML).read_text(encoding="utf-8"))
    cfg, install = raw["course"], raw.get("install", {})
    repo = cfg["repository"].rstrip("/")
    branch = cfg.get("branch", "main")
    links = {"colab": f"https://colab.research.google.com/github/{repo.removeprefix('https://github.com/')}/blob/{branch}/{{path}}",
             **raw.get("links", {})}
    return Course(repo, branch, cfg.get("name", "prefix-cache-workbook"),
                  raw.get("grading", {}).get("mode", "all-or-nothing"),
                  tuple(install.get("sources", [f"git+{repo}.git@{branch}"])), int(install.get("timeout_s", 180)),
                  install.get("archive", ""), links, raw.get("binder", {}).get("torch_index", ""),
                  raw.get("gradescope", {}).get("torch_index", raw.get("binder", {}).get("torch_index", "")),
                  raw.get("torch", {}).get("version", ""), raw.get("grading", {}).get("feedback", "values"))


def _grading_table() -> dict:
    """``[grading]`` of the course being graded: course.toml of the checkout, else of the current
    folder (an instructor's course folder when the grader is pip-installed), else empty."""
    for path in (layout.COURSE_TOML, Path.cwd() / "course.toml"):
        if path.is_file():
            return tomllib.loads(path.read_text(encoding="utf-8")).get("grading", {})
    return {}


def grading_mode() -> str:
    """``[grading] mode`` of the course being graded (see :func:`_grading_table`), else all-or-nothing."""
    return _grading_table().get("mode", "all-or-nothing")


def feedback_level() -> str:
    """``[grading] feedback`` of the course being graded (see :func:`_grading_table`), else values."""
    level = _grading_table().get("feedback", "values")
    if level not in FEEDBACK_LEVELS:
        raise ValueError(f"course.toml: [grading] feedback must be one of {FEEDBACK_LEVELS}, not {level!r}")
    return level

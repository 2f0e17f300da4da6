"""Before ``nbgrader autograde``: which submissions of an nbgrader course cannot be graded, and why.

One problem per submission folder (``submitted/<student>/<assignment>/``), found the way the grader
and nbgrader would meet it, without running anything: an assignment folder nbgrader does not know, a
notebook renamed or missing (nbgrader grades only the released file name), a file that is not a
notebook, a notebook of another stage. Reading a notebook here is the grader's own reading
(:func:`autograder.grading.submission.read_submission`), so the reason given is the one grading would give.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.core import layout
from autograder.grading.reports import shown_path


@dataclass(frozen=True)
class Problem:
    """Why one student's submission of one assignment cannot be graded (one line for the instructor)."""

    student: str
    assignment: str
    reason: str

    def line(self) -> str:
        return f"{shown_path(self.student)}/{shown_path(self.assignment)}: {self.reason}"


def check_course(course: Path, assignments: list[str] | None = None) -> list[Problem]:
    """Every submission of ``course`` (optionally only ``assignments``) that cannot be graded."""
    from autograder.grading.submission import SubmissionError, read_submission

    source, submitted = course / "source", course / "submitted"
    known = {p.name for p in source.iterdir() if p.is_dir()} if source.is_dir() else set()
    problems = []
    for folder in sorted(submitted.glob("*/*")) if submitted.is_dir() else []:
        student, assignment = folder.parent.name, folder.name
        if assignments and assignment not in assignments or not folder.is_dir():
            continue
        def say(reason: str) -> None:
            problems.append(Problem(student, assignment, reason))  # noqa: B023 - called only in this iteration

        if assignment not in known:
            say(f"no assignment '{shown_path(assignment)}' in source/ (a renamed folder?); nbgrader will not grade it")
            continue
        wanted = sorted(p.name for p in (source / assignment).glob("*.ipynb"))
        found = sorted(p.name for p in folder.glob("*.ipynb"))
        for name in wanted:
            path = folder / name
            if not path.exists() and not path.is_symlink():
                others = [f for f in found if f not in wanted]
                if len(_same_stage(folder, others, name)) == 1:
                    continue  # autograde's pre-convert hook grades it under the released name
                say(f"no {name}; found {', '.join(map(shown_path, others))} (renamed? nbgrader grades only {name})"
                    if others else f"no {name} submitted")
                continue
            try:  # pinned as grading pins it: nbgrader's folder names the assignment
                sub = read_submission(path, stage=layout.stage_of_assignment(assignment))
            except SubmissionError as exc:
                say(str(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - a reader bug: name it, check the others
                say(f"the grader could not read it ({type(exc).__name__})")
                continue
            for w in sub.warnings:
                if "is stage" in w:  # another stage's notebook under this assignment's name
                    say(f"{name}: {w}")
            others = [f for f in found if f not in wanted]
            if others and _untouched(sub):  # a blank release beside the work saved under another name
                worked = [n for n in _same_stage(folder, others, name) if not _untouched(read_submission(folder / n))]
                if worked:
                    say(f"{name} is as released (no TODO filled in), but {', '.join(map(shown_path, worked))} beside it "
                        f"is the same stage with work in it: nbgrader grades only {name}; rename the one to grade")
    return problems


def _untouched(sub) -> bool:
    """Whether a submission's TODO cells are exactly as released (either edition's learner notebook)."""
    from autograder.grading.submission import read_submission

    files = layout.stage_files(sub.stage.id)
    return any(sub.cells == read_submission(files.learner(lang)).cells for lang in files.languages)


def report(course: Path, assignments: list[str] | None = None) -> tuple[str, int]:
    """The pre-flight's text (one line per submission that cannot be graded, then a count) and how
    many submissions it found."""
    submitted = course / "submitted"
    folders = [f for f in sorted(submitted.glob("*/*")) if f.is_dir() and (not assignments or f.name in assignments)] \
        if submitted.is_dir() else []
    problems = check_course(course, assignments)
    lines = [p.line() for p in problems]
    bad = len({(p.student, p.assignment) for p in problems})
    lines.append(f"{len(folders) - bad} of {len(folders)} submissions can be graded" +
                 (f"; {bad} cannot (above)" if bad else ""))
    return "\n".join(lines), bad


def _same_stage(folder: Path, names: list[str], released: str) -> list[str]:
    """Those of ``names`` (notebooks in ``folder``) that belong to ``released``'s stage, as
    :func:`autograder.integrations.nbgrader_glue.find_renamed_notebooks` reads them: exactly one is graded in its place."""
    from autograder.grading.submission import read_submission

    stage = layout.stage_of_notebook(Path(released).stem)
    fits = []
    for n in names:
        try:
            if read_submission(folder / n).stage.id == stage:
                fits.append(n)
        except Exception:  # noqa: BLE001 - unreadable: not a candidate
            continue
    return fits

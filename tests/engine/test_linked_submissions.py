"""Trust, round 5: a submission that is a link into the course's own answers is refused, on every path.

A class folder holding a link to the instructor notebook once scored full marks (the grader opened
what the link named). Refused now, with a reason in both languages: a symbolic link (to anything); a
path that enters the course's protected files (what no grading child may see) through a linked folder,
or through ``..`` after one; a hard link to one of those files; and a second path to a file already
graded in the same run. An instructor who names the course's own notebook directly is still served.
The CLI, nbgrader, Gradescope and Classroom paths each have their own test (this file and
``test_nbgrader_flow``, ``test_gradescope``, ``test_classroom``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.core import layout
from autograder.core.spec import load_stage
from autograder.grading.submission import SubmissionError, read_submission
from tests.conftest import ROOT
from tests.support.machine import scaled

S01 = layout.stage_files("s01")
FULL = load_stage("s01", hidden=False).max_score


def _refused(path: Path, hidden: tuple[str, ...] = ()) -> str:
    with pytest.raises(SubmissionError) as info:
        read_submission(path, hidden)
    return info.value.in_language("en") + " | " + info.value.in_language("zh")


def test_a_relative_link_to_the_instructor_notebook_is_refused_in_both_languages(tmp_path):
    link = tmp_path / S01.learner().name
    link.symlink_to(os.path.relpath(S01.instructor(), tmp_path))
    why = _refused(link)
    assert "is a link (a symbolic link)" in why and "符号链接" in why


def test_a_link_to_anything_is_refused_not_only_into_the_course(tmp_path):
    own = tmp_path / "mine.ipynb"
    nbformat.write(nbformat.read(S01.learner(), as_version=4), own)
    (tmp_path / "alias.ipynb").symlink_to(own)
    (tmp_path / "dangling.ipynb").symlink_to(tmp_path / "gone.ipynb")
    assert read_submission(own).stage.id == "s01"
    assert "is a link" in _refused(tmp_path / "alias.ipynb")
    assert "is a link" in _refused(tmp_path / "dangling.ipynb")


def test_a_linked_folder_into_the_course_is_refused_however_the_path_goes(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "work").symlink_to(layout.SOLUTIONS)
    direct = tmp_path / "alice" / "work" / S01.instructor().name
    detour = tmp_path / "alice" / "work" / "zh" / ".." / S01.instructor().name  # ".." after the link
    for path in (direct, detour):
        why = _refused(path)
        assert "course's own files (reached through the link work)" in why and "课程自身的文件" in why


def test_a_hard_link_to_a_protected_file_is_refused(tmp_path):
    """A place no child may see (``hidden``) holding the answers, and a hard link to its notebook elsewhere."""
    place, elsewhere = tmp_path / "answers", tmp_path / "class"
    place.mkdir()
    elsewhere.mkdir()
    nbformat.write(nbformat.read(S01.instructor(), as_version=4), place / "answers.ipynb")
    os.link(place / "answers.ipynb", elsewhere / "mine.ipynb")
    why = _refused(elsewhere / "mine.ipynb", (str(place),))
    assert "a hard link to one of the course's own files" in why and "硬链接" in why
    assert read_submission(elsewhere / "mine.ipynb").stage.id == "s01"  # without the place, nothing to refuse


def test_the_instructor_naming_the_course_notebook_is_still_served(tmp_path):
    """Directly, and from a checkout reached through a linked folder (the link is above the course)."""
    assert read_submission(S01.instructor()).stage.id == "s01"
    (tmp_path / "checkout").symlink_to(layout.ROOT)
    assert read_submission(tmp_path / "checkout" / layout.rel(S01.instructor())).stage.id == "s01"


@pytest.fixture(scope="module")
def cli_class(tmp_path_factory):
    """One CLI run over a class folder: an honest notebook, the issue's relative link to the instructor
    notebook, a student folder that is a link into the course, and a student folder that is a link to
    another student's folder (named on the command line, since a folder walk does not follow links)."""
    d = tmp_path_factory.mktemp("linked_class")
    for who in ("honest", "linked"):
        (d / who).mkdir()
    nbformat.write(nbformat.read(S01.instructor(), as_version=4), d / "honest" / S01.learner().name)
    (d / "linked" / S01.learner().name).symlink_to(os.path.relpath(S01.instructor(), d / "linked"))
    (d / "course_folder").symlink_to(layout.SOLUTIONS)
    (d / "copycat").symlink_to(d / "honest")
    paths = [d, d / "course_folder" / S01.instructor().name, d / "copycat" / S01.learner().name]
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", *map(str, paths), "--no-progress",
                        "--summary-json", str(d.parent / "linked.json")], cwd=ROOT, capture_output=True, text=True, timeout=scaled(300))
    subs = json.loads((d.parent / "linked.json").read_text(encoding="utf-8"))["per_submission"]
    return p, {s["path"].split("linked_class", 1)[-1].lstrip("0123456789/"): s for s in subs}


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_cli_grades_the_honest_notebook_and_refuses_every_link(cli_class):
    p, subs = cli_class
    assert p.returncode == 1  # some files are not gradable, and each is named on stderr
    assert subs[f"honest/{S01.learner().name}"]["score"] == FULL
    refused = {k: s for k, s in subs.items() if k != f"honest/{S01.learner().name}"}
    assert set(refused) == {f"linked/{S01.learner().name}", f"course_folder/{S01.instructor().name}",
                            f"copycat/{S01.learner().name}"}
    assert all(s["status"] == "not_graded" and s["score"] == 0 for s in refused.values())
    assert "is a link" in refused[f"linked/{S01.learner().name}"]["error"]
    assert "reached through the link course_folder" in refused[f"course_folder/{S01.instructor().name}"]["error"]
    assert "is the same file as" in refused[f"copycat/{S01.learner().name}"]["error"]
    assert all(k.split("/")[0] in p.stderr for k in refused)

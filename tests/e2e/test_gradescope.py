"""The Gradescope bundle, unpacked and run as Gradescope would run it, in a temp /autograder tree."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.core import layout
from autograder.core.spec import load_stage
from tests.conftest import ROOT
from tests.support.machine import scaled
from tests.support.variants import variant_notebook

pytestmark = pytest.mark.slow  # the fast lane leaves it out: runs the Gradescope bundle end to end

S01 = layout.stage_files("s01")
WRONG_STATS = [("reuse_ratio = round(hit_tokens / len(prompt), 4) if prompt else 0.0",
                "reuse_ratio = hit_tokens / len(prompt) if prompt else 0.0")]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """A stage-1 bundle built by its documented command and unpacked as Gradescope does: ``ROOT/source``."""
    tmp = tmp_path_factory.mktemp("gradescope")
    zipped = tmp / "bundle.zip"
    p = subprocess.run([sys.executable, "-m", "autograder", "gradescope", "--stage", "s01", str(zipped)], cwd=ROOT,
                       capture_output=True, text=True, timeout=scaled(120))
    assert p.returncode == 0, p.stderr
    root = tmp / "autograder"
    with zipfile.ZipFile(zipped) as z:
        names = set(z.namelist())
        assert {"setup.sh", "run_autograder", "requirements-grader.txt"} <= names and "requirements.txt" not in names
        assert layout.rel(layout.stage_files("s01").hidden) in names and "autograder/grading/grade.py" in names
        z.extractall(root / "source")
    os.chmod(root / "source" / "run_autograder", 0o755)
    return root


def run_autograder(root: Path, plant) -> tuple[subprocess.CompletedProcess, dict]:
    """A fresh ``submission/`` that ``plant(folder)`` fills, then the bundle's run_autograder as Gradescope runs it."""
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
    (root / "submission").mkdir()
    plant(root / "submission")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), PYTHON=sys.executable)
    p = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=scaled(300))
    assert p.returncode == 0, p.stdout + p.stderr
    return p, json.loads((root / "results" / "results.json").read_text())


def test_gradescope_bundle_runs_and_writes_valid_results(bundle):
    _, res = run_autograder(bundle, lambda sub: nbformat.write(variant_notebook("s01", WRONG_STATS), sub / "my_work.ipynb"))
    stage = load_stage("s01", hidden=False)
    assert res["score"] == stage.max_score - stage.todo("s01.cache_stats").points
    visible = [t for t in res["tests"] if t["visibility"] == "visible"]
    hidden = [t for t in res["tests"] if t["visibility"] == "after_published"]
    assert len(visible) == len(stage.todos) and sum(t["max_score"] for t in visible) == stage.max_score
    assert all(0 <= t["score"] <= t["max_score"] for t in res["tests"])
    assert all(t["max_score"] == 0 for t in hidden) and len(hidden) == 5  # the quiz has no hidden checks
    stats = next(t for t in visible if "s01.cache_stats" in t["name"])
    assert stats["status"] == "failed" and stats["score"] == 0
    # hidden entries name the check and hint, never inputs or expected values
    assert not any(label in t["output"] for t in hidden for label in ("expected:", "input:", "got:"))
    # the only notebook, under another name: graded, and the student is told so
    assert "Graded my_work.ipynb, the only notebook in your submission" in res["output"]


def test_gradescope_grades_the_released_name_among_several(bundle):
    """A blank notebook beside the work under the released name: the released name is graded."""
    def plant(sub: Path) -> None:
        nbformat.write(nbformat.read(S01.learner(), as_version=4), sub / "blank.ipynb")
        nbformat.write(nbformat.read(S01.instructor(), as_version=4), sub / S01.learner().name)

    _, res = run_autograder(bundle, plant)
    assert res["score"] == load_stage("s01", hidden=False).max_score and "only notebook" not in res["output"]


def test_gradescope_several_notebooks_none_released_scores_0_saying_what_to_upload(bundle):
    def plant(sub: Path) -> None:
        for name in ("a.ipynb", "b.ipynb"):
            nbformat.write(nbformat.read(S01.instructor(), as_version=4), sub / name)

    _, res = run_autograder(bundle, plant)
    assert res["score"] == 0 and f"none is named {S01.learner().name}" in res["output"] and "a.ipynb, b.ipynb" in res["output"]


def test_gradescope_a_notebook_of_another_stage_scores_0_not_its_own_stages_points(bundle):
    """A solved stage-2 notebook under stage 1's released name, handed in to the stage-1 assignment."""
    s02 = layout.stage_files("s02")
    _, res = run_autograder(bundle, lambda sub: shutil.copy(s02.instructor(), sub / S01.learner().name))
    assert res["score"] == 0 and res["tests"] == []
    assert f"is the notebook of stage s02 ({s02.notebook}), but this assignment grades stage s01" in res["output"]
    assert "阶段" not in res["output"]  # in the notebook's own edition


def test_gradescope_a_submission_that_links_to_the_bundles_own_answers_scores_0(bundle):
    """Only a link to the bundle's own instructor notebook: once 12 points (the grader graded what the link
    named); now refused with the reason in results.json. A linked folder is not even walked."""
    answers = bundle / "source" / layout.rel(S01.instructor())
    assert answers.is_file()
    _, res = run_autograder(bundle, lambda sub: (sub / S01.learner().name).symlink_to(answers))
    assert res["score"] == 0 and "is a link (a symbolic link)" in res["output"], res
    _, res = run_autograder(bundle, lambda sub: (sub / "work").symlink_to(answers.parent))
    assert res["score"] == 0 and "No .ipynb notebook was found" in res["output"], res


def test_gradescope_run_without_notebook_says_so(bundle):
    _, res = run_autograder(bundle, lambda sub: None)
    assert res["score"] == 0 and "No .ipynb" in res["output"] and S01.learner().name in res["output"]


@pytest.mark.slow
def test_gradescope_bundle_installs_from_itself_into_a_fresh_environment_and_grades(bundle, tmp_path):
    """setup.sh, as Gradescope's image build runs it, into a fresh virtual environment that has nothing of
    the course (no editable install, no developers' extras, no torch for stage 1), then run_autograder with
    that interpreter: the instructor notebook earns full marks and the unfilled one 0."""
    base = shutil.which("python3") or sys.executable
    venv = tmp_path / "image"
    subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=scaled(120))
    python = str(venv / "bin" / "python")
    # the machine's own pip configuration, as an image has its own; no bytecode compiled at install (what
    # the grader imports is compiled when first imported), which is most of the install's CPU here; no
    # check for a newer pip (a look-up on the index, and a file per environment in the user's cache)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "PYTHON": python, "PIP_COMPILE": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    p = subprocess.run(["bash", str(bundle / "source" / "setup.sh")], env=env, capture_output=True, text=True, timeout=scaled(900))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0  # stage 1 needs none
    assert subprocess.run([python, "-c", "import nbgrader"], capture_output=True).returncode != 0  # no developers' extras
    env["AUTOGRADER_ROOT"] = str(bundle)
    for source, want in ((S01.instructor(), load_stage("s01", hidden=False).max_score), (S01.learner(), 0)):
        for folder in ("submission", "results"):
            shutil.rmtree(bundle / folder, ignore_errors=True)
        (bundle / "submission").mkdir()
        shutil.copy(source, bundle / "submission" / S01.learner().name)
        p = subprocess.run(["bash", str(bundle / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                           timeout=scaled(600))
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        res = json.loads((bundle / "results" / "results.json").read_text())
        assert res["score"] == want, res.get("output")


def test_gradescope_setup_installs_torch_only_for_a_stage_that_needs_it(tmp_path):
    from autograder.integrations.classroom import needs_torch
    from autograder.integrations.gradescope import build_bundle

    torch_stage = next(s for s in layout.built_stages() if needs_torch(s))
    for stage, wanted in (("s01", False), (torch_stage, True)):
        with zipfile.ZipFile(build_bundle(tmp_path / f"{stage}.zip", stage)) as z:
            assert ('"torch==' in z.read("setup.sh").decode()) == wanted
            assert "torch" not in z.read("requirements-grader.txt").decode()


def test_gradescope_setup_takes_torch_from_the_instructors_index_only(tmp_path):
    """setup.sh names no package index of its own: the one in course.toml (quoted), else pip's."""
    import re

    from autograder.integrations.gradescope import setup_sh

    assert not re.search(r"https?://", setup_sh("")) and 'index=\'\'' in setup_sh("")
    chosen = setup_sh("https://example.invalid/cpu wheels")
    assert "index='https://example.invalid/cpu wheels'" in chosen and '--index-url "$index"' in chosen
    p = subprocess.run(["bash", "-n"], input=chosen, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr

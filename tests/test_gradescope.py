"""The Gradescope bundle, unpacked and run as Gradescope would run it, in a temp /autograder tree."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

from tests.support.variants import variant_notebook
from autograder.core import layout
from autograder.core.spec import load_stage
from tests.conftest import ROOT

WRONG_STATS = [("reuse_ratio = round(hit_tokens / len(prompt), 4) if prompt else 0.0",
                "reuse_ratio = hit_tokens / len(prompt) if prompt else 0.0")]


def test_gradescope_bundle_runs_and_writes_valid_results(tmp_path):
    import nbformat

    bundle = tmp_path / "bundle.zip"
    p = subprocess.run([sys.executable, "-m", "autograder", "gradescope", str(bundle)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        assert {"setup.sh", "run_autograder", "requirements.txt"} <= names
        assert layout.rel(layout.stage_files("s01").hidden) in names and "autograder/grading/grade.py" in names
        z.extractall(root / "source")
    os.chmod(root / "source" / "run_autograder", 0o755)
    (root / "submission").mkdir()
    (root / "results").mkdir()
    nbformat.write(variant_notebook("s01", WRONG_STATS), root / "submission" / "my_work.ipynb")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), PYTHON=sys.executable)
    p = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads((root / "results" / "results.json").read_text())
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


def test_gradescope_run_without_notebook_says_so(tmp_path):
    root = tmp_path / "autograder"
    shutil.copytree(ROOT / "autograder", root / "source" / "autograder")
    from autograder.integrations.gradescope import RUN_AUTOGRADER

    (root / "source" / "run_autograder").write_text(RUN_AUTOGRADER)
    (root / "submission").mkdir()
    env = dict(os.environ, AUTOGRADER_ROOT=str(root))
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, check=True, timeout=60)
    res = json.loads((root / "results" / "results.json").read_text())
    assert res["score"] == 0 and "No .ipynb" in res["output"]


def test_gradescope_setup_takes_torch_from_the_instructors_index_only(tmp_path):
    """setup.sh names no package index of its own: the one in course.toml (quoted), else pip's."""
    import re

    from autograder.integrations.gradescope import setup_sh

    assert not re.search(r"https?://", setup_sh("")) and 'index=\'\'' in setup_sh("")
    chosen = setup_sh("https://example.invalid/cpu wheels")
    assert "index='https://example.invalid/cpu wheels'" in chosen and '--index-url "$index"' in chosen
    p = subprocess.run(["bash", "-n"], input=chosen, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr

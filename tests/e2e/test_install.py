"""Installing the course the way learners and instructors do: `pip install` into a fresh environment
(grading then works from any folder), and scripts/setup.sh on a machine that already has torch."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import nbformat
import pytest

from autograder.core import layout
from autograder.core.course import load_course
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: installs into fresh virtual environments

S01 = layout.stage_files("s01")


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    # pip's check for a newer pip is no part of an install (a look-up on the index, and a file per
    # environment left in the user's cache)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv_then_grade_from_another_folder(tmp_path):
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    # No bytecode compiled at install (pip's default compiles every module it installs): what this test
    # proves does not depend on it, and the modules grading imports are compiled when first imported.
    p = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-compile", f"{ROOT}[grader]"], env=_clean_env(),
                       capture_output=True, text=True, timeout=scaled(900))
    assert p.returncode == 0, p.stderr[-3000:]
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True,
                            env=_clean_env(), check=True).stdout
    assert "torch" not in {d["name"] for d in json.loads(listed)}, "the course must never pull torch"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for src in (S01.learner(), S01.instructor()):
        shutil.copy(src, elsewhere / f"{src.parent.name}-{src.name}")
    # a learner who looks for the answers where pip put them (inside the site-packages the child runs on)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    answers = site + "/solutions"
    peek = nbformat.read(S01.instructor(), as_version=4)
    cell = next(c for c in peek.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "s01-code-PrefixCacheManager")
    probe = (f"        import os\n        seen = os.listdir({answers!r}) if os.path.isdir({answers!r}) else 'none'\n"
             "        raise ValueError(f'PEEK {seen}')\n")
    head = "    def _normalize(self, tokens: Sequence[int]) -> list[int]:\n"
    assert head in cell.source
    cell.source = cell.source.replace(head, head + probe, 1)
    nbformat.write(peek, elsewhere / "peek.ipynb")
    g = subprocess.run([str(python), "-m", "autograder", "grade", str(elsewhere), "--format", "json",
                        "--no-require-isolation", "--no-progress"], cwd=elsewhere, env=_clean_env(),
                       capture_output=True, text=True, timeout=scaled(600))
    assert g.returncode == 0, g.stderr[-3000:]
    subs = [s for s in json.loads(g.stdout)["submissions"] if not s["path"].endswith("peek.ipynb")]
    scores = {Path(s["path"]).name.split("-")[0]: (s["score"], s["max_score"]) for s in subs}
    assert scores["solutions"][0] == scores["solutions"][1] > 0 and scores["notebooks"][0] == 0, scores
    peek = next(s for s in json.loads(g.stdout)["submissions"] if s["path"].endswith("peek.ipynb"))
    said = peek["todos"][0]["message"]
    assert "PEEK []" in said or "PEEK none" in said, said  # the answers are masked in the child's view


def test_setup_script_keeps_the_machines_torch(tmp_path):
    """A machine whose Python already has torch (here in that Python's user site, which a venv made
    with --system-site-packages sees and a plain one does not): setup.sh builds on it and never
    installs torch or triton over it."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    userbase = tmp_path / "userbase"
    user_site = Path(subprocess.run([str(base), "-c", "import site; print(site.getusersitepackages())"],
                                    env={**_clean_env(), "PYTHONUSERBASE": str(userbase)}, capture_output=True,
                                    text=True, check=True).stdout.strip())
    (user_site / "torch").mkdir(parents=True)
    (user_site / "torch" / "__init__.py").write_text("__version__ = '2.0.0+machine'\n")
    before = (user_site / "torch" / "__init__.py").stat().st_mtime_ns
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"triton==3.7.1\ntorch=={load_course().torch_version}\n")  # what a careless install would pull
    env = _clean_env()
    env.update(PYTHON=str(base), VENV=str(tmp_path / "venv"), REQUIREMENTS=str(requirements), PYTHONUSERBASE=str(userbase),
               PYTHONPATH=str(ROOT))  # the course itself from this checkout (the tiny requirements omit it)
    p = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh")], env=env, capture_output=True, text=True, timeout=scaled(600))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert "keeping this machine's torch: 2.0.0+machine" in p.stdout
    assert "ready: torch 2.0.0+machine" in p.stdout
    assert (user_site / "torch" / "__init__.py").stat().st_mtime_ns == before
    venv_site = list((tmp_path / "venv" / "lib").glob("python3*/site-packages"))[0]
    assert not (venv_site / "torch").exists() and not (venv_site / "triton").exists()

"""Habits that run: the linter, the declared Python, one owner for the torch release and for each fact
below (a grep rejects it elsewhere), generated files marked as generated and naming their sources, a
licence."""
from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from autograder.core import layout
from autograder.core.course import load_course
from autograder.learner.runtime import MIN_PYTHON
from tests.conftest import ROOT


def _tracked() -> list[str]:
    return subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(ROOT / ".venv" / "bin")) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (scripts/setup.sh installs it with the [dev] extra)")
    p = subprocess.run([ruff, "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-4000:]


def test_the_declared_oldest_python_is_the_one_the_code_needs():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    low = tuple(int(x) for x in re.fullmatch(r">=\s*(\d+)\.(\d+)", declared).groups())
    assert low == MIN_PYTHON, "pyproject's requires-python and the first cell's check must say the same"
    assert sys.version_info[:2] >= low
    for path in _tracked():
        if path.endswith(".py") and (ROOT / path).is_file():
            # the oldest declared grammar: a newer construct would break a learner's kernel on that Python
            ast.parse((ROOT / path).read_text(encoding="utf-8"), path, feature_version=low)


def test_the_torch_release_has_one_owner():
    version = load_course().torch_version
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), "course.toml: [torch] version"
    pinned = re.compile(r"torch\s*==\s*\d")
    # the performance pages record the torch the benchmarks ran on (the machine's, which may differ
    # from the release the course names), as benchmarks/report.py found it installed
    measured = {"docs/performance.md", "docs/performance.zh.md"}
    offenders = []
    for path in _tracked():
        f = ROOT / path
        if path == "course.toml" or path in measured or not f.is_file() or f.suffix in {".ipynb", ".jsonl", ".png"}:
            continue
        body = f.read_text(encoding="utf-8", errors="replace")
        if version in body or pinned.search(body):
            offenders.append(path)
    assert not offenders, f"the torch release is written outside course.toml: {offenders}"


# A fact -> (its one owner, what writing it elsewhere looks like). Product code only: tests may name
# a concrete id ("s01-code-PrefixCacheManager") to pin what the owner builds.
OWNED = {
    "nbgrader cell ids": ("autograder/core/cell_ids.py", re.compile(r"""-code-|\.replace\(["']\.["'], ["']-["']\)|"""
                                                              r"""\.replace\(["']-["'], ["']\.["']\)""")),
    "the list of languages": ("autograder/core/i18n.py", re.compile(r"""(?<!tr\()["']en["'],\s*["']zh["']""")),  # tr("en", "zh"): a pair of texts
    "signal names": ("autograder/isolation/launch.py", re.compile(r"signal\.Signals\(")),
    "which names a cell defines": ("autograder/core/pysource.py", re.compile(r"ast\.AnnAssign|ast\.AugAssign")),
    # grading parses on worker threads, and CPython 3.11's ast.parse is not thread-safe: one locked parse
    "parsing Python source": ("autograder/core/pysource.py", re.compile(r"\bast\.parse\(")),
}
PRODUCT = ("autograder/", "kernels/", "solutions/", "benchmarks/", "scripts/", "binder/")


@pytest.mark.parametrize("fact", sorted(OWNED))
def test_each_fact_is_written_only_by_its_owner(fact):
    owner, written = OWNED[fact]
    assert written.search((ROOT / owner).read_text(encoding="utf-8")), f"{owner} no longer owns {fact}"
    offenders = [path for path in _tracked() if path.startswith(PRODUCT) and path.endswith((".py", ".sh", ".tmpl"))
                 and path != owner and (ROOT / path).is_file()
                 and written.search((ROOT / path).read_text(encoding="utf-8"))]
    assert not offenders, f"{fact} is written outside {owner}: {offenders} (ask the owner instead)"


def test_generated_files_are_marked_generated_and_name_their_sources():
    generated = []
    for f in layout.all_stages():
        if not f.is_complete:
            continue
        generated.append(f.expected)
        for lang in f.languages:
            for nb in (f.learner(lang), f.instructor(lang)):
                generated.append(nb)
                sources = json.loads(nb.read_text(encoding="utf-8"))["metadata"]["pcw"]["generated_from"]
                assert sources and all((ROOT / s).is_file() for s in sources), (nb, sources)
    p = subprocess.run(["git", "check-attr", "linguist-generated", "--", *map(layout.rel, generated)], cwd=ROOT,
                       capture_output=True, text=True, check=True)
    unmarked = [line for line in p.stdout.splitlines() if not line.endswith(": true")]
    assert not unmarked, unmarked


def test_the_project_says_under_which_licences_it_may_be_reused():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in text and "CC BY 4.0" in text and "data/mooncake_" in text

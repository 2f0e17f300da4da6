"""Two editions, one course: a Chinese and an English notebook with the same code earn the same points
through the CLI, nbgrader and Gradescope; each is reported in its own language."""
from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys

import nbformat
import pytest

from autograder.core import layout
from autograder.grading.grade import grade_paths
from autograder.integrations.gradescope import results_json
from tests.conftest import ROOT
from tests.support.machine import scaled
from tests.support.variants import variant_notebook

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades both editions' notebooks


def _bilingual_stage() -> str:
    ready = [s for s in layout.built_stages() if "zh" in layout.stage_files(s).languages]
    if not ready:
        pytest.skip("no stage has a Chinese edition yet")
    return ready[0]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The same code in both editions: the reference, the stub, and a few wrong answers."""
    sid = _bilingual_stage()
    files = layout.stage_files(sid)
    mutants = importlib.import_module(files.mutants_module).MUTANTS
    variants = {"reference": [], **{name: edits for name, (_, edits) in list(mutants.items())[:4]}}
    tmp = tmp_path_factory.mktemp("editions")
    paths = {}
    for i, (name, edits) in enumerate(variants.items()):
        for lang in ("en", "zh"):
            p = tmp / f"v{i}-{lang}.ipynb"
            nbformat.write(variant_notebook(sid, edits, lang) if name != "reference" else
                           nbformat.read(files.instructor(lang), as_version=4), p)
            paths[str(p)] = (name, lang)
    for lang in ("en", "zh"):
        paths[str(files.learner(lang))] = ("stub", lang)
    results = {paths[r.path]: r for r in grade_paths(list(paths))}
    return sid, results


def test_same_code_same_points_in_both_editions(graded):
    _, results = graded
    names = {name for name, _ in results}
    for name in names:
        en, zh = results[(name, "en")], results[(name, "zh")]
        assert [(t.id, t.points, t.status) for t in en.todos] == [(t.id, t.points, t.status) for t in zh.todos], name
    assert results[("reference", "zh")].score == results[("reference", "zh")].max_score > 0
    assert results[("stub", "zh")].score == 0


def test_each_edition_is_reported_in_its_own_language(graded):
    _, results = graded
    assert all("还没有实现" in t.message for t in results[("stub", "zh")].todos)
    assert all("is not implemented yet" in t.message for t in results[("stub", "en")].todos)
    wrong_zh = [t.message for name, lang in results if lang == "zh" and name not in ("stub", "reference")
                for t in results[(name, lang)].todos if not t.passed]
    assert wrong_zh and all(any("\u4e00" <= ch <= "\u9fff" for ch in m) for m in wrong_zh), wrong_zh


def test_gradescope_results_agree_across_editions(graded):
    _, results = graded
    for name in {n for n, _ in results}:
        en, zh = results_json(results[(name, "en")]), results_json(results[(name, "zh")])
        assert en["score"] == zh["score"]
        assert [t["score"] for t in en["tests"]] == [t["score"] for t in zh["tests"]]


def test_cli_lang_overrides_the_notebook_language():
    sid = _bilingual_stage()
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(layout.stage_files(sid).learner("zh")), "--lang",
                        "en", "--format", "json", "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=scaled(300))
    assert p.returncode == 0, p.stderr
    assert all("is not implemented yet" in t["message"] for t in json.loads(p.stdout)["submissions"][0]["todos"])


@pytest.mark.slow
def test_nbgrader_releases_both_editions_and_grades_them_alike(tmp_path):
    sid = _bilingual_stage()
    files = layout.stage_files(sid)
    course = tmp_path / "course"
    subprocess.run([sys.executable, "-m", "autograder", "course", str(course), "--stage", sid, "--editions", "both"],
                   cwd=ROOT, check=True, capture_output=True)
    mutant = next(iter(importlib.import_module(files.mutants_module).MUTANTS.values()))[1]
    for lang in ("en", "zh"):
        assignment = files.assignment(lang)
        subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--create"], cwd=course,
                       check=True, capture_output=True, timeout=scaled(300))
        d = course / "submitted" / "alice" / assignment
        shutil.copytree(course / "release" / assignment, d)
        nbformat.write(variant_notebook(sid, mutant, lang), d / files.learner(lang).name)
        p = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", assignment], cwd=course, capture_output=True,
                           text=True, timeout=scaled(600))
        assert p.returncode == 0, p.stderr[-3000:]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        points = {}
        for lang in ("en", "zh"):
            a = files.assignment(lang)
            nb = gb.find_submission_notebook(files.notebook, a, "alice")
            points[lang] = sorted((g.name, g.auto_score) for g in nb.grades if g.max_score and "-code-" not in g.name)
    assert points["en"] == points["zh"] and any(score == 0 for _, score in points["en"])


def test_a_stopped_grading_process_is_explained_in_the_notebooks_language(tmp_path):
    """When learner code ends the grading process, the Chinese edition says so in Chinese: the
    reason, where it happened and that it holds for every TODO (the English edition in English)."""
    said = {}
    for lang in ("en", "zh"):
        nb = nbformat.read(layout.stage_files("s01").learner(lang), as_version=4)
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "s01-code-PrefixCacheManager")
        cell.source = "import os\nos._exit(3)\n" + cell.source
        nbformat.write(nb, tmp_path / f"exits_{lang}.ipynb")
    for r in grade_paths(sorted(tmp_path.glob("*.ipynb"))):
        said[r.path.rsplit("_", 1)[-1].split(".")[0]] = [t.message for t in r.todos]
    first, *rest = said["zh"]
    assert "你的代码结束了评分进程（sys.exit" in first and "你的第 1 个 TODO 单元" in first, first
    assert "3" not in first.split("TODO")[0]  # the exit code is learner-chosen: never shown
    assert all("这个 notebook 的每个 TODO 都一样" in m for m in rest), rest
    assert "your code ended the grading process (sys.exit" in said["en"][0] and "your TODO cell 1" in said["en"][0]

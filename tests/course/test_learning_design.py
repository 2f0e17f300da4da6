"""The learner-facing teaching machinery: blame on the right TODO inline, hints in tiers, predictions,
warnings about code the grader will not see, the quiz's hidden answers, and partial credit."""
from __future__ import annotations

import importlib
import json
import linecache
import subprocess
import sys
import types

import pytest

from autograder.core import layout
from autograder.core.i18n import set_language
from autograder.core.spec import load_stage
from autograder.learner import blame
from autograder.learner.inline import run_check
from autograder.learner.learn import hint, judged, reveal
from tests.conftest import ROOT, stage_params
from tests.support.machine import scaled
from tests.support.variants import apply_edits, grade_variant

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades every stage's notebooks and hint variants


def learner_module(stage_id: str, edits: list[tuple[str, str]], name: str) -> dict:
    """The reference with ``edits``, loaded the way a notebook holds it (its source in linecache)."""
    text = apply_edits(layout.stage_files(stage_id).reference.read_text(encoding="utf-8"), edits)
    filename = f"<learner {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    module = types.ModuleType(f"learner_{stage_id}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(text, filename, "exec"), module.__dict__)
    return module.__dict__


def _early_mutants(stage_id: str, per_todo: int = 99, todos: int = 3) -> list[tuple[str, str, list]]:
    """Wrong answers of the first TODOs; each also combined with the stage's correct-but-different
    answers (a learner's later TODO may call the early one where the reference does not)."""
    data = importlib.import_module(layout.stage_files(stage_id).mutants_module)
    stage = load_stage(stage_id, hidden=False)
    early = {t.id for t in sorted(stage.todos, key=lambda t: t.number)[:todos]}
    picked: dict[str, int] = {}
    out = []
    for name, (todo_id, edits) in data.MUTANTS.items():
        if todo_id in early and picked.get(todo_id, 0) < per_todo:
            picked[todo_id] = picked.get(todo_id, 0) + 1
            out.append((name, todo_id, edits))
            for other, more in getattr(data, "EQUIVALENT", {}).items():
                text = layout.stage_files(stage_id).reference.read_text(encoding="utf-8")
                try:
                    apply_edits(text, edits + more)
                except AssertionError:
                    continue  # the two edits touch the same lines
                out.append((f"{name}+{other}", todo_id, edits + more))
    return out


def _failures_of_other_todos(stage_id: str, todo_id: str, ns: dict) -> list:
    stage = load_stage(stage_id, hidden=False)
    out = []
    for t in stage.todos:
        if t.id != todo_id:
            out += [(t.id, v) for v in run_check(t.id, namespace=ns, quiet=True).verdicts
                    if not v.passed and not v.not_implemented]
    return out


@pytest.mark.parametrize("stage_id", stage_params())
def test_early_slip_never_fails_a_later_todo_inline(stage_id):
    """A slip in an early TODO: every other TODO's inline check still passes, because ``check()`` judges
    a TODO with the course's code for the others, as grading does (the slip shows on its own TODO)."""
    slips = 0
    for name, todo_id, edits in _early_mutants(stage_id):
        ns = learner_module(stage_id, edits, name)
        failures = _failures_of_other_todos(stage_id, todo_id, ns)
        assert not failures, (name, [(other, v.check.name, v.detail) for other, v in failures])
        slips += not run_check(todo_id, namespace=ns, quiet=True).passed
        if slips >= 3:
            break  # three slips caught on their own TODO are enough evidence; keep the test fast
    assert slips > 0, f"no early wrong answer of {stage_id} fails its own visible checks"


def test_blame_without_the_reference_uses_what_the_check_called(monkeypatch):
    """In a classroom release (no reference to re-run with), the TODO the check called is named."""
    monkeypatch.setattr(blame, "_fresh_reference", lambda stage: None)
    ns = learner_module("s04", [("        self._len += 1\n", "")], "no-reference")
    failures = _failures_of_other_todos("s04", "s04.append", ns)
    assert failures and all(v.blamed == "s04.append" for _, v in failures), [(t, v.detail) for t, v in failures]


def test_own_bug_keeps_its_own_hint():
    ns = learner_module("s01", [("is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix",
                                 "is_match = all(t in prompt for t in cached_prefix)")], "own-bug")
    report = run_check("s01.match_prefix", namespace=ns, quiet=True)
    failed = [v for v in report.verdicts if not v.passed]
    assert failed and all(v.blamed is None for v in failed)
    assert any(line.strip().startswith("hint") for v in failed for line in v.detail)


def test_check_warns_about_a_helper_defined_outside_the_graded_cells(capsys):
    ns = learner_module("s01", [("is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix",
                                 "is_match = starts_with(prompt, cached_prefix)")], "helper")
    ns["starts_with"] = lambda prompt, prefix: tuple(prompt[: len(prefix)]) == prefix  # "another cell"
    run_check("s01.match_prefix", namespace=ns)
    out = capsys.readouterr().out
    assert "`starts_with`" in out and "outside the graded cells" in out


def test_hint_reveals_the_next_tier_each_call_and_jumps(capsys):
    stage = next(load_stage(s, hidden=False) for s in layout.built_stages()
                 if all(t.hints for t in load_stage(s, hidden=False).todos))
    todo = stage.todos[0]
    shown = []
    for tier in (None, None, 3, None):
        assert hint(todo.id, tier) is None  # printed only: no Out[] copy of the text in Jupyter
        shown.append(capsys.readouterr().out)
    assert str(todo.hints[0]) in shown[0] and str(todo.hints[1]) in shown[1] and shown[0] != shown[1]
    assert str(todo.hints[2]) in shown[2] and "___" in shown[2]
    assert str(todo.hints[2]) in shown[3]  # stays at the last tier
    with pytest.raises(ValueError):
        hint(todo.id, 4)


def test_reveal_shows_prediction_next_to_answer_and_returns_nothing(capsys):
    assert reveal(0.5, 0.97, "the prefix dominates", within=0.05) is None
    assert reveal(None, "B") is None
    out = capsys.readouterr().out
    assert "0.5" in out and "0.97" in out and "the prefix dominates" in out and "🤔" in out and "±0.05" in out


def test_whole_number_answers_are_judged_exactly():
    assert judged(288, 288) is True and judged(288.0, 288) is True
    assert judged(300, 288) is False and judged(287, 288) is False and judged(True, 1) is False
    with pytest.raises(ValueError):
        judged(300, 288, within=20)  # no tolerance on a count


def test_fractional_answers_need_a_declared_tolerance():
    assert judged(0.95, 0.97, within=0.02) is True and judged(0.94, 0.97, within=0.02) is False
    with pytest.raises(ValueError):
        judged(0.95, 0.97)
    assert judged("b", "B") is True and judged(1, True) is False and judged(None, 3) is None


def test_check_speaks_the_notebook_language(capsys):
    set_language("zh")
    try:
        stub = learner_module("s01", [("        normalized = list(tokens)\n", "        raise NotImplementedError()\n")], "zh-stub")
        run_check("s01.normalize", namespace=stub)
        assert "还没有实现" in capsys.readouterr().out
    finally:
        set_language("en")


# -- quiz ----------------------------------------------------------------------------------------
def _quiz_stages() -> list[str]:
    return [s for s in layout.built_stages() if load_stage(s, hidden=False).quiz is not None]


@pytest.mark.parametrize("stage_id", _quiz_stages())
def test_quiz_answers_are_not_readable_from_the_learner_files(stage_id):
    from autograder.core.quiz import canonical, digest

    stage = load_stage(stage_id, hidden=False)
    answers = importlib.import_module(stage.reference).quiz()
    expected = json.loads(layout.stage_files(stage_id).expected.read_text(encoding="utf-8"))["checks"]
    for q in stage.quiz.questions:
        stored = expected[f"{stage_id}.quiz:{q.id}"]
        # only the salted digest is stored, never the answer itself
        assert stored == {"kind": "ok", "value": digest(stage_id, q, answers[q.id])}, (q.id, stored)
        assert canonical(q, answers[q.id]) not in json.dumps(stored).replace(stored["value"], "")
    for lang in layout.stage_files(stage_id).languages:
        learner = json.loads(layout.stage_files(stage_id).learner(lang).read_text(encoding="utf-8"))
        quiz_cell = next("".join(c["source"]) for c in learner["cells"] if "def quiz" in "".join(c["source"]))
        assert "raise NotImplementedError()" in quiz_cell and "return {" not in quiz_cell, quiz_cell


# -- partial credit --------------------------------------------------------------------------------
WRONG_MATCH = [("is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix",
                "is_match = all(t in prompt for t in cached_prefix)")]


def test_partial_credit_gives_the_share_of_checks_passed():
    full = grade_variant("s01", WRONG_MATCH)
    t = next(t for t in full.todos if t.id == "s01.match_prefix")
    assert t.points == 0
    from autograder.grading.grade import todo_points

    share = todo_points(load_stage("s01").todo("s01.match_prefix"), t.status, t.checks, "partial")
    passed = sum(c.passed for c in t.checks)
    assert 0 < passed < len(t.checks)
    assert share == round(t.max_points * passed / len(t.checks), 2)


def test_partial_credit_through_the_cli_and_gradescope(tmp_path):
    import nbformat

    from tests.support.variants import variant_notebook

    nb = tmp_path / layout.stage_files("s01").learner().name
    nbformat.write(variant_notebook("s01", WRONG_MATCH), nb)
    out = tmp_path / "results.json"
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(nb), "--grading", "partial", "--format",
                        "json", "--gradescope", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=scaled(300))
    assert p.returncode == 0, p.stderr
    todo = next(t for t in json.loads(p.stdout)["submissions"][0]["todos"] if t["id"] == "s01.match_prefix")
    assert 0 < todo["points"] < todo["max_points"]
    gs = json.loads(out.read_text())
    test = next(t for t in gs["tests"] if "s01.match_prefix" in t["name"] and "hidden" not in t["name"])
    assert test["score"] == todo["points"] and gs["score"] == sum(t["points"] for t in json.loads(p.stdout)["submissions"][0]["todos"])


def test_a_plot_with_chinese_labels_draws_every_glyph(tmp_path):
    """The Chinese edition's font comes from a registry package: no missing-glyph boxes."""
    script = (
        "import warnings, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "from autograder.learner.fonts import use_cjk_font\nassert use_cjk_font()\n"
        "with warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
        "    fig, ax = plt.subplots(); ax.set_title('命中率与块池容量'); ax.set_xlabel('块表 · 引用计数 −1')\n"
        "    ax.plot([1, 2], [3, -4], label='前缀缓存'); ax.legend(); fig.savefig(%r)\n"
        "missing = [str(x.message) for x in w if 'missing from' in str(x.message)]\nassert not missing, missing\nprint('ok')"
    ) % str(tmp_path / "zh.png")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PCW_GRADING"}
    p = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=scaled(120), env=env)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]
    assert (tmp_path / "zh.png").stat().st_size > 5000


@pytest.mark.slow
def test_partial_credit_reaches_nbgraders_gradebook(tmp_path, request, tmp_path_factory):
    """With partial credit configured, nbgrader's gradebook holds the same fractional points as the CLI."""
    import shutil

    import nbformat
    from nbgrader.api import Gradebook

    from tests.support.releases import released_course, session_root
    from tests.support.variants import variant_notebook

    s01 = layout.stage_files("s01")
    # the session's stage-1 release; partial credit is autograde's setting (the release is the same)
    course = released_course("s01", tmp_path / "course", session_root(request.config, tmp_path_factory))
    with open(course / "nbgrader_config.py", "a", encoding="utf-8") as f:
        f.write('\nc.IsolatedGrade.grading = "partial"\n')
    submitted = course / "submitted" / "bob" / s01.notebook
    shutil.copytree(course / "release" / s01.notebook, submitted)
    nb_path = submitted / s01.learner().name
    nbformat.write(variant_notebook("s01", WRONG_MATCH), nb_path)
    p = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", s01.notebook], cwd=course, capture_output=True,
                       text=True, timeout=scaled(600))
    assert p.returncode == 0, p.stderr[-3000:]
    cli = subprocess.run([sys.executable, "-m", "autograder", "grade", str(nb_path),
                          "--grading", "partial", "--format", "json", "--no-progress"], cwd=ROOT, capture_output=True,
                         text=True, timeout=scaled(300))
    want = {t["id"].replace(".", "-"): t["points"] for t in json.loads(cli.stdout)["submissions"][0]["todos"]}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(s01.notebook, s01.notebook, "bob")
        book = {g.name: g.auto_score for g in nb.grades if g.name in want}
    assert book == want and 0 < book["s01-match_prefix"] < load_stage("s01").todo("s01.match_prefix").points

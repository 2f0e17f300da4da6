"""Feedback about the mistake made, in every report format: when several checks of a TODO fail, the
most specific one leads with its own hint; every other failing public check keeps its expected and
got (within the report budget) but not its hint, written for another slip; a hidden check shows no
value, and its hint only when it leads. The same facts in the notebook's ``check()``, the CLI table,
the JSON, the learner's report (GitHub Classroom), nbgrader's feedback and Gradescope's results.json,
in both editions. (The per-student CSV carries scores and errors only: no check message to test.)

The grader's verdict is composed from a constructed child report (no child runs), so each test is fast.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autograder.child.protocol import CheckOutcome
from autograder.core import data, messages
from autograder.core.i18n import text
from autograder.core.results import SubmissionResult
from autograder.core.spec import load_stage
from autograder.grading import reports
from autograder.grading.grade import Reporting, compose
from autograder.grading.submission import Submission
from autograder.grading.supervise import ChildReport
from autograder.grading.trusted import expected_outcomes, leak_guard
from autograder.grading.verdict import check_label, check_title
from autograder.integrations import gradescope, nbgrader_glue
from autograder.isolation.levels import Isolation, Offer
from autograder.learner.inline import run_check
from tests import mutants_s01
from tests.support.learner_ns import module_text, notebook_namespace

LANGS = ("en", "zh")
TODO = "s01.match_prefix"
# a learner's match_prefix that is wrong three ways: the lead (the most specific failing check), one
# other public check, and a hidden one
WRONG = {"middle_does_not_count": 1, "seed_match_3": 2, "random_prompts": [9]}
LEAD, OTHER, HIDDEN = "middle_does_not_count", "seed_match_3", "random_prompts"
ISO = Isolation((), Offer("python", (), None, None, 0))


def _check(name: str, hidden: bool = True):
    return next(c for c in load_stage("s01", hidden=hidden).checks if c.name == name and c.todo == TODO)


def flat(s: str) -> str:
    """``s`` with every run of white space one space (the reports pad labels differently)."""
    return " ".join(s.split())


def position(said: str, check, lang: str) -> int:
    """Where ``said`` first names ``check`` (by its label, as a headline does, or by its title)."""
    found = [said.find(flat(name)) for name in (check_label(check, lang), check_title(check, lang))]
    assert max(found) >= 0, f"{check.name} is not named: {said}"
    return min(i for i in found if i >= 0)


def field(entry, lang: str, value: str) -> str:
    return flat(f"{text(entry, lang)} {value}")


def assert_feedback_fits_the_failure(said: str, lang: str) -> None:
    """``said`` (one report's text) names the lead first with its hint, the other failing check with its
    expected and got, and no hint but the lead's."""
    said = flat(said)
    lead, other, hidden = _check(LEAD), _check(OTHER), _check(HIDDEN)
    lead_hint = flat(text(lead.hint, lang))
    assert lead_hint in said, said
    assert position(said, lead, lang) < position(said, other, lang), said
    assert said.index(lead_hint) < position(said, other, lang), "the lead's hint comes first"
    for hint in (other.hint, hidden.hint):
        assert flat(text(hint, lang)) not in said, f"a hint for another slip is shown: {text(hint, lang)}"
    after = said[position(said, other, lang):]
    assert field(messages.EXPECTED, lang, "3") in after and field(messages.GOT, lang, "2") in after, after
    assert HIDDEN in said, "the hidden check is named"
    assert said.count(flat(text(messages.HINT, lang))) == said.count(lead_hint), "one hint, the lead's"


@pytest.fixture(scope="module", params=LANGS)
def graded(request) -> tuple[str, SubmissionResult]:
    lang = request.param
    stage = load_stage("s01")
    todo = stage.todo(TODO)
    expected = expected_outcomes(stage)
    events = [CheckOutcome(c.key, data.ok(WRONG[c.name]) if c.name in WRONG else expected[c.key])
              for c in stage.checks_for(TODO)]
    sub = Submission(Path("hw.ipynb"), stage, [], "0")
    result = compose(sub, todo, ChildReport(events=events, stopped=None), leak_guard(stage), how=Reporting(lang=lang)).result
    return lang, SubmissionResult("hw.ipynb", "s01", todos=[result], isolation=ISO.level, lang=lang)


def test_the_todo_message_leads_with_the_specific_failure(graded):
    lang, r = graded
    todo = r.todos[0]
    assert todo.message.startswith(text(messages.CHECK_FAILED, lang).format(name=check_label(_check(LEAD), lang)))
    assert_feedback_fits_the_failure(todo.message, lang)


def test_each_checks_own_line_keeps_its_values_and_drops_a_hint_it_does_not_lead_with(graded):
    lang, r = graded
    by_name = {c.name: c for c in r.todos[0].checks}
    assert flat(text(_check(LEAD).hint, lang)) in flat(by_name[LEAD].message)
    other = flat(by_name[OTHER].message)
    assert field(messages.EXPECTED, lang, "3") in other and field(messages.GOT, lang, "2") in other, other
    assert text(messages.HINT, lang).strip() not in other and text(messages.HINT, lang).strip() not in by_name[HIDDEN].message


def test_cli_table(graded):
    lang, r = graded
    assert_feedback_fits_the_failure(reports.table([r], ISO, lang), lang)


def test_json(graded):
    lang, r = graded
    doc = json.loads(reports.full_json([r], ISO))
    assert_feedback_fits_the_failure(doc["submissions"][0]["todos"][0]["message"], lang)


def test_learner_report_for_classroom(graded):
    lang, r = graded
    said = reports.learner([r], ISO, [lang])
    todo_line = next(line for line in said.splitlines() if flat(text(_check(LEAD).hint, lang)) in flat(line))
    assert_feedback_fits_the_failure(todo_line, lang)
    assert flat(text(_check(OTHER).hint, lang)) not in flat(said)


def test_gradescope_results(graded):
    lang, r = graded
    doc = gradescope.results_json(r, ISO)
    visible = [t["output"] for t in doc["tests"] if t["visibility"] == "visible"]
    assert_feedback_fits_the_failure(visible[0], lang)
    assert all(flat(text(_check(HIDDEN).hint, lang)) not in flat(t["output"]) for t in doc["tests"])


def test_nbgrader_feedback(graded):
    lang, r = graded
    said = nbgrader_glue.verdict_lines(f"{TODO}: {r.todos[0].message}", "❌")
    assert_feedback_fits_the_failure(said, lang)
    lines = said.splitlines()
    other = next(i for i, line in enumerate(lines) if flat(check_title(_check(OTHER), lang)) in flat(line))
    assert text(messages.ALSO_FAILING, lang).split("{")[0].strip() in lines[other], lines[other]
    # its fields follow on lines of their own, indented under its name
    assert field(messages.GOT, lang, "2") in [flat(line) for line in lines[other + 1:other + 5]], lines
    assert all(line.startswith("     ") for line in lines[other + 1:other + 4]), lines[other:other + 4]
    assert all(len(line) < 250 for line in lines), max(lines, key=len)


@pytest.mark.parametrize("lang", LANGS)
def test_inline_check(lang, capsys):
    """The notebook's ``check()``: a match on the first token only fails three checks; the partial-match
    check leads with its hint, the others show expected and got without theirs."""
    stage = load_stage("s01", hidden=False)
    _, edits = mutants_s01.MUTANTS[f"{TODO}/first_token_only"]
    with notebook_namespace(module_text(stage, edits=edits)) as ns:
        report = run_check(TODO, namespace=ns, lang=lang)
    out = capsys.readouterr().out
    failed = [v for v in report.verdicts if not v.passed]
    assert len(failed) >= 2
    lead = max(failed, key=lambda v: v.check.specificity).check
    hint_label = text(messages.HINT, lang).strip()
    hints = [line for line in out.splitlines() if line.strip().startswith(hint_label)]
    assert hints == [next(line for line in out.splitlines() if flat(text(lead.hint, lang)) in flat(line))], out
    assert position(out, lead, lang) < min(position(out, v.check, lang) for v in failed if v.check is not lead)
    got = text(messages.GOT, lang).strip()
    assert len(re.findall(re.escape(got), out)) == len(failed), "every failing check shows what it got"


# -- the course's own messages in the report's language ---------------------------------------------------
def test_an_expected_exception_reads_in_chinese_in_a_chinese_report():
    """The grader computes the reference's outcomes in English; a Chinese report shows the public
    check's expected exception as the notebook's check() does (the build's message_zh)."""
    stage = load_stage("s01")
    todo = stage.todo("s01.normalize")
    expected = expected_outcomes(stage)
    events = [CheckOutcome(c.key, data.ok(["bad"]) if c.name == "rejects_string_token" else expected[c.key])
              for c in stage.checks_for(todo.id)]
    sub = Submission(Path("hw.ipynb"), stage, [], "0")
    said = {lang: compose(sub, todo, ChildReport(events=events, stopped=None), leak_guard(stage),
                          how=Reporting(lang=lang)).result.message for lang in LANGS}
    assert "token 必须是 int，实际是 str" in said["zh"] and "tokens must be ints" not in said["zh"], said["zh"]
    assert "tokens must be ints, got str" in said["en"], said["en"]


def test_the_child_speaks_the_reports_language():
    """The last setup cell a child runs sets the report's language: given code raises in it."""
    from autograder.core import layout
    from autograder.grading.grade import child_payload_for
    from autograder.grading.submission import read_submission

    sub = read_submission(layout.stage_files("s01").learner("zh"))
    todo = sub.stage.todo(TODO)
    setup = [src for kind, src in child_payload_for(sub, todo)["cells"] if kind == "setup"]
    assert setup[-1].rstrip().endswith("set_language('zh')"), setup[-1][-200:]
    english = [src for kind, src in child_payload_for(sub, todo, "en")["cells"] if kind == "setup"]
    assert english[-1].rstrip().endswith("set_language('en')") and len(english) == len(setup)


@pytest.mark.slow  # grades a notebook in a child
def test_a_chinese_submission_is_told_in_chinese_what_its_code_raised(tmp_path):
    """A Chinese notebook whose normalize raises a bilingual message: the report shows the Chinese one
    (the child ran in Chinese), and the expected exception in Chinese too."""
    import nbformat

    from autograder.grading.grade import grade_paths
    from tests.support.variants import variant_notebook

    raised = 'raise TypeError(f"tokens must be ints, got {type(token).__name__}: {token!r}")'
    nb = variant_notebook("s01", [(raised, 'raise ValueError(tr("not an int", "不是整数"))')], "zh")
    path = tmp_path / "zh.ipynb"
    nbformat.write(nb, path)
    todo = next(t for t in grade_paths([path])[0].todos if t.id == "s01.normalize")
    assert not todo.passed
    assert "不是整数" in todo.message and "not an int" not in todo.message, todo.message
    assert "token 必须是 int" in todo.message, todo.message


# -- hint() after a failed check() ----------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_the_first_hint_after_a_failed_check_is_the_failing_checks_own(lang, capsys, tmp_path, monkeypatch):
    """After check() failed, hint() first gives the hint of the check the report led with (about the
    mistake made), then the TODO's tiers from the idea on; after a passing check(), the tiers at once."""
    from autograder.core.i18n import language, set_language
    from autograder.learner import learn

    monkeypatch.chdir(tmp_path)  # check() keeps the learner's progress record in the working folder
    stage = load_stage("s01", hidden=False)
    _, edits = mutants_s01.MUTANTS[f"{TODO}/first_token_only"]
    was = language()
    set_language(lang)
    try:
        learn._shown.pop(TODO, None)
        with notebook_namespace(module_text(stage, edits=edits)) as ns:
            ns["check"] = __import__("autograder").check
            exec(f"check({TODO!r})", ns)  # as a notebook cell calls it: check() reads the caller's globals
            report = run_check(TODO, namespace=ns, lang=lang, quiet=True)
        lead = max((v for v in report.verdicts if not v.passed), key=lambda v: v.check.specificity).check
        capsys.readouterr()
        learn.hint(TODO)
        first = capsys.readouterr().out
        assert text(lead.hint, lang) in first and check_title(lead, lang) in first, first
        learn.hint(TODO)
        second = capsys.readouterr().out
        todo = stage.todo(TODO)
        assert text(todo.hints[0], lang) in second and text(lead.hint, lang) not in second, second
        with notebook_namespace(module_text(stage)) as ns:  # the reference passes: no check to start from
            ns["check"] = __import__("autograder").check
            exec(f"check({TODO!r})", ns)
        capsys.readouterr()
        learn._shown.pop(TODO, None)
        learn.hint(TODO)
        assert text(todo.hints[0], lang) in capsys.readouterr().out
    finally:
        set_language(was)
        learn._shown.pop(TODO, None)


def test_the_values_of_other_failures_leave_room_for_every_todos_lead():
    """One budget for the submission: a TODO's second and third failures show their values only while
    half of it stays, so the lead of the last failing TODO still shows what it got."""
    from autograder.grading.disclosure import BUDGET_BYTES, SPENT, Disclosure

    stage = load_stage("s01")
    expected = expected_outcomes(stage)
    guard = leak_guard(stage)
    sub = Submission(Path("hw.ipynb"), stage, [], "0")
    budget = Disclosure(guard)
    def wrong(check):  # a short wrong value of its own for every public check (a value shown again is free)
        return data.ok(f"{check.name[:12]}!")
    messages_of = {}
    todos = [t for t in stage.todos if t.target != "quiz"]
    for todo in todos:
        events = [CheckOutcome(c.key, expected[c.key] if c.hidden else wrong(c)) for c in stage.checks_for(todo.id)]
        result = compose(sub, todo, ChildReport(events=events, stopped=None), guard, how=Reporting(lang="en"),
                         disclosure=budget).result
        messages_of[todo.id] = result.message
    assert budget.used <= BUDGET_BYTES
    got = text(messages.GOT, "en").strip()
    for todo in todos:
        lead_field = messages_of[todo.id].split(" | also failing:")[0]
        assert got in lead_field and SPENT not in lead_field, (todo.id, lead_field)
    assert any(got in m.split(" | also failing:", 1)[1] for m in messages_of.values() if " | also failing:" in m), \
        "some other failure still shows its value"

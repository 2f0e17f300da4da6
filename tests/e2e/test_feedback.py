"""Feedback that tells the truth: no rule only a hidden check enforces, the hint about the mistake
made leads, and ordinary values are never withheld as if they were the grader's code."""
from __future__ import annotations

import pytest

from autograder.core import layout
from autograder.core.spec import load_stage
from autograder.grading.leaks import WITHHELD
from autograder.grading.verdict import check_title
from autograder.learner.inline import run_check
from tests import mutants_s08
from tests.support.variants import grade_variant

# Stages whose hidden checks all name their visible sibling (the others are not audited yet).
AUDITED = tuple(layout.built_stages())  # every stage: siblings, leads and alternatives
HIDDEN = [(sid, c.key) for sid in layout.built_stages() for c in load_stage(sid).checks if c.hidden]


@pytest.mark.parametrize("stage_id,key", HIDDEN, ids=[k for _, k in HIDDEN])
def test_hidden_check_names_a_visible_sibling_of_its_todo(stage_id, key):
    stage = load_stage(stage_id)
    check = next(c for c in stage.checks if c.key == key)
    if not check.sibling and stage_id not in AUDITED:
        pytest.skip(f"{stage_id}: hidden checks do not name their visible siblings yet")
    sibling = stage.sibling_of(check)
    assert sibling is not None, f"{key}: name the visible check of {check.todo} that exercises the same rule " \
                                f"(sibling={check.sibling!r})"
    assert not sibling.hidden and sibling.todo == check.todo


def test_a_public_check_cannot_name_a_sibling():
    stage = load_stage("s07", hidden=False)
    with pytest.raises(ValueError, match="only a hidden check"):
        stage.check("s07.latency_summary", hint="x", sibling="five_values")(lambda impl: None)


def test_inline_check_leads_with_the_most_specific_failure(capsys):
    """p50 taken as the mean passes symmetric inputs; the skewed check (its hint: never the mean) leads."""
    from solutions import s07_serving as ref

    def latency_summary(values, percentiles=ref.PERCENTILES):
        summary = ref.latency_summary(values, percentiles)
        if "p50" in summary:
            summary["p50"] = summary["mean"]
        return summary

    namespace = {**vars(ref), "latency_summary": latency_summary}
    report = run_check("s07.latency_summary", namespace=namespace, lang="en")
    failed = [v.check.name for v in report.verdicts if not v.passed]
    assert "skewed_with_repeats" in failed
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.lstrip().startswith(("✅", "❌"))]
    stage = load_stage("s07", hidden=False)
    lead = max((c for c in stage.checks_for("s07.latency_summary") if c.name in failed), key=lambda c: c.specificity)
    assert lines[0].lstrip().startswith("❌") and check_title(lead, "en") in lines[0], lines


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_ordinary_values_are_not_withheld_when_two_todos_are_wrong():
    """A hidden check's field names are never shown, so they must not join another TODO's values into
    a window of the hidden checks' source (which withheld every value of the submission)."""
    m = mutants_s08.MUTANTS
    result = grade_variant("s08", m["s08.birthday_search/pair_swapped"][1] + m["s08.tenant_extra_keys/mutates_caller_list"][1])
    assert result.failed_todos() == {"s08.birthday_search", "s08.tenant_extra_keys"}
    messages = {t.id: t.message for t in result.todos}
    # (the tenant mutant raises its reference's own words verbatim, which stay withheld: a learner's
    # own message would not be the reference's; the ordinary values of the other TODO must show)
    assert WITHHELD not in messages["s08.birthday_search"], messages
    assert "expected:" in messages["s08.birthday_search"] and "got:" in messages["s08.birthday_search"]


def test_hidden_check_values_never_count_as_shown():
    """Unit: what a hidden check returned is not part of what the message shows (so it cannot join the
    texts of other TODOs into a false leak), while a failing public check's values are."""
    from pathlib import Path

    from autograder.child.protocol import CheckOutcome
    from autograder.core import data
    from autograder.grading.grade import compose
    from autograder.grading.submission import Submission
    from autograder.grading.supervise import ChildReport
    from autograder.grading.trusted import expected_outcomes, leak_guard

    stage = load_stage("s08")
    todo = stage.todo("s08.tenant_extra_keys")
    expected = expected_outcomes(stage)
    events = []
    for c in stage.checks_for(todo.id):
        outcome = expected[c.key]
        if c.name == "results_are_independent":  # hidden: its own field names, wrong values
            outcome = data.ok({"second": [["lora", "x"]], "same_object": True})
        elif c.name == "request_cannot_choose_its_tenant":  # public: an ordinary wrong value
            outcome = data.ok([("tenant", "alice"), ("tenant", "mallory")])
        events.append(CheckOutcome(c.key, outcome))
    sub = Submission(Path("x.ipynb"), stage, [], "0")
    graded = compose(sub, todo, ChildReport(events=events, stopped=None), leak_guard(stage))
    assert not any("same_object" in piece for piece in graded.shown), graded.shown
    assert any("mallory" in piece for piece in graded.shown), graded.shown
    assert "hidden check 'results_are_independent' failed" in graded.result.message
    assert "also failing:" in graded.result.message

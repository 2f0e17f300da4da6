"""Every prediction is judged tightly enough to catch the misconception it exists for.

A prediction is a ``reveal(my_guess, answer, why, within=... | relative=...)`` call in a notebook
source; its tolerance is declared there (none for a whole number, a letter or a bool: those are
judged exactly). ``PREDICTIONS`` lists, for each of them, the answer the course's code gives (for a
measured one, a typical measurement) and the wrong answers the prediction targets; the tests check
that the declared tolerance counts the answer as right and every targeted wrong answer as wrong.
"""
from __future__ import annotations

import ast

import pytest

from autograder.core import layout
from autograder.learner.learn import judged
from workbook.predictions import WHY, why

#: (stage, guess variable) -> (the answer, the wrong answers it targets, what they stand for). The
#: answers of s06.my_guess_3, s07.* and s08.my_guess_3 come from timed runs and vary by
#: machine: a typical run's value stands in for them; the others are what the course's code computes.
PREDICTIONS: dict[tuple[str, str], tuple[object, tuple, str]] = {
    ("s01", "my_guess"): (0, (2, 1), "text comparison: '1 2' starts '1 23 4'"),
    ("s01", "my_guess_2"): (0, (20, 40), "partial reuse of a registered prefix"),
    ("s02", "my_guess"): (False, (True,), "hash() of a str is stable across processes"),
    ("s02", "my_guess_2"): (False, (True,), "the same token gives the same key"),
    ("s02", "my_guess_3"): (0, (5,), "the salt does not change the shared blocks' keys"),
    ("s03", "my_guess"): (2, (3,), "the 3-token tail is cached too"),
    ("s03", "my_guess_2"): (3, (0, 10), "a released block loses its key / every block stays cached"),
    ("s03", "my_guess_3"): ("B", ("A", "a"), "a revived free block still counts as free"),
    ("s04", "my_guess"): (0, (2, 4), "the blocks left behind still hit"),
    ("s04", "my_guess_2"): (0.0, (0.94, 0.9, 0.81), "the cache holds nearly all of the loop / Belady's rate"),
    ("s04", "my_guess_3"): ("B", ("A", "C"), "pinning hot prefixes helps a conversation trace"),
    ("s04", "my_guess_4"): (0.21, (1.0, 0.5), "LRU is close to the offline bound"),
    ("s05", "my_guess"): (3, (2, 4), "no split / a split per prompt"),
    ("s05", "my_guess_2"): ("B", ("A", "C"), "the oldest request's leaf goes first"),
    ("s05", "my_guess_3"): (288, (300, 304), "the partial 19th block is shared too"),
    ("s05", "my_guess_4"): ("C", ("A", "B"), "a scan costs in proportion to the cache's size only"),
    ("s06", "my_guess"): ("B", ("A", "C"), "a decoding step computes one token"),
    ("s06", "my_guess_2"): (0.964, (0.97, 0.9697), "the token ratio 1 - Q/(P+Q)"),
    ("s06", "my_guess_3"): (13.0, (25.0,), "the token ratio (P+Q)/Q"),
    ("s06", "my_guess_4"): (0, (32, 16), "FIFO head-first release keeps a usable prefix"),
    ("s07", "my_guess"): (0.86, (0.94, 0.92), "every request hits / a request-weighted rate"),
    ("s07", "my_guess_2"): ("A", ("B",), "TPOT is untouched by a prefix cache"),
    ("s07", "my_guess_3"): (224, (128, 320, 0), "the smallest pool / the largest pool / none"),
    ("s08", "my_guess"): (294.4, (65_536, 32_768), "one must try about every key"),
    ("s08", "my_guess_2"): (64, (0, 16, 69), "only the colliding block hits / the tail hits too"),
    ("s08", "my_guess_3"): (0.125, (0.0, 1.0), "salts leave the attacker nothing / the attack still works"),
    ("s09", "my_guess"): ("C", ("E", "B"), "the TTFT router or least-loaded piles work on one replica"),
    ("s09", "my_guess_2"): (5.337, (50.0, 25.0, 1.0), "only a PCIe-class link pays / any link pays"),
}


def _reveals() -> dict[tuple[str, str], dict[str, float]]:
    """Every ``reveal(name, ...)`` call in the notebook sources, with its declared tolerance; each
    takes its explanation from the given module (``why("sNN.name", ...)``), never from text written
    in the cell, which would show the answer right under the question."""
    found = {}
    for sid in layout.built_stages():
        tree = ast.parse(layout.stage_files(sid).source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "reveal":
                guess = node.args[0]
                assert isinstance(guess, ast.Name), f"{sid}: reveal() takes the guess variable first"
                said = node.args[2] if len(node.args) > 2 else None
                assert isinstance(said, ast.Call) and getattr(said.func, "id", None) == "why" and \
                    ast.literal_eval(said.args[0]) == f"{sid}.{guess.id}", \
                    f"{sid}.{guess.id}: explain the answer with why({sid}.{guess.id!r}), not in the cell"
                answer = node.args[1]
                assert not (isinstance(answer, ast.Call) and getattr(answer.func, "id", None) == "round"), \
                    f"{sid}.{guess.id}: judge the exact answer (a tolerance applies to it), not a rounded one"
                found[(sid, guess.id)] = {k.arg: ast.literal_eval(k.value) for k in node.keywords
                                          if k.arg in ("within", "relative", "bounds")}
    return found


REVEALS = _reveals()


def test_every_prediction_is_listed():
    assert set(REVEALS) == set(PREDICTIONS), set(REVEALS) ^ set(PREDICTIONS)


@pytest.mark.parametrize("key", sorted(PREDICTIONS), ids=[f"{s}.{g}" for s, g in sorted(PREDICTIONS)])
def test_prediction_accepts_the_answer_and_rejects_its_misconception(key):
    answer, wrong, why = PREDICTIONS[key]
    tolerance = REVEALS[key]
    assert judged(answer, answer, **tolerance) is True
    for w in wrong:
        assert judged(w, answer, **tolerance) is False, f"{key}: {w!r} ({why}) is judged right"
    width = {k: v for k, v in tolerance.items() if k != "bounds"}
    if isinstance(answer, float):
        assert width, f"{key}: a fractional answer declares within= or relative="
    else:
        assert not width, f"{key}: a whole number, a letter or a bool is judged exactly"
    if "bounds" in tolerance:
        lo, hi = tolerance["bounds"]
        assert lo <= answer <= hi
        for outside in (lo - 0.04, hi + 0.04):
            assert judged(outside, answer, **tolerance) is False, f"{key}: {outside} is outside the question's range"


#: predictions whose question asks for a number between 0 and 1 ("a hit rate", "a fraction")
FRACTION_QUESTIONS = {("s04", "my_guess_2"), ("s04", "my_guess_4"), ("s06", "my_guess_2"), ("s07", "my_guess"),
                      ("s08", "my_guess_3")}


@pytest.mark.parametrize("key", sorted(FRACTION_QUESTIONS), ids=[f"{s}.{g}" for s, g in sorted(FRACTION_QUESTIONS)])
def test_a_fraction_question_declares_its_range(key):
    assert REVEALS[key].get("bounds") == (0, 1)


def test_a_tolerance_applies_to_the_exact_answer_and_a_range_rejects_what_is_outside():
    # the cases: 0.26 against an exact 0.209, 0.8301 against an exact 0.8635, -0.04 for a rate
    assert judged(0.26, 0.209, within=0.05) is False
    assert judged(0.26, round(0.209, 2), within=0.05) is True  # why no reveal may pass a rounded answer
    assert judged(0.8301, 0.8635, within=0.03) is False
    assert judged(-0.04, 0.0, within=0.05) is True and judged(-0.04, 0.0, within=0.05, bounds=(0, 1)) is False
    assert judged(0.02, 0.0, within=0.05, bounds=(0, 1)) is True


def test_s08_recovery_is_judged_against_the_chance_rate_not_this_run():
    """The salted attacker's recovery rate is a guess among 8 candidates: the answer is 1/8 (the
    claim under the reveal), however this run's 40 trials came out."""
    src = layout.stage_files("s08").source.read_text(encoding="utf-8")
    call = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call) and getattr(n.func, "id", None) ==
                "reveal" and getattr(n.args[0], "id", None) == "my_guess_3")
    assert ast.unparse(call.args[1]) == "s.chance"
    import contextlib
    import io

    from autograder.learner.learn import reveal

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        reveal(0.125, 1 / 8, "", within=0.06, bounds=(0, 1))
        reveal(-0.04, 1 / 8, "", within=0.2, bounds=(0, 1))
    first, _, second, third = out.getvalue().splitlines()[:4]
    assert first.startswith("✅") and second.startswith("🤔") and "outside that range" in third


def test_every_explanation_belongs_to_a_prediction_and_renders_in_both_languages():
    from autograder.core.i18n import set_language

    own = {k.split(":")[0] for k in WHY}
    assert own == {f"{s}.{g}" for s, g in PREDICTIONS}, own ^ {f"{s}.{g}" for s, g in PREDICTIONS}
    fields = {"s04.my_guess_2": {"belady": 0.81}, "s04.my_guess_3": {"lru": 0.04, "pin": 0.04},
              "s04.my_guess_4": {"lru": 0.04, "belady": 0.2}, "s05.my_guess_4": {"small": 23.2, "large": 1_891.1, "measured": 19.0},
              "s07.my_guess": {"saved": 0.8}, "s07.my_guess_2": {"change": -0.3},
              "s07.my_guess_3": {"verdict": "The rule takes 224 blocks."}, "s09.my_guess": {"balance": 1.3}}
    try:
        for lang in ("en", "zh"):
            set_language(lang)
            for s, g in PREDICTIONS:
                key = f"{s}.{g}"
                if key == "s08.my_guess_3":
                    said = [why(key, chance_inside=True), why(key, chance_inside=False)]
                else:
                    said = [why(key, **fields.get(key, {}))]
                assert all(t.strip() and "{" not in t for t in said), (key, said)
    finally:
        set_language("en")

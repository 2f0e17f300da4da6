"""What a report can carry out of the sandbox, what reading learner text costs the grader, and how
learner-controlled names reach a report (autograder/grading/disclosure.py, leaks.py, readings.py, display.py,
safetext.py, reports.py).

The report tests forge a child's events directly (no child runs): whatever learner code could make
its child say, here it says, through every field, and the test measures how much of a random text
of the attacker's came out in the submission's report.
"""
from __future__ import annotations

import base64
import bz2
import csv
import functools
import io
import json
import random
import signal
import string
import subprocess
import sys
import time
import zlib
from pathlib import Path

import nbformat
import pytest

from autograder.child.protocol import Channel, Violation
from autograder.child.protocol import decode as decode_event
from autograder.core import layout, safetext
from autograder.core.course import FEEDBACK_LEVELS, Course
from autograder.core.data import decode, encode
from autograder.core.results import CheckResult, SubmissionResult, TodoResult, TodoStatus
from autograder.grading import disclosure, display, readings, reports
from autograder.grading.grade import Reporting, _disclosed, compose
from autograder.grading.leaks import WITHHELD, LeakGuard
from autograder.grading.submission import read_submission
from autograder.grading.supervise import ChildLimits, ChildReport, _report, child_payload, path_digest
from autograder.grading.trusted import expected_outcomes, leak_guard
from autograder.integrations import gradescope
from autograder.isolation.levels import select
from tests.support.machine import scaled
from tests.support.variants import variant_notebook

S01 = layout.stage_files("s01")
RNG = random.Random(20261201)
SECRET = "".join(RNG.choice(string.ascii_lowercase + string.digits) for _ in range(6000))  # the attacker's text
DIGITS = "".join(RNG.choice(string.digits) for _ in range(6000))                         # ...and numbers
RUN = 8  # a run of this many characters of SECRET (or DIGITS) in a report is counted as carried out


@pytest.fixture(scope="module")
def sub(tmp_path_factory):
    path = tmp_path_factory.mktemp("bounds") / "s01_prefix_match.ipynb"
    nbformat.write(variant_notebook("s01", []), path)
    return read_submission(path)


def _typed(events: list[dict]) -> list:
    """The protocol's events for these lines; a line the protocol refuses is left out (a channel
    would flag it and believe nothing after it: what the report shows is then less, never more)."""
    out = [decode_event(json.dumps(e).encode()) for e in events]
    return [e for e in out if not isinstance(e, Violation)]


def _events(checks, outcome_of, cell_errors=None, extra=()) -> list:
    ev = [{"phase": "ready"}, {"phase": "cell", "index": 0}]
    if cell_errors is not None:
        ev.append({"cell_errors": cell_errors})
    ev.append({"phase": "cells_done"})
    ev += list(extra)
    for i, c in enumerate(checks):
        ev += [{"phase": "check", "key": c.key}, {"key": c.key, "outcome": outcome_of(i, c)}]
    return _typed(ev + [{"phase": "done"}])


def _grade(sub, reports_by_todo: dict[str, ChildReport], how: Reporting = Reporting()) -> SubmissionResult:  # noqa: B008 - frozen, never changed
    """What the grader concludes from these children's reports, as grade_paths composes it."""
    guard = leak_guard(sub.stage)
    todos = sub.stage.todos
    items = [compose(sub, t, reports_by_todo[t.id], guard, how=how) for t in todos]
    items = _disclosed(sub, todos, items, guard, how, withhold=False)
    if guard.leaks_together(p for g in items for p in g.shown):
        items = _disclosed(sub, todos, items, guard, how, withhold=True)
    return SubmissionResult(str(sub.path), sub.stage.id, todos=[g.result for g in items])


def _all_report_text(result: SubmissionResult, tmp_path: Path) -> str:
    """Every format a learner or an instructor reads, together."""
    iso = select("in-process")
    reports.write_csv([result], tmp_path / "g.csv", iso)
    reports.write_summary([result], tmp_path / "s.json", iso)
    return "\n".join([reports.table([result], iso), reports.full_json([result], iso),
                      (tmp_path / "g.csv").read_text(encoding="utf-8"), (tmp_path / "s.json").read_text(encoding="utf-8"),
                      json.dumps(gradescope.results_json(result), ensure_ascii=False)])


@functools.lru_cache(maxsize=16)
def _pieces(text: str, run: int) -> frozenset[str]:
    """Every ``run`` characters in a row of ``text``: a piece of that length is in ``text`` exactly
    when it is among them (one look-up, where a search of a long text, per position of a report, made
    the exfiltration tests spend most of their time here)."""
    return frozenset(text[i:i + run] for i in range(len(text) - run + 1))


def _carried(text: str, source: str, run: int = RUN, public: str = "") -> int:
    """How many distinct characters of ``source`` appear in ``text`` within runs of at least ``run``
    characters that are not also in ``public`` (what learners have anyway); the same piece shown twice
    counts once: it is the information that counts."""
    covered: set[int] = set()
    in_source, in_public = _pieces(source, run), _pieces(public, run)
    i = 0
    while i + run <= len(text):
        n = run
        if text[i:i + n] not in in_source or text[i:i + n] in in_public:
            i += 1
            continue
        while i + n < len(text) and text[i:i + n + 1] in source and text[i + n + 1 - run:i + n + 1] not in in_public:
            n += 1
        start = source.index(text[i:i + n])
        covered.update(range(start, start + n))
        i += n
    return len(covered)


def _public_text() -> str:
    """What learners of stage 1 have anyway: their notebooks, the public checks, every check's and
    TODO's name, title and hint, and the grader's own sentences."""
    from autograder.core.i18n import text as in_lang

    stage = layout_stage()
    parts = [S01.learner(lang).read_text(encoding="utf-8") for lang in layout.LANGUAGES if S01.learner(lang).exists()]
    parts += [S01.spec.read_text(encoding="utf-8"), (layout.AUTOGRADER / "core" / "messages.py").read_text(encoding="utf-8")]
    for c in stage.checks:
        parts += [c.key, *(in_lang(x, lang) or "" for x in (c.call, c.title, c.hint) for lang in ("en", "zh"))]
    for t in stage.todos:
        parts += [t.id, t.target, *(in_lang(x, lang) or "" for x in (t.title, t.contract, *t.hints) for lang in ("en", "zh"))]
    return "\n".join(parts)


def _attack_outcome(i: int, c) -> dict:
    """One check's outcome, carrying attacker text through every field a value has."""
    k = (i * 97) % 5000
    piece, digits = SECRET[k:k + 600], DIGITS[k:k + 600]
    kind = i % 6
    if kind == 0:  # dict keys and values
        return {"kind": "ok", "value": encode({piece[j:j + 40]: piece[j + 40:j + 80] for j in range(0, 560, 80)})}
    if kind == 1:  # numbers: one huge int, and a list of ints
        return {"kind": "ok", "value": encode([int(digits[:400]), *[int(digits[j:j + 18]) for j in range(0, 400, 18)]])}
    if kind == 2:  # an exception: its type name and its message
        return {"kind": "raised", "type": "E" + piece[:300], "message": piece[300:600]}
    if kind == 3:  # the shape of a tensor summary and its dtype/device strings
        return {"kind": "ok", "value": {"shape": [int(d) for d in digits[:50]], "dtype": piece[:200], "device": piece[200:400],
                                        "values": [0.0]}}
    if kind == 4:  # a list of strings nested in tuples
        return {"kind": "ok", "value": encode([(piece[j:j + 30],) for j in range(0, 600, 30)])}
    return {"kind": "error", "message": piece}


def test_a_submission_carries_out_at_most_the_budget_through_every_field(sub, tmp_path):
    forged = {}
    for n, t in enumerate(sub.stage.todos):
        checks = sub.stage.checks_for(t.id)
        errors = [{"cell": int(DIGITS[:30]), "kind": SECRET[:40], "type": SECRET[n * 300:n * 300 + 100],
                   "message": SECRET[n * 300 + 100:n * 300 + 300]}]
        versions = [{"course_versions": [SECRET[3000 + 60 * j:3060 + 60 * j] for j in range(50)]}]
        forged[t.id] = ChildReport(_events(checks, _attack_outcome, errors, versions), None)
    result = _grade(sub, forged)
    text = _all_report_text(result, tmp_path)
    out = _carried(text, SECRET) + _carried(text, DIGITS)
    assert 0 < out <= disclosure.BUDGET_BYTES, out  # something useful is shown, and no more than the budget
    assert not any(c.isdigit() and len(c) > 30 for c in text.split())


def test_forged_missing_cell_numbers_and_exit_statuses_carry_nothing(sub, tmp_path):
    todo = sub.stage.todos[1]
    checks = sub.stage.checks_for(todo.id)
    huge = int(DIGITS[:25])
    # a cell number the grader never sent, in the last "cell" phase and in a cell error
    ev = _typed([{"phase": "ready"}, {"phase": "cell", "index": huge}])
    rep = ChildReport(ev, "stopped")
    g = compose(sub, todo, rep, leak_guard(sub.stage))
    assert DIGITS[:10] not in g.result.message and "before the checks started" in g.result.message
    ev = _events(checks[:1], lambda i, c: {"kind": "ok", "value": 0}, [{"cell": huge, "kind": "your", "type": "E", "message": "m"}])
    g = compose(sub, todo, ChildReport(ev, None), leak_guard(sub.stage))
    assert "cell ? raised" in g.result.message and DIGITS[:10] not in g.result.message
    # the exit status and the signal are chosen by learner code: neither number nor an arbitrary name is shown
    limits = ChildLimits(5, 512, 1)
    for rc, absent in [(173, "173"), (-signal.SIGUSR1, "SIGUSR1"), (-signal.SIGWINCH, "SIGWINCH")]:
        ch = Channel([c.key for c in checks])
        ch.feed(b'{"phase": "ready"}\n')
        said = _report(ch, rc, b"", 0, False, limits).stopped
        assert absent not in f"{said.en} {said.zh}", said
    ch = Channel([c.key for c in checks])
    ch.feed(b'{"phase": "ready"}\n')
    assert "SIGXCPU" in _report(ch, -signal.SIGXCPU, b"", 0, False, limits).stopped.en  # an explanation stays


def test_an_honest_wrong_value_is_still_shown_usefully(sub):
    todo = next(t for t in sub.stage.todos if t.id == "s01.cache_stats")
    expected = expected_outcomes(sub.stage)

    def off_by_rounding(i, c):
        e = decode(expected[c.key]["value"])
        if isinstance(e, dict) and "reuse_ratio" in e:
            e = {**e, "reuse_ratio": e["reuse_ratio"] + 0.000123}
        return {"kind": "ok", "value": encode(e)}

    result = _grade(sub, {t.id: ChildReport(_events(sub.stage.checks_for(t.id), off_by_rounding if t is todo else
                                                    (lambda i, c: expected[c.key])), None) for t in sub.stage.todos})
    msg = next(t.message for t in result.todos if t.id == todo.id)
    assert "got:" in msg and "reuse_ratio" in msg and "where:" in msg, msg
    assert all(t.passed for t in result.todos if t.id not in (todo.id, "s01.quiz"))


def test_one_report_carries_a_small_part_of_a_reference(sub, tmp_path):
    """Round one reads the reference out in an encoding no guard knows (a substitution the attacker
    chose), through every check of every TODO; round two would submit it. What round one gets is
    bounded by the budget, a small part of the reference module (see docs/security.md's arithmetic)."""
    reference = S01.reference.read_text(encoding="utf-8")
    table = str.maketrans(string.ascii_letters + string.digits + "_ ().,:=[]",
                          "".join(random.Random(7).sample(string.ascii_letters + string.digits + "_ ().,:=[]", 72)))
    back = {v: k for k, v in table.items()}
    cipher = reference.translate(table)

    def smuggle(i, c):
        return {"kind": "ok", "value": encode([cipher[i * 500 + j:i * 500 + j + 16] for j in range(0, 500, 16)])}

    result = _grade(sub, {t.id: ChildReport(_events(sub.stage.checks_for(t.id), smuggle), None) for t in sub.stage.todos})
    text = _all_report_text(result, tmp_path)
    recovered = _carried(text, cipher, run=6)
    assert 0 < recovered <= disclosure.BUDGET_BYTES
    assert len(reference) / disclosure.BUDGET_BYTES > 10  # rounds it would take for this stage alone
    assert "".join(chr(back.get(ord(ch), ord(ch))) for ch in text).count("def match_prefix") == 0


def test_feedback_titles_shows_a_hidden_failure_by_title_and_hint_only(sub):
    todo = next(t for t in sub.stage.todos if t.id == "s01.match_prefix")
    expected = expected_outcomes(sub.stage)
    hidden = next(c for c in sub.stage.checks_for(todo.id) if c.hidden)

    def wrong_on_hidden(i, c):
        return {"kind": "raised", "type": "ValueError", "message": SECRET[:80]} if c is hidden else expected[c.key]

    errors = [{"cell": 1, "kind": "your", "type": "KeyError", "message": SECRET[100:180]}]
    rep = ChildReport(_events(sub.stage.checks_for(todo.id), wrong_on_hidden, errors), None)
    values = compose(sub, todo, rep, leak_guard(sub.stage), how=Reporting(feedback="values")).result
    titles = compose(sub, todo, rep, leak_guard(sub.stage), how=Reporting(feedback="titles")).result
    assert SECRET[100:120] in values.message  # today's level: the cell error's note, within the budget
    assert SECRET[:20] not in titles.message and SECRET[100:120] not in titles.message and "KeyError" not in titles.message
    assert hidden.name in titles.message and hidden.hint.en.split()[0] in titles.message
    shown = json.dumps([c.message for c in titles.checks if c.hidden])
    assert SECRET[:20] not in shown and "ValueError" not in shown
    # stopping during a hidden check says no more than failing it
    stopped = ChildReport(_typed([{"phase": "ready"}, {"phase": "cells_done"}, {"phase": "check", "key": hidden.key}]),
                          "the grading process was ended by SIGKILL (killed)")
    msg = compose(sub, todo, stopped, leak_guard(sub.stage), how=Reporting(feedback="titles")).result.message
    assert "SIGKILL" not in msg and hidden.name in msg


def test_feedback_level_is_a_course_setting(tmp_path):
    assert FEEDBACK_LEVELS == disclosure.FEEDBACK_LEVELS
    with pytest.raises(ValueError, match="feedback"):
        Course("r", "main", "n", sources=("x",), feedback="everything")
    from autograder.core.course import load_course

    toml = (layout.ROOT / "course.toml").read_text(encoding="utf-8").replace('feedback = "values"', 'feedback = "titles"')
    (tmp_path / "course.toml").write_text(toml, encoding="utf-8")
    assert load_course(tmp_path / "course.toml").feedback == "titles"
    assert load_course().feedback in FEEDBACK_LEVELS


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_a_child_is_not_told_the_other_submissions_names(tmp_path):
    classmates = [str(tmp_path / f"student_{i}" / "s01_prefix_match.ipynb") for i in range(3)]
    hidden = [*map(str, [layout.SOLUTIONS, layout.TESTS, layout.ROOT / ".git"]), *classmates]
    payload = child_payload({"cells": []}, ChildLimits(5, 512, 1), hidden, tmp_path, str(tmp_path), 9)
    said = json.dumps(payload)
    assert "student_" not in said and str(tmp_path / "student_0") not in said
    assert path_digest(payload["salt"], classmates[0]) in payload["denied_digests"]
    # the child's audit hook still refuses to open them, by digest (in a process of its own)
    (tmp_path / "student_0").mkdir()
    Path(classmates[0]).write_text("{}")
    code = ("import json, sys; from autograder.child.sandbox import _install_audit_hook; p = json.loads(sys.argv[1]);"
            "_install_audit_hook(p['denied_dirs'], p['workdir'], p['salt'], p['denied_digests'])\n"
            "try:\n    open(sys.argv[2]).read(); print('opened')\nexcept PermissionError:\n    print('refused')")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(payload), classmates[0]], capture_output=True, text=True,
                         cwd=layout.ROOT, timeout=scaled(60))
    assert out.stdout.strip() == "refused", out.stderr


# -- the leak guard sees through look-alike text ------------------------------------------------------
FULLWIDTH = {c: c + 0xFEE0 for c in range(ord("!"), ord("~") + 1)}
GUARD_SECRET = "hit_len = max((len(p) for p in self.cached_prefixes if is_prefix(p)), default=0)"


@pytest.fixture(scope="module")
def guard():
    return LeakGuard([GUARD_SECRET], ["def match_prefix(self, prompt_tokens): cached_prefixes"])


@pytest.mark.parametrize("disguise", [
    lambda s: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s),   # fullwidth forms
    lambda s: s.replace("a", "а").replace("e", "е").replace("o", "о").replace("p", "р"),  # Cyrillic look-alikes
    lambda s: "".join(c + "\u0301" for c in s),                                       # an accent on every letter
    lambda s: "\u200b".join(s),                                                       # zero-width spaces between
    lambda s: "".join(chr(0x1D41A + ord(c) - 97) if "a" <= c <= "z" else c for c in s),  # mathematical bold
    lambda s: base64.b64encode(s.encode()).decode().translate(FULLWIDTH),                # fullwidth base64
], ids=["fullwidth", "cyrillic", "accents", "zero_width", "math_bold", "fullwidth_base64"])
def test_guard_reads_text_as_its_skeleton(guard, disguise):
    text = disguise(GUARD_SECRET[10:60])
    assert guard.leaks(text) and guard.fragment(text) == WITHHELD


# -- the grader's CPU -------------------------------------------------------------------------------
BOUND_S = 1.0


def _pathological() -> dict[str, str]:
    r = random.Random(1)
    return {
        "many_numbers_multi_space": "  ".join(str(r.randint(10, 9_999_999)) for _ in range(40)) + "  x",
        "numbers_ambiguous_separators": "".join(str(r.randint(10, 99_999)) + r.choice([" , ", " ;\t ", "   ", ",,", "\t\t"])
                                                for _ in range(3000)),
        "seven_numbers_then_a_long_one": (" ".join(["1234567"] * 7) + " 12345678 ") * 20000,
        "nested_brackets": "[" * 200_000 + "1" + "]" * 200_000,
        "hex_pairs_with_separators": "ab:" * 400_000 + "g",
        "base64_run": "QUJD" * 400_000,
        "ten_megabytes": "x" * (10 << 20),
        "ten_megabytes_of_whitespace": " \n\u2028" * (3 << 20),
        "combining_marks": "e\u0301\u0302\u0303" * 400_000,
        "escapes": "\\x41\\u0041\\101\\n" * 200_000,
        "percent": "%4" * 600_000,
        "zlib_bomb_base64": base64.b64encode(zlib.compress(b"\0" * (64 << 20), 9)).decode(),
        "bz2_bomb_base64": base64.b64encode(bz2.compress(b"a" * (64 << 20), 9)).decode(),
        "bidi_and_controls": "\u202e\x85\u2028\x00" * 500_000,
    }


PATHOLOGICAL = _pathological()


def _timed(fn, *args) -> float:
    """CPU seconds ``fn`` takes: a bound on work, which a busy machine's clock would stretch."""
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_every_scan_of_learner_text_is_bounded(name, guard):
    text = PATHOLOGICAL[name]
    sg = leak_guard(layout_stage())
    value_outcome = {"kind": "ok", "value": [text, {"__bytes__": text}, {"__dict__": [[text, text]]}]}
    calls = {
        "leaks": lambda: sg.leaks(text), "fragment": lambda: sg.fragment(text), "name": lambda: sg.name(text),
        "outcome": lambda: sg.outcome(value_outcome), "raised": lambda: sg.outcome({"kind": "raised", "type": text, "message": text}),
        "together": lambda: sg.leaks_together([text] * 20), "readings": lambda: readings.readings(text),
        "small_guard": lambda: guard.fragment(text),
        "show": lambda: display.show({"kind": "ok", "value": [text] * 3}, compact=True),
        "difference": lambda: display.first_difference({"a": "x"}, {text[:100_000]: text}, compact=True),
        "one_line": lambda: safetext.one_line(text[:1 << 20]), "csv_cell": lambda: safetext.csv_cell(text[:1 << 20]),
        "disclosure": lambda: disclosure.Disclosure(sg).take(text),
    }
    slow = {k: round(t, 2) for k, f in calls.items() if (t := _timed(f)) > BOUND_S}
    assert not slow, slow


def layout_stage():
    from autograder.core.spec import load_stage

    return load_stage("s01", hidden=True)


def test_channel_parsing_is_bounded_for_huge_and_nested_lines():
    keys = ["s01.x:a"]
    for raw in [b'{"phase": "' + b"x" * (10 << 20), b"[" * (6 << 20) + b"\n", b'{"missing": "' + b"\\u0041" * (1 << 20) + b'"}\n']:
        ch = Channel(keys)
        start = time.process_time()  # CPU time: the bound is on work, not on how busy the machine is
        for i in range(0, len(raw), 1 << 16):
            ch.feed(raw[i:i + (1 << 16)])
        ch.close()
        assert time.process_time() - start < 2 * BOUND_S
        assert ch.tampered or ch.too_large


def test_reports_are_bounded_and_linear_in_what_they_show(tmp_path):
    big = "=HYPERLINK(\u202e" + "y" * (1 << 20)
    t = TodoResult("s01.x", 1, "x", 0.0, 1.0, TodoStatus.FAILED, big, [CheckResult("a", True, False, big)])
    r = SubmissionResult(big + ".ipynb", "s01", todos=[t], warnings=[big])
    iso = select("in-process")
    start = time.process_time()
    reports.table([r], iso), reports.full_json([r], iso), gradescope.results_json(r)
    reports.write_csv([r], tmp_path / "g.csv", iso), reports.write_summary([r], tmp_path / "s.json", iso)
    assert time.process_time() - start < 3 * BOUND_S


# -- names and text learners control -------------------------------------------------------------------
NASTY = ["=HYPERLINK(\"http://x\",\"y\")", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "a\u202eb", "a\x85b", "a\u2028b",
         "a\nb", "a\u2066b\u2069", "a\u200eb", "a\u061cb", "a\x9bb", "a\x1b[31mb"]


@pytest.mark.parametrize("name", NASTY)
def test_a_learner_name_is_one_safe_line_in_every_format(name, tmp_path):
    t = TodoResult("s01.x", 1, "x", 0.0, 1.0, TodoStatus.FAILED, f"message {name}",
                   [CheckResult("a", True, False, f"check {name}")])
    r = SubmissionResult(str(tmp_path / f"{name}.ipynb"), "s01", todos=[t], warnings=[f"warning {name}"])
    bad = SubmissionResult.not_graded(str(tmp_path / f"{name}.ipynb"), f"cannot read {name}")
    iso = select("in-process")
    table = reports.table([r, bad], iso)
    assert len(table.splitlines()) == 1 + 3 + 1  # isolation, submission, TODO, warning; the ungraded one
    for text in [table, reports.full_json([r, bad], iso), json.dumps(gradescope.results_json(r), ensure_ascii=False)]:
        assert all(safetext.one_line(line) == line for line in text.splitlines())
    reports.write_csv([r, bad], tmp_path / "g.csv", iso)
    rows = list(csv.reader(io.StringIO((tmp_path / "g.csv").read_text(encoding="utf-8"))))
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(safetext.FORMULA_START) and safetext.one_line(cell) == cell, cell
    reports.write_summary([r, bad], tmp_path / "s.json", iso)
    summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert all(safetext.one_line(s["path"]) == s["path"] for s in summary["per_submission"])


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_grade_cli_stderr_lines_are_one_line_each(tmp_path):
    nasty = tmp_path / "a\u202eb\nc\x85.ipynb"
    nasty.write_bytes(b"not a notebook")
    out = subprocess.run([sys.executable, "-m", "autograder", "grade", str(nasty), "--isolation", "in-process",
                          "--no-require-isolation", "--no-progress"], capture_output=True, text=True, cwd=layout.ROOT,
                         timeout=scaled(120))
    lines = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "\\u202e" in lines[0] and "\\n" in lines[0], out.stderr
    assert all(safetext.one_line(line) == line for line in out.stderr.splitlines() + out.stdout.splitlines())


def test_one_line_escapes_what_is_not_printable_and_keeps_the_rest():
    assert safetext.one_line("块哈希 · ok – fine") == "块哈希 · ok – fine"
    assert safetext.one_line("a\u202eb\x85c\u2028d\ne") == "a\\u202eb\\x85c\\u2028d\\ne"
    assert all(ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c" for ch in safetext.BIDI)
    assert safetext.csv_cell("=1+1") == "'=1+1" and safetext.csv_cell(-3) == -3 and safetext.csv_cell("a=b") == "a=b"


def test_the_security_page_states_the_bounds_the_code_enforces():
    """The numbers docs/security.md's "What a report can carry" states (both editions) are the ones the
    grader uses."""
    from autograder.core.pysource import solution_region
    from autograder.core.spec import load_stage

    def region_bytes(sid: str) -> dict[str, int]:
        text = layout.stage_files(sid).reference.read_text(encoding="utf-8")
        lines = text.splitlines()
        out = {}
        for t in load_stage(sid, hidden=True).todos:
            b, e = solution_region(text, t.target)
            out[t.id] = len("\n".join(lines[b + 1:e]).encode())
        return out

    s05 = sum(region_bytes("s05").values())
    s05_hidden = len(layout.stage_files("s05").hidden.read_bytes())
    shortest = min((n, tid) for sid in layout.built_stages() for tid, n in region_bytes(sid).items()
                   if not tid.endswith(".quiz"))
    budget = disclosure.BUDGET_BYTES
    en = (layout.ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    zh = (layout.ROOT / "docs" / "security.zh.md").read_text(encoding="utf-8")
    for page in (en, zh):
        assert f"{budget} 字节" in page or f"budget per submission: {budget} bytes" in page
        assert f"{readiness(readings.SCAN_LIMIT)}" in page and f"{readings.INFLATE_LIMIT // 1024} KiB" in page
        assert f"{display.COMPACT_CHARS}" in page and f"{display.PREFIX_CHARS}" in page
        assert f"{display.NUMBER_CHARS}" in page and f"{display.KEY_CHARS}" in page
        assert f"{-(-s05 // budget)}" in page and f"{-(-s05_hidden // budget)}" in page
        assert f"{round(s05 / 1000, 1)} KB" in page and f"{round(s05_hidden / 1000)} KB" in page
        assert f"{shortest[0]}" in page and shortest[1].split(".")[1] in page
        assert f"{disclosure.LEAD_RESERVE_BYTES} bytes" in page or f"{disclosure.LEAD_RESERVE_BYTES} 字节" in page


def readiness(n: int) -> str:
    """A number as docs/security.md writes it (a thousands separator)."""
    return f"{n:,}"


# -- the same attacks from real learner code, graded by the real grader ---------------------------------
@pytest.fixture(scope="module")
def exfiltrated(tmp_path_factory):
    """The attack corpus's exfiltrators, each a stage-1 notebook, graded in one run; each one's
    report in every format."""
    import copy

    from autograder.grading.grade import grade_paths
    from tests.support import attack_corpus, hostile_corpus

    folder = tmp_path_factory.mktemp("exfiltrators")
    base = nbformat.read(S01.learner(), as_version=4)
    cases = {c.name: c for c in attack_corpus.exfiltrators()}
    for case in cases.values():
        nb = copy.deepcopy(base)
        for cell in nb.cells:
            if hostile_corpus.is_class_cell(cell):
                cell.source = case.cell
        nbformat.write(nb, folder / f"{case.name}.ipynb")
    results = grade_paths([folder], workers=2)
    out = tmp_path_factory.mktemp("exfiltrated_reports")
    return cases, {Path(r.path).stem: (r, _all_report_text(r, out)) for r in results}


def _secrets_of_a_child() -> list[str]:
    """What the children of stage 1 hold that learners must not read: each TODO's stubbed reference
    and the text of its hidden checks (which the child holds compiled only)."""
    from autograder.grading.trusted import child_modules, hidden_checks_text

    stage = layout_stage()
    files = S01
    out = []
    for t in stage.todos:
        out += [child_modules(stage, t)[files.reference_module], hidden_checks_text(stage, t)]
    return out


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_real_exfiltrators_fail_their_todos_and_carry_out_at_most_the_budget(exfiltrated):
    from tests.support import attack_corpus
    from tests.support.hostile_corpus import ALL

    cases, graded = exfiltrated
    assert set(graded) == set(cases)
    secrets = _secrets_of_a_child()
    public = _public_text()
    for name, (r, text) in graded.items():
        earned = {t.id for t in r.todos if t.passed and t.id in ALL}
        assert earned == cases[name].earns, (name, {t.id: t.message for t in r.todos if t.id in ALL})
        carried = 0
        for secret in secrets:
            plain = secret[secret.find("### BEGIN SOLUTION"):] if "### BEGIN SOLUTION" in secret else secret
            number = str(int.from_bytes(plain[18:1518].encode(), "big")) if len(plain) > 18 else ""
            carried = max(carried, _carried(text, plain, public=public)
                          + _carried(attack_corpus.decipher(text), plain, public=public)
                          + (_carried(text, number) if number else 0))
        assert carried <= disclosure.BUDGET_BYTES, (name, carried)


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_two_rounds_from_a_real_report_carry_at_most_the_budget(exfiltrated):
    """Round one: the attacker deciphers what its report carried; round two would paste it in. What
    comes out is at most the budget, less than the stage's answers together, so rebuilding them takes
    several reports (one answer shorter than the budget can fit in one: docs/security.md says so)."""
    from autograder.core.pysource import solution_region
    from tests.support import attack_corpus

    _, graded = exfiltrated
    reference = S01.reference.read_text(encoding="utf-8")
    lines = reference.splitlines()
    answers = []
    for t in layout_stage().todos:
        if not t.id.endswith(".quiz"):
            b, e = solution_region(reference, t.target)
            answers.append("\n".join(lines[b + 1:e]))
    total = sum(len(a.encode()) for a in answers)
    assert total > disclosure.BUDGET_BYTES
    for name in ("exfiltrate_in_an_unknown_encoding", "exfiltrate_unknown_encoding_in_an_exception",
                 "exfiltrate_small_pieces_across_every_todo"):
        recovered = attack_corpus.decipher(graded[name][1])
        assert sum(_carried(recovered, a, run=RUN) for a in answers) <= disclosure.BUDGET_BYTES, name


@pytest.fixture(scope="module")
def probe_smugglers(tmp_path_factory):
    """The attack corpus's hidden-probe smugglers (atbash, xor then base64, filler interleaved, and
    one split across two submissions), graded as one batch: name -> result."""
    import copy

    from autograder.grading.grade import grade_paths
    from tests.support import attack_corpus, hostile_corpus

    folder = tmp_path_factory.mktemp("probe_smugglers")
    base = nbformat.read(S01.learner(), as_version=4)
    cases = {c.name: c for c in attack_corpus.probe_text_smugglers()}
    for case in cases.values():
        nb = copy.deepcopy(base)
        for cell in nb.cells:
            if hostile_corpus.is_class_cell(cell):
                cell.source = case.cell
        nbformat.write(nb, folder / f"{case.name}.ipynb")
    return cases, {Path(r.path).stem: r for r in grade_paths([folder], workers=2)}


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_no_encoding_carries_a_hidden_checks_text_out_of_its_child(probe_smugglers):
    """The child holds its hidden checks compiled, with no source text anywhere (its modules, the
    payload, the line cache, ``inspect``, its memory): each smuggler finds nothing to send, so it runs
    the reference's code and earns every point, and no report decodes to the probe's words. Before,
    the text was the child's loader's: each report carried the probe's line inside the budget."""
    from tests.support import attack_corpus
    from tests.support.hostile_corpus import ALL

    cases, graded = probe_smugglers
    assert set(graded) == set(cases)
    messages = {name: next(t.message for t in r.todos if t.id == "s01.normalize") for name, r in graded.items()}
    recovered = attack_corpus.probe_text_recovered(messages)
    assert len(recovered) == 4
    assert not [k for k, text in recovered.items() if attack_corpus.PROBE_TEXT in text], recovered
    for name, r in graded.items():
        assert {t.id for t in r.todos if t.passed and t.id in ALL} == cases[name].earns, (name, messages[name])

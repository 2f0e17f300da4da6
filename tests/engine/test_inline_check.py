"""check() in a learner's kernel: per-check lines, "not implemented" without a traceback, hidden
checks that never show their inputs, and a time limit on endless loops."""
from __future__ import annotations

import types

import pytest

from autograder.core.spec import load_stage
from autograder.learner.inline import run_check
from solutions import s01_prefix_match as ref
from tests.support.machine import machine_factor, scaled


def ns_with(**methods) -> types.SimpleNamespace:
    cls = type("PrefixCacheManager", (ref.PrefixCacheManager,), methods)
    return types.SimpleNamespace(PrefixCacheManager=cls)


def test_s01_match_prefix_reference_passes_inline(capsys):
    report = run_check("s01.match_prefix", impl=ref)
    out = capsys.readouterr().out
    assert report.passed and out.count("✅") == len(report.verdicts) >= 4
    assert "visible checks only" in out  # never reads as "all passed" while hidden checks exist


def test_s01_match_prefix_stub_says_not_implemented(capsys):
    def match_prefix(self, prompt_tokens):
        raise NotImplementedError()

    report = run_check("s01.match_prefix", impl=ns_with(match_prefix=match_prefix))
    out = capsys.readouterr().out
    assert not report.passed
    assert "TODO 3 (s01.match_prefix) is not implemented yet" in out and "Traceback" not in out


def test_s01_split_prompt_blames_unfinished_dependency(capsys):
    def _normalize(self, tokens):
        raise NotImplementedError()

    run_check("s01.split_prompt", impl=ns_with(_normalize=_normalize))
    out = capsys.readouterr().out
    assert "TODO 4 (s01.split_prompt) needs TODO 1 (s01.normalize)" in out


def test_s01_match_prefix_wrong_answer_shows_input_expected_got_hint(capsys):
    def match_prefix(self, prompt_tokens):
        prompt = list(prompt_tokens)
        return max((len(p) for p in self.cached_prefixes if set(p) <= set(prompt)), default=0)

    report = run_check("s01.match_prefix", impl=ns_with(match_prefix=match_prefix))
    out = capsys.readouterr().out
    assert not report.passed
    assert "❌ equal tokens in the middle do not count" in out  # the check's title
    assert "input:    add_prefix([2, 3]); match_prefix([1, 2, 3])" in out
    assert "expected: 0" in out and "got:      2" in out and "hint:" in out


def test_s01_match_prefix_hidden_failures_show_no_values(capsys):
    def match_prefix(self, prompt_tokens):
        return 3  # passes some visible checks by luck, fails hidden ones

    report = run_check("s01.match_prefix", hidden=True, impl=ns_with(match_prefix=match_prefix))
    out = capsys.readouterr().out
    assert not report.passed and "hidden check" in out
    assert "expected" not in out and "input" not in out and "got" not in out


def test_s01_normalize_endless_loop_is_stopped(capsys, monkeypatch):
    """The CPU-time limit stops the loop. The clock's limit (for code that waits) is a multiple of it that
    a busy machine outruns (at a load of 14 on 2 cores the loop gets a seventh of a core): the test gives
    the clock the machine's factor, so that the limit it asserts, CPU time, is the one that fires."""
    from autograder.learner import inline

    monkeypatch.setattr("autograder.learner.inline.INLINE_TIME_LIMIT_S", 1)
    monkeypatch.setattr("autograder.learner.inline.INLINE_WALL_FACTOR", inline.INLINE_WALL_FACTOR * machine_factor())

    def _normalize(self, tokens):
        while True:
            pass

    report = run_check("s01.normalize", impl=ns_with(_normalize=_normalize))
    assert not report.passed
    out = capsys.readouterr().out
    assert "TimeoutError" in out and "1 s of CPU time" in out


def test_time_spent_waiting_is_not_counted_as_running_away(capsys, monkeypatch):
    """A correct answer on a busy machine waits for the CPU; sleeping stands in for that wait: 1.5 s
    on the clock per call, over a 1 CPU-second limit, still passes."""
    import time

    monkeypatch.setattr("autograder.learner.inline.INLINE_TIME_LIMIT_S", 1)
    calls = []

    def _normalize(self, tokens):
        if not calls:
            time.sleep(1.5)
        calls.append(1)
        normalized = list(tokens)  # the reference's body (a check reads the learner's names, not this module's)
        for token in normalized:
            if not isinstance(token, int):
                raise TypeError(f"tokens must be ints, got {type(token).__name__}: {token!r}")
        return normalized

    report = run_check("s01.normalize", impl=ns_with(_normalize=_normalize))
    assert report.passed, capsys.readouterr().out


def test_code_that_waits_forever_is_stopped_by_the_clock_and_told_so(capsys, monkeypatch):
    import time

    monkeypatch.setattr("autograder.learner.inline.INLINE_TIME_LIMIT_S", 1)

    def _normalize(self, tokens):
        time.sleep(3600)

    started = time.monotonic()
    report = run_check("s01.normalize", impl=ns_with(_normalize=_normalize))
    out = capsys.readouterr().out
    assert not report.passed and time.monotonic() - started < scaled(60)  # stopped, not left to sleep
    assert "still running after 3 s on the clock, having used 0.0 s of CPU time" in out, out
    assert "load average was" in out
    # the rest of the TODO's checks are left out, as grading leaves them (one child, one limit), and said so
    total = len(load_stage("s01", hidden=False).checks_for("s01.normalize"))
    assert len(report.verdicts) == 1 and report.not_run == total - 1 and total > 1
    assert f"0/{total} visible checks passed" in out and f"{total - 1} more check(s) not run" in out, out


def test_the_limit_leaves_nothing_behind_after_a_check():
    """No watcher thread outlives a check, and the kernel's own SIGALRM handler is back."""
    import signal
    import threading

    before = signal.getsignal(signal.SIGALRM)
    run_check("s01.normalize", impl=ref, quiet=True)
    assert signal.getsignal(signal.SIGALRM) is before
    assert not [t for t in threading.enumerate() if t.name == "check-time-limit"]


def test_s01_normalize_numpy_ints_are_not_ints(capsys):
    import numpy as np

    def _normalize(self, tokens):
        return [np.int64(t) for t in tokens]

    report = run_check("s01.normalize", impl=ns_with(_normalize=_normalize))
    out = capsys.readouterr().out
    assert not report.passed and "numpy.int64" in out


def test_without_a_thread_cpu_clock_the_clock_alone_stops_a_loop_and_claims_no_cause(capsys, monkeypatch):
    """Where the kernel has no per-thread CPU clock (macOS), the limit is the clock's, as long as the CPU
    limit, and the message does not say CPU time."""
    import time

    monkeypatch.setattr("autograder.learner.inline.INLINE_TIME_LIMIT_S", 1)
    monkeypatch.delattr(time, "pthread_getcpuclockid")

    def _normalize(self, tokens):
        while True:
            pass

    started = time.monotonic()
    report = run_check("s01.normalize", impl=ns_with(_normalize=_normalize))
    out = capsys.readouterr().out
    assert not report.passed and time.monotonic() - started < scaled(30)  # stopped, not left to loop
    assert "took longer than 1 s" in out and "CPU" not in out, out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_stopped_child_is_worded_by_what_was_measured(lang):
    """Stopped on the clock: the CPU time used and the machine's load say which it was. A load of 13
    on 2 cores is a busy machine, never "a sleeping program"; an idle machine means the code waited."""
    from autograder.core.i18n import set_language
    from autograder.learner.inline import wall_timeout_text

    set_language(lang)
    try:
        busy = wall_timeout_text(30, 4.2, load=13.0, cores=2)
        idle = wall_timeout_text(30, 0.01, load=0.3, cores=2)
        unknown = wall_timeout_text(30, 0.01, load=float("nan"), cores=2)
    finally:
        set_language("en")
    for said in (busy, idle):
        assert "30" in said and ("4.2" in said or "0.0" in said) and ("13.0" in said or "0.3" in said)
    if lang == "en":
        assert "busy machine" in busy and "sleep" not in busy and "a lock" not in busy
        assert "was waiting" in idle and "busy" not in idle
        assert "busy" not in unknown and "waiting" not in unknown
    else:
        assert "机器很忙" in busy and "sleep" not in busy and "锁" not in busy
        assert "在等待" in idle and "很忙" not in idle
        assert "很忙" not in unknown and "等待" not in unknown

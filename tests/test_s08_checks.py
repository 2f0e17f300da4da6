"""Stage 8's checks, probed directly: the reference passes, the stub is "not implemented", and each
wrong answer of ``tests/mutants_s08.py`` fails its own TODO only.

Until stage 8 has its notebooks (and so goes through the real grader in ``tests/test_mutants.py``),
this test stands in for the grader: the reference and every variant are probed in two child
processes with different hash seeds (as the grader's parent and child differ), and outcomes are
compared with the grader's own ``autograder.data.outcomes_equal``.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from autograder import data
from autograder.probe import run_probe
from autograder.spec import load_stage
from autograder.testing import apply_edits
from tests import mutants_s08

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "solutions" / "s08_cache_attacks.py"
REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION\n", re.S | re.M)


def stub_source(text: str) -> str:
    """The learner's copy: every solution region replaced by ``raise NotImplementedError()``."""
    return REGION.sub(lambda m: f"{m.group(1)}# YOUR CODE HERE\n{m.group(1)}raise NotImplementedError()\n", text)


def load_source(text: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(REFERENCE)
    sys.modules[name] = module  # dataclasses and annotations look their module up by name
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    return module


class ProbeTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise ProbeTimeout()


def outcomes(text: str, limit_s: int = 10) -> dict[str, dict]:
    """Every check's outcome (public and hidden) on the module whose source is ``text``; a probe
    running past ``limit_s`` seconds is an error (the grader's time limit does the same)."""
    stage = load_stage("s08")
    impl = load_source(text, "s08_under_test")
    previous = signal.signal(signal.SIGALRM, _alarm)
    results = {}
    try:
        for c in stage.checks:
            signal.alarm(limit_s)
            try:
                results[c.key] = run_probe(c, impl)
            except ProbeTimeout:
                results[c.key] = {"kind": "error", "message": f"over {limit_s} s"}
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return results


def _child_main() -> None:
    """In a child process: read {name: source} on stdin, print {name: outcomes} as JSON."""
    sources = json.loads(sys.stdin.read())
    print(json.dumps({name: outcomes(text) for name, text in sources.items()}))


def start_child(sources: dict[str, str], hash_seed: str) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    proc = subprocess.Popen([sys.executable, "-c", "from tests.test_s08_checks import _child_main; _child_main()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env=env)
    return proc, json.dumps(sources)


def finish_child(child: tuple[subprocess.Popen, str]) -> dict[str, dict[str, dict]]:
    proc, payload = child
    out, err = proc.communicate(payload, timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.splitlines()[-1])


def probe_in_child(sources: dict[str, str], hash_seed: str) -> dict[str, dict[str, dict]]:
    return finish_child(start_child(sources, hash_seed))


@pytest.fixture(scope="module")
def graded():
    """Outcomes of the reference (hash seed 1) and of the stub and every variant (hash seed 2)."""
    text = REFERENCE.read_text(encoding="utf-8")
    variants = {"stub": stub_source(text)}
    variants.update({name: apply_edits(text, edits) for name, (_, edits) in mutants_s08.MUTANTS.items()})
    variants.update({f"ok/{name}": apply_edits(text, edits) for name, edits in mutants_s08.EQUIVALENT.items()})
    reference, others = start_child({"reference": text}, "1"), start_child(variants, "2")  # in parallel
    return finish_child(reference)["reference"], finish_child(others)


def failed_todos(reference: dict[str, dict], got: dict[str, dict]) -> dict[str, list[str]]:
    stage = load_stage("s08")
    failed: dict[str, list[str]] = {}
    for check in stage.checks:
        if not data.outcomes_equal(reference[check.key], got[check.key], check.atol):
            failed.setdefault(check.todo, []).append(check.name)
    return failed


def test_s08_every_todo_has_enough_checks_and_mutants():
    stage = load_stage("s08")
    for todo in stage.todos:
        assert len(stage.checks_for(todo.id, hidden=False)) >= 3, todo.id
        assert len(stage.checks_for(todo.id, hidden=True)) >= 2, todo.id
        assert sum(1 for t, _ in mutants_s08.MUTANTS.values() if t == todo.id) >= 3, todo.id


def test_s08_reference_outcomes_are_values_and_deterministic(graded):
    reference, _ = graded
    again = outcomes(REFERENCE.read_text(encoding="utf-8"))
    stage = load_stage("s08")
    for check in stage.checks:
        assert reference[check.key]["kind"] in ("ok", "raised"), (check.key, reference[check.key])
        assert data.outcomes_equal(reference[check.key], again[check.key], check.atol), check.key


def test_s08_stub_is_not_implemented_everywhere(graded):
    _, got = graded
    assert all(outcome["kind"] == "todo" for outcome in got["stub"].values()), \
        {k: v for k, v in got["stub"].items() if v["kind"] != "todo"}


@pytest.mark.parametrize("name", list(mutants_s08.MUTANTS))
def test_s08_mutant_fails_its_own_todo_only(graded, name):
    reference, got = graded
    todo = mutants_s08.MUTANTS[name][0]
    failed = failed_todos(reference, got[name])
    assert set(failed) == {todo}, failed
    assert all(got[name][k]["kind"] != "todo" for k in got[name])


@pytest.mark.parametrize("name", list(mutants_s08.EQUIVALENT))
def test_s08_equivalent_answer_passes(graded, name):
    reference, got = graded
    assert failed_todos(reference, got[f"ok/{name}"]) == {}

"""The persistent store of trusted material (autograder.grading.trusted_store): what its key covers,
that entries round-trip exactly, that it trusts only private, well-formed entries, and that grading
with it gives the same report byte for byte as grading without it."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.core import layout
from autograder.core.spec import load_stage
from autograder.grading import staging, trusted, trusted_store
from autograder.grading.leaks import LeakGuard
from tests.conftest import ROOT
from tests.mutants_s01 import MUTANTS
from tests.support.machine import scaled
from tests.support.variants import variant_notebook


@pytest.fixture
def store_dir(tmp_path, monkeypatch):
    """A store of this test's own (the suite's shared one stays untouched)."""
    folder = tmp_path / "store"
    monkeypatch.setenv(trusted_store.CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def course_copy(tmp_path, monkeypatch):
    """The key computed over copies of stage 1's reference and hidden checks, which the test may edit."""
    files = layout.stage_files("s01")
    copies = []
    for p in (files.reference, files.hidden):
        copy = tmp_path / "course" / layout.rel(p)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, copy)
        copies.append(copy)
    monkeypatch.setattr(trusted_store, "course_files", lambda: copies)
    monkeypatch.setattr(trusted_store, "_digests", {})
    return copies


def _key_now(stage) -> str:
    trusted_store._digests.clear()  # the per-process digest: files are read again
    return trusted_store.key("expected", stage)


def _flip_one_byte(path) -> None:
    data = bytearray(path.read_bytes())
    i = data.index(b"return")
    data[i] = ord("R")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("which", ["reference", "hidden"])
def test_changing_one_byte_of_the_reference_or_hidden_checks_changes_the_key(course_copy, which):
    stage = load_stage("s01")
    before = _key_now(stage)
    assert _key_now(stage) == before  # deterministic
    _flip_one_byte(course_copy[0 if which == "reference" else 1])
    assert _key_now(stage) != before


def test_the_key_covers_every_file_a_stage_is_graded_from():
    """Each stage's spec, text, reference, hidden checks, instructor and learner notebooks, public
    expected values, visible given modules; the kernels, the data, the runtime that runs probes."""
    covered = set(trusted_store.course_files())
    for sid in layout.built_stages():
        f = layout.stage_files(sid)
        needed = [f.spec, f.text, f.reference, f.hidden, f.expected, *layout.visible_modules(sid).values(),
                  *(p for lang in f.languages for p in (f.instructor(lang), f.learner(lang)))]
        assert not [layout.rel(p) for p in needed if p.exists() and p not in covered]
    from autograder.checks import common
    from autograder.child import probe
    from autograder.core import data
    runtime = [Path(m.__file__) for m in (probe, data, common)] + [layout.COURSE_TOML]
    assert all(p in covered for p in runtime)
    assert all(p in covered for p in layout.KERNELS.rglob("*.py") if "__pycache__" not in p.parts)
    assert all(p in covered for p in layout.DATA.iterdir() if p.is_file())
    assert all(p in covered for p in layout.course_modules().values())


def test_the_key_covers_the_environment_language_and_the_stages_checks(monkeypatch):
    from autograder.core import i18n

    # language() prefers a language set in this process over PCW_LANG: start from none set (restored after)
    monkeypatch.setattr(i18n, "_current", None)
    monkeypatch.delenv("PCW_LANG", raising=False)
    stage = load_stage("s01")
    base = trusted_store.key("expected", stage, base="b")
    assert trusted_store.key("expected", stage, base="c") != base          # course files, interpreter, packages
    assert trusted_store.key("leak-guard", stage, base="b") != base         # another kind
    assert trusted_store.key("expected", load_stage("s01", hidden=False), base="b") != base  # other checks
    monkeypatch.setenv("PCW_LANG", "zh")                                     # messages in another language
    assert trusted_store.key("expected", stage, base="b") != base
    env = trusted_store.environment()
    assert sys.version in env["python"] and env["packages"] and any(n.startswith("numpy-") for n in env["packages"])
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert trusted_store.environment()["env"]["OMP_NUM_THREADS"] == "3"


def test_an_entry_reads_back_exactly_and_a_value_that_would_not_is_not_stored(store_dir):
    stage = load_stage("s01")
    value = {"a": {"kind": "ok", "value": [0.1, -0.0, 1e308, 5e-324, 2**70, True, 1, None, "ü\ud800",
                                           {"__float__": "nan"}, {"__set__": [1, 2]}]}}
    assert trusted_store.store("expected", stage, "k1", value)
    back = trusted_store.load("expected", stage, "k1")
    assert trusted_store.same(back, value) and json.dumps(back) == json.dumps(value)
    assert trusted_store.load("expected", stage, "other") is None
    for bad in ({"a": (1, 2)}, {1: "int key"}, {"a": float("nan")}, {"a": object()}):
        assert not trusted_store.store("expected", stage, "k2", bad)
    assert trusted_store.load("expected", stage, "k2") is None
    assert not trusted_store.same(0.0, -0.0) and not trusted_store.same(1, True) and not trusted_store.same(1, 1.0)


def test_the_folder_is_private_and_untrusted_or_corrupt_entries_are_recomputed(store_dir):
    stage = load_stage("s01")
    calls = []

    def compute():
        calls.append(1)
        return {"value": len(calls)}

    assert trusted_store.cached("expected", stage, compute) == {"value": 1}
    assert stat.S_IMODE(store_dir.stat().st_mode) == 0o700
    assert trusted_store.cached("expected", stage, compute) == {"value": 1} and len(calls) == 1  # reused
    (entry,) = store_dir.glob("s01.expected.*.json")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    entry.write_text("{ not json")                                   # corrupt: recomputed, rewritten
    assert trusted_store.cached("expected", stage, compute) == {"value": 2}
    os.chmod(entry, 0o666)                                           # others could have written it
    assert trusted_store.cached("expected", stage, compute) == {"value": 3}
    os.chmod(entry, 0o600)
    entry.write_text(entry.read_text().replace('"key":"', '"key":"x'))  # another key's content
    assert trusted_store.cached("expected", stage, compute) == {"value": 4}
    assert trusted_store.cached("expected", stage, compute, check=lambda v: False) == {"value": 5}  # rejected shape
    assert not list(store_dir.glob(".*.tmp"))                        # no temporary file left behind


def test_staged_byte_code_is_kept_for_the_next_process_and_used_only_when_it_fits(store_dir, tmp_path, monkeypatch):
    """A second grading process stages the runtime from the stored byte code without compiling; an
    entry that is damaged, of other source, or not private is never used: the module is compiled."""
    import importlib.util
    import py_compile

    from autograder.isolation import childfs

    sources = {"a.py": "X = 1\n", "pkg/b.py": "def f():\n    return 2\n"}
    for rel, text in sources.items():
        (tmp_path / "modules" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "modules" / rel).write_text(text)
    files = {rel: tmp_path / "modules" / rel for rel in sources}
    cache = trusted_store.StoredBytecode()
    monkeypatch.setattr(childfs, "_compiled", {})
    first = childfs.stage_tree(tmp_path / "one", files, cache=cache)
    entries = sorted(store_dir.glob("bytecode.*.pyc"))
    assert len(entries) == 2 and all(stat.S_IMODE(e.stat().st_mode) == 0o600 for e in entries)

    def pyc(tree, rel):
        return Path(importlib.util.cache_from_source(str(tree / rel))).read_bytes()

    compiled = []
    real_compile = py_compile.compile
    monkeypatch.setattr(py_compile, "compile", lambda *a, **k: compiled.append(a[0]) or real_compile(*a, **k))
    monkeypatch.setattr(childfs, "_compiled", {})  # a new process: nothing compiled in memory
    second = childfs.stage_tree(tmp_path / "two", files, cache=cache)
    assert compiled == [] and all(pyc(first, rel) == pyc(second, rel) for rel in sources)

    by_source = {e: e.read_bytes() for e in entries}
    a_entry = next(e for e, code in by_source.items() if code == pyc(first, "a.py"))
    b_code = pyc(first, "pkg/b.py")
    for damage in (lambda: a_entry.write_bytes(b"garbage"),                 # not a pyc
                   lambda: a_entry.write_bytes(b_code),                     # another module's code
                   lambda: os.chmod(a_entry, 0o666)):                       # others could have written it
        a_entry.write_bytes(by_source[a_entry])
        os.chmod(a_entry, 0o600)
        damage()
        compiled.clear()
        monkeypatch.setattr(childfs, "_compiled", {})
        again = childfs.stage_tree(tmp_path / f"t{len(list(tmp_path.iterdir()))}", files, cache=cache)
        assert [Path(c).name for c in compiled] == ["a.py"]
        assert childfs._fits(pyc(again, "a.py"), sources["a.py"].encode())  # compiled anew, for its source
    assert not list(store_dir.glob(".*.tmp"))


def test_off_computes_every_time_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(trusted_store.CACHE_ENV, "off")
    assert trusted_store.cache_dir() is None
    calls = []
    stage = load_stage("s01")
    for _ in range(2):
        trusted_store.cached("expected", stage, lambda: calls.append(1) or {"n": len(calls)})
    assert len(calls) == 2
    assert str(tmp_path) not in " ".join(staging.always_hidden())


def test_default_location_and_that_no_child_may_see_it(tmp_path, monkeypatch):
    monkeypatch.delenv(trusted_store.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert trusted_store.cache_dir() == tmp_path / "xdg" / "pcw-grader"
    assert str(tmp_path / "xdg" / "pcw-grader") in staging.always_hidden()


def test_stored_expected_outcomes_and_leak_guard_equal_computed_ones(store_dir):
    stage = load_stage("s01")
    saved = dict(trusted._expected), dict(trusted._guards)
    try:
        trusted._expected.pop("s01", None), trusted._guards.pop("s01", None)
        computed = trusted.expected_outcomes(stage)
        guard = trusted.leak_guard(stage)
        assert len(list(store_dir.glob("s01.*.json"))) == 2
        trusted._expected.pop("s01"), trusted._guards.pop("s01")
        assert trusted_store.same(trusted.expected_outcomes(stage), computed)
        read = trusted.leak_guard(stage)
        assert (read.secret, read.public_words, read.shifted) == (guard.secret, guard.public_words, guard.shifted)
        fresh = LeakGuard.from_state(trusted._learn_guard(stage).state())
        assert fresh.secret == guard.secret and fresh.shifted == guard.shifted
    finally:
        trusted._expected.clear(), trusted._guards.clear()
        trusted._expected.update(saved[0]), trusted._guards.update(saved[1])


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_a_report_is_the_same_byte_for_byte_with_a_cold_a_warm_and_no_store(tmp_path):
    """A wrong answer (its report shows expected values) graded three times by the command line."""
    _, edits = MUTANTS["s01.match_prefix/off_by_one"]
    nb = tmp_path / layout.stage_files("s01").learner().name
    nbformat.write(variant_notebook("s01", edits), str(nb))
    store = tmp_path / "store"

    def grade(cache: str) -> str:
        env = {**os.environ, trusted_store.CACHE_ENV: cache}
        p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(nb), "--format", "json", "--no-progress"],
                           cwd=ROOT, capture_output=True, text=True, timeout=scaled(300), env=env)
        assert p.returncode == 0, p.stderr
        return p.stdout

    cold = grade(str(store))
    assert len(list(store.glob("s01.*.json"))) == 2
    warm = grade(str(store))
    assert cold == warm == grade("off")
    assert "expected" in cold and '"passed": false' in cold

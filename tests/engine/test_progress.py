"""A learner's progress record: check() keeps it in the working folder, progress() and
``python -m autograder progress`` show exactly the states of the last checks, a fresh folder shows
nothing done, and a folder where nothing can be written never fails a check()."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.core import layout
from autograder.core.i18n import set_language
from autograder.core.spec import load_stage
from autograder.learner import standing
from tests.conftest import ROOT
from tests.mutants_s01 import MUTANTS as M1
from tests.mutants_s02 import MUTANTS as M2
from tests.support.machine import scaled
from tests.support.variants import apply_edits


def namespace(stage_id: str, edits: list[tuple[str, str]] = ()) -> dict:
    """A notebook's globals: the reference module of the stage, optionally with a wrong answer."""
    ns: dict = {"__name__": "notebook"}
    exec(compile(apply_edits(layout.stage_files(stage_id).reference.read_text(encoding="utf-8"), list(edits)),
                 "<notebook>", "exec"), ns)
    return ns


def run_checks(folder: Path, calls: list[tuple[str, dict]]) -> str:
    """``check(todo)`` as a notebook cell calls it, in ``folder``; returns what it printed."""
    from autograder import check

    out = io.StringIO()
    old = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out):
            for todo, ns in calls:
                exec(f"check({todo!r})", {**ns, "check": check})
    finally:
        os.chdir(old)
    return out.getvalue()


@pytest.fixture(autouse=True)
def english():
    set_language("en")
    yield
    set_language("en")


def test_a_fresh_folder_reports_nothing_done(tmp_path):
    text = standing.render(tmp_path, "en")
    total = sum(len(load_stage(s, hidden=False).todos) for s in layout.built_stages())
    assert f" 0/{total} TODOs" in text and "Nothing checked yet" in text
    assert "✅" not in text and "❌" not in text and "⏳" not in text
    assert not (tmp_path / standing.RECORD).exists()


def test_progress_reports_exactly_the_last_checks_in_two_stages(tmp_path):
    wrong_match = next(v[1] for k, v in M1.items() if k.startswith("s01.match_prefix/"))
    wrong_split = next(v[1] for k, v in M2.items() if k.startswith("s02.split_blocks/"))
    good1, bad1, good2, bad2 = namespace("s01"), namespace("s01", wrong_match), namespace("s02"), namespace("s02", wrong_split)
    run_checks(tmp_path, [("s01.normalize", good1), ("s01.match_prefix", good1), ("s01.match_prefix", bad1),
                          ("s02.split_blocks", bad2), ("s02.hash_block", good2)])
    record = json.loads((tmp_path / standing.RECORD).read_text())["todos"]
    assert {k: v["state"] for k, v in record.items()} == {
        "s01.normalize": "passed", "s01.match_prefix": "failed", "s02.split_blocks": "failed", "s02.hash_block": "passed"}
    from autograder import progress

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        progress(tmp_path)
    text = out.getvalue()
    line = {todo: next(ln for ln in text.splitlines() if f" {todo} " in ln) for todo in
            ("s01.normalize", "s01.match_prefix", "s01.add_prefix", "s02.split_blocks", "s02.hash_block")}
    assert line["s01.normalize"].lstrip().startswith("✅") and "visible checks pass" in line["s01.normalize"]
    assert line["s01.match_prefix"].lstrip().startswith("❌")  # the last check counts, not the first
    assert line["s01.add_prefix"].lstrip().startswith("·") and "not checked yet" in line["s01.add_prefix"]
    assert line["s02.split_blocks"].lstrip().startswith("❌") and line["s02.hash_block"].lstrip().startswith("✅")
    assert text.count("✅") == 2 and text.count("❌") == 2
    assert "not started: s03." in text  # a stage never checked: one line
    s1, s2 = load_stage("s01", hidden=False), load_stage("s02", hidden=False)
    pts = s1.todo("s01.normalize").points + s2.todo("s02.hash_block").points
    assert f" 2/{sum(len(load_stage(s, hidden=False).todos) for s in layout.built_stages())} TODOs · {pts}/" in text
    # the command line, in the language of the last check(): the same states
    p = subprocess.run([sys.executable, "-m", "autograder", "progress", str(tmp_path), "--lang", "zh"], cwd=ROOT,
                       capture_output=True, text=True, timeout=scaled(120))
    assert p.returncode == 0 and p.stdout.count("✅") == 2 and p.stdout.count("❌") == 2 and "你的进度" in p.stdout


def test_not_implemented_is_its_own_state(tmp_path):
    stub = namespace("s01")
    manager = stub["PrefixCacheManager"]

    class Stub(manager):
        def _normalize(self, tokens):
            raise NotImplementedError()
    run_checks(tmp_path, [("s01.normalize", {**stub, "PrefixCacheManager": Stub})])
    assert standing.read(tmp_path)["s01.normalize"].state == "not_implemented"
    assert "⏳ TODO 1 s01.normalize" in standing.render(tmp_path, "en")


def test_a_read_only_folder_never_fails_a_check(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):  # root writes anyway: make the record's place unwritable instead
            (folder / standing.RECORD).mkdir()
        printed = run_checks(folder, [("s01.normalize", namespace("s01"))])
        assert "✅" in printed
        assert standing.read(folder) == {}
        assert not [p for p in folder.iterdir() if p.name.startswith(".pcw_progress.") and p.name != standing.RECORD]
    finally:
        folder.chmod(0o755)


def test_grading_children_and_nbgrader_keep_no_record(tmp_path, monkeypatch):
    monkeypatch.setenv("PCW_GRADING", "1")
    assert standing.remember("s01.normalize", "passed", 3, 3, tmp_path) is False
    assert not (tmp_path / standing.RECORD).exists()


# -- the record is untrusted input: anyone who can write the folder chooses what it holds (issue 44) --

HOSTILE = "\x07\x1b]52;c;cGN3Cg==\x07\x1b[2J\u202e\x9b31m\x00"  # BEL, OSC 52 (clipboard), ESC, RLO, C1 CSI, NUL
FINE = {"state": "passed", "passed": 3, "checks": 3, "at": "2026-01-02 03:04"}


def _progress_cli(folder: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m autograder progress FOLDER``; a run that does not finish (blocked on a FIFO: no CPU
    spent, so no slow machine explains it) fails the test instead of hanging the suite."""
    try:
        return subprocess.run([sys.executable, "-m", "autograder", "progress", str(folder), "--lang", "en"], cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`progress {folder.name}` did not finish in {timeout:.0f} s: it blocked on the record")


def _printable(out: str) -> bool:
    from autograder.core.safetext import BIDI

    return all(ch == "\n" or (ch.isprintable() and ch not in BIDI) for ch in out)


def test_control_characters_in_the_record_never_reach_the_terminal(tmp_path):
    folder = tmp_path / f"class{HOSTILE.rstrip(chr(0))}"  # a name can hold anything but NUL and "/"
    folder.mkdir()
    (folder / standing.RECORD).write_text(json.dumps({"version": 1, "lang": HOSTILE, "todos": {
        "s01.normalize": {**FINE, "at": HOSTILE},                  # a date that is a terminal escape
        f"s01.add_prefix{HOSTILE}": FINE,                          # a name that is one
        "s01.match_prefix": {**FINE, "state": HOSTILE},
        "s01.split_prompt": FINE,
        HOSTILE: {HOSTILE: HOSTILE},
    }, HOSTILE: HOSTILE}, ensure_ascii=False), encoding="utf-8")
    p = _progress_cli(folder)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert _printable(p.stdout), ascii(p.stdout)
    line = {t: next(ln for ln in p.stdout.splitlines() if f" {t} " in ln) for t in ("s01.normalize", "s01.split_prompt")}
    assert line["s01.split_prompt"].lstrip().startswith("✅") and "(2026-01-02 03:04)" in line["s01.split_prompt"]
    assert line["s01.normalize"].lstrip().startswith("·")    # its entry was ignored, never shown in part
    assert p.stdout.count("✅") == 1
    assert "6 part(s) of the progress record are not in the form check() writes and were ignored " \
           "(the language, 4 TODO entries, 1 other fields)" in p.stdout
    assert "\\x1b" in p.stdout.splitlines()[0]  # the folder's own name, escaped in the header


@pytest.mark.parametrize("todos", [["s01.normalize", FINE], "s01.normalize", 7, None, True])
def test_todos_of_the_wrong_type_are_ignored_with_a_note(tmp_path, todos):
    (tmp_path / standing.RECORD).write_text(json.dumps({"version": 1, "lang": "en", "todos": todos}))
    from autograder import progress

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        progress(tmp_path)  # in a notebook: once an AttributeError
    assert "were ignored (the TODO table)" in out.getvalue() and "✅" not in out.getvalue()
    p = _progress_cli(tmp_path)
    assert p.returncode == 0 and "were ignored (the TODO table)" in p.stdout, p.stderr


@pytest.mark.parametrize("body,why", [
    (b"[" * 100_000, "it is larger than 64 KiB"),
    (b"[" * 60_000, "it is not JSON"),                 # nested too deep for the parser: no RecursionError
    (b"\xff\xfe{}", "it is not JSON"),
    (b'["s01.normalize"]', "it is not a JSON object"),
    (b'{"version": 2, "todos": {}}', "it is not version 1"),
    (json.dumps({"version": 1, "todos": {"s01.normalize": {**FINE, "passed": 4}}}).encode(),
     None),  # more checks passed than run: the entry is ignored, the rest is read
])
def test_a_record_that_is_not_what_check_writes_is_never_a_crash(tmp_path, body, why):
    (tmp_path / standing.RECORD).write_bytes(body)
    text = standing.render(tmp_path, "en")
    assert _printable(text) and "✅" not in text
    if why:
        assert f"the progress record was not read ({why}" in text
    else:
        assert "1 part(s)" in text and "1 TODO entries" in text


def test_a_record_that_is_a_link_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"version": 1, "todos": {"s01.normalize": FINE}}))
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / standing.RECORD).symlink_to(elsewhere)
    assert standing.read(folder) == {}
    assert "not read (it is a symbolic link)" in standing.render(folder, "en")


CHECK_IN = """
import os, sys
sys.path.insert(0, os.getcwd())  # this checkout's course, before the working folder changes
from autograder.core import layout
from autograder import check
os.chdir(sys.argv[1])
ns = {"__name__": "notebook"}
exec(compile(layout.stage_files("s01").reference.read_text(encoding="utf-8"), "<notebook>", "exec"), ns)
exec("check('s01.normalize')", {**ns, "check": check})
"""


def test_a_fifo_named_like_the_record_blocks_neither_progress_nor_check(tmp_path):
    """Opening a FIFO for reading waits for a writer: progress and the learner's own check() once
    blocked forever. Each runs in a process of its own, so that a block fails the test, not the suite."""
    os.mkfifo(tmp_path / standing.RECORD)
    p = _progress_cli(tmp_path)
    assert p.returncode == 0 and "not read (it is not a regular file)" in p.stdout, p.stderr
    try:
        c = subprocess.run([sys.executable, "-c", CHECK_IN, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                           timeout=scaled(180), env={**os.environ, "PCW_LANG": "en"})
    except subprocess.TimeoutExpired:
        pytest.fail("check() did not finish in 180 s: it blocked on the FIFO")
    assert c.returncode == 0 and "✅" in c.stdout, c.stdout + c.stderr
    # the FIFO's name now holds the record check() wrote: a regular file, never the FIFO opened
    assert (tmp_path / standing.RECORD).is_file() and standing.read(tmp_path)["s01.normalize"].state == "passed"


def test_check_replaces_a_link_named_like_the_record_and_leaves_its_target_alone(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / standing.RECORD).symlink_to(victim)
    run_checks(folder, [("s01.normalize", namespace("s01"))])
    assert victim.read_text() == "untouched"
    assert not (folder / standing.RECORD).is_symlink() and standing.read(folder)["s01.normalize"].state == "passed"

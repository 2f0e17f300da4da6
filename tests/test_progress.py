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
from autograder.learner import standing
from autograder.core.i18n import set_language
from autograder.core.spec import load_stage
from tests.support.variants import apply_edits
from tests.conftest import ROOT
from tests.mutants_s01 import MUTANTS as M1
from tests.mutants_s02 import MUTANTS as M2


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
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.count("✅") == 2 and p.stdout.count("❌") == 2 and "你的进度" in p.stdout


def test_not_implemented_is_its_own_state(tmp_path):
    stub = namespace("s01")
    manager = stub["PrefixCacheManager"]

    class Stub(manager):
        def _normalize(self, tokens):
            raise NotImplementedError()
    run_checks(tmp_path, [("s01.normalize", {**stub, "PrefixCacheManager": Stub})])
    assert standing.read(tmp_path)["s01.normalize"]["state"] == "not_implemented"
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

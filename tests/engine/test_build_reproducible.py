"""One build, the same bytes on every machine: hash seed, torch thread count and the last bits of float
arithmetic change nothing the build writes, and every notebook records the build id its runtime computes."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.authoring import build
from autograder.core import layout
from autograder.core.spec import load_stage
from autograder.learner.runtime import stage_build_id, start
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: builds every notebook

# Builds everything in memory in a fresh process and prints, as JSON, the sha256 of each generated
# file and of the expected values computed from scratch (as if no expected file were committed).
_BUILD_IN_A_FRESH_PROCESS = """
import hashlib, json, sys
import torch
torch.set_num_threads(int(sys.argv[1]))
from autograder.authoring import build
from autograder.core import layout
from autograder.core.spec import load_stage
files = {layout.rel(p): hashlib.sha256(c.encode()).hexdigest() for p, c in build.generated_files().items()}
fresh = {s: hashlib.sha256(json.dumps(build.expected_values(load_stage(s, hidden=False)), sort_keys=True).encode()).hexdigest()
         for s in ("s03", "s06")}
print(json.dumps({"files": files, "fresh": fresh, "threads": torch.get_num_threads()}))
"""


def _build_in_fresh_process(hash_seed: str, threads: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed, OMP_NUM_THREADS=str(threads))
    return subprocess.Popen([sys.executable, "-c", _BUILD_IN_A_FRESH_PROCESS, str(threads)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_build_gives_the_same_bytes_under_other_hash_seeds_and_thread_counts():
    runs = [_build_in_fresh_process("0", 1), _build_in_fresh_process("4242", 2)]
    results = []
    for p in runs:
        out, err = p.communicate(timeout=scaled(600))
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.splitlines()[-1]))
    assert [r["threads"] for r in results] == [1, 2]
    one, two = results
    assert one["files"] == two["files"], sorted(k for k in one["files"] if one["files"][k] != two["files"].get(k))
    # from scratch too, not only thanks to the committed expected files
    assert one["fresh"] == two["fresh"]
    on_disk = {layout.rel(p): hashlib.sha256(p.read_text(encoding="utf-8").encode()).hexdigest()
               for p in map(ROOT.joinpath, one["files"])}
    assert on_disk == one["files"], "regenerate with `python -m autograder build`"


def _recorded_build_ids(nb: Path) -> set[str]:
    body = json.loads(nb.read_text(encoding="utf-8"))
    first = "".join(next(c for c in body["cells"] if c["cell_type"] == "code")["source"])
    return {first.split('build="', 1)[1].split('"', 1)[0], body["metadata"]["pcw"]["build"]}


@pytest.mark.parametrize("stage_id", [f.id for f in layout.all_stages() if f.is_complete])
def test_every_notebook_records_the_build_id_its_runtime_computes(stage_id):
    files = layout.stage_files(stage_id)
    mine = stage_build_id(stage_id)
    for lang in files.languages:
        for nb in (files.learner(lang), files.instructor(lang)):
            assert _recorded_build_ids(nb) == {mine}, f"{layout.rel(nb)} records another build than the runtime's"


def _expected_with(path: Path, stage_id: str, change) -> dict:
    fresh = json.loads(layout.stage_files(stage_id).expected.read_text(encoding="utf-8"))
    change(fresh)
    path.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return json.loads(layout.stage_files(stage_id).expected.read_text(encoding="utf-8"))


def _first_float(x, path=()):
    if isinstance(x, float):
        return path
    items = enumerate(x) if isinstance(x, list) else x.items() if isinstance(x, dict) else ()
    for k, v in items:
        found = _first_float(v, (*path, k))
        if found is not None:
            return found
    return None


def _nudge(tree, path, by):
    *head, last = path
    for k in head:
        tree = tree[k]
    tree[last] += by


def test_float_policy_keeps_committed_floats_within_the_checks_tolerance_only(tmp_path):
    stage = load_stage("s06", hidden=False)
    committed = tmp_path / "s06.json"
    fresh = json.loads(layout.stage_files("s06").expected.read_text(encoding="utf-8"))
    key = next(c.key for c in stage.checks if not c.hidden and c.atol and _first_float(fresh["checks"][c.key]))
    atol = next(c.atol for c in stage.checks if c.key == key)
    where = ("checks", key, *_first_float(fresh["checks"][key]))

    _expected_with(committed, "s06", lambda d: _nudge(d, where, atol / 2))
    assert build._keep_committed(committed, stage, fresh), "a difference the check cannot see keeps the committed bytes"
    _expected_with(committed, "s06", lambda d: _nudge(d, where, atol * 3))
    assert not build._keep_committed(committed, stage, fresh), "a difference the check would see is a real change"

    exact = next(c.key for c in stage.checks if not c.hidden and c.atol is None)
    _expected_with(committed, "s06", lambda d: d["checks"][exact].update(kind="raised"))
    assert not build._keep_committed(committed, stage, fresh), "anything but a float must be identical"


def test_dict_order_does_not_change_the_build_id():
    checks = json.loads(layout.stage_files("s03").expected.read_text(encoding="utf-8"))["checks"]
    flipped = json.loads(json.dumps(checks))
    for outcome in flipped.values():
        if outcome.get("kind") == "ok" and isinstance(outcome["value"], dict) and "__dict__" in outcome["value"]:
            outcome["value"]["__dict__"].reverse()
    assert flipped != checks
    assert stage_build_id("s03", flipped) == stage_build_id("s03", checks)


def test_a_stale_runtime_names_every_source_to_update_from(capsys):
    found = start("s01", "000000000000", "en", ["%pip install MAIN", "%pip install MIRROR"])
    out = capsys.readouterr().out
    assert found["stale"] and "%pip install MAIN" in out and "or, from a mirror: %pip install MIRROR" in out
    start("s01", "000000000000", "zh", ["%pip install MAIN", "%pip install MIRROR"])
    assert "或者从镜像更新：%pip install MIRROR" in capsys.readouterr().out
    start("s01", "000000000000", "en", "%pip install MAIN")  # notebooks built before mirrors were listed
    assert "%pip install MAIN" in capsys.readouterr().out

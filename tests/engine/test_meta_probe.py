"""The stage-6 device probes on ``meta`` skip the ``torch._dynamo`` import and change nothing else.

The cases run in one fresh interpreter (a test worker may have imported ``torch._dynamo`` already; one
interpreter imports torch once for all of them), in the order below: those that need ``torch._dynamo``
not imported come first, and each case's failure is its own test's.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autograder.core import layout
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: imports torch in fresh subprocesses

PRELUDE = """
import json, sys
import torch
from autograder.checks import meta
from autograder.child.probe import run_probe
from autograder.core.spec import load_stage

stage = load_stage("s06", hidden=True)
probes = [c for c in stage.checks if hasattr(c.probe, "__wrapped__")]
ref = __import__("solutions.s06_paged_prefill", fromlist=["_"])

def marks():
    return sum(fn.__dict__.get(meta._MARK) is fn for fn in meta._dynamo_wrapped_kernels())
"""


# Each case ends by setting ``result``; run in this order, in one interpreter (see the module docstring).
NO_DYNAMO = """
outcomes = {c.key: run_probe(c, ref) for c in probes}
result = {"keys": sorted(outcomes), "outcomes": outcomes, "dynamo": "torch._dynamo" in sys.modules,
          "kernels": len(meta._dynamo_wrapped_kernels()), "marks_left": marks()}
"""
SAME_AS_UNWRAPPED = """
import dataclasses, types
cpu = types.SimpleNamespace(**vars(ref))
cpu.suffix_positions = lambda start, end, device=None: torch.arange(start, end)
cpu.slot_mapping = lambda table, positions, block_size: torch.tensor(
    [0] * len(positions), dtype=torch.long)
cpu.paged_attention = lambda q, pool, layer, table, offset: torch.tensor(q.tolist())
impls = {"reference": ref, "host": cpu}
wrapped = {n: {c.key: run_probe(c, impl) for c in probes} for n, impl in impls.items()}
assert "torch._dynamo" not in sys.modules
plain = {n: {c.key: run_probe(dataclasses.replace(c, probe=c.probe.__wrapped__), impl) for c in probes}
         for n, impl in impls.items()}
result = {"wrapped": wrapped, "plain": plain, "dynamo": "torch._dynamo" in sys.modules}
"""
MARKS_KEPT = """
import torch._dynamo
torch.arange(4, device="meta") + 1  # torch caches its own wrappers on some kernels
own = {id(fn): fn.__dict__[meta._MARK] for fn in meta._dynamo_wrapped_kernels() if meta._MARK in fn.__dict__}

@meta.meta_probe
def boom(impl):
    assert marks() > 0
    raise ValueError("learner code raised")

try:
    boom(None)
except ValueError:
    pass
kept = {id(fn): fn.__dict__[meta._MARK] for fn in meta._dynamo_wrapped_kernels() if meta._MARK in fn.__dict__}
result = {"own": len(own), "kept": kept == own, "marks_left": marks()}
"""
CASES = {"no_dynamo": NO_DYNAMO, "same_as_unwrapped": SAME_AS_UNWRAPPED, "marks_kept": MARKS_KEPT}
RUNNER = """
import traceback
results = {}
for name, body in CASES.items():
    globals().pop("result", None)  # each case's own, never the one before
    try:
        exec(body, globals())
        results[name] = {"result": result}
    except BaseException:
        results[name] = {"error": traceback.format_exc()[-3000:]}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def ran() -> dict:
    """Every case's result (or its traceback), from one interpreter."""
    code = PRELUDE + f"CASES = {CASES!r}\n" + RUNNER
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=layout.ROOT, timeout=scaled(300))
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _case(ran: dict, name: str) -> dict:
    assert "error" not in ran[name], ran[name]["error"]
    return ran[name]["result"]


def test_meta_probes_run_without_importing_dynamo_and_leave_torch_as_it_was(ran):
    out = _case(ran, "no_dynamo")
    # every probe on meta is wrapped: the four public device checks and the hidden one
    assert out["keys"] == sorted(["s06.suffix_positions:created_on_the_device", "s06.slot_mapping:stays_on_the_device",
                                  "s06.paged_attention:helpers_on_q_device", "s06.prefill:tensors_on_the_engine_device",
                                  "s06.paged_attention:hidden:meta_tensor_table"])
    assert all(o["kind"] == "ok" and "meta" in json.dumps(o["value"]) for o in out["outcomes"].values()), out
    assert not out["dynamo"], "a meta probe imported torch._dynamo"
    assert out["kernels"] > 50 and out["marks_left"] == 0, out


def test_meta_probes_give_the_outcome_of_the_unwrapped_probe_right_or_wrong(ran):
    """The same outcomes as the probe without the marks (torch._dynamo imported as torch would), for the
    reference and for answers that put a tensor on the host device or copy one to the host."""
    out = _case(ran, "same_as_unwrapped")
    assert out["dynamo"], "the unwrapped probes import torch._dynamo, as torch does"
    assert out["wrapped"] == out["plain"]
    host = out["wrapped"]["host"]
    assert '"cpu"' in json.dumps(host["s06.suffix_positions:created_on_the_device"])
    assert host["s06.paged_attention:helpers_on_q_device"]["kind"] == "raised"


def test_meta_probe_keeps_the_marks_torch_set_and_clears_its_own_when_the_probe_raises(ran):
    out = _case(ran, "marks_kept")
    assert out["own"] > 0 and out["kept"] and out["marks_left"] == 0, out

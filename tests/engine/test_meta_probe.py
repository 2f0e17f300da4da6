"""The stage-6 device probes on ``meta`` skip the ``torch._dynamo`` import and change nothing else.

Each case runs in a fresh interpreter: a test worker may have imported ``torch._dynamo`` already.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

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


def _run(body: str) -> dict:
    code = PRELUDE + textwrap.dedent(body)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=layout.ROOT, timeout=scaled(300))
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_meta_probes_run_without_importing_dynamo_and_leave_torch_as_it_was():
    out = _run("""
        outcomes = {c.key: run_probe(c, ref) for c in probes}
        print(json.dumps({"keys": sorted(outcomes), "outcomes": outcomes, "dynamo": "torch._dynamo" in sys.modules,
                          "kernels": len(meta._dynamo_wrapped_kernels()), "marks_left": marks()}))
    """)
    # every probe on meta is wrapped: the four public device checks and the hidden one
    assert out["keys"] == sorted(["s06.suffix_positions:created_on_the_device", "s06.slot_mapping:stays_on_the_device",
                                  "s06.paged_attention:helpers_on_q_device", "s06.prefill:tensors_on_the_engine_device",
                                  "s06.paged_attention:hidden:meta_tensor_table"])
    assert all(o["kind"] == "ok" and "meta" in json.dumps(o["value"]) for o in out["outcomes"].values()), out
    assert not out["dynamo"], "a meta probe imported torch._dynamo"
    assert out["kernels"] > 50 and out["marks_left"] == 0, out


def test_meta_probes_give_the_outcome_of_the_unwrapped_probe_right_or_wrong():
    """The same outcomes as the probe without the marks (torch._dynamo imported as torch would), for the
    reference and for answers that put a tensor on the host device or copy one to the host."""
    out = _run("""
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
        print(json.dumps({"wrapped": wrapped, "plain": plain, "dynamo": "torch._dynamo" in sys.modules}))
    """)
    assert out["dynamo"], "the unwrapped probes import torch._dynamo, as torch does"
    assert out["wrapped"] == out["plain"]
    host = out["wrapped"]["host"]
    assert '"cpu"' in json.dumps(host["s06.suffix_positions:created_on_the_device"])
    assert host["s06.paged_attention:helpers_on_q_device"]["kind"] == "raised"


def test_meta_probe_keeps_the_marks_torch_set_and_clears_its_own_when_the_probe_raises():
    out = _run("""
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
        print(json.dumps({"own": len(own), "kept": kept == own, "marks_left": marks()}))
    """)
    assert out["own"] > 0 and out["kept"] and out["marks_left"] == 0, out

"""Smoke tests of the benchmark scripts: ``--quick`` runs them tiny, on CPU, in seconds."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.machine import scaled

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # the fast lane leaves it out: runs each benchmark script in a subprocess


def run_script(name: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=scaled(180))


def test_kernels_gpu_check_quick_runs_on_cpu_through_the_interpreter():
    proc = run_script("gpu_check.py", "--quick")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "triton interpreter: 1" in out and "[1] paged attention kernel" in out and "[2] end to end" in out
    assert "[0] fused SDPA" in out and "[3] serving loop" in out and "identical on/off: True" in out
    assert "all checks passed" in out


def test_kernels_bench_prefill_quick_reports_measured_and_predicted():
    proc = run_script("bench_prefill.py", "--quick")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["prefix", "full"])
    rows = []
    for line in lines[header + 1:]:  # the table: consecutive rows that start with a prefix length
        if not (line.split() and line.split()[0].isdigit()):
            break
        rows.append(line.split())
    assert [r[0] for r in rows] == ["32", "64"]
    for r in rows:  # prefix, full ms, cached ms, measured x, predicted x, flop-only x, full/cached pred/meas, diff
        assert r[3].endswith("x") and r[4].endswith("x") and r[5].endswith("x")
        assert float(r[6]) > 0 and float(r[7]) > 0 and float(r[8]) <= 1e-4
    assert "MISMATCH" not in proc.stdout
    assert lines[-1].startswith("calibration: worst |predicted/measured - 1| = ") and lines[-1].endswith("%")


def test_kernels_bench_serving_quick_compares_cache_on_and_off():
    proc = run_script("bench_serving.py", "--quick")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()
            if line.split() and line.split()[0] in ("shared_prefix", "multiturn", "unique", "thrashing")}
    assert set(rows) == {"shared_prefix", "multiturn", "unique", "thrashing"}
    assert all("identical" in r for r in rows.values())
    assert rows["unique"][3] == "0%" and rows["shared_prefix"][3] != "0%"
    assert "MISMATCH" not in proc.stdout

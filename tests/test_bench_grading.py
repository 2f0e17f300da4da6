"""The class-grading benchmark runs and finds the same per-TODO scores as plain nbgrader."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_bench_grading_quick_agrees_with_nbgrader():
    p = subprocess.run([sys.executable, "benchmarks/bench_grading.py", "--quick"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "per-TODO scores equal: True" in p.stdout
    assert "faster per submission than nbgrader" in p.stdout

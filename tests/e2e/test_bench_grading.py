"""The class-grading benchmark runs and finds the same per-TODO scores as plain nbgrader."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: runs the grading benchmark end to end in a subprocess


def test_bench_grading_quick_agrees_with_nbgrader():
    # one sample of each untimed overhead: this checks the comparison and what is printed, not the figures
    p = subprocess.run([sys.executable, "benchmarks/bench_grading.py", "--quick", "--samples", "1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=scaled(600))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "per-TODO scores equal: True" in p.stdout
    for line in ("CLI vs plain nbgrader:", "nbgrader autograde / CLI:",
                 "python -m autograder autograde / CLI:", "one child launched, CPU-s", "10,000 on 64:"):
        assert line in p.stdout, p.stdout
    assert ("one child forked from a fork server" in p.stdout) != ("none forked:" in p.stdout), p.stdout


def test_bench_grading_isolation_quick_reports_each_level_with_the_same_scores():
    # the quick size (2 submissions) in one round after the warm-up: the scores compared are the last
    # round's, so a second round proves nothing more here (the page's quick run keeps its two)
    p = subprocess.run([sys.executable, "benchmarks/bench_grading_isolation.py", "--rounds", "1", "-n", "2"], cwd=ROOT,
                       capture_output=True, text=True, timeout=scaled(600))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 interleaved rounds of 2 stage-1 submissions" in p.stdout, p.stdout
    assert "in-process" in p.stdout and "extra ms per TODO" in p.stdout
    assert "same scores at every level: True" in p.stdout

"""The isolation launch benchmark runs and reports every level this machine offers against plain launches."""
from __future__ import annotations

import subprocess
import sys

import pytest

from autograder.isolation import levels as isolation
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: runs the isolation benchmark in a subprocess


def test_bench_isolation_quick_reports_each_level():
    p = subprocess.run([sys.executable, "benchmarks/bench_isolation.py", "--quick"], cwd=ROOT, capture_output=True,
                       text=True, timeout=scaled(300))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "plain subprocess" in p.stdout and "ms per child" in p.stdout
    for layers in (isolation.detect().layers, ("namespaces",)):
        if layers and set(layers) <= set(isolation.detect().layers):
            assert "+".join(layers) in p.stdout

"""The timing-sensitive tests pass on a busy machine: a sample of them, run in a pytest of their own
with two CPU-bound processes beside it (a shared lab machine, a CI runner beside other jobs).

Each test in the sample once compared the clock with a fixed deadline or an order of finishing and
failed at a load of 10-14 on 2 cores; they now measure CPU time, wait for events, or scale their
deadline by the session's machine factor (tests/support/machine.py), and the grader stretches a
child's wall-clock limit with the load (autograder.grading.supervise.contention). The inner session
measures its own factor, with the spinners already running, as a session started on a busy machine does.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.support.machine import ENV, scaled

pytestmark = pytest.mark.slow  # grades notebooks and runs a pytest of its own beside two busy processes

SAMPLE = [
    "tests/engine/test_inline_check.py::test_s01_normalize_endless_loop_is_stopped",
    "tests/engine/test_inline_check.py::test_time_spent_waiting_is_not_counted_as_running_away",
    "tests/engine/test_inline_check.py::test_code_that_waits_forever_is_stopped_by_the_clock_and_told_so",
    "tests/e2e/test_nbgrader_batch.py::test_a_started_group_goes_before_a_new_one_so_groups_finish_in_order",
    "tests/engine/test_grading_child.py::test_a_child_that_only_waits_is_stopped_after_the_stretched_wall_limit",
    "tests/engine/test_cell_hangs.py::test_cell_level_hang_runs_one_child_and_does_not_hold_up_classmates",
]
SPINNERS = 2


@pytest.fixture
def spinners():
    """Two processes that keep a core each busy for as long as the test runs, killed whatever happens."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(SPINNERS)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def test_the_timing_sensitive_sample_passes_beside_two_busy_processes(spinners):
    env = {k: v for k, v in os.environ.items() if k != ENV}  # the inner session measures the busy machine
    p = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", *SAMPLE],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=scaled(900))
    assert all(s.poll() is None for s in spinners), "a spinner ended early: the run was not loaded"
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-2000:]
    assert f"{len(SAMPLE)} passed" in p.stdout, p.stdout[-2000:]

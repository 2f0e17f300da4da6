"""Grading at the speed of the hardware: nbgrader's batch graded at once (one parallel run for every
notebook nbgrader will ask for, each answered with the verdict the CLI gives that very file, a file
changed since graded anew), and as many children as the cores this process may use."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from traitlets.config import Config

from autograder.core import layout
from autograder.grading.grade import grade_paths
from autograder.integrations import nbgrader_batch
from autograder.integrations.nbgrader_batch import BatchKey, result_for, selected_submissions
from tests.support.machine import scaled

ASSIGNMENT = layout.stage_files("s01").assignment("en")
SOLVED = layout.stage_files("s01").instructor("en")
STUB = layout.stage_files("s01").learner("en")


def _course(tmp_path: Path, students: dict[str, Path]) -> tuple[Config, dict[str, Path]]:
    paths = {}
    for student, source in students.items():
        d = tmp_path / "submitted" / student / ASSIGNMENT
        d.mkdir(parents=True)
        paths[student] = d / f"{ASSIGNMENT}.ipynb"
        shutil.copyfile(source, paths[student])
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    return config, paths


def _points(result) -> dict[str, float]:
    return {t.id: t.points for t in result.todos}


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_the_first_request_grades_the_whole_batch_and_each_file_gets_its_own_verdict(tmp_path):
    config, paths = _course(tmp_path, {"ann": SOLVED, "bob": STUB, "cy": SOLVED})
    calls: list[list[Path]] = []

    def grade_many(ps, on_done=None, stop=None):
        calls.append(list(ps))
        return grade_paths(ps, on_done=on_done)

    def key(pattern: str) -> BatchKey:
        return BatchKey(pattern, "test-batch", None, None)

    first = result_for(paths["ann"], key, config, ASSIGNMENT, grade_many)
    assert calls == [[paths["ann"], paths["bob"], paths["cy"]]]  # nbgrader's order: by student
    # a file changed after the batch read it is graded again, alone, as it is now
    shutil.copyfile(STUB, paths["cy"])
    os.utime(paths["cy"], (time.time() + 5, time.time() + 5))
    second = result_for(paths["bob"], key, config, ASSIGNMENT, grade_many)
    third = result_for(paths["cy"], key, config, ASSIGNMENT, grade_many)
    assert calls[1:] == [[paths["cy"]]]
    alone = {s: grade_paths([p])[0] for s, p in paths.items()}
    assert _points(first) == _points(alone["ann"]) and first.score == first.max_score
    assert _points(second) == _points(alone["bob"]) and second.score == 0
    assert _points(third) == _points(alone["cy"]) and third.score == 0
    assert not nbgrader_batch._BATCHES  # drained: a later run in this process starts its own batch


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_a_notebook_outside_the_selection_is_graded_alone(tmp_path):
    config, paths = _course(tmp_path, {"ann": SOLVED})
    config.CourseDirectory.student_id = "nobody*"
    calls = []

    def grade_many(ps, on_done=None, stop=None):
        calls.append(list(ps))
        return grade_paths(ps, on_done=on_done)

    result = result_for(paths["ann"], lambda p: BatchKey(p, "t", None, None), config, ASSIGNMENT, grade_many)
    assert calls == [[Path(os.path.abspath(paths["ann"]))]] and result.score == result.max_score


def test_selection_follows_nbgrader_students_and_skips_what_it_will_skip(tmp_path):
    config, paths = _course(tmp_path, {"ann": STUB, "bob": STUB, "zed": STUB})
    config.CourseDirectory.student_id = "[ab]*"
    _, chosen = selected_submissions(config, ASSIGNMENT)
    assert chosen == [paths["ann"], paths["bob"]]
    # bob is already autograded, from a submission no newer: nbgrader skips him unless --force
    done = tmp_path / "autograded" / "bob" / ASSIGNMENT
    done.mkdir(parents=True)
    shutil.copyfile(STUB, done / f"{ASSIGNMENT}.ipynb")
    (done / "timestamp.txt").write_text("2026-01-02 00:00:00")
    (paths["bob"].parent / "timestamp.txt").write_text("2026-01-01 00:00:00")
    assert selected_submissions(config, ASSIGNMENT)[1] == [paths["ann"]]
    config.BaseConverter.force = True
    assert selected_submissions(config, ASSIGNMENT)[1] == [paths["ann"], paths["bob"]]
    # a newer submission is graded again
    config.BaseConverter.force = False
    (paths["bob"].parent / "timestamp.txt").write_text("2026-01-03 00:00:00")
    assert selected_submissions(config, ASSIGNMENT)[1] == [paths["ann"], paths["bob"]]


def test_available_cores_obey_the_tightest_cpu_quota_of_v1_and_v2_cgroups(tmp_path):
    from autograder.grading.batch import available_cores

    own = len(os.sched_getaffinity(0))
    proc = tmp_path / "proc"
    proc.mkdir()
    # cgroup v2: the quota of a parent cgroup bounds the child's
    (proc / "cgroup").write_text("0::/runner/job\n")
    v2 = tmp_path / "v2"
    (v2 / "runner" / "job").mkdir(parents=True)
    (v2 / "runner" / "job" / "cpu.max").write_text("max 100000\n")
    assert available_cores(str(v2), str(proc)) == own
    (v2 / "runner" / "cpu.max").write_text("150000 100000\n")  # 1.5 cores: two children keep it busy
    assert available_cores(str(v2), str(proc)) == min(own, 2)
    # cgroup v1: the cpu controller's own hierarchy
    (proc / "cgroup").write_text("4:memory:/x\n3:cpu,cpuacct:/docker/abc\n")
    v1 = tmp_path / "v1" / "cpu,cpuacct" / "docker" / "abc"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("100000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert available_cores(str(tmp_path / "v1"), str(proc)) == 1
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")  # no quota
    assert available_cores(str(tmp_path / "v1"), str(proc)) == own


def test_an_early_start_starts_the_batch_once_and_never_a_second_after_it_drains(tmp_path):
    from types import SimpleNamespace

    config, paths = _course(tmp_path, {"ann": STUB, "bob": STUB})
    calls: list[list[Path]] = []

    def grade_many(ps, on_done=None, stop=None):  # answers without grading: only who asked for what matters here
        calls.append(list(ps))
        results = [SimpleNamespace(path=str(p), alone=len(ps) == 1) for p in ps]
        for r in results:
            if on_done is not None:
                on_done(r)
        return results

    def key(pattern: str) -> BatchKey:
        return BatchKey(pattern, "early-start-test", None, None)

    # nbgrader's pre-convert hook for the first student: the whole selection, before any request
    batch = nbgrader_batch.start(key, config, ASSIGNMENT, grade_many, early=True)
    assert batch is not None and calls == [[paths["ann"], paths["bob"]]]
    assert nbgrader_batch.start(key, config, ASSIGNMENT, grade_many, early=True) is None  # the next student's
    batch.thread.join()
    # each request is answered from that batch, without another selection or grading
    assert not result_for(paths["ann"], key, config, ASSIGNMENT, grade_many).alone
    assert not result_for(paths["bob"], key, config, ASSIGNMENT, grade_many).alone
    assert len(calls) == 1 and key(nbgrader_batch._submitted_pattern(config, ASSIGNMENT)[1]) not in nbgrader_batch._BATCHES
    # drained: a hook called later in this process does not grade the class a second time
    assert nbgrader_batch.start(key, config, ASSIGNMENT, grade_many, early=True) is None and len(calls) == 1


def test_selection_leaves_out_the_students_nbgrader_excludes(tmp_path):
    config, paths = _course(tmp_path, {"ann": STUB, "bob": STUB, "cy": STUB})
    config.CourseDirectory.student_id_exclude = "bob,cy"
    assert selected_submissions(config, ASSIGNMENT)[1] == [paths["ann"]]


def test_a_stopped_batch_starts_no_further_job_and_reports_each_one_left_out():
    import threading

    from autograder.grading.batch import GradingStopped, run_batch

    stop, ran, second_started = threading.Event(), [], threading.Event()

    def work(job, gate):
        ran.append(job)
        if gate is not None:
            gate()
        if job == (0, 1):  # the stop comes while this job runs: it finishes, nothing after it starts
            second_started.set()
            stop.set()
        return f"done {job}"

    results = run_batch([[(g, j) for j in range(3)] for g in range(4)], work=work, shared_failure=lambda r: False,
                        shortcut=lambda first, job: first, failed=lambda job, exc: type(exc).__name__,
                        on_result=lambda *a: None, workers=1, stop=stop)
    assert second_started.is_set()
    # one worker: the job that saw the stop was the last to run, and every job after it was left out
    assert ran[-1] == (0, 1) and len(ran) < 12, ran
    for g, group in enumerate(results):
        for j, r in enumerate(group):
            assert r == (f"done {(g, j)}" if (g, j) in ran else GradingStopped.__name__), (g, j, r)


def test_a_started_group_goes_before_a_new_one_so_groups_finish_in_order():
    """A group's first job starts only when the workers have nothing else: with one worker, each group's
    jobs run before the next group's first one (nbgrader's batch then answers its first notebooks early,
    while the rest grade, instead of all of them at the end).

    With three workers the test holds every job until it lets that one go, oldest first, and waits for
    the start that each release allows: the order of starts is then fixed by the scheduler alone, never
    by which thread the machine happens to run first (a busy host once finished group 0 last)."""
    import threading

    from autograder.grading.batch import run_batch

    ran, finished = [], []
    lock = threading.Lock()

    def work(job, gate):
        with lock:
            ran.append(job)
        if gate is not None:
            gate()
        return job

    def on_result(gi, ji, res):
        with lock:
            finished.append(res)

    groups = [[(g, j) for j in range(3)] for g in range(4)]
    run_batch(groups, work=work, shared_failure=lambda r: False, shortcut=lambda first, job: first,
              failed=lambda job, exc: exc, on_result=on_result, workers=1)
    assert ran == [job for group in groups for job in group]
    assert finished == ran

    # three workers, every job held until released (one event per job, oldest start released first)
    started: list = []
    changed = threading.Condition()
    go = {job: threading.Event() for group in groups for job in group}

    def held(job, gate):
        with changed:
            started.append(job)
            changed.notify_all()
        assert go[job].wait(120), f"{job} was never released"
        if gate is not None:
            gate()  # the group's other jobs join the queue once its first job is let go
        return job

    total = sum(len(g) for g in groups)
    # How many jobs have started once k jobs were let go (k = 0..12), by the rule "a group's first job
    # starts only while fewer jobs than workers wait or run": releasing a first job queues its group's two
    # others; group 3 starts after the 7th release, when two jobs are left in flight; the 10th release
    # (group 3's first) frees its two others onto two idle workers.
    need = [3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 12, 12, 12]
    batch = threading.Thread(target=run_batch, args=(groups,), kwargs=dict(
        work=held, shared_failure=lambda r: False, shortcut=lambda first, job: first,
        failed=lambda job, exc: exc, on_result=lambda *a: None, workers=3))
    batch.start()
    try:
        for released in range(total + 1):
            with changed:
                assert changed.wait_for(lambda n=need[released]: len(started) >= n, 120), (released, started)
                nxt = started[released] if released < total else None
            if nxt is not None:
                go[nxt].set()
    finally:
        for event in go.values():
            event.set()
        batch.join(120)
    assert not batch.is_alive()
    assert sorted(started[:3]) == [(0, 0), (1, 0), (2, 0)]  # three workers: three groups' first jobs
    # then every started group's other jobs, in the order their groups started, before group 3's first
    assert started[3:9] == [(0, 1), (0, 2), (1, 1), (1, 2), (2, 1), (2, 2)], started
    assert started[9] == (3, 0) and sorted(started[10:]) == [(3, 1), (3, 2)], started


def test_a_batch_still_running_when_the_program_ends_gives_every_job_a_result_and_lets_it_exit(tmp_path):
    """nbgrader can finish (its main thread done) while the batch it started still grades submissions it
    never asked for: the interpreter then refuses new pool jobs. The batch reports each job it could not
    start, and the process exits instead of waiting forever for results that cannot come."""
    import subprocess
    import sys

    script = tmp_path / "ends_early.py"
    script.write_text(f"""
import sys, threading, time
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, {str(layout.ROOT)!r})
from autograder.grading.batch import run_batch

first_jobs_running = threading.Semaphore(0)

def work(job, gate):
    if gate is not None:
        first_jobs_running.release()
        time.sleep(0.5)  # the main thread is gone by now: the interpreter is ending
        gate()
    return "done"

def batch():
    with ThreadPoolExecutor(max_workers=1) as verdicts:  # as grade_paths composes each verdict
        results = run_batch([[(g, j) for j in range(3)] for g in range(2)], work=work, shared_failure=lambda r: False,
                            shortcut=lambda first, job: first, failed=lambda job, exc: type(exc).__name__,
                            on_result=lambda *a: verdicts.submit(print, end=""), workers=2)
    print(results, flush=True)

threading.Thread(target=batch).start()  # not a daemon, as nbgrader's batch thread
for _ in range(2):  # both submissions' first jobs started (on a loaded machine the thread may start late)
    first_jobs_running.acquire()
""")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=scaled(60))
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == str([["done", "GradingStopped", "GradingStopped"]] * 2), p.stdout


def test_a_batch_that_starts_once_the_program_is_ending_reports_every_job_stopped(tmp_path):
    """The batch's thread may get its first turn only after the main thread is done (a loaded machine):
    no group can start then, and each job still gets a result instead of the thread dying."""
    import subprocess
    import sys

    script = tmp_path / "starts_late.py"
    script.write_text(f"""
import sys, threading, time
sys.path.insert(0, {str(layout.ROOT)!r})
from autograder.grading.batch import run_batch

def batch():
    while threading.main_thread().is_alive():
        time.sleep(0.01)
    time.sleep(0.3)  # the interpreter's exit hooks have run: pools take no new work
    results = run_batch([[(g, j) for j in range(2)] for g in range(2)], work=lambda job, gate: "done",
                        shared_failure=lambda r: False, shortcut=lambda first, job: first,
                        failed=lambda job, exc: type(exc).__name__, on_result=lambda *a: None, workers=2)
    print(results, flush=True)

threading.Thread(target=batch).start()
""")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=scaled(60))
    assert p.returncode == 0 and not p.stderr, p.stderr[-2000:]
    assert p.stdout.strip() == str([["GradingStopped", "GradingStopped"]] * 2), p.stdout


def test_once_nbgrader_is_done_its_batch_starts_no_further_child(tmp_path):
    """nbgrader's main thread done (it asked for all it will, or stopped early): the batch it started
    sets its stop, so what nobody will read is not graded, and the process ends without waiting for it."""
    import subprocess
    import sys

    script = tmp_path / "nbgrader_done.py"
    script.write_text(f"""
import sys, time
sys.path.insert(0, {str(layout.ROOT)!r})
from pathlib import Path
from autograder.integrations.nbgrader_batch import Batch

def grade_many(paths, on_done=None, stop=None):
    for _ in range(200):  # a long batch: it notices the stop within a few of its steps
        if stop.is_set():
            print("stopped", flush=True)
            return []
        time.sleep(0.05)
    print("graded everything", flush=True)
    return []

Batch.start([Path({str(tmp_path / "a.ipynb")!r})], grade_many)
""")
    start = time.monotonic()
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=scaled(60))
    assert p.returncode == 0 and p.stdout.strip() == "stopped", p.stdout + p.stderr[-2000:]
    assert time.monotonic() - start < scaled(8)  # not the batch's 10 s ("stopped" above says it noticed)

"""The session's shared notebook runs (tests/support/notebook_runs.py): one run per notebook, however
many tests and workers ask, each asker with a copy of its own; a failed run is not tried again.
The kernel is replaced by a stand-in that counts its runs (the slow tests that read shared runs run
real kernels)."""
from __future__ import annotations

import asyncio
import threading
from queue import Empty

import nbformat
import pytest
from filelock import FileLock, Timeout
from nbformat.v4 import new_code_cell, new_notebook, new_output

from tests.support import notebook_runs
from tests.support.notebook_runs import NotebookRun, SessionRuns, SharedRunFailed


@pytest.fixture
def notebook(tmp_path):
    path = tmp_path / "stage.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("print('hello')")]), path)
    return path


class StandIn:
    """Runs a notebook as a kernel would (one stdout line per cell), counting its runs; with ``hold``
    set, each run waits until the test lets it finish."""

    def __init__(self, root, hold=False):
        self.root, self.runs, self.started = root, 0, threading.Event()
        self.finish = threading.Event()
        if not hold:
            self.finish.set()

    def __call__(self, path, folder, *, timeout):
        self.runs += 1
        # every run happens under the notebook's lock: no other process can start the same run meanwhile
        # (the lock of this run's entry: after an edit the folder also holds the old entry's free lock)
        lock = folder.with_name(folder.name + ".lock")
        assert lock.exists()
        with pytest.raises(Timeout):
            FileLock(str(lock), timeout=0).acquire()
        self.started.set()
        assert self.finish.wait(30)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "written.json").write_text("{}", encoding="utf-8")
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            cell.outputs = [new_output("stream", name="stdout", text=f"ran {cell.source}\n")]
        return NotebookRun(nb, 1.5, folder)


def test_a_notebook_runs_once_and_every_asker_gets_its_own_copy(tmp_path, notebook, monkeypatch):
    runs = SessionRuns(tmp_path / "runs")
    stand_in = StandIn(runs.root)
    monkeypatch.setattr(notebook_runs, "run_notebook", stand_in)
    first = runs.get(notebook)
    first.nb.cells[0].outputs.clear()  # one asker's edits never reach another's copy
    second = runs.get(notebook)
    assert stand_in.runs == 1
    assert second.nb.cells[0].outputs[0].text == "ran print('hello')\n"
    assert second.seconds == first.seconds == 1.5  # the run's own time, not the time spent asking
    assert second.folder == first.folder and (first.folder / "written.json").is_file()


def test_an_asker_during_a_run_waits_for_it_instead_of_running_again(tmp_path, notebook, monkeypatch):
    runs = SessionRuns(tmp_path / "runs")
    stand_in = StandIn(runs.root, hold=True)
    monkeypatch.setattr(notebook_runs, "run_notebook", stand_in)
    got = {}
    first = threading.Thread(target=lambda: got.setdefault("first", runs.get(notebook)))
    first.start()
    assert stand_in.started.wait(30)
    # another process's view of the same session: a SessionRuns of its own over the same folder
    second = threading.Thread(target=lambda: got.setdefault("second", SessionRuns(runs.root).get(notebook)))
    second.start()
    stand_in.finish.set()
    first.join(30)
    second.join(30)
    assert stand_in.runs == 1
    assert got["first"].nb == got["second"].nb


def test_an_edited_notebook_is_run_again(tmp_path, notebook, monkeypatch):
    runs = SessionRuns(tmp_path / "runs")
    stand_in = StandIn(runs.root)
    monkeypatch.setattr(notebook_runs, "run_notebook", stand_in)
    runs.get(notebook)
    nbformat.write(new_notebook(cells=[new_code_cell("print('edited')")]), notebook)
    assert runs.get(notebook).nb.cells[0].outputs[0].text == "ran print('edited')\n"
    assert stand_in.runs == 2


def test_a_failed_run_is_reported_to_every_asker_and_not_run_again(tmp_path, notebook, monkeypatch):
    calls = []

    def dies(path, folder, *, timeout):
        calls.append(path)
        raise RuntimeError("Kernel died before replying to execute_request")

    monkeypatch.setattr(notebook_runs, "run_notebook", dies)
    runs = SessionRuns(tmp_path / "runs")
    for _ in range(2):
        with pytest.raises(SharedRunFailed, match="RuntimeError: Kernel died before replying"):
            runs.get(notebook)
    assert len(calls) == 1


def test_a_run_stopped_from_outside_is_made_again_by_the_next_asker(tmp_path, notebook, monkeypatch):
    """pytest-timeout and Ctrl-C stop a test with a BaseException: nothing is recorded, and the next
    asker runs the notebook in a cleared folder."""
    runs = SessionRuns(tmp_path / "runs")

    def stopped(path, folder, *, timeout):
        folder.mkdir(parents=True)
        (folder / "half_written.json").write_text("{", encoding="utf-8")
        raise KeyboardInterrupt

    monkeypatch.setattr(notebook_runs, "run_notebook", stopped)
    with pytest.raises(KeyboardInterrupt):
        runs.get(notebook)
    stand_in = StandIn(runs.root)
    monkeypatch.setattr(notebook_runs, "run_notebook", stand_in)
    run = runs.get(notebook)
    assert stand_in.runs == 1 and not (run.folder / "half_written.json").exists()


class MissedWakeUps:
    """A kernel channel whose waits see no message for the first ``misses`` looks (as a wait that missed
    its wake-up does), then the message; it records the timeout of every look."""

    def __init__(self, misses):
        self.misses, self.looks = misses, []

    async def get_msg(self, timeout=None):
        self.looks.append(timeout)
        if len(self.looks) <= self.misses:
            raise Empty
        return {"msg": "reply"}


def test_a_wait_for_a_kernel_message_looks_again_each_slice_until_its_deadline():
    channel = MissedWakeUps(misses=3)
    notebook_runs._sliced(channel)
    assert asyncio.run(channel.get_msg(timeout=180)) == {"msg": "reply"}
    assert len(channel.looks) == 4 and all(0 < t <= notebook_runs.POLL_SLICE_S for t in channel.looks)
    channel = MissedWakeUps(misses=2)
    notebook_runs._sliced(channel)
    assert asyncio.run(channel.get_msg()) == {"msg": "reply"}  # no deadline: still looks each slice
    assert channel.looks == [notebook_runs.POLL_SLICE_S] * 3


def test_a_message_that_never_comes_still_ends_the_wait_at_its_deadline():
    channel = MissedWakeUps(misses=10**9)
    notebook_runs._sliced(channel)
    with pytest.raises(Empty):
        asyncio.run(channel.get_msg(timeout=0))
    assert channel.looks == [0.0]

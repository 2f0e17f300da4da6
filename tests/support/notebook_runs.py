"""Notebooks run top to bottom in a kernel for the tests, and one shared run of each per test session.

Several slow tests only read what a notebook printed when run top to bottom: the instructor notebook
is all green (test_notebooks_run), the Chinese instructor notebook prints no English
(test_chinese_edition), the quiet pass a loaded pass is compared with (test_loaded_machine). Each
used to run the notebook itself, so stage 7 (a minute or more each time) ran once per test that read
it. :class:`SessionRuns` runs each notebook once per test session and gives every such test its own
copy of that run's outputs.

Every run goes through :func:`run_notebook`, in a working folder of its own (never the repository:
stage 7 writes its decision record and ``check()`` its progress record into the working folder, and
two runs sharing one folder would read each other's files), with the kernel importing this checkout's
course (``PYTHONPATH``): outside the repository the notebook's set-up cell cannot find the course
beside the notebook.

A test that needs a run of its own calls :func:`run_notebook` directly: the loaded pass of
test_loaded_machine (it must run under the load it makes), a test that edits the notebook first, and
the browser tests (they measure what JupyterLab shows while it runs).

The kernel of a run starts warm: forked from a kernel zygote of this test process, which has imported
ipykernel and matplotlib once, and torch for a notebook that imports it (tests/support/warm_kernel.py;
tests/course/test_warm_kernels.py compares what a stage prints from a warm kernel and from a fresh one).
``PCW_PLAIN_KERNELS=1`` in the environment makes every run's kernel a fresh interpreter instead, as a
learner's is. The tests of a fresh kernel's first cell (test_first_cell) and the browser tests
(JupyterLab starts its own kernels) always run fresh ones.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from queue import Empty

import nbformat
from filelock import FileLock
from nbclient import NotebookClient
from nbformat import NotebookNode

from autograder.core import layout
from tests.support.machine import scaled
from tests.support.warm_kernel import kernel_manager_class

#: nbclient's limit for one cell of a shared run, in seconds on a quiet machine: a cell that hangs ends
#: the run with an error instead of holding every test that waits for it until pytest's own timeout.
CELL_TIMEOUT_S = 180


@dataclass(frozen=True)
class NotebookRun:
    """One run of a notebook top to bottom.

    Invariants: ``nb`` holds the outputs of that run (errors included: the run goes on past a cell
    that fails) and belongs to the caller alone; ``seconds`` is the wall time the kernel took for the
    run, never time spent waiting for another process's run; ``folder`` is the working folder it ran
    in, holding the files the notebook wrote.
    """

    nb: NotebookNode
    seconds: float
    folder: Path


class SharedRunFailed(RuntimeError):
    """The session's run of a notebook stopped with an error (a cell over its time limit, a dead
    kernel); every test that asks for that run gets this error instead of running it again."""


#: The longest one wait for a kernel message lasts before the client looks again (seconds).
POLL_SLICE_S = 1.0


def _sliced(channel) -> None:
    """Make ``channel.get_msg(timeout)`` wait in slices of :data:`POLL_SLICE_S`, until a message or the
    same deadline.

    Why: a wait on a ZeroMQ socket under asyncio can miss the wake-up for a message that has already
    arrived; the wait then lasts until its timeout, and only the final look finds the message. nbclient
    waits for a cell's reply with the cell's whole time limit, so one missed wake-up held a stage-3 run
    (every cell under 1.3 s) for 179 s between two cells, with no error, and every test waiting on that
    shared run with it. Waiting in slices bounds a missed wake-up to one slice; a reply that truly does
    not come still ends at the same deadline."""
    whole = channel.get_msg

    async def get_msg(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE_S if deadline is None else max(0.0, min(POLL_SLICE_S, deadline - time.monotonic()))
            try:
                return await whole(timeout=left)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


class _Client(NotebookClient):
    """nbclient's client, its kernel's shell and IOPub waits made in slices (:func:`_sliced`)."""

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        _sliced(self.kc.shell_channel)
        _sliced(self.kc.iopub_channel)
        return kc


def run_notebook(path: Path, folder: Path, *, timeout: int) -> NotebookRun:
    """Run the notebook at ``path`` top to bottom in a new kernel (warm unless ``PCW_PLAIN_KERNELS=1``:
    see the module docstring) whose working folder is ``folder`` (made if missing), each cell given
    ``timeout`` seconds. A cell that raises is recorded in its outputs and the run goes on, as Run All
    does with errors allowed."""
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(path, as_version=4)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(layout.ROOT), os.environ.get("PYTHONPATH"))
                                                       if p))
    start = time.monotonic()
    _Client(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
            kernel_manager_class=kernel_manager_class(nb),
            resources={"metadata": {"path": str(folder)}}).execute(env=env)
    return NotebookRun(nb, time.monotonic() - start, folder)


class SessionRuns:
    """One run of each notebook per test session, shared by every test and every xdist worker.

    ``root`` is a folder every process of the session sees (tests/conftest.py: the session's base
    temporary folder, above the workers' own). The first test that asks for a notebook runs it while
    holding that notebook's file lock, and writes the executed copy, then the entry's metadata last
    (an entry without metadata is unfinished); a test in another worker that asks meanwhile waits on
    the lock rather than running the notebook again, and every later one reads the copy.

    Invariants: a notebook file (its path and its bytes: an edited notebook is another entry) is run
    at most once to completion per session; an entry, once its metadata is written, never changes; a
    run that raised is recorded, and later askers get :class:`SharedRunFailed` instead of a second
    try. A run stopped from outside (pytest-timeout, Ctrl-C) records nothing: the next asker runs it.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def get(self, path: Path) -> NotebookRun:
        """The session's run of the notebook at ``path``: made now if no test made it yet."""
        data = path.read_bytes()
        key = "{}-{}".format(layout.rel(path).replace("/", "-").replace("\\", "-"),
                             hashlib.sha256(data).hexdigest()[:12])
        self.root.mkdir(parents=True, exist_ok=True)
        copy, meta, folder = self.root / f"{key}.ipynb", self.root / f"{key}.json", self.root / key
        with FileLock(str(self.root / f"{key}.lock")):
            if not meta.exists():
                self._run(path, copy, meta, folder)
            entry = json.loads(meta.read_text(encoding="utf-8"))
            if "error" in entry:
                raise SharedRunFailed(f"the session's run of {layout.rel(path)} failed: {entry['error']}")
            return NotebookRun(nbformat.read(copy, as_version=4), entry["seconds"], folder)

    @staticmethod
    def _run(path: Path, copy: Path, meta: Path, folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)  # what a run stopped from outside left there
        try:
            run = run_notebook(path, folder, timeout=int(scaled(CELL_TIMEOUT_S)))
        except Exception as e:  # recorded for every later asker, then raised for this one
            entry: dict = {"error": f"{type(e).__name__}: {e}"}
        else:
            nbformat.write(run.nb, copy)
            entry = {"seconds": run.seconds}
        pending = meta.with_suffix(".tmp")
        pending.write_text(json.dumps(entry), encoding="utf-8")
        os.replace(pending, meta)

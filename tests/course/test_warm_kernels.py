"""A notebook says the same from a warm kernel (forked from the tests' kernel zygote:
tests/support/warm_kernel.py) as from a fresh interpreter, so the tests that read warm runs read what a
learner's kernel prints.

Stage 2's instructor notebook is compared whole: the session's run of it (warm, shared with
test_notebooks_run and test_chinese_edition) against a run in a fresh kernel, every measured number
masked as test_loaded_machine masks it (one cheap stage: every stage compared costs a second run of
it). A kernel's state before any cell (what the interpreter and ipykernel set up, and what
``import torch`` leaves) is compared field by field. Stage 8 could not be compared this way: its timing
attack prints measured counts the mask keeps (secrets recovered out of 40, nanoseconds per key), which
differ between two fresh kernels' runs as much as between a fresh and a warm one.
"""
from __future__ import annotations

import json
import os

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.core import layout
from tests.course.test_loaded_machine import outcome
from tests.support import warm_kernel
from tests.support.notebook_runs import run_notebook

pytestmark = pytest.mark.slow  # runs whole notebooks in kernels

#: What a kernel shows of its start-up, one JSON object; the connection file's name is the run's own.
PROBE = r"""
import collections, gc, json, locale, logging, os, signal, sys, threading, warnings
def _fd(name):
    try:
        return os.readlink('/proc/self/fd/' + name).split('[')[0]
    except OSError:
        return None
print(json.dumps(dict(
    path=sys.path, argv=sys.argv[3:], orig_argv=sys.orig_argv[:3] + sys.orig_argv[5:], executable=sys.executable,
    cwd=os.getcwd(), env={k: v for k, v in os.environ.items() if k != 'PYTEST_CURRENT_TEST'},
    threads=sorted(t.name for t in threading.enumerate()), flags=str(sys.flags),
    signals={s: str(signal.getsignal(getattr(signal, s))) for s in ('SIGINT', 'SIGTERM', 'SIGPIPE', 'SIGCHLD')},
    fds=sorted(collections.Counter(_fd(f) for f in os.listdir('/proc/self/fd')).items(), key=str),
    session=(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid()), main=__name__,
    streams=(type(sys.stdout).__name__, type(sys.stderr).__name__, os.fstat(0).st_mode),
    encodings=(sys.getfilesystemencoding(), sys.stdout.encoding, locale.getpreferredencoding()),
    gc=gc.isenabled(), recursion=sys.getrecursionlimit(), hooks=(str(sys.gettrace()), type(sys.displayhook).__name__),
    root_handlers=[type(h).__name__ for h in logging.getLogger().handlers], mplbackend=os.environ.get('MPLBACKEND'),
), sort_keys=True))
"""
AFTER_TORCH = r"""
import json, sys, warnings, logging, torch, matplotlib.pyplot as plt
print(json.dumps(dict(filters=[str(f) for f in warnings.filters], backend=plt.get_backend(),
    torch_handlers=sorted(type(h.stream).__name__ for h in logging.getLogger('torch').handlers),
    threads=torch.get_num_threads()), sort_keys=True))
"""


@pytest.fixture
def plain(monkeypatch):
    """Within the test, run_notebook starts fresh kernels."""
    def use(yes: bool) -> None:
        if yes:
            monkeypatch.setenv(warm_kernel.PLAIN_ENV, "1")
        else:
            monkeypatch.delenv(warm_kernel.PLAIN_ENV, raising=False)
    return use


@pytest.fixture(autouse=True)
def warm_runs_only():
    if warm_kernel.plain_kernels():
        pytest.skip(f"{warm_kernel.PLAIN_ENV} is set: every kernel of this session is a fresh one")


def test_stage_2_says_the_same_from_a_warm_kernel(shared_notebook_runs, plain, tmp_path):
    path = layout.stage_files("s02").instructor()
    warm, warm_decisions = outcome(shared_notebook_runs.get(path))
    plain(True)
    fresh, fresh_decisions = outcome(run_notebook(path, tmp_path, timeout=900))
    assert len(warm) == len(fresh) > 10
    changed = [(i, a, b) for i, (a, b) in enumerate(zip(fresh, warm, strict=True)) if a != b]
    assert not changed, "\n\n".join(f"cell {i}:\nfresh: {a}\nwarm:  {b}" for i, a, b in changed)
    assert warm_decisions == fresh_decisions


def test_a_warm_kernel_starts_as_a_fresh_one_does(plain, tmp_path):
    seen = {}
    for kind in ("fresh", "warm"):
        plain(kind == "fresh")
        nb = new_notebook(cells=[new_code_cell(PROBE), new_code_cell(AFTER_TORCH)])
        path = tmp_path / f"{kind}.ipynb"
        path.write_text(json.dumps(nb), encoding="utf-8")
        run = run_notebook(path, tmp_path / kind, timeout=300)
        texts = ["".join(o.get("text", "") for o in c.outputs if o.get("name") == "stdout") for c in run.nb.cells]
        assert all(texts), [c.outputs for c in run.nb.cells]
        seen[kind] = [json.loads(t.replace(str(tmp_path / kind), "<folder>")) for t in texts]
    for fresh, warm in zip(seen["fresh"], seen["warm"], strict=True):
        fresh["env"] = {k: v for k, v in fresh.get("env", {}).items() if k != warm_kernel.PLAIN_ENV} or None
        warm["env"] = {k: v for k, v in warm.get("env", {}).items() if k != warm_kernel.PLAIN_ENV} or None
        assert fresh == warm, {k: (fresh[k], warm.get(k)) for k in fresh if fresh[k] != warm.get(k)}
    assert seen["warm"][1]["torch_handlers"] == ["OutStream"]  # the kernel's stderr, as after a cell's import
    assert os.environ.get("OMP_NUM_THREADS") != "1" or seen["warm"][1]["threads"] == 1

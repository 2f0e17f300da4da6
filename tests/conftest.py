"""Shared fixtures: the repository root on sys.path, and graded results reused across tests."""
from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# Subprocesses use the tools of the interpreter running the tests (nbgrader shells out to `alembic`;
# CI runs `.venv/bin/python -m pytest` without an activated venv).
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")

# The store of trusted material (autograder.grading.trusted_store): one per test session, shared by
# its xdist workers and every grading subprocess they start, so the suite computes each stage's expected
# outcomes and leak guard once, yet never reads a developer's store (an entry made from other files or
# packages could hide a failure) and every run tries the cold path as well as the warm one. The
# controller (or a run without workers) makes it when pytest configures, before any worker starts;
# workers inherit the variable, and the controller removes the folder when the session ends. (A hook,
# not import-time code: scripts the tests run import this file too.) PCW_CACHE_DIR=off in the
# environment runs the suite with no store at all.
_STORE = pytest.StashKey[str]()
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput"):
        # One machine factor for the whole session (tests/support/machine.py): measured here, before any
        # worker starts, so that every worker and every script a test starts scales its deadlines alike.
        from tests.support import machine

        os.environ[machine.ENV] = f"{machine.machine_factor():.2f}"
        # One thread each for torch's and BLAS's pools in every test process and what it starts (unless
        # set by hand), before any of them is imported: two workers on 2 cores, each with a pool of one
        # thread per core beside grading children, spin on each other's cores (a small model's step then
        # takes many times its CPU time). Grading children get one thread anyway (grading/supervise.py),
        # and so do the notebooks' timed demos; the tests of thread counts set their own.
        for var in THREAD_ENV:
            os.environ.setdefault(var, "1")
    if hasattr(config, "workerinput") or os.environ.get("PCW_CACHE_DIR", "").lower() == "off":
        return
    config.stash[_STORE] = os.environ["PCW_CACHE_DIR"] = tempfile.mkdtemp(prefix="pcw-test-store-")


def pytest_report_header(config) -> str:
    return f"machine factor for deadlines: {os.environ.get('PCW_MACHINE_FACTOR', '?')} (tests/support/machine.py)"


def pytest_unconfigure(config) -> None:
    if _STORE in config.stash:
        shutil.rmtree(config.stash[_STORE], ignore_errors=True)


from autograder.core import layout  # noqa: E402
from autograder.core.layout import built_stages  # noqa: E402,F401 (the generic tests import it from here)


def stage_params() -> list:
    """Every discovered stage as a pytest parameter; a half-written one is skipped, naming its missing files."""
    return [pytest.param(s.id, marks=pytest.mark.skip(reason="; ".join(s.missing())) if not s.is_built else ())
            for s in layout.all_stages()]


@pytest.fixture(scope="session")
def graded_reference_and_stub(request):
    """Every built stage's instructor notebook (reference) and learner notebook (stub), graded once; only
    the stages the session's tests ask for when each test that uses it names its ``stage_id`` (a run of
    one stage's cases, as tests/engine/test_layout.py's new-stage test makes, grades that stage alone)."""
    from autograder.grading.grade import grade_paths

    users = [item for item in request.session.items if "graded_reference_and_stub" in getattr(item, "fixturenames", ())]
    asked = {getattr(item, "callspec", None) and item.callspec.params.get("stage_id") for item in users}
    paths = {}
    for sid in built_stages():
        if None not in asked and sid not in asked:
            continue
        files = layout.stage_files(sid)
        paths[str(files.instructor())] = (sid, "reference")
        paths[str(files.learner())] = (sid, "stub")
    return {paths[r.path]: r for r in grade_paths(list(paths))}


@pytest.fixture(scope="session")
def shared_notebook_runs(request, tmp_path_factory):
    """Each notebook run once per test session, its outputs shared by every test that only reads them
    (tests/support/notebook_runs.py). The runs live under the session's base temporary folder: a
    worker's own base folder lies inside the controller's, so every worker of the session shares them."""
    from tests.support.notebook_runs import SessionRuns

    base = tmp_path_factory.getbasetemp()
    return SessionRuns((base.parent if hasattr(request.config, "workerinput") else base) / "notebook-runs")


# Scheduling (xdist hands out whole files, ``--dist loadfile``, in collection order: ``--no-loadscope-reorder``).
# The files that take minutes go first, longest first, so that the workers end on small files together
# instead of one worker running a long file alone at the end (by default xdist orders files by their
# number of tests, which put the one-test Binder build, 1.5 minutes, last). Measured walls on 2 workers;
# only the order depends on this list, never what runs. test_loaded_machine goes after the files whose
# notebook runs it reads (shared_notebook_runs): it finds its quiet passes made, and its busy processes
# do not run beside test_notebooks_run's timed runs.
LONG_FILES = ("test_notebooks_run.py", "test_mutants.py", "test_hostile.py", "test_chinese_edition.py",
              "test_loaded_machine.py", "test_binder.py", "test_ui_browser.py", "test_isolation.py", "test_install.py",
              "test_learning_design.py", "test_bench_grading.py", "test_s07_prose.py", "test_first_cell.py",
              "test_nbgrader_flow.py")

# A file is one unit of xdist's work (the scheduler is made below), so that what it computes once per
# module or per process is computed by one worker; the files in SPLIT_BY_STAGE are split instead into one
# unit per stage (``s01``... leading the test's id), because what they compute is per stage (a stage's
# wrong answers graded once, its notebooks run, its slips): a long file's stages then run on both workers
# at once instead of one worker running the whole file alone. (xdist's own ``loadgroup`` cannot do this
# here: it renames node ids, which pytest 9 no longer allows.)
SPLIT_BY_STAGE = ("tests/course/test_mutants.py", "tests/course/test_notebooks_run.py",
                  "tests/course/test_chinese_edition.py", "tests/course/test_learning_design.py")
_STAGE_ID = re.compile(r"\[(s\d\d)(?=[./\]])")


def schedule_group(nodeid: str) -> str:
    """The test's scheduling group: its file, or its file and stage for a file in SPLIT_BY_STAGE."""
    file = nodeid.split("::", 1)[0]
    stage = _STAGE_ID.search(nodeid) if file in SPLIT_BY_STAGE else None
    return f"{file}:{stage.group(1)}" if stage else file


@pytest.hookimpl(optionalhook=True)  # an xdist hook: no error where xdist is not loaded
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None  # another --dist given on the command line: xdist's own
    from xdist.scheduler import LoadFileScheduling

    class ByGroup(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return schedule_group(nodeid)

    return ByGroup(config, log)


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order

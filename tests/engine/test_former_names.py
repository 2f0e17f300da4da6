"""Notebooks saved from an earlier release import given code by its former names (``solutions.<name>``,
before it moved to ``workbook``): each must resolve to the very module ``workbook`` holds, and such a
notebook must still run. ``tests/previous_release/04_eviction.ipynb`` is stage 4's learner notebook as
that release shipped it (``git show e8bd3f1:notebooks/04_eviction.ipynb``), byte for byte."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.core import layout
from solutions import MOVED_TO_WORKBOOK
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: imports the previous release in subprocesses

PREVIOUS = "e8bd3f1"  # the last commit whose notebooks imported given code from solutions
OLD_NOTEBOOK = ROOT / "tests" / "previous_release" / "04_eviction.ipynb"
_REFERENCE = re.compile(r"^solutions\.s\d\d_\w+$")


def _solutions_imports(nb) -> set[str]:
    """Every ``solutions.*`` module the notebook's code cells import (magics and shell lines skipped)."""
    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("solutions."):
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names if a.name.startswith("solutions.")}
    return names


def _previous(path: str) -> str | None:
    """A file as the previous release had it; ``None`` where this checkout lacks that history."""
    r = subprocess.run(["git", "show", f"{PREVIOUS}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def _same_objects(names: list[str]) -> subprocess.CompletedProcess:
    """Import each former name first, then its workbook name, in a fresh interpreter; exit 0 when
    every pair is one module object."""
    code = ("import importlib, sys\n"
            f"for old in {names!r}:\n"
            "    new = 'workbook.' + old.rpartition('.')[2]\n"
            "    a = importlib.import_module(old)\n"
            "    assert a is importlib.import_module(new) is sys.modules[old] is sys.modules[new], old\n"
            "    assert a.__name__ == new and a.__spec__.name == new, old\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=scaled(300),
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_every_former_name_is_the_workbook_module():
    assert set(MOVED_TO_WORKBOOK) <= {name.rpartition(".")[2] for name in layout.given_modules()}
    r = _same_objects([f"solutions.{name}" for name in MOVED_TO_WORKBOOK])
    assert r.returncode == 0, r.stderr[-3000:]


def test_what_the_previous_release_imported_still_resolves():
    stems = [s.notebook for s in layout.all_stages() if s.slug is not None]
    texts = {stem: _previous(f"notebooks/{stem}.ipynb") for stem in stems}
    if any(t is None for t in texts.values()):
        pytest.skip(f"this checkout lacks commit {PREVIOUS} (a shallow clone); the stage-4 notebook test still runs")
    used = set().union(*(_solutions_imports(nbformat.reads(t, as_version=4)) for t in texts.values()))
    given = sorted(m for m in used if not _REFERENCE.match(m))
    assert given and all(m.rpartition(".")[2] in MOVED_TO_WORKBOOK for m in given), given
    r = _same_objects(given)
    assert r.returncode == 0, r.stderr[-3000:]
    assert set(layout.reference_modules()) >= {m for m in used if _REFERENCE.match(m)}


def test_the_fixture_is_the_previous_releases_notebook():
    text = _previous("notebooks/04_eviction.ipynb")
    if text is None:
        pytest.skip(f"this checkout lacks commit {PREVIOUS} (a shallow clone)")
    assert OLD_NOTEBOOK.read_text(encoding="utf-8") == text


@pytest.mark.slow
def test_a_notebook_of_the_previous_release_runs(tmp_path, monkeypatch):
    """Stage 4's learner notebook of the previous release, unfilled, runs without a traceback, as
    today's does (tests/course/test_notebooks_run.py); its given code comes from workbook."""
    nb = nbformat.read(OLD_NOTEBOOK, as_version=4)
    old = sorted(_solutions_imports(nb))
    assert {"solutions.cache_sim", "solutions.traces", "solutions.predictions"} <= set(old), old
    nb.cells.append(nbformat.v4.new_code_cell(
        "import sys, workbook.cache_sim, workbook.traces\n"
        "assert sys.modules['solutions.cache_sim'] is workbook.cache_sim and simulate_with is workbook.cache_sim.simulate\n"
        "assert TraceRequest is workbook.traces.TraceRequest\n"
        "print('same modules')"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this checkout's course
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [(c.source[:80], o.get("ename"), o.get("evalue")) for c in nb.cells if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    assert "same modules" in "".join(o.get("text", "") for o in nb.cells[-1].outputs)


@pytest.mark.slow
def test_a_graded_cell_may_import_a_former_name():
    """In a grading child too (which gets the course modules as text), a learner's cell that imports
    given code by its former name gets the workbook module, and earns every point."""
    from tests.support.variants import assert_all_pass, grade_variant

    line = "        normalized = list(tokens)\n"
    former = ("        from solutions.predictions import why as former_why\n"
              "        from workbook.predictions import why\n"
              "        assert former_why is why\n")
    assert_all_pass(grade_variant("s01", [(line, former + line)]))

"""Notebooks run top to bottom as a person would run them: the instructor's all green, the
learner's (unfilled) without a single traceback, every check saying "not implemented yet"."""
from __future__ import annotations

import json

import nbformat
import pytest

from autograder.core import layout
from autograder.core.spec import load_stage
from tests.conftest import stage_params
from tests.support.machine import scaled
from tests.support.notebook_runs import CELL_TIMEOUT_S, run_notebook

pytestmark = pytest.mark.slow  # the fast lane leaves it out: executes every notebook in a kernel (nbclient)


def outputs(cell) -> str:
    parts = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type == "error":
            parts.append(f"ERROR {o.ename}: {o.evalue}")
    return "".join(parts)


def skipped_or_stopped(nb) -> list[str]:
    """Lines where a demo did not run its body or a check did not pass (⏸ fix it first, ⏳ finish it
    first, ❌ stopped or failed), in the cells' outputs and in what their Output widgets showed: with
    the reference in every TODO, there must be none."""
    shown = [json.dumps(c.get("outputs", []), ensure_ascii=False) for c in nb.cells if c.cell_type == "code"]
    shown.append(json.dumps(nb.metadata.get("widgets", {}), ensure_ascii=False))
    return [line for text in shown for line in text.split("\\n") if any(m in line for m in "⏸⏳❌")]


def error_cells(nb) -> list[str]:
    return [outputs(c) for c in nb.cells if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs)]


@pytest.mark.parametrize("stage_id", stage_params())
def test_instructor_notebook_runs_all_green(stage_id, shared_notebook_runs):
    stage = load_stage(stage_id, hidden=False)
    run = shared_notebook_runs.get(layout.stage_files(stage_id).instructor())  # read by other tests too
    nb, seconds = run.nb, run.seconds
    assert not error_cells(nb), error_cells(nb)
    assert not skipped_or_stopped(nb), skipped_or_stopped(nb)[:5]
    checks = [outputs(c) for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert len(checks) == len(stage.todos)
    for text in checks:
        assert "❌" not in text and "⏳" not in text and text.count("✅") >= 5, text
    assert seconds < scaled(120), f"{stage.notebook} took {seconds:.0f} s"


@pytest.mark.parametrize("stage_id", stage_params())
def test_learner_notebook_runs_unfilled_without_tracebacks(stage_id, tmp_path):
    stage = load_stage(stage_id, hidden=False)
    nb = run_notebook(layout.stage_files(stage_id).learner(), tmp_path, timeout=CELL_TIMEOUT_S).nb
    assert not error_cells(nb), error_cells(nb)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id", "")
        if c.metadata.get("nbgrader", {}).get("grade"):
            todo = next(t for t in stage.todos if t.grade_id == gid)
            assert f"{todo.label} is not implemented yet" in outputs(c) or "which is not implemented yet" in outputs(c)


@pytest.mark.parametrize("stage_id", stage_params())
def test_chinese_learner_notebook_runs_unfilled_and_speaks_chinese(stage_id, tmp_path):
    """The Chinese edition runs like the English one (same code; localized prose, comments and strings),
    and its unfinished checks answer in Chinese. Its instructor code must at least compile."""
    import ast

    files = layout.stage_files(stage_id)
    if "zh" not in files.languages:
        pytest.skip(f"{stage_id} has no Chinese edition")
    for c in nbformat.read(files.instructor("zh"), as_version=4).cells:
        if c.cell_type == "code":
            ast.parse("\n".join(line for line in c.source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    nb = run_notebook(files.learner("zh"), tmp_path, timeout=CELL_TIMEOUT_S).nb
    assert not error_cells(nb), error_cells(nb)
    said = "".join(outputs(c) for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    assert "还没有实现" in said and "not implemented" not in said

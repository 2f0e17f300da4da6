"""Inputs that must not take a batch down, each graded next to an honest notebook in one CLI run:
a FIFO and a link to /dev/zero named *.ipynb (links: test_linked_submissions), an oversized file, a notebook heavy with outputs and
one heavy with code, a folder named *.ipynb, malformed
nbgrader metadata, names with a newline or undecodable bytes, TODO cells that lost their metadata
(a real jupytext round trip), and notebooks whose stage does not match their name or folder."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import jupytext
import nbformat
import pytest

from autograder.core import layout
from autograder.core.spec import load_stage
from autograder.grading.submission import MAX_NOTEBOOK_BYTES, MAX_SOURCE_CHARS
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades a folder of malformed inputs

S01, S02 = layout.stage_files("s01"), layout.stage_files("s02")
FULL = sum(t.points for t in load_stage("s01").todos)  # the quiz included
NEWLINE = "new\nline.ipynb"
UNDECODABLE = os.fsdecode(b"bad\xff\xfename.ipynb")


def _round_trip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Through jupytext's percent format with every cell's metadata filtered out, and back."""
    text = jupytext.writes(nb, fmt="py:percent")
    back = jupytext.reads(text, fmt="py:percent")
    back.metadata.pop("jupytext", None)
    for cell in back.cells:
        cell.metadata = {}
    return back


def _without_todo_cells(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("solution")]
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    honest = nbformat.read(S01.instructor(), as_version=4)
    stub = nbformat.read(S01.learner(), as_version=4)  # grades fastest: where only the name or folder matters
    nbformat.write(honest, d / "honest.ipynb")
    os.mkfifo(d / "fifo.ipynb")
    os.symlink("/dev/zero", d / "zero.ipynb")
    with open(d / "huge.ipynb", "wb") as f:
        f.truncate(MAX_NOTEBOOK_BYTES + 1)  # sparse: over the file limit without writing it
    heavy = nbformat.read(S01.instructor(), as_version=4)
    next(c for c in heavy.cells if c.cell_type == "code").outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="step\n" * (25 * 2**20 // 5))]  # 25 MB of saved output
    nbformat.write(heavy, d / "output_heavy.ipynb")
    big = nbformat.read(S01.learner(), as_version=4)
    big.cells.append(nbformat.v4.new_code_cell("x = 1  # " + "y" * (MAX_SOURCE_CHARS + 1)))
    nbformat.write(big, d / "source_heavy.ipynb")
    (d / "folder.ipynb").mkdir()
    bad = nbformat.read(S01.instructor(), as_version=4)
    next(c for c in bad.cells if c.metadata.get("nbgrader", {}).get("solution")).metadata["nbgrader"] = ["oops"]
    (d / "malformed_metadata.ipynb").write_text(json.dumps(bad), encoding="utf-8")
    nbformat.write(stub, d / NEWLINE)
    with open(os.path.join(os.fsencode(d), os.fsencode(UNDECODABLE)), "w", encoding="utf-8") as f:
        nbformat.write(stub, f)
    nbformat.write(_round_trip(honest), d / "jupytext_round_trip.ipynb")
    lost = _round_trip(_without_todo_cells(nbformat.read(S01.learner(), as_version=4)))
    nbformat.write(lost, d / "jupytext_no_todo_cells.ipynb")
    nbformat.write(lost, d / f"{S01.notebook}-jupytext.ipynb")  # its name still tells the stage
    nbformat.write(stub, d / S02.instructor().name)  # stage 1 under stage 2's file name
    (d / S02.notebook).mkdir()
    nbformat.write(stub, d / S02.notebook / "mine.ipynb")  # stage 1 in stage 2's assignment folder
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(d), "--no-progress",
                        "--csv", str(d.parent / "g.csv"), "--summary-json", str(d.parent / "s.json")],
                       cwd=ROOT, capture_output=True, text=True, timeout=scaled(300))
    summary = json.loads((d.parent / "s.json").read_text(encoding="utf-8"))
    subs = {s["path"].rsplit("/", 1)[-1]: s for s in summary["per_submission"]}
    return {"proc": p, "table": p.stdout, "subs": subs, "csv": (d.parent / "g.csv").read_text(encoding="utf-8"),
            "summary": summary}


def _error(graded, name: str) -> str:
    s = graded["subs"][name]
    assert s["status"] == "not_graded" and s["score"] == 0
    assert "\n" not in s["error"]
    return s["error"]


def test_inputs_batch_goes_on_and_the_honest_notebook_keeps_full_marks(graded):
    assert graded["proc"].returncode == 1  # some files are not gradable, and each is named on stderr
    assert graded["subs"]["honest.ipynb"]["score"] == FULL


def test_inputs_only_regular_files_are_read(graded):
    assert "a FIFO" in _error(graded, "fifo.ipynb")
    assert "is a link (a symbolic link)" in _error(graded, "zero.ipynb")  # refused before what it names is opened
    assert f"larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB" in _error(graded, "huge.ipynb")
    assert "is a folder" in _error(graded, "folder.ipynb")


def test_inputs_the_size_limit_is_on_what_is_graded_not_on_outputs(graded):
    """25 MB of saved outputs: graded in full (as nbgrader, which clears outputs first, would); more code
    than the limit: refused, saying so."""
    assert graded["subs"]["output_heavy.ipynb"]["score"] == FULL
    assert "Mi characters of source" in _error(graded, "source_heavy.ipynb")


def test_inputs_malformed_metadata_is_a_one_line_error(graded):
    assert "malformed nbgrader metadata" in _error(graded, "malformed_metadata.ipynb")


def test_inputs_odd_file_names_cannot_break_the_table_csv_or_json(graded):
    subs = graded["subs"]
    assert subs["new\\nline.ipynb"]["status"] == subs["bad\\xff\\xfename.ipynb"]["status"] == "graded"
    rows = list(csv.reader(io.StringIO(graded["csv"])))
    assert len(rows) == 1 + len(subs) and {len(r) for r in rows} == {len(rows[0])}
    assert all("\n" not in cell for r in rows for cell in r)
    lines = graded["table"].splitlines()
    assert any("new\\nline.ipynb  (stage s01)" in line for line in lines)
    assert any("bad\\xff\\xfename.ipynb  (stage s01)" in line for line in lines)
    assert not any(line.startswith("line.ipynb") for line in lines)
    assert lines[0].startswith("isolation: ")


def test_inputs_todo_cells_without_metadata_are_found_or_rejected_with_the_reason(graded):
    found = graded["subs"]["jupytext_round_trip.ipynb"]
    assert found["score"] == FULL and any("no cell carries nbgrader metadata" in w for w in found["warnings"])
    error = _error(graded, f"{S01.notebook}-jupytext.ipynb")
    assert "no TODO cells found" in error and "PrefixCacheManager" in error
    error = _error(graded, "jupytext_no_todo_cells.ipynb")
    assert "cannot tell which stage" in error and "no cell carries nbgrader metadata" in error


def test_inputs_a_stage_that_does_not_match_its_name_or_folder_is_flagged(graded):
    renamed = graded["subs"][S02.instructor().name]
    assert renamed["stage"] == "s01" and renamed["status"] == "graded"
    assert any("file name is stage s02" in w for w in renamed["warnings"])
    moved = graded["subs"]["mine.ipynb"]
    assert moved["stage"] == "s01" and moved["status"] == "graded" and any(f"assignment folder {S02.notebook}" in w for w in moved["warnings"])

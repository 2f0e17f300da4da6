"""Reading submissions as data: which files, which stage, which cells the learner wrote.

Nothing here executes learner code. A notebook is parsed as plain JSON (nbformat's reader pulls in
jsonschema's format checkers, about 2 s of imports per grading run, for checks done here).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from autograder import layout
from autograder.spec import Stage, available_stages, load_stage

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024


class SubmissionError(Exception):
    """The file cannot be graded at all (not a notebook, unknown stage, unreadable)."""


@dataclass
class Submission:
    """A notebook read as data: its stage, the learner's solution cells in order, and its digest."""

    path: Path
    stage: Stage
    cells: list[str]
    digest: str
    warnings: list[str] = field(default_factory=list)


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; a folder means every notebook under it (nbgrader's layout or flat)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(q for q in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
        else:
            out.append(p)
    return out


def _stage_from(nb: dict, path: Path) -> str | None:
    votes: dict[str, int] = {}
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        gid = str(meta.get("grade_id", "")) if isinstance(meta, dict) else ""
        m = re.match(r"^(s\d\d)[.-]", gid)
        if m:
            votes[m.group(1)] = votes.get(m.group(1), 0) + 1
    known = set(available_stages())
    ranked = [s for s, _ in sorted(votes.items(), key=lambda kv: -kv[1]) if s in known]
    if ranked:
        return ranked[0]
    sid = layout.stage_of_notebook(path.stem)  # a notebook stripped of metadata: its file name
    return sid if sid in known else None


def read_submission(path: Path) -> Submission:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SubmissionError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise SubmissionError(f"{path.name} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
    nb = parse_notebook(raw, path.name)
    sid = _stage_from(nb, path)
    if sid is None:
        raise SubmissionError(f"{path.name}: cannot tell which stage this notebook belongs to")
    stage = load_stage(sid, hidden=True)
    cells = [cell_source(c) for c in nb["cells"]
             if c.get("cell_type") == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution") is True]
    return Submission(path, stage, cells, hashlib.sha256(raw).hexdigest())


def parse_notebook(raw: bytes, name: str) -> dict:
    """A v4 notebook as plain JSON, or :class:`SubmissionError` saying why it is not one."""
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SubmissionError(f"{name} is not a readable notebook ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SubmissionError(f"{name} is not a readable notebook (no list of cells)")
    if nb.get("nbformat") != 4:
        raise SubmissionError(f"{name} is in notebook format {nb.get('nbformat')!r}; open and save it in Jupyter (format 4)")
    if not all(isinstance(c, dict) and isinstance(c.get("metadata", {}), dict) for c in nb["cells"]):
        raise SubmissionError(f"{name} is not a readable notebook (malformed cells)")
    return nb


def cell_source(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def digest(path: Path) -> str | None:
    """sha256 of the file now, or None when it is gone."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None

"""Helpers for the project's own tests: grade the reference, the stub, or a variant of the reference.

A *variant* is the reference module with textual edits (a realistic wrong answer); it is turned into
a learner notebook exactly as a learner would submit it, and graded by the real grader.
"""
from __future__ import annotations

import copy
import functools
import json
import tempfile
from pathlib import Path

import nbformat

from autograder.core import cell_ids, layout
from autograder.core.pysource import object_source, solution_region
from autograder.core.results import SubmissionResult
from autograder.grading.grade import grade_paths


def apply_edits(text: str, edits: list[tuple[str, str]]) -> str:
    for old, new in edits:
        n = text.count(old)
        if n != 1:
            raise AssertionError(f"edit target must occur exactly once, found {n}: {old!r}")
        text = text.replace(old, new)
    return text


def graft(stage_id: str, target: str, code: str) -> str:
    """The reference module's text with ``target``'s solution region holding ``code`` instead
    (indented like the region's markers): what a learner gets by pasting ``code`` into that TODO."""
    text = layout.stage_files(stage_id).reference.read_text(encoding="utf-8")
    lines = text.splitlines()
    begin, end = solution_region(text, target)
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    body = [indent + ln if ln.strip() else "" for ln in code.splitlines()]
    return "\n".join(lines[: begin + 1] + body + lines[end:]) + "\n"


@functools.lru_cache(maxsize=32)
def _read_notebook(path: Path, stamp: tuple[int, int]) -> nbformat.NotebookNode:
    """The notebook at ``path`` as it was at ``stamp`` (its mtime and size): read and validated once for
    all the variants made from it (a stage's wrong answers are dozens); callers get a copy."""
    return nbformat.read(path, as_version=4)


def _learner_notebook(stage_id: str, lang: str) -> nbformat.NotebookNode:
    """The stage's learner notebook of edition ``lang``, shared: never changed by its readers."""
    learner = layout.stage_files(stage_id).learner(lang)
    seen = learner.stat()
    return _read_notebook(learner, (seen.st_mtime_ns, seen.st_size))


def _filled_sources(stage_id: str, edits: list[tuple[str, str]], nb: nbformat.NotebookNode) -> dict[int, str]:
    """Cell index -> source, for each solution cell of ``nb``, filled from the edited reference."""
    text = apply_edits(layout.stage_files(stage_id).reference.read_text(encoding="utf-8"), edits)
    return {i: object_source(text, cell_ids.code_object(meta["grade_id"])) for i, cell in enumerate(nb.cells)
            if (meta := cell.metadata.get("nbgrader", {})).get("solution")}


def variant_notebook(stage_id: str, edits: list[tuple[str, str]], lang: str = "en") -> nbformat.NotebookNode:
    """The learner notebook (of edition ``lang``) with every solution cell filled from the edited reference."""
    nb = copy.deepcopy(_learner_notebook(stage_id, lang))
    for i, source in _filled_sources(stage_id, edits, nb).items():
        nb.cells[i].source = source
    return nb


def variant_json(stage_id: str, edits: list[tuple[str, str]], lang: str = "en") -> str:
    """:func:`variant_notebook` as the text of its file, each source split in lines as Jupyter saves it;
    made without copying or validating the notebook (whose only change is the source of solution cells):
    a stage's mutation tests write dozens."""
    nb = _learner_notebook(stage_id, lang)
    filled = _filled_sources(stage_id, edits, nb)
    cells = [{**cell, "source": filled.get(i, cell.source).splitlines(keepends=True)} for i, cell in enumerate(nb.cells)]
    return json.dumps({**nb, "cells": cells}, ensure_ascii=False, sort_keys=True)


def grade_variants(stage_id: str, variants: dict[str, list[tuple[str, str]]],
                   only: dict[str, set[str]] | None = None) -> dict[str, SubmissionResult]:
    """Grade several variants in one parallel run; keys are the caller's names for them. ``only``
    maps a variant's name to the TODOs graded in it (default: every TODO)."""
    with tempfile.TemporaryDirectory(prefix="pcw-variants-") as tmp:
        paths = {}
        for i, (name, edits) in enumerate(variants.items()):
            p = Path(tmp) / f"v{i:03d}.ipynb"
            p.write_text(variant_json(stage_id, edits), encoding="utf-8")
            paths[str(p)] = name
        names = {name: path for path, name in paths.items()}
        results = grade_paths(list(paths), only={names[n]: todos for n, todos in (only or {}).items()})
        return {paths[r.path]: r for r in results}


def grade_variant(stage_id: str, edits: list[tuple[str, str]]) -> SubmissionResult:
    return grade_variants(stage_id, {"variant": edits})["variant"]


def assert_blamed_on(result: SubmissionResult, todo_id: str) -> None:
    """A wrong answer for ``todo_id`` must fail that TODO, with a real reason, and no other TODO."""
    assert result.failed_todos() == {todo_id}, [(t.id, t.message) for t in result.todos]
    failed = next(t for t in result.todos if t.id == todo_id)
    assert failed.message and "not implemented" not in failed.message, failed.message


def assert_all_pass(result: SubmissionResult) -> None:
    """A correct answer written differently from the reference must earn every point."""
    assert result.failed_todos() == set(), [(t.id, t.message) for t in result.todos if not t.passed]

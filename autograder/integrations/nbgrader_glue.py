"""nbgrader integration: a course directory laid out from ``solutions/``, and preprocessors that put
the isolated grader's verdict into nbgrader's own autograde and feedback steps.

With the generated ``nbgrader_config.py``, ``nbgrader autograde`` does not execute the submission in
a kernel (where learner code could patch ``check`` and score); :class:`IsolatedGrade` runs
:mod:`autograder.grading.grade` instead and writes each TODO's verdict as the output of its test cell, so
nbgrader's ``SaveAutoGrades`` records exactly the points the CLI reports.

Parity with the CLI, for every submission the CLI can grade (or a per-student reason in the log):
:class:`IsolatedGrade` grades the file the student handed in, as the CLI does (not nbgrader's
sanitized copy); a TODO whose test cell the notebook lost (metadata stripped, e.g. by a jupytext
round trip) gets that cell back from the gradebook, so its verdict is recorded rather than left at 0;
and :func:`find_renamed_notebooks` (nbgrader's ``pre_convert_hook``) lets nbgrader grade a notebook
saved under another name (``03_block_pool copy.ipynb``) when it is the only candidate and belongs to
the assignment's stage, and otherwise tells the instructor, per student, what to rename.

``submitted/`` is the instructor's record of what was handed in: nothing here writes into it. A renamed
notebook is read in place by :class:`SubmittedUnderReleasedName` (nbgrader's ``exporter_class``) under
the released name nbgrader's converter needs, and :class:`IsolatedGrade` grades that original file.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import traceback
from dataclasses import replace
from pathlib import Path

import jsonschema
import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader import utils
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata, ClearHiddenTests, NbGraderPreprocessor, OverwriteCells
from traitlets import Bool, Unicode

from autograder.core import cell_ids, layout, messages
from autograder.core.i18n import text
from autograder.core.pysource import HIDDEN_BEGIN, HIDDEN_END, STUB_CODE
from autograder.core.safetext import one_line
from autograder.integrations import nbgrader_batch
from autograder.learner.standing import RECORD

#: What separates a verdict's fields (check, input, expected, got, hint, ...) in a TODO's message
#: (autograder.grading.grade); feedback shows each field on its own line.
FIELD_SEPARATOR = " | "


def verdict_lines(message: str, mark: str) -> str:
    """A TODO's message as feedback shows it: ``mark`` and its first field, then each further field on
    its own indented line, every field one printable line."""
    head, *fields = message.split(FIELD_SEPARATOR)
    return "\n".join([f"{mark} {one_line(head)}", *(f"   {one_line(f)}" for f in fields)])


def _error_output(message: str) -> nbformat.NotebookNode:
    first = one_line(message.split(FIELD_SEPARATOR, 1)[0])
    return nbformat.v4.new_output("error", ename="TODO", evalue=first, traceback=[verdict_lines(message, "❌")])


def _ok_output(message: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("stream", name="stdout", text=verdict_lines(message, "✅") + "\n")


def _partial_outputs(message: str, points: float) -> list[nbformat.NotebookNode]:
    """Partial credit the way nbgrader reads it: an execute_result holding the points earned."""
    return [nbformat.v4.new_output("stream", name="stdout", text=verdict_lines(message, "◐") + "\n"),
            nbformat.v4.new_output("execute_result", data={"text/plain": repr(points)}, execution_count=1)]


class IsolatedGrade(NbGraderPreprocessor):
    """Replaces nbgrader's ``Execute``: grade in confined children, write verdicts as cell outputs.

    With ``require_isolation`` (the default) it refuses to grade, for every submission, unless the
    kernel confines the children (the error in nbgrader's log says how to get what is missing); the
    level it graded under goes into the log, the notebook's metadata and every verdict's output.
    ``grading`` overrides course.toml's mode: ``c.IsolatedGrade.grading = "partial"``; ``feedback``
    its feedback level: ``c.IsolatedGrade.feedback = "titles"``.
    """

    grading = Unicode(None, allow_none=True, help="all-or-nothing or partial (default: course.toml)").tag(config=True)
    feedback = Unicode(None, allow_none=True, help="values or titles (default: course.toml)").tag(config=True)
    require_isolation = Bool(True, help="refuse to grade unless the kernel confines learner code").tag(config=True)
    isolation = Unicode("best", help="best, no-namespaces or in-process").tag(config=True)

    def plan(self):
        """How this configuration grades: the isolation, the batch key of a glob, and ``grade_many``
        (:func:`nbgrader_batch.plan`, for the course folder nbgrader runs in).

        Raises, with ``require_isolation``, unless the kernel confines the children."""
        return nbgrader_batch.plan(self.isolation, self.require_isolation, self.grading, self.feedback, Path.cwd())

    def preprocess(self, nb, resources):
        iso, key, grade_many = self.plan()
        info = resources.get("nbgrader", {})
        name = resources.get("unique_key") or info.get("notebook") or "submission"
        handed_in = _submitted_file(self.config, info)

        if handed_in is not None:  # what the CLI grades: the student's own file, outputs and all
            # graded with the rest of nbgrader's batch, all at once on every core (see nbgrader_batch)
            result = nbgrader_batch.result_for(handed_in, key, self.config, info.get("assignment"), grade_many)
        else:
            with tempfile.TemporaryDirectory(prefix="pcw-nbgrader-") as tmp:
                folder = Path(tmp) / Path(str(info.get("assignment") or "assignment")).name  # pins the stage, as in submitted/
                folder.mkdir()
                path = folder / f"{Path(str(name)).name}.ipynb"
                nbformat.write(nb, path)
                result = grade_many([path])[0]  # its TODOs in parallel
        who = one_line(str(info.get("student", "?")))
        self.log.info("graded %s/%s under isolation %s", who, one_line(str(name)), iso.describe())
        assignment = info.get("assignment")
        editions = {layout.stage_files(result.stage).assignment(lang) for lang in layout.LANGUAGES} if result.stage else set()
        if assignment and editions and assignment not in editions:
            result.warnings.append(f"this notebook is stage {result.stage}, not assignment {assignment}")
        for w in result.warnings + ([result.error] if result.error else []):
            self.log.warning("%s/%s: %s", who, one_line(str(name)), one_line(w))
        shown = f"{info.get('student', '?')}/{assignment or '?'}/{Path(str(name)).name}.ipynb"
        nb.metadata["autograder"] = {"isolation": iso.to_json(), "warnings": result.warnings,
                                     "result": {**result.to_json(), "path": shown}}  # for `autograder report`
        lang = result.lang or None  # the notebook's edition: every word of its feedback in that language
        suffix = FIELD_SEPARATOR + text(messages.LEARNER_ISOLATION, lang).format(level=iso.level)
        verdicts = {cell_ids.grade_id(t.id): replace(t, message=t.message + suffix) for t in result.todos}
        restored = _restore_test_cells(nb, info, verdicts)
        if restored:
            self.log.warning("%s/%s: %d test cell(s) had lost their nbgrader metadata; restored them from the "
                             "gradebook to record their points: %s", info.get("student", "?"), name, len(restored),
                             ", ".join(restored))
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            cell.outputs = []
            cell.execution_count = None
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.metadata.get("nbgrader", {}).get("grade") and gid:
                t = verdicts.get(gid)
                if t is None:
                    cell.outputs = [_error_output(result.error or text(messages.TODO_UNGRADED, lang))]
                elif t.passed:
                    cell.outputs = [_ok_output(f"{t.id}: {t.message}")]
                elif t.points > 0:
                    cell.outputs = _partial_outputs(f"{t.id}: {t.points:g}/{t.max_points:g} · {t.message}", t.points)
                else:
                    cell.outputs = [_error_output(f"{t.id}: {t.message}")]
        return nb, resources


class ReleaseAwareOverwriteCells(OverwriteCells):
    """nbgrader's ``OverwriteCells``, silent about the one difference every untouched submission has:
    a locked test cell as released, i.e. with its hidden tests stripped. Every other change to a locked
    cell is still undone, exactly as nbgrader does, and reported with the student, the notebook and the
    cell it concerns (nbgrader's own line names the cell only, and a checksum nobody reads)."""

    _released: str | None = None
    _who: str = "?"

    def preprocess(self, nb, resources):
        self._sources = {}
        info = resources.get("nbgrader", {})
        self._who = f"{info.get('student', '?')}/{info.get('assignment', '?')}/{info.get('notebook', '?')}.ipynb"
        return super().preprocess(nb, resources)

    def _source_cell(self, grade_id, notebook_id, assignment_id):
        """The gradebook's source cell, read once per cell: nbgrader's own check asks for it again."""
        key = (grade_id, notebook_id, assignment_id)
        if key not in self._sources:
            self._sources[key] = self._find_source_cell(grade_id, notebook_id, assignment_id)
        return self._sources[key]

    def preprocess_cell(self, cell, resources, cell_index):
        self._released = None
        if self.gradebook.find_source_cell != self._source_cell:  # this notebook's gradebook: share its reads
            self._find_source_cell = self.gradebook.find_source_cell
            self.gradebook.find_source_cell = self._source_cell
        try:
            grade_id = cell.metadata.nbgrader["grade_id"]
            if utils.is_locked(cell):
                source = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
                self._released = _released_checksum(cell, source.source)
        except Exception:  # noqa: BLE001 - anything unusual: nbgrader's own handling below decides
            self._released = None
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name, attr, old, new):
        if attr == "checksum" and new is not None and new == self._released:
            return  # the released cell, untouched: nbgrader restores the hidden tests, nothing to report
        what = _CHANGED_CELL.get(attr, "its {attr} changed from {old} to {new}: the released one is graded")
        self.log.warning("%s: cell %s: %s", one_line(self._who), one_line(str(name)),
                         what.format(attr=attr, old=old, new=new))


@functools.lru_cache(maxsize=4096)
def _released_checksum_of(source: str, cell_type: str, grade: bool, solution: bool, locked: bool, grade_id: str,
                          points: str | None) -> str:
    release = nbformat.from_dict({"cell_type": cell_type, "source": source, "metadata": {"nbgrader": {
        "grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id,
        **({"points": points} if points is not None else {})}}})
    ClearHiddenTests()._remove_hidden_test_region(release)
    return utils.compute_checksum(release)


def _released_checksum(cell, source: str) -> str:
    """nbgrader's checksum of ``cell`` as released: the gradebook's ``source``, hidden tests stripped,
    with the cell's own type and flags (all the checksum reads). Every student's copy of a cell has the
    same answer: it is computed once per run, not once per student."""
    meta = cell.metadata.nbgrader
    points = str(float(meta["points"])) if utils.is_grade(cell) else None
    return _released_checksum_of(source, cell.cell_type, utils.is_grade(cell), utils.is_solution(cell),
                                 utils.is_locked(cell), meta["grade_id"], points)


#: What the student changed in a cell nbgrader restores (its ``report_change`` attributes), for the log.
_CHANGED_CELL = {
    "checksum": "the student edited this read-only cell: it is graded as released, without the edit",
    "cell_type": "the student changed this cell from {old} to {new}: it is graded as a {old} cell",
    "locked": "the student unlocked this read-only cell: it is graded as released",
    "points": "the student changed this cell's points from {old:g} to {new:g}: it is worth {old:g}",
}


#: released notebook path in ``submitted/`` (absolute, as nbgrader names it) -> the renamed file handed
#: in, for this process's nbgrader run: set by :func:`find_renamed_notebooks`, read by the exporter and
#: by :class:`IsolatedGrade`. Nothing is written under the released name.
_HANDED_IN_AS: dict[str, Path] = {}


def find_renamed_notebooks(assignment=None, student=None, notebooks=None, **_) -> None:
    """nbgrader's ``Autograde.pre_convert_hook``: grade a notebook saved under another name.

    nbgrader grades a submitted notebook only under the released notebook's exact file name and
    skips any other ("Skipping unknown notebook", then "did you forget to run generate_assignment?").
    For each released notebook missing from a student's submission, the one other notebook there
    that belongs to the same stage (by its cells, as the CLI reads it) takes the released name in
    ``notebooks`` (nbgrader's own list): :class:`SubmittedUnderReleasedName` reads the renamed file for
    that name and :class:`IsolatedGrade` grades it, so ``submitted/`` stays as handed in. When there is
    no such notebook, or more than one, the log says so for that student.

    Then, for the run's first student, it starts grading every notebook this run will convert
    (:func:`start_batch`), so that the batch runs while nbgrader sets up that student's gradebook
    rows and sanitizes the first notebook instead of after.
    """
    if not notebooks:
        return
    folder = Path(notebooks[0]).parent
    _find_renamed(folder, notebooks)
    start_batch(folder.name)


def _find_renamed(folder: Path, notebooks: list[str]) -> None:
    from autograder.grading.submission import SubmissionError, read_submission

    source = folder.parent.parent.parent / "source" / folder.name
    released = sorted(p.stem for p in source.glob("*.ipynb"))
    if not released:
        return
    who = f"student {folder.parent.name}, assignment {folder.name}"
    for name in released:
        if any(Path(n).stem == name for n in notebooks):
            continue
        others = [n for n in notebooks if Path(n).stem not in released]
        stage = layout.stage_of_notebook(name)
        fits, refused = [], []
        for n in others:
            try:
                if read_submission(Path(n)).stage.id == stage:
                    fits.append(n)
            except SubmissionError as exc:
                refused.append(exc.in_language("en"))  # the instructor's log: why it is no candidate (a link, ...)
                continue
        if len(fits) == 1:
            target = folder / f"{name}.ipynb"
            _HANDED_IN_AS[os.path.abspath(target)] = Path(os.path.abspath(fits[0]))
            notebooks[notebooks.index(fits[0])] = str(target)
            _say(f"{who}: no {name}.ipynb; graded {Path(fits[0]).name!r} (stage {stage}) as {name}.ipynb "
                 "(nbgrader grades notebooks by file name; the file handed in is read where it is)")
        else:
            found = ", ".join(repr(Path(n).name) for n in others) or "none"
            _say(f"{who}: no {name}.ipynb to grade; other notebooks there: {found}"
                 + (" (more than one of this stage: rename the one to grade)" if fits else
                    " (none of this stage)") + f"; it scores 0 until one is named {name}.ipynb"
                 + "".join(f"; not graded: {r}" for r in refused))


class SubmittedUnderReleasedName(NotebookExporter):
    """nbgrader's notebook exporter (``c.Autograde.exporter_class``), reading a renamed submission under
    the released name :func:`find_renamed_notebooks` gave it.

    nbgrader's converter takes the student, assignment and notebook ids from the path it converts, so
    a renamed notebook must be converted under the released path; that path is not written: this
    exporter reads the renamed file for it. Invariant: any path the hook did not name is read as
    nbgrader's own exporter reads it (autograded/ copies included)."""

    def from_filename(self, filename, resources=None, **kw):
        handed_in = _HANDED_IN_AS.get(os.path.abspath(filename))
        if handed_in is None:
            return super().from_filename(filename, resources=resources, **kw)
        nb, resources = super().from_filename(str(handed_in), resources=resources, **kw)
        resources["metadata"]["name"] = Path(filename).stem  # the released name, as nbgrader writes it
        return nb, resources


def start_batch(assignment: str) -> None:
    """Start the batch of ``assignment`` under the running nbgrader application's configuration, as
    :class:`IsolatedGrade` would on the first notebook it is asked for (same key, same selection).

    Nothing happens outside an nbgrader application, when the autograde preprocessors do not
    include :class:`IsolatedGrade`, or when isolation is required and missing (each notebook then
    fails as before, in :class:`IsolatedGrade`, with nbgrader's log saying why)."""
    from traitlets.config import Application

    if not Application.initialized():
        return
    config = Application.instance().config
    try:
        pps = config.Autograde.get("autograde_preprocessors") if "Autograde" in config else None
        if not pps or IsolatedGrade not in pps:
            return
        _, key, grade_many = IsolatedGrade(config=config).plan()
        nbgrader_batch.start(key, config, assignment, grade_many, early=True)
    except Exception:  # noqa: BLE001 - the batch then starts on the first request, or each notebook alone
        return


def _say(line: str) -> None:
    import sys

    print(f"[autograder] {line}", file=sys.stderr, flush=True)


def _submitted_file(config, info: dict) -> Path | None:
    """The notebook as the student handed it in (``submitted/<student>/<assignment>/<notebook>.ipynb``)."""
    from nbgrader.coursedir import CourseDirectory

    if not all(info.get(k) for k in ("student", "assignment", "notebook")):
        return None
    try:
        folder = CourseDirectory(config=config).format_path("submitted", info["student"], info["assignment"])
    except Exception:  # noqa: BLE001 - an unusual configuration: grade nbgrader's copy instead
        return None
    path = Path(folder) / f"{info['notebook']}.ipynb"
    renamed = _HANDED_IN_AS.get(os.path.abspath(path))
    if renamed is not None and not path.exists():  # graded as the student named it (find_renamed_notebooks)
        return renamed
    # a link is the student's file too: graded (and refused) as handed in, never as nbgrader's copy of
    # what it points to (nbgrader follows links when it copies a submission)
    return path if path.is_file() or path.is_symlink() else None


def _restore_test_cells(nb, info: dict, verdicts: dict) -> list[str]:
    """Append, from the gradebook, each graded TODO's test cell that the notebook no longer has."""
    from nbgrader.api import Gradebook, MissingEntry

    present = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells if c.cell_type == "code"}
    missing = [gid for gid in verdicts if gid not in present]
    if not missing or not info.get("db_url"):
        return []
    restored = []
    with Gradebook(info["db_url"]) as gb:
        for gid in missing:
            try:
                grade_cell = gb.find_grade_cell(gid, info["notebook"], info["assignment"])
                source = gb.find_source_cell(gid, info["notebook"], info["assignment"])
            except MissingEntry:
                continue
            cell = nbformat.v4.new_code_cell(source.source)
            cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": gid,
                                         "points": grade_cell.max_score, "schema_version": 3}
            nb.cells.append(cell)
            restored.append(gid)
    return restored


class _SchemaCompiledOnce(BaseMetadataValidator):
    """The per-cell schema check of nbgrader's metadata validator, with the schema compiled once per
    process: ``jsonschema.validate``, which nbgrader calls per cell, first checks the schema itself
    against its meta-schema (on every nbgrader cell, twice per notebook in autograde).
    Same validator class, same error (jsonschema's best match); a cell of another schema version goes
    to nbgrader's own code, which says so."""

    _compiled: dict = {}  # schema version -> a validator of that schema, checked once

    def validate_cell(self, cell) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None or meta.get("schema_version", 0) != self.schema_version:
            BaseMetadataValidator.validate_cell(self, cell)
            return
        validator = self._compiled.get(self.schema_version)
        if validator is None:
            kind = jsonschema.validators.validator_for(self.schema)
            kind.check_schema(self.schema)
            validator = self._compiled[self.schema_version] = kind(self.schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(meta))
        if error is not None:
            raise error


class _Validator(MetadataValidator, _SchemaCompiledOnce):
    """nbgrader's current metadata validator; its checks call up to :class:`_SchemaCompiledOnce`
    (the class order puts it between nbgrader's validator and their common base)."""


class CheckCellMetadataOnce(CheckCellMetadata):
    """nbgrader's ``CheckCellMetadata``: the same checks, log lines and error, with one validator per
    process whose schema is compiled once (nbgrader builds a validator per notebook and checks its
    schema per cell)."""

    _validator: _Validator | None = None

    def preprocess(self, nb, resources):
        if CheckCellMetadataOnce._validator is None:
            CheckCellMetadataOnce._validator = _Validator()
        try:
            CheckCellMetadataOnce._validator.validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg) from None
        return nb, resources


class HideHiddenTestCode(NbGraderPreprocessor):
    """For feedback: remove hidden-test lines from test cells, and any traceback line but our own.

    nbgrader's feedback shows the instructor version of test cells, hidden tests included, and the
    traceback of a failed one. Our outputs carry only the TODO id, check name and hint.
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        self.enabled = True  # an nbconvert preprocessor does nothing unless enabled

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            keep, hidden = [], False
            for line in cell.source.splitlines():
                s = line.strip()
                if s == HIDDEN_BEGIN:
                    hidden = True
                    continue
                if s == HIDDEN_END:
                    hidden = False
                    continue
                if not hidden:
                    keep.append(line)
            cell.source = "\n".join(keep)
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    out["traceback"] = [t for t in out.get("traceback", []) if t.startswith(("❌", "✅"))] or \
                        [f"{out.get('ename', 'Error')}: the check failed"]
        return cell, resources


#: The feedback page's rules for verdicts: every output wraps inside the page (a verdict's long field
#: breaks at spaces, or anywhere in a long token), so each line, the hint included, is read without
#: scrolling sideways.
FEEDBACK_CSS = """\
/* prefix-cache workbook: verdicts wrap inside the page */
div.output_area pre, div.output_subarea pre, div.output_text pre, div.output_error pre, div.output_stream pre {
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  word-break: normal;
}
div.output_subarea { overflow-x: visible; min-width: 0; }
"""


class ReadableFeedback(NbGraderPreprocessor):
    """For feedback, after nbconvert's ``CSSHTMLHeaderPreprocessor``: adds :data:`FEEDBACK_CSS` to the
    styles nbgrader's feedback template inlines in the page (``resources["inlining"]["css"]``), so a
    verdict wraps instead of running off the visible box. Changes no cell."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.enabled = True  # an nbconvert preprocessor does nothing unless enabled

    def preprocess(self, nb, resources):
        inlining = resources.setdefault("inlining", {})
        inlining["css"] = [*inlining.get("css", []), FEEDBACK_CSS]
        return nb, resources


CONFIG_TEMPLATE = '''\
# nbgrader configuration written by `python -m autograder course`.
# The grader, the reference code and the hidden checks come from the course installed in the Python
# environment that runs nbgrader (never from a folder path): this course folder keeps working wherever
# it, or the clone it was made from, is moved.
import sys
try:
    import autograder  # noqa: F401
except ImportError:
    raise SystemExit(
        "nbgrader_config.py: the prefix-cache workbook course is not installed in this Python environment "
        f"({{sys.executable}}), and its grader grades this course.\\n"
        "Install it there, then run nbgrader again:\\n"
        "    pip install -e 'PATH/TO/YOUR/CLONE[grader,nbgrader]'    (a clone of the course)\\n"
        "    pip install 'prefix-cache-workbook[grader,nbgrader]'    (or a wheel of it)\\n"
        "or activate the environment that has it (the clone's .venv, made by scripts/setup.sh).") from None

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, ClearOutput, DeduplicateIds, IgnorePattern, LimitOutput,
                                    OverwriteKernelspec, SaveAutoGrades)
from autograder.integrations.nbgrader_glue import (CheckCellMetadataOnce, HideHiddenTestCode, IsolatedGrade,
                                     ReadableFeedback, ReleaseAwareOverwriteCells, SubmittedUnderReleasedName,
                                     add_submissions_without_autoflush, find_renamed_notebooks)

# The gradebook records a new submission without SQLAlchemy's warnings about it (see the function).
add_submissions_without_autoflush()

c = get_config()
c.CourseDirectory.course_id = "prefix-cache-workbook"
c.ClearSolutions.code_stub = {{"python": {stub}}}
# A learner's progress record (check() keeps it beside the notebook) is theirs alone, and anyone who
# can write the folder chooses what it holds: no step copies it (release, submit, collect, autograded/).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", {record!r}]
# An untouched test cell differs from the source only by its stripped hidden tests: no warning for that.
c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec, ReleaseAwareOverwriteCells,
                                      CheckCellMetadataOnce]
# Grade in confined processes instead of executing learner code in a kernel; refuse without kernel
# isolation (c.IsolatedGrade.require_isolation = False grades anyway, with the in-process layer only).
# A notebook saved under another name ("03_block_pool copy.ipynb") is graded under the released name.
# It is read where the student saved it: nothing is written into submitted/.
c.Autograde.pre_convert_hook = find_renamed_notebooks
c.Autograde.exporter_class = SubmittedUnderReleasedName
c.Autograde.autograde_preprocessors = [IsolatedGrade, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadataOnce]
# autograded/ and feedback/ keep each student's own files: the release's helper files (the course
# runtime, identical for everyone and not used by the isolated grader) are neither copied from source/
# nor from the submission, so no per-file "Copying" line per student either. Only for these two steps:
# generate_assignment must copy them into the release.
import sys as _sys
if next((a for a in _sys.argv[1:] if not a.startswith("-")), "") in ("autograde", "generate_feedback"):
    c.CourseDirectory.ignore = [*c.CourseDirectory.ignore, *{helpers!r}]
    # Each notebook is validated once, after the last preprocessor, not after each of the seven:
    # the same notebook is written (an invalid one still fails), at a sixth of the validations.
    c.Exporter.optimistic_validation = True
    # nbgrader opens the gradebook about nine times per notebook, each time on a new database engine
    # whose SQL statement cache starts empty, and checks its tables each time: one engine per database
    # URL, its tables checked by the first open, in this process only.
    from autograder.integrations.nbgrader_glue import share_gradebook_engines
    share_gradebook_engines()
# Feedback never shows hidden test code, and each verdict wraps inside the page, one field a line.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import GetGrades
c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ReadableFeedback, HideHiddenTestCode]
'''


def share_gradebook_engines() -> None:
    """Make nbgrader's ``Gradebook`` opens in this process share one SQLAlchemy engine per database URL,
    and check its tables once per engine.

    Each ``Gradebook(url)`` creates an engine and disposes of it on close; a new engine starts with an
    empty compiled-statement cache, so every query of every open was compiled again, most of an open's
    cost (on a shared engine each query after the first comes from the cache). The gradebook's reads and
    writes are unchanged: ``dispose()`` on a shared engine only closes its idle pooled connections.

    Each open also asks the database which tables it has and creates the missing ones (a fifth of
    nbgrader's own CPU per autograded notebook, at about nine opens a notebook). On a shared engine
    that is done by the first open only: once its ``create_all`` has run, the tables exist for the
    rest of the process (nbgrader never drops them), and later opens are told the names it found."""
    import nbgrader.api as api
    import sqlalchemy

    original = api.create_engine
    if getattr(original, "pcw_shared", False):
        return
    engines: dict = {}
    tables: dict[int, list[str]] = {}  # id(shared engine) -> its table names once create_all has run
    shared_ids: set[int] = set()

    def shared(url, *args, **kw):
        key = (str(url), args, tuple(sorted(kw.items())))
        try:
            hash(key)
        except TypeError:  # options this cache cannot key: a new engine, as nbgrader makes it
            return original(url, *args, **kw)
        if key not in engines:
            engines[key] = original(url, *args, **kw)
            shared_ids.add(id(engines[key]))
        return engines[key]

    create_all = api.Base.metadata.create_all

    def create_all_once(bind=None, *args, **kw):
        if args or kw or id(bind) not in shared_ids:  # another caller or engine: as SQLAlchemy does it
            return create_all(bind, *args, **kw)
        if id(bind) not in tables:
            create_all(bind)
            tables[id(bind)] = sqlalchemy.inspect(bind).get_table_names()
        return None

    class _Known:
        """What ``inspect(engine)`` answers for a shared engine whose tables were checked."""

        def __init__(self, names: list[str]) -> None:
            self._names = names

        def get_table_names(self) -> list[str]:
            return list(self._names)

    def inspect_known(subject, *args, **kw):
        names = tables.get(id(subject)) if id(subject) in shared_ids else None
        return _Known(names) if names else sqlalchemy.inspect(subject, *args, **kw)

    shared.pcw_shared = True  # type: ignore[attr-defined]  # marks the patch as ours
    api.create_engine = shared
    api.Base.metadata.create_all = create_all_once
    api.inspect = inspect_known


def add_submissions_without_autoflush() -> None:
    """Make nbgrader's ``Gradebook.add_submission`` build a submission with the session's autoflush off.

    It builds the submission, its notebooks, grades and comments as objects outside the session, and
    adds them all at its end; on the way it reads the assignment's notebooks and cells, and each read
    flushes the session first. Under SQLAlchemy 2 that flush finds the new objects hanging off the
    student and the assignment, not yet added, and warns about each (``SAWarning: Object of type
    <SubmittedAssignment> not in session ...``: six lines per student in every autograde log, none of
    them the instructor's business). Nothing is pending before the final add, so no read needs that
    flush: without it the gradebook holds the same rows, and the log only what concerns the class."""
    import nbgrader.api as api

    original = api.Gradebook.add_submission
    if getattr(original, "pcw_no_autoflush", False):
        return

    @functools.wraps(original)
    def add_submission(self, assignment, student, **kwargs):
        with self.db.no_autoflush:
            return original(self, assignment, student, **kwargs)

    add_submission.pcw_no_autoflush = True  # type: ignore[attr-defined]
    api.Gradebook.add_submission = add_submission


def release_helpers() -> list[str]:
    """The top-level names of the helper files every release carries (folders and files beside the
    notebook), which per-student folders leave out."""
    return sorted({rel.split("/", 1)[0] for sid in layout.built_stages() for _, rel in layout.release_files(sid)})


def layout_course(dest: Path, stage_ids: list[str] | None = None, editions: str = "en") -> list[str]:
    """Create an nbgrader course directory: config, and ``source/<assignment>/`` per stage and edition.

    ``editions``: ``"en"``, ``"zh"`` or ``"both"`` (two assignments per stage, e.g. ``02_block_hash``
    and ``02_block_hash_zh``; the same code earns the same points in either).
    """
    dest.mkdir(parents=True, exist_ok=True)
    langs = list(layout.LANGUAGES) if editions == "both" else [editions]
    assignments = []
    for sid in stage_ids or layout.built_stages():
        files = layout.stage_files(sid)
        for lang in langs:
            if lang not in files.languages:
                raise ValueError(f"{sid} has no {lang} edition (editions: {', '.join(files.languages)})")
            adir = dest / "source" / files.assignment(lang)
            adir.mkdir(parents=True, exist_ok=True)
            shutil.copy(files.instructor(lang), adir / files.instructor(lang).name)
            for src, rel in layout.release_files(sid):
                target = adir / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src, target)
            assignments.append(files.assignment(lang))
    (dest / "nbgrader_config.py").write_text(
        CONFIG_TEMPLATE.format(stub=json.dumps(STUB_CODE), helpers=release_helpers(),
                               record=Path(RECORD).stem + ".*"),  # the record and a write cut short
        encoding="utf-8")
    return assignments

"""Build every generated file from its one source, or check that none has drifted.

Sources: the reference modules ``solutions/sNN_*.py``, the notebook sources ``solutions/src/NN_*.py``
(jupytext percent format), the stage specs ``autograder/checks/sNN.py`` and ``course.toml``.
Generated: instructor notebooks ``solutions/NN_*.ipynb``, learner notebooks ``notebooks/NN_*.ipynb``
(stripped by nbgrader's own ClearSolutions/ClearHiddenTests preprocessors, so a classroom release
and a self-paced copy are the same notebook), expected values ``autograder/expected/sNN.json``, and
the notebook table in ``README.md``.
"""
from __future__ import annotations

import copy
import importlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat
from nbformat import NotebookNode

from autograder import data, layout
from autograder.probe import reference_outcome
from autograder.pysource import HIDDEN_BEGIN, HIDDEN_END, object_source, top_level_imports
from autograder.spec import Stage, load_stage

README_BEGIN, README_END = "<!-- notebooks:begin -->", "<!-- notebooks:end -->"
STAGES_BEGIN, STAGES_END = "<!-- stages:begin -->", "<!-- stages:end -->"


@dataclass(frozen=True)
class Course:
    """``course.toml``: where the repository lives, for Colab links and the setup cell."""

    repository: str
    branch: str
    name: str

    @property
    def raw_clone_url(self) -> str:
        return self.repository + ".git"

    def colab_url(self, path: str) -> str:
        gh = self.repository.removeprefix("https://github.com/")
        return f"https://colab.research.google.com/github/{gh}/blob/{self.branch}/{path}"


def load_course(path: Path = layout.COURSE_TOML) -> Course:
    cfg = tomllib.loads(path.read_text(encoding="utf-8"))["course"]
    return Course(cfg["repository"].rstrip("/"), cfg.get("branch", "main"), cfg.get("name", "prefix-cache-workbook"))


SETUP_TEMPLATE = '''\
# Course setup: make the course's helper package importable, then import check() and demo().
# Locally it is found next to this notebook; on Colab or ModelScope it is fetched once with git.
import importlib.util, pathlib, subprocess, sys

REPO_URL = "{clone_url}"
if importlib.util.find_spec("autograder") is None:
    here = pathlib.Path.cwd().resolve()
    root = next((d for d in (here, *here.parents) if (d / "autograder" / "spec.py").exists()), None)
    if root is None:
        root = pathlib.Path("{name}").resolve()
        if not root.exists():
            subprocess.run(["git", "clone", "--depth", "1", "--branch", "{branch}", REPO_URL, str(root)], check=True)
    sys.path.insert(0, str(root))

from autograder import check, demo
'''


def _nbgrader(grade_id: str, *, solution=False, grade=False, locked=False, points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def check_cell_source(todo_id: str) -> str:
    return f'check("{todo_id}")\n{HIDDEN_BEGIN}\ncheck("{todo_id}", hidden=True)\n{HIDDEN_END}'


def instructor_notebook(stage: Stage, course: Course) -> NotebookNode:
    """The instructor notebook: prose, reference code in solution cells, nbgrader metadata."""
    files = layout.stage_files(stage.id)
    src = jupytext.read(files.source, fmt="py:percent")
    ref = files.reference
    cells = []
    seen_checks: set[str] = set()
    for cell in src.cells:
        meta = dict(cell.metadata)
        if cell.cell_type == "markdown":
            cells.append(nbformat.v4.new_markdown_cell(cell.source))
            continue
        if "setup" in meta:
            body = SETUP_TEMPLATE.format(clone_url=course.raw_clone_url, branch=course.branch, name=course.name)
            imports = top_level_imports(ref)
            if imports:
                body += "\n# What the code below imports\n" + imports + "\n"
            if cell.source.strip():
                body += "\n" + cell.source
            new = nbformat.v4.new_code_cell(body.rstrip())
            new.metadata["nbgrader"] = _nbgrader(f"{stage.id}-setup-{len(cells)}", locked=True)
            new.metadata["tags"] = ["setup"]
        elif "solution" in meta:
            name = meta["solution"]
            new = nbformat.v4.new_code_cell(object_source(ref, name))
            new.metadata["nbgrader"] = _nbgrader(f"{stage.id}-code-{name}", solution=True)
        elif "given" in meta:
            # given code the learner reads but does not write: from the reference, run when grading
            names = [n.strip() for n in meta["given"].split(",") if n.strip()]
            new = nbformat.v4.new_code_cell("\n\n\n".join(object_source(ref, n) for n in names))
            new.metadata["nbgrader"] = _nbgrader(f"{stage.id}-given-{len(cells)}", locked=True)
            new.metadata["tags"] = ["setup", "given"]
        elif "check" in meta:
            todo = stage.todo(meta["check"])
            seen_checks.add(todo.id)
            new = nbformat.v4.new_code_cell(check_cell_source(todo.id))
            new.metadata["nbgrader"] = _nbgrader(todo.grade_id, grade=True, locked=True, points=todo.points)
        else:
            new = nbformat.v4.new_code_cell(cell.source)
        cells.append(new)
    missing = {t.id for t in stage.todos} - seen_checks
    if missing:
        raise ValueError(f"{layout.rel(files.source)}: no check cell for {sorted(missing)}")
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, c in enumerate(nb.cells):  # stable ids keep regenerated files byte-identical
        c["id"] = f"{stage.id}-{i:03d}"
    return nb


def learner_notebook(instructor: NotebookNode) -> NotebookNode:
    """Strip solutions and hidden tests with nbgrader's own preprocessors."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions

    nb = copy.deepcopy(instructor)
    resources: dict = {}
    for pp in (ClearSolutions(), ClearHiddenTests(), ClearOutput()):
        pp.enabled = True
        nb, resources = pp.preprocess(nb, resources)
    return nb


def expected_values(stage: Stage) -> dict:
    module = importlib.import_module(stage.reference)
    checks = {}
    for c in stage.checks:
        if c.hidden:
            continue
        out = reference_outcome(c, stage.reference)
        if out["kind"] not in ("ok", "raised"):
            raise RuntimeError(f"reference {module.__name__} fails its own check {c.key}: {out}")
        checks[c.key] = out
    return {"stage": stage.id, "checks": checks}


def _badge(url: str) -> str:
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"


def readme_table(stages: list[Stage], course: Course) -> str:
    rows = ["| stage | learner notebook | instructor notebook |", "|---|---|---|"]
    for s in stages:
        files = layout.stage_files(s.id)
        learner, instructor = layout.rel(files.learner()), layout.rel(files.instructor())
        rows.append(f"| {s.number}. {s.title} · {s.subtitle} | {_badge(course.colab_url(learner))} [`{learner}`]({learner}) | "
                    f"{_badge(course.colab_url(instructor))} |")
    return "\n".join(rows)


def stages_table(stages: list[Stage]) -> str:
    """The README's "what you build" table, from each stage's ``summary``."""
    rows = ["| stage | what you build |", "|---|---|"]
    rows += [f"| {s.number} | {s.summary} |" for s in stages]
    return "\n".join(rows)


def _replace_between(text: str, begin: str, end: str, body: str) -> str:
    if begin not in text or end not in text:
        return text
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


# -- writing / checking ---------------------------------------------------------------------------
def _dump_nb(nb: NotebookNode) -> str:
    text = nbformat.writes(nb, version=4)
    return text if text.endswith("\n") else text + "\n"


def generated_files(stage_ids: list[str] | None = None) -> dict[Path, str]:
    """Every generated file's path and its exact content (complete stages only)."""
    course = load_course()
    complete = [f.id for f in layout.all_stages() if f.is_complete]
    stages = [load_stage(s, hidden=False) for s in complete]
    out: dict[Path, str] = {}
    for stage in stages:
        if stage_ids is not None and stage.id not in stage_ids:
            continue
        files = layout.stage_files(stage.id)
        inst = instructor_notebook(stage, course)
        out[files.instructor()] = _dump_nb(inst)
        out[files.learner()] = _dump_nb(learner_notebook(inst))
        out[files.expected] = json.dumps(expected_values(stage), indent=1, sort_keys=True) + "\n"
    if layout.README.exists():
        text = layout.README.read_text(encoding="utf-8")
        text = _replace_between(text, README_BEGIN, README_END, readme_table(stages, course))
        out[layout.README] = _replace_between(text, STAGES_BEGIN, STAGES_END, stages_table(stages))
    return out


def _same(path: Path, content: str) -> bool:
    if not path.exists():
        return False
    old = path.read_text(encoding="utf-8")
    if old == content:
        return True
    if path.suffix == ".json" and path.parent == layout.EXPECTED:
        # floats from torch may differ in the last bits between machines: compare with tolerance
        a, b = json.loads(old), json.loads(content)
        if a.keys() != b.keys() or a["checks"].keys() != b["checks"].keys():
            return False
        return all(data.outcomes_equal(b["checks"][k], a["checks"][k], 1e-5) for k in a["checks"])
    return False


def build(check_only: bool = False, stage_ids: list[str] | None = None) -> list[Path]:
    """Write generated files (or, with ``check_only``, list the stale ones without writing)."""
    stale = []
    for path, content in generated_files(stage_ids).items():
        if _same(path, content):
            continue
        stale.append(path)
        if not check_only:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    return stale

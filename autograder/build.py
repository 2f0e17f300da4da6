"""Build every generated file from its one source, or check that none has drifted.

Sources: the reference modules ``solutions/sNN_*.py``, the notebook sources ``solutions/src/NN_*.py``
(jupytext percent format), the stage specs ``autograder/checks/sNN.py`` and ``course.toml``.
Generated: instructor notebooks ``solutions/NN_*.ipynb``, learner notebooks ``notebooks/NN_*.ipynb``
(stripped by nbgrader's own ClearSolutions/ClearHiddenTests preprocessors, so a classroom release
and a self-paced copy are the same notebook), expected values ``autograder/expected/sNN.json``, and
the notebook table in ``README.md``.
"""
from __future__ import annotations

import ast
import copy
import importlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat
from nbformat import NotebookNode

from autograder import data
from autograder.inline import reference_outcome
from autograder.spec import Stage, available_stages, load_stage

ROOT = Path(__file__).resolve().parent.parent
SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
README_BEGIN, README_END = "<!-- notebooks:begin -->", "<!-- notebooks:end -->"


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


def load_course(root: Path = ROOT) -> Course:
    cfg = tomllib.loads((root / "course.toml").read_text(encoding="utf-8"))["course"]
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


# -- reading sources ----------------------------------------------------------------------------
def object_source(module: Path | str, name: str) -> str:
    """Source of top-level ``name`` in a module (a path, or its text), with the comment lines right above it."""
    text = module.read_text(encoding="utf-8") if isinstance(module, Path) else module
    lines = text.splitlines()
    for node in ast.parse(text).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            end = node.end_lineno
            # the AST ends at the last statement: keep indented comments after it (an END marker)
            while end < len(lines) and lines[end].strip().startswith("#") and lines[end][:1].isspace():
                end += 1
            return "\n".join(lines[start: end])
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            start = node.lineno - 1
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            return "\n".join(lines[start: node.end_lineno])
    raise KeyError(f"the reference module has no top-level {name!r}")


def module_imports(module: Path) -> str:
    """The reference module's top-level import statements, so its code runs in the notebook."""
    text = module.read_text(encoding="utf-8")
    lines = text.splitlines()
    out = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            out.append("\n".join(lines[node.lineno - 1: node.end_lineno]))
    return "\n".join(out)


def reference_path(stage: Stage) -> Path:
    return ROOT / (stage.reference.replace(".", "/") + ".py")


def source_path(stage: Stage) -> Path:
    return ROOT / "solutions" / "src" / f"{stage.notebook}.py"


def _nbgrader(grade_id: str, *, solution=False, grade=False, locked=False, points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def check_cell_source(todo_id: str) -> str:
    return f'check("{todo_id}")\n### BEGIN HIDDEN TESTS\ncheck("{todo_id}", hidden=True)\n### END HIDDEN TESTS'


def instructor_notebook(stage: Stage, course: Course) -> NotebookNode:
    """The instructor notebook: prose, reference code in solution cells, nbgrader metadata."""
    src = jupytext.read(source_path(stage), fmt="py:percent")
    ref = reference_path(stage)
    cells = []
    seen_checks: set[str] = set()
    for cell in src.cells:
        meta = dict(cell.metadata)
        if cell.cell_type == "markdown":
            cells.append(nbformat.v4.new_markdown_cell(cell.source))
            continue
        if "setup" in meta:
            body = SETUP_TEMPLATE.format(clone_url=course.raw_clone_url, branch=course.branch, name=course.name)
            imports = module_imports(ref)
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
        raise ValueError(f"{source_path(stage).name}: no check cell for {sorted(missing)}")
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


def readme_table(stages: list[Stage], course: Course) -> str:
    rows = ["| stage | learner notebook | instructor notebook |", "|---|---|---|"]
    for s in stages:
        learner = f"notebooks/{s.notebook}.ipynb"
        instructor = f"solutions/{s.notebook}.ipynb"
        badge = f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({course.colab_url(learner)})"
        rows.append(f"| {s.number}. {s.title} · {s.subtitle} | {badge} [`{learner}`]({learner}) | "
                    f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({course.colab_url(instructor)}) |")
    return "\n".join(rows)


# -- writing / checking ---------------------------------------------------------------------------
def _dump_nb(nb: NotebookNode) -> str:
    text = nbformat.writes(nb, version=4)
    return text if text.endswith("\n") else text + "\n"


def generated_files(stage_ids: list[str] | None = None) -> dict[Path, str]:
    """Every generated file's path and its exact content."""
    course = load_course()
    stages = [load_stage(s, hidden=False) for s in (stage_ids or available_stages())]
    out: dict[Path, str] = {}
    for stage in stages:
        if not source_path(stage).exists():
            continue
        inst = instructor_notebook(stage, course)
        out[ROOT / "solutions" / f"{stage.notebook}.ipynb"] = _dump_nb(inst)
        out[ROOT / "notebooks" / f"{stage.notebook}.ipynb"] = _dump_nb(learner_notebook(inst))
        out[ROOT / "autograder" / "expected" / f"{stage.id}.json"] = json.dumps(expected_values(stage), indent=1, sort_keys=True) + "\n"
    readme = ROOT / "README.md"
    if readme.exists():
        text = readme.read_text(encoding="utf-8")
        if README_BEGIN in text and README_END in text:
            head, rest = text.split(README_BEGIN, 1)
            _, tail = rest.split(README_END, 1)
            built = [s for s in stages if source_path(s).exists()]
            out[readme] = f"{head}{README_BEGIN}\n{readme_table(built, course)}\n{README_END}{tail}"
    return out


def _same(path: Path, content: str) -> bool:
    if not path.exists():
        return False
    old = path.read_text(encoding="utf-8")
    if old == content:
        return True
    if path.suffix == ".json" and path.parent.name == "expected":
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

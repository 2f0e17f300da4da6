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
import importlib
import json
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import data, layout
from autograder.course import Course, load_course
from autograder.i18n import text
from autograder.notebook import instructor_notebook, learner_notebook
from autograder.probe import reference_outcome
from autograder.runtime import stage_build_id
from autograder.spec import Stage, load_stage

README_BEGIN, README_END = "<!-- notebooks:begin -->", "<!-- notebooks:end -->"
STAGES_BEGIN, STAGES_END = "<!-- stages:begin -->", "<!-- stages:end -->"


def defined_names(sources: list[str]) -> list[str]:
    """Top-level names the given code cells define (``check()`` does not warn about them)."""
    names: set[str] = set()
    for src in sources:
        for node in ast.parse(src).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return sorted(names)


def expected_values(stage: Stage, setup_sources: list[str] = ()) -> dict:
    module = importlib.import_module(stage.reference)
    checks = {}
    for c in stage.checks:
        if c.hidden:
            continue
        out = reference_outcome(c, stage.reference)
        if out["kind"] not in ("ok", "raised"):
            raise RuntimeError(f"reference {module.__name__} fails its own check {c.key}: {out}")
        checks[c.key] = out
    return {"stage": stage.id, "checks": checks, "given_names": defined_names(list(setup_sources))}


def _title(s: Stage, lang: str) -> str:
    zh = s.subtitle or text(s.title, "zh")
    return f"{text(s.title, 'en')} · {zh}" if lang == "en" else f"{zh} · {text(s.title, 'en')}"


def readme_table(stages: list[Stage], course: Course, lang: str = "en") -> str:
    head = "| stage | learner notebook | instructor notebook |" if lang == "en" else "| 阶段 | 学习者笔记本 | 讲师笔记本 |"
    rows = [head, "|---|---|---|"]
    for s in stages:
        files = layout.stage_files(s.id)
        editions = sorted(files.languages, key=lambda e: e != lang)  # the README's own language first
        links = [f"{course.badges(layout.rel(files.learner(e)))} [`{layout.rel(files.learner(e))}`]({layout.rel(files.learner(e))})"
                 for e in editions]
        instructor = "<br>".join(f"[`{layout.rel(files.instructor(e))}`]({layout.rel(files.instructor(e))})" for e in editions)
        rows.append(f"| {s.number}. {_title(s, lang)} | {'<br>'.join(links)} | {instructor} |")
    return "\n".join(rows)


def stages_table(stages: list[Stage], lang: str = "en") -> str:
    """The README's "what you build" table, from each stage's ``summary``."""
    rows = ["| stage | what you build |" if lang == "en" else "| 阶段 | 你要实现的内容 |", "|---|---|"]
    rows += [f"| {s.number} | {text(s.summary, lang)} |" for s in stages]
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
        expected = expected_values(stage)
        build_id = stage_build_id(stage.id, expected["checks"])
        for lang in files.languages:
            inst = instructor_notebook(stage, course, lang, build_id)
            out[files.instructor(lang)] = _dump_nb(inst)
            out[files.learner(lang)] = _dump_nb(learner_notebook(inst))
            if lang == layout.DEFAULT_LANGUAGE:
                expected["given_names"] = defined_names([c.source for c in inst.cells if "given" in c.metadata.get("tags", [])
                                                         or "setup" in c.metadata.get("tags", [])])
        out[files.expected] = json.dumps(expected, indent=1, sort_keys=True) + "\n"
    for readme, lang in ((layout.README, "en"), (layout.README_ZH, "zh")):
        if readme.exists():
            body = readme.read_text(encoding="utf-8")
            body = _replace_between(body, README_BEGIN, README_END, readme_table(stages, course, lang))
            out[readme] = _replace_between(body, STAGES_BEGIN, STAGES_END, stages_table(stages, lang))
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
        if a.keys() != b.keys() or a["checks"].keys() != b["checks"].keys() or a.get("given_names") != b.get("given_names"):
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

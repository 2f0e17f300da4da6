"""Build every generated file from its one source, or check that none has drifted.

Sources: each stage folder ``solutions/NN_<name>/`` (its reference ``reference.py``, its notebook source
``notebook.py`` in jupytext percent format, its spec ``checks.py`` and words ``checks.toml``) and ``course.toml``.
Generated: instructor notebooks ``solutions/NN_*.ipynb``, learner notebooks ``notebooks/NN_*.ipynb``
(stripped by nbgrader's own ClearSolutions/ClearHiddenTests preprocessors, so a classroom release
and a self-paced copy are the same notebook), presenter copies ``solutions/presenter/NN_*.ipynb`` (the
instructor notebook without nbgrader's markers or hidden tests, :mod:`autograder.authoring.presenter`), expected values ``autograder/expected/sNN.json``, and
the generated parts of ``README.md`` and ``README.zh.md`` (the badges and the stage table).
"""
from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from autograder.authoring.notebook import instructor_notebook, learner_notebook
from autograder.authoring.presenter import presenter_notebook
from autograder.child.probe import reference_outcome
from autograder.core import layout, pysource
from autograder.core.course import Course, load_course
from autograder.core.i18n import text
from autograder.core.spec import Stage, load_stage
from autograder.learner.runtime import stage_build_id

BADGES_BEGIN, BADGES_END = "<!-- badges:begin -->", "<!-- badges:end -->"
STAGES_BEGIN, STAGES_END = "<!-- stages:begin -->", "<!-- stages:end -->"


def defined_names(sources: list[str]) -> list[str]:
    """Top-level names the given code cells define (``check()`` does not warn about them)."""
    return sorted(set().union(*(pysource.defined_names(src) for src in sources)))


def expected_values(stage: Stage, setup_sources: Sequence[str] = ()) -> dict:
    module = importlib.import_module(stage.reference)
    checks = {}
    with _one_thread():
        for c in stage.checks:
            if c.hidden:
                continue
            with _language("en"):
                out = reference_outcome(c, stage.reference)
            if out["kind"] not in ("ok", "raised"):
                raise RuntimeError(f"reference {module.__name__} fails its own check {c.key}: {out}")
            if out["kind"] == "raised":  # "expected: raises ..." reads in the notebook's language
                with _language("zh"):
                    zh = reference_outcome(c, stage.reference).get("message")
                if zh == out.get("message"):  # raised in a TODO region, in English: the module's catalogue
                    zh = getattr(module, "RAISED_ZH", {}).get(zh, zh)
                if zh and zh != out.get("message"):
                    out["message_zh"] = zh
            checks[c.key] = out
    return {"stage": stage.id, "checks": checks, "given_names": defined_names(list(setup_sources))}


@contextlib.contextmanager
def _language(lang: str) -> Iterator[None]:
    """The reference's messages in ``lang`` while the block runs (the kernel's choice is put back)."""
    from autograder.core import i18n

    before = i18n._current
    i18n.set_language(lang)
    try:
        yield
    finally:
        i18n._current = before


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Reference probes run on one torch thread: a float sum's order then does not depend on how many
    cores the building machine has (it still may depend on its vector width; see :func:`_keep_committed`)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# -- the float policy -----------------------------------------------------------------------------
# Expected floats come from the building machine's arithmetic, and no rounding of them is stable: a
# value near a rounding boundary flips between machines. So a float in a generated expected file
# changes only when the check that compares it could tell the two apart: a fresh value within the
# check's own ``atol`` of the committed one keeps the committed bytes. A check without ``atol``
# compares exactly, and so does this. Everything else (keys, order, types, ints, strings) must be
# identical; otherwise the fresh file replaces the committed one.
def _close(old: Any, new: Any, atol: float | None) -> bool:  # JSON values
    if type(old) is not type(new):
        return False
    if isinstance(old, float):
        return old == new or (atol is not None and abs(old - new) <= atol)
    if isinstance(old, list):
        return len(old) == len(new) and all(_close(a, b, atol) for a, b in zip(old, new, strict=True))
    if isinstance(old, dict):
        return list(old) == list(new) and all(_close(old[k], new[k], atol) for k in old)
    return old == new


def _keep_committed(path: Path, stage: Stage, fresh: dict) -> bool:
    """Whether the committed expected file at ``path`` already says what ``fresh`` says (see above)."""
    if not path.exists():
        return False
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return False
    if not isinstance(old, dict) or list(old) != list(json.loads(json.dumps(fresh, sort_keys=True))):
        return False
    if old.get("stage") != fresh["stage"] or old.get("given_names") != fresh["given_names"]:
        return False
    if not isinstance(old.get("checks"), dict) or sorted(old["checks"]) != sorted(fresh["checks"]):
        return False
    atol = {c.key: c.atol for c in stage.checks}
    fresh_checks = json.loads(json.dumps(fresh["checks"]))  # the same types a reader of the file sees
    return all(_close(old["checks"][k], fresh_checks[k], atol.get(k)) for k in fresh_checks)


def _title(s: Stage, lang: str) -> str:
    """The stage's title in ``lang`` (the Chinese one is the stage's ``subtitle`` when it has one)."""
    return text(s.title, "en") if lang == "en" else (s.subtitle or text(s.title, "zh"))


def _learner_path(stage: Stage, lang: str) -> str:
    """The stage's learner notebook in the README's language, else in the default one."""
    files = layout.stage_files(stage.id)
    return layout.rel(files.learner(lang if lang in files.languages else layout.DEFAULT_LANGUAGE))


def readme_badges(stages: list[Stage], course: Course, lang: str = "en") -> str:
    """The README's badges (course.toml's links): the first stage's learner notebook of the README's
    language, where a reader starts."""
    if not stages:
        return ""
    return course.badges(_learner_path(stages[0], lang))


def stages_table(stages: list[Stage], course: Course, lang: str = "en") -> str:
    """The README's stage table: each stage's title linking its learner notebook (the README's own
    language), what the learner builds (the stage's ``summary``) and a Colab link to that notebook.
    Text links, not badges: eight rows of badges would be most of a README meant to be read in two minutes."""
    head = "| stage | notebook | what you build | open |" if lang == "en" else "| 阶段 | 笔记本 | 你要实现的内容 | 打开 |"
    rows = [head, "|---|---|---|---|"]
    for s in stages:
        path = _learner_path(s, lang)
        opener = f"[Colab]({course.link('colab', path)})" if "colab" in course.links else ""
        rows.append(f"| {s.number} | [{_title(s, lang)}]({path}) | {text(s.summary, lang)} | {opener} |")
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
        given: list[str] = []
        for lang in files.languages:
            # the build id hashes only what no machine changes (runtime._canonical), so the committed
            # file and the fresh values give the same id
            inst = instructor_notebook(stage, course, lang, stage_build_id(stage.id, expected["checks"]))
            out[files.instructor(lang)] = _dump_nb(inst)
            out[files.learner(lang)] = _dump_nb(learner_notebook(inst))
            out[files.presenter(lang)] = _dump_nb(presenter_notebook(inst))
            if lang == layout.DEFAULT_LANGUAGE:
                given = defined_names([c.source for c in inst.cells if "given" in c.metadata.get("tags", [])
                                       or "setup" in c.metadata.get("tags", [])])
        expected["given_names"] = given
        keep = _keep_committed(files.expected, stage, expected)
        out[files.expected] = files.expected.read_text(encoding="utf-8") if keep else \
            json.dumps(expected, indent=1, sort_keys=True) + "\n"
    for readme, lang in ((layout.README, "en"), (layout.README_ZH, "zh")):
        if readme.exists():
            body = readme.read_text(encoding="utf-8")
            body = _replace_between(body, BADGES_BEGIN, BADGES_END, readme_badges(stages, course, lang))
            out[readme] = _replace_between(body, STAGES_BEGIN, STAGES_END, stages_table(stages, course, lang))
    return out


def _same(path: Path, content: str) -> bool:
    """Byte for byte: machine-dependent floats were settled by the float policy above."""
    return path.exists() and path.read_text(encoding="utf-8") == content


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

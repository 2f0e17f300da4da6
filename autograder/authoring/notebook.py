"""Assembling one edition of a stage's notebooks from its sources.

The notebook source (a stage folder's ``notebook.py``, jupytext percent format) says what goes where:

- ``# %% [markdown] lang="en"`` then ``# %% [markdown] lang="zh"``: one block of prose in both languages;
- ``# %% setup="course"``: the generated setup cell (course helpers, the edition's language, the
  reference module's imports), plus anything written in it;
- ``# %% given="A,B"``: the reference module's source of A and B (locked; runs when grading);
- ``# %% solution="Name"``: the reference module's ``Name``, with each TODO's contract from the spec
  written under its ``# TODO n (sNN.x)`` line;
- ``# %% check="sNN.x"``: the check cell of a TODO; ``# %% quiz="questions"``: the stage's quiz (questions,
  answer cell, check); ``# %% scoring="table"``: how the notebook is scored, from the spec and course.toml;
- any other code cell: demo code, shown as written (comments localized).
"""
from __future__ import annotations

import copy
import re

import jupytext
import nbformat
from nbformat import NotebookNode

from autograder.authoring.glossary import terms_markdown
from autograder.authoring.localize import localize_code
from autograder.authoring.setup_cell import setup_cell
from autograder.core import cell_ids, layout
from autograder.core.course import Course
from autograder.core.i18n import L, text
from autograder.core.pysource import HIDDEN_BEGIN, HIDDEN_END, object_source, top_level_imports
from autograder.core.quiz import LETTERS
from autograder.core.spec import Stage

PREREQUISITES = {"en": "## Prerequisites", "zh": "## 前置知识"}  # the frame's heading the terms list follows
_TODO_LINE = re.compile(r"^(\s*)# TODO (\d+) \((s\d\d\.\w+)\)\s*$")


def _nbgrader(grade_id: str, *, solution=False, grade=False, locked=False, points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def check_cell_source(todo_id: str, hidden: bool = True) -> str:
    if not hidden:  # a quiz has no hidden checks
        return f'check("{todo_id}")'
    return f'check("{todo_id}")\n{HIDDEN_BEGIN}\ncheck("{todo_id}", hidden=True)\n{HIDDEN_END}'


def with_contracts(code: str, stage: Stage, lang: str) -> str:
    """Write each TODO's contract (from the spec, in ``lang``) under its bare ``# TODO n (id)`` line."""
    out = []
    for line in code.splitlines():
        m = _TODO_LINE.match(line)
        if not m:
            out.append(line)
            continue
        todo = stage.todo(m.group(3))
        contract = text(todo.contract, lang).strip().splitlines()
        indent = m.group(1)
        out.append(f"{indent}# TODO {todo.number} ({todo.id}): {contract[0]}" if contract else line)
        out += [f"{indent}# {c}".rstrip() for c in contract[1:]]
        if todo.hints:
            out.append(f'{indent}# {text(HINT_POINTER, lang).format(id=todo.id)}')
    return "\n".join(out)


HINT_POINTER = L('Stuck? hint("{id}") shows a hint; call it again for the next one.',
                 '卡住了？hint("{id}") 给出一条提示，再调用一次给出下一条。')


def quiz_markdown(stage: Stage, lang: str) -> str:
    quiz = stage.quiz
    assert quiz is not None
    head = L("## Concept quiz (TODO {n}, {p} point{s})",
             "## 概念小测（TODO {n}，{p} 分）").format(n=quiz.number, p=quiz.points, s="s" if quiz.points > 1 else "")
    intro = L("Answer in the cell below; `check(\"{id}.quiz\")` marks each question without showing the answers.",
              "在下面的单元里作答；`check(\"{id}.quiz\")` 会逐题判分，但不会显示答案。").format(id=stage.id)
    parts = [text(head, lang), "", text(intro, lang), ""]
    for q in quiz.questions:
        parts.append(f"**{q.id}.** {text(q.text, lang)}")
        if q.choices:
            parts += [""] + [f"- **{LETTERS[j]}** {text(c, lang)}" for j, c in enumerate(q.choices)]
        else:
            if q.decimals == 0:
                parts.append(text(L("*(a whole number)*", "*（填一个整数）*"), lang))
            else:
                parts.append(text(L("*(a number, rounded to {d} decimals)*", "*（填一个数，保留 {d} 位小数）*")
                                  .format(d=q.decimals), lang))
        parts.append("")
    return "\n".join(parts).rstrip()


def scoring_markdown(stage: Stage, course: Course, lang: str) -> str:
    rows = [text(L("| TODO | what you write | points |", "| TODO | 你要写的 | 分值 |"), lang), "|---|---|---|"]
    rows += [f"| {t.number} · `{t.id}` | {text(t.title, lang)} | {t.points} |" for t in stage.todos]
    mode = {
        "all-or-nothing": L("A TODO earns its points when every one of its checks passes, hidden ones included.",
                            "一个 TODO 的所有检查（包括隐藏检查）都通过，才得到它的全部分数。"),
        "partial": L("A TODO earns its points in proportion to the checks it passes, hidden ones included.",
                     "一个 TODO 按通过的检查（包括隐藏检查）所占比例得分。"),
    }[course.grading]
    body = L(
        "## How this notebook is scored\n\n{rows}\n\nTotal: {total} points. {mode} Each TODO is graded on "
        "its own, with the course's code standing in for your other TODOs, so a slip in one TODO costs only "
        "that TODO's points. Grading runs the visible checks you see under each TODO plus hidden checks of the "
        "same TODO (they name themselves and give a hint when they fail, never their inputs). Only the cells "
        "with TODOs are graded (everything else comes from the course): keep the helpers you write inside "
        "them. `hint(...)` is free: using hints costs nothing.",
        "## 评分方式\n\n{rows}\n\n总分 {total} 分。{mode}每个 TODO 单独评分，其余 TODO 用课程自带的参考实现代替，"
        "所以一个 TODO 出错只会丢这一个 TODO 的分。评分时既运行你在每个 TODO 下看到的可见检查，也运行同一 TODO "
        "的隐藏检查（失败时只报名字和提示，不显示输入）。只有含 TODO 的单元会被评分（其余单元都用课程自带的版本），"
        "所以你写的辅助函数要放在这些单元里。`hint(...)` 不扣分，放心使用。")
    return text(body, lang).format(rows="\n".join(rows), total=stage.max_score, mode=text(mode, lang))


def instructor_notebook(stage: Stage, course: Course, lang: str = "en", build: str = "") -> NotebookNode:
    """The instructor notebook of edition ``lang``: prose, reference code, nbgrader metadata.
    ``build`` is the stage's build id (:func:`autograder.learner.runtime.stage_build_id`)."""
    files = layout.stage_files(stage.id)
    src = jupytext.read(files.source, fmt="py:percent")
    ref = files.reference
    cells: list[NotebookNode] = []
    seen_checks: set[str] = set()
    terms_added = False

    def code(source: str, meta: dict | None = None, tags: list[str] | None = None) -> None:
        new = nbformat.v4.new_code_cell(source.rstrip())
        if meta:
            new.metadata["nbgrader"] = meta
        if tags:
            new.metadata["tags"] = tags
        cells.append(new)

    for cell in src.cells:
        meta = dict(cell.metadata)
        if cell.cell_type == "markdown":
            if meta.get("lang", "en") == lang:
                cells.append(nbformat.v4.new_markdown_cell(cell.source))
                if PREREQUISITES[lang] in cell.source and not terms_added:
                    # the frame links the terms this stage introduces, right after its prerequisites
                    listing = terms_markdown(layout.stage_number(stage.id), lang, files.learner(lang))
                    if listing:
                        cells.append(nbformat.v4.new_markdown_cell(listing))
                    terms_added = True
        elif "setup" in meta:
            body = setup_cell(course, lang, stage.id, build) + _imports_block(top_level_imports(ref), lang)
            if cell.source.strip():
                body += "\n" + localize_code(cell.source, lang)
            code(body, _nbgrader(cell_ids.locked_cell_id(stage.id, "setup", len(cells)), locked=True), ["setup"])
        elif "solution" in meta:
            name = meta["solution"]
            source = with_contracts(localize_code(object_source(ref, name), lang), stage, lang)
            code(source, _nbgrader(cell_ids.code_cell_id(stage.id, name), solution=True))
        elif "given" in meta:
            names = [n.strip() for n in meta["given"].split(",") if n.strip()]
            source = "\n\n\n".join(localize_code(object_source(ref, n), lang) for n in names)
            code(source, _nbgrader(cell_ids.locked_cell_id(stage.id, "given", len(cells)), locked=True), ["setup", "given"])
        elif "check" in meta:
            todo = stage.todo(meta["check"])
            seen_checks.add(todo.id)
            code(check_cell_source(todo.id), _nbgrader(todo.grade_id, grade=True, locked=True, points=todo.points))
        elif "quiz" in meta:
            todo = next(t for t in stage.todos if t.target == "quiz")
            seen_checks.add(todo.id)
            cells.append(nbformat.v4.new_markdown_cell(quiz_markdown(stage, lang)))
            code(with_contracts(localize_code(object_source(ref, "quiz"), lang), stage, lang),
                 _nbgrader(cell_ids.code_cell_id(stage.id, "quiz"), solution=True))
            code(check_cell_source(todo.id, hidden=False),
                 _nbgrader(todo.grade_id, grade=True, locked=True, points=todo.points))
        elif "scoring" in meta:
            cells.append(nbformat.v4.new_markdown_cell(scoring_markdown(stage, course, lang)))
        else:
            code(localize_code(cell.source, lang))
    cells.insert(0, nbformat.v4.new_markdown_cell(course.badges(layout.rel(files.learner(lang)))))
    missing = {t.id for t in stage.todos} - seen_checks
    if missing:
        raise ValueError(f"{layout.rel(files.source)}: no check cell for {sorted(missing)}")
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["pcw"] = {"stage": stage.id, "lang": lang, "build": build,
                          # a generated file: edit these sources and run `python -m autograder build`
                          "generated_from": [layout.rel(p) for p in (files.source, files.reference, files.spec)]}
    for i, c in enumerate(nb.cells):  # stable ids keep regenerated files byte-identical
        c["id"] = f"{stage.id}-{lang}-{i:03d}" if lang != "en" else f"{stage.id}-{i:03d}"
    return nb


def _imports_block(imports: str, lang: str) -> str:
    if not imports:
        return ""
    return f"\n# {text(L('What the code below imports', '下面的代码用到的导入'), lang)}\n{imports}\n"


def learner_notebook(instructor: NotebookNode) -> NotebookNode:
    """Strip solutions and hidden tests with nbgrader's own preprocessors."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions

    nb = copy.deepcopy(instructor)
    resources: dict = {}
    for pp in (ClearSolutions(), ClearHiddenTests(), ClearOutput()):
        pp.enabled = True
        nb, resources = pp.preprocess(nb, resources)
    return nb

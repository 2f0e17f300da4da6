"""What every stage owes a learner, in both editions: the frame (objectives, prerequisites, time,
recap, further reading), predictions before demos, a graded quiz, contracts without code, three hint
tiers, prose in both languages side by side, and Chinese prose that is really Chinese."""
from __future__ import annotations

import json
import re

import jupytext
import pytest

from autograder.authoring.localize import english_left
from autograder.core import layout
from autograder.core.i18n import L
from autograder.core.spec import load_stage
from tests.conftest import stage_params

FRAME = {
    "en": ["## Learning objectives", "## Prerequisites", "**Time:**", "## Recap", "## Further reading"],
    "zh": ["## 学习目标", "## 前置知识", "**用时：**", "## 回顾", "## 延伸阅读"],
}


def _cells(path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def _markdown(path) -> str:
    return "\n".join(_source(c) for c in _cells(path) if c["cell_type"] == "markdown")


@pytest.mark.parametrize("stage_id", stage_params())
def test_every_notebook_has_the_frame_in_each_edition(stage_id):
    files = layout.stage_files(stage_id)
    assert files.languages == layout.LANGUAGES, f"{stage_id}: write the Chinese prose (lang=\"zh\" cells)"
    for lang in files.languages:
        text = _markdown(files.learner(lang))
        for heading in FRAME[lang]:
            assert heading in text, f"{stage_id} ({lang}): missing '{heading}'"
        minutes = re.search(r"(\*\*Time:\*\* about|\*\*用时：\*\* 约) (\d+)", text)
        assert minutes and int(minutes.group(2)) == load_stage(stage_id, hidden=False).minutes, \
            f"{stage_id} ({lang}): state the time as the spec's minutes"
        reading = text.split(FRAME[lang][4], 1)[1]
        assert len(re.findall(r"^\s*- ", reading, re.M)) >= 2, f"{stage_id} ({lang}): at least two readings"


@pytest.mark.parametrize("stage_id", stage_params())
def test_every_notebook_predicts_before_at_least_two_demos_and_has_a_quiz(stage_id):
    files = layout.stage_files(stage_id)
    code = "\n".join(_source(c) for c in _cells(files.learner()) if c["cell_type"] == "code")
    assert code.count("reveal(") >= 2, f"{stage_id}: at least two predict-then-run cells (reveal(...))"
    stage = load_stage(stage_id, hidden=False)
    assert stage.quiz is not None and 4 <= len(stage.quiz.questions) <= 6


@pytest.mark.parametrize("stage_id", stage_params())
def test_every_todo_has_a_contract_without_code_and_three_hint_tiers(stage_id):
    stage = load_stage(stage_id, hidden=False)
    code_span = re.compile(r"\(|\)|=|\[[^\]]*:|\bfor\b|\bin\b|\.append")  # calls, assignments, slices, loops
    assignment = re.compile(r"^\s*\w+\s*=\s*\S", re.M)
    for t in stage.todos:
        assert isinstance(t.contract, L) and t.contract.en.strip(), f"{t.id}: write a bilingual contract"
        spans = re.findall(r"`([^`]*)`", t.contract.en)
        assert not any(code_span.search(s) for s in spans) and not assignment.search(t.contract.en), \
            f"{t.id}: the contract must not give code: {t.contract.en!r}"
        assert len(t.hints) == 3 and all(isinstance(h, L) for h in t.hints), f"{t.id}: three bilingual hint tiers"
        assert isinstance(t.title, L), f"{t.id}: a bilingual title"
    for c in stage.checks:
        assert isinstance(c.hint, L), f"{c.key}: a bilingual hint"


@pytest.mark.parametrize("stage_id", stage_params())
def test_reference_todo_comment_is_the_bare_marker(stage_id):
    """The contract comes from the spec (one source): the reference module carries only the marker."""
    files = layout.stage_files(stage_id)
    text = files.reference.read_text(encoding="utf-8")
    for t in load_stage(stage_id, hidden=False).todos:
        assert re.search(rf"^\s*# TODO {t.number} \({re.escape(t.id)}\)\s*$", text, re.M), t.id


@pytest.mark.parametrize("stage_id", stage_params())
def test_prose_blocks_come_in_both_languages(stage_id):
    src = jupytext.read(layout.stage_files(stage_id).source, fmt="py:percent")
    md = [c for c in src.cells if c.cell_type == "markdown"]
    langs = [c.metadata.get("lang") for c in md]
    assert all(lang in ("en", "zh") for lang in langs), f"{stage_id}: every prose cell needs lang=\"en\" or \"zh\""
    pairs = list(zip(langs[::2], langs[1::2], strict=False))  # an odd count fails below, with the message
    assert len(langs) % 2 == 0 and all(p == ("en", "zh") for p in pairs), \
        f"{stage_id}: each English prose cell is followed by its Chinese twin"


def chinese_share(markdown: str) -> float:
    """Chinese characters over all counted characters, three Latin letters counting as one character;
    code spans, code blocks, formulas and links left out (the measure the Chinese-edition issue uses)."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)|https?://\S+|<[^>]+>", " ", text)
    han = len(re.findall(r"[\u4e00-\u9fff]", text))
    latin = len(re.findall(r"[A-Za-z]", text)) / 3
    return han / (han + latin) if han + latin else 0.0


@pytest.mark.parametrize("stage_id", stage_params())
def test_chinese_edition_prose_is_mostly_chinese(stage_id):
    files = layout.stage_files(stage_id)
    assert "zh" in files.languages, f"{stage_id}: no Chinese edition yet"
    share = chinese_share(_markdown(files.learner("zh")))
    assert share >= 0.60, f"{stage_id}: only {share:.0%} of the Chinese notebook's prose is Chinese"
    leftovers = [ln for c in _cells(files.learner("zh")) if c["cell_type"] == "code" for ln in english_left(_source(c))]
    assert not leftovers, f"{stage_id}: English comments left in the Chinese edition: {leftovers[:5]}"

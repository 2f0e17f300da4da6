"""The glossary defines every term in both languages and names the stage that introduces it; every
notebook links the terms of its stage; the Chinese notebooks write every term the way the glossary does."""
from __future__ import annotations

import json
import re

import pytest

from autograder.authoring.glossary import Term, parse, stage_terms, terms, terms_markdown, uses
from autograder.core import layout
from autograder.core.spec import load_stage
from tests.conftest import stage_params
from tests.course.test_chinese_edition import learner_prose, strip_code

HAN = re.compile(r"[\u4e00-\u9fff]")


def test_every_row_of_the_glossary_table_is_a_term():
    rows = [line for line in layout.GLOSSARY.read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith(("| term", "|---"))]
    assert len(rows) == len(terms()) > 50, "a row the glossary parser does not read: check its columns"


def test_every_term_has_a_definition_in_both_languages_and_a_stage():
    stages = {layout.stage_number(s) for s in layout.stage_ids()}
    anchors = [t.anchor for t in terms()]
    assert len(anchors) == len(set(anchors)), "two terms share a link target"
    for t in terms():
        assert t.stage in stages, f"{t.en}: introduced in stage {t.stage}, which does not exist"
        assert len(t.define.en.split()) >= 4 and t.define.en.rstrip().endswith("."), f"{t.en}: define it in English"
        assert len(HAN.findall(t.define.zh)) >= 6 and t.define.zh.rstrip().endswith("。"), f"{t.en}: define it in Chinese"
        assert t.define.en.count(". ") <= 1 and t.define.zh.count("。") <= 2, f"{t.en}: one or two sentences"


def test_terms_parse_their_chinese_form():
    t = parse('| <a id="prompt"></a>prompt | 提示词（prompt） | 1 | A request\'s tokens. | 请求的 token。 |')[0]
    assert (t.zh_head, t.kept_in_english, t.english_forms()) == ("提示词", False, ["prompt"])
    kv = Term("kv-cache", "TTFT (time to first token)", "TTFT（首 token 延迟）", 6, t.define)
    assert kv.kept_in_english and kv.english_forms() == ["TTFT", "time to first token"]


@pytest.mark.parametrize("stage_id", stage_params())
def test_every_notebook_links_the_terms_its_stage_introduces(stage_id):
    files = layout.stage_files(stage_id)
    own = stage_terms(layout.stage_number(stage_id))
    assert own, f"{stage_id}: the glossary names no term this stage introduces"
    for lang in files.languages:
        for path in (files.learner(lang), files.instructor(lang)):
            text = "".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                           if c["cell_type"] == "markdown")
            missing = [t.en for t in own if f"glossary.md#{t.anchor})" not in text]
            assert not missing, f"{layout.rel(path)}: link the glossary entries {missing}"



@pytest.mark.parametrize("stage_id", stage_params())
def test_the_generated_terms_cell_is_the_only_list_of_terms(stage_id):
    """A hand-written "key terms" paragraph repeats the generated list and drifts from it: there is none."""
    files = layout.stage_files(stage_id)
    own = stage_terms(layout.stage_number(stage_id))
    for lang in files.languages:
        head = terms_markdown(layout.stage_number(stage_id), lang, files.learner(lang)).split("：")[0].split(":")[0]
        for path in (files.learner(lang), files.instructor(lang)):
            cells = [("".join(c["source"])) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "markdown"]
            assert sum(head in c for c in cells) == 1, f"{layout.rel(path)}: one generated Terms cell"
            for cell in (c for c in cells if head not in c):
                assert not re.search(r"关键术语|\b[Kk]ey terms\b|\bTerms:", cell), f"{layout.rel(path)}: {cell[:200]}"
                for line in cell.splitlines():  # a run of five or more of the stage's terms in one sentence
                    named = [t for t in own if (t.zh if lang == "zh" else t.en) in line]
                    assert len(named) < 5 or "|" in line, f"{layout.rel(path)}: a list of terms? {line[:160]}"


# -- one word for one thing ---------------------------------------------------------------------------
def _glossed(text: str) -> str:
    """``text`` without the glossary's own forms: a Chinese term with its English in brackets (allowed at
    first use: 提示词（prompt）, *提示词*（prompt）, a line break between them), the Chinese term, and the
    English-kept form."""
    text = text.replace("*", "")
    for t in sorted(terms(), key=lambda t: len(t.zh_head), reverse=True):
        for e in t.english_forms():
            text = re.sub(re.escape(t.zh_head) + r"\s*（" + re.escape(e) + r"[）,，、]", " | ", text, flags=re.I)
    for f in sorted({f for t in terms() for f in (t.zh, t.zh_head)}, key=len, reverse=True):
        text = text.replace(f, " | ")
    return text


def _spec_texts(stage_id: str) -> str:
    """The Chinese texts of a stage's spec a learner reads: titles, contracts, hints (the last tier is
    near-code, left out), check texts, quiz."""
    stage = load_stage(stage_id, hidden=True)
    out = [stage.title, stage.summary]
    for t in stage.todos:
        out += [t.title, t.contract, *t.hints[:-1]]
    for c in stage.checks:
        out += [c.title, c.hint]  # not its input: code, whose names stay as they are
    return "\n".join(x.zh for x in out if hasattr(x, "zh"))


def term_drift(text: str) -> dict[str, int]:
    """English words of terms the Chinese edition writes in Chinese, counted where they stand alone."""
    t = re.sub(r"\b\w+\([^)]*\)", " ", strip_code(text))  # a call written in prose: code, not a term
    t = _glossed(t)
    found: dict[str, int] = {}
    forms = {f for term in terms() if not term.kept_in_english for f in term.english_forms()}
    for form in sorted(forms, key=len, reverse=True):  # "block pool" before "block"
        pattern = re.compile(r"(?<![\w.-])" + re.escape(form) + r"(?![\w(-])", re.I)
        n = len(pattern.findall(t))
        if n:
            found[form] = n
            t = pattern.sub(" | ", t)
    return found


@pytest.mark.parametrize("stage_id", stage_params())
def test_chinese_notebooks_write_every_term_in_its_glossary_form(stage_id):
    files = layout.stage_files(stage_id)
    drift = term_drift(learner_prose(files.learner("zh")) + "\n" + _spec_texts(stage_id))
    assert not drift, f"{stage_id}: write these terms as the glossary does: {drift}"


def test_the_terminology_check_sees_drift():
    assert term_drift("把 prompt 交给块池") == {"prompt": 1}
    assert term_drift("提示词（prompt）交给 block pool") == {"block pool": 1}
    assert term_drift("`prompt` 和 system prompt、hint(\"s01.x\")") == {}


# -- every term used, every term a notebook uses defined -------------------------------------------------
def _prose(lang: str) -> dict[str, str]:
    return {sid: learner_prose(layout.stage_files(sid).learner(lang)) for sid in layout.built_stages()
            if lang in layout.stage_files(sid).languages}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_term_the_glossary_defines_is_used(lang):
    """Use counts over the learner notebooks of an edition: a term no notebook writes does not belong in
    the glossary (or the notebooks lost it)."""
    prose = "\n".join(_prose(lang).values())
    counts = {t.anchor: uses(t, prose, lang) for t in terms()}
    unused = sorted(a for a, n in counts.items() if n == 0)
    assert not unused, f"{lang}: glossary terms no notebook uses: {unused}"
    assert sum(counts.values()) > 10 * len(counts), "the counter finds the terms"


def test_the_use_counter_counts_words_not_pieces():
    term = next(t for t in terms() if t.anchor == "sentinel")
    assert uses(term, "a tail sentinel; two Sentinels; sentinel-free", "en") == 2  # plural and case; not a compound
    assert uses(term, "用带哨兵的双向链表，哨兵块", "zh") == 2
    kept = next(t for t in terms() if t.anchor == "chunked-prefill")
    assert uses(kept, "chunked prefill（分块 prefill）；chunked prefills", "zh") == 2


# The English in brackets after a Chinese word marks a term at its first use (the glossary's own
# convention); these brackets gloss ordinary words or names instead, which the glossary leaves out.
NOT_TERMS = frozenset({"widget", "identity", "ledger", "device", "CPU", "Moonshot AI"})
GLOSS = re.compile(r"[\u4e00-\u9fff]（(?P<en>[A-Za-z][A-Za-z /'-]*)）")  # words only: not "TODO 4", "ICML 2025"


@pytest.mark.parametrize("stage_id", stage_params())
def test_every_term_a_chinese_notebook_glosses_is_in_the_glossary(stage_id):
    """A Chinese notebook that writes 中文（English） introduces a term: the glossary defines it."""
    files = layout.stage_files(stage_id)
    if "zh" not in files.languages:
        pytest.skip(f"{stage_id} has no Chinese edition")
    known = {f.lower() for t in terms() for f in t.english_forms()} | \
        {m.group(1).lower() for t in terms() for m in re.finditer(r"（([^）]+)）", t.zh)}  # 经验分布函数（CDF）
    glossed = {m["en"].strip() for m in GLOSS.finditer(learner_prose(files.learner("zh")))}
    missing = sorted(g for g in glossed if g.lower() not in known and g not in NOT_TERMS)
    assert not missing, f"{stage_id}: terms glossed in the Chinese notebook but not defined: {missing}"


# The terms a Chinese-only learner met often without a definition (issue 42): each stays defined.
MET_UNDEFINED = ("前缀封闭", "哨兵", "伪请求", "驻留持有", "悬崖", "证据等级", "批大小", "尾部延迟", "chunked prefill")


@pytest.mark.parametrize("word", MET_UNDEFINED)
def test_the_terms_learners_met_undefined_are_defined_and_used(word):
    term = next((t for t in terms() if t.zh_head == word), None)
    assert term is not None, f"define {word} in docs/glossary.md"
    prose = "\n".join(_prose("zh").values())
    assert uses(term, prose, "zh") >= 2, f"{word}: used {uses(term, prose, 'zh')} times"

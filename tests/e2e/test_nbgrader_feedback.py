"""nbgrader feedback a student can read: each verdict one field a line, in the edition's language.

The Chinese edition's verdicts (as :class:`IsolatedGrade` writes them into the graded notebook that
nbgrader's feedback shows) hold no sentence in English; the English edition's do (the detector finds
sentences). The page's layout is tested in a real browser in ``test_nbgrader_flow``."""
from __future__ import annotations

import re

import pytest

from autograder.core import layout
from tests.support.variants import variant_notebook

pytest.importorskip("nbgrader")

S01 = layout.stage_files("s01")
WRONG_MATCH = [("is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix",
                "is_match = all(t in prompt for t in cached_prefix)")]
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
QUOTED = re.compile(r"'[^']*'|`[^`]*`|\"[^\"]*\"")
WORDS = re.compile(r"[A-Za-z]{2,}(?:[ ,]+[A-Za-z]{2,})+")  # two Latin words or more: a phrase, not a name


def latin_sentences(text: str) -> list[str]:
    """The pieces of ``text`` (split at line ends and sentence marks) that say something in Latin words and
    hold no CJK character; quoted names (``'random_prompts'``, `` `quiz` ``) are not sentences."""
    pieces = re.split(r"[\n。；;：:（）()|]", QUOTED.sub(" ", text))
    return [p.strip() for p in pieces if WORDS.search(p) and not CJK.search(p)]


def feedback_text(lang: str) -> str:
    from autograder.integrations.nbgrader_glue import IsolatedGrade

    nb = variant_notebook("s01", WRONG_MATCH, lang)
    assignment = S01.assignment(lang)
    graded, _ = IsolatedGrade(require_isolation=False).preprocess(
        nb, {"nbgrader": {"assignment": assignment, "notebook": assignment}})
    out = []
    for cell in graded.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            for o in cell.outputs:
                out.extend(o.get("traceback", []) or [o.get("text", "")])
    return "\n".join(out)


@pytest.fixture(scope="module")
def said() -> dict[str, str]:
    return {lang: feedback_text(lang) for lang in ("en", "zh")}


def test_chinese_feedback_has_no_english_sentence(said):
    zh = said["zh"]
    assert "❌" in zh and "提示" in zh and "评分时的隔离级别" in zh, zh
    assert latin_sentences(zh) == [], zh


def test_the_detector_finds_the_english_editions_sentences(said):
    """Not vacuous: the same verdicts in English are sentences to the detector."""
    assert len(latin_sentences(said["en"])) >= 5, said["en"]


def test_each_field_of_a_failed_check_is_its_own_line(said):
    lines = said["en"].splitlines()
    failed = next(i for i, line in enumerate(lines) if line.startswith("❌ s01.match_prefix"))
    fields = [line.strip().split(":", 1)[0] for line in lines[failed + 1:failed + 6]]
    assert fields == ["input", "expected", "got", "hint", "also failing"], lines[failed:failed + 7]
    assert all(len(line) < 250 for line in lines), max(lines, key=len)

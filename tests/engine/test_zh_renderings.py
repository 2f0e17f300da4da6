"""What the grader and the checker add around a learner's value, in the edition's language: a value's
type and size, a cut number, a byte string; the line printed before grading; the quiz's last hint,
which names its stage rather than a placeholder."""
from __future__ import annotations

import re

import nbformat
import pytest

from autograder.commands.grade_cli import banner_language
from autograder.core import layout
from autograder.core.i18n import text
from autograder.core.spec import load_stage
from autograder.grading.display import compact_value, show_value

HAN = re.compile(r"[\u4e00-\u9fff]")
PYTHON_NAMES = re.compile(r"\b(?:dict|list|tuple|set|str|bytes|int|tensor)\b")


@pytest.mark.parametrize("value", [{f"k{i}": i for i in range(40)}, [f"item{i:04d}" for i in range(200)],
                                   tuple(i / 7 for i in range(200)), [b"y" * 300] * 3],
                         ids=["dict", "list", "tuple", "bytes"])
def test_a_long_value_is_described_in_the_editions_words(value):
    zh, en = compact_value(value, "zh"), compact_value(value, "en")
    assert HAN.search(zh) and not HAN.search(en), (zh, en)
    head = zh.split("：", 1)[0]  # the description before the value's first characters
    words = re.findall(r"[A-Za-z]+", PYTHON_NAMES.sub(" ", head))
    assert not words, f"English words in the Chinese description: {words} ({zh})"


def test_a_cut_number_and_a_byte_string_say_their_size_in_chinese():
    big = 10 ** 40
    assert show_value(big, compact=True, lang="zh").endswith("（共 41 位）")
    assert show_value(big, compact=True, lang="en").endswith("(41 digits)")
    assert "字节" in show_value(b"z" * 20, lang="zh") and "bytes" in show_value(b"z" * 20, lang="en")


def _notebook(tmp_path, name: str, lang: str):
    nb = nbformat.v4.new_notebook()
    nb.metadata["pcw"] = {"lang": lang}
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_the_line_before_grading_speaks_the_classes_language(tmp_path):
    zh = [_notebook(tmp_path, f"zh{i}.ipynb", "zh") for i in range(2)]
    en = _notebook(tmp_path, "en.ipynb", "en")
    assert banner_language(zh, None) == "zh"
    assert banner_language([*zh, en], None) == "en"  # a mixed folder: the default
    assert banner_language(zh, "en") == "en"         # --lang decides
    assert banner_language([tmp_path / "unreadable.ipynb"], None) == "en"


@pytest.mark.parametrize("stage_id", layout.built_stages())
def test_the_quiz_hints_name_their_stage(stage_id):
    stage = load_stage(stage_id, hidden=False)
    quiz = next((t for t in stage.todos if t.target == "quiz"), None)
    if quiz is None:
        pytest.skip(f"{stage_id} has no quiz")
    for lang in ("en", "zh"):
        last = text(quiz.hints[-1], lang)
        assert f'check("{stage_id}.quiz")' in last and "<" not in last and "‹" not in last, last

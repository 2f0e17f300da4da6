"""Every word a learner reads in the Chinese edition is Chinese: the given code's errors and invariant
messages, the grader's report, check inputs written as words, the tables' alignment, and the notebooks'
prose and comments (code identifiers and the glossary's English terms excepted)."""
from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from autograder.authoring.glossary import terms
from autograder.core import layout
from autograder.core.i18n import L, set_language
from autograder.core.results import SubmissionResult, TodoResult, TodoStatus
from autograder.core.spec import load_stage
from autograder.core.textwidth import display_width, pad
from autograder.grading import reports
from autograder.grading.verdict import check_label
from autograder.isolation import levels as isolation
from tests.conftest import stage_params

pytestmark = pytest.mark.slow  # the fast lane leaves it out: builds and grades both editions' notebooks

HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def lang():
    """Set the course language for one test and put it back to English afterwards."""
    yield set_language
    set_language("en")


# -- the given code's messages ---------------------------------------------------------------------------
def given_code_files() -> list[Path]:
    """The modules a learner runs without writing them: every course module (the given modules, and
    the references, whose TODO regions are the learner's own code) and the kernels."""
    return sorted(layout.course_modules().values()) + sorted(layout.KERNELS.glob("*.py"))


def _solution_lines(text: str) -> set[int]:
    inside, on = set(), False
    for i, line in enumerate(text.splitlines(), 1):
        if "### BEGIN SOLUTION" in line:
            on = True
        if on:
            inside.add(i)
        if "### END SOLUTION" in line:
            on = False
    return inside


def message_sites(path: Path) -> list[tuple[int, ast.expr]]:
    """``(line, message)`` of every ``raise E(message)``, ``assert test, message`` and ``problems.append(message)``
    outside TODO regions."""
    text = path.read_text(encoding="utf-8")
    skip = _solution_lines(text)
    out = []
    for node in ast.walk(ast.parse(text)):
        msg = None
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            # ResultError(todo, English, 中文) says both itself (workbook/contract.py)
            msg = node.exc if _called(node.exc, "ResultError") else node.exc.args[0]
        elif isinstance(node, ast.Assert) and node.msg is not None:
            msg = node.msg
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "problems"):
            msg = node.args[0]
        if msg is not None and node.lineno not in skip:
            out.append((node.lineno, msg))
    return out


def _called(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _bilingual(msg: ast.expr) -> bool:
    """``tr(English, 中文)`` or ``ResultError(todo, English, 中文)``."""
    if _called(msg, "tr") and len(msg.args) == 2:
        zh = msg.args[1]
    elif _called(msg, "ResultError") and len(msg.args) == 3:
        zh = msg.args[2]
    else:
        return False
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and HAN.search(n.value) for n in ast.walk(zh))


def _has_words(node: ast.expr) -> bool:
    """Whether a message expression holds prose (a literal with letters), not just a name it passes on."""
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and re.search(r"[A-Za-z]{2}", n.value)
               for n in ast.walk(node))


def test_every_message_of_given_code_is_bilingual():
    wrong = []
    for path in given_code_files():
        for line, msg in message_sites(path):
            if not _has_words(msg):
                continue
            if not _bilingual(msg):
                wrong.append(f"{layout.rel(path)}:{line}")
    assert not wrong, "write these messages as tr(English, 中文):\n" + "\n".join(wrong)


def _given_code_errors():
    """One call per kind of given code a learner reaches, each raising one of its messages."""
    from kernels import flops, kv_pool, model
    from solutions import s03_block_pool, s04_eviction
    from workbook import cache_sim, radix_sim, serving, traces, workload

    def corrupt_pool():
        pool = s03_block_pool.BlockPool(4, 2)
        pool.admit("a", [1, 2, 3])
        pool.blocks[0].ref_count = 5  # an invariant broken behind the pool's back
        pool.check_invariants()

    def double_free():
        q = s03_block_pool.SimpleFreeQueue()
        b = s03_block_pool.Block(0)
        q.append(b)
        q.append(b)

    def admit_twice():
        pool = s03_block_pool.BlockPool(4, 2)
        pool.admit("a", [1, 2, 3])
        pool.admit("a", [1, 2, 3])

    return {
        "BlockPool(0, 2)": lambda: s03_block_pool.BlockPool(0, 2),
        "violations()": corrupt_pool,
        "SimpleFreeQueue double free": double_free,
        "admit twice": admit_twice,
        "empty free queue": lambda: s03_block_pool.SimpleFreeQueue().popleft(),
        "EvictionPool(min_residence=-1)": lambda: s04_eviction.EvictionPool(4, 2, min_residence=-1.0),
        "simulate(mode=...)": lambda: cache_sim.simulate([], 4, pool_cls=s03_block_pool.BlockPool, mode="bytes"),
        "RadixServer(capacity=0)": lambda: radix_sim.RadixServer(None, 0),
        "TraceRequest(no blocks)": lambda: traces.TraceRequest(0.0, (), 0, 16),
        "make_workload(num_prompts=0)": lambda: workload.make_workload(num_prompts=0),
        "Request(max_new_tokens=0)": lambda: serving.Request("r", 0.0, [1, 2], 0),
        "prefill_flops(computed=0)": lambda: flops.prefill_flops(model.ModelConfig(), 0, 0),
        "KVPool(num_blocks=0)": lambda: kv_pool.KVPool(1, 0, 16, 1, 16),
        "ModelConfig(head_dim odd)": lambda: model.ModelConfig(hidden_size=30, num_attention_heads=2,
                                                               num_key_value_heads=1, head_dim=15),
    }


@pytest.mark.parametrize("case", list(_given_code_errors()))
def test_given_code_errors_speak_the_notebooks_language(case, lang):
    call = _given_code_errors()[case]
    for language, chinese in (("zh", True), ("en", False)):
        lang(language)
        with pytest.raises(Exception) as info:  # noqa: PT011 - each case raises its own type
            call()
        message = str(info.value)
        assert message.strip(), case
        assert bool(HAN.search(message)) is chinese, f"{case} ({language}): {message!r}"


# -- the grader's report -----------------------------------------------------------------------------
def _result(lang_: str) -> SubmissionResult:
    todo = TodoResult("s01.match_prefix", 3, "longest prefix match", 0.0, 3.0, TodoStatus.FAILED, "检查未通过")
    return SubmissionResult("submission.ipynb", "s01", todos=[todo], warnings=["w"], lang=lang_)


def test_the_grader_report_speaks_the_notebooks_language():
    iso = isolation.select("in-process")
    zh = reports.table([_result("zh")], iso)
    assert zh.splitlines()[0].startswith("隔离级别："), zh
    assert "得分 0/3" in zh and "警告" in zh and "score" not in zh and "isolation" not in zh
    en = reports.table([_result("en")], iso)
    assert en.splitlines()[0].startswith("isolation: ") and "score 0/3" in en and "warning: w" in en
    assert reports.table([_result("zh")], iso, "en").splitlines()[0].startswith("isolation: ")


def test_the_grader_names_a_check_by_its_title_in_chinese():
    stage = load_stage("s03", hidden=False)
    check = stage.checks_for("s03.admit")[0]
    assert check_label(check, "en") == check.name
    label = check_label(check, "zh")
    assert HAN.search(label) and check.name in label


# -- check inputs written in words ------------------------------------------------------------------------
_WORDS = re.compile(r"(?<![\w.'\"])(?:[a-z]{3,}) (?:[a-z]{2,})(?![\w(])")
_CODE_WORDS = {"for", "in", "is", "not", "and", "or", "if", "else", "None", "lambda"}


def _prose_words(call: str) -> list[str]:
    """Runs of plain English words in a check's input (outside string literals), e.g. 'admit twice'."""
    code = re.sub(r"'[^']*'|\"[^\"]*\"", " ", call)
    code = re.sub(r"\bfor\s+\w+(?:\s*,\s*\w+)*\s+in\b", " ", code)  # a comprehension's loop is code
    return [m for m in _WORDS.findall(code) if not set(m.split()) <= _CODE_WORDS]


@pytest.mark.parametrize("stage_id", layout.built_stages())
def test_check_inputs_written_in_words_are_bilingual(stage_id):
    plain = [f"{c.key}: {c.call}" for c in load_stage(stage_id, hidden=False).checks
             if isinstance(c.call, str) and _prose_words(c.call)]
    assert not plain, "give these inputs a Chinese text, L(English, 中文):\n" + "\n".join(plain)
    for c in load_stage(stage_id, hidden=False).checks:
        if isinstance(c.call, L):
            assert HAN.search(c.call.zh), c.key


# -- tables ------------------------------------------------------------------------------------------------
def test_pad_counts_wide_characters_twice():
    assert display_width("块池") == 4 and display_width("pool") == 4 and display_width("✅") == 2
    assert pad("块", 4) == "块  " and pad("块", 4, ">") == "  块" and pad("ab", 5, "^") == " ab  "
    assert pad("很长的标题", 3) == "很长的标题"
    rows = [pad(x, 12, ">") + "|" for x in ("命中 token", "hit tokens", "KV 槽位")]
    assert len({display_width(r) for r in rows}) == 1


_ALIGNED = re.compile(r"\{([^{}:]*?(?:\btr\(|['\"][^'\"]*[\u4e00-\u9fff])[^{}]*?):[<>^]\d+\}")


@pytest.mark.parametrize("path", sorted(s.source for s in layout.all_stages() if s.slug) + sorted(layout.course_modules().values()),
                         ids=lambda p: p.name)
def test_printed_tables_pad_by_display_width(path):
    """A column holding Chinese text is padded with autograder.textwidth.pad, not with a format spec."""
    text = path.read_text(encoding="utf-8")
    bad = [m.group(0) for m in _ALIGNED.finditer(text)]
    assert not bad, f"{layout.rel(path)}: pad these with autograder.textwidth.pad: {bad[:5]}"


# -- the notebooks' words ------------------------------------------------------------------------------------
def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


DOCSTRING = ('"""', "'''")


def _comments(code: str) -> list[str]:
    """The comments and docstrings of a code cell (what a reader of the code reads as prose)."""
    try:
        return [t.string.lstrip("#").strip("\"'") for t in tokenize.generate_tokens(io.StringIO(code).readline)
                if t.type == tokenize.COMMENT or (t.type == tokenize.STRING and t.string.startswith(DOCSTRING))]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [line.split("#", 1)[1] for line in code.splitlines() if "#" in line]


FURTHER_READING = re.compile(r"^## 延伸阅读", re.M)  # citations keep their original titles


def learner_prose(path: Path) -> str:
    """What a learner reads as prose in a notebook: its markdown (citations left out), its comments and
    docstrings."""
    out = []
    for c in _cells(path):
        if c["cell_type"] == "markdown":
            out.append(FURTHER_READING.split(_source(c))[0])
        else:
            out += _comments(_source(c))
    return "\n".join(out)


def strip_code(text: str) -> str:
    """Prose without code, formulas, links, and quoted text that holds no Chinese (a sample prompt, a
    cited title: quoted as it is)."""
    text = re.sub(r"```.*?```|``.*?``", " ", text, flags=re.S)
    text = re.sub(r"^.*(?:<->|⇄).*$", " ", text, flags=re.M)  # a diagram of linked names
    text = re.sub(r'"[^"\u4e00-\u9fff\n]*"|“[^”\u4e00-\u9fff]*”|\'[^\'\u4e00-\u9fff\n]*\'', " | ", text)
    return re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)|https?://\S+|<[^>]+>", " | ", text)


_SENTENCE = re.compile(r"(?:\b[A-Za-z][a-z]*\b[ ,;:'’-]+){3,}\b[A-Za-z][a-z]+\b")
# Declared: names of things that are English in Chinese text too (a benchmark, a dataset, a stub line).
NAMES = ("YOUR CODE HERE", "Least Recently Used", "Kolmogorov-Smirnov", "Kolmogorov–Smirnov")


def english_sentences(text: str) -> list[str]:
    """Runs of four or more English words, once code, links, formulas, the glossary's English-kept
    terms and declared names are left out."""
    t = strip_code(text)
    kept = sorted({x.zh_head for x in terms() if x.kept_in_english} | set(NAMES), key=len, reverse=True)
    for k in kept:
        t = re.sub(r"(?<!\w)" + re.escape(k) + r"(?!\w)", " | ", t)
    return _SENTENCE.findall(t)


@pytest.mark.parametrize("stage_id", stage_params())
def test_no_english_sentence_in_a_chinese_notebook(stage_id):
    files = layout.stage_files(stage_id)
    left = english_sentences(learner_prose(files.learner("zh")))
    assert not left, f"{stage_id}: English left in the Chinese notebook: {left[:8]}"


# -- "expected: raises ..." in the learner's language --------------------------------------------------------
def test_an_expected_exception_reads_in_the_notebooks_language():
    """A check whose reference raises shows the reference's message; a zh learner reads it in Chinese."""
    from autograder.grading.display import show
    from autograder.learner.inline import load_expected

    raised = [(sid, key, out) for sid in (s.id for s in layout.all_stages() if s.is_built)
              for key, out in load_expected(sid)["checks"].items() if out["kind"] == "raised"]
    assert raised
    for _sid, key, out in raised:
        en, zh = show(out, "en"), show(out, "zh")
        assert en.startswith(f"raises {out['type']}") and not HAN.search(en), (key, en)
        assert zh.startswith(f"抛出 {out['type']}"), (key, zh)
        if out.get("message"):
            assert HAN.search(zh.split(out["type"], 1)[1]), f"{key}: give the reference's message a Chinese text: {zh}"


@pytest.mark.parametrize("stage_id", stage_params())
def test_zh_skeleton_hints_do_not_join_statements_with_a_fullwidth_semicolon(stage_id):
    """Tier 3 is a skeleton a learner copies into code: a "；" between two statements is a syntax error."""
    for todo in load_stage(stage_id, hidden=False).todos:
        if todo.hints:
            skeleton = todo.hints[2].zh if isinstance(todo.hints[2], L) else todo.hints[2]
            assert "；" not in skeleton, f"{todo.id}: {skeleton}"


# -- what the Chinese edition prints ---------------------------------------------------------------------
def printed_text(output) -> str:
    """What a learner reads of one cell output: streams, an error's message, and a plain-text result when
    nothing richer (an image, a widget) stands in its place."""
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return output.evalue
    data = output.get("data", {})
    return data["text/plain"] if set(data) == {"text/plain"} else ""


@pytest.mark.slow
@pytest.mark.parametrize("stage_id", stage_params())
def test_chinese_instructor_notebook_prints_no_english_sentence(stage_id, shared_notebook_runs):
    """Run top to bottom, the zh instructor notebook (the reference in every TODO) prints no English sentence:
    code, declared names and the glossary's English-kept terms excepted (:func:`english_sentences`)."""
    from tests.course.test_notebooks_run import skipped_or_stopped

    files = layout.stage_files(stage_id)
    if "zh" not in files.languages:
        pytest.skip(f"{stage_id} has no Chinese edition")
    nb = shared_notebook_runs.get(files.instructor("zh")).nb  # the session's run, read by other tests too
    assert not skipped_or_stopped(nb), skipped_or_stopped(nb)[:5]  # every demo ran, as in the English edition
    found = [(i, s) for i, c in enumerate(nb.cells) if c.cell_type == "code"
             for o in c.get("outputs", []) for s in english_sentences(printed_text(o))]
    assert not found, "\n".join(f"cell {i}: {s}" for i, s in found)

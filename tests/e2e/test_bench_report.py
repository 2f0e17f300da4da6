"""docs/performance.md is written by the benchmarks and states when, where and how; the prose that links
to it quotes no measured figure of its own (a copied timing goes stale the day the code changes)."""
from __future__ import annotations

import re

import pytest

from autograder.core import layout
from benchmarks import report

# a number followed by a unit of time or a speed-up: what a measured figure looks like in the prose
FIGURE = re.compile(r"\d(?:[\d.,–-]*\d)?\s?(?:(?:ms|µs|us|CPU-s|minutes?|seconds?|x|s)\b|CPU 秒|毫秒|秒|倍|分钟)")
PROSE = ["README.md", "README.zh.md", "CONTRIBUTING.md", *(f"docs/{name}{ext}" for name in
         ("learners", "instructors", "security", "setup") for ext in (".md", ".zh.md"))]


@pytest.mark.parametrize("path", PROSE)
def test_prose_links_the_performance_page_instead_of_quoting_figures(path):
    text = (layout.ROOT / path).read_text(encoding="utf-8")
    found = [m.group() for m in FIGURE.finditer(text)]
    assert not found, f"{path}: measured figures belong on docs/performance.md (benchmarks/report.py): {found}"


def test_the_figure_pattern_finds_timings_and_leaves_sizes_and_limits():
    assert FIGURE.findall("about 18 s on 2 cores, 0.4 CPU-s, 15x faster, 12 CPU 秒, 快 8 倍, 2.5 ms")
    assert len(FIGURE.findall("about 18 s, 0.4 CPU-s, 15x, 12 CPU 秒, 8 倍, 2.5 ms")) == 6
    assert not FIGURE.findall("400 bytes, 64 MiB, 16 KiB, stage 6 uses 4096, Python 3.11, 2 cores, s01")


def test_the_committed_pages_state_date_machine_and_command():
    for name, words in (("performance.md", report.WORDS["en"]), ("performance.zh.md", report.WORDS["zh"])):
        text = (layout.ROOT / "docs" / name).read_text(encoding="utf-8")
        for field in ("date", "machine", "command", "kind", "commit"):
            assert f"| {words[field]} |" in text, f"docs/{name}: no {field} row"
        assert re.search(r"\| \d{4}-\d\d-\d\d \d\d:\d\d \|", text) and "`python -m benchmarks.report" in text
        assert words["quick"] in text or words["full"] in text, f"docs/{name}: say which kind of run wrote it"
        assert re.search(r"\| Python · torch · nbgrader \| 3\.\d+", text)


@pytest.mark.slow  # runs the benchmark report end to end
def test_a_report_run_writes_both_pages_from_the_same_figures(tmp_path):
    assert report.main(["--only", "traces", "--quick", "--out", str(tmp_path)]) == 0
    en = (tmp_path / "performance.md").read_text(encoding="utf-8")
    zh = (tmp_path / "performance.zh.md").read_text(encoding="utf-8")
    assert "`python -m benchmarks.report --only traces --quick --out" in en
    assert "python benchmarks/bench_traces.py --quick" in en and "python benchmarks/bench_traces.py --quick" in zh
    blocks = [re.findall(r"```text\n(.*?)```", t, re.S) for t in (en, zh)]
    assert blocks[0] == blocks[1] and "LRU" in blocks[0][0]


def test_a_failed_or_skipped_benchmark_says_so_on_the_page():
    gpu = next(b for b in report.BENCHES if b.needs == "cuda")
    bad = report.Bench("broken", "nothing.py", (), (), {"en": "A script that fails.", "zh": "一个会失败的脚本。"})
    outcomes = [report.Outcome(gpu, ("benchmarks/gpu_check.py",), skipped="no_cuda"),
                report.Outcome(bad, ("benchmarks/nothing.py",), status=2, seconds=1.0, output="Traceback ...")]
    facts = [("cores", "2/2"), ("CPU", "cpu"), ("memory", "1 GiB"), ("OS", "os"), ("Python", "3.11.7"),
             ("torch", "2"), ("nbgrader", "0"), ("load", "0.00"), ("commit", "abc")]
    for lang in ("en", "zh"):
        text = report.page(lang, outcomes, facts, "2026-01-01 00:00", "python -m benchmarks.report", True, None)
        w = report.WORDS[lang]
        assert f"*{w['skipped']}: {w['no_cuda']}.*" in text and f"*{w['failed']} 2.*" in text and "Traceback" in text


def test_every_benchmark_script_is_on_the_page_or_a_helper():
    scripts = {p.name for p in (layout.ROOT / "benchmarks").glob("*.py")}
    helpers = {"__init__.py", "report.py", "reap.py", "rounds.py"}
    assert scripts - helpers == {b.script for b in report.BENCHES}, "a benchmark the performance page never runs"

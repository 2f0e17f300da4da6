"""Stage 7's verdicts are total, and every comparison they state agrees with the numbers they print.

Constructed rows, no measurement: every case the verdict's inputs allow (no pool past the cliff;
nothing chosen; the cache off chosen; the cache on chosen below, at and past the cliff; a value
within, above or missing against the bound), in both languages. The sentence's "within"/"above"
(不超过/超过) must agree with the two numbers printed beside it, and "below"/"more than" the cliff
with the pool sizes it names. On a simulated clock the sentence says "simulated", never "measured".

The unique prompts' same-work verdict (some hit; other work; the same work but the schedule moved; the
same work and time), the fell-behind sentence (some, none, shares that are not numbers) and the decision
record's clock words are tested the same way, on constructed runs.
"""
from __future__ import annotations

import math
import re
import types

import pytest

from solutions.s07_serving import (
    choose_setting,
    decision_markdown,
    decision_record,
    fell_behind,
    same_work_verdict,
    sweep_verdict,
)

METRIC = "ttft_p90_repeat"


def _row(cache: bool, blocks: int, hit: float, p90_ms: float) -> dict:
    return {"cache": cache, "num_blocks": blocks, "hit_rate": hit, METRIC: p90_ms / 1e3}


def _sweep(on: dict[int, tuple[float, float]], off: dict[int, float]) -> list[dict]:
    return ([_row(True, b, hit, ms) for b, (hit, ms) in on.items()]
            + [_row(False, b, 0.0, ms) for b, ms in off.items()])


BOUND = {METRIC: 0.1928}
CASES = {
    # the issue's sentence: 160 blocks (no hit) measured under the bound, 224 (past the cliff) too
    "below the cliff, chosen": _sweep({128: (0.0, 250.0), 160: (0.0, 109.1), 224: (0.7, 109.1), 320: (0.7, 60.0)},
                                      {160: 321.3, 320: 330.0}),
    "no pool past the cliff, one below it meets": _sweep({128: (0.0, 190.0), 160: (0.0, 250.0)}, {160: 321.3}),
    "at the cliff": _sweep({128: (0.0, 300.0), 160: (0.0, 310.0), 224: (0.7, 120.0), 320: (0.7, 80.0)},
                           {160: 321.3, 320: 330.0}),
    "past the cliff": _sweep({128: (0.0, 300.0), 160: (0.0, 310.0), 224: (0.6, 200.0), 320: (0.7, 80.0)},
                             {160: 321.3, 320: 330.0}),
    "past the cliff, edge not measured": _sweep({160: (0.0, 310.0), 224: (0.6, math.nan), 320: (0.7, 80.0)},
                                                {160: 321.3}),
    "nothing meets, past the cliff": _sweep({160: (0.0, 310.0), 224: (0.6, 200.0), 320: (0.7, 193.0)},
                                            {160: 321.3}),
    "nothing meets, no pool past the cliff": _sweep({128: (0.0, 300.0), 160: (0.0, 310.0)}, {160: 321.3}),
    "nothing meets, past the cliff unmeasured": _sweep({160: (0.0, 310.0), 224: (0.6, math.nan)}, {160: 321.3}),
    "cache off chosen": _sweep({128: (0.0, 300.0), 224: (0.7, 250.0)}, {160: 150.0, 320: 330.0}),
    "a hair above the bound at the cliff": _sweep({160: (0.0, 310.0), 224: (0.6, 192.84), 320: (0.7, 80.0)},
                                                  {160: 321.3}),
}

_EN_CMP = re.compile(r"([\d.]+) ms, (within|above) the bound of ([\d.]+) ms")
_ZH_CMP = re.compile(r"([\d.]+) 毫秒，(不超过|超过了)上限 ([\d.]+) 毫秒")


def _comparisons_agree(text: str, zh: bool) -> int:
    """Every printed (value, bound) pair compares the way the word between them says; returns how many."""
    pairs = (_ZH_CMP if zh else _EN_CMP).findall(text)
    for value, word, bound in pairs:
        within = word in ("within", "不超过")
        assert (float(value) <= float(bound)) == within, (text, value, word, bound)
    return len(pairs)


@pytest.mark.parametrize("case", CASES)
def test_sweep_verdict_states_only_what_its_numbers_show(case):
    rows = CASES[case]
    chosen = choose_setting(rows, BOUND)
    en, zh = (sweep_verdict(rows, BOUND, chosen, lang=lang) for lang in ("en", "zh"))
    assert _comparisons_agree(en, zh=False) == _comparisons_agree(zh, zh=True) >= (0 if chosen is None else 1)
    on_edge = [r["num_blocks"] for r in rows if r["cache"] and r["hit_rate"] >= 0.05]
    edge = min(on_edge) if on_edge else None
    if chosen is None:
        assert en.startswith("No measured") and zh.startswith("没有任何测过的")
        return
    size = chosen["num_blocks"]
    assert f"{size} blocks" in en and f"{size} 块" in zh
    if not chosen["cache"]:
        assert "cache off" in en and "关缓存" in zh
    elif edge is None or size < edge:
        assert "below the cliff" in en and "在悬崖之前" in zh
        assert "more than the first size" not in en and "更大" not in zh
        if edge is not None:
            assert f"the first size past it is {edge} blocks" in en and f"越过悬崖后的第一个大小是 {edge} 块" in zh
    elif size == edge:
        assert "the first measured size past the cliff" in en and "越过悬崖后第一个测过的大小" in zh
    else:
        assert size > edge
        assert f"more than the first size past the cliff ({edge} blocks)" in en and f"（{edge} 块）更大" in zh


def test_the_issue_case_is_no_longer_called_past_the_cliff():
    rows = CASES["below the cliff, chosen"]
    chosen = choose_setting(rows, BOUND)
    assert chosen["num_blocks"] == 160 and chosen["cache"]
    en = sweep_verdict(rows, BOUND, chosen, lang="en")
    assert "below the cliff (the first size past it is 224 blocks)" in en
    assert "109.1 ms, within the bound of 192.8 ms" in en and "above" not in en


def test_a_value_a_hair_above_the_bound_prints_enough_digits():
    rows = CASES["a hair above the bound at the cliff"]
    en = sweep_verdict(rows, BOUND, choose_setting(rows, BOUND), lang="en")
    assert "192.84 ms, above the bound of 192.80 ms" in en


@pytest.mark.parametrize("chosen_blocks", [160, 224, 320])
def test_a_chosen_row_that_misses_the_bound_is_called_above_it(chosen_blocks):
    """A wrong rule (a learner's) may hand over a row that misses the bound: the sentence says so."""
    rows = CASES["nothing meets, past the cliff"]
    chosen = next(r for r in rows if r["cache"] and r["num_blocks"] == chosen_blocks)
    for lang, zh in (("en", False), ("zh", True)):
        text = sweep_verdict(rows, BOUND, dict(chosen), lang=lang)
        assert _comparisons_agree(text, zh) >= 1
        assert ("above the bound" in text) or ("超过了上限" in text)
        assert "already met" not in text and "已经满足" not in text


def test_an_slo_of_two_metrics_is_refused():
    rows = CASES["at the cliff"]
    with pytest.raises(ValueError):
        sweep_verdict(rows, {METRIC: 0.2, "ttft_p90": 0.3}, None)


@pytest.mark.parametrize("case", ["below the cliff, chosen", "at the cliff", "nothing meets, no pool past the cliff",
                                  "nothing meets, past the cliff unmeasured"])
def test_sweep_verdict_on_a_simulated_clock_says_simulated_never_measured(case):
    rows = CASES[case]
    for lang, word, never in (("en", "simulated", "measured"), ("zh", "模拟过的", "测过的")):
        text = sweep_verdict(rows, BOUND, choose_setting(rows, BOUND), lang=lang, simulated=True)
        assert never not in text
        if case != "below the cliff, chosen":
            assert word in text


# -- the unique prompts' verdict: counts and the simulated clock only --------------------------------------
def _run(ledger: list[tuple[int, int]], times: list[tuple[float, float | None]]) -> types.SimpleNamespace:
    """A run record of requests with (hit, computed) tokens and (TTFT, TPOT) seconds."""
    return types.SimpleNamespace(requests=[
        types.SimpleNamespace(request_id=f"r{i}", hit_tokens=h, computed_tokens=c, prompt_tokens=h + c, ttft_s=t,
                              tpot_s=p) for i, ((h, c), (t, p)) in enumerate(zip(ledger, times, strict=True))])


SAME = [(0, 300), (0, 500)]
TIMES = [(0.1, 0.02), (0.3, None)]
SAME_WORK = {
    "the same work and time": (_run(SAME, TIMES), _run(SAME, TIMES), "Nothing hit, both runs computed the same 800",
                               "没有命中，开、关缓存计算的是同样的 800 个 token"),
    "some tokens hit": (_run([(16, 284), (0, 500)], TIMES), _run(SAME, TIMES), "The cache on hit 16 of 800",
                        "开缓存时命中了 16 个 token（共 800 个）"),
    "other work": (_run([(0, 300), (0, 400)], TIMES), _run(SAME, TIMES), "did not serve the same requests",
                   "服务的不是同一批请求"),
    "the schedule moved": (_run(SAME, [(0.1, 0.02), (0.31, None)]), _run(SAME, TIMES), "1 requests got another",
                           "可有 1 个请求的模拟 TTFT 或 TPOT 不同"),
    "only TPOT moved": (_run(SAME, [(0.1, 0.03), (0.3, None)]), _run(SAME, TIMES), "the schedule moved", "调度变了"),
}


@pytest.mark.parametrize("case", SAME_WORK)
def test_same_work_verdict_covers_every_case_in_both_languages(case):
    on, off, en_words, zh_words = SAME_WORK[case]
    en, zh = (same_work_verdict(on, off, lang=lang) for lang in ("en", "zh"))
    assert en_words in en and zh_words in zh
    assert ("no regression" in en) == ("没有退化" in zh) == (case == "the same work and time")


# -- which runs fell behind: the simulated waiting shares ---------------------------------------------------
@pytest.mark.parametrize("shares, en_words, zh_words", [
    ({"a": 0.9, "b": 0.2, "c": 0.51}, "fell behind (most of TTFT was waiting) in: a; c", "跟不上（TTFT 的大部分在等待）的运行：a；c"),
    ({"a": 0.5, "b": 0.2}, "kept up with every run", "每次运行服务端都跟得上"),
    ({"a": math.nan, "b": 0.2}, "no run is known to have fallen behind. No waiting share to compute in: a",
     "没有哪次运行确定跟不上。没有等待比例可算的运行：a"),
    ({"a": math.nan, "b": 0.7}, "fell behind (most of TTFT was waiting) in: b. No waiting share to compute in: a",
     "的运行：b。没有等待比例可算的运行：a"),
    ({}, "kept up with every run", "每次运行服务端都跟得上"),
])
def test_fell_behind_covers_every_case_in_both_languages(shares, en_words, zh_words):
    assert en_words in fell_behind(shares, lang="en") and zh_words in fell_behind(shares, lang="zh")


# -- the decision record says which clock made it ----------------------------------------------------------
@pytest.mark.parametrize("clock, en_words, zh_words", [
    ("virtual (cost model)", ("2 settings simulated", "no simulated setting"), ("模拟了 2 个设置", "没有任何模拟过的设置")),
    ("process_time", ("2 settings measured", "no measured setting"), ("测了 2 个设置", "没有任何测过的设置")),
])
def test_decision_markdown_names_the_clock(clock, en_words, zh_words):
    row = {"cache": True, "num_blocks": 64, "hit_rate": 0.5, "ttft_p50": 0.01, "ttft_p90": 0.02, "tpot_p50": 0.003,
           "requests_per_s": 9.0, "output_tokens_per_s": 70.0, "peak_kv_bytes": 2**20}
    off = {**row, "cache": False, "hit_rate": 0.0, "ttft_p90": 0.05}
    settings = {"device": "cpu: test", "device_type": "cpu", "model": {}, "dtype": "float32", "clock": clock}
    for slo, words in (({"ttft_p90": 0.03}, 0), ({"ttft_p90": 0.001}, 1)):
        record = decision_record("w", "d", row, off, [row, off], slo, settings)
        assert record["clock"] == ("simulated" if clock.startswith("virtual") else "measured")
        en, zh = decision_markdown(record), decision_markdown(record, "zh")
        assert en_words[0] in en and zh_words[0] in zh
        if words:
            assert en_words[1] in en and zh_words[1] in zh

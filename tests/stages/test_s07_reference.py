"""Tests of the stage-7 reference: summaries, accounting, the cost model's prediction, the decision.

Independent models, written differently from the reference on purpose: percentiles against numpy's
default (linear) method, accounting against a per-request loop, the decision rule against a sort
over every measured setting.
"""
from __future__ import annotations

import json
import math
import random
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks.s07 import calibration, model_config, sweep
from autograder.child.probe import run_probe
from autograder.core import layout
from autograder.core.pysource import solution_region
from autograder.core.spec import load_stage
from kernels.flops import prefill_flops
from kernels.model import DecoderLM, ModelConfig
from solutions.s07_serving import (
    cache_accounting,
    choose_setting,
    decision_markdown,
    decision_record,
    evidence_level,
    latency_summary,
    predict_ttft,
    summarize_run,
)
from tests import mutants_s07
from workbook import serving_workloads as W
from workbook.serving import serve

REFERENCE = layout.stage_files("s07").reference

finite = st.floats(min_value=0.0, max_value=1e3, allow_nan=False)


# -- TODO 1 ----------------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(st.lists(finite, min_size=1, max_size=60), st.lists(st.floats(0, 100), min_size=1, max_size=5))
def test_s07_latency_summary_matches_numpy_linear_percentiles(values, percentiles):
    before = list(values)
    got = latency_summary(values, percentiles)
    assert values == before
    for p in percentiles:
        assert got[f"p{p:g}"] == pytest.approx(float(np.percentile(values, p)), rel=1e-9, abs=1e-9)
    assert got["count"] == len(values) and got["max"] == max(values)
    assert got["mean"] == pytest.approx(sum(values) / len(values))


def test_s07_latency_summary_edges():
    assert latency_summary([3.0, 1.0, 2.0], (0, 50, 100)) == {"count": 3, "mean": 2.0, "max": 3.0, "p0": 1.0,
                                                              "p50": 2.0, "p100": 3.0}
    assert set(latency_summary([1.0])) == {"count", "mean", "max", "p50", "p90", "p99"}
    for bad in ([], [1.0, math.nan], [math.inf]):
        with pytest.raises(ValueError):
            latency_summary(bad)
    with pytest.raises(ValueError):
        latency_summary([1.0], (101,))


# -- TODO 2 ----------------------------------------------------------------------------------------
entries = st.tuples(st.integers(1, 3000), st.integers(0, 3000)).map(
    lambda t: {"prompt_tokens": t[0], "hit_tokens": min(t[1], t[0] - 1), "computed_tokens": t[0] - min(t[1], t[0] - 1)})


@settings(max_examples=60, deadline=None)
@given(st.lists(entries, max_size=30))
def test_s07_cache_accounting_against_a_loop(ledger):
    cfg = model_config("small")
    got = cache_accounting(ledger, cfg)
    without = with_cache = 0.0
    hits = prompt = with_hit = 0
    for e in ledger:
        without += prefill_flops(cfg, e["prompt_tokens"])["total"]
        with_cache += prefill_flops(cfg, e["computed_tokens"], e["hit_tokens"])["total"]
        hits += e["hit_tokens"]
        prompt += e["prompt_tokens"]
        with_hit += e["hit_tokens"] > 0
    assert got["requests"] == len(ledger) and got["hit_tokens"] == hits and got["prompt_tokens"] == prompt
    assert got["requests_with_hit"] == with_hit
    assert got["hit_rate"] == pytest.approx(hits / prompt if prompt else 0.0)
    assert got["flops_without_cache"] == pytest.approx(without) and got["flops_with_cache"] == pytest.approx(with_cache)
    assert 0.0 <= got["saved_fraction"] < 1.0 and got["saved_flops"] >= 0
    assert got["flops_with_cache"] <= got["flops_without_cache"]


def test_s07_cache_accounting_rejects_inconsistent_entries():
    for bad in ({"prompt_tokens": 10, "hit_tokens": 4, "computed_tokens": 5},
                {"prompt_tokens": 8, "hit_tokens": 8, "computed_tokens": 0}):
        with pytest.raises(ValueError):
            cache_accounting([bad], model_config("small"))


def test_s07_cache_accounting_attention_over_the_prefix_is_not_saved():
    cfg = model_config("small")
    got = cache_accounting([{"prompt_tokens": 4160, "hit_tokens": 4096, "computed_tokens": 64}], cfg)
    token_share = 4096 / 4160
    assert got["saved_fraction"] < token_share  # the question still reads all 4,096 cached keys
    assert got["flops_with_cache"] == pytest.approx(prefill_flops(cfg, 64, 4096)["total"])


# -- TODO 3 ----------------------------------------------------------------------------------------
def test_s07_predict_ttft_grows_with_the_cached_prefix_and_the_computed_tokens():
    cfg, cal = model_config("small"), calibration()
    by_prefix = [predict_ttft(cfg, 64, c, cal) for c in (0, 128, 1024, 4096)]
    assert by_prefix == sorted(by_prefix) and len(set(by_prefix)) == 4
    assert predict_ttft(cfg, 4160, 0, cal) > predict_ttft(cfg, 64, 4096, cal)
    with pytest.raises(ValueError):
        predict_ttft(cfg, 0, 10, cal)


def test_s07_predict_ttft_is_the_sum_of_work_over_rates():
    cfg, cal = model_config("qwen2-width"), calibration()
    f = prefill_flops(cfg, 64, 1024)
    expected = (f["linear"] / cal.gemm_flops_per_s[64] + f["attention"] / cal.attention_flops_per_s[(64, 1088)]
                + f["head"] / cal.head_flops_per_s + 6e-4 + 1.5e-3 + 3e-7 * 1088)
    assert predict_ttft(cfg, 64, 1024, cal) == pytest.approx(expected, rel=1e-12)


# -- TODO 4 ----------------------------------------------------------------------------------------
settings_strategy = st.lists(st.fixed_dictionaries({
    "cache": st.booleans(), "num_blocks": st.sampled_from([32, 64, 128, 256]),
    "ttft_p90": st.sampled_from([0.1, 0.2, 0.3, math.nan]), "tpot_p50": st.sampled_from([0.01, 0.02])}), max_size=12)


@settings(max_examples=100, deadline=None)
@given(settings_strategy, st.sampled_from([0.1, 0.2, 0.25]), st.sampled_from([0.01, 0.015, 0.02]), st.randoms())
def test_s07_choose_setting_against_sorting_every_setting(rows, ttft, tpot, rnd):
    slo = {"ttft_p90": ttft, "tpot_p50": tpot}
    ok = [r for r in rows if r["ttft_p90"] <= ttft and r["tpot_p50"] <= tpot]  # NaN compares False
    expected = sorted(ok, key=lambda r: (r["num_blocks"], r["ttft_p90"], r["tpot_p50"], r["cache"]))[:1]
    got = choose_setting(rows, slo)
    assert got == (expected[0] if expected else None)
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    assert choose_setting(shuffled, slo) == got
    if got is not None:
        assert all(got is not r for r in rows)


def test_s07_choose_setting_validates_its_inputs():
    with pytest.raises(ValueError):
        choose_setting(sweep(), {})
    with pytest.raises(ValueError):
        choose_setting([{"cache": True, "num_blocks": 8}], {"ttft_p90": 1.0})
    assert choose_setting([], {"ttft_p90": 1.0}) is None


# -- given code: the run summary and the decision record ------------------------------------------
def test_s07_decision_record_from_real_runs_is_json_and_markdown():
    model = DecoderLM.random(ModelConfig.tiny(), seed=0)
    requests = W.shared_prefix(num_groups=2, prompts_per_group=3, prefix_len=40, question_len=4, output_len=3,
                               vocab=512)
    rows = {c: summarize_run(serve(model, requests, num_blocks=40, block_size=4, cache=c,
                                   settings={"workload": "shared_prefix"})) for c in (True, False)}
    assert rows[True]["hit_rate"] > 0 and rows[False]["hit_rate"] == 0.0
    assert rows[True]["saved_fraction"] > 0 and rows[True]["requests"] == len(requests)
    settings_ = {"device": "cpu: test", "device_type": "cpu", "model": json.loads(json.dumps(model.config.__dict__)),
                 "dtype": "float32"}
    record = decision_record("shared_prefix", "two groups", rows[True], rows[False], [rows[True], rows[False]],
                             {"ttft_p90": 10.0}, settings_)
    assert json.loads(json.dumps(record)) == record
    assert record["choice"]["num_blocks"] == 40 and record["evidence"].startswith("CPU")
    text = decision_markdown(record)
    assert "| hit rate |" in text and "shapes and trends only" in text and "pool of **40 blocks**" in text
    assert "no measured setting" in decision_markdown({**record, "choice": None})
    zh = decision_markdown(record, "zh")  # every unit in the edition's words: "请求/秒", never "req/s"
    assert "请求/秒" in zh and "req/s" not in zh and "req/s" in text
    assert evidence_level({"device_type": "cuda", "model": ModelConfig.qwen2_5_0_5b().__dict__}).startswith("GPU, 0.5B")


def test_s07_random_sweep_order_does_not_change_the_decision():
    rows = sweep()
    for seed in range(5):
        random.Random(seed).shuffle(rows)
        assert choose_setting(rows, {"ttft_p90": 0.5}) == {"cache": True, "num_blocks": 256, "ttft_p90": 0.30,
                                                          "tpot_p50": 0.021, "hit_rate": 0.70}


# -- the checks and wrong answers themselves (the real grader runs them in tests/course/test_mutants.py) ----
def test_s07_probes_give_the_same_answer_twice_on_the_reference():
    """Every probe is deterministic: the grader compares two runs of it (learner vs reference)."""
    import solutions.s07_serving as ref

    stage = load_stage("s07", hidden=True)
    impl = types.SimpleNamespace(**{k: v for k, v in vars(ref).items() if not k.startswith("__")})
    for check in stage.checks:
        first, second = run_probe(check, impl), run_probe(check, impl)
        assert first["kind"] == "ok" and first == second, (check.key, first)


def test_s07_wrong_answers_edit_only_their_own_todo_region():
    """A learner writes inside a TODO's region only, so each wrong answer must too."""
    text = REFERENCE.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    stage = load_stage("s07", hidden=False)
    for name, (todo_id, edits) in mutants_s07.MUTANTS.items():
        begin, end = solution_region(text, stage.todo(todo_id).target)
        lo, hi = sum(map(len, lines[:begin + 1])), sum(map(len, lines[:end]))
        for old, _ in edits:
            assert text.count(old) == 1, (name, old)
            at = text.index(old)
            assert lo <= at and at + len(old) <= hi, f"{name}: edit outside the region of {todo_id}"

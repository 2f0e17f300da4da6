"""kernels.cost_model: calibration tables, their lookups, JSON, and a real (tiny) calibration run."""
from __future__ import annotations

import json
import math

import pytest

from kernels import cost_model as cm
from kernels.flops import prefill_flops
from kernels.model import DecoderLM, ModelConfig
from solutions.s03_block_pool import BlockPool
from solutions.s06_paged_prefill import paged_attention, write_kv
from solutions.s07_serving import predict_ttft

CFG = ModelConfig(vocab_size=1024, hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2)


def measured_seconds():
    return dict(gemm_s={1: 2e-4, 64: 1e-3, 1088: 8e-3}, head_s=5e-5,
                attention_s={(1, 1): 1e-5, (1088, 1088): 4e-3, (64, 1088): 5e-4},
                elementwise_s={1: 1e-4, 64: 3e-4, 1088: 2e-3}, forward1_s=2e-3, bookkeeping_s={1088: 1.088e-3})


def test_kernels_cost_model_rates_are_flops_over_seconds():
    cal = cm.Calibration.from_seconds(CFG, **measured_seconds())
    assert cal.gemm_rate(64) == pytest.approx(prefill_flops(CFG, 64)["linear"] / 1e-3)
    assert cal.head_flops_per_s == pytest.approx(prefill_flops(CFG, 1)["head"] / 5e-5)
    # attention seconds are per layer: the rate covers all three layers' FLOPs
    assert cal.attention_rate(64, 1088) == pytest.approx(prefill_flops(CFG, 64, 1024)["attention"] / (3 * 5e-4))
    assert cal.bookkeeping_s_per_token == pytest.approx(1e-6)
    assert cal.without_block_manager().bookkeeping_s_per_token == 0.0
    assert cal.overhead_s >= 0.0


def test_kernels_cost_model_reads_measured_sizes_exactly():
    # At the sizes it measured, a prediction is the sum of the measured parts: nothing is lost in
    # converting seconds to rates and back (the property the benchmark's per-round prediction uses).
    secs = measured_seconds()
    cal = cm.Calibration.from_seconds(CFG, **secs)
    full = predict_ttft(CFG, 1088, 0, cal.without_block_manager())
    parts = secs["gemm_s"][1088] + secs["head_s"] + 3 * secs["attention_s"][(1088, 1088)] + secs["elementwise_s"][1088]
    assert full == pytest.approx(parts + cal.overhead_s, rel=1e-12)
    cached = predict_ttft(CFG, 64, 1024, cal)
    parts = secs["gemm_s"][64] + secs["head_s"] + 3 * secs["attention_s"][(64, 1088)] + secs["elementwise_s"][64]
    assert cached == pytest.approx(parts + cal.overhead_s + 1088 * 1e-6, rel=1e-12)
    # the overhead is what a one-token forward leaves unexplained
    one = predict_ttft(CFG, 1, 0, cal.without_block_manager())
    assert one == pytest.approx(max(secs["forward1_s"], one - cal.overhead_s), rel=1e-12)


def test_kernels_cost_model_interpolates_between_measured_sizes():
    cal = cm.Calibration.from_seconds(CFG, **measured_seconds())
    lo, hi = cal.gemm_rate(64), cal.gemm_rate(1088)
    mid = cal.gemm_rate(int(math.sqrt(64 * 1088)))
    assert min(lo, hi) <= mid <= max(lo, hi)
    assert cal.gemm_rate(10_000) == hi and cal.gemm_rate(1) == cal.gemm_flops_per_s[1]
    assert cal.attention_rate(60, 1000) == cal.attention_rate(64, 1088)  # nearest measured shape
    assert cal.attention_rate(900, 1000) == cal.attention_rate(1088, 1088)
    plain = cal.without_block_manager()
    assert plain.other_s(64, 0) == pytest.approx(3e-4 + cal.overhead_s)
    assert plain.other_s(576, 0) == pytest.approx((3e-4 + 2e-3) / 2 + cal.overhead_s)
    assert cal.other_s(64, 1024) == pytest.approx(plain.other_s(64, 1024) + 1088 * 1e-6)


def test_kernels_cost_model_round_trips_through_json():
    cal = cm.Calibration.from_seconds(CFG, **measured_seconds(), device="cpu")
    assert cm.Calibration.from_dict(json.loads(json.dumps(cal.to_dict()))) == cal


def test_kernels_cost_model_rejects_impossible_tables():
    with pytest.raises(ValueError):
        cm.Calibration({64: 1e9}, 1e9, {(64, 64): 0.0}, {64: 1e-3})
    with pytest.raises(ValueError):
        cm.Calibration({}, 1e9, {(64, 64): 1e9}, {64: 1e-3})


def test_kernels_cost_model_calibrates_a_tiny_model():
    model = DecoderLM.random(ModelConfig.tiny(), seed=0)
    cal = cm.calibrate(model, rows=[8, 40], full_attention=[40], paged_attention=[(8, 40)], attention=paged_attention,
                       write=write_kv, make_pool=lambda: BlockPool(20, 4), block_size=4, reps=2)
    assert set(cal.gemm_flops_per_s) == {1, 8, 40}
    assert {(40, 40), (8, 40), (1, 1)} <= set(cal.attention_flops_per_s)
    assert all(r > 0 for r in cal.gemm_flops_per_s.values()) and cal.bookkeeping_s_per_token > 0
    assert predict_ttft(model.config, 8, 32, cal) > 0

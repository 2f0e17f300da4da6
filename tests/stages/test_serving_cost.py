"""The serving loop's simulated clock (workbook/serving_cost.py) and the decode table it reads
(kernels/calibration.py): lookups, JSON, the shipped calibration, and stage 7's pool-sweep decision
taken from it: the same in every run, whatever the machine measured."""
from __future__ import annotations

import time

import pytest
import torch

from kernels.calibration import Calibration
from kernels.model import DecoderLM, ModelConfig
from solutions.s07_serving import choose_setting, predict_ttft, sweep_rows, sweep_verdict
from workbook import serving_cost as SC
from workbook import serving_workloads as W
from workbook.serving import SERVING_MODEL, ServingEngine

DECODE = {(1, 256): 4e-3, (8, 256): 1.1e-2, (1, 768): 6e-3, (8, 768): 1.5e-2}


def calibration(**extra) -> Calibration:
    return Calibration({1: 1e9, 64: 4e9}, 1e9, {(1, 1): 1e8, (64, 512): 2e9}, {1: 1e-4, 64: 3e-4}, **extra)


def test_decode_table_reads_measured_shapes_exactly_and_interpolates_between():
    cal = calibration(decode_step_s=DECODE)
    for (batch, context), seconds in DECODE.items():
        assert cal.decode_s(batch, context) == pytest.approx(seconds, rel=1e-12)
    # linear in batch at each measured context, then linear in context
    assert cal.decode_s(4, 256) == pytest.approx(4e-3 + 3 / 7 * 7e-3)
    assert cal.decode_s(1, 512) == pytest.approx(5e-3)
    assert cal.decode_s(4, 512) == pytest.approx((cal.decode_s(4, 256) + cal.decode_s(4, 768)) / 2)


def test_decode_table_survives_json_and_is_refused_when_missing_or_negative():
    cal = calibration(decode_step_s=DECODE)
    assert Calibration.from_dict(cal.to_dict()) == cal
    assert Calibration.from_dict({k: v for k, v in calibration().to_dict().items() if k != "decode_step_s"}) == calibration()
    with pytest.raises(ValueError, match="decode"):
        calibration().decode_s(1, 256)
    with pytest.raises(ValueError, match="non-negative"):
        calibration(decode_step_s={(1, 256): -1e-3})


def test_virtual_cost_prices_prefills_with_the_given_model_and_decode_steps_from_the_table():
    cal = calibration(decode_step_s=DECODE)
    seen = []

    def prefill(cfg, computed, cached, c):
        seen.append((cfg, computed, cached, c))
        return 0.5

    cost = SC.virtual_cost(SERVING_MODEL, cal, prefill)
    assert cost("prefill", 32, 480) == 0.5 and seen == [(SERVING_MODEL, 32, 480, cal)]
    assert cost("decode", 8, 8 * 768) == pytest.approx(DECODE[(8, 768)])  # context is the batch's total
    with pytest.raises(ValueError, match="kind"):
        cost("sleep", 1, 1)


def test_shipped_calibration_covers_every_size_the_serving_runs_use():
    cal = SC.shipped_calibration()
    assert set(cal.gemm_flops_per_s) == set(SC.GRID) and set(cal.elementwise_s) >= set(SC.GRID)
    assert set(cal.attention_flops_per_s) >= set(SC.SHAPES) and set(cal.decode_step_s) == set(SC.DECODE_SHAPES)
    assert cal.notes["model"] == "SERVING_MODEL" and cal.notes["clock"] == "process_time"
    # a plausible CPU: a cached prefill is cheaper than a full one, a larger batch's step costs more
    assert predict_ttft(SERVING_MODEL, 32, 480, cal) < predict_ttft(SERVING_MODEL, 512, 0, cal)
    assert cal.decode_s(8, 300) > cal.decode_s(1, 300) > 0


def sweep(clock) -> tuple[list[dict], dict, dict | None]:
    """Stage 7's pool sweep exactly as the notebook runs it (workload, pools, SLO, shipped calibration,
    the reference predict_ttft), on a model of the same vocabulary but tiny width: the simulated clock
    makes the model's own speed irrelevant."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the notebook: small matrices, and a second thread only waits on a shared machine
    try:
        return _sweep(clock)
    finally:
        torch.set_num_threads(threads)


def _sweep(clock) -> tuple[list[dict], dict, dict | None]:
    model = DecoderLM.random(ModelConfig(vocab_size=SERVING_MODEL.vocab_size, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1), seed=0)
    cost = SC.virtual_cost(SERVING_MODEL, SC.shipped_calibration(), predict_ttft)
    requests = W.thrashing(rounds=4, question_len=(8, 24), rate=40.0)
    records = [ServingEngine(model, blocks, cache=cache, clock=clock, cost=cost).run(requests, settings={"workload": "thrashing"})
               for cache, blocks in [(True, b) for b in (128, 160, 224, 256, 320)] + [(False, 160), (False, 320)]]
    rows, slo = sweep_rows(records, SERVING_MODEL, today=(False, 160), share=0.6)
    return rows, slo, choose_setting(rows, slo)


@pytest.mark.slow  # seven serving runs of 48 requests (a few CPU-seconds)
def test_stage7_sweep_decision_is_fixed_by_the_shipped_calibration():
    """Two sweeps timed by clocks that disagree by 100x (and measure nothing alike) give the same rows,
    the same bound, the same pool and the same sentence, in both languages; the pool is the first past
    the cliff, with room to spare against the bound."""
    ticks = iter(range(10**9))
    fast = sweep(time.process_time)
    slow = sweep(lambda: next(ticks) * 1e-2)
    keys = ("cache", "num_blocks", "hit_rate", "ttft_p90_repeat", "ttft_p90")
    assert [[r[k] for k in keys] for r in fast[0]] == [[r[k] for k in keys] for r in slow[0]]
    assert fast[1] == slow[1] and all(fast[2][k] == slow[2][k] for k in keys)
    rows, slo, chosen = fast
    assert chosen is not None and (chosen["cache"], chosen["num_blocks"]) == (True, 224)
    assert chosen["ttft_p90_repeat"] < 0.7 * slo["ttft_p90_repeat"]  # far from flipping on a rounding
    below = [r for r in rows if r["cache"] and r["num_blocks"] < 224]
    assert all(r["hit_rate"] == 0 and r["ttft_p90_repeat"] > slo["ttft_p90_repeat"] for r in below)
    for lang in ("en", "zh"):
        assert sweep_verdict(*fast, lang=lang) == sweep_verdict(*slow, lang=lang)
    assert "the first measured size past the cliff" in sweep_verdict(*fast, lang="en")

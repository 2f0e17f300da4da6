"""The serving loop's simulated clock (workbook/serving_cost.py) and the tables it reads
(kernels/calibration.py: decode steps, whole prefills): lookups, JSON, the shipped calibration, and
stage 7's decisions taken from it (the four workloads' records, the pool sweep): the same in every
run, whatever the machine measured."""
from __future__ import annotations

import statistics
import time

import pytest
import torch

from kernels.calibration import Calibration
from kernels.model import DecoderLM, ModelConfig
from solutions.s07_serving import (
    choose_setting,
    fell_behind,
    predict_ttft,
    same_work_verdict,
    summarize_run,
    sweep_rows,
    sweep_verdict,
)
from workbook import serving_cost as SC
from workbook import serving_workloads as W
from workbook.serving import SERVING_MODEL, ServingEngine

DECODE = {(1, 256): 4e-3, (8, 256): 1.1e-2, (1, 768): 6e-3, (8, 768): 1.5e-2}
PREFILL = {(1, 0): 2e-3, (512, 0): 5e-2, (1, 512): 3e-3, (512, 512): 7e-2}


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


def test_prefill_table_reads_measured_sizes_exactly_and_interpolates_between():
    cal = calibration(prefill_s=PREFILL)
    for (computed, cached), seconds in PREFILL.items():
        assert cal.prefill_table_s(computed, cached) == pytest.approx(seconds, rel=1e-12)
    # linear in computed at each measured cached size, then linear in cached
    assert cal.prefill_table_s(256.5, 0) == pytest.approx(2.6e-2)
    assert cal.prefill_table_s(1, 256) == pytest.approx(2.5e-3)
    assert cal.prefill_table_s(100, 128) == pytest.approx(0.75 * cal.prefill_table_s(100, 0)
                                                          + 0.25 * cal.prefill_table_s(100, 512))
    assert Calibration.from_dict(cal.to_dict()) == cal


def test_prefill_table_is_refused_when_missing_negative_or_not_a_full_grid():
    with pytest.raises(ValueError, match="prefill"):
        calibration().prefill_table_s(16, 0)
    with pytest.raises(ValueError, match="non-negative"):
        calibration(prefill_s={(1, 0): -1e-3})
    with pytest.raises(ValueError, match="every computed size"):
        calibration(prefill_s={(1, 0): 1e-3, (16, 0): 2e-3, (1, 512): 2e-3})


def test_virtual_cost_prices_prefills_from_the_table_unless_given_a_model():
    cal = calibration(decode_step_s=DECODE, prefill_s=PREFILL)
    cost = SC.virtual_cost(SERVING_MODEL, cal)
    assert cost("prefill", 512, 512) == PREFILL[(512, 512)] and cost("prefill", 1, 0) == PREFILL[(1, 0)]
    assert cost("decode", 1, 256) == pytest.approx(DECODE[(1, 256)])


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
    assert set(cal.prefill_s) == {(c, k) for c in SC.PREFILL_COMPUTED for k in SC.PREFILL_CACHED}
    assert cal.notes["model"] == "SERVING_MODEL" and cal.notes["clock"] == "process_time"
    # a plausible CPU: a cached prefill is cheaper than a full one, a larger batch's step costs more
    assert predict_ttft(SERVING_MODEL, 32, 480, cal) < predict_ttft(SERVING_MODEL, 512, 0, cal)
    assert cal.prefill_table_s(32, 480) < cal.prefill_table_s(512, 0)
    assert cal.decode_s(8, 300) > cal.decode_s(1, 300) > 0
    # every prompt of stage 7's workloads lies inside the measured grid: the table interpolates, never extrapolates
    for requests, _ in WORKLOADS.values():
        assert max(len(r.prompt) for r in requests) <= max(SC.PREFILL_COMPUTED)
        assert max(len(r.prompt) for r in requests) - 1 <= max(SC.PREFILL_CACHED) + max(SC.PREFILL_COMPUTED)


#: Stage 7's four workloads and their pools, exactly as the notebook builds them.
WORKLOADS = {
    "shared_prefix": (W.shared_prefix(prompts_per_group=12), 256),
    "multiturn": (W.multiturn(), 256),
    "unique": (W.unique(), 256),
    "thrashing": (W.thrashing(rounds=4, question_len=(8, 24), rate=40.0), 160),
}


def tiny_model() -> DecoderLM:
    """A model of SERVING_MODEL's vocabulary but tiny width: the simulated clock makes its speed irrelevant."""
    return DecoderLM.random(ModelConfig(vocab_size=SERVING_MODEL.vocab_size, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1), seed=0)


def simulated_runs(clock, jobs) -> dict:
    """``{(workload, cache, blocks): RunRecord}`` of stage 7's runs on the notebook's clock (the shipped
    prefills and decode steps), one torch thread as the notebook; ``clock`` only measures."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the notebook: small matrices, and a second thread only waits on a shared machine
    try:
        model, cost = tiny_model(), SC.virtual_cost(SERVING_MODEL, SC.shipped_calibration())
        return {(name, cache, blocks): ServingEngine(model, blocks, cache=cache, clock=clock, cost=cost).run(
            WORKLOADS[name][0], settings={"workload": name}) for name, cache, blocks in jobs}
    finally:
        torch.set_num_threads(threads)


#: The notebook's eight main runs, and its sweep (the two at 160 blocks are main runs).
MAIN = tuple((name, cache, blocks) for name, (_, blocks) in WORKLOADS.items() for cache in (True, False))
SWEEP = tuple(("thrashing", True, b) for b in (128, 224, 256, 320)) + (("thrashing", False, 320),)


def test_the_shipped_machine_is_named_in_the_editions_language():
    from autograder.core.i18n import language, set_language

    cal = SC.shipped_calibration()
    before = language()
    try:
        set_language("en")
        assert SC.measured_on(cal) == "cpu: x86_64, 1 torch thread, CPU time"
        set_language("zh")
        assert SC.measured_on(cal) == "cpu: x86_64，1 个 torch 线程，CPU 时间"
    finally:
        set_language(before)
    assert SC.measured_on(calibration(device="cpu: arm64, 1 torch thread")) == "cpu: arm64"  # no notes: no threads


def sweep(clock, runs: dict | None = None) -> tuple[list[dict], dict, dict | None]:
    """Stage 7's pool sweep exactly as the notebook runs it (workload, pools, SLO, the simulated clock)."""
    runs = {**(runs or simulated_runs(clock, [j for j in MAIN if j[0] == "thrashing"])), **simulated_runs(clock, SWEEP)}
    rows, slo = sweep_rows([v for k, v in runs.items() if k[0] == "thrashing"], SERVING_MODEL, today=(False, 160),
                           share=0.6)
    return rows, slo, choose_setting(rows, slo)


def decisions(runs: dict) -> dict:
    """What the notebook states from its eight main runs: the rows, each workload's SLO and choice, the
    unique prompts' and thrashing's same-work verdicts, which runs fell behind, and my_guess_2's answer."""
    cost = SC.virtual_cost(SERVING_MODEL, SC.shipped_calibration())
    out: dict = {}
    for name, (_, blocks) in WORKLOADS.items():
        on, off = (summarize_run(runs[(name, c, blocks)], SERVING_MODEL) for c in (True, False))
        slo = {"ttft_p90": round(off["ttft_p90"] * 0.6, 4)}
        choice = choose_setting([on, off], slo) if name != "thrashing" else None  # thrashing's comes from the sweep
        out[name] = (on, off, slo, choice and (choice["cache"], choice["num_blocks"]))
    for name in ("unique", "thrashing"):
        out[f"{name} verdict"] = [same_work_verdict(runs[(name, True, WORKLOADS[name][1])],
                                                    runs[(name, False, WORKLOADS[name][1])], lang=lang)
                                  for lang in ("en", "zh")]
    shares = {f"{name} {c}": statistics.median(1 - cost("prefill", r.computed_tokens, r.hit_tokens) / r.ttft_s
                                               for r in runs[(name, c, blocks)].requests)
              for name, (_, blocks) in WORKLOADS.items() for c in (True, False)}
    out["shares"] = shares
    out["behind"] = [fell_behind(shares, lang=lang) for lang in ("en", "zh")]
    on, off = out["shared_prefix"][:2]
    tpot = on["tpot_p50"] / off["tpot_p50"] - 1
    out["my_guess_2"] = "A" if tpot < -0.1 else "C" if tpot > 0.1 else "B"
    return out


@pytest.mark.slow  # eight serving runs of 37-48 requests (a few CPU-seconds with the tiny model)
def test_stage7_main_runs_decisions_are_fixed_by_the_shipped_calibration():
    """The notebook's eight main runs twice, timed by clocks that disagree by 100x (and measure nothing
    alike): every row, SLO, choice, verdict sentence (both languages), waiting share and the answer
    to my_guess_2 are identical."""
    ticks = iter(range(10**9))
    fast = decisions(simulated_runs(time.process_time, MAIN))
    slow = decisions(simulated_runs(lambda: next(ticks) * 1e-2, MAIN))
    keys = ("hit_rate", "ttft_p50", "ttft_p90", "tpot_p50", "requests_per_s", "peak_blocks_in_use")
    for name in WORKLOADS:
        assert [[row[k] for k in keys] for row in fast[name][:2]] == [[row[k] for k in keys] for row in slow[name][:2]]
        assert fast[name][2:] == slow[name][2:]
    for key in ("unique verdict", "thrashing verdict", "shares", "behind", "my_guess_2"):
        assert fast[key] == slow[key], key
    assert {name: fast[name][3] for name in ("shared_prefix", "multiturn", "unique")} == {
        "shared_prefix": (True, 256), "multiturn": None, "unique": None}
    assert fast["my_guess_2"] == "A"
    assert fast["unique verdict"][0].startswith("Nothing hit, both runs computed the same")
    assert fast["behind"][0].startswith("the server fell behind")


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
    assert "the first simulated size past the cliff" in sweep_verdict(*fast, lang="en", simulated=True)
    assert "越过悬崖后第一个模拟过的大小" in sweep_verdict(*fast, lang="zh", simulated=True)

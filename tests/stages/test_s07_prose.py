"""Stage 7's thrashing lesson says what its own sweep decided.

The notebook's pool sweep (the thrashing workload, cache on and off, the SLO on the repeat visits'
p90 TTFT) is rerun here with the notebook's model, workload shape, clock and given functions
(``sweep_rows``, ``choose_setting``, ``sweep_verdict``), under several workload seeds. The sentence
the notebook renders must name the decision the rule computed, in both languages; and the fixed
sentences around it (below the cliff nothing hits, past it most tokens hit) must hold in at least 19
of 20 seeds. Runs are cached per (seed, cache, pool), so the two tests share their first seeds.
"""
from __future__ import annotations

import math
import time

import pytest
import torch

from kernels.model import DecoderLM
from solutions.s07_serving import choose_setting, cliff, sweep_rows, sweep_verdict
from workbook import serving_workloads as W
from workbook.serving import SERVING_MODEL, ServingEngine, warm_up

pytestmark = pytest.mark.slow  # the fast lane leaves it out: statistical reruns of the stage-7 measurements

_RUNS: dict[tuple[int, bool, int], object] = {}


@pytest.fixture(scope="module")
def model() -> DecoderLM:
    torch.set_num_threads(1)  # as the notebook does on a CPU
    model = DecoderLM.random(SERVING_MODEL, seed=0)
    warm_up(model)
    return model


def _run(model: DecoderLM, seed: int, cache: bool, num_blocks: int):
    """One thrashing run of the notebook's workload (``seed`` varies its prompts and arrivals)."""
    key = (seed, cache, num_blocks)
    if key not in _RUNS:
        requests = W.thrashing(rounds=4, question_len=(8, 24), rate=40.0, seed=seed)
        engine = ServingEngine(model, num_blocks, cache=cache, clock=time.process_time)
        _RUNS[key] = engine.run(requests, settings={"workload": "thrashing"})
    return _RUNS[key]


#: The settings swept here: today's (cache off, 160), one pool below the cliff and two past it.
SETTINGS = ((False, 160), (True, 160), (True, 224), (True, 320))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_s07_thrashing_verdict_names_the_computed_decision(model, seed):
    records = [_run(model, seed, cache, blocks) for cache, blocks in SETTINGS]
    rows, slo = sweep_rows(records, SERVING_MODEL, today=(False, 160), share=0.6)
    assert list(slo) == ["ttft_p90_repeat"] and math.isfinite(slo["ttft_p90_repeat"])
    chosen = choose_setting(rows, slo)
    edge = cliff(rows)
    en, zh = (sweep_verdict(rows, slo, chosen, lang=lang) for lang in ("en", "zh"))
    if chosen is None:
        assert en.startswith("No measured") and zh.startswith("没有任何测过的")
    else:
        size = chosen["num_blocks"]
        assert f"{size} blocks" in en and f"{size} 块" in zh
        assert chosen[next(iter(slo))] <= slo["ttft_p90_repeat"]
        if chosen["cache"] and size == edge:
            assert "the first measured size past the cliff" in en and "越过悬崖后第一个测过的大小" in zh
        elif chosen["cache"] and edge is not None and size > edge:
            assert f"first size past the cliff ({edge} blocks)" in en and f"（{edge} 块）" in zh
        elif chosen["cache"]:
            assert "below the cliff" in en and "在悬崖之前" in zh
        else:
            assert "cache off" in en and "关缓存" in zh
    # The SLO is one a pool can meet: the cache on, past the cliff, cuts the repeat visits' p90.
    past = [r for r in rows if r["cache"] and r["num_blocks"] >= (edge or math.inf)]
    assert past and min(r["ttft_p90_repeat"] for r in past) < next(
        r for r in rows if not r["cache"])["ttft_p90_repeat"]


@pytest.mark.slow
def test_s07_cliff_sentences_hold_in_19_of_20_seeds(model):
    """"Below the cliff nothing hits" (160 blocks) and "past it most tokens hit" (224 blocks)."""
    below = [_run(model, seed, True, 160) for seed in range(20)]
    past = [_run(model, seed, True, 224) for seed in range(20)]
    nothing = sum(r.requests and sum(q.hit_tokens for q in r.requests) == 0 for r in below)
    most = sum(sum(q.hit_tokens for q in r.requests) / sum(q.prompt_tokens for q in r.requests) > 0.5 for r in past)
    assert nothing >= 19 and most >= 19, (nothing, most)

"""Stage 7 spec and public checks: measuring a prefix cache under traffic, and deciding a setting.

Every TODO is a pure function over measurements, so the probes feed them seeded synthetic data
(latency lists, ledgers, calibrations, sweeps) and return plain values: nothing is timed here.
FLOP counts are reported in GFLOP and times in milliseconds, compared with a small tolerance, so
that a correct answer summing in another order still passes.
"""
from __future__ import annotations

import random

from autograder.spec import Stage, Todo

STAGE = Stage(
    id="s07",
    title="Serving with a prefix cache: measure, explain, decide",
    subtitle="带前缀缓存的服务：测量、解释、决策",
    todos=[
        Todo("s07.latency_summary", 1, target="latency_summary", points=2, title="percentiles of a latency list"),
        Todo("s07.cache_accounting", 2, target="cache_accounting", points=3,
             title="hit rate and saved FLOPs from a run's ledger"),
        Todo("s07.predict_ttft", 3, target="predict_ttft", points=3, title="predicted TTFT from measured rates"),
        Todo("s07.choose_setting", 4, target="choose_setting", points=3,
             title="the cheapest setting that meets an SLO"),
    ],
    time_limit_s=20,
    memory_limit_mb=4096,  # the stage imports torch (through kernels' model config)
    preload=["torch"],
)

TIME_ATOL = 1e-6  # latencies in seconds, predictions in ms
GFLOP_ATOL = 1e-6


# -- helpers shared with the hidden checks ----------------------------------------------------------
def model_config(name: str = "small"):
    """The model shapes of the probes: stage 6's benchmark model, or two layers of Qwen2.5-0.5B's shape."""
    from kernels.model import ModelConfig

    if name == "small":
        return ModelConfig(vocab_size=8192, hidden_size=640, intermediate_size=2560, num_hidden_layers=2,
                           num_attention_heads=10, num_key_value_heads=2)
    if name == "qwen2-width":
        return ModelConfig.qwen2_5_0_5b(num_hidden_layers=2, vocab_size=32000, tie_word_embeddings=False)
    return ModelConfig.tiny()


def latencies(seed: int, n: int, scale: float = 0.05) -> list[float]:
    """``n`` seeded latencies (seconds) with a long right tail, like real TTFTs."""
    rng = random.Random(seed)
    return [round(scale * rng.lognormvariate(0.0, 0.6), 6) for _ in range(n)]


def ledger(seed: int, n: int, *, prefix: int = 512, hit_share: float = 0.7) -> list[dict]:
    """``n`` seeded ledger entries: prompts of ``prefix`` + a question; a ``hit_share`` of them hit
    the prefix's full 16-token blocks (stage 3's rule: at least one token is computed)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        prompt = prefix + rng.randint(1, 64)
        hit = (prefix // 16) * 16 if rng.random() < hit_share else 0
        hit = min(hit, prompt - 1)
        out.append({"prompt_tokens": prompt, "hit_tokens": hit, "computed_tokens": prompt - hit})
    return out


def in_gflop(totals) -> object:
    """``cache_accounting``'s dict with every FLOP count in GFLOP (anything else: as it came)."""
    if not isinstance(totals, dict):
        return f"not a dict: {type(totals).__name__}"
    return {k: (v / 1e9 if "flops" in k and isinstance(v, (int, float)) else v) for k, v in totals.items()}


def calibration(kind: str = "cpu"):
    """A synthetic :class:`kernels.cost_model.Calibration`: rates that differ by size, as on a real CPU.

    GEMMs get faster per FLOP with more rows; attention runs far below the GEMM rate; the head on
    one row is memory-bound. ``kind="slow-attention"`` makes attention 20x slower still, so using
    the wrong rate or the wrong context for it moves the answer a lot.
    """
    from kernels.cost_model import Calibration

    attention = {(1, 1): 2e8, (64, 320): 4e9, (64, 1088): 6e9, (64, 4160): 7e9,
                 (320, 320): 1.2e10, (1088, 1088): 1.8e10, (4160, 4160): 2.2e10}
    if kind == "slow-attention":
        attention = {k: v / 20 for k, v in attention.items()}
    return Calibration(
        gemm_flops_per_s={1: 3e9, 64: 3.2e10, 320: 5e10, 1088: 6e10, 4160: 6.5e10},
        head_flops_per_s=8e9,
        attention_flops_per_s=attention,
        elementwise_s={1: 2e-4, 64: 6e-4, 4160: 3e-2},
        overhead_s=1.5e-3,
        bookkeeping_s_per_token=3e-7,
        device="synthetic",
    )


def ms(seconds) -> object:
    """A prediction in milliseconds (anything but a float or int: described, which never passes)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return f"not a number: {type(seconds).__name__}"
    return float(seconds) * 1e3


def setting(cache: bool, num_blocks: int, ttft_p90: float, tpot_p50: float = 0.02, hit_rate: float = 0.0) -> dict:
    return {"cache": cache, "num_blocks": num_blocks, "ttft_p90": ttft_p90, "tpot_p50": tpot_p50, "hit_rate": hit_rate}


def sweep() -> list[dict]:
    """A pool-size sweep, cache on and off, shaped like a thrashing workload: with the cache on,
    p90 TTFT drops once the pool holds the hot prefixes (from 256 blocks on); off, it stays high.
    Listed from the largest pool down, as a sweep that halves the pool would record it."""
    rows = []
    for blocks, on, off, hit in ((1024, 0.21, 0.92, 0.80), (512, 0.22, 0.93, 0.80), (256, 0.30, 0.93, 0.70),
                                 (128, 0.85, 0.94, 0.10), (64, 0.90, 0.95, 0.05)):
        rows.append(setting(True, blocks, on, 0.021, hit))
        rows.append(setting(False, blocks, off, 0.020, 0.0))
    return rows


# -- TODO 1: latency_summary ----------------------------------------------------------------------
@STAGE.check("s07.latency_summary", call="latency_summary([0.3, 0.1, 0.2, 0.5, 0.4])", atol=TIME_ATOL,
             hint="Sort first; p90 of 5 values sits at rank 0.9 * 4 = 3.6: 60% of the way from the 4th to the 5th.")
def five_values(impl):
    return impl.latency_summary([0.3, 0.1, 0.2, 0.5, 0.4])


@STAGE.check("s07.latency_summary", call="latency_summary([0.8, 0.2], percentiles=(0, 25, 50, 100))", atol=TIME_ATOL,
             hint="Between two ranks, interpolate linearly: p25 of [0.2, 0.8] is 0.2 + 0.25 * 0.6.")
def interpolates_between_two(impl):
    return impl.latency_summary([0.8, 0.2], percentiles=(0, 25, 50, 100))


@STAGE.check("s07.latency_summary", call="latency_summary([5, 1, 4, 2, 3, 9, 7, 8, 6, 10, 11], (10, 50, 90))",
             atol=TIME_ATOL, hint="With 11 values, p10 is at rank 1 exactly: the 2nd smallest value, no rounding.")
def integer_ranks(impl):
    return impl.latency_summary([5, 1, 4, 2, 3, 9, 7, 8, 6, 10, 11], (10, 50, 90))


# -- TODO 2: cache_accounting ---------------------------------------------------------------------
@STAGE.check("s07.cache_accounting", call="cache_accounting(3 requests: 528/512 hit, 100/0, 540/512; small model)",
             atol=GFLOP_ATOL,
             hint="hit_rate = total hit tokens / total prompt tokens; FLOPs in the result are shown in GFLOP.")
def three_requests(impl):
    rows = [{"prompt_tokens": 528, "hit_tokens": 512, "computed_tokens": 16},
            {"prompt_tokens": 100, "hit_tokens": 0, "computed_tokens": 100},
            {"prompt_tokens": 540, "hit_tokens": 512, "computed_tokens": 28}]
    return in_gflop(impl.cache_accounting(rows, model_config("small")))


@STAGE.check("s07.cache_accounting", call="cache_accounting(one 1000-token request with 992 hit + one 10-token miss)",
             atol=GFLOP_ATOL, hint="Weight by tokens, not requests: the big request's hits count for almost all.")
def token_weighted(impl):
    rows = [{"prompt_tokens": 1000, "hit_tokens": 992, "computed_tokens": 8},
            {"prompt_tokens": 10, "hit_tokens": 0, "computed_tokens": 10}]
    return in_gflop(impl.cache_accounting(rows, model_config("small")))


@STAGE.check("s07.cache_accounting", call="cache_accounting(ledger(seed=1, n=20, prefix=4096), small model)",
             atol=GFLOP_ATOL, hint="With a cache, the computed tokens still attend to the hit ones: "
                                   "prefill_flops(cfg, computed, hit), not prefill_flops(cfg, computed).")
def long_prefix_attention_remains(impl):
    return in_gflop(impl.cache_accounting(ledger(1, 20, prefix=4096), model_config("small")))


# -- TODO 3: predict_ttft -------------------------------------------------------------------------
@STAGE.check("s07.predict_ttft",
             call="predict_ttft(small, computed=64, cached=1024, cal) * 1e3  # cal: synthetic rates",
             atol=TIME_ATOL, hint="Linear FLOPs at cal.gemm_rate(computed rows); attention at "
                                  "cal.attention_rate(computed, computed + cached); head; plus cal.other_s.")
def cached_prefill(impl):
    return ms(impl.predict_ttft(model_config("small"), 64, 1024, calibration()))


@STAGE.check("s07.predict_ttft", call="predict_ttft(small, computed=1088, cached=0, cal) * 1e3",
             atol=TIME_ATOL, hint="A full prefill is computed=all tokens, cached=0: the same formula.")
def full_prefill(impl):
    return ms(impl.predict_ttft(model_config("small"), 1088, 0, calibration()))


@STAGE.check("s07.predict_ttft", call="[predict_ttft(small, 64, c, cal) * 1e3 for c in (0, 256, 1024, 4096)]",
             atol=TIME_ATOL,
             hint="More cached tokens: same GEMMs, but more attention (each query sees the whole prefix).")
def growing_prefix(impl):
    return [ms(impl.predict_ttft(model_config("small"), 64, c, calibration())) for c in (0, 256, 1024, 4096)]


# -- TODO 4: choose_setting -----------------------------------------------------------------------
@STAGE.check("s07.choose_setting", call="choose_setting(sweep(), {'ttft_p90': 0.5})  # 5 pool sizes x cache on/off",
             hint="Among the settings that meet the SLO, the smallest num_blocks wins (memory is the cost).")
def smallest_pool_that_meets(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", call="choose_setting(sweep(), {'ttft_p90': 0.1})",
             hint="When no setting meets the SLO, return None: say so rather than pick the least bad.")
def nothing_meets(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.1})


@STAGE.check("s07.choose_setting", call="choose_setting(sweep(), {'ttft_p90': 0.95, 'tpot_p50': 0.0205})",
             hint="Every metric of the SLO must be within its bound, not only the first one.")
def every_metric_counts(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.95, "tpot_p50": 0.0205})

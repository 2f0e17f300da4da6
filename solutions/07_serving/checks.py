"""Stage 7 spec and public checks: measuring a prefix cache under traffic, and deciding a setting.

Every TODO is a pure function over measurements, so the probes feed them seeded synthetic data
(latency lists, ledgers, calibrations, sweeps) and return plain values: nothing is timed here.
FLOP counts are reported in GFLOP and times in milliseconds, compared with a small tolerance, so
that a correct answer summing in another order still passes.

What a learner reads of this stage is in ``s07.toml`` beside this module, in English and Chinese.
Contracts say what to set or return and the invariant, never code; hint tiers go from the idea (1) over the approach (2) to
a skeleton with blanks (3). Each check's hint speaks only about the bug that check detects.
"""
from __future__ import annotations

import random

from autograder.checks.common import plain, record
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s07",
    subtitle="带前缀缓存的服务：测量、解释、决策",
    minutes=80,
    todos=[
        Todo("s07.latency_summary", 1, target="latency_summary", points=2,
             preload=("torch",)),  # the stage runs a torch model: torch.quantile is a right answer too
        Todo("s07.cache_accounting", 2, target="cache_accounting", points=3),
        Todo("s07.predict_ttft", 3, target="predict_ttft", points=3),
        Todo("s07.choose_setting", 4, target="choose_setting", points=3),
    ],
    quiz=Quiz(number=5, points=2, questions=(
        Question("q1", decimals=2),
        Question("q2"),
        Question("q3"),
        Question("q4"),
        Question("q5"),
        Question("q6", decimals=0),
    )),
    time_limit_s=20,
    memory_limit_mb=1024,  # its TODOs and checks need no torch (kernels.config, kernels.calibration)
)

TIME_ATOL = 1e-6  # latencies in seconds, predictions in ms
GFLOP_ATOL = 1e-6


# -- helpers shared with the hidden checks ----------------------------------------------------------
def model_config(name: str = "small"):
    """The model shapes of the probes: stage 6's benchmark model, or two layers of Qwen2.5-0.5B's shape."""
    from kernels.config import ModelConfig

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
    totals = plain(totals)  # numpy's scalars are numbers too (np.sum answers with them)
    if not isinstance(totals, dict):
        return f"not a dict: {type(totals).__name__}"
    return {k: (v / 1e9 if "flops" in k and isinstance(v, (int, float)) else v) for k, v in totals.items()}


def token_fields(totals) -> object:
    """Only the token counts and rates of ``cache_accounting``'s dict (a check of the FLOPs fails alone)."""
    totals = in_gflop(totals)
    if not isinstance(totals, dict):
        return totals
    return {k: v for k, v in totals.items() if "flops" not in k and k != "saved_fraction"}


def calibration(kind: str = "cpu"):
    """A synthetic :class:`kernels.cost_model.Calibration`: rates that differ by size, as on a real CPU.

    GEMMs get faster per FLOP with more rows; attention runs far below the GEMM rate; the head on
    one row is memory-bound. ``kind="slow-attention"`` makes attention 20x slower still, so using
    the wrong rate or the wrong context for it moves the answer a lot.
    """
    from kernels.calibration import Calibration

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
    """One measured setting, as a sweep records it."""
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
@STAGE.check("s07.latency_summary", call="latency_summary([0.3, 0.1, 0.2, 0.5, 0.4])", atol=TIME_ATOL)
def five_values(impl):
    return plain(impl.latency_summary([0.3, 0.1, 0.2, 0.5, 0.4]))


@STAGE.check("s07.latency_summary", call="latency_summary([0.8, 0.2], percentiles=(0, 25, 50, 100))", atol=TIME_ATOL)
def interpolates_between_two(impl):
    return plain(impl.latency_summary([0.8, 0.2], percentiles=(0, 25, 50, 100)))


@STAGE.check("s07.latency_summary", call="latency_summary([5, 1, 4, 2, 3, 9, 7, 8, 6, 10, 11], (10, 50, 90))",
             atol=TIME_ATOL)
def integer_ranks(impl):
    return plain(impl.latency_summary([5, 1, 4, 2, 3, 9, 7, 8, 6, 10, 11], (10, 50, 90)))


def skewed_latencies() -> list[float]:
    """A long-tailed list with repeated values, built at run time: p50 is far below the mean, and a
    percentile between two equal neighbours is that value."""
    xs = latencies(11, 9) + [0.04] * 3 + [round(0.04 * 25, 6)]
    random.Random(11).shuffle(xs)
    return xs


@STAGE.check("s07.latency_summary",
             atol=TIME_ATOL)
def skewed_with_repeats(impl):
    xs = skewed_latencies()
    before = list(xs)
    summary = plain(impl.latency_summary(xs, (25, 50, 90, 99.5)))
    return record(summary=summary, input_unchanged=xs == before)


@STAGE.check("s07.latency_summary", call="latency_summary([1.5], (25, 75))", atol=TIME_ATOL)
def one_value(impl):
    return plain(impl.latency_summary([1.5], (25, 75)))


@STAGE.check("s07.latency_summary", call="latency_summary([0.4, 0.1, 0.3, 0.2], (12.5, 50.0, 90.0, 100.0))",
             atol=TIME_ATOL)
def percentiles_given_as_floats(impl):
    # A percentile is a number of any type: 50.0 is p50, as 50 is (the key is written from the value).
    # zh: 分位数是任何类型的数：50.0 和 50 一样是 p50（键由数值写出）。
    return plain(impl.latency_summary([0.4, 0.1, 0.3, 0.2], (12.5, 50.0, 90.0, 100.0)))


@STAGE.check("s07.latency_summary", call="latency_summary([0.3, 0.1, 0.2], percentiles=())", atol=TIME_ATOL)
def no_percentiles_asked(impl):
    # An empty tuple asks for no percentile: it is not "not given" (that would be the default).
    # zh: 空元组就是一个分位数也不要：它不等于“没有给”（没有给才用默认值）。
    return plain(impl.latency_summary([0.3, 0.1, 0.2], percentiles=()))


# -- TODO 2: cache_accounting ---------------------------------------------------------------------
@STAGE.check("s07.cache_accounting",
             atol=GFLOP_ATOL)
def three_requests(impl):
    rows = [{"prompt_tokens": 528, "hit_tokens": 512, "computed_tokens": 16},
            {"prompt_tokens": 100, "hit_tokens": 0, "computed_tokens": 100},
            {"prompt_tokens": 540, "hit_tokens": 512, "computed_tokens": 28}]
    return token_fields(impl.cache_accounting(rows, model_config("small")))


@STAGE.check("s07.cache_accounting",
             atol=GFLOP_ATOL)
def token_weighted(impl):
    rows = [{"prompt_tokens": 1000, "hit_tokens": 992, "computed_tokens": 8},
            {"prompt_tokens": 10, "hit_tokens": 0, "computed_tokens": 10}]
    return token_fields(impl.cache_accounting(rows, model_config("small")))


@STAGE.check("s07.cache_accounting",
             atol=GFLOP_ATOL)
def long_prefix_attention_remains(impl):
    return in_gflop(impl.cache_accounting(ledger(1, 20, prefix=4096), model_config("small")))


@STAGE.check("s07.cache_accounting", atol=GFLOP_ATOL)
def no_requests(impl):
    return in_gflop(impl.cache_accounting([], model_config("tiny")))


# -- TODO 3: predict_ttft -------------------------------------------------------------------------
@STAGE.check("s07.predict_ttft",
             atol=TIME_ATOL)
def cached_prefill(impl):
    return ms(impl.predict_ttft(model_config("small"), 64, 1024, calibration()))


@STAGE.check("s07.predict_ttft", call="predict_ttft(small, computed=1088, cached=0, cal) * 1e3",
             atol=TIME_ATOL)
def full_prefill(impl):
    return ms(impl.predict_ttft(model_config("small"), 1088, 0, calibration()))


@STAGE.check("s07.predict_ttft", call="[predict_ttft(small, 64, c, cal) * 1e3 for c in (0, 256, 1024, 4096)]",
             atol=TIME_ATOL)
def growing_prefix(impl):
    return [ms(impl.predict_ttft(model_config("small"), 64, c, calibration())) for c in (0, 256, 1024, 4096)]


# -- TODO 4: choose_setting -----------------------------------------------------------------------
@STAGE.check("s07.choose_setting")
def smallest_pool_that_meets(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", call="choose_setting(sweep(), {'ttft_p90': 0.1})")
def nothing_meets(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.1})


@STAGE.check("s07.choose_setting", call="choose_setting(sweep(), {'ttft_p90': 0.95, 'tpot_p50': 0.0205})")
def every_metric_counts(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.95, "tpot_p50": 0.0205})


@STAGE.check("s07.choose_setting")
def tie_at_equal_pool_size(impl):
    rows = [setting(True, 128, 0.45, tpot_p50=0.020), setting(True, 64, 0.60),
            setting(False, 128, 0.40, tpot_p50=0.030), setting(False, 256, 0.10)]
    second = [setting(False, 32, 0.25, tpot_p50=0.03), setting(True, 32, 0.25, tpot_p50=0.02)]
    full_tie = [setting(True, 32, 0.25), setting(False, 32, 0.25)]
    slo = {"tpot_p50": 0.05, "ttft_p90": 0.5}
    ttft_first = {"ttft_p90": 0.5, "tpot_p50": 0.05}
    return record(tpot_first=impl.choose_setting(rows, slo), second_metric=impl.choose_setting(second, ttft_first),
                  full_tie=impl.choose_setting(full_tie, slo), reversed_input=impl.choose_setting(rows[::-1], slo))


@STAGE.check("s07.choose_setting", call="row = setting(on, 128, ttft_p90=0.5); "
                                        "choose_setting([row, setting(off, 64, nan)], {'ttft_p90': 0.5})",
             specificity=1)
def bound_nan_and_copy(impl):
    rows = [setting(True, 128, 0.25 * 2), setting(False, 64, float("nan"))]
    chosen = impl.choose_setting(rows, {"ttft_p90": 0.5})
    shown = dict(chosen) if isinstance(chosen, dict) else chosen
    if isinstance(chosen, dict):
        chosen["num_blocks"] = -1
    return record(chosen=shown, caller_pool_sizes=[r["num_blocks"] for r in rows])


@STAGE.check("s07.choose_setting")
def zero_bound_is_a_bound(impl):
    # A bound of 0 is a bound ("no errors at all"), not a metric left out of the SLO.
    # zh: 上限为 0 也是上限（“一个错误都不许有”），不是 SLO 里没有这个指标。
    rows = [dict(setting(True, 64, 0.30), errors=2), dict(setting(True, 128, 0.25), errors=0),
            dict(setting(False, 128, 0.40), errors=0)]
    return impl.choose_setting(rows, {"ttft_p90": 0.5, "errors": 0})

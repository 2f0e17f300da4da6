"""TTFT with and without a cached prefix, measured and predicted by a cost model calibrated in the same run.

For each cached prefix length (a "system prompt") plus a short fresh question, this times the time to
first token (the prefill that produces the first output logits) of

- **full**: every token through the model, attention by ``F.scaled_dot_product_attention(
  is_causal=True)`` on 4-D tensors, i.e. torch's fused flash kernel -- the fastest honest baseline;
- **cached**: stage 6's :class:`PagedPrefiller`: only the question's tokens are computed, their
  queries attend to the cached prefix through the block table (the stage-6 reference attention on
  CPU, the Triton kernel on CUDA);

and predicts both with stage 7's ``predict_ttft``: FLOPs (``kernels.flops``) divided by rates that
``kernels.cost_model`` measures at the sizes used -- the model's own GEMMs at the prefill's row
count, the attention kernel at its (queries, context) shape, element-wise work, a fixed overhead and
the block manager's bookkeeping. Every round runs the two prefills *and* the calibration probes once,
in a rotating order (``benchmarks/rounds.py``), so calibration and measurement see the same load on a
shared machine; a round's prediction uses that round's calibration, and the table shows the median
over rounds of predicted/measured (the minimum-time numbers are printed too). The cached prefill is
short, so its group runs three times as many rounds.

    python benchmarks/bench_prefill.py                        # both shapes: minutes (20 on a busy shared machine)
    python benchmarks/bench_prefill.py --model small          # one shape
    python benchmarks/bench_prefill.py --threads 1            # steadier where other jobs share the cores
    python benchmarks/bench_prefill.py --quick                # smoke test, seconds

The last line is ``calibration: worst |predicted/measured - 1| = N%`` over every shape, length and
path (full and cached).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from benchmarks.rounds import interleaved  # noqa: E402
from kernels import cost_model as cm  # noqa: E402
from kernels.device import describe_device, paged_attention_for  # noqa: E402
from kernels.flops import predicted_speedup  # noqa: E402
from kernels.model import DecoderLM, ModelConfig  # noqa: E402
from kernels.timing import add_torch_arguments, apply_torch_arguments  # noqa: E402
from solutions.s03_block_pool import BlockPool  # noqa: E402
from solutions.s06_paged_prefill import PagedPrefiller, full_prefill, paged_attention, pool_attention, write_kv  # noqa: E402
from solutions.s07_serving import predict_ttft  # noqa: E402

#: ``small``: the stage-6 notebook's benchmark model. Wide enough that a 64-token question keeps a
#: CPU busy with matmuls rather than Python overhead, shallow enough that a full 4,160-token prefill
#: takes about a second on 2 cores. ``qwen2-width``: two layers of Qwen2.5-0.5B's exact shape
#: (hidden 896, 14 query / 2 kv heads of 64, MLP 4864), a 32k vocabulary and an untied head; its
#: 17 MB matrices are streamed from memory for only 64 rows, so the cached path's GEMMs run at a
#: lower rate than the full prefill's -- the calibration measures exactly that.
CPU_BENCH_MODELS = {
    "small": ModelConfig(vocab_size=8192, hidden_size=640, intermediate_size=2560, num_hidden_layers=2,
                         num_attention_heads=10, num_key_value_heads=2),
    "qwen2-width": ModelConfig.qwen2_5_0_5b(num_hidden_layers=2, vocab_size=32000, tie_word_embeddings=False),
}
QUICK_MODEL = ModelConfig.tiny()


def check_agreement(model: DecoderLM, engine: PagedPrefiller, system: list[int], question: list[int]) -> float:
    """max |cached - full| of the logits of one prompt (the cached path must be exact, fp32)."""
    prompt = system + question
    logits, ledger = engine.prefill(prompt)
    if ledger["hit_tokens"] != len(system):
        raise AssertionError(f"expected {len(system)} cached tokens, got {ledger}")
    return float((logits.float() - full_prefill(model, prompt).float()).abs().max())


def measure_length(model: DecoderLM, prefix: int, question: int, *, rounds: int, block_size: int,
                   attention, device: torch.device) -> dict:
    """One prefix length: interleaved rounds of each prefill with the calibration probes of its prediction."""
    cfg = model.config
    rng = random.Random(prefix)
    system = [rng.randrange(cfg.vocab_size) for _ in range(prefix)]
    questions = iter([[rng.randrange(cfg.vocab_size) for _ in range(question)] for _ in range(3 * rounds + 4)])
    n = prefix + question
    per_question = -(-question // block_size) + 1
    num_blocks = -(-n // block_size) + (3 * rounds + 8) * per_question
    # A pool big enough that the system prompt's blocks are never handed out again.
    engine = PagedPrefiller(model, num_blocks, block_size, attention=attention)
    engine.prefill(system + next(questions)[:1])  # caches the system prompt (cached K/V from another length)
    diff = check_agreement(model, engine, system, next(questions))
    full_prompt = system + next(questions)
    layer_attention = attention or paged_attention
    small = {  # one-row work: the fixed overhead is what a one-token forward leaves unexplained
        "gemm_1": cm.gemm_probe(model, 1), "head": cm.head_probe(model), "attn_1": cm.full_attention_probe(model, 1),
        "elem_1": cm.elementwise_probe(model, 1), "forward_1": cm.forward_probe(model, 1),
    }
    # Two groups, each interleaving one prefill with the probes that calibrate its prediction. The
    # cached prefill is short, so a burst of load elsewhere moves it more: it gets 3x the rounds.
    full = interleaved({
        "full": lambda: full_prefill(model, full_prompt),
        "gemm": cm.gemm_probe(model, n), "attn": cm.full_attention_probe(model, n),
        "elem": cm.elementwise_probe(model, n), **small,
    }, baseline="full", rounds=rounds, clock="wall").seconds
    cached = interleaved({
        "cached": lambda: engine.prefill(system + next(questions)),
        "gemm": cm.gemm_probe(model, question),
        "attn": cm.paged_attention_probe(model, question, n, layer_attention, write=write_kv, block_size=block_size),
        "elem": cm.elementwise_probe(model, question),
        "bookkeeping": cm.bookkeeping_probe(lambda: BlockPool(-(-n // block_size) + 1, block_size), n, cfg.vocab_size),
        **small,
    }, baseline="cached", rounds=3 * rounds, clock="wall").seconds

    def calibration(sec: dict[str, list[float]], rows: int, i: int | None) -> cm.Calibration:
        pick = (lambda name: sec[name][i]) if i is not None else (lambda name: min(sec[name]))
        return cm.Calibration.from_seconds(
            cfg, gemm_s={rows: pick("gemm"), 1: pick("gemm_1")}, head_s=pick("head"),
            attention_s={(rows, n): pick("attn"), (1, 1): pick("attn_1")},
            elementwise_s={rows: pick("elem"), 1: pick("elem_1")}, forward1_s=pick("forward_1"),
            bookkeeping_s={n: pick("bookkeeping")} if "bookkeeping" in sec else None, device=str(device))

    pred_full = [predict_ttft(cfg, n, 0, calibration(full, n, i)) for i in range(rounds)]
    pred_cached = [predict_ttft(cfg, question, prefix, calibration(cached, question, i)) for i in range(3 * rounds)]
    cal_full, cal_cached = calibration(full, n, rounds // 2), calibration(cached, question, 3 * rounds // 2)
    return {
        "full_min": min(full["full"]), "cached_min": min(cached["cached"]),
        "full_median": statistics.median(full["full"]), "cached_median": statistics.median(cached["cached"]),
        "pred_full_median": statistics.median(pred_full), "pred_cached_median": statistics.median(pred_cached),
        "pred_full_min": min(pred_full), "pred_cached_min": min(pred_cached),
        "ratio_full": statistics.median(p / m for p, m in zip(pred_full, full["full"], strict=True)),
        "ratio_cached": statistics.median(p / m for p, m in zip(pred_cached, cached["cached"], strict=True)),
        "gemm_rate_full": cal_full.gemm_rate(n), "gemm_rate_cached": cal_cached.gemm_rate(question),
        "attn_rate_full": cal_full.attention_rate(n, n), "attn_rate_cached": cal_cached.attention_rate(question, n),
        "max_abs_diff": diff,
    }


def run_shape(name: str, cfg: ModelConfig, prefixes: list[int], question: int, rounds: int, block_size: int,
              device: torch.device) -> tuple[float, float]:
    """Print one shape's table; returns (worst calibration error, worst logit difference)."""
    model = DecoderLM.random(cfg, seed=0, dtype=torch.float32, device=device)
    kernel_name, kernel = paged_attention_for(device)
    attention = pool_attention(kernel) if kernel_name != "torch" else None
    print(f"\n== {name}: hidden {cfg.hidden_size}, {cfg.num_hidden_layers} layers, {cfg.num_attention_heads} heads "
          f"({cfg.num_key_value_heads} kv), mlp {cfg.intermediate_size}, vocab {cfg.vocab_size}, "
          f"{cfg.num_parameters() / 1e6:.1f}M params, fp32; question {question} tokens; {rounds} interleaved rounds; "
          f"cached attention: {kernel_name if attention else 'stage 6 paged_attention (torch)'}")
    full_prefill(model, list(range(min(prefixes) + question)))  # warm-up: first calls allocate
    print(f"{'prefix':>7} {'full ms':>9} {'cached ms':>10} {'measured':>9} {'predicted':>10} {'flop-only':>10} "
          f"{'full pred/meas':>15} {'cached pred/meas':>17} {'max|diff|':>10}")
    worst, worst_diff, notes = 0.0, 0.0, []
    for prefix in prefixes:
        r = measure_length(model, prefix, question, rounds=rounds, block_size=block_size, attention=attention,
                           device=device)
        measured = r["full_median"] / r["cached_median"]
        predicted = r["pred_full_median"] / r["pred_cached_median"]
        worst = max(worst, abs(r["ratio_full"] - 1), abs(r["ratio_cached"] - 1))
        worst_diff = max(worst_diff, r["max_abs_diff"])
        print(f"{prefix:>7} {r['full_median'] * 1e3:>9.1f} {r['cached_median'] * 1e3:>10.2f} {measured:>8.1f}x "
              f"{predicted:>9.1f}x {predicted_speedup(cfg, prefix, question):>9.1f}x {r['ratio_full']:>15.2f} "
              f"{r['ratio_cached']:>17.2f} {r['max_abs_diff']:>10.1e}")
        notes.append(f"{prefix:>7} min: full {r['full_min'] * 1e3:.1f} ms (pred {r['pred_full_min'] * 1e3:.1f}), "
                     f"cached {r['cached_min'] * 1e3:.2f} ms (pred {r['pred_cached_min'] * 1e3:.2f}); median round: "
                     f"GEMM {r['gemm_rate_full'] / 1e9:.0f} GFLOP/s at {prefix + question} rows vs "
                     f"{r['gemm_rate_cached'] / 1e9:.0f} at {question}; attention {r['attn_rate_full'] / 1e9:.0f} "
                     f"GFLOP/s full vs {r['attn_rate_cached'] / 1e9:.0f} cached")
    print("ms: medians over rounds; predicted: median predicted full / median predicted cached; pred/meas: median "
          "over rounds of (prediction from that round's calibration) / (that round's measurement); 'flop-only': the "
          "uncalibrated FLOP ratio (one rate for all work). Minima over rounds:")
    print("\n".join(notes))
    return worst, worst_diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny model and prompts: a smoke test")
    parser.add_argument("--model", choices=[*sorted(CPU_BENCH_MODELS), "both"], default="both",
                        help="model shape (ignored with --quick)")
    parser.add_argument("--prefixes", type=int, nargs="+", default=None)
    parser.add_argument("--question", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per length (default 5)")
    parser.add_argument("--block-size", type=int, default=16)
    add_torch_arguments(parser)
    args = parser.parse_args(argv)
    device = apply_torch_arguments(args)
    if args.quick:
        shapes = {"tiny": QUICK_MODEL}
    elif args.model == "both":
        shapes = dict(CPU_BENCH_MODELS)
    else:
        shapes = {args.model: CPU_BENCH_MODELS[args.model]}
    prefixes = args.prefixes or ([32, 64] if args.quick else [256, 512, 1024, 2048, 4096])
    question = args.question or (8 if args.quick else 64)
    rounds = args.rounds or (2 if args.quick else 5)
    torch.manual_seed(0)
    print(f"device: {describe_device(device)}")
    worst, worst_diff = 0.0, 0.0
    for name, cfg in shapes.items():
        w, d = run_shape(name, cfg, prefixes, question, rounds, args.block_size, device)
        worst, worst_diff = max(worst, w), max(worst_diff, d)
    if worst_diff > 1e-4:
        print(f"MISMATCH: cached logits differ from full prefill by {worst_diff:.2e}")
    print(f"calibration: worst |predicted/measured - 1| = {worst:.0%}")
    return 1 if worst_diff > 1e-4 else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""TTFT of a prompt with a long shared prefix: full prefill vs prefill with the prefix cached.

For each cached prefix length (a "system prompt") plus a short fresh question, measures the time to
first token (the prefill that produces the first output logits) of

- **full**: every token through the model, attention by ``F.scaled_dot_product_attention(
  is_causal=True)`` -- the fastest causal attention torch has, not a straw man;
- **cached**: stage 6's :class:`PagedPrefiller`: only the question's tokens are computed, their
  queries attend to the cached prefix through the block table;

and compares the measured speedup with the speedup a FLOP model predicts (:mod:`kernels.flops`:
projection and MLP work scale with the computed tokens; the question's attention over the prefix
remains). It also prints the matmul rate at 64 vs ~1,000 rows, which the FLOP model assumes equal
and which explains most of the gap at moderate prefixes on a CPU. Full and cached runs alternate,
every run with a fresh question, and the minimum over the repetitions is reported (the least
disturbed run on a shared machine; the median is shown too).

    python benchmarks/bench_prefill.py            # 30-60 s on 2 CPU cores
    python benchmarks/bench_prefill.py --model qwen2-width   # Qwen2.5-0.5B's layer shape, about a minute
    python benchmarks/bench_prefill.py --quick    # smoke test, seconds
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kernels.device import describe_device, paged_attention_for  # noqa: E402
from kernels.timing import timed  # noqa: E402
from kernels.flops import predicted_speedup, prefill_flops  # noqa: E402
from kernels.model import DecoderLM, ModelConfig  # noqa: E402
from solutions.s06_paged_prefill import PagedPrefiller, full_prefill, pool_attention  # noqa: E402

#: Default: the stage-6 notebook's model. Wide enough that a 64-token question keeps a CPU busy with
#: matmuls rather than Python overhead, shallow enough that a full 4,160-token prefill takes a few
#: seconds on 2 cores; its weight matrices (about 6.5 MB each) stay in the CPU's cache while 64 rows
#: go through them.
CPU_BENCH_MODELS = {
    "small": ModelConfig(vocab_size=8192, hidden_size=640, intermediate_size=2560, num_hidden_layers=2,
                         num_attention_heads=10, num_key_value_heads=2),
    # Two layers of Qwen2.5-0.5B's exact shape (hidden 896, 14 query / 2 kv heads of 64, MLP 4864), a
    # 32k vocabulary and an untied head (logits of order 1, so 1e-4 is a meaningful tolerance). Its
    # 17 MB matrices are streamed from memory for only 64 rows, so the cached path's matmuls run
    # slower per FLOP than the full prefill's: meas/pred drops by about the printed matmul-rate ratio.
    "qwen2-width": ModelConfig.qwen2_5_0_5b(num_hidden_layers=2, vocab_size=32000, tie_word_embeddings=False),
}
QUICK_MODEL = ModelConfig.tiny()




def measure(model: DecoderLM, prefix_len: int, question_len: int, full_reps: int, cached_reps: int,
            block_size: int, seed: int = 0, attention=None) -> dict:
    """Times of full and cached prefill of prefix + a fresh question per run; checks they agree.

    The runs alternate (a burst of load on a shared machine hits both paths alike); a cached run is
    cheap, so it is repeated more often than a full one.
    """
    device = next(model.parameters()).device
    rng = random.Random(seed + prefix_len)
    vocab = model.config.vocab_size
    system = [rng.randrange(vocab) for _ in range(prefix_len)]
    reps = max(full_reps, cached_reps)
    questions = [[rng.randrange(vocab) for _ in range(question_len)] for _ in range(reps + 1)]
    per_prompt = -(-(prefix_len + question_len) // block_size)
    num_blocks = per_prompt + (reps + 2) * (-(-question_len // block_size) + 1)
    engine = PagedPrefiller(model, num_blocks, block_size, attention=attention)
    # Warm-up that caches the system prompt's blocks. One question token only: the cached K/V then
    # come from a prefill of another length than the full prefills below, so max|diff| shows real
    # rounding differences (same-shape matmuls would round identically and hide them).
    engine.prefill(system + questions[0][:1])
    full_t, cached_t, worst_diff, hits = [], [], 0.0, set()
    for i, q in enumerate(questions[1:]):
        prompt = system + q
        t_cached, (logits, ledger) = timed(lambda: engine.prefill(prompt), device)
        cached_t.append(t_cached)
        hits.add(ledger["hit_tokens"])
        if i < full_reps:
            t_full, ref = timed(lambda: full_prefill(model, prompt), device)
            full_t.append(t_full)
            worst_diff = max(worst_diff, float((logits.float() - ref.float()).abs().max()))
    return {"full_s": min(full_t), "cached_s": min(cached_t), "full_median_s": statistics.median(full_t),
            "cached_median_s": statistics.median(cached_t), "max_abs_diff": worst_diff, "hit_tokens": sorted(hits)}


def matmul_rate(cfg: ModelConfig, rows: int, device: torch.device, reps: int = 30) -> float:
    """FLOP/s of one MLP-shaped matmul (``rows x hidden`` times ``hidden x intermediate``), best of ``reps``.

    The FLOP model assumes every matmul runs at the same rate; on a CPU a 64-row matmul is slower
    per FLOP than a 1,000-row one (the weights are streamed and packed for only 64 rows).
    """
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(rows, cfg.hidden_size, generator=gen, device=device)
    w = torch.randn(cfg.intermediate_size, cfg.hidden_size, generator=gen, device=device)
    best = float("inf")
    for _ in range(reps + 1):
        t, _ = timed(lambda: torch.nn.functional.linear(x, w), device)
        best = min(best, t)
    return 2 * rows * cfg.hidden_size * cfg.intermediate_size / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny model and prompts: a smoke test")
    parser.add_argument("--prefixes", type=int, nargs="+", default=None)
    parser.add_argument("--question", type=int, default=None)
    parser.add_argument("--full-reps", type=int, default=None, help="full prefills per prefix (default 3)")
    parser.add_argument("--cached-reps", type=int, default=None, help="cached prefills per prefix (default 12)")
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--model", choices=sorted(CPU_BENCH_MODELS), default="small",
                        help="model shape (ignored with --quick)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    cfg = QUICK_MODEL if args.quick else CPU_BENCH_MODELS[args.model]
    prefixes = args.prefixes or ([32, 64] if args.quick else [256, 1024, 4096])
    question = args.question or (8 if args.quick else 64)
    full_reps = args.full_reps or (1 if args.quick else 3)
    cached_reps = args.cached_reps or (2 if args.quick else 12)
    torch.manual_seed(0)
    model = DecoderLM.random(cfg, seed=0, dtype=torch.float32, device=device)
    kernel_name, kernel = paged_attention_for(device)
    attention = pool_attention(kernel) if kernel_name != "torch" else None
    print(f"device: {describe_device(device)}; paged attention: "
          f"{kernel_name if attention else 'stage 6 paged_attention (torch)'}")
    print(f"model: hidden {cfg.hidden_size}, {cfg.num_hidden_layers} layers, {cfg.num_attention_heads} heads "
          f"({cfg.num_key_value_heads} kv), mlp {cfg.intermediate_size}, vocab {cfg.vocab_size}, "
          f"{cfg.num_parameters() / 1e6:.1f}M params, fp32; question {question} tokens; "
          f"min of {full_reps} full / {cached_reps} cached runs")
    full_prefill(model, list(range(min(prefixes) + question)))  # warm-up: first calls allocate
    print(f"{'prefix':>7} {'full ms':>9} {'cached ms':>10} {'measured':>9} {'predicted':>10} {'meas/pred':>10} "
          f"{'attn share':>11} {'max|diff|':>10}")
    worst = 0.0
    for prefix in prefixes:
        r = measure(model, prefix, question, full_reps, cached_reps, args.block_size, attention=attention)
        measured = r["full_s"] / r["cached_s"]
        predicted = predicted_speedup(cfg, prefix, question)
        parts = prefill_flops(cfg, question, prefix)
        worst = max(worst, r["max_abs_diff"])
        assert r["hit_tokens"] == [prefix], r["hit_tokens"]
        print(f"{prefix:>7} {r['full_s'] * 1e3:>9.1f} {r['cached_s'] * 1e3:>10.2f} {measured:>8.1f}x "
              f"{predicted:>9.1f}x {measured / predicted:>10.2f} {parts['attention'] / parts['total']:>10.0%} "
              f"{r['max_abs_diff']:>10.1e}")
        print(f"{'':>7} median: full {r['full_median_s'] * 1e3:.1f} ms, cached {r['cached_median_s'] * 1e3:.2f} ms")
    print("'attn share': fraction of the cached prefill's FLOPs that are the question's attention over the "
          "prefix -- the part a prefix cache cannot remove.")
    small, large = matmul_rate(cfg, question, device), matmul_rate(cfg, 1024 + question, device)
    print(f"matmul rate on this device: {small / 1e9:.0f} GFLOP/s with {question} rows, {large / 1e9:.0f} GFLOP/s "
          f"with {1024 + question} rows (ratio {small / large:.2f}); the FLOP model assumes 1.00, so expect "
          "meas/pred near that ratio where matmuls dominate, and above it where the full prefill's long causal "
          "attention runs slower per FLOP than its matmuls.")
    if worst > 1e-4:
        print(f"MISMATCH: cached logits differ from full prefill by {worst:.2e}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

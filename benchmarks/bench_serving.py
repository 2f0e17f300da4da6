"""Serving with the prefix cache on vs off, per workload: ratios from one run.

For each of stage 7's workloads (``workbook/serving_workloads.py``: shared system prompts,
multi-turn chat from the Mooncake trace, unique prompts, thrashing) this serves the same requests
with the cache on and off on the same pool (``workbook/serving.py``), alternating on/off for
``--repeats`` rounds, and prints per workload: the hit rate, on/off ratios of TTFT p50/p90, TPOT
p50, end-to-end p50 and throughput (each round's on/off ratio, median over rounds, with the range of
the TTFT p50 ratio as a measure of noise; below 1 means "on" is lower), peak KV blocks in use, and
whether both runs generated identical tokens (they must). Summaries come from
stage 7's reference (``latency_summary``, ``cache_accounting``).

    python benchmarks/bench_serving.py              # four workloads, about a minute on 2 idle CPU cores
    python benchmarks/bench_serving.py --threads 1  # steadier where other jobs share the cores
    python benchmarks/bench_serving.py --quick      # tiny model and workloads, seconds
    python benchmarks/bench_serving.py --workloads thrashing --blocks 160 256
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from kernels.device import describe_device  # noqa: E402
from kernels.model import DecoderLM, ModelConfig  # noqa: E402
from kernels.timing import add_torch_arguments, apply_torch_arguments  # noqa: E402
from solutions.s07_serving import summarize_run  # noqa: E402
from workbook import serving_workloads as W  # noqa: E402
from workbook.serving import SERVING_MODEL, compare_outputs, serve, warm_up  # noqa: E402

#: Pool size per workload (blocks of 16 tokens): room for a full batch and the hot prefixes, except
#: for thrashing, whose 12 prefixes (192 blocks) cannot stay cached next to 8 running requests.
POOL_BLOCKS = {"shared_prefix": 256, "multiturn": 256, "unique": 256, "thrashing": 160}

QUICK = {  # tiny model (vocabulary 512), a few requests each, block size 4
    "shared_prefix": dict(num_groups=2, prompts_per_group=4, prefix_len=48, question_len=(2, 6), output_len=3,
                          vocab=512),
    "multiturn": dict(num_conversations=3, max_turns=3, block_tokens=4, max_blocks=12, max_output=3, vocab=512),
    "unique": dict(num_requests=8, prompt_len=(20, 50), output_len=3, vocab=512),
    "thrashing": dict(num_prefixes=4, prefix_len=24, rounds=2, question_len=3, output_len=3, vocab=512),
}
QUICK_BLOCKS = {"shared_prefix": 48, "multiturn": 64, "unique": 64, "thrashing": 24}


def ratio(on: float, off: float) -> float:
    return on / off if off > 0 else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny model and workloads: a smoke test")
    parser.add_argument("--workloads", nargs="+", choices=sorted(W.WORKLOADS), default=list(W.WORKLOADS))
    parser.add_argument("--blocks", type=int, nargs="+", default=None,
                        help="pool sizes to run (default: one per workload, see POOL_BLOCKS)")
    parser.add_argument("--repeats", type=int, default=None, help="on/off rounds per setting (default 3)")
    parser.add_argument("--max-batch", type=int, default=8)
    add_torch_arguments(parser)
    args = parser.parse_args(argv)
    device = apply_torch_arguments(args)
    cfg = ModelConfig.tiny() if args.quick else SERVING_MODEL
    block_size = 4 if args.quick else 16
    repeats = args.repeats or (1 if args.quick else 3)
    model = DecoderLM.random(cfg, seed=0, device=device)
    warm_up(model, block_size)
    print(f"device: {describe_device(device)}")
    print(f"model: hidden {cfg.hidden_size}, {cfg.num_hidden_layers} layers, {cfg.num_attention_heads}/"
          f"{cfg.num_key_value_heads} heads, vocab {cfg.vocab_size}, {cfg.num_parameters() / 1e6:.1f}M params, fp32, "
          f"random weights; block size {block_size}; max batch {args.max_batch}; {repeats} on/off round(s), medians")
    print(f"{'workload':>14} {'blocks':>6} {'reqs':>5} {'hit':>5} {'TTFT p50 [range]':>17} {'TTFT p90':>9} "
          f"{'TPOT p50':>9} "
          f"{'e2e p50':>8} {'req/s':>7} {'peak blk on/off':>16} {'TTFT p50 ms on/off':>19} {'tokens':>10} {'s/run':>6}")
    start_all = time.perf_counter()
    failures = []
    for name in args.workloads:
        requests = W.WORKLOADS[name](**(QUICK[name] if args.quick else {}))
        pools = args.blocks or [QUICK_BLOCKS[name] if args.quick else POOL_BLOCKS[name]]
        for blocks in pools:
            rows: dict[bool, list[dict]] = {True: [], False: []}
            identical, seconds = True, []
            for r in range(repeats):
                runs = {}
                for cache in ((True, False) if r % 2 == 0 else (False, True)):
                    t = time.perf_counter()
                    runs[cache] = serve(model, requests, num_blocks=blocks, block_size=block_size, cache=cache,
                                        max_batch=args.max_batch, settings={"workload": name})
                    seconds.append(time.perf_counter() - t)
                    rows[cache].append(summarize_run(runs[cache]))
                identical &= not compare_outputs(runs[True], runs[False])

            def med(cache: bool, key: str) -> float:
                return statistics.median(row[key] for row in rows[cache])  # noqa: B023 - used in this iteration

            def per_round(key: str) -> list[float]:  # on/off of the same round: load bursts hit both alike
                return [ratio(a[key], b[key]) for a, b in zip(rows[True], rows[False], strict=True)]  # noqa: B023 - used in this iteration

            if not identical:
                failures.append(f"{name}@{blocks}")
            ttft = per_round("ttft_p50")
            print(f"{name:>14} {blocks:>6} {len(requests):>5} {med(True, 'hit_rate'):>5.0%} "
                  f"{statistics.median(ttft):>5.2f} [{min(ttft):.2f}-{max(ttft):.2f}] "
                  f"{statistics.median(per_round('ttft_p90')):>9.2f} "
                  f"{statistics.median(per_round('tpot_p50')):>9.2f} "
                  f"{statistics.median(per_round('e2e_p50')):>8.2f} "
                  f"{statistics.median(per_round('requests_per_s')):>7.2f} "
                  f"{med(True, 'peak_blocks_in_use'):>8.0f}/{med(False, 'peak_blocks_in_use'):<7.0f} "
                  f"{med(True, 'ttft_p50') * 1e3:>9.1f}/{med(False, 'ttft_p50') * 1e3:<9.1f} "
                  f"{'identical' if identical else 'DIFFER':>10} {statistics.mean(seconds):>6.2f}")
    print("ratios: cache on / cache off in the same round, median over rounds, [min-max] for TTFT p50 (the spread "
          "is the noise); TTFT, TPOT, e2e: below 1 = faster with the cache; req/s: above 1 = more throughput. ms: "
          "medians. 'tokens': generated tokens of every request, on vs off.")
    print(f"total {time.perf_counter() - start_all:.1f} s")
    if failures:
        print(f"MISMATCH: generated tokens differ with the cache on for {failures}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

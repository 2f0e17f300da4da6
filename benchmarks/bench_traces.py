"""Replay the Mooncake traces through stage 4's reference simulator at a few cache capacities.

    python benchmarks/bench_traces.py [--quick] [--rounds R]

Prints block / token / prefix hit rates of LRU, LRU + pinning, LRU + minimum residence and the
Belady bound, and how long each replay took: the median over interleaved rounds (CPU time) and,
per round, its time against LRU's in the same round (minimum and median). The whole run takes
seconds: the simulator replays pre-hashed block ids through the real pool (no hashing), one dict
lookup and a few pointer moves per block.

Data: Mooncake FAST'25 traces (Apache-2.0), Qin et al., "Mooncake: Trading More Storage for Less
Computation -- A KVCache-centric Architecture for Serving LLM Chatbot", USENIX FAST 2025; see
``data/README.md``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.rounds import interleaved, summary  # noqa: E402
from solutions.s04_eviction import LRU, Policy, belady, simulate  # noqa: E402
from workbook.traces import load_mooncake, trace_stats  # noqa: E402

#: Capacities as fractions of the trace's distinct blocks.
FRACTIONS = (0.025, 0.1, 0.4)


def policies(capacity: int) -> list[Policy]:
    return [
        LRU,
        Policy("LRU+pin", max_pinned=capacity // 4, pin_after_uses=2),
        Policy("LRU+residence", min_residence=60.0),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2,000 requests of one trace, one capacity")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every replay")
    args = ap.parse_args(argv)
    names = ("conversation",) if args.quick else ("conversation", "synthetic")
    fractions = (0.1,) if args.quick else FRACTIONS
    t_start = time.perf_counter()
    print(f"{'trace':<13} {'capacity':>9} {'policy':<14} {'block hit':>9} {'token hit':>9} "
          f"{'prefix hit':>10} {'rejected':>8} {'seconds':>8}  time / LRU's ({args.rounds} rounds, CPU)")
    for name in names:
        trace = load_mooncake(name, limit=2_000 if args.quick else None)
        st = trace_stats(trace)
        print(f"{name}: {st['requests']} requests, {st['block_accesses']} block accesses, "
              f"{st['distinct_blocks']} distinct, infinite-cache block hit rate "
              f"{st['infinite_cache_block_hit_rate']:.4f}")
        for frac in fractions:
            cap = max(64, int(st["distinct_blocks"] * frac))
            runs = {p.name: (lambda p=p: simulate(trace, cap, p)) for p in policies(cap)}  # noqa: B023 - run in this iteration
            runs["Belady"] = lambda: belady(trace, cap)  # noqa: B023 - run in this iteration
            r = interleaved(runs, baseline=LRU.name, rounds=args.rounds, clock="cpu", warmup=False)
            for policy in runs:
                res = r.results[policy]
                print(f"{name:<13} {cap:>9} {res.policy:<14} {res.block_hit_rate:>9.4f} {res.token_hit_rate:>9.4f} "
                      f"{res.prefix_hit_rate:>10.4f} {res.rejected:>8} {statistics.median(r.seconds[policy]):>8.2f}  "
                      f"{summary(r.ratios(policy))}")
    print(f"total {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

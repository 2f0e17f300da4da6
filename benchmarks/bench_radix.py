"""Benchmark: stage 5's radix tree on the seeded shared-prompt workload (a script, not a test).

Same workload as ``bench_block_pool.py`` (200 distinct 2048-token prompts; 10,000 requests, each one
of those prompts picked at random + 64 fresh random tokens). Each request runs through a
``RadixCache`` as a scheduler drives it, evicting **only what the request lacks**:

    match_prefix(tokens[:-1])  -> lock the matched path -> evict the shortfall if free slots are
    short -> take slots for the rest -> insert(tokens, slots) -> free the duplicate / uncached
    slots -> unlock

(at least one token is always computed, as in the block pool), with a KV budget of 524,288 token
slots (the block pool's 32,768 blocks x 16). Part 1 compares, in interleaved rounds (CPU time;
round ``r`` runs the ``r``-th slice of the workload through every contender, each keeping its own
cache), hashing every full block with stage 2's ``chain_keys`` (the baseline: the least a
hash-based lookup must do), stage 3's block pool (lookup, admit with the lookup's keys, commit,
release), and the tree with page size 16 and 1, with the given ``IncrementalEviction`` and with
the learner's ``evict`` (a scan of every leaf per call), per request and, as this benchmark used to,
in batches of 1/32 of the budget. Part 2 times lookups alone on the warm caches. Part 3 fills caches
of 1k and 100k blocks to steady state (every request evicts) and compares the cost per request.

    python benchmarks/bench_radix.py            # the full workload (about 30 s on 2 cores)
    python benchmarks/bench_radix.py --quick    # a small one (smoke test, a few seconds)
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_block_pool import chunks, hash_all, pool_cycle  # noqa: E402
from benchmarks.rounds import Rounds, interleaved, summary  # noqa: E402
from solutions.s02_block_hash import chain_keys  # noqa: E402
from solutions.s03_block_pool import BlockPool  # noqa: E402
from solutions.s05_radix_tree import IncrementalRadixCache, RadixCache  # noqa: E402
from workbook.radix_sim import RadixServer  # noqa: E402
from workbook.workload import iter_workload, make_workload  # noqa: E402

TARGET_CYCLES_PER_S = 4_000
BLOCK = 16  # the block pool's block size, and the tree's page size where it uses pages
FULL = dict(num_prompts=200, prompt_len=2048, num_requests=10_000, fresh_tokens=64)
QUICK = dict(num_prompts=20, prompt_len=256, num_requests=300, fresh_tokens=64)


def per_request(r: Rounds, name: str, sizes: Sequence[int]) -> list[float]:
    return [t / k for t, k in zip(r.seconds[name], sizes, strict=True)]


def ratio_line(label: str, slow: list[float], fast: list[float]) -> str:
    return f"  {label:<66} {summary([s / f for s, f in zip(slow, fast, strict=True)])}"


# -- part 1 and 2: the workload through every contender ---------------------------------------------
def part_cycle(cfg: dict, *, capacity_blocks: int, rounds: int, seed: int) -> list[str]:
    requests = make_workload(seed=seed, **cfg)
    capacity = capacity_blocks * BLOCK
    parts = chunks(requests, rounds)
    sizes = [len(p) for _, p in parts]
    pool = BlockPool(capacity_blocks, BLOCK)
    runs = {
        "radix16": RadixServer(IncrementalRadixCache(BLOCK), capacity),
        "radix16_simple": RadixServer(RadixCache(BLOCK), capacity),
        "radix16_batched": RadixServer(RadixCache(BLOCK), capacity, batch=capacity // 32),
        "radix1": RadixServer(IncrementalRadixCache(1), capacity),
    }
    pool_hits = 0

    def pool_step(start: int, part: list) -> None:
        nonlocal pool_hits
        pool_hits += pool_cycle(pool, part, start, lookup=True, reuse_keys=True)

    def stepper(step: Callable[[int, list], None]) -> Callable[[], None]:
        """A contender that runs the next slice of the workload on each call."""
        it = iter(parts)
        return lambda: step(*next(it))

    contenders = {
        "chain_keys": stepper(lambda start, part: hash_all(chain_keys, part, BLOCK)),
        "pool": stepper(pool_step),
    }
    for name, run in runs.items():
        contenders[name] = stepper(lambda start, part, run=run: run.serve(part))
    r = interleaved(contenders, baseline="chain_keys", rounds=len(parts), clock="cpu", warmup=False)
    pool.check_invariants()
    for run in runs.values():
        run.check()

    prompt_tokens = sum(len(t) for t in requests)
    us = {name: statistics.median(per_request(r, name, sizes)) * 1e6 for name in contenders}
    labels = {
        "chain_keys": "baseline: chain_keys, hash every 16-token block",
        "pool": "block pool (16): lookup, admit(keys=), commit, release",
        "radix16": "radix page 16, incremental evict, per request",
        "radix16_simple": "radix page 16, learner's evict (scan), per request",
        "radix16_batched": "radix page 16, learner's evict, batches of 1/32 budget",
        "radix1": "radix page 1, incremental evict, per request",
    }
    lines = [
        f"workload: {len(requests):,} requests = one of {cfg['num_prompts']} prompts x {cfg['prompt_len']} tokens + "
        f"{cfg['fresh_tokens']} fresh; KV budget {capacity:,} token slots ({capacity_blocks:,} blocks of {BLOCK})",
        f"part 1, full cycle: {len(parts)} interleaved rounds of about {sizes[0]:,} requests, CPU time",
        f"  {'contender':<58}{'us/request':>11}{'hit tokens':>13}{'evict calls':>12}{'evicted':>11}",
    ]
    for name, label in labels.items():
        run = runs.get(name)
        hits = pool_hits if name == "pool" else run.hit_tokens if run else None
        cols = (f"{hits:>13,}" if hits is not None else f"{'':>13}") + (
            f"{run.evict_calls:>12,}{run.evicted_tokens:>11,}" if run else f"{'':>23}")
        lines.append(f"  {label:<58}{us[name]:>11.1f}{cols}")
    lines.append(f"  (of {prompt_tokens:,} prompt tokens)")
    t = {name: per_request(r, name, sizes) for name in contenders}
    lines += [
        "  per-round ratios (min · median):",
        ratio_line("radix 16 (incremental) is faster than hashing every block by", t["chain_keys"], t["radix16"]),
        ratio_line("radix 16 (incremental) is faster than the block pool by", t["pool"], t["radix16"]),
        ratio_line("radix 16: the learner's scan per request costs incremental times", t["radix16_simple"],
                   t["radix16"]),
        ratio_line("radix 16: the scan in batches of 1/32 costs incremental times", t["radix16_batched"],
                   t["radix16"]),
        ratio_line("radix 1 (incremental) is faster than hashing every block by", t["chain_keys"], t["radix1"]),
    ]
    same = runs["radix16"].hit_tokens == runs["radix16_simple"].hit_tokens
    lines.append(f"  incremental and scanning evict find the same hit tokens: {same}; "
                 f"{1e6 / us['radix16']:,.0f} cycles/s at page 16 (aim: >= {TARGET_CYCLES_PER_S:,})")
    if not same:
        raise AssertionError("the incremental evict changed the hits")

    # Part 2: lookups alone on the warm caches, against hashing the same prompts.
    sample = requests[:: max(1, len(requests) // 2_000)]
    lookups = {
        "chain_keys": lambda: hash_all(chain_keys, sample, BLOCK),
        "radix16": lambda: [runs["radix16"].cache.match_prefix(t[:-1]) for t in sample],
        "radix1": lambda: [runs["radix1"].cache.match_prefix(t[:-1]) for t in sample],
    }
    w = interleaved(lookups, baseline="chain_keys", rounds=max(3, rounds), clock="cpu")
    lines += [
        f"part 2, warm lookup (match_prefix alone) on {len(sample):,} requests, {len(w.seconds['radix16'])} rounds:",
        f"  {'radix page 16, page 1, hash every block (us/request)':<66} "
        + " · ".join(f"{w.median_seconds(n) / len(sample) * 1e6:.1f}" for n in ("radix16", "radix1", "chain_keys")),
        f"  {'radix page 16 lookup is faster than hashing every block by':<66} {summary(w.speedups('radix16'))}",
        f"  {'radix page 1 lookup is faster than hashing every block by':<66} {summary(w.speedups('radix1'))}",
    ]
    return lines


# -- part 3: cost per request against the size of a full cache ---------------------------------------
def part_flat(cfg: dict, *, sizes_blocks: tuple[int, int], rounds: int, per_round: int, seed: int) -> list[str]:
    small, large = sizes_blocks
    runs, streams, counts = {}, {}, {}
    for blocks in sizes_blocks:
        for kind, cls in (("incremental", IncrementalRadixCache), ("scan", RadixCache)):
            name = f"{kind}@{blocks}"
            streams[name] = iter_workload(seed, cfg["num_prompts"], cfg["prompt_len"], None, cfg["fresh_tokens"])
            runs[name] = RadixServer(cls(BLOCK), blocks * BLOCK)
            runs[name].fill(streams[name])  # from now on, every request evicts
            # the scan is slow on a large tree: fewer requests per round, compared per request
            counts[name] = per_round if kind == "incremental" or blocks == small else max(10, per_round // 50)
    batches = {name: [list(itertools.islice(streams[name], counts[name])) for _ in range(rounds)] for name in runs}

    def stepper(name: str) -> Callable[[], None]:
        it = iter(batches[name])
        return lambda: runs[name].serve(next(it))

    r = interleaved({name: stepper(name) for name in runs}, baseline=f"incremental@{small}", rounds=rounds,
                    clock="cpu", warmup=False)
    for run in runs.values():
        run.check()
    t = {name: [s / counts[name] for s in r.seconds[name]] for name in runs}
    leaves = {blocks: sum(1 for _ in runs[f"incremental@{blocks}"].cache._leaves()) for blocks in sizes_blocks}
    lines = [
        f"part 3, full caches of {small:,} and {large:,} blocks (every request evicts its shortfall), "
        f"{rounds} interleaved rounds of {per_round:,} requests ({counts[f'scan@{large}']:,} for the scan at "
        f"{large:,}), CPU time:",
        f"  {'cache':<30}{'leaves':>9}{'incremental us/req':>20}{'scan us/req':>14}",
    ]
    for blocks in sizes_blocks:
        lines.append(f"  {f'{blocks:,} blocks':<30}{leaves[blocks]:>9,}"
                     f"{statistics.median(t[f'incremental@{blocks}']) * 1e6:>20.1f}"
                     f"{statistics.median(t[f'scan@{blocks}']) * 1e6:>14.1f}")
    lines += [
        "  per-round ratios (min · median):",
        ratio_line(f"incremental: {large:,} blocks cost {small:,} blocks times", t[f"incremental@{large}"],
                   t[f"incremental@{small}"]),
        ratio_line(f"scan: {large:,} blocks cost {small:,} blocks times", t[f"scan@{large}"], t[f"scan@{small}"]),
        ratio_line(f"at {large:,} blocks the scan costs incremental times", t[f"scan@{large}"],
                   t[f"incremental@{large}"]),
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small workload for a smoke test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args(argv)
    if args.quick:
        cfg, capacity_blocks, sizes, per_round, rounds = QUICK, 1024, (64, 1024), 40, 3
    else:
        cfg, capacity_blocks, sizes, per_round, rounds = FULL, 32_768, (1_000, 100_000), 1_000, args.rounds
    lines = part_cycle(cfg, capacity_blocks=capacity_blocks, rounds=rounds, seed=args.seed)
    lines += part_flat(cfg, sizes_blocks=sizes, rounds=rounds, per_round=per_round, seed=args.seed)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

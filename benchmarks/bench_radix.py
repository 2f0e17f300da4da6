"""Benchmark: stage 5's reference radix tree on the seeded shared-prompt workload (a script, not a test).

Same workload as ``bench_block_pool.py`` (200 distinct 2048-token prompts; 10,000 requests, each one
of those prompts picked at random + 64 fresh random tokens), run through a ``RadixCache`` with page
size 16 (the block pool's block size) and page size 1, with a KV budget of 524,288 token slots
(the block pool's 32,768 blocks x 16), so that eviction runs too. Requests run one after another:

    match_prefix(tokens[:-1])  -> lock the matched path -> take slots for the rest (evicting LRU
    leaves when short) -> insert(tokens, slots) -> free the duplicate / uncached slots -> unlock

(at least one token is always computed, as in the block pool). Prints the hit tokens, requests/s of
each phase, and a ratio against a baseline measured in the same run: hashing every full block of
the prompt with stage 2's sha256 chain (``chain_keys``), the least a hash-based lookup must do.

    python benchmarks/bench_radix.py            # the full workload (about 10 s)
    python benchmarks/bench_radix.py --quick    # a small one (smoke test, < 1 s)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solutions.workload import make_workload  # noqa: E402
from solutions.s02_block_hash import chain_keys  # noqa: E402
from solutions.s05_radix_tree import RadixCache  # noqa: E402

TARGET_CYCLES_PER_S = 4_000
HASH_BLOCK_SIZE = 16


def hash_baseline(requests: list[list[int]]) -> float:
    """Seconds to hash every full block of every request (sha256 chain, block size 16)."""
    t0 = time.perf_counter()
    for tokens in requests:
        chain_keys(tokens, HASH_BLOCK_SIZE)
    return time.perf_counter() - t0


def run_radix(requests: list[list[int]], *, page_size: int, capacity: int) -> dict:
    """Run the request cycle once through a fresh cache; return totals (seconds summed per phase)."""
    clock = time.perf_counter
    cache = RadixCache(page_size)
    free = list(range(capacity))  # the KV slot allocator: a stack of free slot ids
    t_match = t_lock = t_evict = t_insert = t_unlock = 0.0
    hit_tokens = evicted_tokens = peak_tokens = evict_calls = 0
    for tokens in requests:
        t0 = clock()
        match = cache.match_prefix(tokens[:-1])
        t1 = clock()
        cache.inc_lock_ref(match.last_node)
        t2 = clock()
        need = len(tokens) - match.length
        if need > len(free):
            # Evict in batches (at least 1/32 of the budget): each evict call scans the tree for
            # its leaves, so a scheduler pays that scan once per batch, not once per request.
            freed = cache.evict(max(need - len(free), capacity // 32))
            evict_calls += 1
            evicted_tokens += len(freed)
            free.extend(freed)
            if need > len(free):
                raise RuntimeError(f"a request needs {need} slots; only {len(free)} can be freed")
        t3 = clock()
        new_slots = free[len(free) - need:]
        del free[len(free) - need:]
        already = cache.insert(tokens, match.slots + new_slots)
        # Slots the tree did not keep go back to the allocator: ours for tokens that were already
        # cached (positions hit..already), and the partial last page, which is never cached.
        hit = match.length
        kept_end = len(tokens) - len(tokens) % page_size
        free.extend(new_slots[: already - hit])
        free.extend(new_slots[kept_end - hit:])
        t4 = clock()
        cache.dec_lock_ref(match.last_node)
        t5 = clock()
        t_match += t1 - t0
        t_lock += t2 - t1
        t_evict += t3 - t2
        t_insert += t4 - t3
        t_unlock += t5 - t4
        hit_tokens += hit
        peak_tokens = max(peak_tokens, cache.total_size)
    cache.check_invariants()
    if cache.total_size + len(free) != capacity:
        raise AssertionError("slots leaked: tree + free list != capacity")
    num_nodes = sum(1 for _ in cache.nodes())

    # Lookup alone on the warm tree (match_prefix only; it may split nodes and stamps paths).
    t0 = clock()
    warm_hits = 0
    for tokens in requests:
        warm_hits += cache.match_prefix(tokens[:-1]).length
    t_lookup = clock() - t0
    return {
        "hit_tokens": hit_tokens, "warm_hit_tokens": warm_hits, "evicted_tokens": evicted_tokens,
        "evict_calls": evict_calls,
        "peak_tokens": peak_tokens, "nodes": num_nodes,
        "match_s": t_match, "lock_s": t_lock, "evict_s": t_evict, "insert_s": t_insert,
        "unlock_s": t_unlock, "lookup_s": t_lookup,
        "cycle_s": t_match + t_lock + t_evict + t_insert + t_unlock,
    }


def report(requests: list[list[int]], hash_s: float, results: dict[int, dict], *, capacity: int,
           cfg: dict) -> str:
    n = len(requests)
    prompt_tokens = sum(len(t) for t in requests)
    lines = [
        f"workload: {n:,} requests = one of {cfg['num_prompts']} prompts x {cfg['prompt_len']} tokens + "
        f"{cfg['fresh_tokens']} fresh; KV budget {capacity:,} token slots",
        f"baseline: hash every {HASH_BLOCK_SIZE}-token block (sha256 chain): {n / hash_s:,.0f} requests/s "
        f"({hash_s / n * 1e6:.1f} us/request)",
    ]
    for page, r in results.items():
        cycles = n / r["cycle_s"]
        lines += [
            "",
            f"radix tree, page size {page}: hit tokens {r['hit_tokens']:,} of {prompt_tokens:,} "
            f"({r['hit_tokens'] / max(1, prompt_tokens):.1%}); "
            f"evicted {r['evicted_tokens']:,} tokens in {r['evict_calls']:,} calls; "
            f"peak {r['peak_tokens']:,} tokens cached; {r['nodes']:,} nodes at the end",
            f"  {'phase':<40}{'requests/s':>12}{'us/request':>12}",
        ]
        rows = [
            ("match_prefix", r["match_s"]),
            ("inc_lock_ref", r["lock_s"]),
            ("evict (when short of slots)", r["evict_s"]),
            ("insert (+ free duplicate slots)", r["insert_s"]),
            ("dec_lock_ref", r["unlock_s"]),
            ("full cycle (match+lock+evict+insert+unlock)", r["cycle_s"]),
            ("warm lookup (match_prefix alone)", r["lookup_s"]),
        ]
        for name, seconds in rows:
            lines.append(f"  {name:<40}{n / seconds:>12,.0f}{seconds / n * 1e6:>12.1f}")
        lines.append(f"  warm lookup is {hash_s / r['lookup_s']:.1f}x faster than hashing every block; "
                     f"full cycle {hash_s / r['cycle_s']:.1f}x; {cycles:,.0f} cycles/s "
                     f"(aim: >= {TARGET_CYCLES_PER_S:,})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small workload for a smoke test")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.quick:
        cfg = dict(num_prompts=20, prompt_len=256, num_requests=300, fresh_tokens=64)
        capacity = 1024 * 16
    else:
        cfg = dict(num_prompts=200, prompt_len=2048, num_requests=10_000, fresh_tokens=64)
        capacity = 32_768 * 16
    requests = make_workload(seed=args.seed, **cfg)
    hash_s = hash_baseline(requests)
    results = {page: run_radix(requests, page_size=page, capacity=capacity) for page in (16, 1)}
    print(report(requests, hash_s, results, capacity=capacity, cfg=cfg))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

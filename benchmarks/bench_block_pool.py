"""Benchmark: stage 2-3's block hashing and BlockPool on a seeded shared-prompt workload (a script).

Default workload (the issue's): 200 distinct 2048-token prompts; 10,000 requests, each one of those
prompts picked at random + 64 fresh random tokens; block size 16; a 32,768-block pool; requests run
one after another. A request's *full cycle* is what a scheduler does with it: look its prompt up,
admit it, commit its KV after prefill, release it.

Contenders, all measured in the same run (interleaved rounds, CPU time of this process; round ``r``
runs requests ``r*n/R .. (r+1)*n/R`` through every contender, each keeping its own pool):

- the sha256 floor: one digest of a 104-byte input per full block, nothing else;
- hashing alone: ``chain_keys`` (the stage-2 reference: the prompt encoded once, shared frames built
  once) and, as before, ``hash_block`` called once per block;
- the full cycle now: ``keys_of`` + ``lookup``, then ``admit(..., keys=keys)`` (no second hash);
- the full cycle before: the same pool hashing with ``hash_block`` per block, and ``admit``
  hashing the prompt again after the lookup;
- both without the lookup (``admit``, ``commit``, ``release``; admit hashes once): the most
  favourable way to run the old code, so the gain of the faster hash alone.

Every cycle must find the same hit tokens. Each line of ratios is computed per round (this round's
time against the other's in the same round) and printed as its minimum and median.

    python benchmarks/bench_block_pool.py            # the full workload (about 30 s on 2 cores)
    python benchmarks/bench_block_pool.py --quick    # a small one (smoke test, about 1 s)
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.rounds import Rounds, interleaved, summary  # noqa: E402
from solutions.s02_block_hash import ROOT_SEED, chain_keys, hash_block, split_blocks  # noqa: E402
from solutions.s03_block_pool import BlockPool  # noqa: E402
from workbook.workload import make_workload  # noqa: E402

TARGET_CYCLES_PER_S = 4_000
FULL = dict(num_prompts=200, prompt_len=2048, num_requests=10_000, fresh_tokens=64, block_size=16,
            num_blocks=32_768)
QUICK = dict(num_prompts=20, prompt_len=256, num_requests=300, fresh_tokens=64, block_size=16, num_blocks=1024)


def hash_block_chain(tokens: Sequence[int], block_size: int, extra_keys=None, *, root_seed: bytes) -> list[bytes]:
    """The keys as they were computed before: one ``hash_block`` call per full block."""
    keys: list[bytes] = []
    parent = None
    for block in split_blocks(tokens, block_size):
        parent = hash_block(parent, block, extra_keys, root_seed=root_seed)
        keys.append(parent)
    return keys


class PoolBefore(BlockPool):
    """Stage 3's pool hashing as it did before: ``hash_block`` per block (bit-identical keys)."""

    def keys_of(self, tokens, extra_keys=None) -> list[bytes]:
        return hash_block_chain(tokens, self.block_size, extra_keys, root_seed=self.root_seed)


def pool_cycle(pool: BlockPool, requests: Sequence[Sequence[int]], start: int, *, lookup: bool,
               reuse_keys: bool) -> int:
    """Run ``requests`` (ids from ``start``) through ``pool``; return the hit tokens of the admissions.

    ``lookup``: a scheduler looks each prompt up before admitting it; ``reuse_keys``: ``admit``
    takes the keys that lookup computed instead of hashing the prompt again.
    """
    hit_tokens = 0
    for i, tokens in enumerate(requests, start):
        rid = f"r{i}"
        keys = None
        if lookup:
            keys = pool.keys_of(tokens)
            pool.lookup(keys, len(tokens))
        hit_tokens += pool.admit(rid, tokens, keys=keys if reuse_keys else None).hit_tokens
        pool.commit(rid)
        pool.release(rid)
    return hit_tokens


def sha256_floor(requests: Sequence[Sequence[int]], block_size: int) -> None:
    """One sha256 of a 104-byte input (a framed 32-byte parent + a framed 16-token block) per block."""
    data = bytes(8 + 32 + 4 * block_size)
    sha256 = hashlib.sha256
    for tokens in requests:
        for _ in range(len(tokens) // block_size):
            sha256(data).digest()


def hash_all(chain: Callable[..., list[bytes]], requests: Sequence[Sequence[int]], block_size: int) -> None:
    """Hash every full block of every request with ``chain`` (``chain_keys`` or the hash_block loop)."""
    for tokens in requests:
        chain(tokens, block_size, root_seed=ROOT_SEED)


def chunks(requests: list, rounds: int) -> list[tuple[int, list]]:
    """``rounds`` consecutive slices of the workload, with the index of their first request."""
    size = -(-len(requests) // rounds)
    return [(i, requests[i:i + size]) for i in range(0, len(requests), size)]


def chunked(make: Callable[[int, list], int | None], parts: list[tuple[int, list]], totals: dict, name: str):
    """A contender for :func:`interleaved`: each call runs the next slice; results add up in ``totals``."""
    it = iter(parts)

    def run() -> None:
        start, part = next(it)
        totals[name] = totals.get(name, 0) + (make(start, part) or 0)
    return run


def measure(cfg: dict, *, rounds: int, seed: int = 0) -> tuple[Rounds, dict, list]:
    requests = make_workload(seed=seed, num_prompts=cfg["num_prompts"], prompt_len=cfg["prompt_len"],
                             num_requests=cfg["num_requests"], fresh_tokens=cfg["fresh_tokens"])
    bs, nb = cfg["block_size"], cfg["num_blocks"]
    parts = chunks(requests, rounds)
    now, before = BlockPool(nb, bs), PoolBefore(nb, bs)
    now_once, before_once = BlockPool(nb, bs), PoolBefore(nb, bs)
    totals: dict[str, int] = {}
    makers: dict[str, Callable[[int, list], int | None]] = {
        "floor": lambda s, p: sha256_floor(p, bs),
        "chain_keys": lambda s, p: hash_all(chain_keys, p, bs),
        "hash_block": lambda s, p: hash_all(hash_block_chain, p, bs),
        "now": lambda s, p: pool_cycle(now, p, s, lookup=True, reuse_keys=True),
        "before": lambda s, p: pool_cycle(before, p, s, lookup=True, reuse_keys=False),
        "now_admit_only": lambda s, p: pool_cycle(now_once, p, s, lookup=False, reuse_keys=False),
        "before_admit_only": lambda s, p: pool_cycle(before_once, p, s, lookup=False, reuse_keys=False),
    }
    contenders = {name: chunked(make, parts, totals, name) for name, make in makers.items()}
    result = interleaved(contenders, baseline="chain_keys", rounds=len(parts), clock="cpu", warmup=False)
    for pool in (now, before, now_once, before_once):
        pool.check_invariants()
    hits = {name: totals[name] for name in ("now", "before", "now_admit_only", "before_admit_only")}
    if len(set(hits.values())) != 1:
        raise AssertionError(f"the cycles disagree on hit tokens: {hits}")
    # The warm pool, looked up once more with both hashes: the same keys, so the same hits.
    sample = requests[:: max(1, len(requests) // 200)]
    for tokens in sample:
        if now.keys_of(tokens) != before.keys_of(tokens):
            raise AssertionError("chain_keys and the hash_block chain disagree")
    info = {"hit_tokens": hits["now"], "prompt_tokens": sum(len(t) for t in requests), "requests": len(requests),
            "round_sizes": [len(p) for _, p in parts]}
    return result, info, requests


def speedup_line(r: Rounds, label: str, slow: str, fast: str) -> str:
    per_round = [s / f for s, f in zip(r.seconds[slow], r.seconds[fast], strict=True)]
    return f"  {label:<62} {summary(per_round)}"


def report(r: Rounds, info: dict, cfg: dict, *, target: bool = True) -> str:
    n = info["requests"]
    sizes = info["round_sizes"]
    per_req = {name: statistics.median(t / k for t, k in zip(r.seconds[name], sizes, strict=True)) * 1e6 for name in r.seconds}
    lines = [
        f"workload: {n:,} requests = one of {cfg['num_prompts']} prompts x {cfg['prompt_len']} tokens + "
        f"{cfg['fresh_tokens']} fresh; block size {cfg['block_size']}; pool {cfg['num_blocks']:,} blocks",
        f"{len(sizes)} interleaved rounds of about {sizes[0]:,} requests each, CPU time of this process",
        f"hit tokens: {info['hit_tokens']:,} of {info['prompt_tokens']:,} prompt tokens "
        f"({info['hit_tokens'] / max(1, info['prompt_tokens']):.1%}), the same in every full cycle below",
        "",
        f"{'contender':<66}{'us/request':>12}",
    ]
    rows = [
        ("sha256 floor: one digest of 104 bytes per block", "floor"),
        ("hash-only baseline: chain_keys (encode once, shared frames)", "chain_keys"),
        ("hash: hash_block per block (before)", "hash_block"),
        ("full cycle now: lookup, admit(keys=), commit, release", "now"),
        ("full cycle before: lookup, admit hashing again, commit, release", "before"),
        ("cycle now, no lookup: admit, commit, release", "now_admit_only"),
        ("cycle before, no lookup: admit, commit, release", "before_admit_only"),
    ]
    for label, name in rows:
        lines.append(f"  {label:<64}{per_req[name]:>12.1f}")
    lines += [
        "",
        "per-round ratios (min · median):",
        speedup_line(r, "chain_keys is faster than hash_block per block by", "hash_block", "chain_keys"),
        speedup_line(r, "chain_keys costs the sha256 floor times", "chain_keys", "floor"),
        speedup_line(r, "full cycle now is faster than before (lookup + admit) by", "before", "now"),
        speedup_line(r, "without the lookup (admit hashes once), now is faster by", "before_admit_only",
                     "now_admit_only"),
        speedup_line(r, "full cycle now costs the hash-only baseline times", "now", "chain_keys"),
    ]
    cycles = 1e6 / per_req["now"]
    aim = f" (aim for the full workload: >= {TARGET_CYCLES_PER_S:,} on a 2-core machine)" if target else ""
    lines.append(f"full cycle now: {cycles:,.0f} cycles/s{aim}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small workload for a smoke test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (slices of the workload)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    result, info, _ = measure(cfg, rounds=3 if args.quick else args.rounds, seed=args.seed)
    print(report(result, info, cfg, target=not args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

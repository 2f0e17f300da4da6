"""Stage 9: what routing one request costs as the fleet's cache grows. The reference ``KVIndex`` holds
10k, 100k and 1M blocks; each routes the same requests (``overlap_scores`` over 8 replicas, then
``choose_replica``), and the cost per request is compared with the 10k index's in the same round.

    python benchmarks/bench_kv_index.py            # 10 passes over the requests a round, 7 rounds
    python benchmarks/bench_kv_index.py --quick    # 2 passes, 3 rounds (smoke test)

The routed requests are the conversation trace's first 300 (7,814 distinct blocks: they fit in the
smallest index). The index holds the routed requests' own blocks (request ``i``'s on replica ``i mod 8``, so every
lookup finds what a busy fleet would hold) and, to reach its size, blocks that no request asks for,
each on a seeded random replica, half of them on the host tier: the index is a dict per block, so a
request should cost the same (a lookup per block it names, for each replica still matching) whatever
else the index holds. Times are CPU seconds of this process, interleaved rounds
(``benchmarks/rounds.py``), ratios per round.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.rounds import interleaved, summary  # noqa: E402
from solutions.s09_fleet_routing import KVIndex, choose_replica, overlap_scores  # noqa: E402
from workbook.fleet import FLEET_COST, GPU, HOST, STORED, KVEvent, Request, load_requests  # noqa: E402

SIZES = (10_000, 100_000, 1_000_000)
ROUTED = 300
REPLICAS = 8


def build_index(requests: Sequence[Request], size: int, seed: int = 0) -> KVIndex:
    """An index of ``size`` blocks: the requests' blocks first, then blocks nobody asks for."""
    index = KVIndex()
    seq = [0] * REPLICAS

    def store(block: int, replica: int, tier: str) -> None:
        index.apply(KVEvent(STORED, replica, tier, block, seq[replica]))
        seq[replica] += 1

    for r in requests:
        for b in r.blocks:
            store(b, r.index % REPLICAS, GPU)
    rng = random.Random(seed)
    filler = max((b for r in requests for b in r.blocks), default=0) + 1
    while len(index) < size:
        store(filler, rng.randrange(REPLICAS), GPU if rng.random() < 0.5 else HOST)
        filler += 1
    return index


def route_all(index: KVIndex, requests: Sequence[Request], passes: int) -> int:
    """Route every request against ``index`` (no queues), ``passes`` times; a checksum of the choices."""
    queue = [0.0] * REPLICAS
    total = 0
    for _ in range(passes):
        for r in requests:
            total += choose_replica(overlap_scores(index, r.blocks, REPLICAS), queue, r, FLEET_COST)
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 passes a round, 3 rounds")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 7; --quick: 3)")
    args = ap.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    passes = 2 if args.quick else 10
    requests = load_requests("conversation", limit=ROUTED)
    blocks = sum(len(r.blocks) for r in requests)
    if len({b for r in requests for b in r.blocks}) > SIZES[0]:
        raise AssertionError(f"the routed requests alone hold more than {SIZES[0]} blocks")
    t_start = time.perf_counter()
    indexes = {}
    for size in SIZES:
        built = time.process_time()
        indexes[size] = build_index(requests, size)
        print(f"index of {len(indexes[size]):>9,} blocks built in {time.process_time() - built:.1f} CPU-s")
    names = {size: f"{size:,}" for size in SIZES}
    runs = {names[s]: (lambda s=s: route_all(indexes[s], requests, passes)) for s in SIZES}
    r = interleaved(runs, baseline=names[SIZES[0]], rounds=rounds, clock="cpu")
    if len({r.results[n] for n in runs}) != 1:
        raise AssertionError("the routes differ between index sizes: the filler blocks changed a choice")
    print(f"routing {len(requests)} conversation requests ({blocks} blocks named) over {REPLICAS} replicas, "
          f"{passes} passes a round, {rounds} interleaved rounds, CPU time")
    print(f"{'blocks indexed':>14} {'µs per request':>15}  time / the {names[SIZES[0]]}-block index's (per round)")
    for size in SIZES:
        per_request = statistics.median(r.seconds[names[size]]) / (len(requests) * passes) * 1e6
        print(f"{names[size]:>14} {per_request:>15.1f}  {summary(r.ratios(names[size]))}")
    worst = max(statistics.median(r.ratios(names[s])) for s in SIZES[1:])
    print(f"largest median ratio to the {names[SIZES[0]]}-block index: {worst:.2f} "
          f"({'flat: the cost does not grow with the index' if worst < 1.5 else 'NOT flat: the cost grows with the index'})")
    print(f"total {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Per-operation cost of stage 4's LRU free queue against list/deque baselines, in one run.

    python benchmarks/bench_free_queue.py [--quick]

For each pool size (1k and 100k free blocks) it times, per operation:
- ``append + popleft``: free a block, hand out the least recent one (the common path);
- ``remove(middle) + append``: a cache hit on a free block in the middle of the queue, then its
  release (the path a plain list or deque makes O(n)).
Baselines: ``collections.deque`` (append/popleft O(1), ``remove`` O(n)) and ``list``
(``pop(0)`` and ``remove`` O(n)). Ratios are baseline / linked list: > 1 means the linked list is
faster. The point to see: the linked list's cost does not grow with the pool size.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solutions.s03_block_pool import Block  # noqa: E402
from solutions.s04_eviction import LRUFreeQueue  # noqa: E402


def _blocks(n: int) -> list[Block]:
    return [Block(i, key=i.to_bytes(8, "little")) for i in range(n)]


def _time_per_op(fn, ops: int, repeat: int = 3) -> float:
    """Best of ``repeat`` runs of ``fn(ops)``, in nanoseconds per operation."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(ops)
        best = min(best, time.perf_counter() - t0)
    return best / ops * 1e9


def bench_size(n: int, ops: int, remove_ops: int, seed: int = 0) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    results: dict[str, dict[str, float]] = {}

    # -- linked list ---------------------------------------------------------------------------
    blocks = _blocks(n)
    q = LRUFreeQueue()
    for b in blocks:
        q.append(b)
    middle = [blocks[rng.randrange(n // 4, 3 * n // 4)] for _ in range(remove_ops)]

    def ll_cycle(k: int) -> None:
        pop, app = q.popleft, q.append
        for _ in range(k):
            app(pop())

    def ll_remove(k: int) -> None:
        rem, app = q.remove, q.append
        for b in middle[:k]:
            rem(b)
            app(b)

    results["linked list"] = {"append+popleft": _time_per_op(ll_cycle, ops),
                              "remove(middle)+append": _time_per_op(ll_remove, remove_ops)}

    # -- deque baseline ------------------------------------------------------------------------
    d = deque(_blocks(n))
    dmiddle = [d[rng.randrange(n // 4, 3 * n // 4)] for _ in range(remove_ops)]

    def dq_cycle(k: int) -> None:
        pop, app = d.popleft, d.append
        for _ in range(k):
            app(pop())

    def dq_remove(k: int) -> None:
        rem, app = d.remove, d.append
        for b in dmiddle[:k]:
            rem(b)
            app(b)

    results["deque"] = {"append+popleft": _time_per_op(dq_cycle, ops),
                        "remove(middle)+append": _time_per_op(dq_remove, max(20, min(remove_ops, remove_ops * 1_000 // n)))}

    # -- list baseline ---------------------------------------------------------------------------
    lst = _blocks(n)
    lmiddle = [lst[rng.randrange(n // 4, 3 * n // 4)] for _ in range(remove_ops)]

    def ls_cycle(k: int) -> None:
        pop, app = lst.pop, lst.append
        for _ in range(k):
            app(pop(0))

    def ls_remove(k: int) -> None:
        rem, app = lst.remove, lst.append
        for b in lmiddle[:k]:
            rem(b)
            app(b)

    # O(n) operations: fewer of them at large n (the cost per operation is what is compared)
    slow_ops = max(100, min(ops, ops * 1_000 // n))
    slow_removes = max(20, min(remove_ops, remove_ops * 1_000 // n))
    results["list"] = {"append+popleft": _time_per_op(ls_cycle, slow_ops),
                       "remove(middle)+append": _time_per_op(ls_remove, slow_removes)}
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer operations (smoke test)")
    args = ap.parse_args(argv)
    ops, remove_ops = (2_000, 100) if args.quick else (200_000, 5_000)
    print(f"free queue benchmark ({'quick' if args.quick else 'full'}): ns per operation, best of 3")
    print(f"{'pool size':>9}  {'operation':<22} {'linked list':>12} {'deque':>12} {'list':>12} "
          f"{'deque/LL':>9} {'list/LL':>9}")
    for n in (1_000, 100_000):
        res = bench_size(n, ops, remove_ops)
        for op in ("append+popleft", "remove(middle)+append"):
            ll, dq, ls = (res[k][op] for k in ("linked list", "deque", "list"))
            print(f"{n:>9}  {op:<22} {ll:>12.0f} {dq:>12.0f} {ls:>12.0f} {dq / ll:>9.2f} {ls / ll:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

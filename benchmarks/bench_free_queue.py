"""Per-operation cost of stage 4's LRU free queue against stage 3's and the builtins', in one run.

    python benchmarks/bench_free_queue.py [--quick] [--rounds R]

For each pool size (1k and 100k free blocks) it times, per operation:
- ``append + popleft``: free a block, hand out the least recent one (the common path);
- ``remove(middle) + append``: a cache hit on a free block in the middle of the queue, then its
  release (the path a plain list or deque makes O(n)).
Contenders: stage 4's ``LRUFreeQueue`` (a doubly linked list through the blocks' own slots, the
baseline), stage 3's ``SimpleFreeQueue`` (an ``OrderedDict``: O(1) too, its linked list written in
C), ``collections.deque`` (``remove`` O(n)) and ``list`` (``pop(0)`` and ``remove`` O(n)). Rounds are
interleaved, timed in CPU time; each ratio (contender / linked list, per operation: > 1 means the
linked list is faster) is computed per round and printed as its minimum and median.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.rounds import interleaved, summary  # noqa: E402
from solutions.s03_block_pool import Block, SimpleFreeQueue  # noqa: E402
from solutions.s04_eviction import LRUFreeQueue  # noqa: E402

NAMES = ("linked list", "ordered dict", "deque", "list")
OPS = ("append+popleft", "remove(middle)+append")


def _blocks(n: int) -> list[Block]:
    return [Block(i, key=i.to_bytes(8, "little")) for i in range(n)]


def contenders(n: int, op: str, ops: int, seed: int = 0) -> tuple[dict[str, Callable[[], None]], dict[str, int]]:
    """One callable per contender doing ``count[name]`` operations ``op`` on a queue of ``n`` blocks.

    O(n) operations run fewer times at large ``n``: the cost *per operation* is what is compared.
    """
    rng = random.Random(seed)
    slow = max(20, min(ops, ops * 200 // n))
    count = {"linked list": ops, "ordered dict": ops, "deque": ops if op == "append+popleft" else slow,
             "list": slow}
    queues: dict[str, object] = {}
    for name in NAMES:
        blocks = _blocks(n)
        if name in ("linked list", "ordered dict"):
            q = LRUFreeQueue() if name == "linked list" else SimpleFreeQueue()
            for b in blocks:
                q.append(b)
        else:
            q = deque(blocks) if name == "deque" else list(blocks)
        queues[name] = (q, [blocks[rng.randrange(n // 4, 3 * n // 4)] for _ in range(count[name])])

    def make(name: str) -> Callable[[], None]:
        q, middle = queues[name]
        k = count[name]
        if op == "remove(middle)+append":
            def move() -> None:
                rem, app = q.remove, q.append
                for b in middle:
                    rem(b)
                    app(b)
            return move
        if name == "list":
            def cycle_list() -> None:
                pop, app = q.pop, q.append
                for _ in range(k):
                    app(pop(0))
            return cycle_list

        def cycle() -> None:
            pop, app = q.popleft, q.append
            for _ in range(k):
                app(pop())
        return cycle

    return {name: make(name) for name in NAMES}, count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer operations (smoke test)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = ap.parse_args(argv)
    ops, rounds = (2_000, 3) if args.quick else (50_000, args.rounds)
    print(f"free queue benchmark ({'quick' if args.quick else 'full'}): ns per operation (median of {rounds} "
          "interleaved rounds, CPU time); ratios per round, contender / linked list (> 1: the linked list is faster)")
    print(f"{'pool size':>9}  {'operation':<22}" + "".join(f"{n:>13}" for n in NAMES)
          + "".join(f"  {n + ' / LL':<29}" for n in NAMES[1:]))
    faster: dict[str, list[str]] = {name: [] for name in NAMES[1:]}  # where a contender beats the linked list
    for n in (1_000, 100_000):
        for op in OPS:
            fns, count = contenders(n, op, ops)
            r = interleaved(fns, baseline="linked list", rounds=rounds, clock="cpu")
            per_op = {name: [t / count[name] * 1e9 for t in r.seconds[name]] for name in NAMES}
            ratios = {name: [a / b for a, b in zip(per_op[name], per_op["linked list"], strict=True)] for name in NAMES[1:]}
            print(f"{n:>9}  {op:<22}" + "".join(f"{statistics.median(per_op[name]):>13.0f}" for name in NAMES)
                  + "".join(f"  {summary(ratios[name]):<29}" for name in NAMES[1:]))
            for name in NAMES[1:]:
                if statistics.median(ratios[name]) < 1:
                    faster[name].append(f"{op} at {n:,}")
    print()
    for name, where in faster.items():
        if where:
            print(f"the linked list is slower than {name} at: " + "; ".join(where))
    print("Why: deque and list are written in C (list: one array; deque: linked chunks of 64 items), so\n"
          "appending and popping at the ends costs a few machine instructions (list.pop(0) moves every\n"
          "element, cheap only while the list is small), but their remove walks the queue: O(n), see the\n"
          "ratios at 100k blocks. The OrderedDict is O(1) for all three like the linked list,\n"
          "and does its linking in C where the linked list runs bytecode. Engines still use the intrusive\n"
          "list (vLLM's free block queue is one): the links live in the blocks themselves, so there is no\n"
          "second index to hash into or keep consistent and no object is allocated per operation, and it can\n"
          "do what an ordered set cannot, such as stage 4's middle sentinel that keeps keyless blocks ahead of\n"
          "cached ones in one queue.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

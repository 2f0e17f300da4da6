"""What kernel isolation costs per graded TODO: the same stage-1 class graded at every level this
machine offers, against the in-process level (no kernel layer: the audit hook only).

Each level grades the same submissions with the real grader (one child per TODO, two workers), in
interleaved rounds on the wall clock (the work runs in child processes). The table gives the median
milliseconds per TODO and, per round, the extra milliseconds per TODO over in-process.

    python benchmarks/bench_grading_isolation.py            # 5 rounds, 6 submissions (30 TODOs)
    python benchmarks/bench_grading_isolation.py --quick    # 2 rounds, 2 submissions (smoke test)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from autograder.grading.grade import grade_paths  # noqa: E402
from autograder.isolation import levels as isolation  # noqa: E402
from benchmarks.rounds import interleaved  # noqa: E402
from tests.support.variants import variant_notebook  # noqa: E402

STATS = "reuse_ratio = round(hit_tokens / len(prompt), 4) if prompt else 0.0"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=6, help="submissions per round")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds, n = (2, 2) if args.quick else (args.rounds, args.n)
    with tempfile.TemporaryDirectory(prefix="pcw-bench-iso-grading-") as tmp:
        paths = []
        for i in range(n):
            edits = [] if i % 2 == 0 else [(STATS, "reuse_ratio = hit_tokens / len(prompt) if prompt else 0.0")]
            paths.append(Path(tmp, f"s{i:02d}.ipynb"))
            nbformat.write(variant_notebook("s01", edits), paths[-1])
        levels = {"in-process": isolation.select("in-process")}
        for want in ("no-namespaces", "best"):
            iso = isolation.select(want)
            levels.setdefault(iso.level, iso)
        todos = n * 5
        scores: dict[str, list[float]] = {}

        def grading(iso: isolation.Isolation):
            def run() -> None:
                scores[iso.level] = [r.score for r in grade_paths(paths, workers=2, iso=iso)]
            return run

        r = interleaved({name: grading(iso) for name, iso in levels.items()}, baseline="in-process", rounds=rounds,
                        clock="wall")
    print(f"isolation offered here: {isolation.select('best').describe()}")
    print(f"{rounds} interleaved rounds of {n} stage-1 submissions ({todos} TODOs, one child each, 2 workers)")
    print(f"{'level':30} {'ms per TODO':>12} {'extra ms per TODO (median of rounds)':>38}")
    for name in levels:
        per = [s / todos * 1000 for s in r.seconds[name]]
        extra = [(s - b) / todos * 1000 for s, b in zip(r.seconds[name], r.seconds["in-process"], strict=True)]
        print(f"{name:30} {statistics.median(per):12.1f} {statistics.median(extra):+30.1f} ms  "
              f"(x{statistics.median(r.ratios(name)):.2f})")
    same = len({tuple(v) for v in scores.values()}) == 1
    print(f"same scores at every level: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

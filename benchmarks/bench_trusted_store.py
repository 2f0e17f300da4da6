"""What the store of trusted material saves a grading process: per stage, the CPU-seconds a fresh
process spends getting the stage's expected outcomes and leak guard (importing what that needs
included) with no store, with an empty one (it computes and writes) and with a warm one (it reads),
and the ratio of no store to warm. Each measurement is a new interpreter, as every CLI run, test
worker and nbgrader run is; the store is a temporary folder, removed at the end.

    python benchmarks/bench_trusted_store.py                 # every built stage
    python benchmarks/bench_trusted_store.py --stages s06 -r 3
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.core import layout  # noqa: E402

_ONE_PROCESS = """
import sys
from autograder.core.spec import load_stage
from autograder.grading.trusted import expected_outcomes, leak_guard
stage = load_stage(sys.argv[1])
expected_outcomes(stage), leak_guard(stage)
print("torch" in sys.modules)
"""


def cpu_of(sid: str, store: str) -> tuple[float, bool]:
    """CPU-seconds (user + system) of one fresh process, and whether it imported torch."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, "-c", _ONE_PROCESS, sid], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PCW_CACHE_DIR": store}, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, p.stdout.strip() == "True"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", nargs="*", default=None, help="stage ids (default: every built stage)")
    ap.add_argument("-r", "--repeat", type=int, default=1, help="measurements of each kind (the median is shown)")
    args = ap.parse_args()
    print(f"{'stage':6} {'no store':>9} {'cold':>9} {'warm':>9} {'no store / warm':>16}  torch imported (no store, warm)")
    for sid in args.stages or layout.built_stages():
        off, cold, warm, torch = [], [], [], []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="pcw-bench-store-") as tmp:
                store = os.path.join(tmp, "store")
                off.append(cpu_of(sid, "off"))
                cold.append(cpu_of(sid, store))
                warm.append(cpu_of(sid, store))
                torch = [off[-1][1], warm[-1][1]]
        o, c, w = (statistics.median(t for t, _ in xs) for xs in (off, cold, warm))
        print(f"{sid:6} {o:8.2f}s {c:8.2f}s {w:8.2f}s {o / w:15.1f}x  {torch[0]}, {torch[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

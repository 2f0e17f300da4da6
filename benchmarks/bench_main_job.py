"""The README's main job, timed: ``python -m autograder grade notebooks/ solutions/*.ipynb solutions/zh/*.ipynb`` (every learner and
instructor notebook, one confined child per TODO), first with an empty store of trusted material (as
on a fresh machine: the grader computes each stage's material while the children run), then again
with the store that run left (as every later run finds it).

Each run is a new grader process under ``benchmarks/reap.py``, so its CPU time counts the whole
process tree, grading children included; the store is a temporary folder, removed at the end. The
output is checked as the main job's is: every instructor notebook at full marks, every learner one
at zero.

    python benchmarks/bench_main_job.py            # all notebooks, both editions
    python benchmarks/bench_main_job.py --quick    # stage 1's four notebooks (smoke test)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def targets(quick: bool) -> list[str]:
    """What the main job grades: the learner notebooks and the instructor notebooks of both editions (as
    the README's shell globs expand them; the presenter copies are not graded), or stage 1's of each."""
    first = "01_*.ipynb" if quick else "*.ipynb"
    return sorted(str(p.relative_to(ROOT)) for folder in ("notebooks", "notebooks/zh", "solutions", "solutions/zh")
                  for p in (ROOT / folder).glob(first))


def run(paths: list[str], store: str) -> tuple[float, float, dict]:
    """Wall seconds, CPU-seconds of the whole tree and the JSON report of one grading run."""
    env = dict(os.environ, PCW_CACHE_DIR=store)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "reap.py"), sys.executable, "-m", "autograder",
                        "grade", *paths, "--format", "json", "--no-progress"],
                       cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(p.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="stage 1's notebooks only")
    args = ap.parse_args(argv)
    paths = targets(args.quick)
    print(f"grading: {' '.join(paths)}   cores: {len(os.sched_getaffinity(0))}")
    print(f"{'store':8} {'wall s':>8} {'CPU-s':>8} {'notebooks':>10} {'TODOs':>6}  verdicts as expected")
    with tempfile.TemporaryDirectory(prefix="pcw-bench-main-") as tmp:
        for label in ("empty", "warm"):
            wall, cpu, report = run(paths, os.path.join(tmp, "store"))
            subs = report["submissions"]
            todos = sum(len(s["todos"]) for s in subs)
            right = all((s["score"] == s["max_score"] > 0) if "/solutions/" in f"/{s['path']}" else s["score"] == 0
                        for s in subs)
            print(f"{label:8} {wall:8.1f} {cpu:8.1f} {len(subs):10d} {todos:6d}  {'yes' if right else 'NO'}")
            if not right:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What kernel isolation costs per grading child: each level vs a plain launch of the same interpreter.

Every contender launches the same child (``python -I``, a staged module that imports json and
ctypes, as every grading child does, and whose entry does nothing)
and waits for it to exit, ``--children`` times per round: the baseline with plain ``subprocess``
(no confinement), the others through :func:`autograder.isolation.levels.plan_child` at each level this
machine offers (planning included, as the supervisor would pay it per child). Rounds are
interleaved (benchmarks/rounds.py) on the wall clock; the table gives milliseconds per child and
the overhead over the baseline of the same round.

    python benchmarks/bench_isolation.py            # 7 rounds of 10 children
    python benchmarks/bench_isolation.py --quick    # 2 rounds of 2 children (smoke test)
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.core import layout  # noqa: E402
from autograder.isolation import levels as isolation  # noqa: E402
from benchmarks.rounds import interleaved  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--children", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds, children = (2, 2) if args.quick else (args.rounds, args.children)

    base = tempfile.mkdtemp(prefix="pcw-bench-iso-")
    os.chmod(base, 0o755)
    try:
        entry = Path(base, "bench_entry.py")
        # what every grading child imports anyway (sandbox.py: json, and ctypes before its audit hook),
        # so the difference is what isolation adds, not imports the real child would pay regardless
        entry.write_text("import ctypes, json\n\ndef main():\n    pass\n")
        staging = isolation.stage_tree(Path(base) / "staging", {**isolation.confinement_files(), "bench_entry.py": entry})
        env = {"PATH": "/usr/bin:/bin"}
        plain_argv = [sys.executable, "-I", "-c",
                      f"import sys; sys.path[0:0] = [{str(staging)!r}]; import bench_entry; bench_entry.main()"]

        def plain() -> None:
            scratch = tempfile.mkdtemp(dir=base)
            for _ in range(children):
                subprocess.run(plain_argv, env=env, cwd=scratch, start_new_session=True, check=True)

        def confined(iso: isolation.Isolation):
            def run() -> None:
                scratch = isolation.make_scratch(iso, base)
                for _ in range(children):
                    plan = isolation.plan_child(isolation.ChildSpec(
                        sys.executable, "bench_entry:main", str(staging), scratch, env=env, hidden=[str(layout.SOLUTIONS)]), iso)
                    subprocess.run(**plan.popen_kwargs(), check=True)
            return run

        offer = isolation.detect()
        levels = {"plain subprocess": plain}
        wanted = [offer.layers, tuple(x for x in offer.layers if x != "namespaces"), ("namespaces",)]
        for layers in dict.fromkeys(w for w in wanted if w and set(w) <= set(offer.layers)):
            if layers == tuple(x for x in offer.layers if x != "namespaces"):
                iso = isolation.select("no-namespaces")
            else:
                iso = isolation.select(layers)
            levels[iso.level] = confined(iso)
        print(f"isolation offered here: {isolation.select('best').describe()}")
        for layer, why in offer.problems.items():
            print(f"  missing {layer}: {why}")
        r = interleaved(levels, baseline="plain subprocess", rounds=rounds, clock="wall")
        print(f"\n{rounds} interleaved rounds of {children} children each (wall clock, ms per child)")
        print(f"{'level':32} {'median':>8} {'min':>8} {'overhead (median of rounds)':>30}")
        for name in levels:
            per = [s / children * 1000 for s in r.seconds[name]]
            extra = [(s - b) / children * 1000 for s, b in zip(r.seconds[name], r.seconds["plain subprocess"], strict=True)]
            ratio = statistics.median(r.ratios(name))
            print(f"{name:32} {statistics.median(per):8.1f} {min(per):8.1f} "
                  f"{statistics.median(extra):+9.1f} ms  (x{ratio:.2f})")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Stage 9 beside a production router: SGLang's router (``sglang-router``, cache-aware policy) routes the
Mooncake conversation trace in front of mock engine workers on loopback, and the replica it chose for
each request is scored in the stage's fleet simulator next to the stage's reference router and the
baselines, in one run.

    python benchmarks/bench_router.py            # the whole trace at 2, 4 and 8 replicas, the real router 3 times each
    python benchmarks/bench_router.py --quick    # its first 600 requests at 4 replicas, twice (smoke test)

How. Each block hash id of the trace becomes a fixed pseudo-random string, so prompts that share
leading blocks share leading text (``benchmarks/router/text.py``): over HTTP the router matches raw
text against a tree per worker of what it sent there. Requests are sent at their arrival times, scaled
so that the trace replays in ``--wall-s`` seconds; each mock worker is one of the stage's replicas
(``benchmarks/router/fleet_engine.py``: its GPU cache, its host tier, the stage's cost model) serving
one prefill at a time for the simulated time it takes, scaled the same way, so the router's in-flight
counts (its load signal) move as an engine's would. The fleet is the stage notebook's (1000 GPU and
8000 host blocks per replica). The workers record which request
reached them; that assignment is then evaluated by ``workbook.fleet.replay_assignment``, the same
simulator (simulated time, the stage's fixed calibration) that scores the stage's own routers, so every
row of the table is measured with the same ruler and the machine's load changes none of them.

Only the assignment comes from wall-clock time: on a busy machine the router may see other arrival
gaps and loads than the trace has (the largest send delay is printed), and its choices vary from run
to run, so it runs several times and the verdict takes its median run. The router runs with its
published defaults (``--cache-threshold 0.3``, balancing past 64 requests and 1.5 times apart).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.router import sglang  # noqa: E402
from benchmarks.router.fleet_engine import ReplicaEngine  # noqa: E402
from benchmarks.router.real import RealRun, rid, route_trace  # noqa: E402
from benchmarks.router.text import TraceText  # noqa: E402
from solutions.s09_fleet_routing import Affinity, ApproximateRouter, PrefixRouter  # noqa: E402
from workbook.fleet import FleetRun, LeastLoaded, Replica, Request, RoundRobin, load_requests, replay_assignment, simulate  # noqa: E402

REAL = "sglang cache_aware"
REFERENCE = PrefixRouter.name
#: The stage's routers, in the order of the table: the reference (precise index fed by KV events), pure
#: affinity, the approximate index (the router's own record of what it sent, like SGLang's tree), and
#: the two that ignore caches.
STAGE_POLICIES = (PrefixRouter.name, Affinity.name, ApproximateRouter.name, LeastLoaded.name, RoundRobin.name)


def stage_runs(requests: Sequence[Request], replicas: int, fleet: dict[str, int]) -> list[FleetRun]:
    """The stage's reference router and the baselines on the same trace and fleet."""
    policies = [PrefixRouter(), Affinity(), ApproximateRouter(capacity=fleet["gpu_blocks"]), LeastLoaded(), RoundRobin()]
    assert tuple(p.name for p in policies) == STAGE_POLICIES
    return [simulate(requests, p, replicas, **fleet) for p in policies]


def table(runs: Sequence[FleetRun]) -> list[str]:
    head = f"{'replicas':>8}  {'router':<22} {'hit rate':>8} {'TTFT p50 ms':>11} {'TTFT p90 ms':>11} {'balance':>7}  requests per replica"
    rows = [head]
    for run in runs:
        per = [0] * run.replicas
        for r in run.assignment:
            per[r] += 1
        rows.append(f"{run.replicas:>8}  {run.policy:<22} {run.hit_rate:>8.1%} {run.ttft(50):>11.0f} {run.ttft(90):>11.0f} "
                    f"{run.balance:>7.2f}  {' '.join(str(c) for c in per)}")
    return rows


def _than(a: float, b: float, smaller: str, larger: str, same: str, rel: float = 0.02) -> str:
    """Words for ``a`` against ``b``: within ``rel`` of each other they are the same."""
    if abs(a - b) <= rel * max(abs(a), abs(b), 1e-12):
        return same
    return smaller if a < b else larger


def median_run(reals: Sequence[FleetRun]) -> FleetRun:
    """The real router's run with the median TTFT p90 (the lower middle one of an even count)."""
    return sorted(reals, key=lambda r: r.ttft(90))[(len(reals) - 1) // 2]


def verdict(reals: Sequence[FleetRun], runs: Sequence[FleetRun]) -> str:
    """What the comparison at one fleet size shows, from the runs themselves (whichever way it falls):
    the real router's median run against the reference, and the spread over its repeats."""
    real = median_run(reals)
    ref = next(r for r in runs if r.policy == REFERENCE)
    ranked = sorted([real, *runs], key=lambda r: (r.ttft(90), r.policy))
    place = ranked.index(real) + 1
    hit = _than(real.hit_rate, ref.hit_rate, "less", "more", "as much")
    p90 = _than(real.ttft(90), ref.ttft(90), "lower", "higher", "about the same")
    bal = _than(real.balance, ref.balance, "more even", "less even", "about as even")
    ratio = real.ttft(90) / ref.ttft(90) if ref.ttft(90) else float("nan")
    # its tree of routed text is an approximate index too: which of the stage's indexes does it reuse like?
    aff = next(r for r in runs if r.policy == Affinity.name)
    approx = next(r for r in runs if r.policy == ApproximateRouter.name)
    like = (f" Its hit rate is {_than(real.hit_rate, aff.hit_rate, 'below', 'above', 'close to')} pure affinity's "
            f"({aff.hit_rate:.1%}, the precise index, blind to queues) and "
            f"{_than(real.hit_rate, approx.hit_rate, 'below', 'above', 'close to')} the stage's approximate index's "
            f"({approx.hit_rate:.1%}, the router's own record of what it sent, a GPU's worth of blocks per replica).")
    spread = ""
    if len(reals) > 1:
        p90s = sorted(r.ttft(90) for r in reals)
        worse = sum(1 for r in reals if r.ttft(90) > ref.ttft(90))
        spread = (f" Over its {len(reals)} runs (its choices vary from run to run) its TTFT p90 spans "
                  f"{p90s[0]:.0f}-{p90s[-1]:.0f} ms, hit rate {min(r.hit_rate for r in reals):.1%}-"
                  f"{max(r.hit_rate for r in reals):.1%}; {worse} of {len(reals)} runs have a higher p90 than the reference.")
    why = ""
    if hit != "less" and p90 == "higher":
        why = (" It reuses as much or more yet waits longer: it sends a request where its text matched most (or to the "
               "worker with the smallest tree) and weighs load only once workers are 64 requests and 1.5 times apart, "
               "while the reference router weighs each replica's queue against the prefill it would save.")
    elif p90 == "lower":
        why = " Here the production router does better than the stage's reference on the tail."
    return (f"At {real.replicas} replicas SGLang's router (median run) reuses {hit} prompt KV than the reference router "
            f"({real.hit_rate:.1%} vs {ref.hit_rate:.1%}), with a {p90} TTFT p90 ({real.ttft(90):.0f} vs {ref.ttft(90):.0f} ms, "
            f"x{ratio:.2f}) and {bal} load (balance {real.balance:.2f} vs {ref.balance:.2f}); by TTFT p90 it ranks "
            f"{place} of {len(ranked)} (best: {ranked[0].policy}).{like}{spread}{why}")


def real_run_line(run: RealRun, k: int) -> str:
    state = ("every request served once by a live worker" if run.complete else
             f"INCOMPLETE: {sum(1 for a in run.assignment if a < 0)} unserved, {len(run.failed)} failed, "
             f"{run.duplicates} served twice, {run.wrong_text} with altered text")
    extra = f"; the router asked for paths no worker knows: {', '.join(run.unknown)}" if run.unknown else ""
    return (f"  {REAL} #{k} at {run.replicas} replicas: replay {run.wall_s:.1f} s (time scale {run.time_scale:.4f}), {state}, "
            f"largest send delay {run.late_s:.2f} s{extra}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the trace's first 600 requests at 4 replicas")
    ap.add_argument("--replicas", type=int, nargs="+", help="fleet sizes (default 2 4 8; --quick: 4)")
    ap.add_argument("--limit", type=int, help="the trace's first N requests (default: all; --quick: 600)")
    ap.add_argument("--gpu-blocks", type=int, default=1000, help="KV blocks of 512 tokens each replica's GPU holds (the stage's fleet)")
    ap.add_argument("--host-blocks", type=int, default=8000, help="blocks of each replica's host tier (the stage's fleet; 0: none)")
    ap.add_argument("--wall-s", type=float, help="seconds the replay of the trace should take (default 30; --quick: 8)")
    ap.add_argument("--chars-per-block", type=int, default=512, help="characters of text per 512-token block")
    ap.add_argument("--seed", type=int, default=0, help="seed of the block texts")
    ap.add_argument("--repeats", type=int, help="runs of the real router per fleet size (default 3; --quick: 2)")
    args = ap.parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 3)
    replicas = args.replicas or ([4] if args.quick else [2, 4, 8])
    limit = args.limit or (600 if args.quick else None)
    wall_s = args.wall_s or (8.0 if args.quick else 30.0)
    ok, version = sglang.available()
    if not ok:
        print(f"skipped: {version}")
        return 0
    requests = load_requests("conversation", limit=limit)
    span_ms = requests[-1].arrival_ms - requests[0].arrival_ms
    scale = wall_s * 1000.0 / span_ms if span_ms > 0 else 1.0
    print(f"SGLang's router {version} (policy cache_aware, published defaults) and stage 9's routers on the Mooncake "
          f"conversation trace: {len(requests)} requests over {span_ms / 1000:.0f} s; each replica holds {args.gpu_blocks} "
          f"blocks of 512 tokens on its GPU and {args.host_blocks or 'no'} in a host tier behind it.")
    print(f"The router sees the trace as text ({args.chars_per_block} characters per block) replayed {1 / scale:.0f}x faster "
          "than recorded; where it sent each request is then scored by the stage's simulator, like every other row.")
    t_start = time.perf_counter()
    fleet = {"gpu_blocks": args.gpu_blocks, "host_blocks": args.host_blocks}
    by_rid = {rid(r): r for r in requests}
    all_runs: list[FleetRun] = []
    notes, verdicts = [], []
    complete = True
    for n in replicas:
        reals = []
        for k in range(1, repeats + 1):
            engines = [ReplicaEngine(Replica(r, **fleet), by_rid) for r in range(n)]
            real = route_trace(requests, engines, time_scale=scale, router_version=version,
                               text=TraceText(seed=args.seed, chars_per_block=args.chars_per_block))
            notes.append(real_run_line(real, k))
            complete &= real.complete
            if real.complete:
                reals.append(replay_assignment(requests, real.assignment, n, name=f"{REAL} #{k}", **fleet))
        if not reals:
            continue
        runs = stage_runs(requests, n, fleet)
        all_runs += [*reals, *runs]
        verdicts.append(verdict(reals, runs))
    print()
    print("\n".join(table(all_runs)))
    print("\n".join(notes))
    print()
    print("What it shows:")
    for v in verdicts:
        print(f"  {v}")
    print(f"total {time.perf_counter() - t_start:.1f} s")
    return 0 if complete else 1


if __name__ == "__main__":
    raise SystemExit(main())

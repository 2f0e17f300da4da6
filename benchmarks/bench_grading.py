"""Grade a class per stage four ways in one run: this project's CLI, nbgrader with this project's
configuration (its ``IsolatedGrade`` preprocessor) run as ``nbgrader autograde`` and as ``python -m
autograder autograde`` (the same nbgrader run, with the class graded from its start), and plain nbgrader
(its own in-kernel execution of every cell: the baseline, which cannot run hidden checks), on the same
generated submissions.

Per stage it prints seconds and CPU-seconds per submission and the cores kept busy, twice: the
machine's busy time over the run (from ``/proc/stat``: every process, so run it on a quiet machine)
and the contender's own, i.e. its whole process tree's (each contender runs under
``benchmarks/reap.py``, which reaps every grading child: right on a shared machine too); the ratios
to plain nbgrader and of each nbgrader path to the CLI (time and own CPU), each nbgrader path's extra
CPU over the CLI split into nbgrader's own import (measured alone) and the rest, whether the CLI's and the
gradebook's per-TODO points agree after each nbgrader path, then where one grading child's CPU goes (interpreter start, the sandbox's set-up, the
harness's and the stage's imports, the learner's cells, the checks), and the projected time for
1,000 and 10,000 submissions on 2, 16 and 64 cores (CPU-seconds per submission × submissions ÷ cores,
i.e. assuming every core is kept busy, as measured here).

The class of each stage mixes honest (the reference), wrong (the project's wrong answers for that
stage, in turn), unfilled (the release as handed out) and hostile submissions (the reference plus a
cell that patches ``check``, floods the output and tries to read the grader's files and signal other
processes). No submission hangs: one that does costs one time limit in every path alike. Before the
contenders run, the honest submission is graded once, untimed, so that each finds the stage's trusted
material in the grader's store (as every run after the first does).

    python benchmarks/bench_grading.py                      # every stage, 10 submissions each
    python benchmarks/bench_grading.py --stages s01 s06 -n 20
    python benchmarks/bench_grading.py --quick              # stage 1, 3 submissions (smoke test)
    python benchmarks/bench_grading.py --quick --samples 1  # the same, each overhead measured once (the tests)
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from autograder.child.protocol import CellsDone, CheckStarted, Done, Ready  # noqa: E402
from autograder.core import cell_ids, layout  # noqa: E402
from autograder.grading.batch import available_cores  # noqa: E402
from autograder.grading.grade import child_payload_for, limits_for  # noqa: E402
from autograder.grading.staging import GradingRun  # noqa: E402
from autograder.grading.submission import read_submission  # noqa: E402
from autograder.grading.supervise import run_child  # noqa: E402
from autograder.isolation import forkclient  # noqa: E402
from autograder.isolation import levels as isolation  # noqa: E402
from tests.support.variants import variant_notebook  # noqa: E402

KINDS = ("honest", "wrong", "unfilled", "wrong", "hostile")
HOSTILE = '''
try:  # a hostile learner: none of this may change a verdict or reach another submission
    import builtins
    import os
    builtins.check = lambda *a, **k: print("✅ all checks passed")
    print("x" * 200_000)
    for p in ("solutions/__init__.py", "../../submitted", "/proc/1/environ"):
        try:
            open(p).read()
        except OSError:
            pass
    os.kill(os.getppid(), 0)  # is the parent there to signal? (signal 0 sends nothing)
except BaseException:
    pass
'''
TICK = os.sysconf("SC_CLK_TCK")


def busy_seconds() -> float:
    """Core-seconds this machine has spent busy since boot (every process, every core)."""
    with open("/proc/stat", encoding="ascii") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / TICK


@dataclass
class Timed:
    """One contender's run over the class: wall seconds, the machine's busy core-seconds, and the
    contender's own CPU-seconds (its process tree's, reaped by ``reap.py``)."""

    wall: float
    busy: float
    own: float = 0.0

    def per_submission(self, n: int) -> tuple[float, float]:
        return self.wall / n, self.busy / n

    @property
    def cores(self) -> float:
        return self.busy / self.wall if self.wall else 0.0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(fn) -> tuple[Timed, object]:
    b0, c0, t0 = busy_seconds(), _children_cpu(), time.perf_counter()
    out = fn()
    return Timed(time.perf_counter() - t0, busy_seconds() - b0, _children_cpu() - c0), out


REAP = [sys.executable, str(ROOT / "benchmarks" / "reap.py")]  # a contender's whole tree in RUSAGE_CHILDREN


# -- the class -------------------------------------------------------------------------------------
def filled(release: nbformat.NotebookNode, nb: nbformat.NotebookNode, extra: str = "") -> nbformat.NotebookNode:
    """The release with its solution cells' code taken from ``nb`` (the first one followed by ``extra``)."""
    codes = [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    out = nbformat.from_dict(json.loads(json.dumps(release)))
    sol = [c for c in out.cells if c.metadata.get("nbgrader", {}).get("solution")]
    for i, (cell, code) in enumerate(zip(sol, codes, strict=True)):
        cell.source = code + (extra if i == 0 else "")
    return out


def make_class(sid: str, course: Path, n: int) -> list[str]:
    assignment = layout.stage_files(sid).assignment("en")
    release_dir = course / "release" / assignment
    release = nbformat.read(release_dir / f"{assignment}.ipynb", as_version=4)
    mutants = list(importlib.import_module(f"tests.mutants_{sid}").MUTANTS.values())
    honest = variant_notebook(sid, [])
    students = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        if kind == "honest":
            nb = filled(release, honest)
        elif kind == "wrong":
            nb = filled(release, variant_notebook(sid, mutants[(i // len(KINDS)) % len(mutants)][1]))
        elif kind == "hostile":
            nb = filled(release, honest, HOSTILE)
        else:
            nb = release
        student = f"student{i:03d}_{kind}"
        d = course / "submitted" / student / assignment
        shutil.copytree(release_dir, d)
        nbformat.write(nb, d / f"{assignment}.ipynb")
        students.append(student)
    return students


# -- one child's CPU, by phase ---------------------------------------------------------------------
class TreeCPU:
    """Samples the CPU time of a child's processes and their descendants every few ms, keeping each
    process's highest reading, so that what a process spent is still counted after it has exited.

    ``roots`` lists the child's top processes: a launched child's bubblewrap, or every process in a
    forked child's cgroup (what the fork server spends forking it is in the contenders' totals, not here)."""

    def __init__(self, roots) -> None:
        self.roots, self.seen, self.stop = roots, {}, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        parent, cpu = {}, {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat", encoding="ascii", errors="replace") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(d)], cpu[int(d)] = int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK
        roots = set(self.roots())
        for pid in cpu:
            p = pid
            while p in parent and p not in roots and p > 1:
                p = parent[p]
            if p in roots:
                self.seen[pid] = max(self.seen.get(pid, 0.0), cpu[pid])

    def _loop(self) -> None:
        while not self.stop.is_set():
            self._sample()
            time.sleep(0.005)

    def now(self) -> float:
        self._sample()
        return sum(self.seen.values())

    def finish(self) -> float:
        self.stop.set()
        self.thread.join()
        return sum(self.seen.values())


@dataclass
class Phases:
    """CPU-seconds of one grading child by phase, summed over a submission's TODOs, for children launched
    one by one (``forked`` False) or forked from a fork server (True)."""

    setup: float = 0.0   # interpreter start, sandbox, harness and stage imports (to the child's Ready)
    cells: float = 0.0   # the setup cells and the learner's cells
    checks: float = 0.0  # building the implementation and running every check
    children: int = 0
    start: float = 0.0   # of setup: a bare interpreter's start
    imports: float = 0.0  # of setup: the harness's and the stage's imports, unconfined
    forked: bool = False
    server: float = 0.0  # forked: the servers' own CPU (start with the preload, forks, namespaces), whole run
    extra: dict = field(default_factory=dict)


def child_phases(notebook: Path, forked: bool, repeat: int = 3) -> Phases:
    """The honest submission's children, one by one: launched (``PCW_FORK_SERVER=0``) or forked; the
    interpreter's start and the imports are the median of ``repeat`` runs each."""
    sub = read_submission(notebook)
    out = Phases(forked=forked)
    before = os.environ.get("PCW_FORK_SERVER")
    os.environ["PCW_FORK_SERVER"] = "1" if forked else "0"
    try:
        with GradingRun.open(isolation.select("best")) as run:
            servers: list[TreeCPU] = []
            for todo in sub.stage.todos:
                marks: dict[str, float] = {}
                sampler: list[TreeCPU] = []

                def on_event(event, marks=marks, sampler=sampler):
                    name = {Ready: "ready", CellsDone: "cells", CheckStarted: "check", Done: "done"}.get(type(event))
                    if name and name not in marks and sampler:
                        marks[name] = sampler[0].now()

                def on_start(roots, sampler=sampler):
                    sampler.append(TreeCPU(roots))
                    if run.fork_server_pids() and not servers:  # from the first forked child on, every server's tree
                        servers.append(TreeCPU(run.fork_server_pids))

                payload = child_payload_for(sub, todo)
                run_child(payload, limits_for(sub.stage), run,
                          [c.key for c in sub.stage.checks_for(todo.id)], on_event, staging=run.staging_for(todo),
                          on_start=on_start)
                total = sampler[0].finish()
                ready, cells = marks.get("ready", total), marks.get("cells", total)
                out.setup += ready
                out.cells += cells - ready
                out.checks += total - cells
                out.children += 1
            out.forked = bool(servers)
            if servers:  # a server's tree holds its children too: what is left is the server's own
                out.server = max(servers[0].finish() - out.setup - out.cells - out.checks, 0.0)
            out.start = out.children * _rusage_of([sys.executable, "-I", "-c", "pass"], repeat)
            imports = ("import sys; sys.path[0:0] = [sys.argv[1]]; import ctypes; "
                       "from autograder.child import protocol, hybrid, probe, twins, sandbox; "
                       "from autograder.isolation import confine; from autograder.core.spec import load_stage; "
                       + "".join(f"import {m}; " for m in sub.stage.preload)
                       + f"load_stage({sub.stage.id!r}, hidden=True, reference=None)")
            out.imports = out.children * _rusage_of([sys.executable, "-I", "-c", imports, str(run.staging)],
                                                    repeat) - out.start
    finally:
        if before is None:
            os.environ.pop("PCW_FORK_SERVER", None)
        else:
            os.environ["PCW_FORK_SERVER"] = before
    return out


def _rusage_of(argv: list[str], repeat: int = 3) -> float:
    """Median CPU-seconds of running ``argv`` (a direct child: its whole CPU is accounted)."""
    samples = []
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, check=False, capture_output=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    return statistics.median(samples)


# -- one stage -------------------------------------------------------------------------------------
def gradebook_points(course: Path, assignment: str, students: list[str]) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for s in students:
            nb = gb.find_submission_notebook(assignment, assignment, s)
            out[s] = {cell_ids.todo_id(g.name): g.auto_score for g in nb.grades if cell_ids.todo_id(g.name)}
    return out


def bench_stage(sid: str, n: int, tmp: Path, env: dict, plain: bool, repeat: int = 3) -> dict:
    """Grade one stage's class every way; ``repeat``: runs per untimed-overhead sample (nbgrader's import,
    an interpreter's start, a child's imports), whose median is reported."""
    assignment = layout.stage_files(sid).assignment("en")
    course, base = tmp / f"{sid}-ours", tmp / f"{sid}-plain"
    subprocess.run([sys.executable, "-m", "autograder", "course", str(course), "--stage", sid], cwd=ROOT,
                   check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--create"], cwd=course,
                   env=env, check=True, capture_output=True)
    students = make_class(sid, course, n)
    shutil.copytree(course, base, ignore=shutil.ignore_patterns("gradebook.db"))
    # the baseline is plain nbgrader: the course id only, none of this project's preprocessors
    (base / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "pcw-bench"\n')
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--create", "--force"],
                   cwd=base, env=env, check=True, capture_output=True)  # --force: its own gradebook, same release

    def cli():
        p = subprocess.run([*REAP, sys.executable, "-m", "autograder", "grade", str(course / "submitted"), "--format", "json",
                            "--no-progress"], cwd=ROOT, capture_output=True, text=True)
        return json.loads(p.stdout)

    def autograde(where: Path, command: tuple[str, ...] = ("nbgrader", "autograde")) -> str:
        p = subprocess.run([*REAP, sys.executable, "-m", *command, assignment, "--force"], cwd=where, env=env,
                           capture_output=True, text=True)
        # nbgrader exits 1 when some submission could not be autograded (e.g. a plain kernel died)
        return "" if p.returncode == 0 else p.stderr[-2000:]

    def nbgrader_path():
        return autograde(course)

    def nbgrader_early():  # nbgrader's autograde, in a process that grades the class from its start
        return autograde(course, ("autograder", "autograde"))

    def nbgrader_plain():
        return autograde(base)

    # Every contender finds the stage's trusted material in the grader's store, as every run after the
    # first does (a cold store costs the first contender alone up to 12 CPU-s, on stage 6)
    honest = course / "submitted" / students[0] / assignment / f"{assignment}.ipynb"
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(honest), "--no-progress"], cwd=ROOT, check=True,
                   capture_output=True)
    out = {"n": n}
    out["cli"], graded = timed(cli)
    ours = {Path(s["path"]).parts[-3]: {t["id"]: t["points"] for t in s["todos"]} for s in graded["submissions"]}
    out["errors"], agree = {}, []
    for name, run in (("nbgrader", nbgrader_path), ("early", nbgrader_early)):
        out[name], out["errors"][name] = timed(run)
        book = gradebook_points(course, assignment, students)
        agree.append(all(ours[s] == book[s] for s in students))
    out["agree"] = all(agree)
    if plain:
        out["plain"], out["errors"]["plain"] = timed(nbgrader_plain)
    # nbgrader's own import, once per run (its Jupyter server extensions included): the part of the
    # nbgrader paths' extra over the CLI that no configuration of this course can remove
    out["nbgrader_import"] = _rusage_of([sys.executable, "-c", "import nbgrader.apps.nbgraderapp"], repeat) - \
        _rusage_of([sys.executable, "-c", "pass"], repeat)
    out["isolation"] = graded["isolation"]["description"]
    why = forkclient.usable(isolation.select("best"))
    out["phases"] = [child_phases(honest, forked=False, repeat=repeat),
                     *([child_phases(honest, forked=True, repeat=repeat)] if why is None else [])]
    out["not_forked"] = why
    return out


def report(sid: str, r: dict) -> None:
    n = r["n"]
    print(f"\n== stage {sid}: {n} submissions ({', '.join(sorted(set(KINDS)))}) on {available_cores()} cores")
    rows = [("CLI (python -m autograder grade)", r["cli"]), ("nbgrader autograde, this course", r["nbgrader"]),
            ("python -m autograder autograde", r["early"])]
    if "plain" in r:
        rows.append(("nbgrader autograde, plain (baseline)", r["plain"]))
    for name, t in rows:
        s, c = t.per_submission(n)
        print(f"  {name:38s} {s:7.3f} s  {c:7.3f} CPU-s per submission   {t.cores:4.2f} cores busy"
              f"   (own: {t.own / n:7.3f} CPU-s, {t.own / t.wall if t.wall else 0.0:4.2f} cores)")
    if "plain" in r:
        print(f"  CLI vs plain nbgrader: {r['plain'].wall / r['cli'].wall:5.2f}x faster per submission")
    for key, name in (("nbgrader", "nbgrader autograde"), ("early", "python -m autograder autograde")):
        own = r[key].own / r["cli"].own if r["cli"].own else 0.0
        print(f"  {name} / CLI: {r[key].wall / r['cli'].wall:5.2f}x the CLI's time, {own:5.2f}x its own CPU")
    imp = r["nbgrader_import"]
    for key, name in (("nbgrader", "nbgrader autograde"), ("early", "python -m autograder autograde")):
        extra = r[key].own - r["cli"].own
        print(f"  {name}: {extra / n:6.3f} CPU-s per submission over the CLI's own = nbgrader's import "
              f"{imp / n:6.3f} (its {imp:.2f} CPU-s once per run) + per notebook {(extra - imp) / n:6.3f} "
              f"(nbgrader's conversion: read, preprocessors, gradebook, write; and the course's glue)")
    print(f"  CLI and gradebook per-TODO points agree (after each nbgrader path): {r['agree']}")
    for name, err in r["errors"].items():
        if err:
            print(f"  {name}: nbgrader reported failures: ...{err[-600:]}")
    for p in r["phases"]:
        k = max(p.children, 1)
        if not p.forked:
            sandbox = max(p.setup - p.start - p.imports, 0.0)
            print(f"  one child launched, CPU-s (mean of the honest submission's {p.children} children): set-up "
                  f"{p.setup / k:.3f} [interpreter {p.start / k:.3f} · imports {p.imports / k:.3f} · sandbox and the "
                  f"rest {sandbox / k:.3f}] · cells {p.cells / k:.3f} · checks {p.checks / k:.3f}")
        else:
            print(f"  one child forked from a fork server, CPU-s (same children): set-up {p.setup / k:.3f} · "
                  f"cells {p.cells / k:.3f} · checks {p.checks / k:.3f} · the server's own {p.server / k:.3f} "
                  f"(its start with the imports, forks and namespaces: {p.server:.2f} for the {p.children})")
    if r["not_forked"]:
        print(f"  children are launched one by one here, none forked: {r['not_forked']}")
    c = r["cli"].busy / n
    cells = "  ".join(f"{subs:>6,} on {cores:>2}: {subs * c / cores / 60:7.1f} min" for subs in (1_000, 10_000)
                      for cores in (2, 16, 64))
    print(f"  projected (CLI, every core busy): {cells}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="stage 1, 3 submissions (smoke test)")
    ap.add_argument("--stages", nargs="*", default=None, help="stage ids (default: every built stage)")
    ap.add_argument("-n", type=int, default=10, help="submissions per stage")
    ap.add_argument("--no-plain", action="store_true", help="skip plain nbgrader (it runs every demo cell)")
    # the tests' smoke run takes one sample: it checks what is printed, not the figures
    ap.add_argument("--samples", type=int, default=3,
                    help="runs per overhead sample (nbgrader's import, a child's start and imports), median reported")
    args = ap.parse_args()
    stages = ["s01"] if args.quick else (args.stages or layout.built_stages())
    n = 3 if args.quick else args.n
    # in-kernel hidden checks need the reference: the kernels see the repository; nbgrader shells
    # out to tools next to this interpreter (alembic)
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    print(f"load average before: {os.getloadavg()[0]:.2f} (CPU-seconds are the whole machine's: run it quiet)")
    ok = True
    with tempfile.TemporaryDirectory(prefix="pcw-bench-grading-") as tmp:
        for sid in stages:
            r = bench_stage(sid, n, Path(tmp), env, plain=not args.no_plain, repeat=args.samples)
            report(sid, r)
            ok = ok and r["agree"]
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    print(f"per-TODO scores equal: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

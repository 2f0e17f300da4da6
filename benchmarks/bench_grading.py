"""Grade a class at once: `python -m autograder grade` vs plain `nbgrader autograde`, same submissions.

The baseline is nbgrader's own autograde with its default in-kernel execution (one kernel per
notebook, every cell run), which is what a course without this project's grader would use. Both
grade the same stage-1 submissions (reference, stub, and wrong answers in TODOs that no other TODO
calls, so that in-kernel grading without isolation blames the same TODOs); the script checks the
per-TODO scores agree, then prints both times and their ratio. The two run in interleaved rounds
(each round grades the whole class with both, in turn; nbgrader re-grades with ``--force``), timed on
the wall clock (both run subprocesses, ours several in parallel); the ratio is computed per round and
printed as its minimum and median.

    python benchmarks/bench_grading.py            # 50 submissions, 3 rounds
    python benchmarks/bench_grading.py --quick    # 3 submissions, 2 rounds (smoke test)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from autograder.testing import variant_notebook  # noqa: E402
from benchmarks.rounds import interleaved, summary  # noqa: E402

ASSIGNMENT = "01_prefix_match"
SPLIT = "        reusable_prefix = prompt[:hit_len]\n        suffix = prompt[hit_len:]"
STATS = "reuse_ratio = round(hit_tokens / len(prompt), 4) if prompt else 0.0"
KINDS = {
    "reference": [],
    "split_off_by_one": [(SPLIT, SPLIT.replace("prompt[hit_len:]", "prompt[hit_len + 1:]"))],
    "stats_unrounded": [(STATS, "reuse_ratio = hit_tokens / len(prompt) if prompt else 0.0")],
    "stats_uncached_ratio": [(STATS, "reuse_ratio = round(uncached_tokens / len(prompt), 4) if prompt else 0.0")],
}


def make_class(course: Path, n: int) -> list[str]:
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    students = []
    kinds = list(KINDS) + ["stub"]
    for i in range(n):
        kind = kinds[i % len(kinds)]
        nb = release if kind == "stub" else variant_notebook("s01", KINDS[kind])
        if kind != "stub":  # keep the release's cells and metadata, fill only the solution cell
            code = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
            nb = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
            for c in nb.cells:
                if c.metadata.get("nbgrader", {}).get("solution"):
                    c.source = code
        student = f"student{i:03d}_{kind}"
        d = course / "submitted" / student / ASSIGNMENT
        shutil.copytree(course / "release" / ASSIGNMENT, d)
        nbformat.write(nb, d / f"{ASSIGNMENT}.ipynb")
        students.append(student)
    return students


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="3 submissions, 2 rounds (smoke test)")
    ap.add_argument("-n", type=int, default=50, help="submissions in the class")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    args = ap.parse_args()
    n, rounds = (3, 2) if args.quick else (args.n, args.rounds)
    # in-kernel hidden checks need the reference: the kernels see the repository; nbgrader shells
    # out to tools next to this interpreter (alembic)
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    with tempfile.TemporaryDirectory(prefix="pcw-bench-grading-") as tmp:
        course = Path(tmp) / "course"
        subprocess.run([sys.executable, "-m", "autograder", "course", str(course), "--stage", "s01"], cwd=ROOT,
                       check=True, capture_output=True)
        # the baseline is plain nbgrader: keep only the course id, drop our isolated-grading config
        (course / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "pcw-bench"\n')
        subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--create"], cwd=course, env=env, check=True,
                       capture_output=True)
        students = make_class(course, n)

        def ours() -> str:
            p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(course / "submitted"), "--format",
                                "json", "--no-progress"], cwd=ROOT, capture_output=True, text=True)
            return p.stdout

        def nbgrader() -> None:
            # --force: grade again what an earlier round graded
            subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force"], cwd=course, env=env,
                           check=True, capture_output=True)

        r = interleaved({"nbgrader": nbgrader, "ours": ours}, baseline="nbgrader", rounds=rounds, clock="wall",
                        warmup=False)
        ours_scores, graded = {}, json.loads(r.results["ours"])
        for sub in graded["submissions"]:
            student = Path(sub["path"]).parts[-3]
            ours_scores[student] = {t["id"]: t["points"] for t in sub["todos"]}
        from nbgrader.api import Gradebook

        theirs = {}
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            for s in students:
                nb = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, s)
                theirs[s] = {g.name.replace("-", "."): g.auto_score for g in nb.grades if g.name.count("-") == 1}
    ours_s, nbg_s = r.median_seconds("ours"), r.median_seconds("nbgrader")
    mismatches = {s: (ours_scores[s], theirs[s]) for s in students if ours_scores[s] != theirs[s]}
    print(f"submissions: {n} (stage 1, {os.cpu_count()} cores), {rounds} interleaved rounds, wall clock, median:")
    print(f"python -m autograder grade : {ours_s:7.2f} s  ({ours_s / n * 1000:6.0f} ms per submission, isolated, hidden checks)")
    print(f"  graded under isolation: {graded['isolation']['description']}")
    print(f"nbgrader autograde (plain) : {nbg_s:7.2f} s  ({nbg_s / n * 1000:6.0f} ms per submission, in-kernel)")
    print(f"ours is faster per submission than nbgrader by (per round): {summary(r.speedups('ours'))}")
    print(f"per-TODO scores equal: {not mismatches}")
    for s, (a, b) in mismatches.items():
        print(f"  {s}: ours {a} vs nbgrader {b}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())

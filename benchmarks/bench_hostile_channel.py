"""What a grading child can make the grader itself spend, through its result channel: the grader's own
CPU time and peak memory per submission for each hostile-channel attack, next to an honest submission
graded in the same run (the ratio is the attack's cost over an honest one's).

Each attack is a stage-1 notebook whose five TODO methods, the first time one runs in a child, write
to the child's result pipe (the one write-only pipe among its descriptors above 2) what the harness
never would:

* ``newline_flood_after_a_broken_rule``: a line that is not an event, then 8 MiB of newlines (the grader
  used to decode every one: 24-25 CPU-s per child);
* ``outcome_of_millions_of_empty_dicts``: a well-formed outcome of the running check holding 2.7 million
  empty dicts, just under the channel's 8 MiB (the grader used to keep each until the run ended: 38 MB
  grew to 1.2 GB with five);
* ``outcome_nested_deeply``: an outcome nested a hundred thousand lists deep;
* ``outcome_of_many_numbers``: an outcome of a million small numbers in one list.

Every submission is graded by a process of its own (``grade_paths`` on that one notebook, at the best
isolation this machine offers); its CPU time is ``RUSAGE_SELF`` (the grader's threads, not its children)
and its peak resident size (``VmHWM``), both read by that process as it ends. The worst
case of each column is printed last.

    python benchmarks/bench_hostile_channel.py            # every attack, 1 run each (about a minute)
    python benchmarks/bench_hostile_channel.py --runs 3   # the median of 3 runs per submission
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.core import cell_ids, layout  # noqa: E402
from autograder.core.pysource import object_source  # noqa: E402
from autograder.core.spec import load_stage  # noqa: E402
from tests.support.variants import variant_notebook  # noqa: E402

STAGE = "s01"
METHODS = {"s01.normalize": "_normalize", "s01.add_prefix": "add_prefix", "s01.match_prefix": "match_prefix",
           "s01.split_prompt": "split_prompt", "s01.cache_stats": "cache_stats"}
MIB = 1 << 20

# What each attack writes, as Python source evaluated in the child with KEY bound to the running check's key.
PAYLOADS = {
    "newline_flood_after_a_broken_rule": "b'not an event\\n' + b'\\n' * (8 * 1024 * 1024 - 64)",
    "outcome_of_millions_of_empty_dicts":
        "b'{\"key\": \"' + KEY + b'\", \"outcome\": {\"kind\": \"ok\", \"value\": [' + b'{},' * 2_700_000 + b'{}]}}\\n'",
    "outcome_nested_deeply":
        "b'{\"key\": \"' + KEY + b'\", \"outcome\": {\"kind\": \"ok\", \"value\": ' + b'[' * 100_000 + b']' * 100_000 + b'}}\\n'",
    "outcome_of_many_numbers":
        "b'{\"key\": \"' + KEY + b'\", \"outcome\": {\"kind\": \"ok\", \"value\": [' + b'1,' * 1_000_000 + b'1]}}\\n'",
}

_INJECT = '''import os as _os, stat as _stat
if not getattr(_os, "_pcw_bench_sent", False):
    _os._pcw_bench_sent = True
    KEY = {key!r}.encode()
    _line = {payload}
    for _fd in range(3, 64):
        try:
            if not _stat.S_ISFIFO(_os.fstat(_fd).st_mode):
                continue
            _view = memoryview(_line)
            while _view:
                _view = _view[_os.write(_fd, _view):]
        except OSError:
            pass
'''


def attack_cell(attack: str) -> str:
    """The stage-1 class cell with ``attack`` at the start of each TODO method (the reference otherwise)."""
    stage = load_stage(STAGE, hidden=True)
    cls = object_source(layout.stage_files(STAGE).reference.read_text(encoding="utf-8"), "PrefixCacheManager")
    lines = cls.splitlines()
    for todo_id, method in METHODS.items():
        key = stage.checks_for(todo_id)[0].key  # the first check of its TODO calls the method first
        code = _INJECT.format(key=key, payload=PAYLOADS[attack])
        i = next(k for k, line in enumerate(lines) if line.strip().startswith(f"def {method}("))
        j = i + 1
        while not lines[j].strip().startswith('"""'):
            j += 1  # the method's docstring...
        if lines[j].strip().count('"""') == 1:
            j += 1
            while '"""' not in lines[j]:
                j += 1  # ...to its end
        lines[j + 1:j + 1] = ["        " + c for c in code.splitlines()]
    return "\n".join(lines)


def write_notebook(dest: Path, attack: str | None) -> Path:
    """``dest/<attack>.ipynb`` (the reference itself when ``attack`` is None: the honest submission)."""
    import nbformat

    nb = variant_notebook(STAGE, [])
    if attack is not None:
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == cell_ids.code_cell_id(STAGE, "PrefixCacheManager"):
                cell.source = attack_cell(attack)
    path = dest / f"{attack or 'honest'}.ipynb"
    nbformat.write(nb, path)
    return path


# The peak is the process's own VmHWM: ru_maxrss would carry over, through exec, the size of the process
# that started it (a test runner of several hundred MB), VmHWM belongs to this process's memory alone.
_GRADE = '''import json, re, resource, sys
from autograder.grading.grade import grade_paths
[r] = grade_paths([sys.argv[1]])
u = resource.getrusage(resource.RUSAGE_SELF)
status = open("/proc/self/status").read()
peak_kb = int(re.search(r"VmHWM:\\s*(\\d+)", status).group(1))
print(json.dumps({"cpu_s": u.ru_utime + u.ru_stime, "peak_mb": peak_kb / 1024, "score": r.score,
                  "statuses": {t.id: t.status.value for t in r.todos}}))
'''


def grader_cost(notebook: Path) -> dict:
    """The grader's own CPU-s and peak MB grading ``notebook`` alone, in a process of its own."""
    out = subprocess.run([sys.executable, "-c", _GRADE, str(notebook)], cwd=ROOT, capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"grading {notebook.name} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _statuses(statuses: dict[str, str]) -> str:
    """``tampered 5, passed 1``: how many TODOs ended each way."""
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="runs per submission (the median is shown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pcw-bench-channel-") as tmp:
        rows = {}
        for attack in [None, *PAYLOADS]:
            path = write_notebook(Path(tmp), attack)
            runs = [grader_cost(path) for _ in range(args.runs)]
            rows[attack or "honest"] = {"cpu_s": statistics.median(r["cpu_s"] for r in runs),
                                        "peak_mb": statistics.median(r["peak_mb"] for r in runs),
                                        "score": runs[0]["score"], "statuses": runs[0]["statuses"]}
    honest = rows["honest"]
    print(f"grader's own cost per stage-1 submission (6 TODOs, a child each; the attacks in 5), median of {args.runs} run(s)")
    print(f"{'submission':38} {'CPU-s':>7} {'x honest':>8} {'peak MB':>8} {'x honest':>8}  score  statuses")
    for name, r in rows.items():
        print(f"{name:38} {r['cpu_s']:7.2f} {r['cpu_s'] / honest['cpu_s']:8.2f} {r['peak_mb']:8.0f} "
              f"{r['peak_mb'] / honest['peak_mb']:8.2f}  {r['score']:5.0f}  {_statuses(r['statuses'])}")
    attacks = {k: v for k, v in rows.items() if k != "honest"}
    cpu = max(attacks, key=lambda k: attacks[k]["cpu_s"])
    mem = max(attacks, key=lambda k: attacks[k]["peak_mb"])
    print(f"worst CPU: {cpu} ({attacks[cpu]['cpu_s']:.2f} CPU-s, {attacks[cpu]['cpu_s'] / honest['cpu_s']:.2f}x honest); "
          f"worst memory: {mem} ({attacks[mem]['peak_mb']:.0f} MB, {attacks[mem]['peak_mb'] / honest['peak_mb']:.2f}x honest)")


if __name__ == "__main__":
    main()

"""Grading notebooks: one isolated child process per (submission, TODO); verdicts in this process.

This process never executes learner code. It reads the submission as data, sends the learner's
solution cells to a child (see :mod:`autograder.sandbox`) together with the reference stubbed at
the TODO under test, reads back raw outcomes, and compares them with the reference's outcomes,
which it computes itself.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from autograder.hybrid import stub_region
from autograder.inline import reference_outcome
from autograder.spec import Stage, Todo, available_stages, load_stage
from autograder.verdict import judge

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
_STAGE_MODULE = re.compile(r"^s(\d\d)_\w+\.py$")
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024


class SubmissionError(Exception):
    """The file cannot be graded at all (not a notebook, unknown stage, unreadable)."""


@dataclass
class TodoResult:
    id: str
    number: int
    title: str
    points: float
    max_points: float
    passed: bool
    message: str
    checks: list[dict] = field(default_factory=list)


@dataclass
class SubmissionResult:
    path: str
    stage: str | None
    todos: list[TodoResult] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return sum(t.points for t in self.todos)

    @property
    def max_score(self) -> float:
        return sum(t.max_points for t in self.todos)

    def to_json(self) -> dict:
        return {"path": self.path, "stage": self.stage, "score": self.score, "max_score": self.max_score,
                "error": self.error, "todos": [asdict(t) for t in self.todos]}

    def failed_todos(self) -> set[str]:
        return {t.id for t in self.todos if not t.passed}


@dataclass
class Submission:
    """A notebook read as data: which stage, and the learner's solution cells in order."""

    path: Path
    stage: Stage
    cells: list[str]
    digest: str


# -- reading submissions --------------------------------------------------------------------------
def _stage_from(nb: dict, path: Path) -> str | None:
    votes: dict[str, int] = {}
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        gid = str(meta.get("grade_id", "")) if isinstance(meta, dict) else ""
        m = re.match(r"^(s\d\d)[.-]", gid)
        if m:
            votes[m.group(1)] = votes.get(m.group(1), 0) + 1
    known = set(available_stages())
    ranked = [s for s, _ in sorted(votes.items(), key=lambda kv: -kv[1]) if s in known]
    if ranked:
        return ranked[0]
    for sid in known:  # a notebook stripped of metadata: fall back to its file name
        if path.stem.startswith(load_stage(sid, hidden=False).notebook):
            return sid
    return None


def read_submission(path: Path) -> Submission:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SubmissionError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise SubmissionError(f"{path.name} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
    nb = _parse_notebook(raw, path.name)
    sid = _stage_from(nb, path)
    if sid is None:
        raise SubmissionError(f"{path.name}: cannot tell which stage this notebook belongs to")
    stage = load_stage(sid, hidden=True)
    cells = [_source(c) for c in nb["cells"]
             if c.get("cell_type") == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution") is True]
    return Submission(path, stage, cells, hashlib.sha256(raw).hexdigest())


def _parse_notebook(raw: bytes, name: str) -> dict:
    """A v4 notebook as plain JSON. (nbformat's reader pulls in jsonschema's format checkers, about
    2 s of imports per grading run, for checks this reader does itself.)"""
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SubmissionError(f"{name} is not a readable notebook ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SubmissionError(f"{name} is not a readable notebook (no list of cells)")
    if nb.get("nbformat") != 4:
        raise SubmissionError(f"{name} is in notebook format {nb.get('nbformat')!r}; open and save it in Jupyter (format 4)")
    if not all(isinstance(c, dict) and isinstance(c.get("metadata", {}), dict) for c in nb["cells"]):
        raise SubmissionError(f"{name} is not a readable notebook (malformed cells)")
    return nb


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


# -- trusted material for a stage -----------------------------------------------------------------
_lock = threading.Lock()
_expected: dict[str, dict[str, dict]] = {}
_setup: dict[str, list[str]] = {}


def expected_outcomes(stage: Stage) -> dict[str, dict]:
    """The reference's outcome for every check of the stage, computed here, once."""
    with _lock:
        if stage.id not in _expected:
            _expected[stage.id] = {c.key: reference_outcome(c, stage.reference) for c in stage.checks}
        return _expected[stage.id]


def setup_cells(stage: Stage) -> list[str]:
    """Setup cells come from the instructor notebook, never from the submission."""
    with _lock:
        if stage.id not in _setup:
            nb = json.loads((SOLUTIONS / f"{stage.notebook}.ipynb").read_text(encoding="utf-8"))
            _setup[stage.id] = [_source(c) for c in nb["cells"] if "setup" in c.get("metadata", {}).get("tags", [])]
        return _setup[stage.id]


_modules: dict[tuple[str, str], dict[str, str]] = {}


def child_modules(stage: Stage, todo: Todo) -> dict[str, str]:
    """Source of every ``solutions`` module the child may import; the stage's own is stubbed at ``todo``.

    Built once per TODO, under the lock: CPython 3.11's ``ast.parse`` is not safe to run from
    several threads at once ("AST constructor recursion depth mismatch").
    """
    with _lock:
        key = (stage.id, todo.id)
        if key not in _modules:
            _modules[key] = _child_modules(stage, todo)
        return _modules[key]


def _child_modules(stage: Stage, todo: Todo) -> dict[str, str]:
    modules: dict[str, str] = {}
    own = stage.reference.split(".")[-1] + ".py"
    for p in sorted(SOLUTIONS.glob("*.py")):
        m = _STAGE_MODULE.match(p.name)
        if p.name == "__init__.py" or (m and int(m.group(1)) > stage.number):
            continue
        text = p.read_text(encoding="utf-8")
        modules[f"solutions.{p.stem}"] = stub_region(text, todo.target) if p.name == own else text
    hidden = SOLUTIONS / "hidden" / f"{stage.id}.py"
    if hidden.exists():
        modules[f"solutions.hidden.{stage.id}"] = hidden.read_text(encoding="utf-8")
    return modules


# -- running one TODO -----------------------------------------------------------------------------
_BOOT = "import sys; sys.path.insert(0, {root!r}); from autograder.sandbox import main; main()"


def _child_env(workdir: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT") if k in os.environ}
    env.update(HOME=workdir, TMPDIR=workdir, MPLBACKEND="Agg", MPLCONFIGDIR=workdir, OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # machine-specific safety settings, see RECIPES
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def run_todo(sub: Submission, todo: Todo) -> TodoResult:
    stage = sub.stage
    expected = expected_outcomes(stage)
    checks = stage.checks_for(todo.id)
    cells = [("setup", s) for s in setup_cells(stage)] + [("your", s) for s in sub.cells]
    events, status = _run_child(stage, todo, cells)
    outcomes = {e["key"]: e["outcome"] for e in events if "outcome" in e}
    missing = next((e["missing"] for e in events if "missing" in e), None)
    cell_errors = next((e["cell_errors"] for e in events if "cell_errors" in e), [])
    in_check = next((e["key"] for e in reversed(events) if e.get("phase") == "check"), None)

    verdicts, first_fail = [], None
    for c in checks:
        if c.key in outcomes:
            v = judge(stage, c, expected[c.key], outcomes[c.key])
            line = v.summary if v.passed else _one_line(v.summary, v.detail)
            verdicts.append({"name": c.name, "hidden": c.hidden, "passed": v.passed, "message": line})
            if not v.passed and first_fail is None:
                first_fail = v
        else:
            verdicts.append({"name": c.name, "hidden": c.hidden, "passed": False, "message": "not run"})

    passed = bool(checks) and all(v["passed"] for v in verdicts) and status is None
    n_hidden = sum(c.hidden for c in checks)
    if passed:
        message = f"all {len(checks)} checks passed ({n_hidden} hidden)"
    elif missing:
        message = missing
    elif status is not None:
        where = _check_name(in_check, stage) or "before the checks started"
        message = f"{status} during {where}"
    elif first_fail is not None and first_fail.not_implemented:
        message = first_fail.summary
    elif first_fail is not None:
        head = first_fail.summary if first_fail.check.hidden else f"check '{first_fail.check.name}' failed"
        message = _one_line(head, first_fail.detail)
    else:
        message = "no check results arrived (did your code write to the grader's result channel?)"
    if not passed and cell_errors:
        message += f" (note: {cell_errors[0]})"
    return TodoResult(todo.id, todo.number, todo.title, float(todo.points if passed else 0), float(todo.points),
                      passed, message, verdicts)


def _one_line(head: str, detail: list[str]) -> str:
    return " | ".join([head, *(" ".join(d.split()) for d in detail)])


def _check_name(key: str | None, stage: Stage) -> str | None:
    if key is None:
        return None
    hidden = ":hidden:" in key
    return f"{'hidden ' if hidden else ''}check '{key.rsplit(':', 1)[-1]}'"


def _run_child(stage: Stage, todo: Todo, cells: list[tuple[str, str]]) -> tuple[list[dict], str | None]:
    """Run the child; return its events and None, or a one-line reason it did not finish."""
    with tempfile.TemporaryDirectory(prefix="pcw-grade-") as workdir:
        read_fd, write_fd = os.pipe()
        payload = {
            "stage": stage.id, "todo": todo.id, "cells": cells, "modules": child_modules(stage, todo),
            "memory_limit_mb": stage.memory_limit_mb, "cpu_limit_s": stage.time_limit_s + _startup_allowance(stage) / 5,
            "workdir": workdir, "result_fd": write_fd, "root": str(ROOT), "denied_dirs": [str(SOLUTIONS)],
            "preload": stage.preload,
        }
        log_path = os.path.join(workdir, "output.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT.format(root=str(ROOT))],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
                cwd=workdir, env=_child_env(workdir), start_new_session=True)
        os.close(write_fd)
        try:
            proc.stdin.write(json.dumps(payload).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        # CPU time is the limit that matters (it does not depend on how busy the machine is); the
        # wall clock only ends code that waits forever without computing.
        events, status = _collect(proc, read_fd, 3 * stage.time_limit_s + _startup_allowance(stage), stage.time_limit_s)
        os.close(read_fd)
        return events, status


def _startup_allowance(stage: Stage) -> float:
    return 15.0 if "torch" in stage.preload else 5.0


def _collect(proc: subprocess.Popen, fd: int, limit_s: float, cpu_s: float) -> tuple[list[dict], str | None]:
    """Read the child's events until its end of the pipe closes (or the wall clock runs out).

    The child's last event is ``{"phase": "done"}`` when it finished; learner code can write lines
    to the pipe too, so a "done" anywhere but last, or from a process that did not exit cleanly,
    does not count, and reading always goes on to the end.
    """
    events: list[dict] = []
    buf = b""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + limit_s
    status = None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                status = f"stopped after {limit_s:.0f} s of waiting (sleeping or blocked forever?)"
                break
            if not sel.select(timeout=min(left, 0.5)):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            if len(buf) > 8 * 1024 * 1024:
                status = "the results were too large"
                break
            *lines, buf = buf.split(b"\n")
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # garbage written to the result pipe by learner code is ignored
                if isinstance(event, dict):
                    events.append(event)
    finally:
        sel.close()
        _kill(proc)
    rc = proc.returncode
    done = bool(events) and events[-1] == {"phase": "done"} and rc in (0, -signal.SIGKILL)
    if not done and status is None:
        if rc is not None and rc < 0:
            sig = signal.Signals(-rc).name
            hint = {"SIGXCPU": f"more than {cpu_s:.0f} s of CPU time: an endless loop, or far too slow?",
                    "SIGKILL": "killed: memory or time limit", "SIGXFSZ": "output file limit",
                    "SIGSEGV": "crashed (a very deep recursion?)"}.get(sig, "")
            status = f"the grading process was ended by {sig}{f' ({hint})' if hint else ''}"
        else:
            status = f"your code ended the grading process (exit code {rc}: sys.exit, os._exit or a crash)"
    return events, status


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


# -- many submissions ------------------------------------------------------------------------------
def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; a folder means every notebook under it (nbgrader's layout or flat)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(q for q in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
        else:
            out.append(p)
    return out


def grade_paths(paths: Iterable[str | Path], *, workers: int | None = None,
                on_done: Callable[[SubmissionResult], None] | None = None,
                on_todo: Callable[[], None] | None = None) -> list[SubmissionResult]:
    """Grade every notebook; one submission's failure never stops the others."""
    files = expand(paths)
    results: list[SubmissionResult | None] = [None] * len(files)
    jobs: list[tuple[int, Submission, Todo]] = []
    started = time.monotonic()
    for i, path in enumerate(files):
        try:
            sub = read_submission(path)
        except SubmissionError as exc:
            results[i] = SubmissionResult(str(path), None, error=str(exc))
            continue
        results[i] = SubmissionResult(str(path), sub.stage.id)
        jobs += [(i, sub, t) for t in sub.stage.todos]
    for stage in {id(j[1].stage): j[1].stage for j in jobs}.values():
        expected_outcomes(stage)  # once, before the pool starts
        setup_cells(stage)

    remaining = {i: sum(1 for j in jobs if j[0] == i) for i in range(len(files))}
    by_index: dict[int, dict[str, TodoResult]] = {i: {} for i in range(len(files))}
    subs = {j[0]: j[1] for j in jobs}

    def work(job: tuple[int, Submission, Todo]) -> None:
        i, sub, todo = job
        try:
            res = run_todo(sub, todo)
        except Exception as exc:  # a grader bug must not sink the class: report it on this TODO
            res = TodoResult(todo.id, todo.number, todo.title, 0.0, float(todo.points), False,
                             f"grader error: {type(exc).__name__}: {exc}")
        with _lock:
            by_index[i][todo.id] = res
            remaining[i] -= 1
            last = remaining[i] == 0
        if on_todo:
            on_todo()
        if last:
            _finish(i)

    def _finish(i: int) -> None:
        sub = subs[i]
        r = results[i]
        r.todos = [by_index[i][t.id] for t in sub.stage.todos]
        r.seconds = time.monotonic() - started
        try:
            if hashlib.sha256(sub.path.read_bytes()).hexdigest() != sub.digest:
                r.error = "the submission file changed while it was graded"
        except OSError:
            r.error = "the submission file disappeared while it was graded"
        if on_done:
            on_done(r)

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
        list(pool.map(work, jobs))
    for i, r in enumerate(results):
        if r is not None and r.error and on_done and not r.todos:
            on_done(r)
    return [r for r in results if r is not None]

"""Hostile and broken submissions, and attacks on the grader, through the real CLI (several workers)
and the real nbgrader flow, graded in one class next to honest classmates.

For each: grading finishes within a bound, no point is awarded that the code did not earn, only the
TODOs concerned lose points, the reason fits on one line, and the submission is left byte-for-byte
unchanged while the other submissions are still graded. For the whole class: every honest classmate
keeps its exact score, nothing outside the children's scratch dirs changes (the repository, the
submissions, the reports written, the nbgrader course), no learner-visible text carries the
reference's or the hidden checks' source, and no process outlives grading.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder.core import layout
from autograder.core.pysource import solution_region
from autograder.grading import leaks
from tests.conftest import ROOT
from tests.support import attack_corpus, hostile_corpus
from tests.support.hostile_corpus import ALL, Case
from tests.support.machine import scaled
from tests.support.variants import variant_notebook

pytestmark = pytest.mark.slow  # the fast lane leaves it out: grades a whole class of hostile notebooks, through the CLI and nbgrader

S01 = layout.stage_files("s01")
OLD = {c.name: c for c in hostile_corpus.cases()}
NEW = {c.name: c for c in attack_corpus.cases(str(ROOT))}
WRONG_STATS = [("reuse_ratio = round(hit_tokens / len(prompt), 4) if prompt else 0.0",
                "reuse_ratio = hit_tokens / len(prompt) if prompt else 0.0")]
HONEST = {f"honest_classmate_{i}": set(ALL) for i in range(3)} | {"honest_but_wrong_stats": ALL - {"s01.cache_stats"}}
CASES = {**OLD, **NEW}
BOUND_S = 420  # the whole class on 2 cores: generous; a hang per TODO, or per submission, would blow it
LINGER_S = 4   # longer than any attack's delayed action (the detached rewriter waits 3 s)
# What the corpus must cover (mechanism -> attacks that use it); see issue 12.
MECHANISMS = {
    "dir_fd": ["dir_fd_open_of_reference"],
    "clearing the hook's globals": ["hook_globals_cleared_then_open"],
    "patching the hook's closure (gc / ctypes)": ["hook_closure_patched_by_ctypes_then_open", "hook_globals_cleared_then_open"],
    "answers from tests/": ["answers_quoted_in_tests"],
    "answers from .git": ["git_objects_of_the_repository", "git_show_through_a_subprocess"],
    "answers from another checkout": ["another_checkout_next_door"],
    "/proc/<parent>/cwd": ["parent_cwd_through_proc"],
    "/proc/<parent>/cmdline": ["course_source_from_parent_cmdline"],
    "sibling scratch dirs": ["sibling_scratch_dirs", "colluding_classmate_leaves_its_reference"],
    "smuggling in messages, any encoding": sorted(attack_corpus.LEAKERS),
    "kill / pidfd_send_signal on the parent": ["kill_the_grader_and_its_parents", "pidfd_send_signal_to_the_grader"],
    "prlimit on the parent": ["prlimit_starves_the_grader"],
    "a classmate's result pipe": ["write_into_classmates_result_pipes"],
    "truncating a classmate's notebook": ["truncate_classmates_notebooks"],
    "writing gradebook.db": ["write_the_nbgrader_gradebook"],
    "a detached process rewriting the reports": ["detached_process_rewrites_the_reports"],
    "planting a module in the grader's root": ["plant_modules_for_the_next_run"],
    "verdict channel: lines after done, keys twice": ["forge_done_on_own_channel_at_cell_level", "report_a_check_twice"],
    "cell-level hangs": ["cpu_hang_at_cell_level", "sleep_forever_at_cell_level"],
    "output floods": ["output_flood_and_warnings"],
    "report channels: numbers, keys, shapes, forged fields, exit statuses, own encodings, spread pieces":
        sorted(attack_corpus.EXFILTRATORS),
    "a hidden check's text in an encoding of the attacker's (atbash, xor + base64, filler, split in two)":
        sorted(attack_corpus.PROBE_SMUGGLERS),
    "a lock on a shared file, held by one child and sensed by another": sorted(attack_corpus.LOCK_PAIR),
}
# Under nbgrader, what differs from the CLI is around the child: nbgrader's process above it, the
# course folder (source/, submitted/, gradebook.db) and the run's reports. The attacks on those run
# through nbgrader too; attacks on the child's own view (reading answers, unhooking, smuggling) meet
# the same child under both and are judged by the CLI tests above.
THROUGH_NBGRADER = [name for mechanism in (
    "/proc/<parent>/cwd", "/proc/<parent>/cmdline", "sibling scratch dirs", "kill / pidfd_send_signal on the parent",
    "prlimit on the parent", "a classmate's result pipe", "truncating a classmate's notebook", "writing gradebook.db",
    "a detached process rewriting the reports", "planting a module in the grader's root",
    "verdict channel: lines after done, keys twice", "cell-level hangs", "output floods") for name in MECHANISMS[mechanism]]
# ...and the earlier corpus's attacks on the supervisor: ending, starving or outliving it, forging its
# lines, and notebooks nbgrader itself has to cope with (a syntax error, a deleted TODO cell).
THROUGH_NBGRADER += ["infinite_loop", "memory_bomb", "fork_bomb", "sys_exit", "os_exit", "keyboard_interrupt",
                     "exit_after_class", "megabytes_of_stdout", "threads_left_running", "ignores_sigterm",
                     "forged_result_lines", "syntax_error", "missing_todo_cell"]
# The order the class is handed in (the CLI's arguments; nbgrader's students, which it takes in name order).
# A grader takes submissions in the order given, so the attacks that hold a worker for long by design go
# first: waiting out the wall-clock limit (stretched by the machine's load), spinning to the CPU limit,
# forking to the process limit in every TODO's child, printing hundreds of megabytes, sleeping while the
# siblings look. Late in name order, the sleeper alone kept the run going for most of its wall-clock
# limit after every other child had finished; first, each wait overlaps the rest of the class.
# The detached rewriter goes last: its write, 3 s after its child, then falls after the reports exist, in
# the linger, where the reports' digests would catch it had its process outlived grading.
LONG_FIRST = ["sleep_forever_at_cell_level", "cpu_hang_at_cell_level", "ignores_sigterm", "infinite_loop",
              "fork_bomb_at_cell_level", "megabytes_of_stdout", "colluding_classmate_leaves_its_reference",
              "output_flood_and_warnings"]
LAST = ["detached_process_rewrites_the_reports"]


def handed_in_order(names) -> list[str]:
    """``names`` in the order the class is handed in: :data:`LONG_FIRST`, the rest by name, :data:`LAST`."""
    names = set(names)
    ends = [n for n in LONG_FIRST + LAST if n in names]
    return [n for n in LONG_FIRST if n in names] + sorted(names - set(ends)) + [n for n in LAST if n in names]


def _write_class(dest: Path) -> dict[str, Path]:
    """Every case and every honest classmate as ``dest/<name>.ipynb``."""
    paths = hostile_corpus.write_corpus(dest)
    base = nbformat.read(S01.learner(), as_version=4)
    for case in NEW.values():
        nb = copy.deepcopy(base)
        for cell in nb.cells:
            if hostile_corpus.is_class_cell(cell):
                cell.source = case.cell
        paths[case.name] = dest / f"{case.name}.ipynb"
        nbformat.write(nb, paths[case.name])
    for name in HONEST:
        paths[name] = dest / f"{name}.ipynb"
        nbformat.write(variant_notebook("s01", WRONG_STATS if "wrong" in name else []), paths[name])
    return paths


def _tree_digest(top: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Path -> sha256 of every file below ``top`` (caches and version control left out)."""
    out = {}
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in (".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", *skip)]
        for f in files:
            p = Path(dirpath, f)
            if p.is_file() and not p.is_symlink():
                out[str(p.relative_to(top))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# Records the course's notebooks write beside themselves by design (git-ignored): the tests that run
# notebooks in place may write them while this file's grading runs, on another worker.
NOTEBOOK_RECORDS = {".pcw_progress.json", "07_serving_decision_record.json"}


def _repo_digest() -> dict[str, str]:
    """The grader's own files: its code, references, checks, tests, notebooks, top-level files."""
    out = {name: hashlib.sha256((ROOT / name).read_bytes()).hexdigest() for name in os.listdir(ROOT)
           if (ROOT / name).is_file()}
    for d in ("autograder", "solutions", "kernels", "tests", "notebooks", "data", "scripts"):
        out.update({f"{d}/{k}": v for k, v in _tree_digest(ROOT / d).items() if Path(k).name not in NOTEBOOK_RECORDS})
    return out


def _processes_using(marker: str) -> list[str]:
    """Processes whose command line, working dir or environment mentions ``marker`` (this run's temp dir)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            seen = [Path(f"/proc/{pid}/cmdline").read_bytes(), Path(f"/proc/{pid}/environ").read_bytes(),
                    os.readlink(f"/proc/{pid}/cwd").encode()]
        except OSError:
            continue
        if any(marker.encode() in s for s in seen):
            found.append(f"{pid}: {seen[0][:120]!r}")
    return found


def _planted() -> list[str]:
    """Marker files an attack leaves where it could write (never code a later run would import)."""
    import site
    import sysconfig

    places = [ROOT, ROOT / "autograder", ROOT / "autograder" / "__pycache__", Path("/tmp"), Path("/dev/shm"),
              Path(sysconfig.get_paths()["purelib"]), *map(Path, site.getsitepackages())]
    return [str(p) for d in places if d.is_dir() for p in d.iterdir() if attack_corpus.MARK in p.name]


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    grader_tmp = tmp_path_factory.mktemp("grader_tmp")
    out = tmp_path_factory.mktemp("reports")
    paths = _write_class(folder)
    digests = {n: hashlib.sha256(p.read_bytes()).hexdigest() for n, p in paths.items()}
    repo_before = _repo_digest()
    env = dict(os.environ, TMPDIR=str(grader_tmp), PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    files = [str(paths[name]) for name in handed_in_order(paths)]  # a batch of files: graded in this order
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", *files, "--format", "json", "--no-progress",
                           "--workers", "3", "--csv", str(out / "grades.csv"), "--summary-json", str(out / "summary.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=scaled(BOUND_S) + 60, env=env)
    seconds = time.monotonic() - start
    reports = {p.name: p.read_bytes() for p in out.iterdir()}
    time.sleep(scaled(LINGER_S))
    after = {"reports": {p.name: p.read_bytes() for p in out.iterdir()}, "processes": _processes_using(str(grader_tmp)),
             "repo": _repo_digest(), "grader_tmp": sorted(os.listdir(grader_tmp)), "planted": _planted(),
             "folder": sorted(p.name for p in folder.iterdir())}
    results = {sub["path"].rsplit("/", 1)[-1].removesuffix(".ipynb"): sub for sub in json.loads(proc.stdout)["submissions"]}
    return {"proc": proc, "seconds": seconds, "results": results, "paths": paths, "digests": digests, "reports": reports,
            "after": after, "repo_before": repo_before, "json": proc.stdout}


def test_hostile_corpus_has_at_least_20_kinds_and_40_new_attacks():
    assert len(OLD) >= 20 and len(NEW) >= 40 and not set(OLD) & set(NEW)


def test_the_order_handed_in_names_cases_of_the_corpus():
    assert set(LONG_FIRST + LAST) <= set(CASES)
    assert sorted(handed_in_order(CASES)) == sorted(CASES)


def test_attack_corpus_covers_every_mechanism_of_the_issue():
    for mechanism, names in MECHANISMS.items():
        assert names and all(n in NEW for n in names), mechanism


def test_hostile_cli_finishes_within_bound_and_reports_unreadable(cli_run):
    proc = cli_run["proc"]
    assert cli_run["seconds"] < scaled(BOUND_S)
    assert proc.returncode == 1  # two files are not gradable notebooks...
    assert "corrupt_notebook" in proc.stderr and "not_a_notebook" in proc.stderr
    assert len(cli_run["results"]) == len(CASES) + len(HONEST)  # ...and every other submission was still graded
    assert "grading under isolation:" in proc.stderr


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_cli_verdict(cli_run, name):
    case, sub, path = CASES[name], cli_run["results"][name], cli_run["paths"][name]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == cli_run["digests"][name], "submission was modified"
    _assert_verdict(case, sub)


def _assert_verdict(case: Case, sub: dict) -> None:
    if case.raw is not None:
        assert sub["error"] and not sub["todos"] and sub["score"] == 0
        return
    by_id = {t["id"]: t for t in sub["todos"] if t["id"] in ALL}  # the quiz is not what an attack is about
    earned = {t for t, r in by_id.items() if r["passed"]}
    assert earned == case.earns, {t: r["message"] for t, r in by_id.items()}
    for todo, phrase in case.reason.items():
        msg = by_id[todo]["message"]
        assert phrase in msg and "\n" not in msg and "Traceback" not in msg, msg
    quiz = sum(t["points"] for t in sub["todos"] if t["id"] not in ALL)
    assert sub["score"] == quiz + sum(r["max_points"] for t, r in by_id.items() if t in case.earns)


def test_honest_classmates_keep_their_exact_scores(cli_run):
    for name, earns in HONEST.items():
        sub = cli_run["results"][name]
        assert {t["id"] for t in sub["todos"] if t["passed"] and t["id"] in ALL} == earns, sub["todos"]
        assert hashlib.sha256(cli_run["paths"][name].read_bytes()).hexdigest() == cli_run["digests"][name]


def test_nothing_outside_the_scratch_dirs_changed(cli_run):
    after = cli_run["after"]
    assert after["repo"] == cli_run["repo_before"], "the grader's repository changed"
    assert after["planted"] == []
    assert after["folder"] == sorted(p.name for p in cli_run["paths"].values())
    assert after["reports"] == cli_run["reports"], "a report changed after grading ended"
    assert after["grader_tmp"] == [], "the grader left files behind"


def test_no_process_outlives_grading(cli_run):
    assert cli_run["after"]["processes"] == []


def _secret_guard() -> tuple[leaks.LeakGuard, list[str]]:
    """An oracle independent of the grader's own: the answer regions of every TODO and the hidden
    checks' bodies, minus the learner notebook's text; and the trusted phrases a message is composed
    of (names, inputs, hints, expected values), which :func:`_learner_part` cuts out first."""
    from autograder.core.i18n import text as in_lang
    from autograder.core.spec import load_stage
    from autograder.grading import display
    from autograder.grading.trusted import expected_outcomes

    text = S01.reference.read_text(encoding="utf-8")
    lines = text.splitlines()
    regions = []
    for target in ("PrefixCacheManager._normalize", "PrefixCacheManager.add_prefix", "PrefixCacheManager.match_prefix",
                   "PrefixCacheManager.split_prompt", "PrefixCacheManager.cache_stats"):
        b, e = solution_region(text, target)
        regions.append("\n".join(lines[b + 1:e]))
    stage = load_stage("s01", hidden=True)
    expected = expected_outcomes(stage)
    trusted = [in_lang(x, lang) for lang in ("en", "zh") for x in [*(c.hint for c in stage.checks), *(c.title for c in stage.checks),
                                                               *(t.title for t in stage.todos)] if in_lang(x, lang)]
    trusted += [in_lang(c.call, lang) for lang in ("en", "zh") for c in stage.checks if c.call]
    trusted += [display.show(expected[c.key]) for c in stage.checks if not c.hidden]
    public = [json.dumps(nbformat.read(S01.learner(), as_version=4)), S01.spec.read_text(encoding="utf-8")]
    public += [f"hidden check '{c.name}' failed | hint: check '{c.name}' failed | {c.name} | input: " for c in stage.checks]
    guard = leaks.LeakGuard(regions + [S01.hidden.read_text(encoding="utf-8")], public + trusted)
    return guard, sorted({t for t in trusted if len(t) >= 12}, key=len, reverse=True)


def _learner_part(text: str, trusted: list[str]) -> str:
    for phrase in trusted:
        text = text.replace(phrase, " | ")
    return text


def test_no_learner_visible_text_carries_reference_or_hidden_check_source(cli_run):
    guard, trusted = _secret_guard()
    for name, sub in cli_run["results"].items():
        texts = [sub.get("error") or "", *sub["warnings"]]
        for t in sub["todos"]:  # what passed says only the grader's own words
            texts += [t["message"], *(c["message"] for c in t["checks"] if not c["passed"])] if not t["passed"] else []
        texts = [_learner_part(x, trusted) for x in dict.fromkeys(texts)]
        assert not any(guard.leaks(x) for x in texts), (name, [x for x in texts if guard.leaks(x)][:1])
    for report in cli_run["reports"].values():
        assert not guard.leaks(_learner_part(report.decode("utf-8", "replace"), trusted))


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_hostile_nbgrader_gradebook_matches_cli(cli_run, tmp_path):
    results, paths = cli_run["results"], cli_run["paths"]
    course = tmp_path / "course"
    grader_tmp = tmp_path / "grader_tmp"
    grader_tmp.mkdir()
    subprocess.run([sys.executable, "-m", "autograder", "course", str(course), "--stage", "s01"], cwd=ROOT, check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", S01.notebook, "--create"], cwd=course,
                   check=True, capture_output=True)
    gradable = handed_in_order([*THROUGH_NBGRADER, *HONEST])
    student = {name: f"{k:02d}_{name}" for k, name in enumerate(gradable)}  # nbgrader takes students by name
    for name in gradable:
        d = course / "submitted" / student[name] / S01.notebook
        shutil.copytree(course / "release" / S01.notebook, d)
        shutil.copy(paths[name], d / S01.learner().name)
    kept = {d: _tree_digest(course / d) for d in ("source", "submitted", "release")}
    env = dict(os.environ, TMPDIR=str(grader_tmp), PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", S01.notebook], cwd=course, capture_output=True,
                       text=True, timeout=scaled(1500), env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "checksum" not in p.stderr  # untouched test cells are not reported as changed
    book = _gradebook(course, student)
    time.sleep(scaled(LINGER_S))
    assert _processes_using(str(grader_tmp)) == [] and os.listdir(grader_tmp) == []
    assert {d: _tree_digest(course / d) for d in kept} == kept, "the course's sources or submissions changed"
    assert _gradebook(course, student) == book, "the gradebook changed after grading ended"
    for name in gradable:
        cli = {t["id"]: t["points"] for t in results[name]["todos"]}
        if book[name] != cli:
            graded = nbformat.read(course / "autograded" / student[name] / S01.notebook / S01.learner().name, as_version=4)
            said = [o.get("evalue") or o.get("text") for c in graded.cells for o in c.get("outputs", [])]
            pytest.fail(f"{name}: gradebook {book[name]} != CLI {cli}; nbgrader outputs: {said}")


def _gradebook(course: Path, students: dict[str, str]) -> dict[str, dict[str, float]]:
    """Case name -> TODO id -> the points nbgrader's gradebook holds for the student ``students[name]``."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        out = {}
        for name, student in students.items():
            nb = gb.find_submission_notebook(S01.notebook, S01.notebook, student)
            out[name] = {g.name.replace("-", "."): g.auto_score for g in nb.grades if g.name.replace("-", ".") in ALL | {"s01.quiz"}}
        return out

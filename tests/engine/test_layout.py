"""The course's layout: every stage complete, no stage path built outside ``autograder/core/layout.py``,
the visibility rule, every stage's release importable, and a new stage made from the template alone."""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.core import layout
from tests.conftest import ROOT
from tests.support.machine import scaled


def test_every_stage_is_complete():
    missing = [line for s in layout.all_stages() for line in s.missing()]
    assert not missing, "\n".join(missing)


def test_stage_ids_are_discovered_from_files():
    assert layout.stage_ids() == sorted(layout.stage_ids())
    for s in layout.all_stages():
        assert s.spec.exists() and s.reference.exists() and s.source.exists(), s.id


# -- one place for paths ---------------------------------------------------------------------------
# A string literal that names a stage file or folder by hand (outside docstrings and comments).
_HAND_BUILT = re.compile(
    r"solutions/(src|hidden)|autograder/expected|mutants_s\d\d|mutants_s\{"
    r"|\b\d\d_[a-z_]+\.ipynb|\bs\d\d_[a-z_]+\.py|\{[a-z_.]*notebook\}\.ipynb")
_FOLDER = re.compile(r"^(solutions|notebooks|expected|hidden|src|checks)$")  # a path part joined with `/`


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _path_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    joined = {id(side) for node in ast.walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
              for side in (node.left, node.right)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if _HAND_BUILT.search(node.value) or (id(node) in joined and _FOLDER.match(node.value)):
                out.append(f"{layout.rel(path)}:{node.lineno}: {node.value[:60]!r}")
    return out


def test_no_stage_path_is_built_outside_the_layout_module():
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.py"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    # test_former_names.py names where the previous release kept a notebook: history, not today's layout
    allowed = {"autograder/core/layout.py", "tests/engine/test_layout.py", "tests/engine/test_former_names.py"}
    # notebook sources are prose for learners; mutation data quotes reference code
    quoting = {layout.rel(f.path(role)) for f in layout.all_stages() if f.slug is not None for role in ("source", "mutants")}
    found = [hit for f in files if f not in allowed and f not in quoting
             and (ROOT / f).exists() for hit in _path_literals(ROOT / f)]
    assert not found, "build these paths with autograder.core.layout:\n" + "\n".join(found)


# -- visibility -------------------------------------------------------------------------------------
@pytest.mark.parametrize("stage_id", layout.stage_ids())
def test_visible_modules_never_include_this_or_a_later_reference(stage_id):
    n = layout.stage_number(stage_id)
    visible = layout.visible_modules(stage_id)
    for s in layout.all_stages():
        if s.slug is None:
            continue
        if s.number >= n:
            assert s.reference_module not in visible, (s.id, sorted(visible))


def test_a_stage_sees_what_it_uses_and_nothing_built_for_later_stages():
    # stage 4 uses cache_sim, which imports stage 3's reference: visible there, never to stages 1-3
    assert "workbook.cache_sim" not in layout.visible_modules("s03")
    assert "workbook.cache_sim" in layout.visible_modules("s04")
    assert "solutions.s02_block_hash" in layout.visible_modules("s03")   # stage 3 builds on stage 2
    assert "solutions.s01_prefix_match" not in layout.visible_modules("s03")  # ...but not on stage 1


def test_a_reexported_reference_shows_only_to_the_stages_after_its_own():
    # workbook.block_pool re-exports stage 3's reference: given code for stage 4, never seen by stage 3
    assert "workbook.block_pool" in layout.visible_modules("s04")
    assert "workbook.block_pool" not in layout.visible_modules("s03")
    owner = {s.reference_module: s.number for s in layout.all_stages() if s.slug is not None}
    reexports = {name: owner[m] for name, path in layout.given_modules().items()
                 for m in layout._course_imports(path) if m in owner}
    assert set(reexports) >= {"workbook.block_hash", "workbook.block_pool", "workbook.eviction", "workbook.paged_prefill"}
    for sid in layout.stage_ids():
        visible = layout.visible_modules(sid)
        assert not [m for m, n in reexports.items() if m in visible and n >= layout.stage_number(sid)], sid


def test_from_package_import_counts_as_importing_the_module(tmp_path):
    src = tmp_path / "uses.py"
    src.write_text("from workbook import traces\nimport workbook.workload as W\nfrom solutions.s02_block_hash import x\n")
    assert layout._course_imports(src) == {"workbook.traces", "workbook.workload", "solutions.s02_block_hash"}


# -- releases ---------------------------------------------------------------------------------------
@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_release_of_every_stage_builds_and_imports(tmp_path):
    course = tmp_path / "course"
    env = dict(os.environ, PYTHONPATH="")
    subprocess.run([sys.executable, "-m", "autograder", "course", str(course)], cwd=ROOT, check=True,
                   capture_output=True, env=env)
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "--create", "*"], cwd=course, check=True,
                   capture_output=True, timeout=scaled(600))
    for sid in layout.built_stages():
        files = layout.stage_files(sid)
        release = course / "release" / files.notebook
        nb = json.loads((release / files.learner().name).read_text(encoding="utf-8"))
        shipped = {layout.rel(p.relative_to(release)) for p in release.rglob("*.py")}
        assert layout.rel(files.reference) not in shipped and layout.rel(files.hidden) not in shipped, sid
        # the release's setup and given cells run in a fresh interpreter from the release folder alone
        setup = [c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in nb["cells"]
                 if "setup" in c.get("metadata", {}).get("tags", [])]
        script = "\n".join(setup) + f"\nimport autograder.checks.{sid}\nprint('ok')"
        p = subprocess.run([sys.executable, "-c", script], cwd=release, capture_output=True, text=True, timeout=scaled(120),
                           env=env)
        assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (sid, p.stderr[-2000:])


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_a_stages_gpu_need_is_its_metadata_in_a_checkout_and_in_a_release(tmp_path):
    """The first cell reads ``gpu`` from the stage's ``stage.toml``: in the folder here, and where a
    release ships it (a learner's copy has no stage folders)."""
    import tomllib

    from autograder.learner.runtime import wants_gpu

    says = {f.id: tomllib.loads(f.meta.read_text(encoding="utf-8"))["gpu"] for f in layout.all_stages()}
    assert {sid for sid, gpu in says.items() if gpu} and {sid for sid, gpu in says.items() if not gpu}, says
    assert {sid: wants_gpu(sid) for sid in says} == says
    sid = max(says, key=lambda s: (says[s], s))  # a GPU stage: its release must say so too
    for src, dest in layout.release_files(sid):
        (tmp_path / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, tmp_path / dest)
    query = ("import json; from autograder.learner.runtime import wants_gpu; from autograder.core import layout; "
             "print(json.dumps({s: wants_gpu(s) for s in layout.stage_ids()}))")
    p = subprocess.run([sys.executable, "-c", query], cwd=tmp_path, capture_output=True, text=True, timeout=scaled(120),
                       env=dict(os.environ, PYTHONPATH=""))
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout) == says


def test_shipped_names_move_a_stage_folders_files_and_keep_the_others():
    """Many paths at once (a grading run's staging asks for a hundred) get what each role ships as."""
    f = layout.stage_files("s04")
    moved = [(f.folder / r.file, layout.rel(f.shipped(role))) for role, r in layout.ROLES.items() if r.shipped]
    asked = [p for p, _ in moved] + [layout.COURSE_TOML]
    assert layout.shipped_names(asked) == [*moved, (layout.COURSE_TOML, "course.toml")]
    assert [layout.shipped_as(p) for p in asked] == [name for _, name in layout.shipped_names(asked)]


def test_a_roles_shipped_path_is_where_its_module_name_points():
    """A copy without stage folders imports a stage's modules the ordinary way, by the same names."""
    f = layout.stage_files("s04")
    pairs = [(layout.rel(f.shipped(role)), f.module(role)) for role, r in layout.ROLES.items() if r.shipped and r.module]
    assert len(pairs) == 3 and all(path == module.replace(".", "/") + ".py" for path, module in pairs), pairs


def test_the_names_a_stage_is_imported_by_resolve_to_its_folder():
    """In a fresh interpreter, as a notebook of an earlier release imports them (``from
    solutions.s03_block_pool import BlockPool``), and as the engine and the tests do."""
    f = layout.stage_files("s03")
    names = {f.reference_module: f.reference, f.spec_module: f.spec, f.hidden_module: f.hidden,
             f.mutants_module: f.mutants, f.alternatives_module: f.alternatives}
    query = ("import importlib, json, sys; from solutions.s03_block_pool import BlockPool; "
             f"print(json.dumps({{n: importlib.import_module(n).__file__ for n in {sorted(names)!r}}}))")
    p = subprocess.run([sys.executable, "-c", query], cwd=ROOT, capture_output=True, text=True, timeout=scaled(120),
                       env=dict(os.environ, PYTHONPATH=""))
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout) == {n: str(path) for n, path in names.items()}
    assert all(path.parent == f.folder for path in names.values())


# -- a new stage from the template ------------------------------------------------------------------
def _copy_checkout(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for f in files:
        if (ROOT / f).is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dest / f)


def _digests(root: Path) -> dict[str, str]:
    return {layout.rel(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and not {"__pycache__", ".git"} & set(p.parts[len(root.parts):])}


@dataclass(frozen=True)
class NewStage:
    """A copy of the checkout, made a git work tree, in which ``new-stage`` wrote stage ``sid`` and
    ``autograder build`` then ran. Invariants: ``wrote`` is new-stage's own list of the files it wrote;
    ``changed`` is every file outside .git whose bytes the two commands changed (files they added are
    not in it); the stage is complete in ``repo`` whenever a test is handed it (a test that breaks it
    puts it back)."""

    repo: Path
    sid: str
    wrote: list[str]
    changed: set[str]
    env: dict[str, str]

    def run(self, *args: str, cwd: Path | None = None, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        return _run(args, cwd or self.repo, self.env, check, timeout)


def _run(args, cwd: Path, env: dict[str, str], check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    p = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=scaled(timeout), env=env)
    assert not check or p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return p


@pytest.fixture(scope="module")
def new_stage(tmp_path_factory) -> NewStage:
    """One new stage from the template for the module's tests of it (copying the checkout, new-stage and
    a build of the whole course are much of each test's work, and each test only reads what they made,
    so one copy serves both). The work tree is made before new-stage runs: some generic tests ask git
    which files exist, and the new stage's files are then untracked, as an author's would be."""
    repo = tmp_path_factory.mktemp("new-stage") / "repo"
    _copy_checkout(repo)
    sid = layout.stage_id(max(layout.stage_number(s) for s in layout.stage_ids()) + 1)
    env = dict(os.environ, PYTHONPATH="")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"]):
        _run(cmd, repo, env)
    before = _digests(repo)
    out = _run([sys.executable, "-m", "autograder", "new-stage", sid, "shared_prefix", "--title", "Shared prefixes"], repo, env).stdout
    _run([sys.executable, "-m", "autograder", "build"], repo, env)
    after = _digests(repo)
    return NewStage(repo, sid, wrote=sorted(line.removeprefix("wrote: ") for line in out.splitlines() if line.startswith("wrote: ")),
                    changed={f for f in before if after.get(f) != before[f]}, env=env)


@pytest.mark.slow
def test_a_new_stage_from_the_template_is_built_graded_and_released(new_stage, tmp_path):
    repo, sid, run = new_stage.repo, new_stage.sid, new_stage.run
    number = layout.stage_number(sid)
    query = (f"from autograder.core import layout; f = layout.stage_files({sid!r}); "
             "import json; print(json.dumps([str(f.instructor()), str(f.learner()), f.notebook, f.missing()]))")
    instructor, learner, notebook, missing = json.loads(run(sys.executable, "-c", query).stdout)
    assert missing == []

    changed = new_stage.changed
    assert changed == {layout.rel(layout.README), layout.rel(layout.README_ZH)}, changed  # only the generated tables
    readme = (repo / layout.rel(layout.README)).read_text(encoding="utf-8")
    assert "Shared prefixes" in readme and f"| {number} |" in readme

    graded = json.loads(run(sys.executable, "-m", "autograder", "grade", instructor, learner, "--format", "json").stdout)
    by_path = {s["path"]: s for s in graded["submissions"]}
    assert by_path[instructor]["score"] == by_path[instructor]["max_score"] > 0
    assert by_path[learner]["score"] == 0
    assert all("not implemented yet" in t["message"] for t in by_path[learner]["todos"])

    course = tmp_path / "course"
    run(sys.executable, "-m", "autograder", "course", str(course), "--stage", sid)
    run(sys.executable, "-m", "nbgrader", "generate_assignment", notebook, "--create", cwd=course)
    released = (course / "release" / notebook / Path(learner).name).read_text(encoding="utf-8")
    assert "raise NotImplementedError()" in released and "BEGIN HIDDEN TESTS" not in released

    # half-written: the completeness check names the missing file; the generic tests skip the stage
    mutants = repo / layout.rel(layout.StageFiles(sid, "shared_prefix").mutants)
    kept = mutants.read_bytes()
    mutants.unlink()
    try:
        probe = ("import sys; sys.path.insert(0, '.'); from tests.conftest import stage_params; "
                 f"p = [x for x in stage_params() if x.values[0] == {sid!r}][0]; print(p.marks[0].kwargs['reason'])")
        said = run(sys.executable, "-c", probe).stdout
    finally:
        mutants.write_bytes(kept)  # the module's other test of the new stage wants it whole
    assert f"{sid}: write {layout.rel(layout.StageFiles(sid, 'shared_prefix').mutants)}" in said


#: The generic tests: every stage's, parametrized by stage (or TODO) id, and the course-wide ones.
GENERIC_TESTS = ("tests/engine/test_layout.py", "tests/course/test_stages.py", "tests/course/test_mutants.py", "tests/course/test_hint_skeletons.py",
                 "tests/course/test_course_quality.py", "tests/course/test_learning_design.py", "tests/course/test_editions.py")


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the generic tests of a whole course, in a subprocess: 2.6 min quiet, 8.5 at load 15
def test_a_new_stage_passes_the_generic_tests_as_written(new_stage):
    """``new-stage`` writes one folder (and the reference tests), and the stage it writes passes every
    generic test at once: its own parametrized cases, and the course-wide tests with it in the course.
    Run in a copy of the checkout made a git work tree (some tests ask git which files exist)."""
    sid = new_stage.sid
    folder = layout.StageFiles(sid, "shared_prefix").folder
    assert new_stage.wrote == sorted([*(layout.rel(folder / r.file) for r in layout.ROLES.values()),
                                      layout.rel(layout.StageFiles(sid, "shared_prefix").reference_tests)])
    others = " or ".join(s for s in layout.stage_ids())
    # the new stage's every case (the generic files are slow-marked as wholes: they grade every stage),
    # and the fast cases that belong to no stage (-k matches marker names too)
    p = new_stage.run(sys.executable, "-m", "pytest", "-n", "0", "-v", "-p", "no:cacheprovider", "-m", "not browser",
                      "-k", f"{sid} or not ({others} or slow)", *GENERIC_TESTS, check=False, timeout=1500)
    assert p.returncode == 0, p.stdout[-6000:]
    own = [line for line in p.stdout.splitlines() if sid in line and " PASSED" in line]
    assert len(own) >= 20, p.stdout[-6000:]  # the new stage's own cases ran (TODOs, checks, wrong answers, fills)

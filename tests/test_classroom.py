"""The GitHub Classroom template: the workflow's shape, and every step's command run from a clean copy
of the template as the runner would run it (with the course already installed: the setup script
itself needs the network), against the instructor notebook (every step passes) and the unfilled
learner notebook (every step fails)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import yaml

from autograder.core import layout
from autograder.integrations.classroom import SETUP, WORKFLOW, needs_torch
from autograder.core.spec import load_stage
from autograder.grading.testing import variant_notebook
from tests.conftest import ROOT

S03 = layout.stage_files("s03")


def make_template(dest: Path, *args: str) -> Path:
    p = subprocess.run([sys.executable, "-m", "autograder", "classroom", *args, str(dest)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return dest


def grading_steps(template: Path) -> tuple[list[dict], dict]:
    wf = yaml.safe_load((template / WORKFLOW).read_text(encoding="utf-8"))
    steps = wf["jobs"]["run-autograding-tests"]["steps"]
    graders = [s for s in steps if s.get("uses") == "classroom-resources/autograding-command-grader@v1"]
    reporter = steps[-1]
    return graders, reporter


def run_step(template: Path, step: dict, home: Path) -> subprocess.CompletedProcess:
    """The step's command as the action runs it: a shell in the repository's root, PATH and HOME only."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PCW_PYTHON": sys.executable}
    return subprocess.run(["sh", "-c", step["with"]["command"]], cwd=template, env=env, capture_output=True, text=True,
                          timeout=step["with"]["timeout"] * 60)


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_workflow_has_one_step_per_todo_and_a_reporter(tmp_path, edition):
    t = make_template(tmp_path / "t", "s03", "--edition", edition)
    stage = load_stage("s03", hidden=False)
    graders, reporter = grading_steps(t)
    assert [s["with"]["max-score"] for s in graders] == [todo.points for todo in stage.todos]
    assert sum(s["with"]["max-score"] for s in graders) == stage.max_score
    for s, todo in zip(graders, stage.todos):
        w = s["with"]
        assert set(w) == {"test-name", "setup-command", "command", "timeout", "max-score"}
        assert todo.id in w["test-name"] and f"--todo {todo.id} " in w["command"] and w["timeout"] >= 1
        assert w["setup-command"] == f"sh {SETUP}" and "--exit-code" in w["command"] and " -I " in w["command"]
        assert "--grading all-or-nothing" in w["command"]  # never read from the student's repository
    assert reporter["uses"] == "classroom-resources/autograding-grading-reporter@v1"
    ids = [s["id"] for s in graders]
    assert reporter["with"]["runners"].split(",") == ids
    assert reporter["env"] == {f"{i.upper()}_RESULTS": f"${{{{steps.{i}.outputs.result}}}}" for i in ids}
    nb = nbformat.read(t / S03.learner(edition).name, as_version=4)
    learner = nbformat.read(S03.learner(edition), as_version=4)
    assert [c.source for c in nb.cells[1:]] == [c.source for c in learner.cells[1:]]
    readme = (t / "README.md").read_text(encoding="utf-8")
    assert ("Actions" in readme) and (("怎么评分" in readme) == (edition == "zh"))


def test_setup_script_installs_from_course_sources_only_and_keeps_torch(tmp_path):
    from autograder.core.course import load_course

    t = make_template(tmp_path / "t", "s03")
    script = (t / SETUP).read_text()
    assert subprocess.run(["sh", "-n", str(t / SETUP)], capture_output=True).returncode == 0
    for source in load_course().sources:
        assert source in script
    assert "--system-site-packages" in script and "torch" not in script.split("set -u", 1)[1]  # s03 needs no torch
    assert "index-url" not in script and "pypi" not in script.lower()
    six = (make_template(tmp_path / "t6", "s06") / SETUP).read_text()
    assert needs_torch("s06") and not needs_torch("s03")
    assert 'if ! "$V/bin/python" -c "import torch"' in six  # installed only where the runner has none
    # once set up, a later step's setup does nothing and says nothing
    home = tmp_path / "home"
    build = script.split("ready-", 1)[1].split('"', 1)[0]
    (home / ".pcw-classroom").mkdir(parents=True)
    (home / ".pcw-classroom" / f"ready-{build}").touch()
    p = subprocess.run(["sh", SETUP], cwd=t, env={"PATH": os.environ["PATH"], "HOME": str(home)},
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout == p.stderr == ""


@pytest.mark.slow
def test_every_step_passes_on_the_instructor_notebook_and_fails_on_the_stub(tmp_path):
    template = make_template(tmp_path / "template", "s03")
    graders, _ = grading_steps(template)
    name = S03.learner().name
    timings = []
    for label, source, want_pass in (("instructor", S03.instructor(), True), ("stub", S03.learner(), False)):
        repo = tmp_path / label
        shutil.copytree(template, repo)
        shutil.copy(source, repo / name)
        for step in graders:
            started = time.monotonic()
            p = run_step(repo, step, tmp_path / "home")
            timings.append(time.monotonic() - started)
            assert (p.returncode == 0) == want_pass, (step["id"], p.stdout, p.stderr)
            todo = step["with"]["command"].split("--todo ", 1)[1].split()[0]
            assert todo in p.stdout and "graded under isolation:" in p.stdout  # the learner's report
            assert ("✅" if want_pass else "not implemented yet") in p.stdout
    print(f"one Classroom step: {min(timings):.1f}-{max(timings):.1f} s")


def test_partial_credit_is_one_step_per_point(tmp_path):
    """Partial credit: step k of a TODO passes when the TODO earns k points or more; wrong answers
    that fail some checks earn the whole points of their share, rounded down."""
    template = make_template(tmp_path / "template", "s01", "--grading", "partial")
    graders, _ = grading_steps(template)
    stage = load_stage("s01", hidden=False)
    assert sum(s["with"]["max-score"] for s in graders) == stage.max_score
    assert all(s["with"]["max-score"] == 1 for s in graders)
    match = [s for s in graders if "--todo s01.match_prefix " in s["with"]["command"]]
    assert len(match) == stage.todo("s01.match_prefix").points
    repo = tmp_path / "repo"
    shutil.copytree(template, repo)
    wrong = [("is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix",
              "is_match = all(t in prompt for t in cached_prefix)")]
    nbformat.write(variant_notebook("s01", wrong), repo / layout.stage_files("s01").learner().name)
    from autograder.grading.grade import grade_paths

    earned = next(t for t in grade_paths([repo / layout.stage_files("s01").learner().name], grading="partial",
                                         only={str(repo / layout.stage_files("s01").learner().name): {"s01.match_prefix"}})[0].todos)
    assert 0 < earned.points < earned.max_points
    passed = [run_step(repo, s, tmp_path / "home").returncode == 0 for s in match]
    assert sum(passed) == int(earned.points) and passed == sorted(passed, reverse=True)


def test_a_renamed_notebook_fails_its_step_saying_why_in_both_languages(tmp_path):
    template = make_template(tmp_path / "template", "s03")
    step = grading_steps(template)[0][0]
    (template / S03.learner().name).rename(template / "my_work.ipynb")
    p = run_step(template, step, tmp_path / "home")
    assert p.returncode != 0
    assert f"{S03.learner().name} was not found" in p.stdout and f"没有找到 {S03.learner().name}" in p.stdout


def test_setup_script_grades_from_a_source_copy_that_holds_the_hidden_checks(tmp_path):
    """The course's wheel carries no hidden check, so a runner installs an editable copy of the source:
    from a git URL (pinned to a ref), an archive URL, or a folder. Run offline: a stand-in for the
    venv's python records what pip would install and runs everything else for real."""
    import dataclasses
    import functools
    import http.server
    import tarfile
    import threading

    from autograder.core.course import load_course
    from autograder.integrations.classroom import setup_script

    src = tmp_path / "course"  # the course as tracked (hidden checks included), in a git repository
    files = subprocess.run(["git", "ls-files", "-z", "autograder/__init__.py", "pyproject.toml", layout.rel(layout.HIDDEN)],
                           cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "course"], check=True)
    with tarfile.open(tmp_path / "course.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="course-main", filter=lambda t: None if "/.git" in t.name else t)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hidden = next(p.relative_to(ROOT) for p in sorted(layout.HIDDEN.glob("s*.py")))
    try:
        for source in (f"git+file://{src}@main", f"http://127.0.0.1:{server.server_port}/course.tar.gz", str(src)):
            home = tmp_path / f"home-{len(source)}"
            v = home / ".pcw-classroom"
            (v / "bin").mkdir(parents=True)
            (v / "bin" / "python").write_text(  # pip: say what it would install; anything else: the real python
                f'#!/bin/sh\nif [ "$2" = pip ]; then echo "pip $*" >> "{v}/pip.log"; exit 0; fi\n'
                f'[ "$2" = autograder ] && exit 0\nexec {sys.executable} "$@"\n')
            (v / "bin" / "python").chmod(0o755)
            script = tmp_path / "setup.sh"
            script.write_text(setup_script("s01", dataclasses.replace(load_course(), sources=("/nowhere/dead", source))))
            p = subprocess.run(["sh", str(script)], env={"PATH": os.environ["PATH"], "HOME": str(home)},
                               capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, (source, p.stdout, p.stderr)
            assert f"installing the course from: {source}" in p.stdout
            assert (v / "course" / hidden).is_file(), (source, p.stdout, p.stderr)
            assert f'-e {v}/course[grader]' in (v / "pip.log").read_text()
    finally:
        server.shutdown()

"""The GitHub Classroom template: the workflow's shape, and every step's command run from a clean copy
of the template as the runner would run it (with the course already installed: the setup script
itself needs the network), against the instructor notebook (every step passes) and the unfilled
learner notebook (every step fails)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import nbformat
import pytest
import yaml

from autograder.core import layout
from autograder.core.spec import load_stage
from autograder.integrations.classroom import SETUP, WORKFLOW, needs_torch, setup_command
from tests.conftest import ROOT
from tests.support.machine import scaled
from tests.support.variants import variant_notebook

pytestmark = pytest.mark.slow  # the fast lane leaves it out: runs GitHub Classroom's grading steps end to end

S03 = layout.stage_files("s03")


def make_template(dest: Path, *args: str) -> Path:
    p = subprocess.run([sys.executable, "-m", "autograder", "classroom", *args, str(dest)], cwd=ROOT,
                       capture_output=True, text=True, timeout=scaled(120))
    assert p.returncode == 0, p.stdout + p.stderr
    return dest


def grading_steps(template: Path) -> tuple[list[dict], dict]:
    wf = yaml.safe_load((template / WORKFLOW).read_text(encoding="utf-8"))
    steps = wf["jobs"]["run-autograding-tests"]["steps"]
    graders = [s for s in steps if s.get("uses") == "classroom-resources/autograding-command-grader@v1"]
    reporter = steps[-1]
    return graders, reporter


RUNNER_TEMP = "${{ runner.temp }}"


def installed_environment(runner_temp: Path, template: Path) -> Path:
    """What the first step's setup leaves in the job's temporary folder, made without the network: a
    virtual environment whose interpreter and packages are this test run's, marked ready. The course
    it imports is this checkout (first on its path), whatever copy the test run's environment installed."""
    venv = runner_temp / "pcw-classroom"
    if not venv.exists():
        (venv / "bin").mkdir(parents=True)
        shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
        (venv / "bin" / "python").symlink_to(sys.executable)
        packages = sysconfig.get_path("purelib")
        site = venv / Path(packages).relative_to(sys.prefix)
        site.mkdir(parents=True)
        (site / "pcw-checkout.pth").write_text(f"{ROOT}\n{packages}\n", encoding="utf-8")
    assert 'READY="$V/ready"' in (template / SETUP).read_text()
    (venv / "ready").touch()
    return venv


def run_step(template: Path, step: dict, runner_temp: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """The step as the runner and the action run it: ``${{ runner.temp }}`` filled in from the runner's
    context, then the setup-command and the command, each a shell in the repository's root with the
    step's environment (by default PATH and HOME only)."""
    installed_environment(runner_temp, template)
    env = env if env is not None else {"PATH": os.environ["PATH"], "HOME": str(runner_temp / "home")}
    setup, command = (step["with"][k].replace(RUNNER_TEMP, str(runner_temp)) for k in ("setup-command", "command"))
    ready = subprocess.run(["/bin/sh", "-c", setup], cwd=template, env=env, capture_output=True, text=True, timeout=scaled(60))
    assert ready.returncode == 0 and ready.stdout == ready.stderr == "", ready.stdout + ready.stderr  # found it ready
    return subprocess.run(["/bin/sh", "-c", command], cwd=template, env=env, capture_output=True, text=True,
                          timeout=step["with"]["timeout"] * 60)


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_workflow_has_one_step_per_todo_and_a_reporter(tmp_path, edition):
    t = make_template(tmp_path / "t", "s03", "--edition", edition)
    stage = load_stage("s03", hidden=False)
    graders, reporter = grading_steps(t)
    assert [s["with"]["max-score"] for s in graders] == [todo.points for todo in stage.todos]
    assert sum(s["with"]["max-score"] for s in graders) == stage.max_score
    for s, todo in zip(graders, stage.todos, strict=True):
        w = s["with"]
        assert set(w) == {"test-name", "setup-command", "command", "timeout", "max-score"}
        assert todo.id in w["test-name"] and f"--todo {todo.id} " in w["command"] and w["timeout"] >= 1
        assert w["setup-command"] == setup_command((t / SETUP).read_text(encoding="utf-8"))
        assert "--exit-code" in w["command"] and " -I " in w["command"] and f"--classroom {edition} " in w["command"]
        # nothing an earlier step can set decides what grades: the shell expands no variable, the grader
        # starts from an empty environment, the interpreter's folder comes from the runner's context
        assert "$" not in w["command"].replace(RUNNER_TEMP, "") and "$" not in w["setup-command"].replace(RUNNER_TEMP, "")
        assert w["command"].startswith("/usr/bin/env -i ") and "/usr/bin/sha256sum" in w["setup-command"]
        assert f'then /bin/sh {SETUP} "{RUNNER_TEMP}/pcw-classroom"; else ' in w["setup-command"]
        assert f'"{RUNNER_TEMP}/pcw-classroom/bin/python" -I -m autograder grade ' in w["command"]
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
    # once set up, a later step's setup does nothing and says nothing, whatever its PATH holds
    venv = installed_environment(tmp_path / "runner", t)
    p = subprocess.run(["/bin/sh", SETUP, str(venv)], cwd=t, env={"PATH": str(tmp_path / "nothing")},
                       capture_output=True, text=True, timeout=scaled(30))
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
            p = run_step(repo, step, tmp_path / "runner")
            timings.append(time.monotonic() - started)
            assert (p.returncode == 0) == want_pass, (step["id"], p.stdout, p.stderr)
            todo = step["with"]["command"].split("--todo ", 1)[1].split()[0]
            assert todo in p.stdout and "graded under isolation:" in p.stdout  # the learner's report
            assert ("✅" if want_pass else "not implemented yet") in p.stdout
    print(f"one Classroom step: {min(timings):.1f}-{max(timings):.1f} s")


def test_a_notebook_that_links_to_the_installed_answers_fails_every_step(tmp_path):
    """The student's repository holds, in place of the notebook, a link to the instructor notebook of
    the installed course (no edit of the workflow needed): it once passed every step."""
    template = make_template(tmp_path / "template", "s01")
    graders, _ = grading_steps(template)
    s01 = layout.stage_files("s01")
    (template / s01.learner().name).unlink()
    (template / s01.learner().name).symlink_to(s01.instructor())
    for step in graders:
        p = run_step(template, step, tmp_path / "runner")
        assert p.returncode != 0, (step["id"], p.stdout)
        assert "is a link (a symbolic link)" in p.stdout + p.stderr and "符号链接" in p.stdout + p.stderr


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
    passed = [run_step(repo, s, tmp_path / "runner").returncode == 0 for s in match]
    assert sum(passed) == int(earned.points) and passed == sorted(passed, reverse=True)


def test_a_renamed_notebook_fails_its_step_saying_why_in_both_languages(tmp_path):
    template = make_template(tmp_path / "template", "s03")
    step = grading_steps(template)[0][0]
    (template / S03.learner().name).rename(template / "my_work.ipynb")
    p = run_step(template, step, tmp_path / "runner")
    assert p.returncode != 0
    assert f"{S03.learner().name} was not found" in p.stdout and f"没有找到 {S03.learner().name}" in p.stdout


PLANTED = """#!/bin/sh
echo planted >> "{marker}"
exit 0
"""


def test_a_later_step_grades_honestly_whatever_an_earlier_steps_learner_code_set(tmp_path):
    """Learner code on a runner without isolation can append to $GITHUB_ENV and $GITHUB_PATH, which set
    every later step's environment: here an interpreter that always passes, named by PCW_PYTHON, found
    first on PATH (python, python3, sh, env) and in a planted $HOME/.pcw-classroom (the environment's
    old place), with PYTHONPATH, LD_LIBRARY_PATH and PCW_LANG to match. The step still runs the course's
    grader, which fails the blank notebook, and nothing planted runs."""
    template = make_template(tmp_path / "template", "s01")
    step = grading_steps(template)[0][0]
    marker = tmp_path / "planted-ran"
    planted = tmp_path / "planted"
    home = tmp_path / "home"
    for folder in (planted / "bin", home / ".pcw-classroom" / "bin"):
        folder.mkdir(parents=True)
        for name in ("python", "python3", "sh", "env"):
            (folder / name).write_text(PLANTED.format(marker=marker))
            (folder / name).chmod(0o755)
    (home / ".pcw-classroom" / "ready-anything").touch()
    poisoned = {"PATH": f"{planted / 'bin'}:{os.environ['PATH']}", "HOME": str(home),
                "PCW_PYTHON": str(planted / "bin" / "python"), "PYTHONPATH": str(planted),
                "LD_LIBRARY_PATH": str(planted), "PCW_LANG": "zh"}
    p = run_step(template, step, tmp_path / "runner", env=poisoned)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "graded under isolation:" in p.stdout and "not implemented yet" in p.stdout  # the real grader, in English
    assert not marker.exists()
    shutil.copy(layout.stage_files("s01").instructor(), template / layout.stage_files("s01").learner().name)
    assert run_step(template, step, tmp_path / "runner", env=poisoned).returncode == 0  # and passes a right answer
    assert not marker.exists()


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
    files = subprocess.run(["git", "ls-files", "-z", "autograder/__init__.py", "pyproject.toml",
                            layout.rel(layout.stage_files("s01").hidden)],
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
    hidden = layout.stage_files("s01").hidden.relative_to(ROOT)
    try:
        for source in (f"git+file://{src}@main", f"http://127.0.0.1:{server.server_port}/course.tar.gz", str(src)):
            home = tmp_path / f"home-{len(source)}"
            v = tmp_path / f"runner-{len(source)}" / "pcw-classroom"  # the folder the setup command names
            (v / "bin").mkdir(parents=True)
            (v / "bin" / "python").write_text(  # pip: say what it would install; anything else: the real python
                f'#!/bin/sh\nif [ "$2" = pip ]; then echo "pip $*" >> "{v}/pip.log"; exit 0; fi\n'
                f'[ "$2" = autograder ] && exit 0\nexec {sys.executable} "$@"\n')
            (v / "bin" / "python").chmod(0o755)
            script = tmp_path / "setup.sh"
            script.write_text(setup_script("s01", dataclasses.replace(load_course(), sources=("/nowhere/dead", source))))
            p = subprocess.run(["sh", str(script), str(v)], env={"PATH": os.environ["PATH"], "HOME": str(home)},
                               capture_output=True, text=True, timeout=scaled(120))
            assert p.returncode == 0, (source, p.stdout, p.stderr)
            assert f"installing the course from: {source}" in p.stdout
            assert (v / "course" / hidden).is_file(), (source, p.stdout, p.stderr)
            assert f'-e {v}/course[grader]' in (v / "pip.log").read_text()
    finally:
        server.shutdown()


def changed_workflow(repo: Path) -> str:
    """The first grading step made worth 100 points: an edit that keeps the grader in the step."""
    wf = (repo / WORKFLOW).read_text(encoding="utf-8")
    i = wf.index("max-score: ")
    return wf[:i] + "max-score: 100" + wf[wf.index("\n", i):]


@pytest.mark.parametrize("edit", ["workflow", "setup", "planted"])
def test_a_step_refuses_to_grade_when_a_grading_file_is_not_the_templates(tmp_path, edit):
    """The untouched template grades the instructor notebook (full marks); a student's edit of the
    workflow, of the setup script, or a file added beside them scores 0 with a message in both
    languages that names the file, however right the notebook is."""
    template = make_template(tmp_path / "template", "s01")
    s01 = layout.stage_files("s01")
    shutil.copy(s01.instructor(), template / s01.learner().name)
    runner = tmp_path / "runner"
    if edit == "workflow":  # untouched first: the same step grades
        assert run_step(template, grading_steps(template)[0][0], runner).returncode == 0
    repo = tmp_path / "repo"
    shutil.copytree(template, repo)
    marker = tmp_path / "edited-setup-ran"
    named = {"workflow": f"{WORKFLOW} (changed)", "setup": SETUP, "planted": ".github/classroom/check_s01.py (added)"}
    if edit == "workflow":
        (repo / WORKFLOW).write_text(changed_workflow(repo), encoding="utf-8")
    elif edit == "setup":  # a setup script that would plant a grader that always passes
        with (repo / SETUP).open("a", encoding="utf-8") as f:
            f.write(f'echo ran > "{marker}"\n')
    else:
        (repo / ".github" / "classroom" / "check_s01.py").write_text("def test_nothing():\n    pass\n")
    step = grading_steps(repo)[0][0]
    assert step["with"]["max-score"] == (100 if edit == "workflow" else load_stage("s01").todos[0].points)
    if edit == "setup":  # the setup-command checks the script's digest before it runs it
        installed_environment(runner, template)
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home")}
        setup = step["with"]["setup-command"].replace(RUNNER_TEMP, str(runner))
        p = subprocess.run(["/bin/sh", "-c", setup], cwd=repo, env=env, capture_output=True, text=True,
                           timeout=scaled(60))
        assert not marker.exists()
    else:
        p = run_step(repo, step, runner)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "Not graded (0 points)" in p.stdout and "未评分（0 分）" in p.stdout, p.stdout + p.stderr
    assert named[edit] in p.stdout and "graded under isolation:" not in p.stdout


def test_the_template_check_accepts_each_edition_and_a_token_secret_and_nothing_else(tmp_path):
    """What the grader compares a repository with is the template the installed course writes: either
    edition, with the token secret the workflow names; a template of the other edition or grading mode
    is refused."""
    from autograder.integrations.classroom import template_differences

    zh = make_template(tmp_path / "zh", "s01", "--edition", "zh", "--token-secret", "COURSE_READ")
    assert template_differences(zh, "s01", "zh", "all-or-nothing") == []
    assert [d.kind for d in template_differences(zh, "s01", "en", "all-or-nothing")] == ["changed"]
    assert [d.kind for d in template_differences(zh, "s01", "zh", "partial")] == ["changed"]
    (zh / SETUP).unlink()
    (zh / SETUP).symlink_to(tmp_path / "zh" / "README.md")
    assert [(d.path, d.kind) for d in template_differences(zh, "s01", "zh", "all-or-nothing")] == [(SETUP, "changed")]
    (zh / SETUP).unlink()
    assert [(d.path, d.kind) for d in template_differences(zh, "s01", "zh", "all-or-nothing")] == [(SETUP, "missing")]


def test_a_torch_stage_installs_torch_from_the_index_course_toml_names(tmp_path):
    """Stages that need torch install course.toml's torch version from course.toml's index (a CPU
    wheel index keeps a runner from downloading a CUDA build); the workflow's setup-command runs exactly
    that script (its digest), and without an index the script names no host but the course's sources.
    Run offline: a stand-in for the venv's python has no torch and records what pip would install."""
    import dataclasses
    import hashlib
    import re

    from autograder.core.course import load_course
    from autograder.integrations.classroom import setup_script, workflow

    assert needs_torch("s06")
    index = "https://wheels.example.invalid/cpu"  # a reserved name: no real host in the project
    course = dataclasses.replace(load_course(), sources=(str(tmp_path / "course"),), gradescope_torch_index=index)
    script = setup_script("s06", course)
    wf = workflow(load_stage("s06", hidden=False), layout.stage_files("s06").learner().name, "all-or-nothing",
                  "en", "", course)
    assert hashlib.sha256(script.encode()).hexdigest() in wf and f"--index-url '{index}'" in script
    plain = setup_script("s06", load_course())
    assert "index-url" not in plain
    urls = re.findall(r"[a-z+]+://[^\s'\"]+", plain)  # the sources, and the clone URLs taken from them
    assert urls and all(any(u in s for s in load_course().sources) for u in urls), urls
    (tmp_path / "course").mkdir()
    v = tmp_path / "runner" / "pcw-classroom"
    (v / "bin").mkdir(parents=True)
    (v / "bin" / "python").write_text(  # no torch here; pip: say what it would install
        f'#!/bin/sh\nif [ "$2" = pip ]; then echo "$*" >> "{v}/pip.log"; exit 0; fi\n'
        '[ "$1" = -c ] && exit 1\nexit 0\n')
    (v / "bin" / "python").chmod(0o755)
    (tmp_path / "setup.sh").write_text(script)
    p = subprocess.run(["sh", str(tmp_path / "setup.sh"), str(v)], env={"PATH": os.environ["PATH"]},
                       capture_output=True, text=True, timeout=scaled(60))
    assert p.returncode == 0, p.stdout + p.stderr
    pip = (v / "pip.log").read_text().splitlines()
    assert pip[-1].endswith(f"torch=={course.torch_version} --index-url {index}"), pip

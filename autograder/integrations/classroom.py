"""A GitHub Classroom assignment template for one stage: the learner notebook, a README for students
and ``.github/workflows/classroom.yml``, which grades each push in the student's own repository.

The workflow has one ``classroom-resources/autograding-command-grader@v1`` step per TODO (its points
as ``max-score``) and a final ``autograding-grading-reporter@v1`` step that collects their results.
The command grader gives a step all of its ``max-score`` when the command exits 0, else nothing, so:

- ``all-or-nothing``: a step per TODO; its command exits 0 when the TODO earns all its points;
- ``partial``: a step per point of each TODO (max-score 1); step ``k`` of a TODO passes when the TODO
  earns at least ``k`` points (``points * passed checks / checks``), so Classroom counts each TODO's
  partial score rounded down to whole points; the exact share is in every step's report.

Either way the max-scores add up to the stage's points. Every step's ``setup-command`` runs one
script that installs the course runtime and its grader into a virtual environment once per job
(later steps find it ready), from ``course.toml``'s ``[install]`` sources in order; the environment
sees the runner's own packages, so a runner that has torch keeps it, and torch is installed only for
a stage that needs it on a runner without one. The hidden checks are not in the course's wheel (a
learner installs that one), so the script fetches a copy of the course's source (a git clone, an
unpacked archive, or a local folder) and installs it editable: the grader then imports the hidden
checks from that copy, which lives in the environment's folder, outside the student's repository. The
grader runs isolated (``python -I``: nothing in the student's repository is importable) with the grading mode written into the command (never read
from the repository), under the best isolation the runner offers.

No step trusts what an earlier step's learner code could set. On a runner without kernel isolation
(``--no-require-isolation`` grades there too) learner code runs as the runner's user and can append
to ``$GITHUB_ENV`` and ``$GITHUB_PATH``, which set every later step's environment: ``PCW_PYTHON``,
``HOME``, ``PATH``, ``LD_LIBRARY_PATH`` and the rest. So a step reads nothing from its environment
that decides what grades: the environment's folder is named through the ``runner`` context
(``${{ runner.temp }}``, filled in by the runner; a step can set environment variables, never a
context), the grader starts from ``/usr/bin/env -i`` with a fixed ``PATH`` and locale and nothing else,
and the setup script is started as ``/bin/sh``. The setup script itself runs with the step's
environment, which it needs (proxies, the private course's credentials in ``$HOME``), but only the
first step's installs anything, before any learner code has run; a later step's finds the
environment ready and ends with shell built-ins alone. What this cannot stop on such a runner is
learner code changing files (the environment itself, the workflow's checkout): there, as everywhere
learner code runs unconfined, only kernel isolation is a boundary.

The student owns the repository, so the grading files in it (:data:`GRADING_FILES`, and whatever else
lies in :data:`GRADING_FOLDERS`) are checked before they are trusted, against a copy the student
cannot change: every step's setup-command runs the setup script only when its SHA-256 is the one the
workflow names, and the grader (installed from the instructor's sources, never from the student's
repository) writes the template again from that installed course and refuses to grade, with a score
of 0 and a message in both languages, unless the repository's grading files are byte for byte the
template's (:func:`template_differences`). The workflow names these checks itself, so they catch an
edit that leaves the grading steps in place (the setup script, a planted file, a step's score or
options); an edit that takes the grader out of a step cannot be caught from inside the workflow: that
is what GitHub Classroom's protected file paths report to the instructor.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import nbformat

from autograder.core import layout, pysource
from autograder.core.course import Course, load_course
from autograder.core.i18n import LANGUAGES, L, text
from autograder.core.spec import Stage, load_stage

#: The course's environment: in the job's temporary folder, named through the ``runner`` context, which
#: the runner fills in and no step can change (not ``$HOME``: an earlier step can set that).
VENV = "${{ runner.temp }}/pcw-classroom"
#: The interpreter every step's command grades with: a fixed path, never one from the environment.
PYTHON = f'"{VENV}/bin/python"'
#: The grader's whole environment: nothing a step inherits (``PATH``, ``HOME``, ``LD_LIBRARY_PATH``,
#: ``PCW_*``, the runner's file-command paths) reaches it; ``python -I`` ignores ``PYTHON*`` as well.
GRADER_ENV = "/usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8"
SETUP = ".github/classroom/setup.sh"
WORKFLOW = ".github/workflows/classroom.yml"
#: The template's files that decide what grades: each must be in the student's repository as the
#: template has it, or nothing is graded.
GRADING_FILES = (WORKFLOW, SETUP)
#: The folders of those files: any other file in them (another workflow, a planted script) is refused.
GRADING_FOLDERS = (".github/workflows", ".github/classroom")
#: What refuses to grade says: both languages, since the edition of a changed repository is unknown.
TEMPLATE_CHANGED = L(
    "Not graded (0 points): these files of this repository are not the assignment template's: {files}. "
    "They decide what grades, so nothing is graded until they are the template's again: restore them (for "
    "example `git checkout FIRST-COMMIT -- .github`, and delete any file you added there), commit and push. "
    "Your instructor sees this message in the grading log.",
    "未评分（0 分）：本仓库的这些文件与作业模板不一致：{files}。它们决定评分，所以在恢复成模板的样子之前不会评分："
    "请恢复它们（例如 `git checkout 第一个提交 -- .github`，并删掉你在那里新加的文件），再提交并 push。"
    "老师在评分日志里也能看到这条消息。")
_KIND = {"changed": L("{path} (changed)", "{path}（被修改）"), "missing": L("{path} (missing)", "{path}（缺失）"),
         "added": L("{path} (added)", "{path}（新增）")}


def setup_command(setup: str) -> str:
    """Every step's setup-command: it runs the setup script only when the script's SHA-256 is the one
    written here (the shell and ``sha256sum`` by their paths: ``PATH`` may have been set by an earlier
    step), else says why in both languages and fails the step."""
    digest = hashlib.sha256(setup.encode("utf-8")).hexdigest()
    say = " ".join(text(TEMPLATE_CHANGED, lang).format(files=SETUP) for lang in LANGUAGES)
    return (f"if echo '{digest}  {SETUP}' | /usr/bin/sha256sum --check --status; "
            f'then /bin/sh {SETUP} "{VENV}"; else echo {_sh_quote(say)}; exit 1; fi')


@dataclass(frozen=True)
class Step:
    """One command-grader step. Invariants: ``id`` is a valid step id and, upper-cased with
    ``_RESULTS``, a valid environment name; ``max_score`` is a whole number (the action reads an int)."""

    id: str
    test_name: str
    todo: str
    command: str
    max_score: int
    timeout_min: int


def needs_torch(stage_id: str) -> bool:
    """Whether grading the stage imports torch: its preload, or an import (through ``kernels`` and
    the ``solutions`` modules it may see) in its notebook source or reference."""
    stage = load_stage(stage_id, hidden=False)
    if any(m.split(".")[0] == "torch" for m in stage.preload):
        return True
    files = layout.stage_files(stage_id)
    todo = [files.source, files.reference, *layout.visible_modules(stage_id).values()]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        for node in ast.walk(pysource.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            for name in names:
                if name.split(".")[0] == "torch":
                    return True
                if name.split(".")[0] == "kernels":
                    parts = name.split(".")[1:] or ["__init__"]
                    todo.append(layout.KERNELS / Path(*parts).with_suffix(".py"))
    return False


def _fetch_command(source: str) -> str:
    """The sh command that puts a copy of the course's source from ``source`` (a course.toml
    ``[install]`` source: ``git+URL[@ref]``, an archive URL, or a local path) into ``$V/course``."""
    if source.startswith("git+"):
        url, ref = source[4:], ""
        path = urlparse(url).path
        if "@" in path:  # git+https://host/repo.git@main: the ref follows the repository's path
            url, ref = url[: len(url) - len(path)] + path.rsplit("@", 1)[0], path.rsplit("@", 1)[1]
        return f"fetch_git {_sh_quote(url)} {_sh_quote(ref)}"
    if "://" in source:
        return f"fetch_archive {_sh_quote(source)}"
    return f"fetch_path {_sh_quote(source)}"


_FETCH = r"""# A copy of the course's source in $V/course (the hidden checks ship only there, never in the wheel).
fetch_git() {  # URL REF: a shallow clone of a branch or tag, else a full clone checked out at REF
  rm -rf "$V/course"
  if [ -z "$2" ]; then git clone -q --depth 1 "$1" "$V/course"; return; fi
  git clone -q --depth 1 --branch "$2" "$1" "$V/course" 2>/dev/null && return
  rm -rf "$V/course"
  git clone -q "$1" "$V/course" && git -C "$V/course" checkout -q "$2"
}
fetch_archive() {  # URL of a .zip or .tar.gz whose one top folder (or root) holds pyproject.toml
  rm -rf "$V/course" "$V/unpack"
  "$V/bin/python" - "$1" "$V/unpack" <<'PY' && mv "$(dirname "$(ls -d "$V"/unpack/pyproject.toml "$V"/unpack/*/pyproject.toml | head -n 1)")" "$V/course"
import pathlib, shutil, sys, tempfile, urllib.request
url, dest = sys.argv[1], pathlib.Path(sys.argv[2])
suffix = ".zip" if url.split("?")[0].endswith(".zip") else ".tar.gz"
with tempfile.NamedTemporaryFile(suffix=suffix) as f, urllib.request.urlopen(url, timeout=300) as r:
    shutil.copyfileobj(r, f)
    f.flush()
    shutil.unpack_archive(f.name, dest)
PY
}
fetch_path() {  # a folder on this machine
  rm -rf "$V/course" && cp -R "$1" "$V/course"
}
"""


def setup_script(stage_id: str, course: Course) -> str:
    """The POSIX sh script every step's setup-command runs: install once, then only say it is ready.
    Nothing in it changes with a stage's checks or words (the folder is the job's own, emptied for each
    job): a fixed check leaves the template, and so every student's copy of it, valid."""
    tries = "\n".join(f"try_source {_sh_quote(s)} {_fetch_command(s)}" for s in course.sources)
    torch = ""
    if needs_torch(stage_id):
        index = f" --index-url {_sh_quote(course.gradescope_torch_index)}" if course.gradescope_torch_index else ""
        torch = (f'if ! "$V/bin/python" -c "import torch" 2>/dev/null; then  # the runner\'s own torch is kept\n'
                 f'  "$V/bin/python" -m pip install -q --disable-pip-version-check "torch=={course.torch_version}"{index} '
                 f'|| exit 1\n'
                 f"fi\n")
    return f"""#!/bin/sh
# Written by `python -m autograder classroom`: installs the course runtime and its grader once per
# job into the folder its argument names (the first grading step does it; the others find it ready,
# using shell built-ins only). The environment sees the runner's own packages, so a runner with
# torch keeps it. Sources: course.toml's [install].
set -u
V="${{1:?usage: setup.sh ENVIRONMENT-FOLDER}}"
READY="$V/ready"
[ -f "$READY" ] && exit 0
if [ ! -x "$V/bin/python" ]; then
  python3 -m venv --system-site-packages "$V" || exit 1
fi
{_FETCH}ok=0
try_source() {{  # SOURCE FETCH ARGS...: fetch a copy from SOURCE, then install it editable with the grader
  [ "$ok" = 1 ] && return
  src="$1"; shift
  echo "installing the course from: $src"
  if "$@" && "$V/bin/python" -m pip install -q --disable-pip-version-check -e "$V/course[grader]"; then ok=1; fi
}}
{tries}
if [ "$ok" != 1 ]; then
  echo "could not install the course from any source (see above)"
  exit 1
fi
{torch}"$V/bin/python" -I -m autograder isolation || true  # which isolation grading gets on this runner
touch "$READY"
"""


def _sh_quote(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


_POINT = L("point {k}/{p}", "第 {k}/{p} 分")


def steps(stage: Stage, notebook: str, grading: str, lang: str, timeout_min: int) -> list[Step]:
    """The grading steps of ``stage`` for the student's ``notebook`` (see the module's docstring).
    Each grades only if the repository's grading files are the template's (``--classroom``)."""
    out = []
    for t in stage.todos:
        base = f"{GRADER_ENV} {PYTHON} -I -m autograder grade {_sh_quote(notebook)} --stage {stage.id} --todo {t.id} " \
               f"--format learner --classroom {lang} " \
               f"--exit-code --grading {grading} --no-require-isolation --no-progress"
        name = f"TODO {t.number} · {t.id} · {text(t.title, lang)}"
        sid = t.id.replace(".", "_").replace("__", "_")
        if grading == "partial":
            for k in range(1, t.points + 1):
                out.append(Step(f"{sid}_p{k}", f"{name} · {text(_POINT, lang).format(k=k, p=t.points)}", t.id,
                                f"{base} --min-points {k}", 1, timeout_min))
        else:
            out.append(Step(sid, name, t.id, base, t.points, timeout_min))
    return out


def _q(s: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one)."""
    return json.dumps(s, ensure_ascii=False)


def workflow(stage: Stage, notebook: str, grading: str, lang: str, token_secret: str = "",
             course: Course | None = None) -> str:
    """``.github/workflows/classroom.yml`` for ``stage``."""
    course = course or load_course()
    setup = setup_command(setup_script(stage.id, course))
    torch = needs_torch(stage.id)
    # minutes per step: the first step's setup installs the course (and torch where needed); grading
    # one TODO takes seconds, bounded by the stage's time limit per child
    timeout = (15 if torch else 8) + math.ceil(stage.time_limit_s * 2 / 60)
    all_steps = steps(stage, notebook, grading, lang, timeout)
    lines = [
        f"# Written by `python -m autograder classroom {stage.id}` ({grading}): one grading step per "
        + ("point of each TODO" if grading == "partial" else "TODO") + ".",
        "name: Autograding",
        "'on':",
        "  - push",
        "  - repository_dispatch",
        "permissions:",
        "  checks: write",
        "  actions: read",
        "  contents: read",
        "jobs:",
        "  run-autograding-tests:",
        "    runs-on: ubuntu-latest",
        "    if: github.actor != 'github-classroom[bot]'",
        "    steps:",
        "      - name: Checkout code",
        "        uses: actions/checkout@v4",
    ]
    if token_secret:
        host = urlparse(course.sources[0].removeprefix("git+")).netloc or "github.com"
        lines += [
            "      - name: Read access to the course's private repository",
            f"        run: git config --global url.\"https://x-access-token:${{TOKEN}}@{host}/\".insteadOf \"https://{host}/\"",
            "        env:",
            f"          TOKEN: \"${{{{ secrets.{token_secret} }}}}\"",
        ]
    for s in all_steps:
        lines += [
            f"      - name: {_q(s.test_name)}",
            f"        id: {s.id}",
            "        uses: classroom-resources/autograding-command-grader@v1",
            "        with:",
            f"          test-name: {_q(s.test_name)}",
            f"          setup-command: {_q(setup)}",
            f"          command: {_q(s.command)}",
            f"          timeout: {s.timeout_min}",
            f"          max-score: {s.max_score}",
        ]
    lines += [
        "      - name: Autograding Reporter",
        "        uses: classroom-resources/autograding-grading-reporter@v1",
        "        env:",
        *[f"          {s.id.upper()}_RESULTS: \"${{{{steps.{s.id}.outputs.result}}}}\"" for s in all_steps],
        "        with:",
        f"          runners: {','.join(s.id for s in all_steps)}",
    ]
    return "\n".join(lines) + "\n"


_README = L(
    """# {title}

Your copy of stage {number} of the prefix-cache workbook: `{notebook}`.

## How to work

1. Open `{notebook}` in Jupyter (your computer, a Codespace, or Colab: *File ▸ Open notebook ▸ GitHub*,
   then your repository). Its first cell installs the course runtime if it is not there yet.
2. Fill in each TODO. Under each one, `check("sNN.name")` runs its visible checks at once, with the
   input, expected vs got, and a hint; `hint("sNN.name")` gives hints in tiers (free); `progress()`
   shows where you stand in the whole course.
3. Save the notebook, then commit and push it (keep its name: grading looks for `{notebook}`).

## How grading happens

Every push runs the workflow in `.github/workflows/classroom.yml` on GitHub Actions, in your
repository. {steps} It runs the same checks as `check()`, plus hidden checks of the same TODO: they
name themselves and give a hint when they fail, never their inputs. Your code runs in a confined
process with the course's code standing in for your other TODOs, so a slip in one TODO costs only
that TODO's points. Only the cells with TODOs are graded.

{mode}

## How to read the result

Open the **Actions** tab, then the latest run of **Autograding**. Each grading step's log is the
report for its TODO, in the same words as `check()`: ✅ or ❌ per check, the points it earned, and
the hint of a failed check. The last step (**Autograding Reporter**) adds up the points; the total
is what your instructor sees. Fix, push again, and a new run grades the new version.

Do not change the files under `.github/`: they grade your work. Each grading step first checks them
against the assignment's template and, if they differ, grades nothing (0 points) and says which files
differ. Every change to them also stays in your repository's history, which your instructor can read.
""",
    """# {title}

这是 prefix-cache workbook 第 {number} 阶段的作业仓库：`{notebook}`。

## 怎么做

1. 用 Jupyter 打开 `{notebook}`（本地电脑、Codespace，或者 Colab：*文件 ▸ 打开笔记本 ▸ GitHub*，再选你的仓库）。
   它的第一个单元会在需要时安装课程运行时。
2. 逐个完成 TODO。每个 TODO 下面的 `check("sNN.name")` 立即运行它的可见检查，给出输入、期望值与实际值，
   以及一条提示；`hint("sNN.name")` 分层给提示（不扣分）；`progress()` 显示你在整门课里的进度。
3. 保存 notebook，提交（commit）并推送（push）。不要改文件名：评分只找 `{notebook}`。

## 怎么评分

每次 push 都会在你的仓库里用 GitHub Actions 运行 `.github/workflows/classroom.yml`。{steps}
它运行的检查与 `check()` 相同，另外还有同一 TODO 的隐藏检查：失败时只报名字和提示，不显示输入。
你的代码在一个受限的进程里运行，其余 TODO 用课程自带的参考实现代替，所以一个 TODO 出错只丢这一个 TODO 的分。
只有含 TODO 的单元会被评分。

{mode}

## 怎么看结果

打开 **Actions** 标签页，点开最近一次 **Autograding** 运行。每个评分步骤的日志就是该 TODO 的报告，
用的是和 `check()` 一样的说法：每个检查的 ✅ 或 ❌、得到的分数、未通过的检查的提示。
最后一步（**Autograding Reporter**）汇总分数，这个总分就是老师看到的分数。改好后再 push，新的运行会重新评分。

不要修改 `.github/` 下的文件：评分靠的就是它们。每个评分步骤都会先把它们和作业模板对比，不一致就不评分（0 分），
并说明是哪些文件不一致。对它们的每一处改动也都留在你仓库的提交历史里，老师可以查看。
""")
_STEPS = {
    "all-or-nothing": L("It has one step per TODO, worth that TODO's points ({total} in all): a step earns "
                        "them when every check of its TODO passes, hidden ones included.",
                        "每个 TODO 对应一个步骤，分值就是该 TODO 的分数（共 {total} 分）：该 TODO 的所有检查"
                        "（包括隐藏检查）都通过，这一步才得分。"),
    "partial": L("It has one step per point of each TODO, worth 1 point each ({total} in all): a TODO earns "
                 "its points in proportion to the checks it passes, hidden ones included, and step k of a TODO "
                 "passes when that share reaches k points (so Classroom rounds each TODO down to whole points; "
                 "the exact share is in the step's report).",
                 "每个 TODO 的每一分对应一个步骤，每步 1 分（共 {total} 分）：一个 TODO 按通过的检查（包括隐藏检查）"
                 "所占比例得分，得分达到 k 分时它的第 k 步通过（所以 Classroom 里每个 TODO 的分数向下取整到整数分；"
                 "精确的得分写在该步骤的报告里）。"),
}
_TABLE_HEAD = L("| TODO | what you write | points |\n|---|---|---|", "| TODO | 你要写的 | 分值 |\n|---|---|---|")
_NOTICE = L("*Your assignment copy: work in this notebook and push it; `README.md` says how it is graded.*",
            "*这是你的作业副本：在这个 notebook 里完成并 push；评分方式见 `README.md`。*")


def student_readme(stage: Stage, notebook: str, grading: str, lang: str) -> str:
    rows = "\n".join(f"| {t.number} · `{t.id}` | {text(t.title, lang)} | {t.points} |" for t in stage.todos)
    mode = text(_TABLE_HEAD, lang) + "\n" + rows
    return text(_README, lang).format(title=text(stage.title, lang), number=stage.number, notebook=notebook,
                                      steps=text(_STEPS[grading], lang).format(total=stage.max_score), mode=mode)


def write_template(stage_id: str, dest: Path, lang: str = "en", grading: str | None = None,
                   token_secret: str = "") -> list[Path]:
    """Write the assignment template repository for ``stage_id`` in edition ``lang`` into ``dest``;
    returns the files written. ``grading`` overrides course.toml's mode."""
    course = load_course()
    grading = grading or course.grading
    files = layout.stage_files(stage_id)
    if lang not in files.languages:
        raise ValueError(f"{stage_id} has no {lang} edition (editions: {', '.join(files.languages)})")
    if not files.learner(lang).is_file():
        raise FileNotFoundError(f"{layout.rel(files.learner(lang))} is missing: run `python -m autograder build`")
    notebook = files.learner(lang).name
    dest.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(files.learner(lang), as_version=4)
    if nb.cells and nb.cells[0].cell_type == "markdown" and "](" in nb.cells[0].source:
        nb.cells[0].source = text(_NOTICE, lang)  # the badges open the course's copy, not the student's
    written = {dest / notebook: None}
    nbformat.write(nb, dest / notebook)
    for name, body in template_files(stage_id, lang, grading, token_secret, course).items():
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8", newline="\n")  # the digests are of these bytes, on any OS
        written[path] = None
    return list(written)


def template_files(stage_id: str, lang: str, grading: str, token_secret: str = "",
                   course: Course | None = None) -> dict[str, str]:
    """The template's files besides the notebook, by path in the repository: what
    :func:`write_template` writes, and what :func:`template_differences` compares against."""
    course = course or load_course()
    stage = load_stage(stage_id, hidden=False)
    notebook = layout.stage_files(stage_id).learner(lang).name
    return {
        "README.md": student_readme(stage, notebook, grading, lang),
        WORKFLOW: workflow(stage, notebook, grading, lang, token_secret, course),
        SETUP: setup_script(stage_id, course),
        ".gitignore": ".ipynb_checkpoints/\n__pycache__/\n.pcw_progress.json\n",
    }


@dataclass(frozen=True)
class TemplateDifference:
    """A grading file of a student's repository that is not the template's. Invariants: ``path`` is
    POSIX and relative to the repository's root, inside :data:`GRADING_FOLDERS`; ``kind`` is
    ``changed`` (other bytes, or not a regular file), ``missing`` or ``added``."""

    path: str
    kind: str

    def describe(self, lang: str) -> str:
        return text(_KIND[self.kind], lang).format(path=self.path)


def template_differences(repo: Path, stage_id: str, lang: str, grading: str,
                         course: Course | None = None) -> list[TemplateDifference]:
    """How ``repo``'s grading files differ from those of the template this (installed) course writes
    for the stage, edition and grading mode; empty when they are the template's. The token secret's
    name is the one the repository's workflow names, if any: it is the instructor's choice, and a
    workflow that names another is still compared byte for byte."""
    course = course or load_course()
    body = _read_regular(repo / WORKFLOW)
    named = re.findall(r"secrets\.([A-Za-z_][A-Za-z0-9_]*)", body.decode("utf-8", "replace")) if body else []
    fewest: list[TemplateDifference] | None = None
    for secret in dict.fromkeys([*named, ""]):
        expected = template_files(stage_id, lang, grading, secret, course)
        found = _compare(repo, {p: expected[p].encode("utf-8") for p in GRADING_FILES})
        if not found:
            return []
        fewest = found if fewest is None or len(found) < len(fewest) else fewest
    return fewest or []  # what differs from the template nearest the repository's


def _read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file (never through a link), or None."""
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def _compare(repo: Path, expected: dict[str, bytes]) -> list[TemplateDifference]:
    out = []
    for name, body in expected.items():
        path = repo / name
        if not path.exists() and not path.is_symlink():
            out.append(TemplateDifference(name, "missing"))
        elif _read_regular(path) != body:
            out.append(TemplateDifference(name, "changed"))
    for folder in GRADING_FOLDERS:
        top = repo / folder
        if top.is_symlink() or top.parent.is_symlink():  # the folder or .github itself a link
            out.append(TemplateDifference(folder, "changed"))
            continue
        for path in sorted(top.rglob("*")) if top.is_dir() else []:
            name = path.relative_to(repo).as_posix()
            if name not in expected and (path.is_symlink() or not path.is_dir()):
                out.append(TemplateDifference(name, "added"))
    return out


def refusal(differences: list[TemplateDifference]) -> str:
    """What a step refusing to grade prints: in both languages, each naming the files."""
    return "\n".join(text(TEMPLATE_CHANGED, lang).format(files=", ".join(d.describe(lang) for d in differences))
                     for lang in LANGUAGES)

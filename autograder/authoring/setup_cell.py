"""The first code cell of every notebook: find or install the course runtime, then start it.

The cell must work before the course is importable (a fresh Colab or ModelScope runtime), so its
bootstrap is plain Python written into the notebook by the build: use the course if it is next to the
notebook or installed; otherwise ``pip install`` it from the sources in ``course.toml``, in order, each
with a timeout and no prompt, saying which one it uses. When every source fails it prints what failed
and the manual way out, in the notebook's language, without a traceback. It never touches torch.
"""
from __future__ import annotations

import json

from autograder.core.course import Course
from autograder.core.i18n import L, text

_BOOT = '''\
# {comment}
import importlib, importlib.util, os, pathlib, subprocess, sys

COURSE_SOURCES = {sources}
if importlib.util.find_spec("autograder") is None:
    _here = pathlib.Path.cwd().resolve()
    _root = next((d for d in (_here, *_here.parents) if (d / "autograder" / "__main__.py").is_file()), None)
    if _root is not None:
        sys.path.insert(0, str(_root))
    else:
        _env = dict(os.environ, GIT_TERMINAL_PROMPT="0", PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        for _i, _src in enumerate(COURSE_SOURCES, 1):
            print({trying}.format(i=_i, n=len(COURSE_SOURCES), src=_src, t={timeout}), flush=True)
            try:
                _r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--progress-bar", "off", _src],
                                    env=_env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout={timeout})
                _why = "" if _r.returncode == 0 else (_r.stderr.strip().splitlines() or ["pip failed"])[-1][:200]
            except subprocess.TimeoutExpired:
                _why = {timed_out}.format(t={timeout})
            if not _why:
                importlib.invalidate_caches()
                break
            print("   " + _why, flush=True)
        else:
            class CourseNotInstalled(Exception):
                def _render_traceback_(self):  # {no_traceback}
                    return []
            print({manual}, file=sys.stderr)
            raise CourseNotInstalled()
from autograder.runtime import start
start(stage="{stage}", build="{build}", lang="{lang}", update={update})
# {progress}
from autograder import check, demo, hint, progress, reveal, set_language, tr
'''

_COMMENT = L("Course setup: use the course next to this notebook or installed; otherwise install it with pip\n"
             "# (it never touches torch), then check that it matches this notebook.",
             "课程环境：优先使用笔记本旁边或已安装的课程；否则用 pip 安装（不会动 torch），\n"
             "# 然后检查它与本笔记本是否匹配。")
_PROGRESS = L("progress() shows every stage's TODOs with their last check() result (kept on this machine only).",
              "progress() 列出各阶段每个 TODO 最近一次 check() 的结果（只保存在本机）。")
_TRYING = L("installing the course runtime from source {i}/{n}: {src} (at most {t} s)",
            "正在从第 {i}/{n} 个来源安装课程运行时：{src}（最多 {t} 秒）")
_NO_TRACEBACK = L("Jupyter shows the message above, not a traceback", "Jupyter 只显示上面的说明，不显示 traceback")
_TIMED_OUT = L("no answer within {t} s", "{t} 秒内没有响应")
_MANUAL = L("Could not install the course runtime from any source (see the lines above).\n"
            "The manual way: download {archive} on your own computer, upload the file next to this notebook,\n"
            "run this one line in a cell, then run this cell again:\n"
            "    %pip install ./{file}",
            "所有来源都没能安装课程运行时（原因见上面几行）。\n"
            "手动办法：在自己电脑上下载 {archive}，把文件上传到本笔记本所在的目录，\n"
            "在一个单元里运行下面这一行，然后重新运行本单元：\n"
            "    %pip install ./{file}")


def setup_cell(course: Course, lang: str, stage: str, build: str) -> str:
    """The first cell of ``stage``'s notebook in ``lang``, pinned to the stage's ``build`` id."""
    archive = course.archive or course.sources[0]
    manual = text(_MANUAL, lang).format(archive=archive, file=archive.rsplit("/", 1)[-1] or "course.zip")
    # one update line per source: the main one first, then the mirrors (e.g. one reachable from mainland China)
    update = [f"%pip install --force-reinstall --no-deps {src}" for src in course.sources]

    def lit(x: object) -> str:
        return json.dumps(x, ensure_ascii=False)

    return _BOOT.format(comment=text(_COMMENT, lang), sources=lit(list(course.sources)), trying=lit(text(_TRYING, lang)),
                        timed_out=lit(text(_TIMED_OUT, lang)), timeout=course.timeout_s, manual=lit(manual),
                        stage=stage, build=build, lang=lang, update=lit(update),
                        no_traceback=text(_NO_TRACEBACK, lang), progress=text(_PROGRESS, lang))

"""The first code cell of every notebook: make the course runtime importable, in the edition's language."""
from __future__ import annotations

from autograder.course import Course
from autograder.i18n import L, text

_TEMPLATE = '''\
# {comment}
import importlib.util, pathlib, subprocess, sys

REPO_URL = "{clone_url}"
if importlib.util.find_spec("autograder") is None:
    here = pathlib.Path.cwd().resolve()
    root = next((d for d in (here, *here.parents) if (d / "autograder" / "spec.py").exists()), None)
    if root is None:
        root = pathlib.Path("{name}").resolve()
        if not root.exists():
            subprocess.run(["git", "clone", "--depth", "1", "--branch", "{branch}", REPO_URL, str(root)], check=True)
    sys.path.insert(0, str(root))

from autograder import check, demo, hint, reveal, set_language, tr
set_language("{lang}")
'''

_COMMENT = L("Course setup: make the course's helper package importable (found next to this notebook, or\n"
             "# fetched once with git on Colab or ModelScope), then import check(), hint() and friends.",
             "课程环境：让课程的辅助包可以导入（本地就在笔记本旁边；在 Colab 或 ModelScope 上会用 git\n"
             "# 拉取一次），然后导入 check()、hint() 等工具。")


_FONT = """
from autograder.fonts import use_cjk_font
use_cjk_font()  # 图表里的中文需要 CJK 字体（Colab 和 ModelScope 默认没有）
"""


def setup_cell(course: Course, lang: str) -> str:
    cell = _TEMPLATE.format(comment=text(_COMMENT, lang), clone_url=course.raw_clone_url, branch=course.branch,
                            name=course.name, lang=lang)
    return cell + (_FONT if lang == "zh" else "")

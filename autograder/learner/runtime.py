"""What the first cell does once the course runtime is importable: check that it matches the notebook,
say where it runs and what hardware it sees, and set the notebook's language.

A notebook records the build id of its stage (:func:`stage_build_id`, written by ``python -m
autograder build``); a runtime whose own id differs is stale (or newer): the learner is told so and
given the one line that updates it. Nothing here installs anything, and nothing touches torch.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from autograder.core import layout
from autograder.core.i18n import L, set_language, text

MIN_PYTHON = (3, 11)  # pyproject's requires-python (tomllib)


def wants_gpu(stage_id: str) -> bool:
    """Whether the stage's demos run a model, which a GPU makes faster: ``gpu`` in its ``stage.toml``
    (:attr:`autograder.core.layout.StageFiles.meta`). Read here, in the first cell, before anything of the
    stage is imported; a stage without the file, or a Python without ``tomllib`` (the first cell has just
    said it is too old), is taken as not needing one."""
    try:
        import tomllib

        meta = layout.stage_files(stage_id).meta
        return meta.is_file() and tomllib.loads(meta.read_text(encoding="utf-8")).get("gpu") is True
    except (ImportError, LookupError, OSError, ValueError):
        return False


def stage_build_id(stage_id: str, checks: dict | None = None) -> str:
    """A fingerprint of what ``check()`` needs for a stage: its spec and its public expected values
    (``checks``, or the generated file's), in a form that no machine can change (:func:`_canonical`)."""
    files = layout.stage_files(stage_id)
    h = hashlib.sha256(files.spec.read_bytes().replace(b"\r\n", b"\n"))
    if files.text.exists():  # the stage's words: what check() says
        h.update(files.text.read_bytes().replace(b"\r\n", b"\n"))
    if checks is None and files.expected.exists():
        checks = json.loads(files.expected.read_text(encoding="utf-8"))["checks"]
    h.update(json.dumps(_canonical(checks or {}), sort_keys=True).encode())
    return h.hexdigest()[:12]


def _canonical(x: object) -> object:
    """``x`` without what may differ between two correct builds of the same sources.

    Finite floats become a marker: they come from the machine's floating-point arithmetic (thread
    count, vector width), and any rounding of them flips somewhere; every float a check compares is
    compared within a tolerance anyway, and the probes that produce them are part of the hashed spec.
    Tagged dicts and sets (see :mod:`autograder.core.data`) are put in one order, since their order carries
    no meaning for a check.
    """
    if isinstance(x, float):
        return "<float>"
    if isinstance(x, list):
        return [_canonical(v) for v in x]
    if isinstance(x, dict):
        if set(x) == {"__dict__"} and isinstance(x["__dict__"], list):
            pairs = [_canonical(p) for p in x["__dict__"]]
            return {"__dict__": sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))}
        if set(x) == {"__set__"} and isinstance(x["__set__"], list):
            return {"__set__": sorted((_canonical(v) for v in x["__set__"]), key=lambda v: json.dumps(v, sort_keys=True))}
        return {k: _canonical(v) for k, v in x.items()}
    return x


def where() -> str:
    """Colab, ModelScope, Binder or local: where this kernel runs."""
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "Colab"
    if any(k.startswith("MODELSCOPE") for k in os.environ) or Path("/mnt/workspace").is_dir():
        return "ModelScope"
    if os.environ.get("BINDER_LAUNCH_HOST") or os.environ.get("BINDER_REPO_URL"):
        return "Binder"
    return "local"


def gpu_name() -> str | None:
    """The visible CUDA GPU, or None; asks torch only if it is installed (never installs it)."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


HOW_TO_GPU = {
    "Colab": L("Runtime ▸ Change runtime type ▸ a GPU, then run this cell again.",
               "菜单「代码执行程序 ▸ 更改运行时类型」选一个 GPU，然后重新运行本单元。"),
    "ModelScope": L("start the notebook instance with a GPU (ModelScope offers a free GPU instance), then run this cell again.",
                    "用 GPU 规格重新启动 Notebook 实例（ModelScope 提供免费的 GPU 实例），然后重新运行本单元。"),
}


def start(stage: str, build: str, lang: str, update: str | list[str]) -> dict:
    """Called by a notebook's first cell: language, Python version, runtime match, where, GPU.

    Returns what it found (for tests); prints a few lines for the learner.

    [zh]
    由笔记本的第一个单元调用：设置语言，检查 Python 版本、运行时是否与笔记本匹配、运行环境和 GPU。

    返回它查到的信息（供测试使用）；为学习者打印几行说明。
    """
    set_language(lang)
    from autograder.learner.released import show_released_sources

    show_released_sources(lang)  # tracebacks through the course's code read as this edition does
    found: dict[str, Any] = {"where": where(), "python": sys.version.split()[0], "stale": False, "gpu": None}
    if os.environ.get("PCW_GRADING"):
        return found  # a grading child only needs the language
    from autograder.learner.docstrings import localize_docstrings

    localize_docstrings(lang)  # help() on the course's given code reads in this edition's language
    if sys.version_info < MIN_PYTHON:
        print(text(L("⚠️ This course needs Python {v}+; this kernel runs {have}.",
                     "⚠️ 本课程需要 Python {v} 及以上；当前内核是 {have}。")).format(
            v=".".join(map(str, MIN_PYTHON)), have=found["python"]))
    mine = stage_build_id(stage) if layout.stage_files(stage).spec.exists() else None
    if mine != build:
        found["stale"] = True
        lines = [update] if isinstance(update, str) else list(update)
        print(text(L("⚠️ The course runtime here ({mine}) does not match this notebook ({build}): checks may "
                     "compare against other expected values. Update it with one line, then restart the kernel:\n"
                     "    {update}",
                     "⚠️ 这里的课程运行时（{mine}）与本笔记本（{build}）不一致：检查可能对照的是别的期望值。"
                     "用下面这一行更新，然后重启内核：\n    {update}")).format(mine=mine or "?", build=build, update=lines[0]))
        for mirror in lines[1:]:  # e.g. a mirror reachable from mainland China, where the main host may be slow
            print(text(L("    or, from a mirror: {line}", "    或者从镜像更新：{line}")).format(line=mirror))
    gpu_stage = wants_gpu(stage)
    if gpu_stage:
        found["gpu"] = gpu_name()
    gpu = found["gpu"] or text(L("no GPU", "没有 GPU"))
    print(text(L("✅ course ready · running on {w} · Python {p} · {g}", "✅ 课程环境就绪 · 运行于 {w} · Python {p} · {g}")).format(
        w=found["where"], p=found["python"], g=gpu))
    if gpu_stage and found["gpu"] is None:
        how = HOW_TO_GPU.get(found["where"])
        print(text(L("   This stage runs on the CPU too (slower).", "   本阶段在 CPU 上也能跑（慢一些）。"))
              + (" " + text(L("For a GPU: ", "想用 GPU：")) + text(how) if how else ""))
    if lang == "zh":
        from autograder.learner.fonts import use_cjk_font

        use_cjk_font()  # Chinese plot labels need a CJK font (fresh Colab/ModelScope runtimes have none)
    return found

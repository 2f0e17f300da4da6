"""``help()`` on the course's given code reads in the notebook's language: every name a Chinese notebook
imports from the course's packages (and each public member of it) has a Chinese docstring part that
holds no English sentence (:func:`tests.course.test_chinese_edition.english_sentences`), and the first
cell's ``start()`` makes ``__doc__`` that part (:mod:`autograder.learner.docstrings`)."""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
import types

import pytest

from autograder.core import layout
from autograder.learner.docstrings import COURSE_PACKAGES, MARK, doc_part, localize_module
from tests.course.test_chinese_edition import english_sentences


def imported_names() -> list[tuple[str, str | None]]:
    """``(module, name)`` of every course name a built Chinese notebook imports, given code and the
    helpers it calls (``check``, ``hint``, ``pad``...; ``name`` None: the module itself, as ``import
    workbook.serving_workloads as W``)."""
    found: set[tuple[str, str | None]] = set()
    for sid in layout.built_stages():
        files = layout.stage_files(sid)
        if "zh" not in files.languages:
            continue
        for cell in json.loads(files.learner("zh").read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and (
                        node.module.split(".")[0] in COURSE_PACKAGES or node.module.split(".")[0] == "autograder"):
                    found |= {(node.module, a.name) for a in node.names}
                elif isinstance(node, ast.Import):
                    found |= {(a.name, None) for a in node.names if a.name.split(".")[0] in COURSE_PACKAGES}
    return sorted(found, key=lambda x: (x[0], x[1] or ""))


def _resolve(module: str, name: str | None) -> object:
    mod = importlib.import_module(module)
    if name is None:
        return mod
    return getattr(mod, name) if hasattr(mod, name) else importlib.import_module(f"{module}.{name}")


def shown_docs(obj: object, label: str) -> list[tuple[str, str]]:
    """``(label, docstring)`` of what ``help(obj)`` shows that the course wrote: ``obj``'s own, its
    public methods and properties (a class), its public functions and classes (a module)."""
    out = []
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj):
        out.append((label, obj.__doc__ or ""))
    if inspect.isclass(obj):
        for key, member in vars(obj).items():
            func = member.__func__ if isinstance(member, (classmethod, staticmethod)) else \
                member.fget if isinstance(member, property) else member
            if not key.startswith("_") and inspect.isfunction(func) and func.__doc__:
                out.append((f"{label}.{key}", func.__doc__))
    if inspect.ismodule(obj):
        for key, member in vars(obj).items():
            if not key.startswith("_") and getattr(member, "__module__", None) == obj.__name__ and \
                    (inspect.isfunction(member) or inspect.isclass(member)):
                out += shown_docs(member, f"{label}.{key}")
    return out


def _course_object(obj: object) -> object | None:
    """What ``help()`` shows the course's words for: ``obj`` itself (a class, function or module of the
    course), the class of an instance of one of its classes (``TTFT_CONFIG``), else nothing (a type
    alias such as ``PagedAttention``: typing's own text)."""
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj):
        return obj
    cls = type(obj)
    return cls if cls.__module__.split(".")[0] in COURSE_PACKAGES else None


def _cases() -> list:
    cases = []
    for module, name in imported_names():
        if _course_object(_resolve(module, name)) is None:
            continue
        label = f"{module}:{name}" if name else module
        cases.append(pytest.param(module, name, id=label))
    return cases


@pytest.mark.parametrize("module,name", _cases())
def test_help_on_a_given_name_reads_in_chinese(module, name):
    obj = _course_object(_resolve(module, name))
    english = []
    for label, doc in shown_docs(obj, f"{module}:{name}"):
        if not doc.strip():
            continue
        if MARK not in doc:
            english.append(f"{label}: no Chinese part")
            continue
        zh = doc_part(doc, "zh")
        english += [f"{label}: {s}" for s in english_sentences(zh)]
    assert not english, "\n".join(english[:12])


def test_the_given_names_are_found():
    names = imported_names()
    assert ("kernels.flops", "prefill_flops") in names and ("kernels.calibration", "Calibration") in names
    assert ("autograder", "check") in names and ("autograder", "hint") in names
    assert len(names) > 40


def test_a_docstring_gives_each_language_its_part():
    doc = "One line.\n\n    More English.\n\n    [zh]\n    一行。\n\n    更多中文。\n    "
    assert doc_part(doc, "en") == "One line.\n\nMore English."
    assert doc_part(doc, "zh") == "一行。\n\n更多中文。"
    assert doc_part("Only English.", "zh") == "Only English."


def test_localizing_a_module_sets_each_docstring_and_can_switch_back():
    module = types.ModuleType("kernels_fake_for_test")
    exec(compile('"""Mod.\n\n[zh]\n模块。\n"""\n'
                 'class C:\n    """Cls.\n\n    [zh]\n    类。\n    """\n'
                 '    def m(self):\n        """Meth.\n\n        [zh]\n        方法。\n        """\n'
                 '    @property\n    def p(self):\n        """Prop.\n\n        [zh]\n        属性。\n        """\n'
                 'def f():\n    """Fun.\n\n    [zh]\n    函数。\n    """\n', "<fake>", "exec"), vars(module))
    localize_module(module, "zh")
    assert (module.__doc__, module.C.__doc__, module.C.m.__doc__, module.f.__doc__) == ("模块。", "类。", "方法。", "函数。")
    assert inspect.getdoc(module.C.p) == "属性。"
    localize_module(module, "en")
    assert (module.__doc__, module.C.__doc__, module.C.m.__doc__, module.f.__doc__) == ("Mod.", "Cls.", "Meth.", "Fun.")


@pytest.mark.slow  # a fresh interpreter: the first cell's start() in a kernel, then imports after it
def test_start_makes_help_chinese_for_modules_imported_before_and_after():
    code = """
import os, sys, pydoc
os.environ.pop("PCW_GRADING", None)
import kernels.config
from autograder.learner.runtime import start
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    start("s07", "0", "zh", "pip")
from kernels.flops import prefill_flops          # imported after start()
from kernels.config import ModelConfig           # imported before it
text = pydoc.render_doc(prefill_flops, renderer=pydoc.plaintext) + pydoc.render_doc(ModelConfig, renderer=pydoc.plaintext)
print(text)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=layout.ROOT,
                         env={**__import__("os").environ, "PYTHONPATH": str(layout.ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "已复用" in out.stdout and "模型的形状" in out.stdout, out.stdout[:2000]
    assert "FLOPs of prefilling" not in out.stdout and "Shape of the model" not in out.stdout
    assert MARK not in out.stdout

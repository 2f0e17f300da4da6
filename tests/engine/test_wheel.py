"""The learner's wheel: what ``pip install`` of the course puts on a learner's machine. It carries the
runtime, the course's library ``workbook``, the kernels, the data and what a notebook and the
grader's setup cells read, and no hidden check: neither their code nor their words."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from autograder.core import layout
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # building the wheel takes about 20 s on 2 cores


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> list[str]:
    """The names inside a wheel built from this checkout's tracked and new files, in a clean copy (a
    ``build/`` folder left by an earlier build would otherwise slip its stale files into the wheel)."""
    src = tmp_path_factory.mktemp("src")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
                       capture_output=True, text=True, timeout=scaled(600))
    assert p.returncode == 0, p.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    return zipfile.ZipFile(wheel).namelist()


def test_the_wheel_holds_the_library_the_runtime_kernels_and_data(wheel_names):
    names = set(wheel_names)
    assert {f"workbook/{p.name}" for p in layout.given_modules().values()} <= names
    assert {"workbook/__init__.py", "solutions/__init__.py", "autograder/__init__.py", "kernels/__init__.py"} <= names
    assert {layout.shipped_as(p) for s in layout.all_stages() for p in (s.spec, s.text)} <= names  # public checks and words
    assert {f"pcw_data/{p.name}" for p in layout.DATA.glob("*.jsonl")} <= names
    # later stages' given code imports earlier references by module name; the grader reads setup cells
    assert {layout.shipped_as(s.reference) for s in layout.all_stages() if s.slug} <= names
    assert {layout.rel(s.instructor()) for s in layout.all_stages() if s.slug} <= names


def test_the_wheel_holds_no_hidden_check_nor_its_words(wheel_names):
    hidden = layout.rel(layout.HIDDEN) + "/"
    assert not [n for n in wheel_names if n.startswith(hidden)]
    for s in layout.all_stages():
        for p in (s.hidden, s.hidden_text):
            assert layout.shipped_as(p) not in wheel_names and layout.rel(p) not in wheel_names

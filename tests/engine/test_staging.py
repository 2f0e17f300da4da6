"""A grading run's workspace (autograder/grading/staging.py): what children may import, their scratch dirs and
users, the twins-blocked copies, and that nothing is left behind."""
from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys
from pathlib import Path

from autograder.core import layout
from autograder.core.pysource import object_source
from autograder.core.spec import load_stage
from autograder.grading.staging import GradingRun
from autograder.isolation import levels as isolation


def test_staging_holds_the_runtime_but_never_answers_or_tests():
    with GradingRun.open(isolation.select("best")) as run:
        files = {str(p.relative_to(run.staging)) for p in run.staging.rglob("*") if p.is_file()}
        assert "autograder/child/sandbox.py" in files and "autograder/isolation/confine.py" in files
        assert any(f.startswith("kernels/") for f in files)
        assert not any(f.startswith(("solutions", "workbook", "tests")) or f.endswith(".json") for f in files)
        assert all(stat.S_IMODE(p.stat().st_mode) in (0o644, 0o755) for p in run.staging.rglob("*"))
        assert all(str(p) in run.hidden for p in (layout.SOLUTIONS, layout.WORKBOOK, layout.TESTS))


def test_each_child_gets_its_own_scratch_dir_and_user():
    iso = isolation.select("best")
    with GradingRun.open(iso) as run:
        (a, uid_a), (b, uid_b) = run.scratch(), run.scratch()
        assert a != b and os.path.dirname(a) == os.path.dirname(b) == run.scratch_root
        assert os.path.dirname(run.scratch_root) == run.base
        assert stat.S_IMODE(os.stat(a).st_mode) == 0o700
        if isinstance(isolation.child_user(iso), tuple):  # a root grader: one unprivileged uid per child
            assert uid_a != uid_b and os.stat(a).st_uid == uid_a and os.stat(b).st_uid == uid_b
            assert uid_a >= 0x40000000
        else:
            assert uid_a is uid_b is None


def test_a_todo_with_twins_imports_a_copy_where_they_are_blocked():
    stage = load_stage("s06", hidden=False)
    with GradingRun.open(isolation.select("best")) as run:
        assert run.staging_for(stage.todo("s06.suffix_positions")) == run.staging
        copy = run.staging_for(stage.todo("s06.paged_attention"))
        assert copy != run.staging and run.staging_for(stage.todo("s06.paged_attention")) == copy
        text = (copy / "kernels" / "paged_attention.py").read_text()
        original = (run.staging / "kernels" / "paged_attention.py").read_text()
        body = object_source(original, "paged_attention_torch")
        assert "def paged_attention_torch(*args, **kwargs):" in text and body not in text
        assert object_source(original, "causal_attention") in text  # only the twin is blocked
        # the blocked copy runs as blocked even from its byte-compiled cache (checked by the source's hash)
        probe = ("import sys; sys.path[0:0] = [sys.argv[1]]; import kernels.paged_attention as m, inspect; "
                 "print(m.__cached__, inspect.signature(m.paged_attention_torch))")
        out = subprocess.run([sys.executable, "-I", "-B", "-c", probe, str(copy)], capture_output=True, text=True,
                             env={"PYTHONDONTWRITEBYTECODE": "1"}, check=True).stdout
        assert "(*args, **kwargs)" in out


def test_staged_modules_are_byte_compiled_so_no_child_compiles_them():
    with GradingRun.open(isolation.select("best")) as run:
        sources = sorted(run.staging.rglob("*.py"))
        for src in sources:
            cached = Path(importlib.util.cache_from_source(str(src)))
            assert cached.is_file(), src
            flags = int.from_bytes(cached.read_bytes()[4:8], "little")
            assert flags == 0b11, f"{cached}: not checked by the source's hash"  # hash-based, checked
            assert stat.S_IMODE(cached.stat().st_mode) == 0o644


def test_closing_removes_everything_even_what_a_child_locked():
    run = GradingRun.open(isolation.select("best"))
    scratch, _ = run.scratch()
    os.makedirs(os.path.join(scratch, "a", "b"))
    os.chmod(os.path.join(scratch, "a", "b"), 0)
    os.chmod(os.path.join(scratch, "a"), 0)
    run.close()
    assert not os.path.exists(run.base)

"""No TODO can be passed by calling given code that already does it (see tests/support/delegation.py).

Per stage, every visible function and method (kernels, earlier stages' references, given modules,
the given parts of the stage's own module) is tried as the whole body of every TODO; whatever passes
all of a TODO's checks must be declared as that TODO's twin, and a declared twin must fail its TODO
when graded (blocked in the grading child) and in the notebook's ``check()``.
"""
from __future__ import annotations

import types

import pytest

from autograder.child import twins
from autograder.core import layout
from autograder.core.pysource import solution_region
from autograder.core.spec import load_stage
from autograder.learner.inline import run_check
from tests.conftest import built_stages
from tests.support.delegation import Delegation, Judge, screen
from tests.support.variants import grade_variant

_TORCH = 'importlib.import_module("torch")'
# Delegations that need a line of glue, which the generic screen does not write: each is a twin too.
WITH_GLUE = [
    Delegation("s06.slot_mapping", "kernels.paged_attention:_context_slots",
               f'importlib.import_module("kernels.paged_attention")._context_slots({_TORCH}.as_tensor(block_table, '
               f"dtype={_TORCH}.long, device=positions.device), len(block_table) * block_size, block_size)[positions]"),
    Delegation("s06.paged_attention", "kernels.paged_attention:paged_attention_torch",
               'importlib.import_module("kernels.prefill").pool_attention(importlib.import_module('
               '"kernels.paged_attention").paged_attention_torch)(q, pool, layer, block_table, offset)'),
]


def _declared(stage_id: str) -> dict[str, tuple[str, ...]]:
    return {t.id: t.twins for t in load_stage(stage_id, hidden=False).todos}


def test_every_declared_twin_is_a_function_of_a_module_learners_can_import():
    for sid in layout.stage_ids():
        for todo, names in _declared(sid).items():
            for name in names:
                try:
                    obj = twins.resolve(name)
                except twins.Unavailable:
                    continue  # e.g. Triton on a machine without it
                assert twins._functions(obj), (todo, name)


@pytest.mark.slow  # traces every twin of a stage
@pytest.mark.parametrize("stage_id", built_stages())
def test_stage_has_no_undeclared_twin(stage_id):
    """Whatever given code passes a TODO on its own is declared as that TODO's twin."""
    declared = _declared(stage_id)
    found = {todo: {d.twin for d in ds} for todo, ds in screen(stage_id).items()}
    undeclared = {todo: sorted(names - set(declared[todo])) for todo, names in found.items() if names - set(declared[todo])}
    assert not undeclared, f"given code passes these TODOs on its own; declare it as Todo(twins=...): {undeclared}"


@pytest.mark.slow  # grades glue around each kernel
@pytest.mark.parametrize("d", WITH_GLUE, ids=[d.todo for d in WITH_GLUE])
def test_delegation_with_glue_passes_unless_blocked(d):
    """The screen's blind spot covered by hand: these pass when the twin is not blocked (so they are
    real twins), and fail once it is."""
    stage = load_stage(d.todo.split(".")[0], hidden=True)
    todo = stage.todo(d.todo)
    judge = Judge(stage, todo)
    assert d.twin in todo.twins
    assert judge.passes(d) and not judge.passes(d, blocked=todo.twins)


def _edit(stage_id: str, d: Delegation) -> tuple[str, str]:
    """The text edit that turns the reference's solution region of ``d.todo`` into the delegation."""
    text = layout.stage_files(stage_id).reference.read_text(encoding="utf-8")
    todo = load_stage(stage_id, hidden=False).todo(d.todo)
    lines = text.splitlines()
    begin, end = solution_region(text, todo.target)
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    return "\n".join(lines[begin:end + 1]) + "\n", f"{indent}import importlib\n{indent}return {d.expr}\n"


# As graded: TODO 4 reloads the kernels module first (a fresh copy of a blocked function's module
# must not bring the function back: the child's copy of the file has it blocked too).
GRADED = [WITH_GLUE[0], Delegation(
    "s06.paged_attention", "kernels.paged_attention:paged_attention_torch",
    'importlib.import_module("kernels.prefill").pool_attention(importlib.reload(importlib.import_module('
    '"kernels.paged_attention")).paged_attention_torch)(q, pool, layer, block_table, offset)')]


@pytest.mark.slow  # grades a notebook on the real grader
def test_s06_delegating_to_the_kernels_earns_nothing_when_graded():
    """One notebook delegating TODO 2 and TODO 4 to the kernels: both fail, naming the blocked twin,
    and every other TODO keeps its points."""
    result = grade_variant("s06", [_edit("s06", d) for d in GRADED])
    by_id = {t.id: t for t in result.todos}
    for d in GRADED:
        t = by_id[d.todo]
        said = " ".join([t.message, *(c.message for c in t.checks)])
        assert not t.passed and t.points == 0 and "must be your own code" in said, said
    assert {t.id for t in result.todos if t.passed} == {t for t in by_id if t not in {d.todo for d in GRADED}}


def test_inline_check_blocks_twins_while_it_probes_and_restores_them():
    import kernels.paged_attention as pa
    from kernels.prefill import pool_attention

    ns = types.SimpleNamespace(**vars(__import__(layout.stage_files("s06").reference_module, fromlist=["_"])))
    ns.paged_attention = lambda q, pool, layer, block_table, offset: pool_attention(pa.paged_attention_torch)(
        q, pool, layer, block_table, offset)
    report = run_check("s06.paged_attention", impl=ns, quiet=True)
    assert not report.passed
    assert any("must be your own code" in " ".join(v.detail) for v in report.verdicts)
    import torch  # the twin works again once check() is done

    q, k = torch.zeros(1, 1, 2), torch.zeros(1, 1, 1, 2)
    assert pa.paged_attention_torch(q, k, k, torch.tensor([0]), 0).shape == (1, 1, 2)


def test_a_candidate_timed_out_inside_an_import_leaves_no_half_imported_package(tmp_path, monkeypatch):
    """The screen's alarm can fire while a given function imports a package for the first time (as
    radix_view imports matplotlib): the half-imported package must not break a later import of it."""
    import sys

    from tests.support.delegation import _time_limit

    pkg = tmp_path / "pcw_slow_pkg"
    pkg.mkdir()
    (pkg / "part.py").write_text("VALUE = 1\n")
    (pkg / "__init__.py").write_text("from pcw_slow_pkg import part\nimport time\ntime.sleep(float(__import__('os')"
                                     ".environ.get('PCW_SLOW_PKG_S', '0')))\ndef ready():\n    return part.VALUE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PCW_SLOW_PKG_S", "5")
    with pytest.raises(TimeoutError), _time_limit(0.2):
        __import__("pcw_slow_pkg")
    assert not [m for m in sys.modules if m.startswith("pcw_slow_pkg")]
    monkeypatch.setenv("PCW_SLOW_PKG_S", "0")
    try:
        assert __import__("pcw_slow_pkg").ready() == 1
    finally:
        for m in [m for m in sys.modules if m.startswith("pcw_slow_pkg")]:
            del sys.modules[m]


def _spin(cpu_s: float) -> None:
    import time

    start = time.process_time()
    while time.process_time() - start < cpu_s:
        pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed alarm, on purpose
def test_a_time_limit_holds_when_its_alarm_lands_where_python_swallows_it():
    """A signal handler's exception raised inside a ``__del__`` (or a GC callback, as CI once saw) is
    reported as unraisable and dropped: the limit must still end the block, not let it run on."""
    from tests.support.delegation import _time_limit

    class SlowToDie:
        def __del__(self):
            _spin(0.3)

    with pytest.raises(TimeoutError), _time_limit(0.05):
        SlowToDie()  # freed at once: the alarm lands in its __del__
    with pytest.raises(TimeoutError), _time_limit(0.05):
        for _ in range(3):
            try:
                _spin(0.1)
            except TimeoutError:  # code that catches the limit's exception is stopped by the next one
                pass
        _spin(10)


def test_a_time_limit_counts_cpu_time_and_lets_a_quick_block_through():
    from tests.support.delegation import _time_limit

    with _time_limit(0.5):
        _spin(0.01)
    with pytest.raises(TimeoutError), _time_limit(0.05):
        _spin(10)

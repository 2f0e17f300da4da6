"""Demos that never lie: a demo, prediction reveal or plot that runs a TODO runs only when that TODO
passes its visible checks; otherwise one line in the notebook's language names the TODO to fix, with
no "answer", no solution marker, no translation comment and no traceback. Whatever stops a running
demo ends in one line too, and given code that consumes a learner's value checks it first."""
from __future__ import annotations

import ast
import contextlib
import importlib
import io
import re
import sys
import traceback

import nbformat
import pytest

from autograder.core import layout
from autograder.core.i18n import set_language
from autograder.core.spec import load_stage
from autograder.learner.demos import demo
from autograder.learner.inline import evaluate
from autograder.learner.learn import reveal
from tests.conftest import stage_params
from tests.support.learner_ns import module_text, notebook_namespace
from workbook.contract import ResultError

# What a skipped or stopped demo must never print.
FORBIDDEN = ("answer", "答案", "实际是", "BEGIN SOLUTION", "END SOLUTION", "zh:", "Traceback")


@pytest.fixture(autouse=True)
def english_after():
    yield
    set_language("en")


def run(cell: str, ns: dict) -> str:
    """Run notebook code in ``ns`` (as a kernel would, the guard reads the caller's globals); its output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(cell, "<cell>", "exec"), ns)
    return out.getvalue()


def demo_statements(stage_id: str, lang: str) -> list[tuple[str, list[str]]]:
    """Every top-level ``with demo(...)`` statement of the built learner notebook in ``lang``, with
    the TODO ids it names."""
    nb = nbformat.read(layout.stage_files(stage_id).learner(lang), as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "with demo(" not in cell.source:
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.parse(source).body:
            if isinstance(node, ast.With) and isinstance(call := node.items[0].context_expr, ast.Call) \
                    and getattr(call.func, "id", None) == "demo":
                found.append((ast.get_source_segment(source, node), [a.value for a in call.args]))
    return found


def slip_for(stage_id: str, todo: str) -> list[tuple[str, str]] | None:
    """The first wrong answer of ``todo`` in ``tests/mutants_sNN.py`` that its visible checks catch."""
    stage = load_stage(stage_id, hidden=False)
    mutants = importlib.import_module(layout.stage_files(stage_id).mutants_module).MUTANTS
    for tid, edits in mutants.values():
        if tid != todo:
            continue
        with notebook_namespace(module_text(stage, edits=edits)) as ns:
            if not evaluate(todo, namespace=ns).passed:
                return edits
    return None


def guard_namespace(ns: dict) -> dict:
    ns.update(demo=demo, reveal=reveal)
    return ns


# -- every demo of every stage and edition, with each TODO slipped or unfinished --------------------
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("stage_id", stage_params())
def test_every_demo_names_the_todo_to_fix_and_shows_no_answer(stage_id, lang):
    stage = load_stage(stage_id, hidden=False)
    demos = demo_statements(stage_id, lang)
    assert demos, f"{stage_id}: no demo cells"
    written = "\n".join(c.source for c in nbformat.read(layout.stage_files(stage_id).learner(lang), as_version=4).cells)
    assert written.count("with demo(") == len(demos) + (stage_id == "s03"), "a demo is not at the top of its cell"
    set_language(lang)
    label_line = {"slip": re.compile(r"^⏸ .*TODO (\d+) \("), "stub": re.compile(r"^⏳ .*TODO (\d+) \(")}
    for todo in (t for t in stage.todos if t.target != "quiz"):
        cases = {"stub": module_text(stage, stubbed=[todo.id])}
        edits = slip_for(stage_id, todo.id)
        if edits is not None:
            cases["slip"] = module_text(stage, edits=edits)
        for case, text in cases.items():
            with notebook_namespace(text) as ns:
                guard_namespace(ns)
                for statement, needs in demos:
                    if todo.id not in needs:
                        continue
                    out = run(statement, ns)
                    where = f"{stage_id}/{lang}, {todo.id} {case}, demo({', '.join(needs)})"
                    lines = out.strip().splitlines()
                    assert len(lines) == 1, f"{where}: {out!r}"
                    m = label_line[case].match(lines[0])
                    assert m and int(m.group(1)) == todo.number, f"{where}: {out!r}"
                    assert f"({todo.id})" in lines[0], f"{where}: {out!r}"
                    assert not any(f in out for f in FORBIDDEN), f"{where}: {out!r}"
                    if lang == "zh":
                        assert re.search(r"[\u4e00-\u9fff]", out) and "does not pass" not in out, f"{where}: {out!r}"


# -- the guard itself ---------------------------------------------------------------------------------
@pytest.fixture
def s04_slipped():
    stage = load_stage("s04", hidden=False)
    with notebook_namespace(module_text(stage, edits=slip_for("s04", "s04.popleft"))) as ns:
        yield guard_namespace(ns)


def test_a_skipped_body_does_not_run_and_later_code_does(s04_slipped):
    out = run('ran = []\nwith demo("s04.popleft"):\n    ran.append(1)\n    print("body")\nafter = True\n', s04_slipped)
    assert s04_slipped["ran"] == [] and s04_slipped["after"] is True and "body" not in out
    assert sys.gettrace() is None  # the guard put the trace function back


def test_a_skipped_body_inside_a_function_returns_normally(s04_slipped):
    code = 'def f():\n    with demo("s04.popleft"):\n        return "body"\n    return "skipped"\nresult = f()\n'
    run(code, s04_slipped)
    assert s04_slipped["result"] == "skipped"


def test_the_todos_are_judged_once_per_version_of_the_code(s04_slipped, monkeypatch):
    import autograder.learner.inline as inline

    calls = []
    real = inline.evaluate
    monkeypatch.setattr(inline, "evaluate", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    run('with demo("s04.append"):\n    pass\n', s04_slipped)
    run('with demo("s04.append"):\n    pass\n', s04_slipped)
    assert calls.count("s04.append") <= 1
    run('class LRUFreeQueue(LRUFreeQueue):\n    pass\n', s04_slipped)  # the cell run again: a new version
    run('with demo("s04.append"):\n    pass\n', s04_slipped)
    assert calls.count("s04.append") >= 1


def test_an_error_inside_a_todo_names_it():
    """A TODO whose visible checks pass but which fails on the demo's input: the line names it."""
    stage = load_stage("s04", hidden=False)
    with notebook_namespace(module_text(stage)) as ns:
        code = ("reference_remove = LRUFreeQueue.remove\n"
                "def remove(self, block):\n"
                "    if block == 'boom':\n"
                "        raise KeyError('p50')\n"
                "    return reference_remove(self, block)\n"
                "LRUFreeQueue.remove = remove\n"
                "with demo('s04.append', 's04.remove'):\n"
                "    LRUFreeQueue().remove('boom')\n")
        out = run(code, guard_namespace(ns))
    assert out.startswith("❌") and "inside your TODO 3 (s04.remove)" in out and "KeyError: 'p50'" in out, out
    assert out.count("\n") == 1 and not any(f in out for f in FORBIDDEN)


def test_an_error_in_given_code_names_the_demo_todos():
    stage = load_stage("s07", hidden=False)
    with notebook_namespace(module_text(stage)) as ns:
        out = run('with demo("s07.latency_summary"):\n    {}["p50"]\n', guard_namespace(ns))
    assert out.startswith("❌") and "KeyError: 'p50'" in out and "TODO 1 (s07.latency_summary)" in out
    assert out.count("\n") == 1


def test_a_result_error_prints_its_own_line_in_chinese():
    stage = load_stage("s05", hidden=False)
    set_language("zh")
    with notebook_namespace(module_text(stage)) as ns:
        ns["ResultError"] = ResultError
        out = run('with demo("s05.insert"):\n    raise ResultError("s05.insert", "7 for 3 tokens", "7，而只有 3 个 token")\n',
                  guard_namespace(ns))
    assert out.startswith("❌ 你的 TODO 3 (s05.insert) 返回了7，而只有 3 个 token") and out.count("\n") == 1


def test_a_runaway_loop_is_stopped(monkeypatch):
    monkeypatch.setattr("autograder.learner.demos.DEMO_TIME_LIMIT_S", 1)
    stage = load_stage("s01", hidden=False)
    with notebook_namespace(module_text(stage)) as ns:
        out = run('with demo("s01.normalize"):\n    while True:\n        pass\n', guard_namespace(ns))
    assert "more than 1 s" in out and out.count("\n") == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory cap is Linux's RLIMIT_AS")
def test_runaway_memory_is_stopped_before_the_kernel_dies(monkeypatch):
    import resource

    monkeypatch.setattr("autograder.learner.demos.DEMO_MEMORY_GB", 0.25)
    before = resource.getrlimit(resource.RLIMIT_AS)
    stage = load_stage("s01", hidden=False)
    with notebook_namespace(module_text(stage)) as ns:
        out = run('with demo("s01.normalize"):\n    grow = []\n    while True:\n        grow.append(bytearray(2**24))\n',
                  guard_namespace(ns))
        ns.pop("grow", None)
    assert "memory" in out and out.count("\n") == 1
    assert resource.getrlimit(resource.RLIMIT_AS) == before


# -- given code checks a learner's values first ---------------------------------------------------------
def s05_namespace(mutant: str | None):
    stage = load_stage("s05", hidden=False)
    edits = importlib.import_module(layout.stage_files("s05").mutants_module).MUTANTS[mutant][1] if mutant else []
    return notebook_namespace(module_text(stage, edits=edits))


def serve(cache_cls, capacity=2048, requests=300):
    import itertools

    from workbook.radix_sim import RadixServer
    from workbook.workload import iter_workload

    stream = iter_workload(seed=1, num_prompts=40, prompt_len=64, num_requests=None, fresh_tokens=16)
    server = RadixServer(cache_cls(), capacity)
    server.fill(stream)
    server.serve(list(itertools.islice(stream, requests)))
    return server


@pytest.mark.parametrize("mutant,todo", [("s05.insert/returns_new_tokens", "s05.insert"),
                                         ("s05.match_prefix/joined_digits", "s05.match_prefix")])
def test_s05_server_names_the_todo_instead_of_growing_memory(mutant, todo):
    """The stage-5 slip that killed the kernel: ``insert`` returning a wrong count gave back slots
    the tree kept, the free list grew and ``fill`` never ended. Now it stops at once, naming it."""
    with s05_namespace(mutant) as ns:
        with pytest.raises(ResultError) as caught:
            serve(ns["RadixCache"])
    assert caught.value.todo == todo


def test_s05_server_is_bounded_for_every_wrong_answer():
    import time

    mutants = importlib.import_module(layout.stage_files("s05").mutants_module).MUTANTS
    for name, (tid, _) in mutants.items():
        if tid == "s05.quiz":
            continue
        start = time.process_time()
        with s05_namespace(name) as ns:
            try:
                serve(ns["RadixCache"])
            except ResultError as exc:
                assert exc.todo.startswith("s05."), name
            except (AssertionError, KeyError, ValueError, RuntimeError):
                pass  # raised inside the learner's own class: the demo guard names that TODO
        assert time.process_time() - start < 30, name


def test_s05_server_accepts_the_reference():
    with s05_namespace(None) as ns:
        server = serve(ns["RadixCache"])
    server.check()


def test_s05_tree_view_names_the_todo_of_the_step():
    from workbook.radix_view import RadixView

    with s05_namespace(None) as ns:  # the reference: every count agrees with the view's own reading
        for page in (1, 2):
            view = RadixView(ns["RadixCache"](page))
            for tokens in ([1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 5, 6, 7], [1, 2, 3], [9, 9]):
                view.insert(tokens)
            view.match([1, 2, 5, 6])
            view.evict(3)
    with s05_namespace("s05.insert/returns_new_tokens") as ns:
        view = RadixView(ns["RadixCache"]())
        with pytest.raises(ResultError) as caught:
            view.insert([1, 2, 3])  # 3 new tokens, says 3 were cached
    assert caught.value.todo == "s05.insert"


def test_s07_tables_name_the_todo_instead_of_a_key_error():
    from solutions import s07_serving as ref

    class Record:
        settings = {"cache": True, "num_blocks": 8, "model": {}}
        stats = {}

        def column(self, name):
            return [0.1, 0.2, 0.4]

        def ledger(self):
            return [{"prompt_tokens": 4, "hit_tokens": 0, "computed_tokens": 4}]

    stage = load_stage("s07", hidden=False)
    broken = [("summary[f\"p{p:g}\"] = ", "summary[f\"P{p:g}\"] = ")]
    with notebook_namespace(module_text(stage, edits=broken)) as ns:
        with pytest.raises(ResultError) as caught:
            ns["summarize_run"](Record(), ref.ModelConfig.tiny())
    assert caught.value.todo == "s07.latency_summary" and "'p50'" in str(caught.value)


def test_s07_decision_record_names_choose_setting_for_a_setting_it_made_up():
    stage = load_stage("s07", hidden=False)
    with notebook_namespace(module_text(stage, edits=[("chosen = dict(best)", "chosen = {**best, 'num_blocks': 1}")])) as ns:
        rows = [{"cache": c, "num_blocks": b, "ttft_p90": 0.1 * b, "hit_rate": 0.5} for c in (True, False) for b in (4, 8)]
        with pytest.raises(ResultError) as caught:
            ns["decision_record"]("w", "d", rows[0], rows[2], rows, {"ttft_p90": 10.0}, {"model": {}})
    assert caught.value.todo == "s07.choose_setting"


def test_s08_tenant_pool_checks_the_extra_keys():
    from workbook.tenant_isolation import TenantPool

    pool = TenantPool(8, 4, extra_keys_for=lambda tenant, keys: {"tenant": tenant})
    with pool.acting_for("a"), pytest.raises(ResultError) as caught:
        pool.admit("r", [1, 2, 3, 4])
    assert caught.value.todo == "s08.tenant_extra_keys"


def test_a_result_error_renders_as_one_line_in_jupyter():
    err = ResultError("s05.evict", "3 slots from a tree that held 2", "3 个槽位，而树里一共只有 2 个")
    assert err._render_traceback_() == ["❌ " + str(err)]
    assert str(err).startswith("your TODO 6 (s05.evict) returned 3 slots")


# -- tracebacks through the course's code read as the edition does ------------------------------------
@pytest.mark.slow  # runs every stage's demos in both editions
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_tracebacks_show_no_solution_markers_or_translation_comments(lang):
    import linecache

    from autograder.learner.released import show_released_sources
    from solutions import s03_block_pool

    files = show_released_sources(lang)
    assert layout.stage_files("s03").reference in files
    path = s03_block_pool.__file__
    shown = linecache.getlines(path)
    on_disk = open(path, encoding="utf-8").read().splitlines()
    assert len(shown) == len(on_disk)
    assert not any("BEGIN SOLUTION" in line or "zh:" in line for line in shown)
    for i, line in enumerate(on_disk):  # every line of code is where it was
        if line.strip() and not line.lstrip().startswith("#"):
            assert shown[i].rstrip("\n") == line
    try:
        s03_block_pool.BlockPool(0, 4)
    except Exception:  # noqa: BLE001 - any error raised in the module will do
        text = traceback.format_exc()
    else:
        text = "".join(traceback.format_stack())
    assert "BEGIN SOLUTION" not in text and "zh:" not in text
    linecache.clearcache()


# -- in a real kernel: the headline case, both editions ---------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_s04_notebook_with_a_slip_in_popleft_announces_no_answer(lang, tmp_path):
    """Stage 4 with ``popleft`` handing out the most recent block (its checks red) used to print "You
    predicted 0; the answer is 4" above an explanation that contradicted it. Run in a kernel, every
    demo that runs ``popleft`` now prints one line naming TODO 2, and no cell errs."""
    from nbclient import NotebookClient

    from autograder.core.pysource import object_source

    stage = load_stage("s04", hidden=False)
    slipped = module_text(stage, edits=slip_for("s04", "s04.popleft"))
    files = layout.stage_files("s04")
    nb = nbformat.read(files.instructor(lang), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution") \
                and "class LRUFreeQueue" in cell.source:
            cell.source = object_source(slipped, "LRUFreeQueue")
    # run from a folder of its own (the course is installed): nothing is written into the repository,
    # whose files another test may be comparing at that moment
    path = tmp_path / files.instructor(lang).name
    nbformat.write(nb, path)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, [(o.ename, o.evalue) for o in errors]
    demos = [c for c in nb.cells if c.cell_type == "code" and "with demo(" in c.source and '"s04.popleft"' in c.source]
    assert len(demos) == 3
    for c in demos:
        out = "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
        assert out.startswith("⏸") and "TODO 2 (s04.popleft)" in out and out.count("\n") == 1, out
        assert not any(f in out for f in FORBIDDEN), out
        assert not any(o.output_type == "display_data" for o in c.outputs)  # no plot from wrong code


# -- nothing outside a guard runs a TODO ---------------------------------------------------------------
def _calls(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            out.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return out


def _is_guard(node: ast.AST) -> bool:
    return isinstance(node, ast.With) and getattr(getattr(node.items[0].context_expr, "func", None), "id", None) == "demo"


def _mentions(node: ast.AST) -> set[str]:
    """Names and attributes used in ``node``, leaving out what sits inside a demo guard."""
    if _is_guard(node):
        return set()
    own = {node.id} if isinstance(node, ast.Name) else {node.attr} if isinstance(node, ast.Attribute) else set()
    return own.union(*(_mentions(c) for c in ast.iter_child_nodes(node)))


@pytest.mark.parametrize("stage_id", stage_params())
def test_no_cell_runs_todo_code_outside_a_demo_guard(stage_id):
    """Outside ``with demo(...)``, no statement of a learner notebook calls a TODO (or a class holding
    one, or a notebook function that mentions one): so every number, reveal and plot from TODO code
    is behind the guard."""
    stage = load_stage(stage_id, hidden=False)
    todo_names = {t.function_name for t in stage.todos if t.target != "quiz"} | \
        {t.owner for t in stage.todos if t.target != "quiz"}
    nb = nbformat.read(layout.stage_files(stage_id).learner(), as_version=4)
    statements = []
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("solution") \
                or cell.metadata.get("nbgrader", {}).get("grade") or "from autograder.runtime import start" in cell.source:
            continue  # TODO cells, check cells and the setup cell
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        statements += ast.parse(source).body
    defined = {s.name: s for s in statements if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
    runs_todo = set(todo_names)
    changed = True
    while changed:  # a notebook function that mentions TODO code runs it when called
        changed = False
        for name, d in defined.items():
            if name not in runs_todo and isinstance(d, ast.FunctionDef) and _mentions(d) & runs_todo:
                runs_todo.add(name)
                changed = True
    bad = []
    for s in statements:
        if isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        if _is_guard(s):
            continue
        used = _calls(s) & runs_todo
        if used:
            bad.append(f"line {s.lineno}: {sorted(used)} in {ast.unparse(s)[:80]!r}")
    assert not bad, f"{stage_id}: TODO code runs outside a demo guard:\n" + "\n".join(bad)


# -- stage 4's trace replay, stage 6's TTFT measurement, stage 8's scoring check what they read ---------
def s04_namespace(mutant: str | None):
    stage = load_stage("s04", hidden=False)
    edits = importlib.import_module(layout.stage_files("s04").mutants_module).MUTANTS[mutant][1] if mutant else []
    return notebook_namespace(module_text(stage, edits=edits))


def replay_s04(pool_cls) -> list[float]:
    """The notebook's replays, smaller: plain LRU, pinning and residence on two synthetic traces."""
    from workbook.cache_sim import LRU, Policy, simulate
    from workbook.traces import multiturn_traffic, thrashing_traffic

    rates = []
    for trace in (thrashing_traffic(300, seed=0), multiturn_traffic(40, seed=0)):
        for cap in (75, 300):
            for policy in (LRU, Policy("pin", max_pinned=cap // 4), Policy("res", min_residence=5.0)):
                rates.append(simulate(trace, cap, policy, pool_cls=pool_cls).block_hit_rate)
    return rates


def test_s04_replay_accepts_the_reference():
    with s04_namespace(None) as ns:
        rates = replay_s04(ns["EvictionPool"])
    assert max(rates) > 0.3 and len(rates) == 12


@pytest.mark.parametrize("mutant,todo", [
    ("s04.append/not_counted", "s04.append"),  # used to replay silently: every request refused, 0 % hits
    ("s04.popleft/hands_out_the_mid_sentinel", "s04.popleft"),  # used to end in AttributeError in a given helper
    ("s04.release_blocks/only_decrements_last_user", "s04.release_blocks"),  # used to replay silently, too few hits
    ("s04.release_blocks/frees_shared_blocks", "s04.release_blocks"),
    ("s04.pin/no_cap", "s04.pin"),  # used to pin past the cap silently
    ("s04.pin/cap_off_by_one", "s04.pin"),
])
def test_s04_replay_names_the_todo_whose_value_it_read(mutant, todo):
    with s04_namespace(mutant) as ns:
        with pytest.raises(ResultError) as caught:
            replay_s04(ns["EvictionPool"])
    assert caught.value.todo == todo
    assert caught.value.line("en").startswith("your TODO") and f"({todo})" in caught.value.line("en")
    assert re.search(r"[\u4e00-\u9fff]", caught.value.line("zh"))


@pytest.mark.slow  # replays every stage-4 wrong answer
def test_s04_replay_is_bounded_for_every_wrong_answer():
    import time

    mutants = importlib.import_module(layout.stage_files("s04").mutants_module).MUTANTS
    for name, (tid, _) in mutants.items():
        if tid == "s04.quiz":
            continue
        start = time.process_time()
        with s04_namespace(name) as ns:
            try:
                replay_s04(ns["EvictionPool"])
            except ResultError as exc:
                assert exc.todo.startswith("s04."), name
            except (AttributeError, ValueError, IndexError, KeyError):
                pass  # raised inside the learner's own class: the demo guard names that TODO
        assert time.process_time() - start < 60, name


class _Engine:
    """A stand-in for the notebook's ``PagedPrefiller`` whose ``prefill`` answers ``answer(prompt, logits)``."""

    def __init__(self, model, answer):
        self.model, self.answer = model, answer

    def prefill(self, prompt):
        from kernels.prefill import full_prefill

        return self.answer(prompt, full_prefill(self.model, prompt))


@pytest.mark.parametrize("answer,what", [
    (lambda p, logits: logits, "instead of the pair"),
    (lambda p, logits: (logits[:-1], {"hit_tokens": 16, "computed_tokens": len(p) - 16}), "logits"),
    (lambda p, logits: (logits * float("nan"), {"hit_tokens": 16, "computed_tokens": len(p) - 16}), "logits"),
    (lambda p, logits: (logits, {"hit_tokens": 16}), "ledger"),
    (lambda p, logits: (logits, {"hit_tokens": 16, "computed_tokens": len(p)}), "ledger"),
])
def test_s06_ttft_measurement_checks_prefill_before_timing_it(answer, what):
    from kernels.model import DecoderLM, ModelConfig
    from kernels.prefill import measure_ttft

    model = DecoderLM.random(ModelConfig.tiny(), seed=0)
    with pytest.raises(ResultError) as caught:
        measure_ttft(model, lambda prefix: _Engine(model, answer), [16], question_len=8, reps=1)
    assert caught.value.todo == "s06.prefill" and what in caught.value.line("en")
    assert re.search(r"[\u4e00-\u9fff]", caught.value.line("zh"))


def test_s06_ttft_measurement_accepts_a_right_answer():
    from kernels.model import DecoderLM, ModelConfig
    from kernels.prefill import measure_ttft

    model = DecoderLM.random(ModelConfig.tiny(), seed=0)
    right = _Engine(model, lambda p, logits: (logits, {"hit_tokens": 16, "computed_tokens": len(p) - 16}))
    (row,) = measure_ttft(model, lambda prefix: right, [16], question_len=8, reps=1)
    assert row.hit_tokens == 16 and row.max_diff == 0.0


@pytest.mark.parametrize("threshold", [None, "0.01", float("nan"), float("inf"), True, (0.01,)])
def test_s08_accuracy_checks_the_fitted_threshold(threshold):
    from solutions.s08_cache_attacks import accuracy

    with pytest.raises(ResultError) as caught:
        accuracy(threshold, [0.001, 0.002], [0.004])
    assert caught.value.todo == "s08.fit_threshold"


def test_s08_accuracy_scores_a_number():
    import numpy as np

    from solutions.s08_cache_attacks import accuracy

    assert accuracy(0.003, [0.001, 0.002], [0.004]) == 1.0
    assert accuracy(np.float64(0.0015), [0.001, 0.002], [0.004]) == 2 / 3
    assert accuracy(0, [0.001], [0.004]) == 0.5


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_prediction_left_out_says_so_and_blames_no_todo(lang):
    """A skipped prediction cell (or ``my_guess = B``, an unquoted letter, which never assigns):
    the demo names the missing name and no TODO, in the notebook's language."""
    stage = load_stage("s07", hidden=False)
    set_language(lang)
    with notebook_namespace(module_text(stage)) as ns:
        ns.pop("my_guess_3", None)
        out = run('with demo("s07.latency_summary", "s07.cache_accounting"):\n'
                  '    reveal(my_guess_3, 224, "")\n', guard_namespace(ns))
    assert out.startswith("❌") and "`my_guess_3`" in out and out.count("\n") == 1, out
    assert "TODO 1" not in out and "TODO 2" not in out and "course's code" not in out and "课程给定" not in out
    assert ("no TODO is at fault" in out) if lang == "en" else ("不是哪个 TODO 的问题" in out)


def test_a_name_missing_in_course_code_is_not_called_the_notebooks():
    """A NameError raised inside a course module is not the notebook's missing name: the old line."""
    stage = load_stage("s07", hidden=False)
    with notebook_namespace(module_text(stage)) as ns:
        ns["course_fn"] = eval(compile("lambda: undefined_in_course", "<course>", "eval"), {})
        out = run('with demo("s07.latency_summary"):\n    course_fn()\n', guard_namespace(ns))
    assert out.startswith("❌") and "NameError" in out and "TODO 1 (s07.latency_summary)" in out, out

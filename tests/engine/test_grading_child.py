"""What the grading child says reaches the report truthfully: a notebook lacking a given helper is
graded with the course's version and a note (both editions), and ``--verbose`` /
``PCW_GRADE_VERBOSE=1`` show, per child, its isolation, exit status and kept output."""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.child.protocol import CellsDone, CellStarted, CourseVersions, Done, Ready
from autograder.core import layout, messages
from autograder.core.i18n import text
from autograder.core.spec import load_stage
from autograder.grading.disclosure import Disclosure
from autograder.grading.grade import compose, grade_paths
from autograder.grading.submission import read_submission
from autograder.grading.supervise import OUTPUT_KEEP, ChildReport, describe
from autograder.grading.trusted import given_members, leak_guard, setup_cells
from tests.conftest import ROOT
from tests.support.machine import scaled
from tests.support.variants import variant_notebook

HELPER = "BlockPool.check_invariants"


def _method_source(stage_id: str, cls: str, name: str) -> str:
    source = layout.stage_files(stage_id).reference.read_text(encoding="utf-8")
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == cls)
    fn = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = source.splitlines(keepends=True)
    return "".join(lines[fn.lineno - 1:fn.end_lineno])


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_a_notebook_lacking_a_given_helper_earns_full_marks_and_is_told_in_its_language(tmp_path):
    removed = [(_method_source("s03", "BlockPool", "check_invariants"), "")]
    renamed = [("    def check_invariants(self) -> None:", "    def verify(self) -> None:")]
    paths = {}
    for lang, edits in (("en", removed), ("zh", renamed), ("en", renamed)):
        nb = variant_notebook("s03", edits, lang)
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "s03-code-BlockPool")
        assert "def check_invariants" not in cell.source and "def violations" in cell.source
        p = tmp_path / f"{lang}-{len(paths)}.ipynb"
        nbformat.write(nb, p)
        paths[str(p)] = lang
    stage = load_stage("s03", hidden=True)
    for r in grade_paths(list(paths)):
        lang = paths[r.path]
        assert r.score == r.max_score == stage.max_score, [(t.id, t.message) for t in r.todos if not t.passed]
        for t in r.todos:
            todo = stage.todo(t.id)
            note = text(messages.COURSE_VERSION_USED, lang).format(label=todo.label, name=HELPER)
            if todo.owner == "BlockPool":  # the class whose given helper is missing: its code TODOs say so
                assert t.passed and t.message.endswith(" | " + note), t.message
                assert "tamper" not in t.message and "篡改" not in t.message
            else:
                assert note not in t.message


def test_every_given_class_member_is_in_the_released_cell():
    """The note names what the learner's cell lacks: it is true only if the released cell has every
    member of the course's class that is not a TODO (else a correct answer would read a false note),
    and the grader shows only those names (``given_members``: the ones the child can take)."""
    import importlib

    checked = 0
    for sid in layout.built_stages():
        stage = load_stage(sid, hidden=False)
        reference = importlib.import_module(stage.reference)
        nb = nbformat.read(layout.stage_files(sid).learner(), as_version=4)
        for cls in {t.owner for t in stage.todos if "." in t.target}:
            cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"{sid}-code-{cls}")
            node = next(n for n in ast.parse(cell.source).body if isinstance(n, ast.ClassDef) and n.name == cls)
            released = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            released |= {t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets
                         if isinstance(t, ast.Name)}
            released |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
            todos = {t.function_name for t in stage.todos if t.owner == cls}
            given = {k for k in vars(getattr(reference, cls)) if not k.startswith("__")} - todos
            assert given <= released, (sid, cls, sorted(given - released))
            assert given_members(stage, cls) == {f"{cls}.{k}" for k in given}  # what the child may name
            checked += 1
    assert checked >= 5


def _lacking_helper(tmp_path: Path) -> Path:
    """A stage-3 notebook whose BlockPool cell lacks the given helper ``check_invariants`` (else the reference)."""
    nb = variant_notebook("s03", [(_method_source("s03", "BlockPool", "check_invariants"), "")])
    path = tmp_path / "lacking.ipynb"
    nbformat.write(nb, path)
    return path


def _versions_said(sub, todo, names, disclosure=None) -> str:
    """The message on ``todo`` when its child says the course supplied ``names`` (and ran no check)."""
    events = [Ready(), *(CellStarted(i) for i in range(len(setup_cells(sub.stage)) + len(sub.cells))), CellsDone(),
              CourseVersions(tuple(names)), Done()]
    return compose(sub, todo, ChildReport(events, None), leak_guard(sub.stage), disclosure=disclosure).result.message


def test_a_course_version_the_course_does_not_have_is_not_shown(tmp_path):
    sub = read_submission(_lacking_helper(tmp_path))
    message = _versions_said(sub, sub.stage.todo("s03.lookup"), ("BlockPool.check_invariants", "BlockPool.hit_len_max_secret"))
    assert "`BlockPool.check_invariants`" in message and "hit_len_max_secret" not in message


def test_a_child_naming_members_the_cells_define_adds_nothing_whatever_the_order():
    """Issue 44: the child's "course versions" event put a line per name in the report, uncharged, repeated,
    in the child's order, unchecked: the order of 10 names per TODO carried about 34 bits, and the line
    was false (a full-marks notebook has every member). Now the fact is the grader's, read from the cells."""
    stage = load_stage("s05", hidden=True)
    sub = read_submission(layout.stage_files("s05").instructor())  # defines every given member
    given = sorted(given_members(stage, "RadixCache"))
    todo = next(t for t in stage.todos if t.owner == "RadixCache")
    orders = [given[:10], given[::-1][:10], [given[3]] * 10, given[1:2] + given[5:9] + given[1:2] * 5]
    said = {_versions_said(sub, todo, names) for names in orders}
    assert len(said) == 1, said  # nothing depends on what the child named, nor in which order
    note = text(messages.COURSE_VERSION_USED, sub.lang).split("`")[0].format(label=todo.label)
    assert note not in said.pop()


def test_a_member_really_missing_is_said_once_in_a_fixed_order_and_charged(tmp_path):
    sub = read_submission(_lacking_helper(tmp_path))
    todo = sub.stage.todo("s03.lookup")
    note = text(messages.COURSE_VERSION_USED, sub.lang).format(label=todo.label, name=HELPER)
    defined = sorted(given_members(sub.stage, "BlockPool") - {HELPER})
    messages_seen = set()
    for names in ([HELPER], [HELPER] * 4 + defined[:3], defined[::-1][:5] + [HELPER] + defined[:4]):
        message = _versions_said(sub, todo, names)
        assert message.count(note) == 1 and message.count("`BlockPool.") == 1, message
        messages_seen.add(message)
    assert len(messages_seen) == 1
    assert note not in _versions_said(sub, todo, defined[:3])  # the child may only narrow the fact
    budget = Disclosure(leak_guard(sub.stage))
    _versions_said(sub, todo, [HELPER], budget)
    assert budget.used == len(HELPER) and not budget.shown  # charged to the report's budget (not learner text)...
    _versions_said(sub, todo, [HELPER], budget)
    assert budget.used == 2 * len(HELPER)  # ...every time it shows: whether it shows is the child's choice
    spent = Disclosure(leak_guard(sub.stage), limit=len(HELPER) - 1)
    assert note not in _versions_said(sub, todo, [HELPER], spent) and spent.used == 0  # and left out once spent


# -- --verbose ------------------------------------------------------------------------------------
def test_describe_names_isolation_exit_status_and_escapes_the_output():
    report = ChildReport([Ready(), CellsDone()], None, output=b"hello\n\x1b[2Jcleared\tand tab\n", output_dropped=7,
                         isolation="namespaces+landlock+seccomp, as uid 100042", returncode=-9)
    out = describe(report, "nb.ipynb · s01.normalize")
    assert out.splitlines()[:3] == ["[child] nb.ipynb · s01.normalize",
                                    "  isolation: namespaces+landlock+seccomp, as uid 100042",
                                    "  ended: exit status -9 (SIGKILL), reached cells_done"]
    assert "  output (26 bytes, 7 more dropped):" in out and "  | hello" in out
    assert "  | \\x1b[2Jcleared\tand tab" in out and "\x1b" not in out
    never = describe(ChildReport([], "not started", grader_error="could not start"), "x")
    assert "ended: never started, reached nothing, stopped: not started, grader error: could not start" in never
    assert "output: none" in never


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", "grade", *args, "--no-progress"], cwd=ROOT,
                          capture_output=True, text=True, timeout=scaled(600), env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def printing_notebook(tmp_path_factory) -> Path:
    """The s01 reference answer, with a TODO cell that prints (a terminal escape included) and much more."""
    nb = variant_notebook("s01", [])
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    cell.source += "\nprint('hello from a TODO cell \\x1b[31mred')\nprint('x' * 40000)\n"
    p = tmp_path_factory.mktemp("verbose") / "printing.ipynb"
    nbformat.write(nb, p)
    return p


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
def test_verbose_logs_each_child_and_changes_no_report(printing_notebook):
    quiet = _cli(str(printing_notebook), "--format", "json")
    loud = _cli(str(printing_notebook), "--format", "json", "--verbose")
    env = _cli(str(printing_notebook), "--format", "json", env={"PCW_GRADE_VERBOSE": "1"})
    assert quiet.returncode == loud.returncode == env.returncode == 0, loud.stderr
    assert quiet.stdout == loud.stdout == env.stdout  # the report is the same, byte for byte
    sub = json.loads(quiet.stdout)["submissions"][0]
    assert sub["score"] == sub["max_score"]
    assert "[child]" not in quiet.stderr
    todos = [t["id"] for t in sub["todos"]]
    for log in (loud.stderr, env.stderr):
        blocks = log.split("[child] ")[1:]
        assert sorted(b.split(" · ", 1)[1].split("\n", 1)[0] for b in blocks) == sorted(todos)
        for b in blocks:
            assert f"  isolation: {sub['isolation']}" in b
            assert re.search(r"\n  ended: exit status (0|-9 \(SIGKILL\)), reached done\n", b), b[:300]
            assert f"  output ({OUTPUT_KEEP} bytes, " in b and "more dropped):" in b
            assert "  | hello from a TODO cell \\x1b[31mred" in b
        assert "\x1b" not in log


def test_where_a_child_stopped_and_which_rule_it_broke_are_charged():
    """Which protocol rule a child broke, and where and why it stopped, are the grader's words but the
    child's choice (learner code picks the cell or check it stops in): each such line is charged to the
    submission's budget, and a generic line stands in once the budget cannot pay for it."""
    stage = load_stage("s01", hidden=True)
    sub = read_submission(layout.stage_files("s01").instructor())
    todo, guard = stage.todos[0], leak_guard(stage)
    cells = [Ready(), *(CellStarted(i) for i in range(len(setup_cells(stage)) + 1))]
    stopped = ChildReport(cells, messages.STOP_EXIT)
    tampered = ChildReport([*cells, CellsDone()], None, tampering=[messages.PROTOCOL_AFTER_DONE])
    for report, told, unsaid in ((stopped, "during your TODO cell 1", messages.STOPPED_UNSAID),
                                 (tampered, "lines after 'done'", messages.TAMPERING_UNSAID)):
        budget = Disclosure(guard)
        message = compose(sub, todo, report, guard, disclosure=budget).result.message
        assert told in message and budget.used >= len(told), (message, budget.used)
        spent = Disclosure(guard, limit=len(told) - 1)
        assert compose(sub, todo, report, guard, disclosure=spent).result.message == text(unsaid, sub.lang)


def test_a_tampering_child_is_told_in_the_reports_language():
    """The broken rule is the grader's words in both languages: the Chinese edition's report says it in
    Chinese, the English one in English, each naming only the check, never anything the child sent."""
    stage = load_stage("s01", hidden=True)
    todo, guard = stage.todos[0], leak_guard(stage)
    name = stage.checks_for(todo.id)[0].name
    cells = [Ready(), *(CellStarted(i) for i in range(len(setup_cells(stage)) + 1)), CellsDone()]
    why = messages.PROTOCOL_NOTHING_REPORTED.format(name=name)
    report = ChildReport(cells, None, tampering=[why])
    said = {}
    for lang in ("zh", "en"):
        sub = read_submission(layout.stage_files("s01").learner(lang))
        assert sub.lang == lang
        said[lang] = compose(sub, todo, report, guard).result.message
        assert said[lang] == text(messages.TAMPERING, lang).format(what=text(why, lang)), said[lang]
    assert f"检查 '{name}' 还没报告结果" in said["zh"] and "reported nothing" not in said["zh"], said["zh"]
    assert f"check '{name}' reported nothing before the next event" in said["en"], said["en"]


@pytest.mark.slow  # grades a notebook on the real grader
def test_a_real_tampering_child_is_reported_in_chinese_in_the_chinese_edition(tmp_path):
    """A TODO cell of the Chinese edition forges a ``done`` line on every descriptor while its check runs:
    the grader stops at the broken rule, and the report says which, in Chinese."""
    forge = ("        import json, os\n        for fd in range(3, 64):\n            try:\n"
             "                os.write(fd, (json.dumps({'phase': 'done'}) + '\\n').encode())\n"
             "            except OSError:\n                pass\n")
    first = "        prompt = self._normalize(prompt_tokens)\n"
    body = "    def split_prompt(self, prompt_tokens: Sequence[int]) -> tuple[list[int], list[int], int]:\n"
    src = layout.stage_files("s01").reference.read_text(encoding="utf-8")
    start = src.index(body)
    edit = src[start:src.index(first, start) + len(first)]
    nb = variant_notebook("s01", [(edit, edit.replace(first, forge + first))], "zh")
    path = tmp_path / "zh.ipynb"
    nbformat.write(nb, path)
    stage = load_stage("s01", hidden=True)
    [r] = grade_paths([str(path)])
    [t] = [t for t in r.todos if t.id == "s01.split_prompt"]
    reasons = {text(messages.TAMPERING, "zh").format(what=text(messages.PROTOCOL_NOTHING_REPORTED.format(name=c.name),
                                                                   "zh")) for c in stage.checks_for(t.id)}
    assert not t.passed and t.message in reasons, t.message


def _code_objects(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield from _code_objects(c)


@pytest.mark.slow  # grades notebooks on the real grader or runs the command line
@pytest.mark.parametrize("stage_id", ["s01", "s05"])
def test_a_child_gets_its_hidden_checks_compiled_and_no_text_of_them(stage_id, tmp_path):
    """What a child is sent holds no line of its hidden checks' source, only their code: no docstring,
    every position line 1 (no layout), a file name no file or line cache has; loaded by the child's own
    loader it runs, the loader keeps nothing of it, and ``inspect`` finds no source."""
    import base64
    import importlib.util
    import marshal

    from autograder.grading.grade import child_payload_for
    from autograder.grading.trusted import HIDDEN_CODE_FILE, hidden_checks_text

    files = layout.stage_files(stage_id)
    path = tmp_path / "sub.ipynb"
    nbformat.write(variant_notebook(stage_id, []), path)
    sub = read_submission(path)
    for todo in sub.stage.todos:
        hidden = hidden_checks_text(sub.stage, todo)
        payload = child_payload_for(sub, todo)
        sent = json.dumps(payload)
        bodies = [ln.strip() for ln in hidden.splitlines()
                  if len(ln.strip()) > 24 and not ln.strip().startswith(("#", "from ", "import "))]
        assert bodies and not [b for b in bodies if b in sent], todo.id
        assert files.hidden_module not in payload["modules"]
        data = base64.b64decode(payload["code"][files.hidden_module])
        code = marshal.loads(data[len(importlib.util.MAGIC_NUMBER):])
        for c in _code_objects(code):
            assert c.co_filename == HIDDEN_CODE_FILE
            assert {line for _, _, line in c.co_lines() if line is not None} <= {0, 1}  # 0: the RESUME before line 1
            assert not [k for k in c.co_consts if isinstance(k, str) and k in hidden and len(k) > 40]
        # the child's own loader, in an interpreter of its own (importing checks registers them)
        out = subprocess.run([sys.executable, "-c", _LOAD_COMPILED], input=json.dumps([payload["code"], files.hidden_module]),
                             capture_output=True, text=True, cwd=ROOT, timeout=scaled(60))
        assert out.returncode == 0, out.stderr[-2000:]
        assert json.loads(out.stdout) == {"dropped": True, "probes": True, "docs": [], "lines": [], "sources": []}


_LOAD_COMPILED = """
import importlib.util, inspect, json, linecache, sys
from autograder.child.sandbox import SourceModules
code, name = json.loads(sys.stdin.read())
loader = SourceModules({}, "/nonexistent", code)
sys.meta_path.insert(0, loader)
module = importlib.import_module(name)
probes = [v for v in vars(module).values() if inspect.isfunction(v) and v.__module__ == name]
found = []
for fn in probes:
    try:
        found.append(inspect.getsource(fn))
    except OSError:
        pass
print(json.dumps({"dropped": loader._code == {}, "probes": bool(probes), "docs": [f.__doc__ for f in probes if f.__doc__],
                  "lines": [ln for f in probes for ln in linecache.getlines(f.__code__.co_filename, vars(module))],
                  "sources": found}))
"""


def test_the_wall_clock_limit_stretches_with_the_load_and_never_below_itself(monkeypatch):
    """A child waiting for a core is not asleep: the wall-clock limit is the limit times the load over
    the cores (at least 1, at most MAX_STRETCH), read when the limit runs out."""
    from autograder.grading import supervise
    from autograder.isolation import load

    monkeypatch.setattr(load, "available_cores", lambda: 2)
    for avg, stretch in [(0.3, 1.0), (2.0, 1.0), (7.0, 3.5), (40.0, supervise.MAX_STRETCH)]:
        monkeypatch.setattr(os, "getloadavg", lambda avg=avg: (avg, 0.0, 0.0))
        assert supervise.contention() == stretch


def test_a_child_that_only_waits_is_stopped_after_the_stretched_wall_limit(monkeypatch):
    """The limit is read when it runs out: idle, a sleeping child stops after ``wall_s``; at a load of
    three times the cores, after three times that, and the message says the seconds it waited."""
    import time

    from autograder.child.protocol import Channel
    from autograder.grading.supervise import ChildLimits, _collect, _report

    limits = ChildLimits(0.2, 64, 0.0)  # wall_s: 0.6 s
    for stretch in (1.0, 3.0):
        monkeypatch.setattr("autograder.grading.supervise.contention", lambda stretch=stretch: stretch)
        read_fd, write_fd = os.pipe()
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL)
        out_r, out_w = os.pipe()
        try:
            began = time.monotonic()
            _, _, waited = _collect(proc, read_fd, out_r, b"", Channel([]), limits, None)
            took = time.monotonic() - began
        finally:
            proc.kill()
            proc.wait()
            for fd in (read_fd, write_fd, out_r, out_w):
                os.close(fd)
        assert waited is not None and stretch * limits.wall_s <= waited <= took
        ch = Channel([])
        ch.feed(b'{"phase": "ready"}\n')
        said = _report(ch, None, b"", 0, True, limits, waited).stopped
        assert f"after {waited:.0f} s of waiting" in said.en, said


def test_the_isolation_set_up_waits_stretch_with_the_load_as_a_child_s_limit_does(monkeypatch):
    """The isolation probe's waits (a probe child, the interpreter's paths, a fork server's end) are
    the grader's too: on a busy machine they stretch by the same factor, never below themselves."""
    from autograder.isolation import load

    monkeypatch.setattr(load, "available_cores", lambda: 2)
    for got, want in [(0.5, 60.0), (7.0, 210.0), (40.0, 60.0 * load.MAX_STRETCH)]:
        monkeypatch.setattr(os, "getloadavg", lambda got=got: (got, 0.0, 0.0))
        assert load.stretched(60) == want

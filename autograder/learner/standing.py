"""Where a learner stands: every stage's TODOs with their last ``check()`` result.

``check()`` keeps a small record, ``.pcw_progress.json``, in the working folder (beside the notebooks
in Jupyter; ``/content`` on Colab): per TODO, how its last visible check run ended and when. Nothing
leaves the machine. Writing it never fails a ``check()``: a read-only folder, a full disk or a broken
record only means nothing is remembered. Grading children and nbgrader runs keep no record, and
nbgrader never copies one (the course's ``nbgrader_config.py`` ignores it).

``progress()`` in a notebook and ``python -m autograder progress [FOLDER]`` print it as a compact
table per stage and a bar, in the learner's language.

The record is input anyone who can write the folder chooses, so it is read as untrusted
(:func:`load`): a regular file only, never through a link and never waiting on a FIFO
(:func:`autograder.core.regularfile.read_bounded`), at most :data:`MAX_RECORD_BYTES`; then each field
is kept only when it has the form :func:`remember` writes (:class:`Entry`), and whatever is not is
ignored and said in one line (:attr:`Record.notes`), never a crash. What is shown passes
:mod:`autograder.core.safetext`. Writing it never follows a link nor opens what is there: a new file
beside it replaces the name.

Invariant: a :class:`Record` holds only entries that satisfy :class:`Entry`'s invariants.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder.core import regularfile, safetext
from autograder.core.i18n import LANGUAGES, L, language, text

RECORD = ".pcw_progress.json"
#: What is read of a record at most: every TODO of every stage takes about 5 KB.
MAX_RECORD_BYTES = 64 * 1024
STATES = ("passed", "failed", "not_implemented")
MAX_CHECKS = 10_000  # far more checks than any TODO has
_TODO_ID = re.compile(r"s[0-9]{2}\.[a-z][a-z0-9_]{0,63}\Z")
_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}\Z")  # time.strftime("%Y-%m-%d %H:%M")
_MARK = {"passed": "✅", "failed": "❌", "not_implemented": "⏳", None: "·"}
_SAID = {
    "passed": L("visible checks pass", "可见检查通过"),
    "failed": L("{p}/{n} visible checks pass", "{n} 个可见检查中通过 {p} 个"),
    "not_implemented": L("not implemented yet", "还没有实现"),
    None: L("not checked yet", "还没有检查过"),
}
_HEAD = L("Your progress (last check() of each TODO; kept in {path}, on this machine only)",
          "你的进度（每个 TODO 最近一次 check() 的结果；记录在本机的 {path}，不会上传）")
_STAGE = L("Stage {n} · {title}", "第 {n} 阶段 · {title}")
_COUNT = L("{done}/{total} TODOs pass", "{total} 个 TODO 中通过 {done} 个")
_NOT_STARTED = L("not started: {ids}", "还没开始：{ids}")
_TOTAL = L("All stages: {bar} {done}/{total} TODOs · {pts}/{max} points by visible checks "
           "(grading adds hidden checks)",
           "全部阶段：{bar} {total} 个 TODO 中通过 {done} 个 · 按可见检查计 {pts}/{max} 分（评分时还有隐藏检查）")
_NOTHING = L("Nothing checked yet in this folder: run check(\"sNN.name\") under a TODO.",
             "这个文件夹里还没有运行过检查：在 TODO 下面运行 check(\"sNN.name\")。")
_UNREAD = L("note: the progress record was not read ({why}); the next check() writes a new one",
            "注意：没有读取进度记录（{why}）；下一次 check() 会重新写一份")
_WHY = {
    regularfile.LINK: L("it is a symbolic link", "它是符号链接"),
    regularfile.FOLDER: L("it is a folder", "它是文件夹"),
    regularfile.SPECIAL: L("it is not a regular file", "它不是普通文件"),
    regularfile.TOO_LARGE: L(f"it is larger than {MAX_RECORD_BYTES // 1024} KiB", f"它大于 {MAX_RECORD_BYTES // 1024} KiB"),
    regularfile.UNREADABLE: L("it cannot be read", "无法读取它"),
    "json": L("it is not JSON", "它不是 JSON"),
    "object": L("it is not a JSON object", "它不是 JSON 对象"),
    "version": L("it is not version 1, the version check() writes", "它不是 check() 写入的第 1 版"),
}
_IGNORED = L("note: {n} part(s) of the progress record are not in the form check() writes and were ignored ({parts})",
             "注意：进度记录中有 {n} 处不是 check() 写入的格式，已忽略（{parts}）")
_PART = {"todos": L("the TODO table", "TODO 表"), "lang": L("the language", "语言"),
         "entries": L("{k} TODO entries", "{k} 个 TODO 条目"), "fields": L("{k} other fields", "{k} 个其他字段")}


@dataclass(frozen=True)
class Entry:
    """One TODO's last ``check()``. Invariants: ``state`` is one of :data:`STATES`;
    ``0 <= passed <= checks <= MAX_CHECKS`` (plain ints); ``at`` is ``YYYY-MM-DD HH:MM``."""

    state: str
    passed: int
    checks: int
    at: str

    @classmethod
    def parse(cls, value: object) -> Entry | None:
        """The entry ``value`` (as JSON gave it) holds, or None when it is not in the form :func:`remember` writes."""
        if not isinstance(value, dict):
            return None
        state, passed, checks, at = (value.get(k) for k in ("state", "passed", "checks", "at"))
        if not (type(passed) is int and type(checks) is int and 0 <= passed <= checks <= MAX_CHECKS):
            return None
        if isinstance(state, str) and state in STATES and isinstance(at, str) and _AT.match(at):
            return cls(state, passed, checks, at)
        return None


@dataclass
class Record:
    """A record as read: the entries that have the form :func:`remember` writes (keyed by TODO ids of
    the form ``sNN.name``), its language when it names one of :data:`LANGUAGES`, and one note per kind
    of thing that was not read or was ignored."""

    todos: dict[str, Entry] = field(default_factory=dict)
    lang: str | None = None
    notes: list[L] = field(default_factory=list)


def _recording() -> bool:
    """No record from a grading child or an nbgrader run: only a learner's own checks count."""
    return not any(os.environ.get(k) for k in ("PCW_GRADING", "NBGRADER_EXECUTION", "NBGRADER_VALIDATING"))


def remember(todo_id: str, state: str, passed: int, checks: int, folder: Path | None = None) -> bool:
    """Record the outcome of a ``check()``; returns whether it was written (never raises, never waits
    on what the record's name holds: a new file replaces the name, whatever it was)."""
    if state not in STATES or not _recording():
        return False
    try:
        where = folder or Path.cwd()
        record = load(where).todos
        record[todo_id] = Entry(state, int(passed), int(checks), time.strftime("%Y-%m-%d %H:%M"))
        body = json.dumps({"version": 1, "lang": language(), "todos": {k: asdict(e) for k, e in record.items()}},
                          ensure_ascii=False, indent=1)
        fd, tmp = tempfile.mkstemp(prefix=".pcw_progress.", dir=where)  # O_EXCL: a new file of its own
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body)
            # whole or nothing, and rename(2) replaces the name itself: a link there is not followed,
            # a FIFO there is never opened
            os.replace(tmp, where / RECORD)
        except BaseException:
            os.unlink(tmp)
            raise
        return True
    except Exception:  # noqa: BLE001 - a record that cannot be kept must never fail the learner's check()
        return False


def load(folder: Path) -> Record:
    """The record in ``folder`` as :class:`Record` (see the module's docstring); never raises for what
    the file holds, never blocks."""
    try:
        raw, _ = regularfile.read_bounded(folder / RECORD, MAX_RECORD_BYTES)
    except regularfile.Refused as r:
        return Record() if r.why == regularfile.MISSING else Record(notes=[_unread(r.why)])
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: [[[[... nested too deep
        return Record(notes=[_unread("json")])
    if not isinstance(obj, dict):
        return Record(notes=[_unread("object")])
    if type(obj.get("version")) is not int or obj["version"] != 1:
        return Record(notes=[_unread("version")])
    ignored: dict[str, int] = {}
    lang = obj.get("lang")
    if not (isinstance(lang, str) and lang in LANGUAGES):
        if lang is not None:
            ignored["lang"] = 1
        lang = None
    todos = obj.get("todos", {})
    if not isinstance(todos, dict):
        ignored["todos"], todos = 1, {}
    entries: dict[str, Entry] = {}
    for key, value in todos.items():
        entry = Entry.parse(value) if _TODO_ID.match(key) else None
        if entry is None:
            ignored["entries"] = ignored.get("entries", 0) + 1
        else:
            entries[key] = entry
    others = len(set(obj) - {"version", "lang", "todos"})
    if others:
        ignored["fields"] = others
    return Record(entries, lang, [_ignored(ignored)] if ignored else [])


def _unread(why: str) -> L:
    return L(*(getattr(_UNREAD, k).format(why=getattr(_WHY[why], k)) for k in LANGUAGES))


def _ignored(parts: dict[str, int]) -> L:
    def said(lang: str) -> str:
        return getattr(_IGNORED, lang).format(n=sum(parts.values()), parts=", ".join(
            getattr(_PART[p], lang).format(k=k) for p, k in parts.items()))
    return L(*(said(k) for k in LANGUAGES))


def read(folder: Path) -> dict[str, Entry]:
    """The entries of the record in ``folder`` (empty when there is none or it cannot be read)."""
    return load(folder).todos


def bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "█" * filled + "░" * (width - filled)


def render(folder: Path, lang: str | None = None, record: Record | None = None) -> str:
    """The table and bars for the record in ``folder`` (or ``record``, read from it), in ``lang``
    (default: the current language), and a line per note on what was not read. Every line is printable."""
    from autograder.core.spec import available_stages, load_stage

    lang = lang or language()
    record = record if record is not None else load(folder)
    lines = [text(_HEAD, lang).format(path=safetext.path(folder.resolve() / RECORD))]
    done_all = total_all = pts = pts_max = 0
    for sid in available_stages():
        try:
            stage = load_stage(sid, hidden=False)
        except Exception:  # noqa: BLE001 - a half-written stage in an author's checkout: leave it out
            continue
        states = {t.id: (e.state if (e := record.todos.get(t.id)) else None) for t in stage.todos}
        done = sum(s == "passed" for s in states.values())
        done_all += done
        total_all += len(stage.todos)
        pts += sum(t.points for t in stage.todos if states[t.id] == "passed")
        pts_max += stage.max_score
        lines.append(f"{text(_STAGE, lang).format(n=stage.number, title=text(stage.title, lang))}  "
                     f"{bar(done, len(stage.todos), 10)} {text(_COUNT, lang).format(done=done, total=len(stage.todos))}")
        if not any(states.values()):
            lines.append("   · " + text(_NOT_STARTED, lang).format(ids=", ".join(states)))
            continue
        width = max(len(i) for i in states)
        for t in stage.todos:
            e = record.todos.get(t.id)
            said = text(_SAID[states[t.id]], lang).format(p=e.passed if e else 0, n=e.checks if e else 0)
            when = f"  ({safetext.one_line(e.at)})" if e else ""
            lines.append(f"   {_MARK[states[t.id]]} TODO {t.number} {t.id:<{width}}  {said}{when}")
    lines.append(text(_TOTAL, lang).format(bar=bar(done_all, total_all), done=done_all, total=total_all, pts=pts,
                                           max=pts_max))
    if not record.todos:
        lines.append(text(_NOTHING, lang))
    lines += [safetext.one_line(text(n, lang)) for n in record.notes]
    return "\n".join(lines)


def progress(folder: str | os.PathLike | None = None) -> None:
    """In a notebook: print every stage's TODOs with their last ``check()`` result, and a bar.

    [zh]
    在笔记本中：打印每个阶段的 TODO 及其最近一次 ``check()`` 的结果，外加一个进度条。
    """
    print(render(Path(folder) if folder is not None else Path.cwd()))


def show(folder: Path, lang: str | None = None) -> None:
    """``python -m autograder progress``: as :func:`progress`, in the language of the last check()."""
    record = load(folder)
    print(render(folder, lang or record.lang or language(), record))

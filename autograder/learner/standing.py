"""Where a learner stands: every stage's TODOs with their last ``check()`` result.

``check()`` keeps a small record, ``.pcw_progress.json``, in the working folder (beside the notebooks
in Jupyter; ``/content`` on Colab): per TODO, how its last visible check run ended and when. Nothing
leaves the machine. Writing it never fails a ``check()``: a read-only folder, a full disk or a broken
record only means nothing is remembered. Grading children and nbgrader runs keep no record.

``progress()`` in a notebook and ``python -m autograder progress [FOLDER]`` print it as a compact
table per stage and a bar, in the learner's language.

Invariant: a record maps TODO ids to ``{"state", "passed", "checks", "at"}`` with ``state`` one of
:data:`STATES`; anything else in the file is ignored when read.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from autograder.core.i18n import LANGUAGES, L, language, text

RECORD = ".pcw_progress.json"
STATES = ("passed", "failed", "not_implemented")
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


def _recording() -> bool:
    """No record from a grading child or an nbgrader run: only a learner's own checks count."""
    return not any(os.environ.get(k) for k in ("PCW_GRADING", "NBGRADER_EXECUTION", "NBGRADER_VALIDATING"))


def remember(todo_id: str, state: str, passed: int, checks: int, folder: Path | None = None) -> bool:
    """Record the outcome of a ``check()``; returns whether it was written (never raises)."""
    if state not in STATES or not _recording():
        return False
    try:
        where = folder or Path.cwd()
        record = read(where)
        record[todo_id] = {"state": state, "passed": int(passed), "checks": int(checks),
                           "at": time.strftime("%Y-%m-%d %H:%M")}
        body = json.dumps({"version": 1, "lang": language(), "todos": record}, ensure_ascii=False, indent=1)
        fd, tmp = tempfile.mkstemp(prefix=".pcw_progress.", dir=where)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body)
            os.replace(tmp, where / RECORD)  # whole or nothing: a crash never leaves half a record
        except BaseException:
            os.unlink(tmp)
            raise
        return True
    except Exception:  # noqa: BLE001 - a record that cannot be kept must never fail the learner's check()
        return False


def read(folder: Path) -> dict[str, dict]:
    """The record in ``folder`` (empty when there is none or it cannot be read)."""
    try:
        raw = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        todos = raw.get("todos", {}) if isinstance(raw, dict) else {}
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in todos.items() if isinstance(k, str) and isinstance(v, dict) and v.get("state") in STATES}


def _recorded_language(folder: Path) -> str | None:
    try:
        lang = json.loads((folder / RECORD).read_text(encoding="utf-8")).get("lang")
    except (OSError, ValueError, AttributeError):
        return None
    return lang if lang in LANGUAGES else None


def bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "█" * filled + "░" * (width - filled)


def render(folder: Path, lang: str | None = None) -> str:
    """The table and bars for the record in ``folder``, in ``lang`` (default: the current language)."""
    from autograder.core.spec import available_stages, load_stage

    lang = lang or language()
    record = read(folder)
    lines = [text(_HEAD, lang).format(path=folder.resolve() / RECORD)]
    done_all = total_all = pts = pts_max = 0
    for sid in available_stages():
        try:
            stage = load_stage(sid, hidden=False)
        except Exception:  # noqa: BLE001 - a half-written stage in an author's checkout: leave it out
            continue
        states = {t.id: record.get(t.id, {}).get("state") for t in stage.todos}
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
            r = record.get(t.id, {})
            said = text(_SAID[states[t.id]], lang).format(p=r.get("passed", 0), n=r.get("checks", 0))
            when = f"  ({r['at']})" if r.get("at") else ""
            lines.append(f"   {_MARK[states[t.id]]} TODO {t.number} {t.id:<{width}}  {said}{when}")
    lines.append(text(_TOTAL, lang).format(bar=bar(done_all, total_all), done=done_all, total=total_all, pts=pts,
                                           max=pts_max))
    if not record:
        lines.append(text(_NOTHING, lang))
    return "\n".join(lines)


def progress(folder: str | os.PathLike | None = None) -> None:
    """In a notebook: print every stage's TODOs with their last ``check()`` result, and a bar."""
    print(render(Path(folder) if folder is not None else Path.cwd()))


def show(folder: Path, lang: str | None = None) -> None:
    """``python -m autograder progress``: as :func:`progress`, in the language of the last check()."""
    print(render(folder, lang or _recorded_language(folder) or language()))

"""A class report an instructor looks at: one self-contained HTML page from a graded class.

Input: the grader's JSON (``grade --format json``), its summary (``--summary-json``), or an nbgrader
course folder (each autograded notebook carries its full result in its metadata; a submission with
no autograded notebook is listed as not graded, with the pre-flight's reason). The page shows, per
edition when both ran: who needs help first (a sortable table of students, lowest share of points
first, with their failing TODOs; a student is counted once, however many files they handed in), a
score histogram per stage, the pass rate per TODO, the checks (visible and
hidden) failed most often with their hint, the most frequent failure messages, the isolation level,
and the submissions that could not be graded. Figures are matplotlib PNGs embedded as base64; every
text that came from a submission (file names, messages) is HTML-escaped. The page carries the subset
of a CJK font its text needs (from the course's font package), so Chinese reads on a machine without
one; its one script, a fixed text, only sorts the students' table.

The numbers come from :func:`class_stats`, one place the page and the tests both read.
"""
from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core.i18n import text
from autograder.grading.reports import shown_path, student_of

TOP = 12  # rows in the "failed most often" tables


@dataclass
class Entry:
    """One submission as the report reads it. Invariant: ``graded`` is False iff ``error`` is set;
    ``todos`` holds the grader's per-TODO JSON (empty when read from a summary file)."""

    name: str
    stage: str | None
    lang: str      # one of i18n.LANGUAGES, or "" when unknown (a file that could not be read)
    graded: bool
    score: float = 0.0
    max_score: float = 0.0
    error: str = ""
    isolation: str = ""
    todos: list[dict] = field(default_factory=list)
    student: str = ""  # who handed it in (student_of(name) unless the layout says, as nbgrader's does)

    def __post_init__(self) -> None:
        self.student = self.student or student_of(self.name)


@dataclass
class ClassResults:
    """Everything loaded: the submissions, the isolation levels stated, and per-TODO counts that came
    only from summary files (``{todo: {"submissions", "passed"}}``)."""

    sources: list[str]
    entries: list[Entry] = field(default_factory=list)
    isolation: list[str] = field(default_factory=list)
    summary_todos: dict[str, dict] = field(default_factory=dict)


# -- loading --------------------------------------------------------------------------------------
def load_results(paths: list[Path]) -> ClassResults:
    """Read grader JSON files, summary files and nbgrader course folders; ValueError for anything else."""
    out = ClassResults([str(p) for p in paths])
    for p in paths:
        if p.is_dir():
            _load_nbgrader(p, out)
            continue
        try:
            raw = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{shown_path(p)}: not a grader JSON or summary file ({exc})") from None
        if isinstance(raw, dict) and isinstance(raw.get("submissions"), list):
            out.isolation.append(_level(raw.get("isolation")))
            for s in raw["submissions"]:
                out.entries.append(_entry(s))
        elif isinstance(raw, dict) and isinstance(raw.get("per_submission"), list):
            out.isolation.append(_level(raw.get("isolation")))
            for s in raw["per_submission"]:
                out.entries.append(_entry({**s, "todos": []}))
            for tid, t in (raw.get("per_todo") or {}).items():
                agg = out.summary_todos.setdefault(tid, {"submissions": 0, "passed": 0})
                agg["submissions"] += int(t.get("submissions", 0))
                agg["passed"] += int(t.get("passed", 0))
        else:
            raise ValueError(f"{shown_path(p)}: neither the grader's JSON (grade --format json) nor its summary")
    return out


def _level(iso: object) -> str:
    return iso.get("level", "?") if isinstance(iso, dict) else str(iso or "?")


def _entry(s: dict) -> Entry:
    graded = s.get("status", "graded") == "graded" and not s.get("error")
    return Entry(str(s.get("path", "?")), s.get("stage"), s.get("lang") or "", graded, float(s.get("score") or 0),
                 float(s.get("max_score") or 0), s.get("error") or "", s.get("isolation") or "", list(s.get("todos") or []))


def _load_nbgrader(course: Path, out: ClassResults) -> None:
    """Autograded notebooks (their metadata holds the grader's result); submissions without one are
    not graded, for the reason the pre-flight finds (or nbgrader's log)."""
    import nbformat

    from autograder.integrations.preflight import check_course

    reasons = {(p.student, p.assignment): p.reason for p in check_course(course)}
    autograded = course / "autograded"
    seen: set[tuple[str, str]] = set()
    levels = set()
    for nb_path in sorted(autograded.glob("*/*/*.ipynb")) if autograded.is_dir() else []:
        student, assignment = nb_path.parent.parent.name, nb_path.parent.name
        meta = nbformat.read(nb_path, as_version=4).metadata.get("autograder", {})
        result = meta.get("result")
        if not isinstance(result, dict):
            continue  # autograded before the result was kept: nothing to read
        seen.add((student, assignment))
        levels.add(_level(meta.get("isolation")))
        entry = _entry({**result, "path": f"{student}/{assignment}/{nb_path.name}"})
        entry.student = student
        out.entries.append(entry)
    submitted = course / "submitted"
    for folder in sorted(submitted.glob("*/*")) if submitted.is_dir() else []:
        key = (folder.parent.name, folder.name)
        if folder.is_dir() and key not in seen:
            why = reasons.get(key, "not autograded (see nbgrader's log)")
            lang = "zh" if folder.name.endswith("_zh") else "en"
            out.entries.append(Entry(f"{key[0]}/{key[1]}", None, lang, False, error=why, student=key[0]))
    out.isolation += sorted(levels)


# -- the numbers ------------------------------------------------------------------------------------
@dataclass
class Stats:
    """What the page shows for one group of submissions (all, or one edition)."""

    submissions: int
    graded: int
    scores: dict[str, list[float]]               # stage -> graded scores
    max_scores: dict[str, float]                 # stage -> its points
    todo_pass: dict[str, tuple[int, int]]        # TODO -> (passed, graded), in the course's order
    check_failures: Counter                      # (todo, check, hidden) -> submissions failing it
    messages: Counter                            # TODO failure message -> count
    not_graded: list[tuple[str, str]]            # (name, why)
    isolation: Counter                           # level -> submissions
    students: list["StudentRow"] = field(default_factory=list)  # lowest share of points first


@dataclass(frozen=True)
class StudentRow:
    """One student in a group: per stage their best graded file counts (a student who handed in two
    copies is one student), ``failing`` the TODOs that file does not pass, ``files`` all they handed in."""

    student: str
    points: float
    max_points: float
    failing: tuple[str, ...]
    stages: tuple[str, ...]
    files: int
    ungraded: int

    @property
    def share(self) -> float:
        return self.points / self.max_points if self.max_points else 0.0


def student_rows(entries: list[Entry]) -> list[StudentRow]:
    """Per student, lowest share of points first (then by name): who needs help at the top."""
    by: dict[str, list[Entry]] = {}
    for e in entries:
        by.setdefault(e.student, []).append(e)
    rows = []
    for student, mine in by.items():
        best: dict[str, Entry] = {}
        for e in mine:
            if e.graded and e.stage and (e.stage not in best or e.score > best[e.stage].score):
                best[e.stage] = e
        failing = tuple(t["id"] for sid in sorted(best) for t in best[sid].todos if not t.get("passed"))
        rows.append(StudentRow(student, sum(e.score for e in best.values()), sum(e.max_score for e in best.values()),
                               failing, tuple(sorted(best)), len(mine), sum(not e.graded for e in mine)))
    return sorted(rows, key=lambda r: (r.max_points > 0, r.share, r.student))


def class_stats(results: ClassResults, lang: str | None = None) -> Stats:
    """The numbers of the page for edition ``lang`` (None: every submission)."""
    entries = [e for e in results.entries if lang is None or e.lang == lang]
    scores: dict[str, list[float]] = {}
    max_scores: dict[str, float] = {}
    todo_pass: dict[str, list[int]] = {}
    checks: Counter = Counter()
    messages: Counter = Counter()
    order: dict[str, tuple[str, int]] = {}  # TODO -> (stage, number): tables in the course's order
    for e in entries:
        if not e.graded:
            continue
        if e.stage:
            scores.setdefault(e.stage, []).append(e.score)
            max_scores[e.stage] = max(max_scores.get(e.stage, 0.0), e.max_score)
        for t in e.todos:
            order.setdefault(t["id"], (t["id"].split(".")[0], int(t.get("number") or 0)))
            agg = todo_pass.setdefault(t["id"], [0, 0])
            agg[0] += bool(t.get("passed"))
            agg[1] += 1
            if t.get("passed"):
                continue
            messages[t.get("message", "")] += 1
            if t.get("status") == "failed":  # the TODO ran to the end: its failed checks are real answers
                for c in t.get("checks", []):
                    if not c.get("passed"):
                        checks[(t["id"], c.get("name", "?"), bool(c.get("hidden")))] += 1
    if lang is None:
        for tid, t in results.summary_todos.items():
            agg = todo_pass.setdefault(tid, [0, 0])
            agg[0] += t["passed"]
            agg[1] += t["submissions"]
    ranked = sorted(todo_pass, key=lambda k: order.get(k, (k.split(".")[0], 0)))
    return Stats(len(entries), sum(e.graded for e in entries), scores, max_scores,
                 {k: (todo_pass[k][0], todo_pass[k][1]) for k in ranked}, checks, messages,
                 [(e.name, e.error) for e in entries if not e.graded],
                 Counter(e.isolation or (results.isolation[0] if results.isolation else "?") for e in entries),
                 student_rows(entries))


def editions(results: ClassResults) -> list[str]:
    """The editions seen (a file that could not be read has none: it is listed under all submissions)."""
    return sorted({e.lang for e in results.entries if e.lang})


# -- the page ---------------------------------------------------------------------------------------
def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _histograms(stats: Stats) -> list[tuple[str, str]]:
    """One readable histogram per stage (its own figure, whatever the number of stages): (stage, PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    out = []
    for sid in sorted(stats.scores):
        top = stats.max_scores[sid]
        fig, ax = plt.subplots(figsize=(5.5, 2.6))
        bins = [b - 0.5 for b in range(int(top) + 2)]
        ax.hist(stats.scores[sid], bins=bins, color="#4c72b0", edgecolor="white")
        ax.set_title(f"{sid}: scores of {len(stats.scores[sid])} graded")
        ax.set_xlabel(f"points (of {top:g})")
        ax.set_ylabel("submissions")
        ax.set_xlim(-0.5, top + 0.5)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        out.append((sid, _png(fig)))
    return out


def _pass_chart(stats: Stats) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    todos = list(stats.todo_pass)
    if not todos:
        return None
    rates = [100 * stats.todo_pass[t][0] / stats.todo_pass[t][1] if stats.todo_pass[t][1] else 0 for t in todos]
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(todos) + 0.8))
    ax.barh(todos[::-1], rates[::-1], color=["#55a868" if r >= 80 else "#dd8452" if r >= 50 else "#c44e52" for r in rates[::-1]])
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of graded submissions that pass the TODO")
    return _png(fig)


def _hints(lang: str | None) -> dict[tuple[str, str, bool], str]:
    """The hint of every check (hidden ones where this copy of the course has them), in ``lang``."""
    from autograder.core.spec import available_stages, load_stage

    out = {}
    for sid in available_stages():
        try:
            stage = load_stage(sid, hidden=True)
        except Exception:  # noqa: BLE001 - a half-written stage: no hints from it
            continue
        for c in stage.checks:
            out[(c.todo, c.name, c.hidden)] = text(c.hint, lang or "en")
    return out


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def _section(title: str, stats: Stats, lang: str | None, sid: str) -> str:
    hints = _hints(lang)
    parts = [f'<section id="{sid}"><h2>{_e(title)}</h2>',
             f'<p class="counts"><span data-k="submissions">{stats.submissions}</span> submissions, '
             f'<span data-k="graded">{stats.graded}</span> graded, '
             f'<span data-k="not-graded">{len(stats.not_graded)}</span> could not be graded, handed in by '
             f'<span data-students="{len(stats.students)}">{len(stats.students)}</span> students.</p>']
    iso = ", ".join(f'<span class="iso" data-level="{_e(k)}" data-n="{n}">{_e(k)} ({n})</span>'
                    for k, n in stats.isolation.most_common())
    parts.append(f"<p>Isolation: {iso or 'none stated'}</p>")
    parts.append(_students_table(stats))
    hists = _histograms(stats)
    if hists:
        parts.append("<h3>Scores per stage</h3>" + "".join(
            f'<img class="hist" data-stage="{_e(sid)}" alt="scores of stage {_e(sid)}" src="{png}">' for sid, png in hists))
        parts.append("<table><tr><th>stage</th><th>graded</th><th>mean</th><th>full marks</th><th>points</th></tr>" + "".join(
            f'<tr data-stage="{_e(s)}"><td>{_e(s)}</td><td class="n">{len(v)}</td>'
            f'<td class="mean">{sum(v) / len(v):.2f}</td>'
            f'<td class="full">{sum(x >= stats.max_scores[s] for x in v)}</td><td>{stats.max_scores[s]:g}</td></tr>'
            for s, v in sorted(stats.scores.items())) + "</table>")
    chart = _pass_chart(stats)
    if chart:
        parts.append(f'<h3>Pass rate per TODO</h3><img alt="pass rate per TODO" src="{chart}">')
        parts.append("<table><tr><th>TODO</th><th>passed</th><th>graded</th><th>rate</th></tr>" + "".join(
            f'<tr class="todo" data-todo="{_e(t)}" data-passed="{p}" data-n="{n}"><td>{_e(t)}</td><td>{p}</td>'
            f'<td>{n}</td><td>{100 * p / n if n else 0:.0f}%</td></tr>'
            for t, (p, n) in stats.todo_pass.items()) + "</table>")
    if stats.check_failures:
        parts.append("<h3>Checks failed most often</h3><p>Among TODOs that ran to the end (a wrong answer, not an "
                     "unfinished one).</p><table><tr><th>TODO</th><th>check</th><th>failed by</th><th>hint</th></tr>")
        for (todo, name, hidden), n in stats.check_failures.most_common(TOP):
            kind = "hidden" if hidden else "visible"
            parts.append(f'<tr class="check" data-todo="{_e(todo)}" data-check="{_e(name)}" data-hidden="{int(hidden)}" '
                         f'data-n="{n}"><td>{_e(todo)}</td><td>{_e(name)} <span class="kind">({kind})</span></td>'
                         f'<td>{n}</td><td>{_e(hints.get((todo, name, hidden), ""))}</td></tr>')
        parts.append("</table>")
    if stats.messages:
        parts.append("<h3>Most frequent failure messages</h3><table><tr><th>times</th><th>message</th></tr>")
        for msg, n in stats.messages.most_common(TOP):
            parts.append(f'<tr class="message" data-n="{n}"><td>{n}</td><td><code>{_e(msg)}</code></td></tr>')
        parts.append("</table>")
    if stats.not_graded:
        parts.append("<h3>Could not be graded</h3><table><tr><th>submission</th><th>why</th></tr>" + "".join(
            f'<tr class="ungraded"><td>{_e(name)}</td><td>{_e(why)}</td></tr>' for name, why in stats.not_graded)
            + "</table>")
    parts.append("</section>")
    return "\n".join(parts)


def _students_table(stats: Stats) -> str:
    """Who needs help: every student, lowest share of points first; a click on a heading sorts by it."""
    rows = "".join(
        f'<tr class="student" data-student="{_e(r.student)}" data-points="{r.points:g}" data-max="{r.max_points:g}" '
        f'data-share="{r.share:.4f}" data-files="{r.files}"><td>{_e(r.student)}</td>'
        f'<td data-sort="{r.share:.4f}">{r.points:g} / {r.max_points:g}</td>'
        f'<td>{_e(", ".join(r.failing)) or "—"}</td><td data-sort="{r.files}">{r.files}'
        + (f" ({r.ungraded} not graded)" if r.ungraded else "") + "</td></tr>"
        for r in stats.students)
    return ('<h3>Who needs help</h3><p>One row per student, lowest share of points first (per stage, their best '
            'graded file). Click a heading to sort.</p><table class="sortable"><tr><th>student</th><th>points</th>'
            f"<th>failing TODOs</th><th>files</th></tr>{rows}</table>")


#: The page's only script, a fixed text: a click on a heading of a sortable table sorts its rows by that
#: column (by ``data-sort`` where a cell has one, else its text); a second click reverses.
SORT_SCRIPT = """document.querySelectorAll("table.sortable").forEach(function (t) {
  t.querySelectorAll("th").forEach(function (th, i) {
    th.style.cursor = "pointer";
    th.addEventListener("click", function () {
      var rows = Array.from(t.querySelectorAll("tr")).slice(1), up = th.dataset.up !== "1";
      var key = function (r) { var c = r.children[i]; var v = c.dataset.sort || c.textContent;
        return isNaN(parseFloat(v)) ? v.toLowerCase() : parseFloat(v); };
      rows.sort(function (a, b) { var x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1); });
      th.dataset.up = up ? "1" : "0";
      rows.forEach(function (r) { t.appendChild(r); });
    });
  });
});"""


def _font_face(page_text: str) -> str:
    """An @font-face with the subset of the course's CJK font that ``page_text`` needs (base64 in the page),
    or "" when the text has no CJK character or the font package is missing."""
    chars = {ch for ch in page_text if "\u2e80" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\uff00" <= ch <= "\uffef"}
    if not chars:
        return ""
    from autograder.learner.fonts import cjk_font_path

    path = cjk_font_path()
    if path is None:
        return ""
    from fontTools import subset
    from fontTools.ttLib import TTCollection

    font = next(f for f in TTCollection(str(path), lazy=True).fonts if f["name"].getDebugName(1).endswith(" SC"))
    options = subset.Options()
    options.layout_features = []
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(sorted(chars)))
    subsetter.subset(font)
    buf = io.BytesIO()
    font.save(buf)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'@font-face{{font-family:"PCW CJK";src:url(data:font/otf;base64,{data}) format("opentype")}}'


_STYLE = """body{font-family:system-ui,sans-serif,"PCW CJK";margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;
vertical-align:top}th{background:#f3f3f3}code{white-space:pre-wrap;font-size:.9em;font-family:monospace,"PCW CJK"}
.kind{color:#777}img{max-width:100%}img.hist{display:block;margin:.3em 0}"""


def render_html(results: ClassResults) -> str:
    eds = editions(results)
    sections = [_section("All submissions", class_stats(results), None, "all")]
    if len(eds) > 1:
        names = {"en": "English edition", "zh": "Chinese edition"}
        sections += [_section(names.get(lang, lang), class_stats(results, lang), lang, f"edition-{lang}") for lang in eds]
    sources = ", ".join(_e(shown_path(s)) for s in results.sources)
    body = f"<body><h1>Class report</h1><p>From: {sources}</p>\n" + "\n".join(sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Class report</title>'
            f"<style>{_font_face(html.unescape(body))}{_STYLE}</style></head>{body}\n"
            f"<script>{SORT_SCRIPT}</script>\n</body></html>\n")


def write_html(results: ClassResults, path: Path) -> None:
    path.write_text(render_html(results), encoding="utf-8")

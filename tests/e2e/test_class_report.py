"""The class report on a generated class (mutants, correct and unfinished notebooks in both editions,
files that cannot be graded): the numbers on the page equal those computed from the grader's JSON,
learner-derived text is escaped, and the page opens in headless Chromium without console errors."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser

import pytest

from autograder.core import layout
from autograder.integrations.class_report import SORT_SCRIPT, load_results, render_html, student_of
from tests.conftest import ROOT
from tests.support.class_sample import HOSTILE_NAME, build_class
from tests.support.machine import scaled


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    made = build_class(base / "class")
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(base / "class"), "--format", "json", "--no-progress"],
                       cwd=ROOT, capture_output=True, text=True, timeout=scaled(1800))
    assert p.returncode == 1, p.stderr[-2000:]  # two files cannot be graded: said, the rest graded
    (base / "class.json").write_text(p.stdout, encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "autograder", "report", str(base / "class.json"), "--html",
                        str(base / "class.html")], cwd=ROOT, capture_output=True, text=True, timeout=scaled(300))
    assert r.returncode == 0, r.stderr
    return base, made, json.loads(p.stdout)


class Rows(HTMLParser):
    """Every element's data-* attributes, by section id; the page's text, and any script."""

    def __init__(self):
        super().__init__()
        self.section = None
        self.rows: dict[str, list[dict]] = {}
        self.scripts = 0
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a["id"]
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.images.append(a.get("src", ""))
        if any(k.startswith("data-") for k in a) and self.section:
            self.rows.setdefault(self.section, []).append({"tag": tag, "class": a.get("class"), **a})


def expected_numbers(subs: list[dict]) -> dict:
    graded = [s for s in subs if s["status"] == "graded"]
    todo = Counter()
    passed = Counter()
    checks = Counter()
    for s in graded:
        for t in s["todos"]:
            todo[t["id"]] += 1
            passed[t["id"]] += t["passed"]
            if t["status"] == "failed":
                checks.update((t["id"], c["name"], c["hidden"]) for c in t["checks"] if not c["passed"])
    return {"n": len(subs), "graded": len(graded), "todo": todo, "passed": passed, "checks": checks,
            "full": sum(s["score"] == s["max_score"] for s in graded),
            "mean": sum(s["score"] for s in graded) / len(graded)}


@pytest.mark.slow
def test_the_page_shows_the_numbers_of_the_results(graded):
    base, made, raw = graded
    page = (base / "class.html").read_text(encoding="utf-8")
    parser = Rows()
    parser.feed(page)
    assert parser.scripts == 1 and f"<script>{SORT_SCRIPT}</script>" in page  # the fixed sorter, nothing else
    assert HOSTILE_NAME not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert len(parser.images) >= 2 and all(src.startswith("data:image/png;base64,") for src in parser.images)
    sections = {"all": raw["submissions"],
                "edition-en": [s for s in raw["submissions"] if s["lang"] == "en"],
                "edition-zh": [s for s in raw["submissions"] if s["lang"] == "zh"]}
    for sid, subs in sections.items():
        want = expected_numbers(subs)
        rows = parser.rows[sid]
        html = page.split(f'<section id="{sid}">', 1)[1].split("</section>", 1)[0]
        counts = {k: int(v) for k, v in re.findall(r'data-k="([a-z-]+)">(\d+)<', html)}
        assert counts == {"submissions": want["n"], "graded": want["graded"], "not-graded": want["n"] - want["graded"]}
        todos = {r["data-todo"]: (int(r["data-passed"]), int(r["data-n"])) for r in rows if r.get("class") == "todo"}
        assert todos == {t: (want["passed"][t], want["todo"][t]) for t in want["todo"]}
        shown = {(r["data-todo"], r["data-check"], r["data-hidden"] == "1"): int(r["data-n"])
                 for r in rows if r.get("class") == "check"}
        assert shown and all(want["checks"][k] == n for k, n in shown.items())
        assert min(shown.values()) >= sorted(want["checks"].values(), reverse=True)[len(shown) - 1]  # the most frequent
        stage_row = html.split('data-stage="s01">', 1)[1].split("</tr>", 1)[0]
        assert f'<td class="mean">{want["mean"]:.2f}</td>' in stage_row and f'<td class="full">{want["full"]}</td>' in stage_row
    assert any(r["data-hidden"] == "1" for r in parser.rows["all"] if r.get("class") == "check")  # hidden ones too
    assert page.count('class="ungraded"') == 2  # the two files that are no notebook, under all submissions
    assert "namespaces" in page or "landlock" in page or "in-process" in page


@pytest.mark.browser
@pytest.mark.slow
def test_the_page_opens_in_chromium_without_console_errors(graded):
    from tests.e2e.test_ui_browser import ARGS, CHROMIUM, HAVE_PLAYWRIGHT

    if not (CHROMIUM and HAVE_PLAYWRIGHT):
        pytest.skip("browser test needs chromium and playwright: run scripts/setup-browser.sh")
    from playwright.sync_api import sync_playwright

    base, _, _ = graded
    errors, dialogs = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto((base / "class.html").as_uri())
        page.wait_for_load_state("load")
        loaded = page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
        heading = page.locator("h1").inner_text()
        page.screenshot(path=str(base / "class_report.png"))
        browser.close()
    assert errors == [] and dialogs == [] and loaded and heading == "Class report"


A1 = layout.stage_files("s01").notebook           # 01_prefix_match
A1_ZH = layout.stage_files("s01").assignment("zh")
A2_ZH = layout.stage_files("s02").assignment("zh")


def _todo(tid: str, number: int, passed: bool, message: str = "") -> dict:
    return {"id": tid, "number": number, "passed": passed, "status": "passed" if passed else "failed",
            "points": 2.0 if passed else 0.0, "max_points": 2.0, "message": message, "checks": []}


def _sub(path: str, stage: str, lang: str, passed: list[bool], message: str = "") -> dict:
    todos = [_todo(f"{stage}.t{i}", i, ok, message) for i, ok in enumerate(passed, 1)]
    return {"path": path, "stage": stage, "lang": lang, "status": "graded", "score": 2.0 * sum(passed),
            "max_score": 2.0 * len(passed), "todos": todos}


def test_students_are_named_and_counted_once_with_who_needs_help_first(tmp_path):
    """44 students, one of whom handed in two copies (45 files): the page says 44 students, lists each once
    (their best copy), lowest share of points first, with the TODOs they fail; one histogram per stage."""
    subs = [_sub(f"class/s{i:02d}/{A1}/{A1}.ipynb", "s01", "en", [True] * (i % 4) + [False] * (3 - i % 4))
            for i in range(44)]
    subs.append(_sub(f"class/s01/{A1}/{A1} (1).ipynb", "s01", "en", [True, True, True]))
    subs += [_sub(f"class/s{i:02d}/{A2_ZH}/{A2_ZH}.ipynb", "s02", "zh", [i % 2 == 0, True],
                  "检查 '链式哈希' 未通过 | 提示： 每一块的键要包含前一块的键。") for i in range(0, 44, 3)]
    (tmp_path / "class.json").write_text(json.dumps({"submissions": subs, "isolation": {"level": "in-process"}}))
    page = render_html(load_results([tmp_path / "class.json"]))
    parser = Rows()
    parser.feed(page)
    rows = [r for r in parser.rows["all"] if r.get("class") == "student"]
    assert len(rows) == 44 and len({r["data-student"] for r in rows}) == 44
    assert 'data-students="44"' in page and 'data-k="submissions">60<' in page  # 45 + 15 files, 44 students
    shares = [float(r["data-share"]) for r in rows]
    assert shares == sorted(shares) and shares[0] == 0.0  # who needs help first
    s01 = next(r for r in rows if r["data-student"] == "s01")
    assert s01["data-files"] == "2" and s01["data-points"] == "6"  # its best copy of s01 (s02 not handed in)
    first = page.split('data-student="s00"', 1)[1].split("</tr>", 1)[0]
    assert "s01.t1, s01.t2, s01.t3" in first and "s02.t1" not in first  # s00 passes s02.t1 (i % 2 == 0)
    hists = [r for r in parser.rows["all"] if r["tag"] == "img" and r.get("class") == "hist"]
    assert [h["data-stage"] for h in hists] == ["s01", "s02"]
    assert '@font-face{font-family:"PCW CJK";src:url(data:font/otf;base64,' in page  # Chinese reads without a CJK font


def test_the_embedded_font_covers_every_chinese_character_on_the_page(tmp_path):
    import base64
    import io
    import re as re_

    from fontTools.ttLib import TTFont

    subs = [_sub(f"class/li/{A1_ZH}.ipynb", "s01", "zh", [False, True], "提示： 只有提示词的开头才算。")]
    (tmp_path / "zh.json").write_text(json.dumps({"submissions": subs}))
    page = render_html(load_results([tmp_path / "zh.json"]))
    data = re_.search(r"base64,([A-Za-z0-9+/=]+)\) format", page).group(1)
    cmap = TTFont(io.BytesIO(base64.b64decode(data))).getBestCmap()
    chinese = {ch for ch in "提示只有词的开头才算"}
    assert all(ord(ch) in cmap for ch in chinese)


@pytest.mark.parametrize("path, who", [(f"alice/{A1}/{A1}.ipynb", "alice"),
                                       (f"class/bob/{A1} copy.ipynb", "bob"),
                                       ("class/carol.ipynb", "carol"),
                                       (f"{A1}.ipynb", A1)])
def test_student_of_reads_the_usual_class_layouts(path, who):
    assert student_of(path) == who


def test_the_grade_csv_names_the_student_in_its_first_column(tmp_path):
    """The CLI's CSV (`grade --csv`) starts each row with the student, the same student the class report
    names, then the file it grades: one clear id to sort and join on."""
    import csv

    from autograder.core.results import SubmissionResult
    from autograder.grading import reports
    from autograder.isolation.levels import select

    paths = [str(tmp_path / "submitted" / "alice" / A1 / f"{A1}.ipynb"), str(tmp_path / "class" / "bob.ipynb"),
             str(tmp_path / "class" / "carol" / f"{A1} copy.ipynb")]
    results = [SubmissionResult(p, "s01") for p in paths]
    reports.write_csv(results, tmp_path / "g.csv", select("in-process"))
    rows = list(csv.reader((tmp_path / "g.csv").open(encoding="utf-8")))
    assert rows[0][:2] == ["student", "path"]
    assert [r[0] for r in rows[1:]] == ["alice", "bob", "carol"] == [student_of(p) for p in paths]
    assert [r[1] for r in rows[1:]] == [reports.shown_path(p) for p in paths]

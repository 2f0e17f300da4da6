"""The README stays a two-minute read in both languages, its two commands are the ones CI runs, and every
page links only to files that exist."""
from __future__ import annotations

import re

import pytest

from autograder.core import layout

ROOT = layout.ROOT
PAGES = sorted([ROOT / "README.md", ROOT / "README.zh.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md",
                *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
MAIN_JOB = "bash scripts/setup.sh && .venv/bin/python -m autograder grade notebooks/ solutions/*.ipynb solutions/zh/*.ipynb"
TESTS = ".venv/bin/python -m pytest"


@pytest.mark.parametrize("readme", [layout.README, layout.README_ZH], ids=lambda p: p.name)
def test_the_readme_is_short_and_gives_the_two_commands(readme):
    text = readme.read_text(encoding="utf-8")
    assert len(text.encode()) < 10_000, f"{readme.name}: {len(text.encode())} bytes; details go to docs/"
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert blocks[:2] == [MAIN_JOB + "\n", TESTS + "\n"], f"{readme.name}: the two commands come first, as they are"


def test_ci_runs_the_readme_commands():
    """CI runs the README's test command as its two lanes, the fast one first: every test is slow or
    not, so ``-m "not slow"`` and ``-m slow`` together select exactly what the README's command does."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/setup.sh" in ci
    lanes = [m.group(1) for m in re.finditer(rf"^{re.escape(TESTS)}(.*?)(?: \|\|.*)?$", ci, re.M)]
    assert lanes == [' -m "not slow"', " -m slow"], lanes


@pytest.mark.parametrize("page", PAGES, ids=lambda p: layout.rel(p))
def test_every_relative_link_names_a_file_that_exists(page):
    missing = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            missing.append(target)
    assert not missing, f"{layout.rel(page)} links to files that do not exist: {missing}"


@pytest.mark.parametrize("name", ["learners", "instructors", "security", "setup", "performance"])
def test_every_page_for_learners_and_instructors_has_both_editions(name):
    en, zh = ROOT / "docs" / f"{name}.md", ROOT / "docs" / f"{name}.zh.md"
    assert en.exists() and zh.exists()
    assert "(" + zh.name + ")" in en.read_text(encoding="utf-8") and "(" + en.name + ")" in zh.read_text(encoding="utf-8")


def test_the_chinese_readme_links_the_chinese_pages():
    text = layout.README_ZH.read_text(encoding="utf-8")
    for name in ("learners", "instructors", "security", "setup", "performance"):
        assert f"docs/{name}.zh.md" in text and f"docs/{name}.md)" not in text


ZH_PAGES = [p for p in PAGES if p.name.endswith(".zh.md")]


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: layout.rel(p))
def test_a_chinese_page_sends_readers_to_the_chinese_edition_of_a_page(page):
    """Every relative link of a Chinese page to a page that has a Chinese edition names that edition
    (its section anchors included), except the one link at its top that switches to English."""
    text = page.read_text(encoding="utf-8")
    english = []
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target) or target.startswith("#") or not target.split("#")[0].endswith(".md"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if path.name.endswith(".zh.md") or not path.with_name(path.name[:-3] + ".zh.md").exists():
            continue
        if path.with_name(path.name[:-3] + ".zh.md") == page.resolve():  # the switch to the English edition
            continue
        english.append(target)
    assert not english, f"{layout.rel(page)} sends readers to English pages that have a Chinese edition: {english}"

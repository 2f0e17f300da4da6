"""The classroom flow with the real nbgrader: release, autograde, feedback, in a temp course dir."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.core import layout
from autograder.learner.standing import RECORD
from tests.conftest import ROOT
from tests.support.machine import scaled
from tests.support.variants import variant_notebook

pytestmark = pytest.mark.slow  # the fast lane leaves it out: runs nbgrader's commands end to end

S01 = layout.stage_files("s01")
ASSIGNMENT = S01.notebook
WRONG_MATCH = [("is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix",
                "is_match = all(t in prompt for t in cached_prefix)")]


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=scaled(300))
    assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """Stage 1's course folder with its assignment released (``autograder course``, then nbgrader's
    generate_assignment), made once for the module: each class below is handed in to a copy of it (the
    folder names no path of its own: the moved-course test proves a copy grades the same)."""
    root = tmp_path_factory.mktemp("released")
    run([sys.executable, "-m", "autograder", "course", str(root), "--stage", "s01"], ROOT)
    run([sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--create"], root)
    return root


def class_folder(released: Path, tmp_path_factory, name: str) -> Path:
    root = tmp_path_factory.mktemp(name)
    shutil.copytree(released, root, symlinks=True, dirs_exist_ok=True)
    return root


@pytest.fixture(scope="module")
def course(released, tmp_path_factory):
    root = class_folder(released, tmp_path_factory, "course")
    release = root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    subs = {
        "correct": nbformat.read(S01.instructor(), as_version=4),
        "stub": nbformat.read(release, as_version=4),
        "wrong_match": nbformat.read(release, as_version=4),
    }
    wrong = variant_notebook("s01", WRONG_MATCH)
    wrong_code = next(c.source for c in wrong.cells if c.metadata.get("nbgrader", {}).get("solution"))
    for c in subs["wrong_match"].cells:
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = wrong_code
    for student, nb in subs.items():
        d = root / "submitted" / student / ASSIGNMENT
        shutil.copytree(root / "release" / ASSIGNMENT, d)
        nbformat.write(nb, d / f"{ASSIGNMENT}.ipynb")
    # the student's progress record beside the notebook, and a FIFO named like a half-written one
    # (copying a FIFO would block nbgrader)
    (root / "submitted" / "correct" / ASSIGNMENT / RECORD).write_text('{"version": 1, "todos": {}}')
    os.mkfifo(root / "submitted" / "correct" / ASSIGNMENT / f"{Path(RECORD).stem}.tmp1234")
    d = root / "submitted" / "linked" / ASSIGNMENT  # a link to the course's own instructor notebook
    d.mkdir(parents=True)
    (d / f"{ASSIGNMENT}.ipynb").symlink_to(os.path.relpath(S01.instructor(), d))
    p = run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT], root)
    (root / "autograde.log").write_text(p.stdout + p.stderr)
    run([sys.executable, "-m", "nbgrader", "generate_feedback", ASSIGNMENT], root)
    return root


def gradebook_points(root: Path, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        return {g.name: g.auto_score for g in nb.grades if g.max_score and g.name.startswith("s01-") and "-code-" not in g.name}


def cli_points(path: Path) -> dict[str, float]:
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(path), "--format", "json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=scaled(300))
    sub = json.loads(p.stdout)["submissions"][0]
    return {t["id"].replace(".", "-"): t["points"] for t in sub["todos"]}


def test_release_is_the_committed_learner_notebook(course):
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    ours = nbformat.read(S01.learner(), as_version=4)
    assert [c.source for c in release.cells] == [c.source for c in ours.cells]
    assert "BEGIN HIDDEN TESTS" not in json.dumps([c.source for c in release.cells])
    released = {layout.rel(p.relative_to(course / "release" / ASSIGNMENT)) for p in (course / "release" / ASSIGNMENT).rglob("*")}
    assert layout.shipped_as(S01.reference) not in released and not any(r.startswith(layout.rel(layout.HIDDEN)) for r in released)


@pytest.mark.parametrize("student,expected_total", [("correct", 12), ("stub", 0), ("wrong_match", 8)])  # wrong_match leaves the quiz unanswered
def test_gradebook_points_equal_cli_points(course, student, expected_total):
    book = gradebook_points(course, student)
    cli = cli_points(course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    assert book == cli
    assert sum(book.values()) == expected_total


def test_a_submission_that_links_to_the_answers_scores_0_and_the_log_says_why(course):
    """nbgrader copies what the link names into autograded/; the grader grades the file handed in, a link."""
    assert sum(gradebook_points(course, "linked").values()) == 0
    assert "is a link (a symbolic link)" in (course / "autograde.log").read_text()


def test_the_progress_record_is_not_copied_into_autograded(course):
    """The record is the learner's alone, and whoever wrote the folder chose what it holds."""
    graded = course / "autograded" / "correct" / ASSIGNMENT
    assert (graded / f"{ASSIGNMENT}.ipynb").is_file()
    assert not [p.name for p in graded.iterdir() if p.name.startswith(Path(RECORD).stem)]


def test_feedback_never_shows_hidden_test_code(course):
    html = (course / "feedback" / "wrong_match" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "BEGIN HIDDEN TESTS" not in html and "hidden=True" not in html
    assert "s01-match_prefix" in html or "s01.match_prefix" in html
    assert "middle_does_not_count" in html  # the failed visible check is named, with its hint


def test_feedback_puts_each_field_on_its_own_line_and_wraps(course):
    """The failed check, input, expected, got and hint each on a line of their own, in a page whose
    output boxes wrap (the course's CSS is in the page)."""
    import html as html_lib

    page = (course / "feedback" / "wrong_match" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "white-space: pre-wrap" in page and "verdicts wrap inside the page" in page
    lines = html_lib.unescape(page).splitlines()
    hint = next(line for line in lines if line.strip().startswith("hint:") and "Only the start" in line)
    assert len(hint) < 250, hint
    assert any(line.strip() == "expected: 0" for line in lines) and any(line.strip() == "got: 2" for line in lines)


def test_feedback_hint_is_inside_the_visible_box_in_a_browser(course):
    """In Chromium at a laptop's width, the hint's text ends inside its output box and inside the window:
    nothing of a verdict needs sideways scrolling."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    playwright = pytest.importorskip("playwright.sync_api", reason="needs playwright: scripts/setup-browser.sh")
    if not chromium:
        pytest.skip("needs chromium: scripts/setup-browser.sh")
    page_path = course / "feedback" / "wrong_match" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            page.goto(page_path.as_uri())
            box = page.evaluate("""() => {
                const pre = [...document.querySelectorAll('pre')].find(p => p.textContent.includes('hint: Only the start'));
                if (!pre) return null;
                const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
                const range = document.createRange();
                let node, right = 0;
                while ((node = walker.nextNode())) {
                    const at = node.textContent.indexOf('hint:');
                    if (at < 0) continue;
                    const end = node.textContent.indexOf('\\n', at);
                    range.setStart(node, at);
                    range.setEnd(node, end < 0 ? node.textContent.length : end);
                    for (const r of range.getClientRects()) right = Math.max(right, r.right);
                }
                const outer = pre.getBoundingClientRect();
                return {right, box: outer.right, window: window.innerWidth,
                        scroll: pre.scrollWidth, client: pre.clientWidth};
            }""")
        finally:
            browser.close()
    assert box is not None and box["right"] > 0, box
    assert box["right"] <= box["box"] + 1 and box["right"] <= box["window"], box
    assert box["scroll"] <= box["client"] + 1, box  # nothing hidden to the right of the box


def test_autograde_states_the_isolation_level_and_warns_of_no_untouched_cell(course):
    from autograder.isolation import levels as isolation

    level = isolation.select("best").level
    log = (course / "autograde.log").read_text()
    assert f"under isolation {level}" in log
    assert "checksum" not in log  # an untouched release differs from the source only by its hidden tests
    graded = nbformat.read(course / "autograded" / "stub" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    assert graded.metadata["autograder"]["isolation"]["level"] == level
    html = (course / "feedback" / "wrong_match" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert f"graded under isolation: {level}" in html


def test_autograde_refuses_without_a_kernel_boundary(course):
    """With only the in-process layer, nbgrader's autograde scores nothing and its log says how to fix it."""
    (course / "nbgrader_config.py").write_text((course / "nbgrader_config.py").read_text() +
                                               '\nc.IsolatedGrade.isolation = "in-process"\n')
    try:
        p = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--student", "stub", "--force"],
                           cwd=course, capture_output=True, text=True, timeout=scaled(300))
        assert p.returncode != 0 and "refusing to grade" in p.stdout + p.stderr
        assert "bubblewrap" in p.stdout + p.stderr
    finally:
        text = (course / "nbgrader_config.py").read_text()
        (course / "nbgrader_config.py").write_text(text.replace('\nc.IsolatedGrade.isolation = "in-process"\n', ""))


# -- gradebook parity: what the CLI grades, the gradebook records -----------------------------------
def _stripped(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Through jupytext's percent format with every cell's metadata filtered out, and back."""
    import jupytext

    back = jupytext.reads(jupytext.writes(nb, fmt="py:percent"), fmt="py:percent")
    back.metadata.pop("jupytext", None)
    for cell in back.cells:
        cell.metadata = {}
    return back


EDITED_CELL: dict[str, str] = {}  # the grade id of the read-only cell the student "edited_test" changed


def _test_cell_edited(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The same notebook with a line added to its first read-only test cell (nbgrader grades it as released)."""
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("locked") and c.metadata["nbgrader"].get("grade"))
    cell.source += "\nprint('my own test')"
    EDITED_CELL["grade_id"] = cell.metadata["nbgrader"]["grade_id"]
    return nb


def _output_heavy(nb: nbformat.NotebookNode, mb: int = 25) -> nbformat.NotebookNode:
    """The same notebook with ``mb`` MB of saved output (a long training log, say) in one cell."""
    cell = next(c for c in nb.cells if c.cell_type == "code")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="loss 0.123456789\n" * (mb * 2**20 // 17))]
    return nb


def test_the_course_folder_grades_through_the_installed_course_wherever_it_lies(course, tmp_path):
    """The generated config names no path of the clone it was made from: the course is the package
    installed in nbgrader's environment (here this checkout, editable), so a copy of the course folder
    elsewhere grades the same, and without the course installed the config says how to install it."""
    config = (course / "nbgrader_config.py").read_text(encoding="utf-8")
    for path in {str(ROOT), os.path.realpath(ROOT), str(ROOT.parent)}:
        assert path not in config
    assert "sys.path" not in config
    probe = subprocess.run([sys.executable, "-c", "import autograder; print(autograder.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    if Path(probe.stdout.strip()).resolve().parent.parent != ROOT.resolve():
        pytest.skip(f"the course installed here is another checkout ({probe.stdout.strip()}): pip install -e . here")
    moved = tmp_path / "elsewhere" / "course"
    shutil.copytree(course, moved, symlinks=True, ignore=shutil.ignore_patterns("linked", "*.tmp*"))  # not the FIFO
    shutil.rmtree(moved / "autograded" / "correct")
    run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--student", "correct"], moved)
    assert gradebook_points(moved, "correct") == gradebook_points(course, "correct")
    assert sum(gradebook_points(moved, "correct").values()) == 12

    bare = subprocess.run([sys.executable, "-I", "-S", "-c", "get_config = lambda: None\n"
                           "exec(open('nbgrader_config.py', encoding='utf-8').read())"],
                          cwd=moved, capture_output=True, text=True, timeout=60)  # -I -S: no site-packages, no course
    assert bare.returncode == 1
    assert "not installed in this Python environment" in bare.stderr and "pip install -e" in bare.stderr


@pytest.fixture(scope="module")
def odd_class(released, tmp_path_factory):
    """Correct work handed in in the ways a class of 200 does: under another file name (a copy, a
    Chinese desktop's copy), without nbgrader metadata, with 25 MB of outputs; and one student with two
    renamed copies (which one to grade is the instructor's call)."""
    root = class_folder(released, tmp_path_factory, "odd_class")
    correct = lambda: nbformat.read(S01.instructor(), as_version=4)  # noqa: E731
    spaced = ASSIGNMENT.replace("_", " ")
    subs = {"renamed": {f"{ASSIGNMENT} copy.ipynb": correct()},
            "renamed_zh": {f"{spaced} – 副本 (1).ipynb": correct()},
            "stripped": {f"{ASSIGNMENT}.ipynb": _stripped(correct())},
            "heavy": {f"{ASSIGNMENT}.ipynb": _output_heavy(correct())},
            "two_copies": {f"{ASSIGNMENT} (1).ipynb": correct(), f"{ASSIGNMENT} (2).ipynb": correct()},
            "edited_test": {f"{ASSIGNMENT}.ipynb": _test_cell_edited(correct())}}
    for student, files in subs.items():
        d = root / "submitted" / student / ASSIGNMENT
        d.mkdir(parents=True)
        for name, nb in files.items():
            nbformat.write(nb, d / name)
    d = root / "submitted" / "linked_renamed" / ASSIGNMENT  # a link to the answers, under another name
    d.mkdir(parents=True)
    (d / "my_work.ipynb").symlink_to(os.path.relpath(S01.instructor(), d))
    handed_in = {student: [root / "submitted" / student / ASSIGNMENT / n for n in files] for student, files in subs.items()}
    before = _tree_digest(root / "submitted")
    p = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT], cwd=root, capture_output=True,
                       text=True, timeout=scaled(900))
    _SUBMITTED_AFTER[root] = (before, _tree_digest(root / "submitted"))
    return root, handed_in, p.stdout + p.stderr


_SUBMITTED_AFTER: dict[Path, tuple[dict[str, str], dict[str, str]]] = {}


def _tree_digest(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: a file's SHA-256, a link's target (not followed)."""
    import hashlib

    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def test_autograde_never_writes_into_submitted(odd_class):
    """submitted/ is the instructor's record of what was handed in: byte-identical after autograde,
    renamed notebooks included (they are graded where the student saved them)."""
    root, handed_in, log = odd_class
    before, after = _SUBMITTED_AFTER[root]
    assert after == before, sorted(set(after.items()) ^ set(before.items()))
    assert len(before) >= 7  # the files of the odd class, each hashed
    for student in ("renamed", "renamed_zh"):
        assert not (root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
        assert (root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file(), log[-3000:]


@pytest.mark.parametrize("student", ["renamed", "renamed_zh", "stripped", "heavy", "edited_test"])
def test_gradebook_holds_the_cli_points_for_odd_submissions(odd_class, student):
    root, handed_in, log = odd_class
    (original,) = handed_in[student]
    cli = cli_points(original)
    assert sum(cli.values()) == 12, cli  # the CLI grades each of them in full
    assert gradebook_points(root, student) == cli, log[-3000:]


def test_renamed_notebook_is_named_in_the_log_and_never_blames_the_instructor(odd_class):
    _, _, log = odd_class
    assert f"student renamed, assignment {ASSIGNMENT}: no {ASSIGNMENT}.ipynb; graded '{ASSIGNMENT} copy.ipynb'" in log
    # nbgrader's own words come only for the student with two copies (after our line explaining it)
    sections = {part.split("'", 1)[0]: part for part in log.split("Creating/updating student with ID '")[1:]}
    blamed = {student for student, part in sections.items() if "did you forget to run 'nbgrader generate_assignment'" in part}
    assert set(sections) == {"renamed", "renamed_zh", "stripped", "heavy", "two_copies", "linked_renamed", "edited_test"}
    assert blamed <= {"two_copies", "linked_renamed"}


def test_a_renamed_link_to_the_answers_is_not_graded_in_the_released_notebooks_place(odd_class):
    root, _, log = odd_class
    assert not (root / "submitted" / "linked_renamed" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()  # no copy made
    assert not (root / "autograded" / "linked_renamed").exists() or not any((root / "autograded" / "linked_renamed").rglob("*.ipynb"))
    assert f"student linked_renamed, assignment {ASSIGNMENT}: no {ASSIGNMENT}.ipynb to grade" in log
    assert "my_work.ipynb is a link (a symbolic link)" in log


def test_restored_test_cells_are_logged_for_a_stripped_notebook(odd_class):
    _, _, log = odd_class
    assert "stripped" in log and "had lost their nbgrader metadata; restored them from the gradebook" in log


def test_an_ambiguous_submission_is_explained_to_the_instructor(odd_class):
    """Two renamed copies: the CLI grades both; nbgrader grades neither, and the log says why and what to do."""
    root, handed_in, log = odd_class
    assert all(sum(cli_points(p).values()) == 12 for p in handed_in["two_copies"])
    assert f"student two_copies, assignment {ASSIGNMENT}: no {ASSIGNMENT}.ipynb to grade" in log
    assert "more than one of this stage: rename the one to grade" in log


def test_an_edited_read_only_cell_is_logged_with_the_student_and_the_cell(odd_class):
    """nbgrader undoes a student's edit of a read-only cell; the log says whose notebook and which cell,
    in words (nbgrader's own line names the cell only, with two checksums)."""
    _, _, log = odd_class
    who = f"edited_test/{ASSIGNMENT}/{ASSIGNMENT}.ipynb: cell {EDITED_CELL['grade_id']}"
    assert f"{who}: the student edited this read-only cell: it is graded as released, without the edit" in log
    assert "Attribute 'checksum'" not in log and log.count("read-only cell") == 1


def test_the_autograde_log_carries_no_sqlalchemy_warning(odd_class):
    _, _, log = odd_class
    assert "SAWarning" not in log and "not in session" not in log

"""A Gradescope autograder bundle: ``setup.sh``, ``run_autograder`` and the course's grader files.

Gradescope unpacks the zip into ``/autograder/source``, runs ``setup.sh`` once per image, and for each
submission runs ``run_autograder``, which must write ``/autograder/results/results.json``. One test
per TODO carries its points (visible); the names and hints of its hidden checks go into a separate
zero-point entry that stays hidden until the instructor publishes grades.

A bundle is built for one stage (a Gradescope assignment is one stage), and that stage is pinned:
``run_autograder`` grades the notebook under the released name (or the only notebook there is, saying
so), and a notebook of another stage scores 0 with the reason, never the points of the stage it claims.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
import tomllib
import zipfile
from pathlib import Path

from autograder.core import layout, messages
from autograder.core.course import load_course
from autograder.core.i18n import LANGUAGES, L, text
from autograder.core.results import SubmissionResult
from autograder.core.safetext import one_line
from autograder.grading.reports import shown_path
from autograder.isolation.levels import Isolation

SETUP_SH = """#!/usr/bin/env bash
# Gradescope image set-up, from what this bundle carries: the grader's own dependencies (the course's
# runtime and its isolation: requirements-grader.txt){torch_note}. The course itself is this folder:
# run_autograder runs it from here, nothing of it is installed.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-python3}"
{torch}"$PY" -m pip install -q --disable-pip-version-check -r requirements-grader.txt
"$PY" -m autograder isolation || true  # the log says which isolation grading gets on this image
"""

TORCH = """index={index}
if ! "$PY" -c "import torch" 2>/dev/null; then  # an image with torch keeps it
  if [ -n "$index" ]; then
    "$PY" -m pip install -q --disable-pip-version-check "torch=={torch}" --index-url "$index"
  else
    "$PY" -m pip install -q --disable-pip-version-check "torch=={torch}"
  fi
fi
"""


def setup_sh(torch_index: str, torch_version: str | None = None, *, torch: bool = True) -> str:
    """setup.sh; with ``torch`` (a stage whose grading imports it) it first installs the course's torch
    release (``[torch] version``) from the instructor's index (course.toml's ``[gradescope]``, else
    ``[binder]``, ``torch_index``; empty: pip's configured index) unless the image has torch."""
    if not torch:
        return SETUP_SH.replace("{torch_note}", "").replace("{torch}", "")
    version = torch_version or load_course().torch_version
    lines = TORCH.replace("{index}", shlex.quote(torch_index)).replace("{torch}", version)
    return SETUP_SH.replace("{torch_note}", ", then torch from the instructor's index").replace("{torch}", lines)


def grader_requirements() -> str:
    """requirements-grader.txt: the course's runtime dependencies and its ``grader`` extra, as pyproject.toml
    lists them (never the developers' extras, never torch: setup.sh installs torch where a stage needs it)."""
    project = tomllib.loads((layout.ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["grader"]]
    return "# the Gradescope image's packages: pyproject.toml's dependencies and its grader extra\n" + "\n".join(wanted) + "\n"


RUN_AUTOGRADER = """#!/usr/bin/env bash
# Grade the student's notebook of stage {stage} (python -m autograder gradescope-grade): results.json in
# Gradescope's format. Exit 3: this image cannot confine learner code (the log says how to fix it).
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
cd "$ROOT/source"
mkdir -p "$ROOT/results"
"${PYTHON:-python3}" -m autograder gradescope-grade {stage} --root "$ROOT"
status=$?
if [ ! -s "$ROOT/results/results.json" ]; then
  echo '{"score": 0, "output": "Your notebook could not be graded (is it a valid .ipynb?).", "tests": []}' > "$ROOT/results/results.json"
fi
[ "$status" -eq 3 ] && exit 3
exit 0
"""


def run_autograder(stage: str) -> str:
    """``run_autograder`` of a bundle for ``stage``."""
    return RUN_AUTOGRADER.replace("{stage}", layout.stage_files(stage).id)


def _both(entry: L, **fields: str) -> str:
    """Words for a submission whose edition is not known (nothing was read): every language."""
    return " / ".join(text(entry, lang).format(**fields) for lang in LANGUAGES)


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks of a Gradescope submission, sorted; linked folders are not followed (a link to a
    notebook is listed, and refused when read)."""
    out = []
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints")
        out += [Path(here) / n for n in names if n.endswith(".ipynb")]
    return sorted(out)


def grade_submission(root: Path, stage: str, iso: Isolation | None = None) -> int:
    """Grade ``root/submission`` for ``stage`` into ``root/results/results.json``; 3 when the machine
    cannot confine learner code (nothing graded), else 0."""
    from autograder.grading.grade import grade_paths
    from autograder.isolation import levels as isolation

    released = f"{layout.stage_files(stage).notebook}.ipynb"
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)

    def write(doc: dict) -> None:
        out.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")

    iso = iso or isolation.select("best")
    try:
        isolation.require_kernel_isolation(iso)
    except isolation.IsolationError as exc:
        print(str(exc), file=sys.stderr)
        write({"score": 0, "output": _both(messages.GRADESCOPE_NOT_ISOLATED), "tests": []})
        return 3
    found = notebooks_in(root / "submission")
    named = [p for p in found if p.name == released]
    notes: list[L | str] = []
    if named:
        pick = named[0]
    elif len(found) == 1:
        pick = found[0]
        notes.append(L(*(getattr(messages.GRADESCOPE_THE_ONLY_ONE, lang).format(name=shown_path(pick.name), released=released)
                         for lang in LANGUAGES)))
    else:
        entry = messages.GRADESCOPE_SEVERAL if found else messages.GRADESCOPE_NO_NOTEBOOK
        write({"score": 0, "tests": [], "output": _both(entry, released=released,
                                                         found=", ".join(shown_path(p.name) for p in found[:10]))})
        return 0
    (result,) = grade_paths([pick], iso=iso, stage=stage)
    doc = results_json(result, iso)
    doc["output"] = "\n".join([*(one_line(text(n, result.lang)) for n in notes), doc["output"]])
    write(doc)
    return 0


def results_json(r: SubmissionResult, iso: Isolation | None = None) -> dict:
    """Gradescope's ``results.json`` for one graded notebook, stating the isolation it was graded under."""
    tests = []
    for t in r.todos:
        tests.append({"name": f"TODO {t.number} · {t.id} · {text(t.title, r.lang)}", "score": t.points, "max_score": t.max_points,
                      "status": "passed" if t.passed else "failed", "output": one_line(t.message), "visibility": "visible"})
        hidden = [c for c in t.checks if c.hidden]
        if hidden:
            lines = [f"{'✅' if c.passed else '❌'} {one_line(c.message) if not c.passed else (c.title or c.name)}" for c in hidden]
            tests.append({"name": f"TODO {t.number} · {t.id} · {text(messages.REPORT_HIDDEN_CHECKS, r.lang)}",
                          "score": 0, "max_score": 0,
                          "status": "passed" if all(c.passed for c in hidden) else "failed",
                          "output": "\n".join(lines), "visibility": "after_published"})
    level = iso.describe(r.lang) if iso is not None else r.isolation
    out = {"score": r.score, "tests": tests, "stdout_visibility": "hidden", "visibility": "visible",
           "extra_data": {"isolation": iso.to_json() if iso is not None else {"level": r.isolation}}}
    out["output"] = "\n".join([*map(one_line, [r.error] if r.error else r.warnings), text(messages.REPORT_GRADED_UNDER, r.lang).format(level=level)])
    return out


def build_bundle(dest: Path, stage: str) -> Path:
    """Write the zip Gradescope's "Zip file upload" expects (files at the zip's top level), for ``stage``:
    setup.sh, run_autograder, requirements-grader.txt and the course's grader files (never the
    repository's requirements.txt, whose editable install and developers' extras need a checkout)."""
    from autograder.integrations.classroom import needs_torch

    dest.parent.mkdir(parents=True, exist_ok=True)
    scripts = (("setup.sh", setup_sh(load_course().gradescope_torch_index, torch=needs_torch(stage))),
               ("run_autograder", run_autograder(stage)), ("requirements-grader.txt", grader_requirements()))
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in scripts:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o644 if name.endswith(".txt") else 0o755) << 16
            z.writestr(info, body)
        for f in layout.grader_files():
            if f != layout.REQUIREMENTS:
                z.write(f, layout.rel(f))
    return dest

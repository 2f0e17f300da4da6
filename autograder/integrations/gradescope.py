"""A Gradescope autograder bundle: ``setup.sh``, ``run_autograder`` and the course's grader files.

Gradescope unpacks the zip into ``/autograder/source``, runs ``setup.sh`` once per image, and for each
submission runs ``run_autograder``, which must write ``/autograder/results/results.json``. One test
per TODO carries its points (visible); the names and hints of its hidden checks go into a separate
zero-point entry that stays hidden until the instructor publishes grades.
"""
from __future__ import annotations

import shlex
import zipfile
from pathlib import Path

from autograder.core import layout, messages
from autograder.core.safetext import one_line
from autograder.core.course import load_course
from autograder.core.i18n import text
from autograder.isolation.levels import Isolation
from autograder.core.results import SubmissionResult

SETUP_SH = """#!/usr/bin/env bash
# Gradescope image set-up: torch (from the CPU wheel index course.toml names, if any), then the course.
set -euo pipefail
cd /autograder/source
index={index}
if [ -n "$index" ]; then
  python3 -m pip install -q "torch=={torch}" --index-url "$index"
else
  python3 -m pip install -q "torch=={torch}"
fi
python3 -m pip install -q -r requirements.txt
"""


def setup_sh(torch_index: str, torch_version: str | None = None) -> str:
    """setup.sh with the instructor's torch index (course.toml's ``[gradescope]``, else ``[binder]``,
    ``torch_index``; empty: pip's configured index) and the course's torch release (``[torch] version``)."""
    version = torch_version or load_course().torch_version
    return SETUP_SH.replace("{index}", shlex.quote(torch_index)).replace("{torch}", version)


RUN_AUTOGRADER = """#!/usr/bin/env bash
# Grade every notebook the student submitted; results.json in Gradescope's format.
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
cd "$ROOT/source"
mkdir -p "$ROOT/results"
mapfile -t NBS < <(find "$ROOT/submission" -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | sort)
if [ "${#NBS[@]}" -eq 0 ]; then
  echo '{"score": 0, "output": "No .ipynb notebook was found in your submission.", "tests": []}' > "$ROOT/results/results.json"
  exit 0
fi
"${PYTHON:-python3}" -m autograder grade "${NBS[0]}" --gradescope "$ROOT/results/results.json" --no-progress \
  --require-isolation
status=$?
if [ "$status" -eq 3 ]; then  # refused: this image cannot confine learner code (the log says how to fix it)
  echo '{"score": 0, "output": "Not graded: the autograder cannot isolate submissions on this machine; \
your instructor has to fix its set-up.", "tests": []}' > "$ROOT/results/results.json"
  exit 3
fi
if [ ! -s "$ROOT/results/results.json" ]; then
  echo '{"score": 0, "output": "Your notebook could not be graded (is it a valid .ipynb?).", "tests": []}' > "$ROOT/results/results.json"
fi
exit 0
"""

def results_json(r: SubmissionResult, iso: Isolation | None = None) -> dict:
    """Gradescope's ``results.json`` for one graded notebook, stating the isolation it was graded under."""
    tests = []
    for t in r.todos:
        tests.append({"name": f"TODO {t.number} · {t.id} · {t.title}", "score": t.points, "max_score": t.max_points,
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


def build_bundle(dest: Path) -> Path:
    """Write the zip Gradescope's "Zip file upload" expects (files at the zip's top level)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("setup.sh", setup_sh(load_course().gradescope_torch_index)), ("run_autograder", RUN_AUTOGRADER)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            z.writestr(info, text)
        for f in layout.grader_files():
            z.write(f, layout.rel(f))
    return dest

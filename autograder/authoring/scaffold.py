"""``python -m autograder new-stage``: write a new stage's folder from the stage template.

The template (``autograder/authoring/templates/stage/``) mirrors a stage folder: one ``<file>.tmpl`` per
file of it (:data:`autograder.core.layout.ROLES`: ``notebook.py.tmpl``, ``checks.py.tmpl``, ...), plus
``reference_tests.py.tmpl`` for the reference tests in ``tests/stages/``. Together they are a small, complete stage:
one TODO and a quiz, with public and hidden checks and their words, wrong answers with the check each must
lead with, correct alternatives, the tier-3 fills and the stage's metadata, so that ``python -m autograder
build`` builds it, the grader grades it and every generic test passes at once. Where each file goes is the
layout's answer.
"""
from __future__ import annotations

import re
from pathlib import Path

from autograder.core import layout

TEMPLATES = Path(__file__).with_name("templates") / "stage"
_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


def template_of(role: str) -> Path:
    """The template of ``role``'s file: named as the file is in a stage folder (or ``reference_tests.py``)."""
    name = layout.ROLES[role].file if role in layout.ROLES else f"{role.replace(' ', '_')}.py"
    return TEMPLATES / f"{name}.tmpl"


def new_stage(sid: str, slug: str, title: str) -> list[Path]:
    """Create stage ``sid`` named ``slug``; returns the files written. Writes nothing if any exists."""
    number = layout.stage_number(sid)
    if not _SLUG.match(slug):
        raise ValueError(f"the stage name must be lower_snake_case, not {slug!r}")
    if layout.stage_files(sid).slug is not None or layout.stage_files(sid).spec.exists():
        raise FileExistsError(f"stage {sid} exists already")
    files = layout.StageFiles(sid, slug)
    values = {"id": sid, "number": str(number), "slug": slug, "title": title,
              "reference_module": files.reference_module}
    targets = files.sources()
    for path in targets.values():
        if path.exists():
            raise FileExistsError(f"{layout.rel(path)} exists already")
    written = []
    for role, path in targets.items():
        template = template_of(role).read_text(encoding="utf-8")
        text = re.sub(r"\{(id|number|slug|title|reference_module)\}", lambda m: values[m.group(1)], template)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written

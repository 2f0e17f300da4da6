"""``python -m autograder new-stage``: write a new stage's sources from the stage template.

The template (``autograder/authoring/templates/stage/<role>.py.tmpl``, and ``text.toml.tmpl`` for the words) is a small, complete stage: one TODO
with public and hidden checks, wrong answers and reference tests, so that ``python -m autograder
build`` builds it and the grader grades it at once. Where each file goes is the layout's answer.
"""
from __future__ import annotations

import re
from pathlib import Path

from autograder.core import layout

TEMPLATES = Path(__file__).with_name("templates") / "stage"
_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


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
    targets = {role: path for role, path in files.sources().items()}
    for path in targets.values():
        if path.exists():
            raise FileExistsError(f"{layout.rel(path)} exists already")
    written = []
    for role, path in targets.items():
        template = (TEMPLATES / f"{role.replace(' ', '_')}{path.suffix}.tmpl").read_text(encoding="utf-8")
        text = re.sub(r"\{(id|number|slug|title|reference_module)\}", lambda m: values[m.group(1)], template)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written

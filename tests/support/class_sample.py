"""A generated class for the class report's tests: realistic wrong answers of a stage (its
``tests/mutants_sNN.py``), correct and unfinished notebooks, in both editions, plus files that cannot
be graded and a file name that is HTML."""
from __future__ import annotations

import importlib
import itertools
from pathlib import Path

import nbformat

from autograder.core import layout
from tests.support.variants import variant_notebook

HOSTILE_NAME = "<img src=x onerror=alert(1)>.ipynb"


def build_class(dest: Path, stage: str = "s01", size: int | None = None) -> dict[str, str]:
    """Write the class into ``dest``; returns ``{file name: what it is}``. ``size`` repeats the mix
    (mutants, reference, stub) up to that many gradable notebooks."""
    mutants = importlib.import_module(layout.stage_files(stage).mutants_module).MUTANTS
    files = layout.stage_files(stage)
    mix = [(f"mutant:{name}", edits) for name, (_, edits) in mutants.items()]
    mix += [("reference", [])] * 4 + [("stub", None)] * 4
    if size is not None:
        mix = list(itertools.islice(itertools.cycle(mix), size))
    dest.mkdir(parents=True, exist_ok=True)
    made = {}
    for i, (kind, edits) in enumerate(mix):
        lang = ("en", "zh")[i % 2]
        nb = nbformat.read(files.learner(lang), as_version=4) if edits is None else variant_notebook(stage, edits, lang)
        name = f"student{i:03d}-{files.notebook}.ipynb"
        nbformat.write(nb, dest / name)
        made[name] = f"{kind} ({lang})"
    (dest / HOSTILE_NAME).write_text("this is not a notebook", encoding="utf-8")  # its name is shown: as text
    (dest / "empty.ipynb").write_text("{}", encoding="utf-8")
    made[HOSTILE_NAME] = made["empty.ipynb"] = "not a notebook"
    return made

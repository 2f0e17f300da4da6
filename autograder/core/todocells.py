"""Finding a notebook's TODO cells by what they define, when nbgrader's metadata no longer marks them.

A notebook round-tripped through a tool that filters cell metadata (e.g. jupytext with
``--update-metadata`` or a metadata filter) keeps its code but loses ``"nbgrader": {"solution": true}``
on its TODO cells. Those cells are still recognisable: each TODO cell defines the top-level name its
TODOs need (:attr:`autograder.core.spec.Stage.owners`, e.g. ``class PrefixCacheManager``), which no other
cell of the notebook does. This module reads cell sources as text only (``ast``, or a line pattern
when a cell does not parse); nothing is executed.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from autograder.core import pysource


def defined_names(source: str) -> set[str]:
    """Top-level names a cell defines (:func:`autograder.core.pysource.defined_names`, imports aside: a
    cell that imports a TODO's name does not write it)."""
    return pysource.defined_names(source, imports=False)


def cells_defining(sources: Sequence[str], owners: Iterable[str]) -> list[int]:
    """Indices of the cells that define any of ``owners``, in notebook order."""
    wanted = set(owners)
    return [i for i, src in enumerate(sources) if defined_names(src) & wanted]


def best_stage(sources: Sequence[str], owners_by_stage: dict[str, list[str]]) -> str | None:
    """The one stage whose TODO names the cells define most (None when none, or a tie)."""
    defined = set().union(*(defined_names(s) for s in sources)) if sources else set()
    scores = {sid: len(defined & set(owners)) for sid, owners in owners_by_stage.items()}
    best = max(scores.values(), default=0)
    winners = [sid for sid, n in scores.items() if n == best]
    return winners[0] if best > 0 and len(winners) == 1 else None

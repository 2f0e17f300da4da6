"""Reading submissions as data: which files, which stage, which cells the learner wrote.

Nothing here executes learner code. A notebook is parsed as plain JSON (nbformat's reader pulls in
jsonschema and its format checkers into every grading run, for checks done here).

A submission is read only as a regular file that is what it claims to be: never through a symbolic link
(a submission that is a link to the course's own instructor notebook would be graded as the answers),
never a hard link to one of the course's own files, and never from inside the places no grading child may
see (:func:`autograder.grading.staging.always_hidden`: answers, hidden checks, tests, history, the trusted
store) when the path enters them through a link. An instructor who names a file there directly (to check
that the reference earns full marks) is still served.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core import cell_ids, layout, messages, regularfile, todocells
from autograder.core.i18n import LANGUAGES, L, notebook_language, text
from autograder.core.spec import Stage, available_stages, load_stage
from autograder.grading.reports import shown_path
from autograder.isolation.childfs import HiddenPaths

# The limit is on what is graded: the code cells' source. A notebook file may be much larger than that
# (saved plots and logs); the file limit only keeps one file from taking the grader's memory.
MAX_SOURCE_CHARS = 20 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 100 * 1024 * 1024


class SubmissionError(Exception):
    """The file cannot be graded at all (not a notebook, unknown stage, unreadable, a link).

    ``str()`` is the reason in English; ``said`` holds it in every language when the message catalog
    has it (:meth:`in_language`)."""

    def __init__(self, message: str, said: L | None = None, lang: str | None = None) -> None:
        super().__init__(message)
        self.said = said
        self.lang = lang  # the notebook's edition, when it was read far enough to tell

    @classmethod
    def of(cls, entry: L, **fields: str | L) -> SubmissionError:
        """The catalog's ``entry`` with ``fields`` (each a string, or a text of its own in both languages)."""
        said = L(*(getattr(entry, lang).format(**{k: text(v, lang) for k, v in fields.items()}) for lang in LANGUAGES))
        return cls(said.en, said)

    def in_language(self, lang: str | None = None) -> str:
        """The reason in ``lang``, else in the notebook's edition; where that is unknown (nothing could be
        read) in the language ``PCW_LANG`` names, else in every language, as a learner's report does for a
        missing file."""
        if self.said is None:
            return str(self)
        lang = lang or self.lang or (os.environ.get("PCW_LANG") if os.environ.get("PCW_LANG") in LANGUAGES else None)
        return text(self.said, lang) if lang else " / ".join(text(self.said, each) for each in LANGUAGES)


@dataclass
class Submission:
    """A notebook read as data: its stage, the learner's solution cells in order, and its digest."""

    path: Path
    stage: Stage
    cells: list[str]
    digest: str
    warnings: list[str] = field(default_factory=list)
    lang: str = "en"   # the edition it came from (its metadata): the language of its report
    identity: tuple[int, int] = (0, 0)  # (device, inode) of the file read: two paths, one file


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; a folder means every notebook under it (nbgrader's layout or flat)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(q for q in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
        else:
            out.append(p)
    return out


def read_regular(path: Path, limit: int = MAX_NOTEBOOK_BYTES, *, hidden: Iterable[str] = ()) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; :class:`SubmissionError` for anything
    else (a folder, a FIFO, a device, a link: see the module docstring; ``hidden``: further places no
    grading child may see), without waiting or reading more."""
    return _read(path, limit, hidden)[0]


def _read(path: Path, limit: int, hidden: Iterable[str]) -> tuple[bytes, tuple[int, int]]:
    name = shown_path(path.name)
    try:
        data, st = regularfile.read_bounded(path, limit, vet=lambda fd, st: _refuse_course_files(fd, st, path, hidden))
    except regularfile.Refused as r:
        if r.why == regularfile.LINK:
            raise SubmissionError.of(messages.SUBMISSION_IS_LINK, name=name, kind=messages.LINK_SYMBOLIC) from None
        if r.why == regularfile.FOLDER:
            raise SubmissionError(f"{name} is a folder, not a notebook file") from None
        if r.why == regularfile.SPECIAL:
            raise SubmissionError(f"{name} is not a regular file ({r.detail}); only notebook files are read") from None
        if r.why == regularfile.TOO_LARGE:
            raise SubmissionError(_too_large(name, limit)) from None
        raise SubmissionError(f"cannot read {shown_path(path)}: {r.detail}") from None
    return data, (st.st_dev, st.st_ino)


def protected_places(hidden: Iterable[str] = ()) -> HiddenPaths:
    """What a submission must not be read from through a link: what no grading child may see, and ``hidden``."""
    from autograder.grading.staging import always_hidden

    return _places(tuple(dict.fromkeys([*always_hidden(), *map(os.path.abspath, hidden)])))


@functools.lru_cache(maxsize=8)
def _places(paths: tuple[str, ...]) -> HiddenPaths:
    return HiddenPaths(paths)  # resolved once per set of places, as a grading run's own hidden paths are


def _refuse_course_files(fd: int, st: os.stat_result, path: Path, hidden: Iterable[str]) -> None:
    """:class:`SubmissionError` when the open file ``fd`` is one of the course's protected files reached
    through a link on ``path`` (a symbolic link to a folder on the way, ``..`` after one), or a hard link
    to one of them."""
    places = protected_places(hidden)
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")  # the file actually opened, whatever the path did since
    except OSError:
        real = os.path.realpath(path)
    place = places.holding(real)
    if place is not None:
        link = _link_into(path, place)
        if link is not None:
            raise SubmissionError.of(messages.SUBMISSION_IN_COURSE, name=shown_path(path.name), link=shown_path(Path(link).name))
    elif st.st_nlink > 1 and (st.st_dev, st.st_ino) in _inodes(places.real):
        raise SubmissionError.of(messages.SUBMISSION_IS_LINK, name=shown_path(path.name), kind=messages.LINK_HARD)


def _link_into(path: Path, place: str) -> str | None:
    """The part of ``path`` through which it enters ``place`` (a real path) other than by that place's
    own name: a symbolic link, or ``..`` out of one; None when every entry into ``place`` is by name
    (an instructor naming the course's own file, perhaps from a checkout behind a linked folder)."""
    parts = Path(os.path.join(os.getcwd(), path)).parts  # not normalised: ".." is resolved as the kernel does
    here, inside = parts[0], False
    for part in parts[1:]:
        step = os.path.join(here, part)
        real = os.path.realpath(step)
        now = real == place or real.startswith(place.rstrip("/") + "/")
        if now and not inside:
            by_name = part not in (".", "..") and not os.path.islink(step) and real == os.path.join(os.path.realpath(here), part)
            if not by_name:
                return step
        here, inside = step, now
    return None


@functools.lru_cache(maxsize=8)
def _inodes(places: tuple[str, ...]) -> frozenset[tuple[int, int]]:
    """(device, inode) of every regular file in ``places``: a hard link is the same inode under another name."""
    out = set()
    for place in places:
        for folder, _, names in os.walk(place):
            for n in names:
                try:
                    st = os.lstat(os.path.join(folder, n))
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    out.add((st.st_dev, st.st_ino))
        try:
            st = os.lstat(place)
            if stat.S_ISREG(st.st_mode):
                out.add((st.st_dev, st.st_ino))
        except OSError:
            pass
    return frozenset(out)


def _too_large(name: str, limit: int) -> str:
    return f"{name} is larger than {limit // 2**20} MiB (outputs included: clear its outputs and save it again)"


def _nbgrader(cell: dict, index: int, name: str) -> dict | None:
    """A cell's nbgrader metadata, None without any; :class:`SubmissionError` when it is malformed."""
    meta = cell.get("metadata", {}).get("nbgrader")
    if meta is None:
        return None
    why = None
    if not isinstance(meta, dict):
        why = f"a {type(meta).__name__} where an object belongs"
    elif "grade_id" in meta and not isinstance(meta["grade_id"], str):
        why = "its grade_id is not a string"
    elif any(k in meta and not isinstance(meta[k], bool) for k in ("solution", "grade", "locked")):
        why = "solution/grade/locked are not true or false"
    if why:
        raise SubmissionError(f"{name}: cell {index + 1} has malformed nbgrader metadata ({why})")
    return meta


def _stage_from(metas: list[dict | None]) -> str | None:
    votes: dict[str, int] = {}
    for meta in metas:
        sid = cell_ids.stage_of(meta.get("grade_id", "")) if meta else None
        if sid:
            votes[sid] = votes.get(sid, 0) + 1
    known = set(available_stages())
    ranked = [s for s, _ in sorted(votes.items(), key=lambda kv: -kv[1]) if s in known]
    return ranked[0] if ranked else None


def read_submission(path: Path, hidden: Iterable[str] = (), stage: str | None = None) -> Submission:
    """``path`` read as a submission (see :func:`read_regular` for ``hidden``); :class:`SubmissionError` says why not.

    ``stage``: the stage the path handed in for (an assignment's, a bundle's, a template's). A notebook
    whose cells belong to another stage is refused, never graded as the stage it claims; one whose
    stage cannot be told is graded as ``stage``."""
    raw, identity = _read(path, MAX_NOTEBOOK_BYTES, hidden)
    name = shown_path(path.name)
    nb = parse_notebook(raw, name)
    metas = [_nbgrader(c, i, name) for i, c in enumerate(nb["cells"])]
    code = [(i, cell_source(c)) for i, c in enumerate(nb["cells"]) if c.get("cell_type") == "code"]
    if sum(len(s) for _, s in code) > MAX_SOURCE_CHARS:
        raise SubmissionError(f"{name}: its code cells hold more than {MAX_SOURCE_CHARS // 2**20} Mi characters of source")
    known = set(available_stages())
    by_meta = _stage_from(metas)
    by_name = layout.stage_of_notebook(path.stem)
    by_name = by_name if by_name in known else None
    if by_meta is None:  # no metadata: whose TODO names do the cells define?
        by_meta = todocells.best_stage([s for _, s in code], {s: load_stage(s, hidden=False).owners for s in sorted(known)})
    sid = by_meta or by_name
    if stage is not None:
        if by_meta is not None and by_meta != stage:
            exc = SubmissionError.of(messages.SUBMISSION_OTHER_STAGE, name=name, found=by_meta, wanted=stage,
                                     found_name=layout.stage_files(by_meta).notebook,
                                     wanted_name=layout.stage_files(stage).notebook)
            exc.lang = notebook_language(nb)
            raise exc
        sid = stage
    if sid is None:
        why = "" if any(metas) else (": no cell carries nbgrader metadata (e.g. after a jupytext round trip that "
                                     "filtered it), its name is no stage's, and no cell defines a TODO of any stage")
        raise SubmissionError(f"{name}: cannot tell which stage this notebook belongs to{why}")
    graded = load_stage(sid, hidden=True)
    warnings = _stage_warnings(sid, by_meta, by_name, path)
    chosen = [i for i, _ in code if (metas[i] or {}).get("solution") is True]
    sources = dict(code)
    if not any(metas):  # every cell lost its nbgrader metadata (e.g. a jupytext round trip)
        chosen = [code[k][0] for k in todocells.cells_defining([s for _, s in code], graded.owners)]
        if not chosen:
            raise SubmissionError(f"{name}: no TODO cells found: no cell carries nbgrader metadata (e.g. after a "
                                  f"jupytext round trip that filtered it) and none defines {', '.join(graded.owners)}")
        warnings.append("no cell carries nbgrader metadata (a jupytext round trip?): graded the cells that define "
                        + ", ".join(graded.owners))
    else:
        lacking = set(graded.owners) - set().union(*(todocells.defined_names(sources[i]) for i in chosen))
        # only when a TODO name is lacking are the other cells parsed (most of a submission's reading time)
        others = [(i, s) for i, s in code if i not in chosen and metas[i] is None] if lacking else []
        found = [others[k][0] for k in todocells.cells_defining([s for _, s in others], lacking)]
        if found:
            chosen = sorted(chosen + found)
            warnings.append(f"{len(found)} TODO cell(s) had lost their nbgrader metadata; graded them too")
    return Submission(path, graded, [sources[i] for i in chosen], hashlib.sha256(raw).hexdigest(), warnings,
                      notebook_language(nb), identity)


def _stage_warnings(sid: str, by_meta: str | None, by_name: str | None, path: Path) -> list[str]:
    out = []
    if by_meta and by_name and by_meta != by_name:
        out.append(f"this notebook is stage {by_meta}, but its file name is stage {by_name}'s")
    folder = layout.stage_of_notebook(path.parent.name)
    if folder and folder != sid and path.parent.name in {s.notebook for s in layout.all_stages() if s.slug}:
        out.append(f"this notebook is stage {sid}, but it is in assignment folder {shown_path(path.parent.name)}")
    return out


def parse_notebook(raw: bytes, name: str) -> dict:
    """A v4 notebook as plain JSON, or :class:`SubmissionError` saying why it is not one."""
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SubmissionError(f"{name} is not a readable notebook ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SubmissionError(f"{name} is not a readable notebook (no list of cells)")
    if nb.get("nbformat") != 4:
        raise SubmissionError(f"{name} is in notebook format {nb.get('nbformat')!r}; open and save it in Jupyter (format 4)")
    if not all(isinstance(c, dict) and isinstance(c.get("metadata", {}), dict) for c in nb["cells"]):
        raise SubmissionError(f"{name} is not a readable notebook (malformed cells)")
    return nb


def cell_source(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def digest(path: Path) -> str | None:
    """sha256 of the file now, or None when it is gone (or no longer a readable notebook file)."""
    try:
        return hashlib.sha256(read_regular(path)).hexdigest()
    except SubmissionError:
        return None

"""What is in this course and where: the one module that knows the repository's layout.

Stages are discovered from their files; there is no list to edit. Stage ``NN`` (id ``sNN``) named
``name`` is one folder, ``solutions/NN_name/``, holding every file an author writes for it, named by
role (:data:`ROLES`: the notebook source, the reference, the public and hidden checks and their words,
the wrong answers, the correct alternatives, the tier-3 fills, the stage's metadata; see
``docs/AUTHORING.md``). ``python -m autograder build`` generates from them the notebooks of each
edition and the public expected values, where the design card names them.

Everything else sees a stage's files under their *shipped* names, the ones a learner's copy, a grading
child and the wheel hold and that the course has always imported: ``autograder.checks.sNN`` (and
``autograder/checks/sNN.toml``), ``solutions.sNN_<name>``, ``solutions.hidden.sNN``, ``tests.mutants_sNN``.
In a checkout, :class:`StageModules` (installed when this module is imported) serves those names from
the stage folder; a copy without stage folders holds the files under their shipped paths
(:func:`shipped_as`), and the same names resolve the ordinary way. This module imports nothing from the
course, so every other module can ask it.
"""
from __future__ import annotations

import ast
import importlib.abc
import importlib.util
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from autograder.core import pysource
from autograder.core.i18n import DEFAULT, LANGUAGES  # the one list of languages: i18n owns it

ROOT = Path(__file__).resolve().parents[2]  # autograder/core/layout.py
AUTOGRADER = ROOT / "autograder"
CHECKS = AUTOGRADER / "checks"  # shared check code; a copy's public checks, shipped as sNN.py + sNN.toml
EXPECTED = AUTOGRADER / "expected"
SOLUTIONS = ROOT / "solutions"  # the instructor's side: one folder per stage, and the instructor notebooks
WORKBOOK = ROOT / "workbook"  # the course's library of given code
SOURCES = SOLUTIONS / "src"  # a wheel's notebook sources (shipped as NN_name.py)
HIDDEN = SOLUTIONS / "hidden"  # a grader's copy of the hidden checks (shipped as sNN.py + sNN.toml)
NOTEBOOKS = ROOT / "notebooks"
TESTS = ROOT / "tests"
KERNELS = ROOT / "kernels"
DATA = ROOT / "data" if (ROOT / "data").is_dir() else ROOT / "pcw_data"  # a checkout, or pip-installed
GLOSSARY = ROOT / "docs" / "glossary.md"
README = ROOT / "README.md"
README_ZH = ROOT / "README.zh.md"
COURSE_TOML = ROOT / "course.toml"
REQUIREMENTS = ROOT / "requirements.txt"

#: The course's packages whose modules a stage's files import by name: ``workbook`` (given code) and
#: ``solutions`` (references, hidden checks). A grading child gets their modules as text, never files.
COURSE_PACKAGES = ("solutions", "workbook")

#: Editions of every notebook: the default one (English) lives at the top of ``notebooks/`` and
#: ``solutions/``; every other one in a subfolder named after its language.
DEFAULT_LANGUAGE = DEFAULT

_STAGE_ID = re.compile(r"^s(\d\d)$")
_FOLDER = re.compile(r"^(\d\d)_([a-z][a-z0-9_]*)$")
_REFERENCE = re.compile(r"^s(\d\d)_([a-z0-9_]+)\.py$")
_SOURCE = re.compile(r"^(\d\d)_([a-z0-9_]+)\.py$")
_SPEC = re.compile(r"^s(\d\d)\.py$")


@dataclass(frozen=True)
class Role:
    """One kind of file a stage author writes.

    ``file`` is its name in the stage folder. ``shipped`` is its path (relative to the root, with
    ``{id}``, ``{slug}`` and ``{stem}`` filled in) in a copy that has no stage folders: a learner's
    release, a grading child's staging dir, the wheel; ``None`` for a file no copy carries. ``module``
    is the name it is imported by, in a checkout and in every copy alike; ``None`` for data.

    Invariant: where both are given, ``shipped`` and ``module`` name the same place (``a/b/c.py`` is
    module ``a.b.c``), so a copy imports the file the ordinary way by the name a checkout serves it under.
    """

    file: str
    shipped: str | None = None
    module: str | None = None


#: Every file of a stage folder, by role. ``tests/engine/test_layout.py`` holds every stage to it.
ROLES: dict[str, Role] = {
    "source": Role("notebook.py", "solutions/src/{stem}.py"),
    "reference": Role("reference.py", "solutions/{id}_{slug}.py", "solutions.{id}_{slug}"),
    "spec": Role("checks.py", "autograder/checks/{id}.py", "autograder.checks.{id}"),
    "text": Role("checks.toml", "autograder/checks/{id}.toml"),
    "hidden": Role("hidden.py", "solutions/hidden/{id}.py", "solutions.hidden.{id}"),
    "hidden text": Role("hidden.toml", "solutions/hidden/{id}.toml"),
    "mutants": Role("mutants.py", None, "tests.mutants_{id}"),
    "alternatives": Role("alternatives.py", None, "tests.alternatives_{id}"),
    "fills": Role("fills.toml"),
    "meta": Role("stage.toml", "autograder/checks/{id}.stage.toml"),
}
#: Roles only the course's own tests read: no copy of the course carries them, not even a grader's.
TEST_ROLES = ("mutants", "alternatives", "fills")


def stage_number(stage_id: str) -> int:
    m = _STAGE_ID.match(stage_id)
    if not m:
        raise ValueError(f"a stage id looks like 's07', not {stage_id!r}")
    return int(m.group(1))


def stage_id(number: int) -> str:
    return f"s{number:02d}"


@dataclass(frozen=True)
class StageFiles:
    """Every path of one stage, and what is still missing.

    Invariants: ``slug`` is the stage's name, from its folder ``solutions/NN_<slug>/`` (or, in a copy
    without stage folders, from its shipped reference or notebook source); it is ``None`` only while
    neither exists, and then no path that needs it can be asked for. A role's path is the file in the
    stage folder, except in a copy that holds the stage under its shipped paths (:attr:`is_shipped_copy`).
    """

    id: str
    slug: str | None

    @property
    def number(self) -> int:
        return stage_number(self.id)

    @property
    def notebook(self) -> str:
        """The notebook stem, e.g. ``02_block_hash`` (also the nbgrader assignment's name and the stage folder's)."""
        if self.slug is None:
            raise LookupError(f"{self.id} has neither a stage folder nor a shipped reference or notebook source yet")
        return f"{self.number:02d}_{self.slug}"

    def assignment(self, lang: str = DEFAULT_LANGUAGE) -> str:
        """The nbgrader assignment of an edition: the notebook stem, plus ``_<lang>`` for non-default ones."""
        return self.notebook if lang == DEFAULT_LANGUAGE else f"{self.notebook}_{_check_language(lang)}"

    # -- sources ------------------------------------------------------------------------------
    @property
    def folder(self) -> Path:
        """``solutions/NN_<slug>/``: everything an author writes for this stage."""
        return SOLUTIONS / self.notebook

    @property
    def is_shipped_copy(self) -> bool:
        """No stage folder, but the public checks under their shipped path: a learner's release, a grading
        child's staging dir or an installed wheel. (A stage not written yet is not one: it is authored.)"""
        return (self.slug is None or not self.folder.is_dir()) and self.shipped("spec").exists()

    def shipped(self, role: str) -> Path:
        """Where a copy without stage folders holds ``role``'s file (:data:`ROLES`)."""
        where = ROLES[role].shipped
        if where is None:
            raise LookupError(f"no copy of the course carries a stage's {role}")
        if self.slug is None and ("{slug}" in where or "{stem}" in where):
            raise LookupError(f"{self.id} has no name yet: its {role} has no path")
        return ROOT / where.format(id=self.id, slug=self.slug, stem=self.notebook if self.slug is not None else "")

    def path(self, role: str) -> Path:
        """The file of ``role``: in the stage folder, or where a shipped copy holds it."""
        if (self.slug is None or self.is_shipped_copy) and ROLES[role].shipped is not None:
            return self.shipped(role)
        return self.folder / ROLES[role].file

    def module(self, role: str) -> str:
        """The name ``role``'s file is imported by (the same in a checkout and in every copy)."""
        name = ROLES[role].module
        if name is None:
            raise LookupError(f"a stage's {role} is not a module")
        return name.format(id=self.id, slug=self.slug)

    @property
    def spec(self) -> Path:
        return self.path("spec")

    @property
    def text(self) -> Path:
        """The stage's words in both languages, apart from the spec's code (:mod:`autograder.core.stage_text`)."""
        return self.path("text")

    @property
    def spec_module(self) -> str:
        return self.module("spec")

    @property
    def reference(self) -> Path:
        return self.path("reference")

    @property
    def reference_module(self) -> str:
        return self.module("reference")

    @property
    def source(self) -> Path:
        return self.path("source")

    @property
    def hidden(self) -> Path:
        return self.path("hidden")

    @property
    def hidden_module(self) -> str:
        return self.module("hidden")

    @property
    def hidden_text(self) -> Path:
        """The hidden checks' words (a learner reads one only when that check fails); never released."""
        return self.path("hidden text")

    @property
    def mutants(self) -> Path:
        return self.path("mutants")

    @property
    def mutants_module(self) -> str:
        return self.module("mutants")

    @property
    def alternatives(self) -> Path:
        """Correct answers written other ways than the reference."""
        return self.path("alternatives")

    @property
    def alternatives_module(self) -> str:
        return self.module("alternatives")

    @property
    def fills(self) -> Path:
        """Tier 3 of each code TODO's hints filled in: the expressions for its blanks (a developer's answer key)."""
        return self.path("fills")

    @property
    def meta(self) -> Path:
        """What the runtime knows of the stage before importing anything of it (``gpu``)."""
        return self.path("meta")

    @property
    def reference_tests(self) -> Path:
        return TESTS / "stages" / f"test_{self.id}_reference.py"

    # -- generated ----------------------------------------------------------------------------
    def instructor(self, lang: str = DEFAULT_LANGUAGE) -> Path:
        return _edition_dir(SOLUTIONS, lang) / f"{self.notebook}.ipynb"

    def learner(self, lang: str = DEFAULT_LANGUAGE) -> Path:
        return _edition_dir(NOTEBOOKS, lang) / f"{self.notebook}.ipynb"

    def presenter(self, lang: str = DEFAULT_LANGUAGE) -> Path:
        """The instructor notebook without nbgrader's markers or hidden tests, for projecting in class."""
        return _edition_dir(SOLUTIONS / "presenter", lang) / f"{self.notebook}.ipynb"

    @property
    def expected(self) -> Path:
        return EXPECTED / f"{self.id}.json"

    def sources(self) -> dict[str, Path]:
        """What an author writes, by role: every file of the stage folder, and the reference tests."""
        if self.slug is None:
            return {"spec": self.spec, "text": self.text}
        return {**{role: self.path(role) for role in ROLES}, "reference tests": self.reference_tests}

    @property
    def languages(self) -> tuple[str, ...]:
        """The editions this stage has: English, and Chinese once its notebook source has Chinese prose."""
        has_zh = self.slug is not None and self.source.exists() and 'lang="zh"' in self.source.read_text(encoding="utf-8")
        return LANGUAGES if has_zh else (DEFAULT_LANGUAGE,)

    def generated(self) -> list[Path]:
        """What ``python -m autograder build`` writes for this stage."""
        return [self.expected, *(p for lang in self.languages
                                 for p in (self.instructor(lang), self.learner(lang), self.presenter(lang)))]

    def missing_sources(self) -> list[str]:
        """``"sNN: write <path>"`` for every source not written yet (empty when complete)."""
        if self.slug is None:
            return [f"{self.id}: write the stage folder {rel(SOLUTIONS)}/{self.number:02d}_<name>/ "
                    f"(python -m autograder new-stage {self.id} <name>)"]
        return [f"{self.id}: write {rel(p)}" for p in self.sources().values() if not p.exists()]

    def missing(self) -> list[str]:
        """Missing sources, then missing generated files (``"sNN: run python -m autograder build"``)."""
        out = self.missing_sources()
        if not out and not all(p.exists() for p in self.generated()):
            out.append(f"{self.id}: run `python -m autograder build` (generated files are missing)")
        return out

    @property
    def is_complete(self) -> bool:
        """Every source exists: the build can generate its notebooks."""
        return not self.missing_sources()

    @property
    def is_built(self) -> bool:
        """Every source and every generated file exists: the stage can be graded and released."""
        return not self.missing()


def _check_language(lang: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; editions: {LANGUAGES}")
    return lang


def _edition_dir(base: Path, lang: str) -> Path:
    return base if _check_language(lang) == DEFAULT_LANGUAGE else base / lang


def rel(path: Path) -> str:
    """A path relative to the repository root, for messages."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


# -- discovery ------------------------------------------------------------------------------------
def _slugs_by_number() -> dict[int, set[str]]:
    """Stage number -> the slugs its files use. Read again only when one of the three folders changed
    (a file added, removed or renamed changes its folder's mtime): a class's grading asks hundreds of
    times, and a test or an author may add a stage while the process runs."""
    key = tuple(_mtime(d) for d in (SOLUTIONS, SOURCES, CHECKS))
    if _SLUGS[0] == key:
        return {n: set(slugs) for n, slugs in _SLUGS[1].items()}
    found = _read_slugs()
    # a folder changed in the last two seconds may change again within its file system's mtime tick
    # (a second on some): remember only what is older than that
    if all(m is None or m < time.time_ns() - 2 * 10**9 for m in key):
        _SLUGS[:] = [key, found]
    return found


_SLUGS: list = [None, {}]  # [the folders' mtimes, what _read_slugs found then]


def _mtime(folder: Path) -> int | None:
    try:
        return folder.stat().st_mtime_ns
    except OSError:
        return None


def _read_slugs() -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for p in SOLUTIONS.iterdir() if SOLUTIONS.is_dir() else ():
        m = _FOLDER.match(p.name)
        if m and p.is_dir():
            found.setdefault(int(m.group(1)), set()).add(m.group(2))
    # a copy without stage folders: its shipped references, notebook sources and public checks
    for folder, pattern in ((SOLUTIONS, _REFERENCE), (SOURCES, _SOURCE)):
        for p in folder.glob("*.py") if folder.is_dir() else ():
            m = pattern.match(p.name)
            if m:
                found.setdefault(int(m.group(1)), set()).add(m.group(2))
    for p in CHECKS.glob("s*.py") if CHECKS.is_dir() else ():
        m = _SPEC.match(p.name)
        if m:
            found.setdefault(int(m.group(1)), set())
    return found


def stage_ids() -> list[str]:
    """Every stage that has at least one of its files, in order."""
    return [stage_id(n) for n in sorted(_slugs_by_number())]


def stage_text_file(sid: str) -> Path:
    """The stage's words (``checks.toml`` of its folder, or ``autograder/checks/sNN.toml`` where shipped);
    needs no other file of the stage (a grading child has none)."""
    return stage_files(sid).text


def hidden_text_file(sid: str) -> Path:
    """The hidden checks' words (``hidden.toml`` of the stage folder); absent where hidden checks are (a
    learner's copy, a grading child)."""
    return stage_files(sid).hidden_text


def stage_files(sid: str) -> StageFiles:
    """The paths of stage ``sid``. Raises ``LookupError`` when its reference module and notebook
    source disagree on the stage's name."""
    slugs = _slugs_by_number().get(stage_number(sid), set())
    if len(slugs) > 1:
        raise LookupError(f"{sid}: its files disagree on the stage's name: {sorted(slugs)} (one folder "
                          f"solutions/NN_<name>/ per stage; a shipped copy's sNN_<name>.py and NN_<name>.py must agree)")
    return StageFiles(sid, next(iter(slugs), None))


def all_stages() -> list[StageFiles]:
    return [stage_files(s) for s in stage_ids()]


def built_stages() -> list[str]:
    """Stages whose sources and generated files all exist."""
    return [s.id for s in all_stages() if s.is_built]


def stage_of_assignment(name: str) -> str | None:
    """The stage whose assignment (any edition's: ``03_block_pool``, ``03_block_pool_zh``) is exactly
    ``name``; None for any other name (an instructor's own assignment names pin nothing)."""
    for s in all_stages():
        if s.slug is not None and name in {s.assignment(lang) for lang in s.languages}:
            return s.id
    return None


def stage_of_notebook(stem: str) -> str | None:
    """The stage whose notebook stem begins ``stem`` (e.g. a renamed copy ``02_block_hash-alice``)."""
    for s in all_stages():
        if s.slug is not None and stem.startswith(s.notebook):
            return s.id
    return None


# -- which modules a stage may see --------------------------------------------------------------
def _course_imports(path: Path) -> set[str]:
    """The modules of the course's packages a file imports (by name, at any depth of its code)."""
    st = path.stat()
    return set(_imports_of_version(str(path), st.st_mtime_ns, st.st_size))


def _is_course_module(name: str) -> bool:
    return name.partition(".")[0] in COURSE_PACKAGES and "." in name


@lru_cache(maxsize=512)
def _imports_of_version(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    """:func:`_course_imports` of one version of a file (a changed file is a new key: read again)."""
    names: set[str] = set()
    for node in ast.walk(pysource.parse(Path(path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in COURSE_PACKAGES:  # from workbook import traces
            names |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and _is_course_module(node.module):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names if _is_course_module(a.name)}
    return frozenset(names)


def given_modules() -> dict[str, Path]:
    """Every module of ``workbook/``: given code, and the re-exports of earlier stages' references."""
    return {f"workbook.{p.stem}": p for p in sorted(WORKBOOK.glob("*.py")) if p.name != "__init__.py"}


def reference_modules() -> dict[str, Path]:
    """Every stage's reference module, by its module name (``solutions.sNN_<name>``)."""
    return {s.reference_module: s.reference for s in all_stages() if s.slug is not None and s.reference.exists()}


def course_modules() -> dict[str, Path]:
    """Every module a stage's files may import by name: the given modules and the references."""
    return {**given_modules(), **reference_modules()}


def package_inits() -> dict[str, Path]:
    """The ``__init__.py`` of each course package (``solutions``'s maps the given modules' former names)."""
    return {name: ROOT / name / "__init__.py" for name in COURSE_PACKAGES}


@lru_cache(maxsize=None)
def _closure(module: str) -> frozenset[str]:
    """``module`` and every course module it imports, transitively."""
    mods = course_modules()
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m in seen or m not in mods:
            continue
        seen.add(m)
        todo += sorted(_course_imports(mods[m]))
    return frozenset(seen)


def _used_modules(sid: str) -> set[str]:
    """Course modules stage ``sid``'s own files import, transitively (what it needs)."""
    files = stage_files(sid)
    roots = [files.spec, files.hidden] + ([files.reference, files.source] if files.slug is not None else [])
    names = {m for p in roots if p.exists() for m in _course_imports(p)}
    return set().union(*(_closure(m) for m in names)) if names else set()


def visible_modules(sid: str) -> dict[str, Path]:
    """The course modules (given modules of ``workbook``, references) that stage ``sid``'s grading
    child and its release may see.

    The one rule: a module is visible to stage N when stage N's own files (reference, notebook
    source, checks) import it, directly or not, and neither it nor anything it imports is the
    reference of stage N or of a later stage. So the earlier references and given modules the stage
    builds on are visible; its own reference (the answers) never is, and neither is a given module
    of a later stage (which may re-implement this stage's TODOs), nor ``workbook``'s re-export of a
    reference, which depends on that stage's reference and so shows only to the stages after it.
    """
    n = stage_number(sid)
    mods = course_modules()
    owner = {s.reference_module: s.number for s in all_stages() if s.slug is not None}  # reference -> its stage
    out = {}
    for name in sorted(_used_modules(sid)):
        owners = [owner[m] for m in _closure(name) if m in owner]
        if name in mods and all(o < n for o in owners):
            out[name] = mods[name]
    return out


# -- what a release ships ------------------------------------------------------------------------
def _stage_runtime_files() -> list[Path]:
    """Each stage's files that every copy of the course carries: its public checks, their words, its metadata."""
    return [p for f in all_stages() for p in (f.spec, f.text, *([f.meta] if f.slug is not None else [])) if p.exists()]


def _runtime_files() -> list[Path]:
    """The course runtime every release carries: the grader/helper package with every stage's public
    checks, and the kernels (in the order of their shipped paths)."""
    files = [p for p in AUTOGRADER.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    shipped = _shipped_paths()
    files = sorted(dict.fromkeys(files + _stage_runtime_files()), key=lambda p: shipped.get(p) or rel(p))
    files += sorted(KERNELS.rglob("*.py"))
    return files + [COURSE_TOML]


def shipped_as(path: Path) -> str:
    """The path, relative to the root, that a copy of the course gives ``path``: a stage folder's file
    moves to its shipped path (:data:`ROLES`), anything else keeps its own."""
    return shipped_names([path])[0][1]


def shipped_names(paths: Iterable[Path]) -> list[tuple[Path, str]]:
    """``(path, shipped_as(path))`` of each of ``paths``, the stage folders read once for them all (they
    are read for every file otherwise: a grading run's staging asked that of its hundred files)."""
    shipped = _shipped_paths()
    return [(p, shipped.get(p) or rel(p)) for p in paths]


def _shipped_paths() -> dict[Path, str]:
    out: dict[Path, str] = {}
    for f in all_stages():
        if f.slug is None or f.is_shipped_copy:
            continue
        for role, r in ROLES.items():
            if r.shipped is not None:
                out[f.folder / r.file] = rel(f.shipped(role))
    return out


#: Roles only a grader's copy carries: the hidden checks and their words (never a learner's wheel or release).
HIDDEN_ROLES = ("hidden", "hidden text")


def shipped_files() -> list[tuple[Path, str]]:
    """``(stage folder file, shipped path)`` of every stage file the learner's wheel carries besides its
    packages: every shipped role but the hidden checks and their words (a grader's copy is a source
    checkout, which holds those)."""
    hidden = {f.folder / ROLES[r].file for f in all_stages() if f.slug is not None for r in HIDDEN_ROLES}
    return [(p, dest) for p, dest in _shipped_paths().items() if p.exists() and p not in hidden]


def child_files() -> list[Path]:
    """What a grading child may read from disk: the runtime's Python files and the stages' text files (never ``solutions/``,
    ``workbook/``, ``tests/`` or generated expected values; the course modules it may see arrive as text).
    Staged under :func:`shipped_as`, so the public checks of a stage sit where the child imports them,
    ``autograder/checks/``."""
    texts = {f.text for f in all_stages()}
    return [p for p in _runtime_files() if (p.suffix == ".py" or p in texts)
            and "templates" not in p.relative_to(ROOT).parts]


def release_files(sid: str) -> list[tuple[Path, str]]:
    """``(source path, path inside the release)`` of everything a learner's copy of stage ``sid``
    needs besides its notebook: the runtime, the course packages, the visible course modules, and the
    data files those modules or the notebook name. Never this stage's or a later stage's reference,
    nor hidden checks. A stage folder's file goes in under its shipped path (:func:`shipped_as`)."""
    visible = visible_modules(sid)
    files = _runtime_files() + [*package_inits().values(), *visible.values()]
    sf = stage_files(sid)
    # data: what the notebook and the modules it loads may read
    texts = [p.read_text(encoding="utf-8") for p in (sf.source, *visible.values()) if p.exists()]
    used = [p for p in sorted(DATA.iterdir()) if p.is_file() and any(p.name in t for t in texts)] if DATA.is_dir() else []
    if used and (DATA / "README.md").exists() and DATA / "README.md" not in used:
        used.append(DATA / "README.md")  # the attribution travels with the data
    return shipped_names(files + used)


def grader_files() -> list[Path]:
    """Everything a grading machine (e.g. a Gradescope image) needs: runtime, the given modules, every
    stage folder (but what only the course's tests read: wrong answers, alternatives, fills), the
    instructor notebooks, the data, and the requirements."""
    tests_only = {f.folder / ROLES[r].file for f in all_stages() if f.slug is not None for r in TEST_ROLES}
    files = _runtime_files()
    files += [p for d in (WORKBOOK, SOLUTIONS) for p in sorted(d.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
              and p not in tests_only and p not in files]
    files += [p for p in sorted(DATA.iterdir()) if p.is_file()] if DATA.is_dir() else []
    return files + [REQUIREMENTS]


# -- the shipped module names, served from the stage folders ---------------------------------------
_STAGE_MODULE = re.compile(r"^(?:autograder\.checks\.s(\d\d)|solutions\.s(\d\d)_\w+|solutions\.hidden\.s(\d\d)"
                           r"|tests\.(?:mutants|alternatives)_s(\d\d))$")


class StageModules(importlib.abc.MetaPathFinder):
    """Finds a stage's modules under the names they are imported by (:attr:`Role.module`) in its folder.

    So ``autograder.checks.s04``, ``solutions.s04_eviction`` (what a notebook of an earlier release
    imports), ``solutions.hidden.s04`` and ``tests.mutants_s04`` resolve in a checkout, where the files
    are ``solutions/04_eviction/checks.py`` and so on. Invariant: it answers only for a stage folder's
    file that exists, and nothing else (a shipped copy has none: its files are found the ordinary way,
    and a grading child never has this checkout's ``solutions/`` in its view).
    """

    #: marks the finder by attribute, not by class: one per process, even if this module is loaded twice
    _pcw_stage_modules = True

    def find_spec(self, fullname, path=None, target=None):
        m = _STAGE_MODULE.match(fullname)
        if m is None:
            return None
        try:
            f = stage_files(stage_id(int(next(g for g in m.groups() if g))))
            if f.slug is None or f.is_shipped_copy:
                return None
            role = next((r for r, spec in ROLES.items() if spec.module and f.module(r) == fullname), None)
            file = f.folder / ROLES[role].file if role else None
        except (LookupError, OSError):
            return None
        if file is None or not file.is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, file)


def install_stage_modules() -> None:
    """Put :class:`StageModules` first on ``sys.meta_path``, once per process (importing this module does)."""
    if not any(getattr(f, "_pcw_stage_modules", False) for f in sys.meta_path):
        sys.meta_path.insert(0, StageModules())


install_stage_modules()

"""A persistent, content-addressed store of the grader's trusted material, shared by grading processes.

Computing a stage's trusted material (:mod:`autograder.grading.trusted`: the reference's outcome of
every check, the leak guard learned from the secrets) runs the reference's probes, imports what they
need (torch, for stage 6) and builds the guard (``benchmarks/bench_trusted_store.py`` measures what
that costs; docs/performance.md). Every grading process (a CLI run, a test worker,
one nbgrader or Gradescope run) would pay it again for the same course files; this store keeps each
result in a file named by a digest of everything it depends on, so a second process reuses it.

**The key** (:func:`key`) is a SHA-256 over:

* the bytes of every file a grader may read (:func:`course_files`): :func:`autograder.core.layout.grader_files`
  (the whole runtime ``autograder/`` with every stage's checks ``sNN.py``, text ``sNN.toml`` and
  generated public expected values, ``kernels/``, the given modules of ``workbook/``, all of
  ``solutions/``: references, hidden checks, instructor notebooks; the data files; ``course.toml``; ``requirements.txt``) and the
  learner notebooks under ``notebooks/`` (which the leak guard reads as public text). Each file enters
  by its path relative to the repository and a digest of its bytes, so adding, removing, renaming or
  changing any byte of any of them changes the key. The set is the whole course, not the stage's own
  files: a reference imports given modules and kernels, which read data files, and probes live in the
  runtime; a tighter set would have to follow imports and reads, and a miss there is a wrong verdict.
  (Editing one stage makes every stage recompute once; that is the price of a key that is obviously
  complete.)
* where the course's top-level packages are imported from (``autograder``, ``solutions``,
  ``workbook``, ``kernels``): the files hashed are the ones that run;
* the interpreter: ``sys.version`` (version and build), the implementation's cache tag, the platform
  and machine, the byte order;
* the installed packages: the name of every ``*.dist-info`` / ``*.egg-info`` entry in the package
  folders on ``sys.path``, which carries each distribution's name and version (numpy, torch, scipy
  and whatever they load), read as directory listings, without importing anything;
* what changes floating-point results on the same interpreter and packages: the CPU model and its
  instruction-set flags (vectorised kernels pick their code path from them), the CPU count (torch's
  default thread count, hence reduction order), and the environment variables numeric libraries read
  (:data:`NUMERIC_ENV`);
* the language messages are computed in (a reference's exception message follows
  :func:`autograder.core.i18n.language`);
* what is stored and for which stage: the kind, the stage id, its reference module and the keys of
  the checks the stage holds now (a stage loaded without its hidden checks is another entry).

What it does not cover, by design: a stage object changed in memory after :func:`autograder.core.spec.load_stage`
built it from the files (only tests do that, and the suite gives each run a store of its own:
``tests/conftest.py``), and a package changed in place without a new version (a developer editing
site-packages); ``PCW_CACHE_DIR=off`` is the switch for those.

**Where**: ``$PCW_CACHE_DIR`` if set (``off`` disables the store), else ``$XDG_CACHE_HOME/pcw-grader``,
else ``~/.cache/pcw-grader``. The folder is created ``0700``; an entry is read only when the folder and
the entry belong to this user and no one else may write them. A grading child never reaches it: its
path is one of the paths no child may see (:func:`autograder.grading.staging.always_hidden`), so a
launch that would expose it is refused, and a child only writes its own scratch directory. With a root
grader each child is another, unprivileged user, which cannot open a ``0700`` folder of root's. The one
case where a child could write it is the ``in-process`` level, which is no boundary at all: there a
learner's code runs as the grader's user with every file of the course and of the grader writable, so
the store adds nothing it could not already change for later runs.

**Invariants**: an entry is written atomically (a temporary file in the same folder, then a rename)
and only when its value reads back exactly (:func:`same`: the same types, floats bit for bit); an entry
that is missing, unreadable, corrupt, of another schema or key, or not private is ignored and the value
recomputed; a failure to write is silent (the store only ever saves time, it never changes a result).

The same folder keeps the byte code of the modules each grading run stages (:class:`StoredBytecode`),
named by each module's source digest rather than by :func:`key`: byte code depends on nothing else.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from autograder.core import layout
from autograder.core.i18n import language
from autograder.core.spec import Stage

CACHE_ENV = "PCW_CACHE_DIR"
OFF = ("off", "0", "no", "false", "none")
SCHEMA = 1
KEEP = 8  # entries kept per stage and kind: older ones are removed when a new one is written

#: Environment variables that change what numpy or torch compute (threads, and so reduction order;
#: instruction sets; reproducibility switches) or which device they compute on.
NUMERIC_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE",
               "ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES",
               "CUDA_VISIBLE_DEVICES", "CUBLAS_WORKSPACE_CONFIG", "TRITON_INTERPRET", "PYTORCH_ENABLE_MPS_FALLBACK")

_lock = threading.Lock()
_digests: dict[tuple[str, ...], str] = {}


# -- where ----------------------------------------------------------------------------------------
def cache_dir() -> Path | None:
    """The store's folder, or None when ``PCW_CACHE_DIR`` switches it off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in OFF or not chosen.strip() else Path(chosen).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).absolute() / "pcw-grader"


def _private(st: os.stat_result) -> bool:
    """Owned by this user, and no one else may write it."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _ready_dir() -> Path | None:
    """The folder, made ``0700`` if it is new; None when off or not private to this user."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.lstat()
    except OSError:
        return None
    return folder if stat.S_ISDIR(st.st_mode) and _private(st) else None


# -- the key --------------------------------------------------------------------------------------
def course_files() -> list[Path]:
    """Every file whose bytes can change trusted material (see the module docstring)."""
    notebooks = sorted(p for p in layout.NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts) \
        if layout.NOTEBOOKS.is_dir() else []
    return sorted(set(layout.grader_files()) | set(notebooks))


def course_digest(files: Iterable[Path], root: Path = layout.ROOT) -> str:
    """A digest of ``files``: each one's path (relative to ``root``) and the digest of its bytes."""
    h = hashlib.sha256()
    for p in sorted(files):
        try:
            name = str(p.relative_to(root))
        except ValueError:
            name = str(p)
        h.update(name.encode("utf-8", "surrogateescape") + b"\0")
        try:
            h.update(hashlib.sha256(p.read_bytes()).digest())
        except OSError as exc:  # a file that cannot be read keys as unreadable: never as empty
            h.update(f"\0unreadable:{exc.errno}".encode())
    return h.hexdigest()


def _installed() -> list[str]:
    """Every distribution's metadata entry in the package folders on ``sys.path`` (its name carries the
    distribution's name and version). Only ``site-packages``/``dist-packages`` folders are read, by
    name: the current directory on the path (``python -m`` from another folder) must not change the key."""
    found: set[str] = set()
    for entry in dict.fromkeys(sys.path):
        if not entry.rstrip("/").endswith(("site-packages", "dist-packages")):
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        found.update(n for n in names if n.endswith((".dist-info", ".egg-info")))
    return sorted(found)


def _cpu() -> str:
    """The CPU model and instruction-set flags (Linux), else what the platform module says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 16)
    except OSError:
        return platform.processor()
    first = text.split("\n\n", 1)[0]
    return "\n".join(ln for ln in first.splitlines() if ln.split(":", 1)[0].strip() in
                     ("vendor_id", "model name", "flags", "Features", "CPU implementer", "CPU part", "isa"))


def _origin(package: str) -> str:
    import importlib.util
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return "-"
    return repr(None if spec is None else list(spec.submodule_search_locations or [spec.origin]))  # type: ignore[list-item]  # repr'd


def environment() -> dict[str, Any]:
    """Everything besides the course files that can change trusted material (see the module docstring)."""
    return {
        "python": sys.version, "cache_tag": sys.implementation.cache_tag, "platform": platform.platform(),
        "machine": platform.machine(), "byteorder": sys.byteorder, "cpu": _cpu(), "cpus": os.cpu_count(),
        "packages": _installed(), "env": {k: os.environ[k] for k in NUMERIC_ENV if k in os.environ},
        "origins": {p: _origin(p) for p in ("autograder", "solutions", "workbook", "kernels")},
    }


def _process_digest() -> str:
    """The course files and the environment, digested once per process and per setting of the
    variables that matter (files are assumed not to change under a running grader, as the per-process
    caches of :mod:`autograder.grading.trusted` assume too)."""
    marker = tuple(os.environ.get(k, "\0") for k in NUMERIC_ENV) + tuple(sys.path)
    with _lock:
        if marker not in _digests:
            material = {"course": course_digest(course_files()), "environment": environment()}
            _digests[marker] = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
        return _digests[marker]


def key(kind: str, stage: Stage, base: str | None = None) -> str:
    """The key of ``kind`` for ``stage``; ``base`` stands for the digest of the course and the
    environment (computed when not given)."""
    material = {"schema": SCHEMA, "kind": kind, "stage": stage.id, "reference": stage.reference,
                "checks": [c.key for c in stage.checks], "language": language(),
                "base": _process_digest() if base is None else base}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


# -- exact values ---------------------------------------------------------------------------------
def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON-like value: the same types throughout (``True`` is not
    ``1``, a tuple is not a list), floats bit for bit (``-0.0`` is not ``0.0``, a NaN equals a NaN)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a.hex() == b.hex() if math.isfinite(a) else repr(a) == repr(b)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


# -- reading and writing --------------------------------------------------------------------------
def _path(folder: Path, kind: str, stage: Stage, k: str) -> Path:
    return folder / f"{stage.id}.{kind}.{k}.json"


def _read_private(path: Path) -> bytes | None:
    """The bytes of ``path`` when it is a regular file private to this user (never through a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or not _private(st):
                return None
            with os.fdopen(fd, "rb", closefd=False) as f:
                return f.read()
        finally:
            os.close(fd)
    except OSError:
        return None


def _write_atomic(folder: Path, name: str, data: bytes) -> bool:
    """Write ``folder/name`` atomically (a temporary file in the same folder, then a rename)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, folder / name)
        tmp = None
        return True
    except OSError:
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def load(kind: str, stage: Stage, k: str) -> Any | None:
    """The stored value under key ``k``, or None when there is none fit to trust."""
    folder = _ready_dir()
    if folder is None:
        return None
    data = _read_private(_path(folder, kind, stage, k))
    if data is None:
        return None
    try:
        entry = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("schema") != SCHEMA or entry.get("key") != k or "value" not in entry:
        return None
    return entry["value"]


def store(kind: str, stage: Stage, k: str, value: Any) -> bool:
    """Write ``value`` under key ``k`` (atomically); False when it was not written: the store is off,
    the value would not read back exactly, or the folder cannot be written."""
    folder = _ready_dir()
    if folder is None:
        return False
    try:
        text = _dump({"schema": SCHEMA, "key": k, "value": value})
        if not same(json.loads(text)["value"], value):
            return False
    except (TypeError, ValueError, RecursionError):
        return False
    if not _write_atomic(folder, _path(folder, kind, stage, k).name, text.encode("ascii")):
        return False
    _prune(folder, f"{stage.id}.{kind}.*.json", KEEP)
    return True


def _prune(folder: Path, pattern: str, keep: int) -> None:
    """Keep the ``keep`` newest entries matching ``pattern`` (a course edited many times would
    otherwise leave one entry per edit)."""
    try:
        entries = sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[keep:]:
            old.unlink()
    except OSError:
        pass


def cached(kind: str, stage: Stage, compute: Callable[[], Any], *, check: Callable[[Any], bool] = lambda v: True) -> Any:
    """The value of ``compute()`` for ``stage``: read from the store when an entry under its key
    passes ``check``, else computed and stored. ``compute`` must return JSON-like data (lists, dicts
    with string keys, str, int, float, bool, None) that depends only on what :func:`key` covers."""
    if cache_dir() is None:
        return compute()
    k = key(kind, stage)
    value = load(kind, stage, k)
    if value is not None and check(value):
        return value
    value = compute()
    store(kind, stage, k, value)
    return value


# -- byte code of the staged modules --------------------------------------------------------------
class StoredBytecode:
    """The hash-checked byte code of the modules a grading run stages, kept across grading processes.

    Every run stages the runtime (about a hundred modules) and byte-compiles it so that no child
    compiles it again; compiling it cost each grading process about 0.15 CPU-s before anything else
    could start. An entry is named by the SHA-256 of a module's source and the interpreter's cache
    tag (``bytecode.<digest>.<tag>.pyc``), lives in the store's private folder and is written
    atomically. Invariant: what :meth:`get` returns is only a candidate; its user
    (:func:`autograder.isolation.childfs.compile_tree`) accepts it only when its header names this
    interpreter's magic number, hash-based checking and the source's own hash, and compiles otherwise,
    so a stale or damaged entry costs a compilation, never a different module. Off when the store is.
    """

    def _name(self, digest: bytes) -> str:
        return f"bytecode.{digest.hex()}.{sys.implementation.cache_tag}.pyc"

    def get(self, digest: bytes) -> bytes | None:
        folder = _ready_dir()
        return None if folder is None else _read_private(folder / self._name(digest))

    def put(self, digest: bytes, code: bytes) -> None:
        folder = _ready_dir()
        if folder is not None and _write_atomic(folder, self._name(digest), code) and not self._pruned:
            self._pruned = True  # once per process: a cold run writes a hundred entries
            _prune(folder, "bytecode.*.pyc", KEEP_BYTECODE)

    _pruned = False


KEEP_BYTECODE = 2000  # a course's runtime is about a hundred modules: room for many edits of it

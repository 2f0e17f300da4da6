"""The child process that runs untrusted learner code for one TODO and reports raw outcomes.

It never judges: it reports events through a pipe, one per check among them (what the learner's
code returned or raised), and the parent compares those outcomes with the reference's. Every event
it sends is one of :mod:`autograder.child.protocol`'s, written by :func:`autograder.child.protocol.encode`.
It is launched already confined by the kernel (:mod:`autograder.isolation.confine`, at the run's isolation
level). Before any learner code runs it limits itself (memory, CPU, file
size), blocks the given code the TODO must not delegate to (:mod:`autograder.child.twins`), and installs an
audit hook. The hook is not a boundary (learner code controls this interpreter and can undo it);
it only turns the usual forbidden actions (opening the grader's files, writing outside the scratch
dir, starting processes, networking, signals, native calls) into a clear "not allowed" message
before the kernel's refusal would give a bare errno.

Input: one JSON payload on stdin (the ``solutions`` modules it may import as text, with the code the
grader compiled of that text, and its hidden checks as code the grader compiled: no text of them ever
reaches this process). Output: protocol events on the
file descriptor named in the payload.
"""
from __future__ import annotations
import __future__

import base64
import hashlib
import importlib.abc
import importlib.util
import json
import marshal
import os
import resource
import sys
from collections.abc import Iterable

from autograder.core.layout import COURSE_PACKAGES

BLOCKED_EVENTS = {
    "os.system": "starting a shell",
    "os.exec": "starting a program",
    "os.posix_spawn": "starting a program",
    "os.spawn": "starting a program",
    "os.fork": "forking",
    "os.forkpty": "forking",
    "subprocess.Popen": "starting a program",
    "socket.connect": "a network connection",
    "socket.bind": "a network socket",
    "socket.sendto": "sending on the network",
    "socket.getaddrinfo": "a network lookup",
    "os.kill": "signalling another process",
    "os.killpg": "signalling another process",
    "signal.pthread_kill": "signalling a thread",
    "ctypes.dlopen": "loading native code",
    "ctypes.dlsym": "loading native code",
    "ctypes.call_function": "calling native code",
    "os.remove": "deleting a file",
    "os.rmdir": "deleting a folder",
    "os.rename": "renaming a file",
    "os.chmod": "changing file permissions",
    "os.chdir": "changing directory",
    "shutil.rmtree": "deleting a folder",
}


class SourceModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves modules from source strings or from code the grader compiled, and nothing else for the
    course's packages (``workbook``, ``solutions``). A package's own source, when given, runs as its
    ``__init__``: ``solutions``'s then resolves the given modules' former names to the ``workbook``
    modules served here.

    Invariant: a hidden module's code is held only until its one import (then dropped), and no text
    of it ever exists in this process: the grader sends marshalled code (see
    :func:`autograder.grading.trusted.child_code`), so learner code that finds this loader, the
    payload or the module finds no source to read. A given module (``sources``) runs the code
    :func:`compile_given` makes of its text, whether the grader compiled it once for all of a run's
    children (``compiled``: :func:`autograder.grading.trusted.given_code`) or this loader compiles it.
    """

    def __init__(self, sources: dict[str, str], root: str, code: dict[str, str] | None = None,
                 compiled: dict[str, str] | None = None) -> None:
        self.sources = sources
        self.root = root
        self._code = dict(code or {})
        self._compiled = dict(compiled or {})

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in COURSE_PACKAGES:
            is_pkg = is_package(fullname)
            if fullname in self.sources or fullname in self._code or is_pkg:
                return importlib.util.spec_from_loader(fullname, self, is_package=is_pkg)
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if module.__spec__.submodule_search_locations is not None:
            module.__path__ = []
        # a believable __file__ (modules locate data next to themselves); reading it is still refused
        module.__file__ = module_file(self.root, module.__name__, module.__spec__.submodule_search_locations is not None)
        packed = self._code.pop(module.__name__, None)
        if packed is not None:
            exec(_unmarshal(packed), module.__dict__)
            return
        # A given module the grader compiled from the very text in ``sources`` (as :func:`compile_given`
        # compiles it here): the same code, without compiling it again in each child.
        packed = self._compiled.get(module.__name__)
        code = _unmarshal(packed) if packed is not None else compile_given(self.sources.get(module.__name__, ""), module.__file__)
        exec(code, module.__dict__)


def module_file(root: str, name: str, package: bool) -> str:
    """The ``__file__`` a course module served from ``root`` gets (its code's file name too)."""
    return os.path.join(root, *name.split(".")) + ("/__init__.py" if package else ".py")


def is_package(name: str) -> bool:
    """Whether the course module ``name`` is served as a package."""
    return name in COURSE_PACKAGES or name == "solutions.hidden"


def compile_given(source: str, filename: str):
    """A given module's code, compiled the same wherever it is compiled (a child, or the grader for all
    of a run's children): postponed annotations on (as this module's ``__future__`` import has always
    given them), at the optimization level of a child's interpreter (none: it runs without ``-O``)."""
    return compile(source, filename, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True, optimize=0)


def _unmarshal(packed: str):
    """The code object the grader compiled (base64 of the magic number, then marshal's bytes)."""
    data = base64.b64decode(packed)
    magic = importlib.util.MAGIC_NUMBER
    if data[:len(magic)] != magic:
        raise ImportError("compiled checks from another Python version than this child's")
    return marshal.loads(data[len(magic):])


def _limit(memory_mb: int, cpu_s: float) -> None:
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * mb, memory_mb * mb))
    cpu = int(cpu_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (32 * mb, 32 * mb))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _install_audit_hook(denied_dirs: list[str], workdir: str, salt: str = "", denied_digests: Iterable[str] = ()) -> None:
    """``denied_digests``: salted digests (:func:`autograder.grading.supervise.path_digest`) of further paths
    not to open, e.g. the batch's other submissions, whose names this process must not be told."""
    denied = tuple(os.path.realpath(d) + os.sep for d in denied_dirs)
    digests = frozenset(denied_digests)
    sha256 = hashlib.sha256
    work = os.path.realpath(workdir) + os.sep

    def hidden(real: str) -> bool:
        p = real
        while digests:
            if sha256((salt + p).encode("utf-8", "surrogateescape")).hexdigest() in digests:
                return True
            parent = os.path.dirname(p)
            if parent == p:
                break
            p = parent
        return False

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            if not isinstance(path, (str, bytes, os.PathLike)):
                return  # an open file descriptor
            real = os.path.realpath(os.fsdecode(path))
            if (real + os.sep).startswith(denied) or real.startswith(denied) or hidden(real):
                raise PermissionError(f"grading: reading {real} is not allowed")
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
            if writing and not (real + os.sep).startswith(work) and real != "/dev/null":
                raise PermissionError(f"grading: writing {real} is not allowed")
            return
        for prefix, what in BLOCKED_EVENTS.items():
            if event == prefix or event.startswith(prefix + "."):
                raise PermissionError(f"grading: {what} is not allowed ({event})")

    sys.addaudithook(hook)


def _strip_magics(source: str) -> str:
    """Comment out IPython magics and shell escapes, which plain Python cannot run."""
    out = []
    for line in source.splitlines():
        s = line.lstrip()
        out.append(line.replace(s, "# " + s, 1) if s.startswith(("%", "!")) else line)
    return "\n".join(out)


def main() -> None:
    payload = json.loads(sys.stdin.read())
    fd = payload["result_fd"]
    from autograder.child import protocol as p

    encode, write, _exit = p.encode, os.write, os._exit  # bound before learner code can patch os

    def emit(event: p.Event) -> None:
        data = encode(event)
        while data:
            data = data[write(fd, data):]

    _limit(payload["memory_limit_mb"], payload["cpu_limit_s"])
    os.chdir(payload["workdir"])
    sys.meta_path.insert(0, SourceModules(payload["modules"], payload["root"], payload.pop("code", None),
                                          payload.pop("given_code", None)))
    sys.setrecursionlimit(3000)

    # Everything the harness needs is imported before learner code can touch the import system,
    # and bound to locals so that patching these modules from learner code changes nothing here.
    import builtins

    from autograder.child import hybrid, probe, twins
    from autograder.core.spec import load_stage

    # ctypes opens the process's own symbol table when imported (numpy imports it): do that now,
    # before the audit hook forbids dlopen; dlsym and foreign calls stay forbidden afterwards.
    for name in ["ctypes", *payload.get("preload", [])]:
        __import__(name)
    stage = load_stage(payload["stage"], hidden=True, reference=payload["reference"], words=payload.pop("words", None))
    todo = stage.todo(payload["todo"])
    reference = __import__(payload["reference"], fromlist=["_"])
    checks = stage.checks_for(todo.id)
    run_probe, build_impl, missing_target = probe.run_probe, hybrid.build_impl, hybrid.MissingTarget
    twins.block(todo.twins, todo.label)
    pristine_builtins = dict(vars(builtins))

    def restore_builtins() -> None:
        """Undo learner patches of builtins (isinstance, print, ...) before the harness runs."""
        b = vars(builtins)
        for k in [k for k in b if k not in pristine_builtins]:
            del b[k]
        b.update(pristine_builtins)

    denied = [*payload["denied_dirs"], *(os.path.join(payload["root"], name) for name in COURSE_PACKAGES)]
    _install_audit_hook(denied, payload["workdir"], payload.get("salt", ""), payload.get("denied_digests", ()))
    emit(p.Ready())

    learner: dict = {"__name__": "__main__", "__builtins__": builtins}
    cell_errors: list[p.CellError] = []
    for i, (kind, src) in enumerate(payload["cells"]):
        emit(p.CellStarted(i))
        try:
            exec(compile(_strip_magics(src), f"<{kind} cell {i}>", "exec"), learner)
        except BaseException as exc:  # noqa: BLE001 - keep going, as a notebook would
            cell_errors.append(p.CellError(i + 1, kind, _type_name(exc), _text(exc)))
        restore_builtins()
    if cell_errors:
        emit(p.CellErrors(tuple(cell_errors)))
    emit(p.CellsDone())

    try:
        notes: list[str] = []
        impl = build_impl(stage, todo, learner, reference, notes)
        if notes:
            names = tuple(n for n in (x.strip("`") for x in notes) if p.is_name(n))[:p.MAX_COURSE_VERSIONS]
            if names:
                emit(p.CourseVersions(names))
    except missing_target as exc:
        emit(p.Missing(str(exc)[:p.MAX_MISSING_CHARS]))
        emit(p.Done())
        _exit(0)
    for c in checks:
        restore_builtins()
        emit(p.CheckStarted(c.key))
        result = run_probe(c, impl)
        restore_builtins()
        emit(p.CheckOutcome(c.key, result))
    emit(p.Done())
    _exit(0)  # threads the learner left running must not keep the process alive


def _type_name(exc: BaseException) -> str:
    try:
        return str(type(exc).__name__)[:80]  # protocol.MAX_TYPE_CHARS
    except Exception:  # noqa: BLE001 - a learner's exception class may lie about anything
        return "Exception"


def _text(exc: BaseException) -> str:
    """At most 200 characters of an exception's message (the grader filters them again)."""
    try:
        return str(exc)[:200]
    except Exception:  # noqa: BLE001
        return ""


if __name__ == "__main__":
    main()

"""The kernel zygote: one interpreter that has imported what a notebook kernel imports first, and forks
each of the tests' notebook kernels from there (tests/support/warm_kernel.py is the tests' side).

Run as a script, ``python kernel_zygote.py FD PRELOAD_JSON``, by :class:`tests.support.warm_kernel.Zygote`
with the environment of the runs it serves (so whatever the interpreter and the preloaded libraries read
from the environment when they start, the hash seed, thread counts and locale included, is what a fresh
kernel of those runs reads). ``FD`` is its end of a ``SOCK_SEQPACKET`` socket to the tests' process: its
lifeline (when the tests' process is gone, the zygote ends every kernel it forked and exits) and the
channel for requests. It uses the standard library only, and imports nothing of the course: a notebook
imports the course itself, from the path its run gives.

Start-up: the first group of ``PRELOAD`` is what ``python -m ipykernel_launcher`` imports before any
cell runs; the second what a notebook's own cells import (torch, matplotlib). Both are imports only: no
tensor is made and no thread pool started. What the second group's imports leave that depends on *when*
they run is replayed in each kernel once it has started (:class:`CellImports`): the logging handlers
torch makes write to the stream ``sys.stderr`` is at import (the kernel's, in a cell), and the warning
filters it adds go in front of the kernel's own. Then the zygote freezes its objects out of the garbage
collector (a kernel's collections never write to, hence never copy, the pages it shares with the zygote),
sends :data:`READY` and serves.

What stays different from a fresh kernel: the preloaded modules are in ``sys.modules`` (and their warning
filters and loggers exist) before a notebook imports them, or where it never does. Nothing is preloaded
whose import looks at the running process (ipykernel's debugger makes a ``threading.Thread`` when
imported, which would shift the names of every later thread; ipywidgets, tqdm.auto and matplotlib's
inline backend look for the IPython shell): those a kernel imports itself.

Serving: a request is a JSON record ``{"argv", "env", "cwd"}`` with four descriptors (the kernel's
stdin, stdout, stderr, and its *own* reply socket). The zygote forks; the child starts a session of
its own (as jupyter_client's launcher does, so an interrupt reaches its group), asks for SIGKILL when
the zygote dies, and becomes the kernel; the zygote answers ``{"pid", "threads"}`` on the reply socket
once the child has its session, and ``{"exited": status}`` (``Popen.returncode``'s convention) once it
has reaped it, then closes that socket.

Invariants: the zygote forks only while it has exactly one thread (``/proc/self/task``), and refuses
a request otherwise; every child it forks is reaped by it and reported once; a child keeps no
descriptor of the zygote's; a child's ``os.environ``, working folder, ``sys.path``, ``sys.argv`` and
``sys.orig_argv``, session and random state (``random``, numpy's and torch's default generators: drawn
from the OS, as at a fresh import) are those a fresh ``python -m ipykernel_launcher`` started with that
request would have.
"""
from __future__ import annotations

import sys

del sys.path[0]  # this script's folder: nothing is imported from there, in the zygote or a kernel

import array  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

READY = "ready"
MAX_MESSAGE = 1 << 20
_PR_SET_PDEATHSIG = 1
#: matplotlib reads its backend from the environment when imported; ipykernel sets this one before any
#: cell runs (unless the environment names another), so a cell's ``import matplotlib`` reads it.
_INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _stream_handlers() -> set[tuple[logging.StreamHandler, str]]:
    """Every logging handler that writes to the interpreter's stdout or stderr, with that stream's name."""
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                      if isinstance(v, logging.Logger))]
    streams = {id(sys.stdout): "stdout", id(sys.stderr): "stderr"}
    return {(h, streams[id(h.stream)]) for lg in loggers for h in lg.handlers
            if type(h) is logging.StreamHandler and id(h.stream) in streams}


@dataclass
class CellImports:
    """What importing the cell modules left that a cell's import would have left after the kernel's
    start instead: the logging handlers they made (writing to the interpreter's stream, not the kernel's)
    and the warning filters they added (behind the kernel's own, where a cell's import puts them in front)."""

    handlers: set[tuple[logging.StreamHandler, str]] = field(default_factory=set)
    filters: list = field(default_factory=list)

    def replay(self) -> None:
        """In a kernel, once it has its streams and its filters: as if the imports had happened now."""
        for handler, stream in self.handlers:
            handler.setStream(getattr(sys, stream))
        ours = [f for f in warnings.filters if f in self.filters]
        warnings.filters[:] = ours + [f for f in warnings.filters if f not in self.filters]
        warnings._filters_mutated()  # type: ignore[attr-defined]  # as filterwarnings() does


def preload(kernel_modules: list[str], cell_modules: list[str]) -> tuple[list[str], CellImports]:
    """Import both groups; what the cell modules left (see :class:`CellImports`)."""
    for name in kernel_modules:
        importlib.import_module(name)
    handlers, filters = _stream_handlers(), list(warnings.filters)
    unset = not os.environ.get("MPLBACKEND")
    if unset:
        os.environ["MPLBACKEND"] = _INLINE_BACKEND
    try:
        for name in cell_modules:
            importlib.import_module(name)
    finally:
        if unset:
            del os.environ["MPLBACKEND"]
    return [*kernel_modules, *cell_modules], CellImports(_stream_handlers() - handlers,
                                                         [f for f in warnings.filters if f not in filters])


def _send(sock: socket.socket, record: dict) -> None:
    try:
        sock.send(json.dumps(record).encode())
    except OSError:
        pass  # the tests' side closed it: nobody waits for this kernel any more


def _reap(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def serve(fd: int, ready: dict) -> tuple[dict, int]:
    """Answer requests until the tests' process is gone (then end every child and exit). Returns only
    in a forked child: its request and the descriptor its zygote waits on for its start."""
    control = socket.socket(fileno=fd)
    control.send(json.dumps(ready).encode())
    poller = select.poll()
    poller.register(control, select.POLLIN)
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, reply socket)
    while True:
        for ready_fd, _ in poller.poll():
            if ready_fd in children:  # a child ended
                pid, reply = children.pop(ready_fd)
                poller.unregister(ready_fd)
                os.close(ready_fd)
                _send(reply, {"exited": _reap(pid)})
                reply.close()
                continue
            fds = array.array("i")
            data, anc, _, _ = control.recvmsg(MAX_MESSAGE, socket.CMSG_LEN(4 * fds.itemsize))
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
            if not data:  # the tests' process is gone: so are its kernels
                for pidfd, (pid, reply) in children.items():
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass
                    _reap(pid)
                    os.close(pidfd)
                    reply.close()
                os._exit(0)
            request = json.loads(data)
            stdio, reply = list(fds[:3]), socket.socket(fileno=fds[3])
            count = threads()
            if count != 1:
                _send(reply, {"refused": f"the zygote has {count} threads; it forks only with one"})
                reply.close()
                for f in stdio:
                    os.close(f)
                continue
            started_r, started_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(started_r)
                for f, num in zip(stdio, (0, 1, 2), strict=True):
                    os.dup2(f, num)
                for sock in (control, reply, *(r for _, r in children.values())):
                    sock.detach()  # closed below by number; no object of the zygote's closes a kernel's descriptor later
                return request, started_w
            os.close(started_w)
            for f in stdio:
                os.close(f)
            os.read(started_r, 1)  # end of file once the child has its session and none of our descriptors
            os.close(started_r)
            pidfd = os.pidfd_open(pid)
            children[pidfd] = (pid, reply)
            poller.register(pidfd, select.POLLIN)
            _send(reply, {"pid": pid, "threads": count})


def _become(request: dict, started_w: int, zygote: int) -> None:
    """In the child: a session of its own, dies with the zygote, the request's descriptors, folder,
    environment and path, as ``python -m ipykernel_launcher`` started by jupyter_client would have them."""
    os.setsid()
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != zygote:  # the zygote died before the request was set
        os._exit(1)
    os.closerange(3, started_w)
    os.closerange(started_w + 1, os.sysconf("SC_OPEN_MAX"))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # sys.path as the interpreter makes it for ``-m``: the working folder, then PYTHONPATH (each entry
    # made absolute), then the rest, which the zygote, started with the same PYTHONPATH, has already.
    given = os.environ.get("PYTHONPATH", "")
    entries = [os.path.abspath(p) for p in given.split(os.pathsep)] if given else []
    rest = sys.path[len(entries):]
    sys.path[:] = [os.getcwd(), *entries, *rest]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    sys.orig_argv[:] = [sys.orig_argv[0], *request["argv"]]  # the interpreter as the request named it
    # Generators a fresh interpreter seeds from the OS when it imports them (`random` reseeds itself at fork)
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    if "torch" in sys.modules:
        sys.modules["torch"].default_generator.seed()  # a seed drawn from the OS; no op, no thread pool
    os.close(started_w)


def _start_kernel(request: dict, cell_imports: CellImports) -> None:
    """What ``python -m ipykernel_launcher ARGS`` does (see that module), with one step added between
    the app's initialisation and its start: :meth:`CellImports.replay`."""
    import runpy

    argv = request["argv"]
    assert argv[:2] == ["-m", "ipykernel_launcher"], argv
    sys.argv[:] = [argv[1], *argv[2:]]
    from ipykernel import kernelapp

    launch = kernelapp.IPKernelApp.launch_instance

    def launch_instance(argv=None, **kwargs):  # traitlets' Application.launch_instance, one step added
        app = kernelapp.IPKernelApp.instance(**kwargs)
        app.initialize(argv)
        cell_imports.replay()
        app.start()

    kernelapp.launch_new_instance = launch_instance
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
    finally:
        kernelapp.launch_new_instance = launch


def main() -> None:
    fd, groups = int(sys.argv[1]), json.loads(sys.argv[2])
    gc.disable()  # no collection leaves holes in the pages the kernels share (enabled again in each kernel)
    try:
        os.close(os.pidfd_open(os.getpid()))  # how the zygote watches its kernels (Linux 5.3 and later)
        modules, cell_imports = preload(*groups)
        ready = {"op": READY, "pid": os.getpid(), "threads": threads(), "preloaded": modules}
    except BaseException as exc:  # noqa: BLE001 - reported, and the tests start plain kernels instead
        cell_imports, ready = CellImports(), {"op": READY, "pid": os.getpid(), "error": f"{type(exc).__name__}: {exc}"}
    zygote = os.getpid()
    gc.freeze()  # what the zygote holds stays out of every kernel's collections: they never touch (copy) it
    request, started_w = serve(fd, ready)
    gc.enable()
    _become(request, started_w, zygote)
    _start_kernel(request, cell_imports)


if __name__ == "__main__":
    main()

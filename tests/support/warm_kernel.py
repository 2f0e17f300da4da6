"""Notebook kernels for the tests, started warm: forked from a kernel zygote instead of a fresh interpreter.

A fresh ``python -m ipykernel_launcher`` spends seconds of CPU before the notebook's first cell does
anything: starting the interpreter, importing ipykernel (and IPython, zmq, tornado, the debugger) and,
in the cells, torch and matplotlib; a test session runs dozens of kernels. :class:`Zygote` is one
interpreter per test process that has imported those once (tests/support/kernel_zygote.py: what it
imports, and why a forked kernel behaves as a fresh one) and forks each kernel from there.

It plugs into jupyter_client where jupyter_client expects a kernel's launcher to be replaced: a kernel
provisioner (:class:`WarmProvisioner`), installed by a kernel manager (:class:`WarmKernelManager`) that
nbclient is given as its ``kernel_manager_class``. jupyter_client still writes the connection file,
picks the ports and talks to the kernel; only the process comes from the zygote. That process is the
zygote's child, not the test's: its end is reported by the zygote on a socket of its own (``poll``,
``wait``), and signals (an interrupt, a kill) go to its process group directly, as jupyter_client sends
them to a kernel it launched.

A kernel starts plain (jupyter_client's own launcher) where it cannot start warm: its command is not
``<python> -m ipykernel_launcher ...``, the platform has no ``pidfd_open``, the zygote failed to start
or has more than one thread (``OPENBLAS_NUM_THREADS`` and friends unset: the BLAS pool starts with
numpy; tests/conftest.py sets them to 1), or ``PCW_PLAIN_KERNELS=1`` is set (:data:`PLAIN_ENV`): then
every kernel of the tests is a fresh interpreter, as a learner's is.
"""
from __future__ import annotations

import array
import asyncio
import atexit
import json
import os
import re
import signal
import socket
import subprocess
import threading
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from nbformat import NotebookNode

#: ``PCW_PLAIN_KERNELS=1``: every notebook kernel of the tests is a fresh interpreter (no zygote).
PLAIN_ENV = "PCW_PLAIN_KERNELS"
ZYGOTE_SCRIPT = Path(__file__).with_name("kernel_zygote.py")
#: What ``python -m ipykernel_launcher`` imports before a cell runs, and what the notebooks' cells import
#: that costs seconds (the course's own modules never: a notebook imports them from its run's path).
#: Nothing whose import looks for a running IPython shell (ipywidgets, tqdm.auto, matplotlib.pyplot and
#: its inline backend register themselves with the shell they find): imported in the zygote, they would
#: find none.
KERNEL_MODULES = ("ipykernel.kernelapp", "ipykernel.ipkernel", "IPython.core.completerlib",
                  "IPython.core.debugger", "IPython.core.logger", "IPython.core.oinspect",
                  "IPython.extensions.storemagic", "sqlite3", "psutil", "tornado.gen", "tornado.locks",
                  "tornado.platform.asyncio", "tornado.queues", "faulthandler", "http.server", "mimetypes", "pdb",
                  "pydoc")
CELL_MODULES = ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg")
#: torch costs more than the rest together (about 3.5 CPU-s to import) and weighs on every fork (a kernel
#: forked from a zygote holding it spends about 0.5 CPU-s more in the kernel, copying and mapping pages):
#: only the notebooks that import it (:func:`imports_torch`) get kernels from a zygote that has.
TORCH_MODULES = ("torch",)
#: Variables jupyter_client or pytest set per kernel or per test, which nothing reads at start-up: a
#: zygote serves every run whose environment differs from its own in these alone. (``JPY_PARENT_PID``
#: is not one: ipykernel reads it when imported. It is this process's pid for every kernel, so the
#: zygote starts with it.)
PER_RUN = ("JPY_SESSION_NAME", "PYTEST_CURRENT_TEST")
#: How long a zygote may take to import its modules, in seconds on a quiet machine (about 5 s of CPU).
START_S = 120
#: Zygotes kept per process (one per environment of the runs and set of imports), idle ones ended beyond this.
KEPT = 3
#: A code cell that imports torch, or the course's kernels (which import it).
_TORCH_IMPORT = re.compile(r"^\s*(?:import|from)\s+(?:torch|kernels)\b", re.MULTILINE)


def plain_kernels() -> bool:
    return os.environ.get(PLAIN_ENV, "") not in ("", "0")


class ZygoteUnavailable(RuntimeError):
    """The zygote could not fork this kernel (it failed to start, or has more than one thread)."""


@dataclass
class WarmKernel:
    """One kernel forked by a zygote: its pid (also its process group and session) and the socket its
    zygote reports its end on.

    Invariants: ``returncode`` is None while the zygote has not reported the kernel's end, then its exit
    status as ``Popen.returncode`` gives it; a zygote that is gone without a report counts as the
    kernel's end (the kernel dies with its zygote: parent-death signal); ``signal`` never reaches a
    process once its end was reported.
    """

    pid: int
    threads_at_fork: int
    sock: socket.socket
    zygote: Zygote
    returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                data = self.sock.recv(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return None
            except OSError:
                data = b""
            self.returncode = json.loads(data)["exited"] if data else -signal.SIGKILL
            self.sock.close()
            self.zygote.live.discard(self.pid)
        return self.returncode

    def signal(self, signum: int) -> None:
        if self.poll() is not None:
            return
        try:
            os.killpg(self.pid, signum)  # the kernel's group: what it started gets it too, as jupyter_client does
        except ProcessLookupError:
            pass  # it ended after the poll above: its end is on the socket

    def close(self) -> None:
        self.sock.close()
        self.zygote.live.discard(self.pid)


@dataclass
class Zygote:
    """One zygote process (tests/support/kernel_zygote.py) and the tests' end of its control socket.

    Invariants: ``ready`` is the zygote's start-up report (``error`` in it: it forks nothing); ``live``
    holds the pids of the kernels it forked whose end this process has not seen; closing the control
    socket (:meth:`close`, or this process's end) ends the zygote and every kernel it forked.
    """

    key: tuple
    process: subprocess.Popen
    control: socket.socket
    ready: dict
    live: set[int] = field(default_factory=set)

    @classmethod
    def start(cls, python: str, env: dict[str, str], modules: tuple[tuple[str, ...], tuple[str, ...]]) -> Zygote:
        from tests.support.machine import scaled

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = subprocess.Popen([python, str(ZYGOTE_SCRIPT), str(theirs.fileno()), json.dumps(modules)],
                                       env=env, cwd="/", stdin=subprocess.DEVNULL, pass_fds=[theirs.fileno()],
                                       start_new_session=True)  # a Ctrl-C in the terminal is the tests', not its
        finally:
            theirs.close()
        ours.settimeout(scaled(START_S))
        try:
            data = ours.recv(1 << 16)
        except OSError as exc:
            data = json.dumps({"error": f"no start-up report: {exc}"}).encode()
        ready = json.loads(data) if data else {"error": f"exited while starting ({process.wait()})"}
        ours.settimeout(None)
        return cls((python, tuple(sorted(env.items())), modules), process, ours, ready)

    @property
    def usable(self) -> bool:
        return "error" not in self.ready and self.ready.get("threads") == 1 and self.process.poll() is None

    def spawn(self, argv: list[str], env: dict[str, str], cwd: str) -> WarmKernel:
        """Fork a kernel running ``python *argv`` in ``cwd`` with ``env``; its stdin is a pipe no one
        writes to and its stdout and stderr this process's, as jupyter_client's launcher gives them."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        stdin_r, stdin_w = os.pipe()
        try:
            request = json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode()
            fds = array.array("i", [stdin_r, 1, 2, theirs.fileno()])
            self.control.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
            data = ours.recv(4096)
        except OSError as exc:  # the zygote is gone
            data = json.dumps({"refused": f"the zygote is gone ({exc})"}).encode()
        finally:
            for fd in (stdin_r, stdin_w):
                os.close(fd)
            theirs.close()
        reply = json.loads(data) if data else {"refused": "the zygote is gone"}
        if "pid" not in reply:
            ours.close()
            raise ZygoteUnavailable(reply["refused"])
        self.live.add(reply["pid"])
        return WarmKernel(reply["pid"], reply["threads"], ours, self)

    def close(self) -> None:
        """End the zygote and every kernel it forked, and reap it (so its CPU time, its kernels' included,
        counts in this process's children's)."""
        self.control.close()
        self.process.wait()


_zygotes: dict[tuple, Zygote] = {}
_owner = os.getpid()
_lock = threading.Lock()


def _close_all() -> None:
    if os.getpid() == _owner:
        for zygote in _zygotes.values():
            zygote.close()
        _zygotes.clear()


atexit.register(_close_all)


def zygote_for(python: str, env: dict[str, str], modules: tuple) -> Zygote | None:
    """This process's zygote for kernels of ``python`` started with ``env`` (started now if none is):
    None where it cannot fork kernels (see the module docstring)."""
    global _owner
    modules = (tuple(modules[0]), tuple(modules[1]))
    own_env = {k: v for k, v in env.items() if k not in PER_RUN}
    key = (python, tuple(sorted(own_env.items())), modules)
    with _lock:
        if os.getpid() != _owner:  # a forked copy of a test process: its parent's zygotes are not its own
            _zygotes.clear()
            _owner = os.getpid()
        zygote = _zygotes.get(key)
        if zygote is not None and zygote.process.poll() is not None:  # it died (its kernels with it): a new one
            zygote.control.close()
            del _zygotes[key]
            zygote = None
        if zygote is None:
            for old in [z for z in _zygotes.values() if not z.live][: max(0, len(_zygotes) + 1 - KEPT)]:
                old.close()
                del _zygotes[old.key]
            zygote = _zygotes[key] = Zygote.start(python, own_env, modules)
            if not zygote.usable:
                warnings.warn(f"kernels start plain: the kernel zygote cannot fork ({zygote.ready})", stacklevel=2)
    return zygote if zygote.usable else None


class WarmProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, with the kernel's process forked by this process's zygote.

    Invariants: ``kernel`` is the forked kernel while it has not been waited for, and then None; where
    the kernel started plain (see the module docstring) it is None throughout and every method is the
    local provisioner's own; ``modules`` are the zygote's imports (the kernel manager's choice; a test may
    name fewer).
    """

    kernel: WarmKernel | None = None
    modules: tuple = (KERNEL_MODULES, CELL_MODULES)  # set by the kernel manager

    @property
    def has_process(self) -> bool:
        return self.kernel is not None or super().has_process

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        if self.kernel is not None:  # a kernel before a restart that was not waited for: its zygote reaps it
            self.kernel.close()
            self.kernel = None
        env = dict(kwargs.get("env") or os.environ)
        env["JPY_PARENT_PID"] = str(os.getpid())  # as jupyter_client's launcher sets it
        cwd = str(kwargs.get("cwd") or os.getcwd())
        zygote = None
        if cmd[1:3] == ["-m", "ipykernel_launcher"] and hasattr(os, "pidfd_open") and not plain_kernels():
            zygote = zygote_for(cmd[0], env, self.modules)
        if zygote is not None:
            try:
                self.kernel = zygote.spawn(cmd[1:], env, cwd)
            except ZygoteUnavailable as exc:
                warnings.warn(f"this kernel starts plain: {exc}", stacklevel=2)
        if self.kernel is None:
            return await super().launch_kernel(cmd, **kwargs)
        self.pid = self.pgid = self.kernel.pid
        self.cwd = cwd
        return self.connection_info

    async def poll(self) -> int | None:
        return self.kernel.poll() if self.kernel else await super().poll()

    async def wait(self) -> int | None:
        if self.kernel is None:
            return await super().wait()
        while (code := self.kernel.poll()) is None:
            await asyncio.sleep(0.05)
        self.kernel = None
        return code

    async def send_signal(self, signum: int) -> None:
        if self.kernel is None:
            return await super().send_signal(signum)
        self.kernel.signal(signum)

    async def kill(self, restart: bool = False) -> None:
        if self.kernel is None:
            return await super().kill(restart)
        self.kernel.signal(signal.SIGKILL)

    async def terminate(self, restart: bool = False) -> None:
        if self.kernel is None:
            return await super().terminate(restart)
        self.kernel.signal(signal.SIGTERM)

    async def cleanup(self, restart: bool = False) -> None:
        if self.kernel is not None and self.kernel.poll() is not None:
            self.kernel = None
        await super().cleanup(restart)


class WarmKernelManager(AsyncKernelManager):
    """nbclient's kernel manager with :class:`WarmProvisioner` as its provisioner, whatever the kernel
    spec names (nbclient: ``NotebookClient(..., kernel_manager_class=WarmKernelManager)``); the kernel
    comes from a zygote that imported ``modules``."""

    provisioner_class: type[WarmProvisioner] = WarmProvisioner
    modules: tuple = (KERNEL_MODULES, CELL_MODULES)

    async def _async_pre_start_kernel(self, **kw: Any):  # type: ignore[override]
        if self.provisioner is None:
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
            self.provisioner = self.provisioner_class(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec,
                                                      parent=self)
            self.provisioner.modules = self.modules
        return await super()._async_pre_start_kernel(**kw)


class TorchKernelManager(WarmKernelManager):
    """A warm kernel from the zygote that has imported torch as well (:data:`TORCH_MODULES`)."""

    modules = (KERNEL_MODULES, CELL_MODULES + TORCH_MODULES)


def imports_torch(nb: NotebookNode) -> bool:
    """Whether a code cell of ``nb`` imports torch (or the course's kernels). Only the cost depends on
    it: a kernel from either zygote runs any notebook as a fresh one would."""
    return any(c.cell_type == "code" and _TORCH_IMPORT.search(c.source) for c in nb.cells)


def kernel_manager_class(nb: NotebookNode | None = None) -> type[AsyncKernelManager]:
    """The kernel manager for a tests' run of ``nb``: warm unless ``PCW_PLAIN_KERNELS=1``, from the zygote
    with torch where ``nb`` imports it."""
    if plain_kernels():
        return AsyncKernelManager
    return TorchKernelManager if nb is not None and imports_torch(nb) else WarmKernelManager


__all__ = ["PLAIN_ENV", "TorchKernelManager", "WarmKernelManager", "WarmProvisioner", "Zygote", "imports_torch",
           "kernel_manager_class", "zygote_for"]

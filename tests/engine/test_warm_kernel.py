"""Warm notebook kernels (tests/support/warm_kernel.py, tests/support/kernel_zygote.py): a kernel forked
by the zygote is started, runs code, is interrupted, restarted and killed through jupyter_client like a
launched one; one that ends itself is seen dead; every kernel is reaped; the zygote forks only while
it has one thread. The zygote here imports only ipykernel (the tests' own import matplotlib as well,
and torch for a notebook that does: tests/course/test_warm_kernels.py compares a whole stage run in
each kind of kernel)."""
from __future__ import annotations

import asyncio
import os
import signal
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_code_cell, new_notebook

from tests.support import warm_kernel
from tests.support.machine import scaled
from tests.support.warm_kernel import KERNEL_MODULES, TorchKernelManager, WarmKernelManager

pytestmark = pytest.mark.slow  # the fast lane leaves it out: starts real kernels and zygotes (~9 CPU-s)


class LightManager(WarmKernelManager):
    modules = (KERNEL_MODULES, ())


def _state(pid: int) -> str | None:
    """The process's state letter (``Z`` for a zombie), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def _children(pid: int) -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == pid]


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None


async def _started(tmp_path, env=None):
    km = LightManager(kernel_name="python3")
    await km.start_kernel(cwd=str(tmp_path), env=dict(env or os.environ))
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=scaled(60))
    return km, kc


async def _run(kc, code: str) -> tuple[dict, str]:
    """Run ``code``: the execute reply's content and what it printed."""
    printed = []

    def hook(msg):
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])

    reply = await kc.execute_interactive(code, timeout=scaled(60), output_hook=hook)
    return reply["content"], "".join(printed)


async def _gone(km) -> None:
    """Wait until the manager sees its kernel dead."""
    for _ in range(int(scaled(60) / 0.05)):
        if not await km.is_alive():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the kernel is still alive")


def test_a_warm_kernel_runs_code_as_the_zygotes_child_with_the_runs_environment(tmp_path):
    async def main():
        # JPY_SESSION_NAME differs per run (the zygote was started without it): the kernel has the run's
        km, kc = await _started(tmp_path, dict(os.environ, JPY_SESSION_NAME="probe-session"))
        kernel = km.provisioner.kernel
        try:
            assert kernel is not None and kernel.threads_at_fork == 1  # forked, from a one-thread zygote
            zygote = kernel.zygote
            assert zygote.ready["threads"] == 1 and _ppid(kernel.pid) == zygote.process.pid
            content, printed = await _run(kc, textwrap.dedent("""\
                import os, sys
                print(os.getcwd(), os.environ['JPY_SESSION_NAME'], os.environ['JPY_PARENT_PID'], os.getsid(0) == os.getpid())
                print(sys.orig_argv[1:3], sys.argv[0].endswith('ipykernel_launcher.py'), sys.executable)
                """))
            assert content["status"] == "ok", content
            assert printed.splitlines() == [f"{tmp_path} probe-session {os.getpid()} True",
                                            f"['-m', 'ipykernel_launcher'] True {zygote.key[0]}"]
        finally:
            kc.stop_channels()
            await km.shutdown_kernel()
        assert km.provisioner.kernel is None and _state(kernel.pid) is None  # exited and reaped
        assert kernel.returncode == 0

    asyncio.run(main())


def test_an_endless_cell_is_interrupted_and_the_kernel_goes_on(tmp_path):
    async def main():
        km, kc = await _started(tmp_path)
        try:
            msg_id = kc.execute("print('looping', flush=True)\nwhile True: pass")
            while True:  # the loop has started: the cell printed (an interrupt before it would hit no cell)
                msg = await kc.get_iopub_msg(timeout=scaled(60))
                if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                    break
            await km.interrupt_kernel()
            while (reply := await kc.get_shell_msg(timeout=scaled(60)))["parent_header"].get("msg_id") != msg_id:
                pass  # a reply to wait_for_ready's requests
            assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
            content, printed = await _run(kc, "print(6 * 7)")
            assert content["status"] == "ok" and printed == "42\n"
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)

    asyncio.run(main())


def test_a_restarted_kernel_is_a_new_fork_and_the_old_one_is_reaped(tmp_path):
    async def main():
        km, kc = await _started(tmp_path)
        try:
            await _run(kc, "x = 1")
            old = km.provisioner.kernel.pid
            await km.restart_kernel(now=True)
            new = km.provisioner.kernel.pid
            assert new != old and _state(old) is None
            await kc.wait_for_ready(timeout=scaled(60))
            content, printed = await _run(kc, "print('x' in dir())")
            assert content["status"] == "ok" and printed == "False\n"  # a fresh namespace
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)  # killed: SIGKILL to its group
        assert km.provisioner.kernel is None and _state(new) is None

    asyncio.run(main())


def test_a_kernel_that_ends_itself_is_seen_dead_and_reaped(tmp_path):
    async def main():
        km, kc = await _started(tmp_path)
        kernel = km.provisioner.kernel
        try:
            kc.execute("import os; os._exit(3)")
            await _gone(km)
            assert await km.provisioner.poll() == 3 and _state(kernel.pid) is None
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)

    asyncio.run(main())


def test_nbclient_reports_a_dead_warm_kernel(tmp_path):
    nb = new_notebook(cells=[new_code_cell("import os; os.kill(os.getpid(), 9)"), new_code_cell("print(1)")])
    client = NotebookClient(nb, timeout=int(scaled(60)), kernel_name="python3", allow_errors=True,
                            kernel_manager_class=LightManager, resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(DeadKernelError):
        client.execute()
    assert not nbformat.validate(nb)


def test_a_zygote_with_a_thread_forks_nothing_and_kernels_start_plain(tmp_path):
    (tmp_path / "pcw_starts_a_thread.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))

    class Manager(WarmKernelManager):
        modules = (KERNEL_MODULES, ("pcw_starts_a_thread",))

    async def main():
        km = Manager(kernel_name="python3")
        with pytest.warns(UserWarning, match="kernels start plain"):
            await km.start_kernel(cwd=str(tmp_path), env=env)
        try:
            assert km.provisioner.kernel is None and km.provisioner.process is not None  # launched: plain
        finally:
            await km.shutdown_kernel(now=True)
        zygote = next(z for z in warm_kernel._zygotes.values() if "pcw_starts_a_thread" in z.key[2][1])
        assert zygote.ready["threads"] == 2
        with pytest.raises(warm_kernel.ZygoteUnavailable, match="2 threads"):  # and asked anyway, it refuses
            zygote.spawn(["-m", "ipykernel_launcher"], env, str(tmp_path))
        zygote.close()
        warm_kernel._zygotes.pop(zygote.key)

    asyncio.run(main())


def test_a_notebook_that_imports_torch_gets_the_zygote_with_torch_and_plain_kernels_on_request(monkeypatch):
    light = new_notebook(cells=[new_code_cell("import matplotlib.pyplot as plt\n# torch is not needed here")])
    torch = [new_notebook(cells=[new_code_cell(code)]) for code in
             ("import random\nimport torch", "from torch import nn", "    from kernels.model import TinyLM")]
    monkeypatch.delenv(warm_kernel.PLAIN_ENV, raising=False)
    assert warm_kernel.kernel_manager_class(light) is WarmKernelManager
    assert all(warm_kernel.kernel_manager_class(nb) is TorchKernelManager for nb in torch)
    assert "torch" in TorchKernelManager.modules[1] and "torch" not in WarmKernelManager.modules[1]
    monkeypatch.setenv(warm_kernel.PLAIN_ENV, "1")
    assert not issubclass(warm_kernel.kernel_manager_class(torch[0]), WarmKernelManager)


def test_the_zygote_reaps_every_kernel_and_takes_them_with_it(tmp_path):
    async def main():
        first, kc1 = await _started(tmp_path)
        second, kc2 = await _started(tmp_path)
        zygote = first.provisioner.kernel.zygote
        pids = [first.provisioner.kernel.pid, second.provisioner.kernel.pid]
        assert second.provisioner.kernel.zygote is zygote and zygote.live == set(pids)
        for kc in (kc1, kc2):
            kc.stop_channels()
        await first.shutdown_kernel()
        assert [_state(p) for p in pids][0] is None and _children(zygote.process.pid) == [pids[1]]
        zygote.close()  # as when the test process ends: the zygote ends its kernels first
        assert zygote.process.returncode == 0 and _state(pids[1]) is None
        await _gone(second)
        assert await second.provisioner.poll() == -signal.SIGKILL
        await second.shutdown_kernel(now=True)
        warm_kernel._zygotes.pop(zygote.key)

    asyncio.run(main())


def test_kernels_die_with_their_zygote_and_the_next_kernel_gets_a_new_one(tmp_path):
    async def main():
        km, kc = await _started(tmp_path)
        kernel = km.provisioner.kernel
        try:
            kernel.zygote.process.kill()  # as if the zygote crashed: the parent-death signal ends its kernel
            kernel.zygote.process.wait()
            await _gone(km)
            assert await km.provisioner.poll() == -signal.SIGKILL
            for _ in range(int(scaled(30) / 0.05)):
                if _state(kernel.pid) in (None, "Z"):  # killed (reaped by whoever adopted it, or not yet)
                    break
                await asyncio.sleep(0.05)
            assert _state(kernel.pid) in (None, "Z")
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)
        again, kc = await _started(tmp_path)
        try:
            assert again.provisioner.kernel.zygote is not kernel.zygote
            content, printed = await _run(kc, "print('again')")
            assert printed == "again\n"
        finally:
            kc.stop_channels()
            await again.shutdown_kernel()

    asyncio.run(main())


"""SGLang's production router (the ``sglang-router`` package) as a child process: find it without
installing anything, start it on a free loopback port in front of given workers, wait until it has
registered every one of them, and stop it.

The package is optional (``pip install -e '.[bench]'``; ``scripts/setup.sh`` installs it with the
developers' extras). Where it is missing, :func:`available` says why and the benchmark says so instead
of measuring anything.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "sglang-router"
MODULE = "sglang_router"
#: The version whose behaviour towards workers ``benchmarks/router/mock_worker.py`` was written against.
KNOWN_VERSION = "0.3.2"


def available() -> tuple[bool, str]:
    """(whether the router can be launched here, its version or why not), without importing it."""
    spec = importlib.util.find_spec(MODULE)  # finds, never imports (a submodule's spec would import the package)
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    if not any((Path(p) / "launch_router.py").is_file() for p in places):
        return False, f"the {PACKAGE} package is not installed (pip install -e '.[bench]')"
    try:
        return True, importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return True, "unknown version"


def free_port() -> int:
    """A loopback port nobody listens on now (the router binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class RouterSettings:
    """The routing flags the benchmark passes. Invariants: the defaults are the router's published
    defaults for the cache-aware policy, so a run measures the router as it ships; ``extra`` is passed
    as it is (e.g. ``("--cache-threshold", "0.5")``)."""

    policy: str = "cache_aware"
    extra: tuple[str, ...] = ()


class RouterProcess:
    """A running router. Invariants: it listens on loopback only (its API at ``url``, its metrics on
    another free port); :meth:`stop` ends the child (and its process group) and is safe to call twice;
    ``log`` holds what the child printed."""

    def __init__(self, worker_urls: Sequence[str], settings: RouterSettings, log: Path, *, startup_s: float = 60.0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.argv = [sys.executable, "-m", f"{MODULE}.launch_router", "--host", "127.0.0.1", "--port", str(self.port),
                     "--worker-urls", *worker_urls, "--policy", settings.policy, "--log-level", "warn",
                     # its metrics server listens on every interface at a fixed port (29000) unless told
                     # otherwise: loopback and a free port keep runs side by side and off the network
                     "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port()),
                     # the workers are up before the router: no reason to wait the default 30 s between checks
                     "--worker-startup-check-interval", "1", "--worker-startup-timeout-secs", str(int(startup_s)),
                     *settings.extra]
        self._out = open(log, "wb")  # closed by stop()
        self.proc = subprocess.Popen(self.argv, stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        try:
            self._wait_ready(len(worker_urls), startup_s)
        except BaseException:
            self.stop()
            raise

    def _get(self, path: str, timeout: float = 2.0) -> object:
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return json.loads(r.read())

    def workers(self) -> list[dict]:
        """The router's own list of its workers (``GET /workers``)."""
        data = self._get("/workers")
        return list(data.get("workers", [])) if isinstance(data, dict) else []

    def _wait_ready(self, n: int, startup_s: float) -> None:
        deadline = time.monotonic() + startup_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the router exited with status {self.proc.returncode}: {self.tail()}")
            try:
                if sum(1 for w in self.workers() if w.get("is_healthy")) == n:
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.2)
        raise TimeoutError(f"the router did not register {n} healthy workers within {startup_s:.0f} s: {self.tail()}")

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_bytes()[-chars:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self, grace_s: float = 5.0) -> None:
        if self.proc.poll() is None:
            # the launcher's Python and the router inside it share the new session's process group
            for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._out.close()

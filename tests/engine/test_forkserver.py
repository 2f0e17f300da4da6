"""Children forked from a fork server are as confined as launched ones (autograder/isolation/forkserver.py).

The attacks of tests/support/isolation_attacks.py run in a child the grading run's fork server forks, next to a
sibling forked from the same server: what a bubblewrap-launched child may not do (read outside its
view, a sibling's scratch dir included; write outside its scratch dir; see, signal, trace or limit the
grader or the sibling; reach the network; meet the sibling in named IPC; hold a capability; leave a
process behind), a forked child may not do either. Plus what only the fork path has to prove: each
child has namespaces of its own (not the server's, not a sibling's), its exit status and a signal
that ends it arrive as a launched child's would, and a kill ends everything it started.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.core import layout
from autograder.grading.staging import SCRATCH_MB, GradingRun
from autograder.grading.supervise import child_env
from autograder.isolation import cgroup, forkclient
from autograder.isolation import levels as isolation
from autograder.isolation.launch import ChildSpec, LaunchPlan, confinement
from tests.conftest import ROOT
from tests.support.machine import scaled

HIDDEN = [str(layout.SOLUTIONS), str(layout.TESTS), str(ROOT / ".git")]


@pytest.fixture(scope="module")
def run():
    iso = isolation.select("best")
    why = forkclient.usable(iso)
    if why is not None:
        pytest.skip(f"no fork server here: {why}")
    with GradingRun.open(iso, HIDDEN) as r:
        shutil.copy(ROOT / "tests" / "support" / "isolation_attacks.py", r.staging / "isolation_attacks.py")
        os.chmod(r.staging / "isolation_attacks.py", 0o644)
        yield r


def _server(run: GradingRun, preload: tuple[str, ...] = ()) -> forkclient.ForkServer:
    server = run.fork_server(preload, child_env(os.path.realpath(run.scratch_root)))
    assert server is not None, "the fork server did not start"
    return server


class Forked:
    """One forked child with its pipes and cgroup, as the supervisor would make it."""

    def __init__(self, run: GradingRun, entry: str, memory_mb: int = 512, staging: Path | None = None,
                 preload: tuple[str, ...] = ()) -> None:
        staging = staging or run.staging
        self.scratch, uid = run.scratch()
        self.group = cgroup.ChildCgroup.create(cgroup.available()[0], memory_mb * 2**20)
        self.result_r, result_w = os.pipe()
        self.out_r, out_w = os.pipe()
        conf = confinement(ChildSpec(sys.executable, entry, str(staging), self.scratch, hidden=run.hidden, uid=uid,
                                     memory_mb=memory_mb, cgroup_fd=4, scratch_mb=SCRATCH_MB), run.isolation)
        self.uid = uid
        try:
            self.proc = _server(run, preload).spawn(conf.policy, conf.readable, str(staging), self.scratch, SCRATCH_MB, uid,
                                           child_env(self.scratch), [(out_w, 1), (out_w, 2), (result_w, 3),
                                                                     (self.group.procs_fd, 4)])
        finally:
            os.close(result_w)
            os.close(out_w)
            self.group.close_fd()
        self.plan = LaunchPlan([], (), {}, self.scratch, run.isolation, conf.readable)

    def host_pids(self, wait_s: float = 10.0) -> list[int]:
        deadline = time.monotonic() + scaled(wait_s)
        while not (pids := self.group.pids()) and time.monotonic() < deadline:
            time.sleep(0.01)
        return pids

    def end(self, run: GradingRun) -> None:
        LaunchPlan.kill(self.proc)
        self.group.remove()
        for fd in (self.result_r, self.out_r):
            os.close(fd)
        run.discard(self.scratch)


def _read_all(fd: int, seconds: float) -> bytes:
    data, deadline = b"", time.monotonic() + scaled(seconds)
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 0.1)[0]:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return data


@pytest.fixture(scope="module")
def attacked(run):
    world = tempfile.mkdtemp(prefix="pcw-fork-test-")
    os.chmod(world, 0o755)
    Path(world, "answer.py").write_text("ANSWER = 42\n")
    other = os.path.join(world, "other")
    os.mkdir(other)
    os.chmod(other, 0o777)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    sibling = Forked(run, "isolation_attacks:sleep")
    child = Forked(run, "isolation_attacks:main")
    try:
        targets = {
            "secrets": {"secret_file": f"{world}/answer.py", "solutions": str(layout.stage_files("s01").reference),
                        "tests": str(ROOT / "tests" / "conftest.py"), "git": str(ROOT / ".git"),
                        "course_source": f"{world}/answer.py", "sibling_scratch": sibling.scratch},
            "writes": {"world_writable_dir": f"{other}/planted.py", "staging": f"{run.staging}/planted.py",
                       "repo": str(ROOT / "planted_by_child.py")},
            "scratch": child.scratch, "grader_pid": os.getpid(), "sibling_pid": sibling.host_pids()[0],
            "port": listener.getsockname()[1], "nofile": [1024, 1024], "result_fd": 3, "control": False,
        }
        child.proc.stdin.write(json.dumps(targets).encode())
        child.proc.stdin.close()
        raw = _read_all(child.result_r, 60)
        rc = child.plan.returncode(child.proc.wait(timeout=scaled(30)))
        left = child.group.pids()
        facts = {"rc": rc, "left_in_cgroup": left, "output": _read_all(child.out_r, 1).decode(errors="replace")}
        try:
            listener.accept()[0].close()
            facts["listener_accepted"] = True
        except TimeoutError:
            facts["listener_accepted"] = False
        facts["planted"] = [p for p in targets["writes"].values() if os.path.exists(p)]
        assert raw, f"the child wrote no outcomes (exit {rc}): {facts['output']}"
        yield json.loads(raw), facts, child.uid
    finally:
        listener.close()
        sibling.end(run)
        child.end(run)
        (ROOT / "planted_by_child.py").unlink(missing_ok=True)
        shutil.rmtree(world, ignore_errors=True)


def test_forked_child_cannot_read_outside_its_view(attacked):
    out, _, _ = attacked
    reads = {k: v for k, v in out.items() if k.startswith("read:")}
    assert len(reads) == 9 and all(v != "ok" for v in reads.values()), reads


def test_forked_child_cannot_write_outside_its_scratch(attacked):
    out, facts, _ = attacked
    writes = {k: v for k, v in out.items() if k.startswith("write:")}
    assert writes.pop("write:scratch") == "ok"
    assert writes and all(v != "ok" for v in writes.values()), writes
    assert facts["planted"] == []


def test_forked_child_sees_neither_grader_nor_sibling_nor_server(attacked):
    out, _, _ = attacked
    procs = {k: v for k, v in out.items() if k.startswith(("proc:", "kill:", "pidfd_signal:", "prlimit:", "ptrace:"))}
    assert len(procs) == 15 and all(v != "ok" for v in procs.values()), procs
    assert out["visible_pids"] == [1, 2] or max(out["visible_pids"]) < 10, out["visible_pids"]


def test_forked_child_has_no_network_and_no_shared_ipc(attacked):
    out, facts, _ = attacked
    assert out["connect:loopback"] != "ok" and out["udp:loopback"] != "ok" and not facts["listener_accepted"]
    assert out["ipc:sysv_shm"] != "ok" and out["ipc:posix_mqueue"] != "ok"


def test_forked_child_runs_as_its_own_user_without_capabilities(attacked):
    out, _, uid = attacked
    me = out["identity"]
    assert (me["uid"], me["gid"]) == (uid, uid) and me["groups"] in ([], [uid])
    assert me["caps"] == [0, 0, 0] and me["bounding"] == [] and me["no_new_privs"] == 1 and me["seccomp_mode"] == 2
    assert me["isolated"] == 1 and out["import:numpy"] == "ok"


def test_forked_child_leaves_nothing_behind(attacked):
    """Its double-forked grandchild (setsid refused) is gone with it: its pid namespace ended with its init."""
    out, facts, _ = attacked
    assert out["grandchild:setsid"] == "EPERM"
    assert facts["rc"] == 0 and facts["left_in_cgroup"] == []


def _namespaces_and_status(run: GradingRun, code: str) -> tuple[dict, int | None]:
    """Run ``code`` in a forked child (entry: exec of the payload read from stdin) and return what it wrote
    to the result pipe (JSON) and its exit status as the supervisor reads it."""
    child = Forked(run, "isolation_attacks:run_stdin")
    try:
        child.proc.stdin.write(code.encode())
        child.proc.stdin.close()
        raw = _read_all(child.result_r, 60)
        rc = child.plan.returncode(child.proc.wait(timeout=scaled(30)))
        return (json.loads(raw) if raw else {"output": _read_all(child.out_r, 1).decode(errors="replace")}), rc
    finally:
        child.end(run)


NAMESPACES = """
import json, os, socket
ns = {k: os.readlink(f"/proc/self/ns/{k}") for k in ("mnt", "pid", "net", "ipc", "uts")}
try:
    root = sorted(os.listdir(os.path.dirname(os.getcwd())))
except PermissionError:
    root = "unreadable"
out = {"ns": ns, "hostname": socket.gethostname(), "scratch_root": root, "pid": os.getpid(), "ppid": os.getppid()}
os.write(3, json.dumps(out).encode())
"""


def test_each_forked_child_has_namespaces_of_its_own(run):
    """Two children alive at once (a namespace's number is reused once it is gone) share none of theirs."""
    children = [Forked(run, "isolation_attacks:run_stdin") for _ in range(2)]
    try:
        seen = []
        for child in children:
            child.proc.stdin.write((NAMESPACES + "import time\ntime.sleep(60)\n").encode())
            child.proc.stdin.close()
            raw = b""
            while not raw.endswith(b"}"):
                chunk = _read_all_once(child.result_r, 30)
                assert chunk, _read_all(child.out_r, 1)
                raw += chunk
            seen.append(json.loads(raw))
        first, second = seen
        mine = {k: os.readlink(f"/proc/self/ns/{k}") for k in first["ns"]}
        for k in first["ns"]:
            assert first["ns"][k] != second["ns"][k] and first["ns"][k] != mine[k], k
        assert first["hostname"] == "grading" and (first["pid"], first["ppid"]) == (2, 1)
        assert first["scratch_root"] == "unreadable"  # Landlock; and the mount holds only its own dir
    finally:
        for child in children:
            child.end(run)


def _read_all_once(fd: int, seconds: float) -> bytes:
    if not select.select([fd], [], [], seconds)[0]:
        return b""
    return os.read(fd, 65536)


@pytest.mark.parametrize(("code", "expected"), [
    ("raise SystemExit(3)", 3),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM),
    ("import resource, signal, os\nresource.setrlimit(resource.RLIMIT_CPU, (1, 2))\nwhile True: pass", -signal.SIGXCPU),
    ("raise ValueError('x')", 1),
])
def test_a_forked_childs_end_reads_as_a_launched_childs(run, code, expected):
    """An exit code, or the signal that ended it (SIGXCPU of the CPU limit included: the child is not
    its namespace's pid 1, for which the kernel would drop it)."""
    assert _namespaces_and_status(run, code)[1] == expected


def test_killing_a_forked_child_ends_everything_it_started(run):
    code = """
import os, time
if os.fork() == 0:
    if os.fork() == 0:
        while True: time.sleep(0.01)
    os._exit(0)
os.write(3, b"forked")
time.sleep(60)
"""
    child = Forked(run, "isolation_attacks:run_stdin")
    try:
        child.proc.stdin.write(code.encode())
        child.proc.stdin.close()
        assert os.read(child.result_r, 16) == b"forked"
        assert len(child.host_pids()) >= 2
        LaunchPlan.kill(child.proc)
        assert child.proc.returncode == -signal.SIGKILL
        deadline = time.monotonic() + scaled(5)
        while child.group.pids() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert child.group.pids() == [], "a process the child started outlived the kill"
    finally:
        child.end(run)


def test_closing_the_run_ends_its_server_and_only_its_server(run):
    server = _server(run)
    with GradingRun.open(run.isolation, HIDDEN) as other:
        theirs = _server(other)._proc
        assert theirs.poll() is None
    assert theirs.poll() is not None, "the server outlived its run"
    assert server._proc.poll() is None


@pytest.mark.parametrize("preload", [(), ("torch",)])
def test_a_child_of_another_staging_dir_holds_none_of_the_servers_modules_from_its_own(run, preload):
    """A TODO whose twins are blocked imports from a copy of the staging dir: a module the server loaded
    from its own (the harness's protocol) comes from the copy in that child, and so does every other."""
    variant = Path(run.base) / f"staging-fork-test-{len(preload)}"
    shutil.copytree(run.staging, variant)
    protocol = variant / "autograder" / "child" / "protocol.py"
    protocol.write_text(protocol.read_text() + "\nVARIANT_MARK = True\n")
    code = """
import json, os, sys
import autograder.child.protocol as p
import autograder.child.sandbox as s
os.write(3, json.dumps({"mark": getattr(p, "VARIANT_MARK", False), "files": [p.__file__, s.__file__],
                        "others": sorted(m for m, mod in sys.modules.items()
                                         if (getattr(mod, "__file__", None) or "").startswith(%r))}).encode())
""" % (str(run.staging) + os.sep)
    child = Forked(run, "isolation_attacks:run_stdin", staging=variant, preload=preload,
                   memory_mb=4096 if preload else 512)
    try:
        child.proc.stdin.write(code.encode())
        child.proc.stdin.close()
        raw = _read_all(child.result_r, 60)
        assert raw, _read_all(child.out_r, 1)
        out = json.loads(raw)
    finally:
        child.end(run)
    assert out["mark"] is True and all(f.startswith(str(variant) + os.sep) for f in out["files"]), out
    assert out["others"] == [], out


_WARM_SERVER = r"""
import io, json, os, sys
cfg = json.loads(open(sys.argv[1]).read())
sys.path.insert(0, cfg["root"])
import ctypes  # noqa: F401 - as the server does
for name in cfg["server_imports"]:
    __import__(name)
import autograder.child.sandbox as sandbox
before = set(sys.modules)
install = sandbox._install_audit_hook

def just_before_learner_code(*args, **kwargs):  # the hook is the last step before the first cell
    with open(cfg["out"], "w") as f:
        json.dump(sorted(set(sys.modules) - before), f)
    return install(*args, **kwargs)

sandbox._install_audit_hook = just_before_learner_code
pid = os.fork()
if pid == 0:
    payload = dict(cfg["payload"], result_fd=os.open(cfg["result"], os.O_WRONLY | os.O_CREAT))
    sys.stdin = io.StringIO(json.dumps(payload))
    sandbox.main()
os.waitpid(pid, 0)
"""


@pytest.mark.slow  # starts a fork server per stage, torch preloaded
@pytest.mark.parametrize("stage_id", layout.built_stages())
def test_a_forked_child_imports_no_module_of_the_harness_itself(run, stage_id, tmp_path):
    """What the server imports (the entry, the harness, the preload) is every module of the course a
    child needs before the learner's first cell, but for its stage's checks: so a forked child spends
    its CPU on the learner's code and the checks, not on imports (they were most of it). Replayed
    outside the sandbox, from the run's staging dir, with the payload the grader sends."""
    from autograder.core.spec import load_stage
    from autograder.grading.grade import child_payload_for, limits_for
    from autograder.grading.staging import harness
    from autograder.grading.submission import read_submission

    sub = read_submission(layout.stage_files(stage_id).instructor())
    todo = load_stage(stage_id).todos[0]
    payload = child_payload_for(sub, todo)
    limits = limits_for(sub.stage)
    (tmp_path / "work").mkdir()
    payload.update(memory_limit_mb=limits.memory_limit_mb, cpu_limit_s=limits.cpu_s, workdir=str(tmp_path / "work"),
                   root=str(run.staging), denied_dirs=[], salt="", denied_digests=[])
    warm = [*payload["preload"], *(m for p in payload["preload"] for m in forkclient.WARM_WITH.get(p, ()))]
    cfg = {"root": str(run.staging), "server_imports": [*harness(payload["preload"]), *warm], "payload": payload,
           "out": str(tmp_path / "imported.json"), "result": str(tmp_path / "result")}
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    p = subprocess.run([sys.executable, "-I", "-c", _WARM_SERVER, str(tmp_path / "cfg.json")], cwd=tmp_path, timeout=scaled(120),
                       capture_output=True, text=True)
    assert p.returncode == 0 and (tmp_path / "imported.json").is_file(), p.stderr[-2000:]
    imported = json.loads((tmp_path / "imported.json").read_text())
    given = ("kernels",) if "torch" in payload["preload"] else ()  # a torch stage's model comes with torch
    own = [m for m in imported if m.split(".")[0] in ("autograder", *given) and not m.startswith("autograder.checks.")]
    assert own == [], f"{stage_id}: a forked child imports {own} itself: add them to staging.HARNESS"
    assert f"autograder.checks.{stage_id}" in imported  # the stage's checks: never in the server

"""Kernel isolation of learner children, proven from inside a real child (autograder/isolation/levels.py).

For each level this machine offers (namespaces+landlock+seccomp, and the forced fallback without
namespaces), one confined child runs every attack of tests/support/isolation_attacks.py against real
targets: a secret file, the repository's solutions/tests/.git, a sibling child, this test process
(standing in for the grader), a loopback listener. An unconfined control child runs the same
attacks and must succeed, so each refusal below is the isolation's doing, not the file system's.
A level this machine lacks is skipped with the reason detection gave.
"""
from __future__ import annotations

import json
import os
import resource
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.core import layout
from autograder.isolation import launch
from autograder.isolation import levels as isolation
from autograder.isolation.confine import EXIT_NOT_CONFINED
from tests.conftest import ROOT
from tests.support.machine import scaled

pytestmark = pytest.mark.slow  # the fast lane leaves it out: starts confined children and attacks them

LEVELS = ("namespaces", "fallback")
# What a child must never see (the venv may live inside the repository, so not the repository itself)
HIDDEN = [str(layout.SOLUTIONS), str(layout.TESTS), str(ROOT / ".git")]


def _select(level: str) -> isolation.Isolation | None:
    offer = isolation.detect()
    if level == "namespaces":
        if "namespaces" not in offer.layers:
            pytest.skip(f"no namespaces here: {offer.problems.get('namespaces')}")
        return isolation.select("best")
    if level == "fallback":
        if "landlock" not in offer.layers:
            pytest.skip(f"no Landlock here: {offer.problems.get('landlock')}")
        iso = isolation.select("no-namespaces")
        assert "namespaces" not in iso.layers and "landlock" in iso.layers
        return iso
    return None


def _world_dir(base: str, name: str, mode: int = 0o755) -> str:
    path = os.path.join(base, name)
    os.mkdir(path)
    os.chmod(path, mode)
    return path


def _read_until_closed(fd: int, seconds: float) -> bytes:
    """Everything written to the pipe until every writer closed it, or ``seconds`` ran out (a
    descendant that outlived the child would hold the pipe open: that must not hang the suite)."""
    data, deadline = b"", time.monotonic() + scaled(seconds)
    try:
        while time.monotonic() < deadline:
            if not select.select([fd], [], [], 0.1)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data


@pytest.fixture(scope="module", params=LEVELS)
def attacked(request):
    """The attack child, run once per level: (level, isolation, outcomes, after-the-fact facts)."""
    iso = _select(request.param)
    yield from _attack(request.param, iso)


@pytest.fixture(scope="module")
def unconfined():
    """The same attacks from an unconfined child: the control."""
    yield from _attack("control", None)


def _attack(level: str, iso: isolation.Isolation | None):
    world = tempfile.mkdtemp(prefix="pcw-iso-test-")
    os.chmod(world, 0o755)  # readable by anyone: only the isolation may stand between a child and it
    secret_dir = _world_dir(world, "secret")
    Path(secret_dir, "answer.py").write_text("ANSWER = 42\n")
    course = _world_dir(world, "course")
    Path(_world_dir(course, "source"), "reference.ipynb").write_text("{}")
    other = _world_dir(world, "other", 0o777)
    staging = isolation.stage_tree(Path(world) / "staging", {
        **isolation.confinement_files(), "isolation_attacks.py": ROOT / "tests" / "support" / "isolation_attacks.py"})
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    sibling = child = None
    try:
        def launch(entry: str, scratch: str, fds=()):
            if iso is None:  # the control: the same child, unconfined
                argv = [sys.executable, "-I", "-c",
                        f"import sys; sys.path[0:0] = [{str(staging)!r}]; import isolation_attacks as a; a.{entry.split(':')[1]}()"]
                return None, subprocess.Popen(argv, stdin=subprocess.PIPE, pass_fds=fds, cwd=scratch, start_new_session=True)
            plan = isolation.plan_child(isolation.ChildSpec(
                sys.executable, entry, str(staging), scratch, pass_fds=fds, hidden=HIDDEN,
                env={"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch}), iso)
            return plan, subprocess.Popen(**plan.popen_kwargs(), stdin=subprocess.PIPE)

        def scratch_dir() -> str:
            return isolation.make_scratch(iso, world) if iso else tempfile.mkdtemp(dir=world)

        sib_scratch = scratch_dir()
        _, sibling = launch("isolation_attacks:sleep", sib_scratch)
        scratch = scratch_dir()
        read_fd, write_fd = os.pipe()
        control = iso is None
        targets = {
            "secrets": {"secret_file": f"{secret_dir}/answer.py", "solutions": str(layout.stage_files("s01").reference),
                        "tests": str(ROOT / "tests" / "conftest.py"), "git": str(ROOT / ".git"),
                        "course_source": f"{course}/source/reference.ipynb", "sibling_scratch": sib_scratch},
            "writes": {"world_writable_dir": f"{other}/planted.py",
                       **({} if control else {"staging": f"{staging}/planted.py", "repo": str(ROOT / "planted_by_child.py")})},
            "scratch": scratch, "grader_pid": os.getpid(), "sibling_pid": sibling.pid,
            "port": listener.getsockname()[1], "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
            "result_fd": write_fd, "control": control,
        }
        plan, child = launch("isolation_attacks:main", scratch, (write_fd,))
        os.close(write_fd)
        child.stdin.write(json.dumps(targets).encode())
        child.stdin.close()
        rc = child.wait(timeout=scaled(60))
        if plan is not None and "namespaces" not in plan.isolation.layers:
            plan.kill(child)  # what the supervisor does after every child; under namespaces it is not needed
        raw = _read_until_closed(read_fd, seconds=5)
        facts = {"rc": rc}
        try:
            listener.accept()[0].close()
            facts["listener_accepted"] = True
        except TimeoutError:
            facts["listener_accepted"] = False
        marker = Path(scratch, "marker")
        if marker.exists():
            time.sleep(0.2)
            before = marker.stat().st_size
            time.sleep(0.4)
            facts["marker_grew_after_end"] = marker.stat().st_size != before
        facts["planted"] = [p for p in targets["writes"].values() if os.path.exists(p) and not control]
        assert raw, f"the child wrote no outcomes (exit {rc})"
        yield level, iso, json.loads(raw), facts
    finally:
        listener.close()
        for proc in (sibling, child):
            if proc is not None and proc.poll() is None:
                isolation.LaunchPlan.kill(proc)
        (ROOT / "planted_by_child.py").unlink(missing_ok=True)
        shutil.rmtree(world, ignore_errors=True)


def test_unconfined_control_reaches_every_target(unconfined):
    _, _, out, facts = unconfined
    reached = ["read:secret_file", "read:solutions", "read:tests", "read:git", "read:course_source", "read:dir_fd",
               "read:symlink", "write:world_writable_dir", "proc:grader:cmdline", "proc:grader:cwd", "kill:grader",
               "kill:sibling", "pidfd_signal:grader", "prlimit:grader", "connect:loopback", "ipc:sysv_shm",
               "ipc:posix_mqueue"]
    assert {k: out[k] for k in reached} == {k: "ok" for k in reached}
    assert os.getpid() in out["visible_pids"] and facts["listener_accepted"]


def test_child_cannot_read_outside_its_view(attacked):
    """Not the secret next door, not solutions/, tests/, .git, the course's source/, a sibling's
    scratch dir; not through a dir_fd of '/', a symlink planted in scratch, or /proc/1/root."""
    _, _, out, _ = attacked
    reads = {k: v for k, v in out.items() if k.startswith("read:")}
    assert len(reads) == 9 and all(v != "ok" for v in reads.values()), reads


def test_child_cannot_write_outside_its_scratch(attacked):
    _, _, out, facts = attacked
    writes = {k: v for k, v in out.items() if k.startswith("write:")}
    assert writes.pop("write:scratch") == "ok"
    assert writes and all(v != "ok" for v in writes.values()), writes
    assert facts["planted"] == []


def test_child_cannot_see_grader_or_sibling_in_proc(attacked):
    level, _, out, _ = attacked
    procs = {k: v for k, v in out.items() if k.startswith("proc:")}
    assert len(procs) == 6 and all(v != "ok" for v in procs.values()), procs
    if level == "namespaces":  # its own /proc: bwrap's init and the child's processes only
        assert isinstance(out["visible_pids"], list) and max(out["visible_pids"]) < 10
    else:
        assert out["visible_pids"] == "EACCES"


def test_child_cannot_signal_grader_or_sibling(attacked):
    """kill, killpg and pidfd_send_signal (signal 0: the same permission check, harmless if it passed)."""
    _, _, out, _ = attacked
    signals = {k: v for k, v in out.items() if k.startswith(("kill:", "pidfd_signal:"))}
    assert len(signals) == 5 and all(v != "ok" for v in signals.values()), signals


def test_child_cannot_prlimit_or_trace_grader_or_sibling(attacked):
    _, _, out, _ = attacked
    calls = {k: v for k, v in out.items() if k.startswith(("prlimit:", "ptrace:"))}
    assert len(calls) == 4 and all(v != "ok" for v in calls.values()), calls
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 16


def test_child_has_no_network(attacked):
    _, _, out, facts = attacked
    assert out["connect:loopback"] != "ok" and out["udp:loopback"] != "ok"
    assert facts["listener_accepted"] is False


def test_child_cannot_meet_a_sibling_in_named_ipc(attacked):
    """System V shared memory and POSIX message queues are found by name, not path: at the fallback
    level (no IPC namespace) two children could pass answers through them, so seccomp refuses them."""
    _, _, out, _ = attacked
    assert out["ipc:sysv_shm"] != "ok" and out["ipc:posix_mqueue"] != "ok", out


def test_child_runs_unprivileged(attacked):
    """No capability, no way to gain one (no_new_privs, empty bounding set or a non-root uid), seccomp on;
    as root: uid 65534, or uid 0 stripped of every capability where nobody cannot reach the interpreter."""
    _, iso, out, _ = attacked
    me = out["identity"]
    assert me["caps"] == [0, 0, 0] and me["no_new_privs"] == 1 and me["groups"] in ([], [me["gid"]])
    assert me["seccomp_mode"] == (2 if "seccomp" in iso.layers else 0)
    if os.geteuid() == 0:
        assert me["bounding"] == []  # no exec can ever grant a capability back
        user = isolation.child_user(iso)
        if user == isolation.ROOT_WITHOUT_CAPS:
            assert me["uid"] == 0
        else:
            assert (me["uid"], me["gid"]) == user == isolation.NOBODY
    else:
        assert me["uid"] != 0


def test_child_descendants_die_with_it(attacked):
    """A double-forked grandchild that tries setsid stops when the child ends (namespaces: by itself;
    fallback: by the supervisor's process-group kill, which setsid can no longer escape)."""
    _, iso, out, facts = attacked
    if "seccomp" in iso.layers:
        assert out["grandchild:setsid"] == "EPERM"
    assert facts["marker_grew_after_end"] is False


def test_child_runs_the_venv_interpreter_isolated(attacked):
    """python -I from a venv whose python links into another prefix: both prefixes and site-packages are bound."""
    _, _, out, _ = attacked
    me = out["identity"]
    assert me["isolated"] == 1 and out["import:numpy"] == "ok"
    assert me["prefix"] == os.path.realpath(sys.prefix) and me["base_prefix"] == os.path.realpath(sys.base_prefix)


@pytest.mark.parametrize("level", LEVELS)
def test_killing_a_hung_child_ends_everything_it_started(level):
    """The supervisor's timeout path: one process-group kill of what it launched ends the child and a
    detached grandchild (namespaces: bubblewrap dies, and the pid namespace with it)."""
    iso = _select(level)
    base = tempfile.mkdtemp(prefix="pcw-iso-test-")
    try:
        os.chmod(base, 0o755)
        staging = isolation.stage_tree(Path(base) / "staging", {
            **isolation.confinement_files(), "isolation_attacks.py": ROOT / "tests" / "support" / "isolation_attacks.py"})
        scratch = isolation.make_scratch(iso, base)
        plan = isolation.plan_child(isolation.ChildSpec(sys.executable, "isolation_attacks:linger", str(staging), scratch,
                                                        hidden=HIDDEN), iso)
        proc = subprocess.Popen(**plan.popen_kwargs())
        marker = Path(scratch, "marker")
        deadline = time.monotonic() + scaled(30)
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marker.exists(), "the grandchild never started"
        plan.kill(proc)
        assert proc.returncode is not None
        time.sleep(0.2)
        size = marker.stat().st_size
        time.sleep(0.4)
        assert marker.stat().st_size == size, "a process the child started outlived the kill"
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- detection, selection, refusals -----------------------------------------------------------------
def test_detection_names_a_level_and_how_to_get_the_rest():
    offer = isolation.detect()
    assert isolation.detect() is offer  # probed once per process
    best = isolation.select("best")
    assert best.level == ("+".join(offer.layers) or "in-process")
    bare = isolation.Isolation((), offer)
    assert bare.level == "in-process" and not bare.kernel_enforced
    text = bare.how_to_get_the_rest()
    assert "bubblewrap" in text and "Landlock" in text and "libseccomp" in text
    with pytest.raises(isolation.IsolationError, match="(?s)refusing to grade.*bubblewrap"):
        isolation.require_kernel_isolation(bare)


def test_a_level_without_seccomp_says_children_can_share_locks():
    """Only seccomp refuses locks, leases and write hints on the files every child shares: a level
    without it says so in its description, in both languages; a level with it does not."""
    offer = isolation.detect()
    for layers in (("namespaces", "landlock"), ("landlock",), ("namespaces",)):
        iso = isolation.Isolation(layers, offer)
        assert "file locks" in iso.describe("en") and "文件锁" in iso.describe("zh"), layers
    for layers in (("namespaces", "landlock", "seccomp"), ("landlock", "seccomp"), ()):
        assert "file locks" not in isolation.Isolation(layers, offer).describe("en"), layers


def test_plan_refuses_to_expose_a_hidden_path(tmp_path):
    iso = _select("fallback")
    spec = isolation.ChildSpec(sys.executable, "x:y", str(ROOT), str(tmp_path), hidden=[str(layout.SOLUTIONS)])
    with pytest.raises(isolation.IsolationError, match="must not see"):
        isolation.plan_child(spec, iso)


def test_child_that_cannot_confine_itself_runs_nothing(tmp_path):
    """A policy the kernel cannot enforce (a Landlock rule on a missing path) ends the child before its entry."""
    staging = isolation.stage_tree(tmp_path / "staging", isolation.confinement_files())
    policy = {"entry": "os:abort", "user": None, "must_be_unprivileged": False,
              "landlock": {"read": ["/nonexistent/path"], "write": [], "files": {}, "min_abi": 1}}
    boot = launch.BOOT.format(root=str(staging))
    proc = subprocess.run([sys.executable, "-I", "-c", boot, json.dumps(policy)], capture_output=True, text=True, timeout=scaled(60))
    assert proc.returncode == EXIT_NOT_CONFINED and "could not confine" in proc.stderr


def test_fallback_child_becomes_nobody_where_it_can_reach_the_interpreter(tmp_path):
    """As root without namespaces, a child whose interpreter is world-readable (the system's python,
    not one under /root) runs as uid 65534; the venv under /root gets uid 0 without capabilities."""
    system_python = "/usr/bin/python3"
    if os.geteuid() != 0 or not os.path.exists(system_python):
        pytest.skip("needs root and a system python3 (this tests the root grader's user switch)")
    iso = isolation.select("no-namespaces", system_python)
    if "landlock" not in iso.layers:
        pytest.skip(f"no Landlock here: {iso.offer.problems.get('landlock')}")
    base = tempfile.mkdtemp(prefix="pcw-iso-test-")
    try:
        os.chmod(base, 0o755)
        entry = Path(base, "whoami.py")
        entry.write_text("import os\n\ndef main():\n    print(os.getuid(), os.getgid(), os.getgroups())\n")
        staging = isolation.stage_tree(Path(base) / "staging", {**isolation.confinement_files(), "whoami.py": entry})
        plan = isolation.plan_child(isolation.ChildSpec(system_python, "whoami:main", str(staging),
                                                        isolation.make_scratch(iso, base), hidden=HIDDEN), iso)
        proc = subprocess.run(**plan.popen_kwargs(), capture_output=True, text=True, timeout=scaled(60))
        assert proc.stdout.split() == ["65534", "65534", "[]"], proc.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- what two children share ------------------------------------------------------------------------
def _covert_pair(iso: isolation.Isolation | None) -> tuple[dict, dict]:
    """A receiver and then a sender child, both reading one staged file (as every child of a run, and
    every submission of a batch, reads the run's staging dir); returns what each reported."""
    world = tempfile.mkdtemp(prefix="pcw-iso-test-")
    procs = []
    try:
        os.chmod(world, 0o755)
        shared = Path(world, "answer.txt")
        shared.write_text("x" * 8192)
        staging = isolation.stage_tree(Path(world) / "staging", {
            **isolation.confinement_files(), "isolation_attacks.py": ROOT / "tests" / "support" / "isolation_attacks.py",
            "shared/answer.txt": shared})
        target = str(staging / "shared" / "answer.txt")

        def start(entry: str, uid: int | None) -> tuple[subprocess.Popen, int]:
            read_fd, write_fd = os.pipe()
            if iso is None:
                scratch = tempfile.mkdtemp(dir=world)
                argv = [sys.executable, "-I", "-c", (f"import sys; sys.path[0:0] = [{str(staging)!r}]; "
                                                     f"import isolation_attacks as a; a.{entry}()")]
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, pass_fds=(write_fd,), cwd=scratch,
                                        start_new_session=True)
            else:
                own = uid if isinstance(isolation.child_user(iso, uid), tuple) else None
                scratch = isolation.make_scratch(iso, world, uid=own)
                plan = isolation.plan_child(isolation.ChildSpec(
                    sys.executable, f"isolation_attacks:{entry}", str(staging), scratch, pass_fds=(write_fd,),
                    hidden=HIDDEN, uid=own, env={"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch}), iso)
                proc = subprocess.Popen(**plan.popen_kwargs(), stdin=subprocess.PIPE)
            os.close(write_fd)
            procs.append(proc)
            proc.stdin.write(json.dumps({"shared": target, "result_fd": write_fd}).encode() + b"\n")
            proc.stdin.flush()
            return proc, read_fd

        def line(fd: int) -> dict:
            data = b""
            deadline = time.monotonic() + scaled(60)
            while not data.endswith(b"\n") and time.monotonic() < deadline:
                if select.select([fd], [], [], 0.1)[0]:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    data += chunk
            assert data, "a child of the pair reported nothing"
            return json.loads(data)

        receiver, r_fd = start("covert_receive", 0x4F000001)
        armed = line(r_fd)
        sender, s_fd = start("covert_send", 0x4F000002)
        sent = line(s_fd)
        receiver.stdin.write(b"go\n")
        receiver.stdin.flush()
        seen = line(r_fd)
        sender.stdin.close()
        for fd in (r_fd, s_fd):
            os.close(fd)
        return sent, {**armed, **seen}
    finally:
        for proc in procs:
            if proc.poll() is None:
                isolation.LaunchPlan.kill(proc)
        shutil.rmtree(world, ignore_errors=True)


def test_unconfined_pair_can_pass_a_bit_through_a_shared_file():
    """The control: without the filter each of these marks reaches the other child."""
    sent, got = _covert_pair(None)
    marks = ("flock", "posix_lock", "ofd_lock", "lease", "rw_hint", "open_and_read")
    assert {k: sent[k] for k in marks} == dict.fromkeys(marks, "ok")
    assert got["seen"]["flock"] is True and got["seen"]["posix_lock"] is True and got["seen"]["ofd_lock"] is True
    assert got["seen"]["rw_hint"] is True  # any reader may set the hint on a file it opened read-only
    assert got["seen"]["inotify"] is True and got["seen"]["dnotify"] is True


@pytest.mark.parametrize("level", LEVELS)
def test_children_cannot_pass_a_bit_through_the_staged_tree(level):
    """Locks (flock, POSIX, open-file-description), leases, the inode's write hint, dnotify, inotify,
    fanotify and the page cache of a read-only staged file: each refused to the sender or the
    receiver, and nothing seen."""
    iso = _select(level)
    if "seccomp" not in iso.layers:
        pytest.skip("these kernel objects are refused by the seccomp layer, missing here")
    sent, got = _covert_pair(iso)
    assert sent["open_and_read"] == "ok"  # reading the staged file is what children are there for
    refused = {k: v for k, v in sent.items() if k != "open_and_read"}
    assert all(v == "EPERM" for v in refused.values()), refused
    assert {k: got[k] for k in ("arm:dnotify", "arm:inotify", "arm:fanotify")} == \
        dict.fromkeys(("arm:dnotify", "arm:inotify", "arm:fanotify"), "EPERM")
    assert got["seen"] == {"flock": "EPERM", "posix_lock": "EPERM", "ofd_lock": "EPERM", "rw_hint": "EPERM",
                           "dnotify": False, "page_cache": "EPERM"}, got["seen"]


# -- what one child may hold ------------------------------------------------------------------------
def _bounded_child(iso: isolation.Isolation, entry: str, payload: dict, memory_mb: int = 512,
                   use_cgroup: bool = True) -> tuple[dict, dict]:
    """Run ``entry`` as the supervisor runs a grading child: in a run's scratch dir, with a memory
    budget for its whole process tree (its own cgroup where the kernel offers one) and a bounded
    scratch dir. Returns its report and facts (the cgroup's peak, what was left on disk)."""
    from autograder.grading.staging import SCRATCH_MB, GradingRun
    from autograder.isolation import cgroup

    run = GradingRun.open(iso, HIDDEN)
    try:
        isolation.stage_tree(run.staging, {"isolation_attacks.py": ROOT / "tests" / "support" / "isolation_attacks.py"})
        scratch, uid = run.scratch()
        hierarchy = cgroup.available()[0] if use_cgroup else None
        group = cgroup.ChildCgroup.create(hierarchy, memory_mb * 2**20) if hierarchy else None
        read_fd, write_fd = os.pipe()
        plan = isolation.plan_child(isolation.ChildSpec(
            sys.executable, f"isolation_attacks:{entry}", str(run.staging), scratch, pass_fds=(write_fd,),
            hidden=run.hidden, uid=uid, memory_mb=memory_mb, cgroup_fd=group.procs_fd if group else None,
            scratch_mb=SCRATCH_MB, env={"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch}), iso)
        proc = subprocess.Popen(**plan.popen_kwargs(), stdin=subprocess.PIPE)
        os.close(write_fd)
        if group is not None:
            group.close_fd()
        proc.stdin.write(json.dumps({**payload, "result_fd": write_fd}).encode())
        proc.stdin.close()
        try:
            proc.wait(timeout=scaled(120))
        finally:
            plan.kill(proc)
        raw = _read_until_closed(read_fd, seconds=5)
        facts = {"cgroup": group is not None, "peak": group.peak_bytes() if group else None, "rc": proc.returncode}
        if group is not None:
            group.remove()
            facts["cgroup_left"] = os.path.exists(group.path)
        run.discard(scratch)
        facts["scratch_left"] = os.path.lexists(scratch)
        assert raw, f"the child reported nothing (exit {proc.returncode})"
        return json.loads(raw), facts
    finally:
        run.close()
        assert not os.path.exists(run.base)


@pytest.mark.parametrize("use_cgroup", [True, False], ids=["cgroup", "no-cgroup"])
@pytest.mark.parametrize("level", LEVELS)
def test_forks_cannot_hold_more_than_the_childs_memory_together(level, use_cgroup):
    """Six forks of a child with 512 MB each fill 300 MB and hold it to the same moment: at most one
    can (its own cgroup kills the others, or, without one, no fork starts at all)."""
    from autograder.isolation import cgroup

    iso = _select(level)
    if "seccomp" not in iso.layers and not (use_cgroup and cgroup.available()[0]):
        pytest.skip("without a cgroup or seccomp nothing keeps a child's processes within its memory")
    out, facts = _bounded_child(iso, "fork_hogs", {"forks": 6, "mb": 300, "hold_s": 4}, use_cgroup=use_cgroup)
    assert out["survivors"] * 300 <= 512, (out, facts)
    if facts["cgroup"]:
        assert out["started"] == 6 and facts["peak"] <= 512 * 2**20 and not facts["cgroup_left"], (out, facts)
    else:
        assert out["started"] == 0 and out["refused"] == "EPERM", out


@pytest.mark.parametrize("level", LEVELS)
def test_scratch_dir_is_bounded_and_removed(level):
    """A child that writes 320 MB into its scratch dir stops at the bound, and nothing is left after it."""
    from autograder.grading.staging import SCRATCH_MB

    iso = _select(level)
    if "namespaces" not in iso.layers and os.geteuid() != 0:
        pytest.skip("without namespaces only a root grader can mount a bounded scratch dir")
    out, facts = _bounded_child(iso, "fill_scratch", {"mb": 320}, memory_mb=1024)
    assert out["error"] in ("ENOSPC", "EDQUOT") and out["written_mb"] <= SCRATCH_MB, out
    assert not facts["scratch_left"]


@pytest.mark.parametrize("level", LEVELS)
def test_a_deep_tree_left_in_scratch_is_removed(level):
    """Nested folders far deeper than the recursion limit (some mode 000, a link to / at each level),
    3,000 deep (a few seconds to build: under Landlock each level costs more than the last, and 10,000
    took 15-20 s): removed, no RecursionError."""
    iso = _select(level)
    out, facts = _bounded_child(iso, "deep_tree", {"depth": 3000, "seconds": 20}, memory_mb=1024)
    assert out["error"] is None and out["depth"] > 2000 and not facts["scratch_left"], (out, facts)


def test_remove_tree_survives_what_a_child_leaves(tmp_path):
    """Directly, without a child: deeper than the recursion limit and PATH_MAX, locked folders,
    links (never followed), a FIFO."""
    from autograder.grading.staging import remove_tree

    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    top = tmp_path / "scratch"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for i in range(3000):
        os.mkdir("d", dir_fd=fd)
        os.symlink(str(outside), "link", dir_fd=fd)
        sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        if i % 500 == 3:
            os.fchmod(fd, 0)
        os.close(fd)
        fd = sub
    os.mkfifo("fifo", dir_fd=fd)
    os.close(fd)
    remove_tree(str(top))
    assert not top.exists() and outside.read_text() == "keep"


HOSTILE_CELL = '''
import os, time
_fd, _depth, _stop = os.open(os.getcwd(), os.O_RDONLY), 0, time.monotonic() + 1.5
while _depth < 10_000 and time.monotonic() < _stop:  # as deep as it gets in 1.5 s (each TODO's child runs it)
    os.mkdir("d", dir_fd=_fd)
    _sub = os.open("d", os.O_RDONLY, dir_fd=_fd)
    os.close(_fd)
    _fd, _depth = _sub, _depth + 1
_written = 0
try:
    for _i in range(32):  # 320 MB in 10 MB files, each under the per-file limit
        with open(os.path.join(os.environ["TMPDIR"], f"fill-{_i}"), "wb") as _f:
            for _ in range(10):
                _f.write(b"x" * 2**20)
                _written += 1
except OSError:
    pass
'''


@pytest.mark.parametrize("level", LEVELS)
def test_after_grading_nothing_the_run_made_is_left(level, tmp_path):
    """The CLI, with its own empty TMPDIR, grades an honest notebook and one whose cell builds a deep
    tree and fills its scratch dir: a report for both, and TMPDIR is empty again afterwards."""
    import nbformat

    _select(level)
    s01 = layout.stage_files("s01")
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(nbformat.read(s01.instructor(), as_version=4), subs / "honest.ipynb")
    hostile = nbformat.read(s01.instructor(), as_version=4)
    cell = next(c for c in hostile.cells if c.metadata.get("nbgrader", {}).get("solution"))
    cell.source = HOSTILE_CELL + "\n" + cell.source
    nbformat.write(hostile, subs / "hostile.ipynb")
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--no-progress", "--isolation",
                        "best" if level == "namespaces" else "no-namespaces", "--format", "json"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=scaled(600))
    assert p.returncode in (0, 1), p.stderr[-2000:]
    graded = {s["path"].rsplit("/", 1)[-1]: s for s in json.loads(p.stdout)["submissions"]}
    assert set(graded) == {"honest.ipynb", "hostile.ipynb"} and graded["honest.ipynb"]["score"] == 12
    assert sorted(os.listdir(tmpdir)) == []


@pytest.mark.parametrize("level", LEVELS)
def test_two_children_of_a_batch_share_no_lock(level, tmp_path):
    """The attack corpus's lock pair, graded as one batch by the real grader: the holder takes no lock,
    lease or write hint on any file the two share, and the sensor finds no way to look at one (each
    reports what worked, so no race decides it); both then earn the TODO with the reference's code."""
    import copy

    import nbformat

    from autograder.grading.grade import grade_paths
    from tests.support import attack_corpus, hostile_corpus

    iso = _select(level)
    base = nbformat.read(layout.stage_files("s01").learner(), as_version=4)
    paths = []
    for case in attack_corpus.lock_pair():
        nb = copy.deepcopy(base)
        for cell in nb.cells:
            if hostile_corpus.is_class_cell(cell):
                cell.source = case.cell
        paths.append(tmp_path / f"{case.name}.ipynb")
        nbformat.write(nb, paths[-1])
    results = grade_paths(paths, workers=2, iso=iso, only={str(p): {"s01.normalize"} for p in paths})
    said = {Path(r.path).stem: [(t.id, t.passed, t.message) for t in r.todos] for r in results}
    assert len(said) == 2 and all(todos == [("s01.normalize", True, todos[0][2])] for todos in said.values()), said

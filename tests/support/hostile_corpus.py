"""A corpus of hostile and broken stage-1 submissions, each with what the grader must conclude.

Each case is a notebook file plus the set of TODOs that honestly earn their points and a phrase the
one-line reason must contain for a TODO that the case sabotages.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.core import layout
from autograder.core.pysource import object_source
from benchmarks import bench_hostile_channel as hostile_channel
from tests.conftest import ROOT

ALL = {"s01.normalize", "s01.add_prefix", "s01.match_prefix", "s01.split_prompt", "s01.cache_stats"}
S01 = layout.stage_files("s01")
REFERENCE_TEXT = S01.reference.read_text(encoding="utf-8")
REF_CLASS = object_source(REFERENCE_TEXT, "PrefixCacheManager")
METHOD_OF = {"s01.normalize": "_normalize", "s01.add_prefix": "add_prefix", "s01.match_prefix": "match_prefix",
             "s01.split_prompt": "split_prompt", "s01.cache_stats": "cache_stats"}


@dataclass
class Case:
    """``cell`` is the learner's solution cell (None: the file is ``raw`` bytes instead)."""

    name: str
    cell: str | None
    earns: set[str]
    reason: dict[str, str] = field(default_factory=dict)  # TODO id -> phrase in its message
    raw: bytes | None = None
    drop_cell: bool = False


def is_class_cell(cell) -> bool:
    """The solution cell holding the class (the quiz has a solution cell of its own, left as released)."""
    return cell.metadata.get("nbgrader", {}).get("grade_id") == "s01-code-PrefixCacheManager"


def inject(method: str, code: str, cls: str = REF_CLASS) -> str:
    """Put ``code`` at the start of ``method``'s body, right after its one-line docstring."""
    lines = cls.splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith(f"def {method}("))
    j = i + 1
    while not lines[j].strip().startswith('"""'):
        j += 1
    if lines[j].strip().count('"""') == 1:  # multi-line docstring
        j += 1
        while '"""' not in lines[j]:
            j += 1
    body = ["        " + c for c in code.splitlines()]
    return "\n".join(lines[: j + 1] + body + lines[j + 1:])


def only_fails(todo: str, phrase: str, cell: str, name: str) -> Case:
    return Case(name, cell, ALL - {todo}, {todo: phrase})


def cases() -> list[Case]:
    c: list[Case] = []
    # An endless loop ends at the wall-clock or the CPU limit, whichever comes first on a busy machine.
    c.append(only_fails("s01.match_prefix", "during check 'seed_match_3'", inject("match_prefix", "while True:\n    pass"), "infinite_loop"))
    c.append(only_fails("s01.normalize", "RecursionError",
                        inject("_normalize", "def down(n):\n    return down(n + 1)\ndown(0)"), "deep_recursion"))
    c.append(only_fails("s01.match_prefix", "MemoryError", inject("match_prefix", "hog = bytearray(8 * 1024 ** 3)"), "memory_bomb"))
    c.append(only_fails("s01.match_prefix", "not allowed",
                        inject("match_prefix", "import os\nwhile True:\n    os.fork()"), "fork_bomb"))
    c.append(only_fails("s01.cache_stats", "SystemExit", inject("cache_stats", "import sys\nsys.exit(0)"), "sys_exit"))
    c.append(only_fails("s01.split_prompt", "ended the grading process", inject("split_prompt", "import os\nos._exit(0)"), "os_exit"))
    c.append(only_fails("s01.normalize", "KeyboardInterrupt", inject("_normalize", "raise KeyboardInterrupt"), "keyboard_interrupt"))
    c.append(only_fails("s01.add_prefix", "BaseException", inject("add_prefix", "raise BaseException('bye')"), "base_exception"))
    c.append(Case("exit_after_class", REF_CLASS + "\n\nimport sys\nsys.exit('done')\n", set(ALL)))
    # output is drained and dropped beyond a cap: printing never fails a correct answer. 10 MB a call, about
    # 200 MB in the child (its checks call _normalize some 20 times): thousands of times what the grader keeps
    # (16 KB), what a pipe holds (64 KB) and what it reads after the end (1 MB). At 100 MB a call, printing
    # 2 GB took most of the child's CPU-time limit: on a slower core that limit would have stopped a correct answer.
    c.append(Case("megabytes_of_stdout", inject("_normalize", "for _ in range(10):\n    print('x' * 1_000_000)"), set(ALL)))
    c.append(Case("stdout_and_stderr_noise", inject("match_prefix", "import sys, warnings\nprint('debug', prompt_tokens)\n"
                                                   "print('noise', file=sys.stderr)\nwarnings.warn('careful')"), set(ALL)))
    c.append(only_fails("s01.normalize", "expected: raises TypeError",
                        "import builtins\nbuiltins.isinstance = lambda *a: True\n" +
                        REF_CLASS.replace("raise TypeError(f\"tokens must be ints", "raise ValueError(f\"tokens must be ints"),
                        "patched_isinstance"))
    c.append(Case("patched_assert_and_print", "import builtins\nbuiltins.AssertionError = Exception\n"
                  "builtins.print = lambda *a, **k: None\n" + inject("match_prefix", "raise NotImplementedError()"),
                  ALL - {"s01.match_prefix"}, {"s01.match_prefix": "not implemented"}))
    c.append(Case("patched_grader_modules",
                  "import autograder.core.data, autograder.child.probe, autograder.grading.verdict\n"
                  "autograder.core.data.outcomes_equal = lambda *a, **k: True\n"
                  "autograder.child.probe.run_probe = lambda check, impl: {'kind': 'ok', 'value': 3}\n"
                  + inject("cache_stats", "raise NotImplementedError()"),
                  ALL - {"s01.cache_stats"}, {"s01.cache_stats": "not implemented"}))
    c.append(only_fails("s01.match_prefix", "only plain", inject("match_prefix",
                        "class Yes(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\nreturn Yes(0)"),
                        "eq_always_true"))
    c.append(only_fails("s01.split_prompt", "only plain", inject("split_prompt",
                        "class Liar(list):\n    def __eq__(self, other):\n        return True\nreturn Liar(), Liar(), 0"),
                        "lying_list_subclass"))
    c.append(only_fails("s01.normalize", "numpy.int64", inject("_normalize",
                        "import numpy as np\nreturn [np.int64(t) for t in tokens]"), "numpy_ints"))
    c.append(only_fails("s01.cache_stats", "check '", inject("cache_stats",
                        "import torch\nreturn {'hit_tokens': torch.tensor(3), 'uncached_tokens': 1, 'reuse_ratio': 0.75}"),
                        "torch_values"))
    c.append(only_fails("s01.match_prefix", "not allowed", inject("match_prefix",
                        f"src = open({str(S01.reference)!r}).read()\n"
                        f"hidden = open({str(S01.hidden)!r}).read()"), "read_reference_from_disk"))
    # the imported "reference" is the grader's copy, whose match_prefix is this very method
    c.append(only_fails("s01.match_prefix", "RecursionError", inject("match_prefix",
                        "import solutions.s01_prefix_match as ref\nreturn ref.PrefixCacheManager.match_prefix(self, prompt_tokens)"),
                        "import_reference"))
    c.append(only_fails("s01.normalize", "not allowed", inject("_normalize",
                        f"open('/tmp/pcw_pwned.txt', 'w').write('x')\nimport shutil\nshutil.rmtree({str(ROOT)!r})"),
                        "write_and_delete_files"))
    # the sandbox refuses the socket: the learner sees PermissionError as the raised type
    c.append(only_fails("s01.add_prefix", "PermissionError", inject("add_prefix",
                        "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)"), "network"))
    c.append(Case("threads_left_running", "import threading, time\n"
                  "threading.Thread(target=lambda: [time.sleep(0.01) for _ in iter(int, 1)], daemon=False).start()\n"
                  + REF_CLASS, set(ALL)))
    c.append(only_fails("s01.match_prefix", "during check 'seed_match_3'", inject("match_prefix",
                        "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass"), "ignores_sigterm"))
    c.append(only_fails("s01.split_prompt", "tampering", inject("split_prompt",
                        "import os, json\nfor fd in range(3, 64):\n    try:\n"
                        "        os.write(fd, (json.dumps({'phase': 'done'}) + '\\n').encode())\n    except OSError:\n        pass\n"
                        "raise NotImplementedError()"), "forged_result_lines"))
    # the grader's own cost, whatever a child writes to its result channel (issue 44): every TODO's child
    # floods it after a broken rule, or sends an outcome of millions of empty dicts; each is refused at once
    for attack in ("newline_flood_after_a_broken_rule", "outcome_of_millions_of_empty_dicts"):
        c.append(Case(attack, hostile_channel.attack_cell(attack), set(), dict.fromkeys(ALL, "tampering")))
    c.append(Case("renamed_method", REF_CLASS.replace("def _normalize(", "def normalize("),
                  ALL - {"s01.normalize"},
                  {"s01.normalize": "no method `_normalize`"}))
    c.append(Case("syntax_error", REF_CLASS.replace("def match_prefix(", "def match_prefix(((", 1), set(),
                  {t: "SyntaxError" for t in ALL}))
    c.append(Case("missing_todo_cell", None, set(), {t: "defines no `PrefixCacheManager`" for t in ALL}, drop_cell=True))
    # an import that never runs once bought every child torch's budget (4,096 MB): the 768 MB held here
    # fits that, not stage 1's 512 MB, so the class after it is never defined (issue 44)
    c.append(Case("torch_budget_from_an_import_never_run", "if False:\n    import torch\n\n"
                  "_held = bytearray(768 * 2**20)\n\n" + REF_CLASS, set(), {t: "MemoryError" for t in ALL}))
    c.append(Case("corrupt_notebook", None, set(), raw=b'{"cells": [ {"cell_type": "code", "sour'))
    c.append(Case("not_a_notebook", None, set(), raw=b"\x89PNG\r\n\x1a\n" + bytes(range(256))))
    return c


def write_corpus(dest: Path) -> dict[str, Path]:
    """Write every case as ``dest/<name>.ipynb``; return name -> path."""
    base = nbformat.read(S01.learner(), as_version=4)
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    for case in cases():
        path = dest / f"{case.name}.ipynb"
        if case.raw is not None:
            path.write_bytes(case.raw)
        else:
            nb = copy.deepcopy(base)
            if case.drop_cell:
                nb.cells = [x for x in nb.cells if not is_class_cell(x)]
            else:
                for x in nb.cells:
                    if is_class_cell(x):
                        x.source = case.cell
            nbformat.write(nb, path)
        out[case.name] = path
    return out

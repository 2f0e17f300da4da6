"""The verdict channel's rules (autograder/child/protocol.py) and the leak guard (autograder/grading/leaks.py), unit by unit."""
from __future__ import annotations

import base64
import codecs
import json
import zlib

import pytest

from autograder.child.protocol import Channel
from autograder.grading.leaks import WITHHELD, LeakGuard

KEYS = ["s01.x:a", "s01.x:hidden:b"]


def _feed(*events, raw: bytes = b"") -> Channel:
    ch = Channel(KEYS)
    ch.feed(b"".join((json.dumps(e) + "\n").encode() for e in events) + raw)
    ch.close()
    return ch


HONEST = [{"phase": "ready"}, {"phase": "cell", "index": 0}, {"phase": "cells_done"},
          {"phase": "check", "key": KEYS[0]}, {"key": KEYS[0], "outcome": {"kind": "ok", "value": 1}},
          {"phase": "check", "key": KEYS[1]}, {"key": KEYS[1], "outcome": {"kind": "ok", "value": 2}}, {"phase": "done"}]


def test_channel_accepts_the_harness_protocol():
    ch = _feed(*HONEST)
    assert ch.done and not ch.tampered and len(ch.events) == len(HONEST)


@pytest.mark.parametrize("forged,why", [
    (HONEST + [{"phase": "done"}], "lines after 'done'"),
    (HONEST[:5] + [HONEST[4]] + HONEST[5:], "reported twice"),
    (HONEST[:4] + [HONEST[3]] + HONEST[4:], "started twice"),
    (HONEST[:3] + [{"key": KEYS[0], "outcome": {"kind": "ok", "value": 1}}] + HONEST[3:], "was not running"),
    (HONEST[:3] + [{"phase": "check", "key": "s01.x:forged"}], "does not exist"),
    (HONEST[:4] + [{"missing": "no class"}, {"phase": "done"}], "'missing' out of turn"),
    (HONEST[:3] + [{"outcome": 1}], "not a grading event"),
])
def test_channel_flags_tampering(forged, why):
    ch = _feed(*forged)
    assert ch.tampered and any(why in t.en for t in ch.tampering), ch.tampering
    assert "forged" not in " ".join(t.en + t.zh for t in ch.tampering)  # learner text never ends up in the reason


def test_channel_garbage_and_partial_lines_are_tampering():
    assert _feed(*HONEST[:3], raw=b"not json\n").tampered
    assert _feed(*HONEST[:3], raw=b'{"phase": "do').tampered


SECRET = "hit_len = max((len(p) for p in self.cached_prefixes if is_prefix(p)), default=0)"
PUBLIC = "def match_prefix(self, prompt_tokens): cached_prefixes hit_tokens"


@pytest.fixture(scope="module")
def guard():
    return LeakGuard([SECRET], [PUBLIC])


def _caesar(text: str, k: int) -> str:
    abc = "abcdefghijklmnopqrstuvwxyz"
    return text.translate(str.maketrans(abc + abc.upper(), abc[k:] + abc[:k] + (abc[k:] + abc[:k]).upper()))


@pytest.mark.parametrize("disguise", [
    lambda s: s, lambda s: s[::-1], lambda s: s.upper(), lambda s: codecs.encode(s, "rot13"),
    lambda s: codecs.encode(s, "rot13")[::-1], lambda s: base64.b64encode(s.encode()).decode(),
    lambda s: s.encode().hex(), lambda s: " ".join(f"{b:02x}" for b in s.encode()),
    lambda s: base64.b32encode(s.encode()).decode(), lambda s: str([ord(c) for c in s]),
    lambda s: base64.b64encode(zlib.compress(s.encode())).decode(), lambda s: s.encode("unicode_escape").decode(),
    lambda s: "".join(f"%{b:02X}" for b in s.encode()), lambda s: base64.b64encode(base64.b64encode(s.encode())).decode(),
    lambda s: _caesar(s, 3), lambda s: _caesar(s, 25).upper()[::-1],
    lambda s: base64.b64encode(_caesar(s, 7).encode()).decode(),
], ids=["plain", "reversed", "upper", "rot13", "rot13_reversed", "base64", "hex", "spaced_hex", "base32",
        "char_codes", "zlib_base64", "unicode_escape", "percent", "base64_twice", "rot3", "rot25_upper_reversed",
        "rot7_then_base64"])
def test_guard_sees_a_secret_in_every_disguise(guard, disguise):
    text = disguise(SECRET[10:60])
    assert guard.leaks(text)
    assert guard.fragment(text) == WITHHELD


def test_guard_lets_public_and_ordinary_text_through(guard):
    for text in ["list index out of range", PUBLIC, "cached_prefixes", "tokens must be ints, got str: 'a'"]:
        assert not guard.leaks(text) and guard.fragment(text) == " ".join(text.split())


def test_guard_keeps_learner_text_short_and_on_one_line(guard):
    out = guard.fragment("a\nb" + "x" * 500)
    assert "\n" not in out and len(out) <= 120
    assert guard.name("Evil Name\n<script>") == "EvilNamescript"


def test_guard_catches_a_secret_split_across_checks(guard):
    pieces = [SECRET[i:i + 8] for i in range(0, 64, 8)]
    assert not any(guard.leaks(p) for p in pieces)
    assert guard.leaks_together(pieces)
    assert not guard.leaks_together(["hit_tokens", "cached_prefixes"])  # public words side by side


def test_guard_sanitizes_every_text_in_an_outcome(guard):
    out = guard.outcome({"kind": "ok", "value": {"__dict__": [["k", SECRET], [SECRET, 1]]}})
    assert SECRET not in json.dumps(out) and WITHHELD in json.dumps(out, ensure_ascii=False)
    out = guard.outcome({"kind": "raised", "type": "X" * 200, "message": SECRET})
    assert out["message"] == WITHHELD and len(out["type"]) <= 60
    assert guard.outcome({"kind": "ok", "value": [ord(c) for c in SECRET]})["value"] == WITHHELD


# -- what a child's channel can make the grader spend, end to end (issue 44) -------------------------
# What grading one stage-1 submission (6 TODOs, 5 of them attacked) may cost the grader itself, whatever
# its children send: an honest one costs about 2 CPU-s and 47 MB here (benchmarks/bench_hostile_channel.py);
# the refused line's copies are the rest (a few times 8 MiB per child running).
GRADER_PEAK_MB = 300   # its peak resident size (today's main: 1,195 MB for the outcome of empty dicts)
GRADER_CPU_S = 5.0     # its own CPU-s, its threads only (today's main: 78 for those outcomes, 7.8 for the flood)


@pytest.mark.parametrize("attack", ["outcome_of_millions_of_empty_dicts", "newline_flood_after_a_broken_rule"])
def test_a_hostile_channel_costs_the_grader_a_bounded_amount(attack, tmp_path):
    """Five TODOs whose children each send 8 MiB: an outcome of 2.7 million empty dicts (the grader grew
    from 38 MB to 1.2 GB, keeping every one to the end) or newlines after a broken rule (24-25 CPU-s per
    child, each decoded). Graded in a process of its own, whose peak and own CPU time are read as it ends."""
    from benchmarks.bench_hostile_channel import METHODS, grader_cost, write_notebook

    cost = grader_cost(write_notebook(tmp_path, attack))
    assert {t: cost["statuses"][t] for t in METHODS} == dict.fromkeys(METHODS, "tampered"), cost
    assert cost["peak_mb"] < GRADER_PEAK_MB and cost["cpu_s"] < GRADER_CPU_S, cost

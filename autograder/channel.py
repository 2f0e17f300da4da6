"""The verdict channel: the events one grading child reports, read by the grader under strict rules.

Each child gets the write end of its own pipe (nothing else holds it: the kernel confines every
child to its own processes and files). What arrives is still untrusted, because learner code runs
in that process and can write to the same descriptor. The harness in the child writes, in order::

    {"phase": "ready"}
    {"phase": "cell", "index": i}                  (each cell, before it runs)
    {"cell_errors": [{"cell", "kind", "type", "message"}, ...]}   (at most once)
    {"phase": "cells_done"}
    {"missing": text}                              (then done: the TODO's target is absent)
    {"phase": "check", "key": k} {"key": k, "outcome": {...}}    (each check of the TODO, once)
    {"phase": "done"}

Anything else is tampering: a line that is not such an event, anything after ``done``, a check key
announced or reported twice or out of turn, or a key that is not one of this TODO's checks. A
tampered channel fails the TODO whatever it says (:mod:`autograder.grade`).

Invariants: :attr:`Channel.events` holds only well-formed events received before ``done`` (or
before the first rule broken); :attr:`Channel.tampering` lists each broken rule once, in order.
"""
from __future__ import annotations

import json
from collections.abc import Iterable

MAX_EVENT_BYTES = 8 * 1024 * 1024  # all events of one child together
_PHASES = {"ready", "cell", "cells_done", "check", "done"}


class Channel:
    """Reads one child's events (see the module docstring for the protocol and its invariants)."""

    def __init__(self, check_keys: Iterable[str]) -> None:
        self.allowed = set(check_keys)
        self.events: list[dict] = []
        self.tampering: list[str] = []
        self.done = False
        self.too_large = False
        self._buf = bytearray()
        self._received = 0
        self._announced: set[str] = set()
        self._reported: set[str] = set()
        self._running: str | None = None
        self._phase = ""  # the last phase the harness reported
        self._missing = False

    def feed(self, chunk: bytes) -> list[dict]:
        """Take raw bytes from the pipe; return the well-formed events they completed."""
        self._received += len(chunk)
        if self._received > MAX_EVENT_BYTES:
            self.too_large = True
            return []
        self._buf += chunk  # a bytearray: a long line arriving in many pieces costs linear time
        if b"\n" not in chunk:
            return []
        *lines, rest = self._buf.split(b"\n")
        self._buf = bytearray(rest)
        new = []
        for line in lines:
            event = self._accept(line)
            if event is not None:
                self.events.append(event)
                new.append(event)
        return new

    def close(self) -> None:
        """The pipe reached its end: a last line without a newline is not an event."""
        if self._buf.strip():
            self._flag("a partial line at the end of the channel")
        self._buf = bytearray()

    @property
    def tampered(self) -> bool:
        return bool(self.tampering)

    def _flag(self, why: str) -> None:
        if why not in self.tampering:
            self.tampering.append(why)

    def _accept(self, line: bytes) -> dict | None:
        if self.done:
            self._flag("lines after 'done'")
            return None
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: brackets nested deeper than the parser goes
            event = None
        why = _malformed(event)
        if why:
            self._flag(why)
            return None
        if self.tampering:
            return None  # after the first broken rule nothing more is believed
        phase, key = event.get("phase"), event.get("key")
        if self._missing and phase != "done":
            self._flag("events after 'missing'")
        elif "missing" in event and (self._phase != "cells_done" or self._announced):
            self._flag("'missing' out of turn")
        elif "missing" in event:
            self._missing = True
        elif phase == "check":
            if key not in self.allowed:
                self._flag("a check that does not exist")
            elif key in self._announced:
                self._flag(f"check '{_name(key)}' started twice")
            else:
                self._announced.add(key)
                self._running = key
        elif "outcome" in event:
            if key in self._reported:
                self._flag(f"check '{_name(key)}' reported twice")
            elif key not in self.allowed:
                self._flag("an outcome for a check that does not exist")
            elif key != self._running:
                self._flag(f"an outcome for check '{_name(key)}', which was not running")
            else:
                self._reported.add(key)
                self._running = None
        elif phase == "done":
            self.done = True
        if phase is not None:
            self._phase = phase
        return None if self.tampering else event


def _malformed(event: object) -> str | None:
    """Why ``event`` is not one of the protocol's events, or None."""
    if not isinstance(event, dict):
        return "a line that is not a grading event"
    keys = set(event)
    if keys == {"phase"} and event["phase"] in _PHASES - {"cell", "check"}:
        return None
    if keys == {"phase", "index"} and event["phase"] == "cell" and type(event["index"]) is int:
        return None
    if keys == {"phase", "key"} and event["phase"] == "check" and isinstance(event["key"], str):
        return None
    if keys == {"key", "outcome"} and isinstance(event["key"], str) and isinstance(event["outcome"], dict):
        return None
    if keys == {"missing"} and isinstance(event["missing"], str):
        return None
    if keys == {"cell_errors"} and isinstance(event["cell_errors"], list) and \
            all(isinstance(e, dict) for e in event["cell_errors"]):
        return None
    return "a line that is not a grading event"


def _name(key: str) -> str:
    """The check's name in a key this grader made (``sNN.todo:hidden:name``); never learner text."""
    return key.rsplit(":", 1)[-1]

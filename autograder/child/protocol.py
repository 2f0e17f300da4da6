"""The grading child's protocol: every event the child may send, its wire form, its order, and
what the parent makes of it. This module is the one owner of that contract.

The child (:mod:`autograder.child.sandbox`) runs learner code and reports raw outcomes through its own
pipe, one JSON line per event, written only by :func:`encode`. The parent
(:mod:`autograder.grading.supervise`) reads that pipe with a :class:`Channel`, which turns each line into an
event with :func:`decode` and applies the order below (:class:`Order`, a state machine);
:func:`summarize` turns the accepted events into the typed :class:`ChildSummary` that
:mod:`autograder.grading.grade` judges.

What arrives is untrusted: learner code runs in the child and can write to the same descriptor.
The child's legal sequences (the grammar; the child may stop anywhere, so any prefix is legal too)::

    Ready
    CellStarted(0) CellStarted(1) ... CellStarted(n-1)      (each cell, before it runs)
    [CellErrors]                                             (the cells that raised, if any)
    CellsDone
    then either   Missing Done                               (the TODO's target is absent)
    or            [CourseVersions] (CheckStarted(k) CheckOutcome(k))* Done

Each check of the TODO starts at most once, and its outcome follows its start before any other
event. Anything else is tampering: a line that is not an event (:class:`Violation` from
:func:`decode`), an event out of this order, anything after ``Done``, or a check key that is not
one of this TODO's. A tampered channel fails the TODO whatever it says (:mod:`autograder.grading.grade`).
A violation's text is the grader's own words, in both languages (each broken rule is one entry
``PROTOCOL_*`` of :mod:`autograder.core.messages`), filled at most with the name of one of the TODO's
checks: never with what the child sent.

What one child can make the grader do is bounded whatever it sends. The channel reads nothing past
the first broken rule (the grader stops reading and ends the child). Before a line is decoded, its
structure is measured without decoding it (:func:`measure`: its strings cut out by one regular
expression, then byte counts; linear in its bytes, at C speed): a line holding more JSON values and
members (:data:`MAX_EVENT_UNITS`) or nesting deeper (:data:`MAX_EVENT_DEPTH`) than the child's harness
can ever send (:mod:`autograder.core.data` caps a probe's result at ``MAX_ITEMS`` items,
``MAX_DEPTH`` deep) is a violation, and all of a child's events together hold at most
:data:`MAX_CHANNEL_UNITS` units and :data:`MAX_EVENT_BYTES` bytes. So decoding one child's channel
allocates at most a fixed number of objects, whatever the bytes are.

The wire form is one JSON object per line, e.g. ``{"phase": "ready"}``, ``{"phase": "cell",
"index": 0}``, ``{"cell_errors": [...]}``, ``{"course_versions": [...]}``, ``{"missing": text}``,
``{"phase": "check", "key": k}``, ``{"key": k, "outcome": {...}}``, ``{"phase": "done"}``.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import accumulate
from types import MappingProxyType
from typing import Any, Union

from autograder.core import data, messages
from autograder.core.i18n import L

MAX_EVENT_BYTES = 8 * 1024 * 1024  # all events of one child together
# A unit is a JSON container, member or element (an opening bracket, a colon or a comma: see measure).
# data.encode spends one of its MAX_ITEMS per value it encodes and writes at most four units for it
# (an empty tuple in a list: '{"__tuple__": [], ' is '{', ':', '[', ','); one JSON nesting level per
# list, up to three per tuple, set or dict ({"__dict__": [[k, v]]}); an outcome line adds two levels.
MAX_EVENT_UNITS = 4 * (data.MAX_ITEMS + 1) + 64  # in one line: more is not what the harness sends
MAX_EVENT_DEPTH = 3 * (data.MAX_DEPTH + 1) + 2   # nesting of one line: deeper is not what the harness sends
MAX_CHANNEL_UNITS = MAX_EVENT_UNITS  # in all the lines of one child together (more: the results are too large)
MAX_COURSE_VERSIONS = 10  # names in one CourseVersions event
MAX_TYPE_CHARS = 80  # an exception's type name in a CellError, as the child cuts it
MAX_MESSAGE_CHARS = 200  # an exception's message in a CellError, as the child cuts it
MAX_MISSING_CHARS = 1000  # the text of a Missing event (the grader's own words)
CELL_KINDS = ("setup", "your")  # "setup": a cell the grader adds; "your": one of the learner's TODO cells
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_dumps = json.dumps  # bound when the child imports this module, before any learner code runs


# -- the events ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ready:
    """The harness is set up; no learner code has run before this event."""


@dataclass(frozen=True)
class CellStarted:
    """A cell is about to run. Invariant: cells start in order, the first with index 0."""

    index: int
    """0-based position of the cell among the cells the child was sent (setup cells first)."""


@dataclass(frozen=True)
class CellError:
    """One cell that raised (the child ran on, as a notebook would)."""

    cell: int
    """1-based position of the cell among the cells the child was sent."""
    kind: str
    """One of :data:`CELL_KINDS`: a setup cell of the grader, or one of the learner's TODO cells."""
    type: str
    """The exception's class name (learner text: at most :data:`MAX_TYPE_CHARS` characters)."""
    message: str
    """The exception's message (learner text: at most :data:`MAX_MESSAGE_CHARS` characters)."""


@dataclass(frozen=True)
class CellErrors:
    """Every cell that raised, once, after the last cell ran. Invariant: at least one error, cells in
    increasing order, none past the last cell started."""

    errors: tuple[CellError, ...]
    """The errors, in cell order."""


@dataclass(frozen=True)
class CellsDone:
    """Every cell ran; from here on the child only probes the TODO."""


@dataclass(frozen=True)
class CourseVersions:
    """The learner's TODO cell lacks given code its class needs (a given helper renamed or deleted):
    the course's version stands in for it. Sent at most once, after the cells, before any check."""

    names: tuple[str, ...]
    """Dotted names of what the course supplied, e.g. ``BlockPool.check_invariants`` (1 to
    :data:`MAX_COURSE_VERSIONS` of them, each a Python name: nothing else is accepted)."""


@dataclass(frozen=True)
class Missing:
    """The notebook does not define what the TODO needs; the child sends ``Done`` next."""

    text: str
    """What is missing, in the grader's words (the learner's text never reaches it; still filtered)."""


@dataclass(frozen=True)
class CheckStarted:
    """A check of the TODO is about to run on the learner's code."""

    key: str
    """The check's key (``sNN.todo:name`` or ``sNN.todo:hidden:name``), one the parent allows."""


@dataclass(frozen=True)
class CheckOutcome:
    """What the learner's code did in the check that is running (raw: the parent judges it)."""

    key: str
    """The key of the check that is running."""
    outcome: Mapping[str, Any]
    """The raw outcome (see :mod:`autograder.child.probe`), a JSON object; judged by :mod:`autograder.grading.verdict`."""


@dataclass(frozen=True)
class Done:
    """The child finished; nothing may follow."""


Event = Union[Ready, CellStarted, CellErrors, CellsDone, CourseVersions, Missing, CheckStarted, CheckOutcome, Done]
EVENT_TYPES: tuple[type, ...] = Event.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Violation:
    """A line or event the protocol does not allow."""

    why: L
    """The rule broken, in the grader's words in both languages (never text the child sent)."""


NOT_AN_EVENT = Violation(messages.PROTOCOL_NOT_AN_EVENT)
TOO_MUCH = Violation(messages.PROTOCOL_TOO_MUCH)
# the events that are a phase and nothing else
_BARE_PHASES: dict[str, type[Ready | CellsDone | Done]] = {"ready": Ready, "cells_done": CellsDone, "done": Done}


# -- the wire form ---------------------------------------------------------------------------------
def encode(event: Event) -> bytes:
    """The line (newline included) the child writes for ``event``."""
    if isinstance(event, Ready):
        obj: dict = {"phase": "ready"}
    elif isinstance(event, CellStarted):
        obj = {"phase": "cell", "index": event.index}
    elif isinstance(event, CellErrors):
        obj = {"cell_errors": [{"cell": e.cell, "kind": e.kind, "type": e.type, "message": e.message}
                               for e in event.errors]}
    elif isinstance(event, CellsDone):
        obj = {"phase": "cells_done"}
    elif isinstance(event, CourseVersions):
        obj = {"course_versions": list(event.names)}
    elif isinstance(event, Missing):
        obj = {"missing": event.text}
    elif isinstance(event, CheckStarted):
        obj = {"phase": "check", "key": event.key}
    elif isinstance(event, CheckOutcome):
        obj = {"key": event.key, "outcome": dict(event.outcome)}
    elif isinstance(event, Done):
        obj = {"phase": "done"}
    else:
        raise TypeError(f"not a grading event: {type(event).__name__}")
    return (_dumps(obj) + "\n").encode()


_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)  # a JSON string; possessive: no backtracking
_NOT_BRACKET = bytes(range(256)).translate(None, b"[]{}")
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opening bracket 2, a closing one 0: a depth step + 1


def measure(line: bytes | bytearray) -> int | Violation:
    """How many units (containers, members and elements) ``line`` holds if it is JSON, counted
    without decoding it; or the :class:`Violation` it is when it holds more than :data:`MAX_EVENT_UNITS`,
    nests deeper than :data:`MAX_EVENT_DEPTH`, or closes more brackets than it opens.

    Strings are cut out first (a bracket or comma inside one is text); what is left of a JSON line
    is numbers, literals and punctuation, in which each container opens with a bracket and each
    further element or member adds a comma or a colon. Its cost is linear in the line's bytes (a
    regular expression that never backtracks, byte counts, and one pass over at most twice
    :data:`MAX_EVENT_UNITS` brackets)."""
    skeleton = _STRING.sub(b"", line)
    units = skeleton.count(b"{") + skeleton.count(b"[") + skeleton.count(b",") + skeleton.count(b":")
    if units > MAX_EVENT_UNITS:
        return TOO_MUCH
    if skeleton.count(b"]") + skeleton.count(b"}") > units:  # more closed than opened: not JSON
        return NOT_AN_EVENT
    steps = skeleton.translate(None, _NOT_BRACKET).translate(_STEP)
    if steps and max(accumulate(b - 1 for b in steps)) > MAX_EVENT_DEPTH:
        return NOT_AN_EVENT
    return units


def decode(line: bytes | bytearray) -> Event | Violation:
    """The event one line (without its newline) stands for, or the :class:`Violation` it is.

    Only the line's shape is judged here; whether the event may come now is :class:`Channel`'s.
    The line is measured (:func:`measure`) before it is decoded: what it may cost is bounded first.
    """
    return _decode(line)[0]


def _decode(line: bytes | bytearray) -> tuple[Event | Violation, int]:
    """:func:`decode`, and the line's units (0 for a violation)."""
    units = measure(line)
    if isinstance(units, Violation):
        return units, 0
    event = _event(line)
    return event, 0 if isinstance(event, Violation) else units


def _event(line: bytes | bytearray) -> Event | Violation:
    """The event a line measured fit to decode stands for."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return NOT_AN_EVENT
    if type(obj) is not dict:
        return NOT_AN_EVENT
    keys = set(obj)
    if keys == {"phase"}:
        simple = _BARE_PHASES.get(obj["phase"]) if type(obj["phase"]) is str else None
        return simple() if simple is not None else NOT_AN_EVENT
    if keys == {"phase", "index"} and obj["phase"] == "cell" and type(obj["index"]) is int and obj["index"] >= 0:
        return CellStarted(obj["index"])
    if keys == {"phase", "key"} and obj["phase"] == "check" and type(obj["key"]) is str:
        return CheckStarted(obj["key"])
    if keys == {"key", "outcome"} and type(obj["key"]) is str and type(obj["outcome"]) is dict:
        return CheckOutcome(obj["key"], MappingProxyType(obj["outcome"]))
    if keys == {"missing"} and type(obj["missing"]) is str and len(obj["missing"]) <= MAX_MISSING_CHARS:
        return Missing(obj["missing"])
    if keys == {"course_versions"}:
        names = obj["course_versions"]
        if type(names) is list and 0 < len(names) <= MAX_COURSE_VERSIONS and \
                all(is_name(n) for n in names):
            return CourseVersions(tuple(names))
        return NOT_AN_EVENT
    if keys == {"cell_errors"}:
        errors = obj["cell_errors"]
        if type(errors) is list and errors and all(_is_cell_error(e) for e in errors):
            return CellErrors(tuple(CellError(e["cell"], e["kind"], e["type"], e["message"]) for e in errors))
    return NOT_AN_EVENT


def is_name(name: object) -> bool:
    """Whether ``name`` may stand in a :class:`CourseVersions` event: a dotted Python name."""
    return type(name) is str and len(name) <= 200 and _NAME.match(name) is not None


def _is_cell_error(e: object) -> bool:
    return type(e) is dict and set(e) == {"cell", "kind", "type", "message"} and type(e["cell"]) is int \
        and e["cell"] >= 1 and e["kind"] in CELL_KINDS and type(e["type"]) is str \
        and len(e["type"]) <= MAX_TYPE_CHARS and type(e["message"]) is str and len(e["message"]) <= MAX_MESSAGE_CHARS


# -- the order, and the parent's reader ------------------------------------------------------------
class Channel:
    """Reads one child's events under the protocol (see the module docstring).

    Invariants: :attr:`events` holds only well-formed events, each accepted in the protocol's order,
    received before ``Done`` and before the first broken rule; :attr:`tampering` names the first
    broken rule, and nothing after it is read, decoded or kept (:attr:`stopped`); :attr:`done` is
    True iff a ``Done`` was accepted; nothing is accepted once more than :data:`MAX_EVENT_BYTES`
    arrived or the accepted events hold more than :data:`MAX_CHANNEL_UNITS` units (:attr:`too_large`).
    So what the channel holds, and what reading it costs, is bounded whatever the child sends.
    """

    def __init__(self, check_keys: Iterable[str], cells: int | None = None) -> None:
        """``check_keys``: the checks of the TODO under test; ``cells``: how many cells the child was
        sent (None: not bounded)."""
        self.events: list[Event] = []
        self.tampering: list[L] = []
        self.done = False
        self.too_large = False
        self._order = Order(frozenset(check_keys), cells)
        self._buf = bytearray()
        self._received = 0
        self._units = 0

    @property
    def stopped(self) -> bool:
        """Whether the channel takes nothing more: a rule was broken, or the child sent too much.
        Its reader stops reading then, and ends the child."""
        return self.tampered or self.too_large

    def feed(self, chunk: bytes) -> list[Event]:
        """Take raw bytes from the pipe; return the events they completed that were accepted.
        Once :attr:`stopped`, bytes are dropped unread."""
        if self.stopped:
            return []
        self._received += len(chunk)
        if self._received > MAX_EVENT_BYTES:
            self.too_large = True
            self._buf = bytearray()
            return []
        self._buf += chunk  # a bytearray: a long line arriving in many pieces costs linear time
        if b"\n" not in chunk:
            return []
        buf, start, new = self._buf, 0, []
        while not self.stopped:  # line by line, up to the first broken rule: nothing past it is looked at
            end = buf.find(b"\n", start)
            if end < 0:
                break
            event = self._accept(bytes(buf[start:end]))
            start = end + 1
            if event is not None:
                self.events.append(event)
                new.append(event)
        if self.stopped:
            self._buf = bytearray()
        else:
            del buf[:start]
        return new

    def close(self) -> None:
        """The pipe reached its end: a last line without a newline is not an event."""
        if self._buf.strip() and not self.stopped:
            self._flag(messages.PROTOCOL_PARTIAL_LINE)
        self._buf = bytearray()

    @property
    def tampered(self) -> bool:
        return bool(self.tampering)

    @property
    def summary(self) -> ChildSummary:
        """What the accepted events say (see :func:`summarize`)."""
        return summarize(self.events)

    def _flag(self, why: L) -> None:
        if not self.tampering:  # the first broken rule only: nothing after it is read
            self.tampering.append(why)

    def _accept(self, line: bytes | bytearray) -> Event | None:
        if self.done:
            self._flag(messages.PROTOCOL_AFTER_DONE)
            return None
        event, units = _decode(line)
        if isinstance(event, Violation):
            self._flag(event.why)
            return None
        why = self._order.why_not(event)
        if why is not None:
            self._flag(why)
            return None
        self._units += units
        if self._units > MAX_CHANNEL_UNITS:
            self.too_large = True
            return None
        self._order.take(event)
        self.done = isinstance(event, Done)
        return event


@dataclass
class Order:
    """The protocol's order as a state machine: where a legal sequence of events has got to.

    Invariant: only events :meth:`why_not` allowed were passed to :meth:`take`, so the state below
    always describes a legal sequence (a prefix of one of the child's sequences).
    """

    allowed: frozenset[str]
    """The keys of the TODO's checks."""
    cells: int | None = None
    """How many cells the child was sent (None: not bounded)."""
    seen: set[type] = field(default_factory=set)
    """The types of the events taken so far."""
    started: int = 0
    """How many cells started."""
    announced: set[str] = field(default_factory=set)
    """Keys of the checks that started."""
    reported: set[str] = field(default_factory=set)
    """Keys of the checks that reported their outcome."""
    running: str | None = None
    """Key of the check that started and has not reported yet."""

    def why_not(self, event: Event) -> L | None:
        """Why ``event`` may not come now (None: it may), in both languages. Texts never repeat what
        the child sent beyond the name of one of :attr:`allowed`."""
        why = self._rule(event)
        if why is None and self.running is not None and not isinstance(event, CheckOutcome):
            why = messages.PROTOCOL_NOTHING_REPORTED.format(name=_name(self.running))
        return why

    def _rule(self, event: Event) -> L | None:
        seen = self.seen
        if Done in seen:
            return messages.PROTOCOL_AFTER_DONE
        if Missing in seen and not isinstance(event, Done):
            return messages.PROTOCOL_AFTER_MISSING
        if isinstance(event, Ready):
            return messages.PROTOCOL_READY_TWICE if seen else None
        if not seen:
            return messages.PROTOCOL_BEFORE_READY
        if isinstance(event, CellStarted):
            if CellsDone in seen or CellErrors in seen:
                return messages.PROTOCOL_CELL_AFTER_CELLS
            if event.index != self.started or (self.cells is not None and event.index >= self.cells):
                return messages.PROTOCOL_CELL_OUT_OF_TURN
            return None
        if isinstance(event, (CellErrors, CellsDone)) and self.cells is not None and self.started != self.cells \
                and CellsDone not in seen:
            return messages.PROTOCOL_CELLS_NOT_ALL_STARTED
        if isinstance(event, CellErrors):
            if CellsDone in seen or CellErrors in seen:
                return messages.PROTOCOL_CELL_ERRORS_OUT_OF_TURN
            numbers = [e.cell for e in event.errors]
            if numbers != sorted(set(numbers)) or numbers[-1] > self.started:
                return messages.PROTOCOL_CELL_ERRORS_NOT_RUN
            return None
        if isinstance(event, CellsDone):
            return messages.PROTOCOL_CELLS_DONE_TWICE if CellsDone in seen else None
        # 'missing' and 'course_versions' come once, after the cells and before any check
        out_of_turn = CellsDone not in seen or bool(seen & {CheckStarted, CourseVersions})
        if isinstance(event, Missing):
            return messages.PROTOCOL_MISSING_OUT_OF_TURN if out_of_turn else None
        if isinstance(event, CourseVersions):
            return messages.PROTOCOL_COURSE_VERSIONS_OUT_OF_TURN if out_of_turn else None
        if isinstance(event, CheckStarted):
            if event.key not in self.allowed:
                return messages.PROTOCOL_NO_SUCH_CHECK
            if event.key in self.announced:
                return messages.PROTOCOL_STARTED_TWICE.format(name=_name(event.key))
            return None if CellsDone in seen else messages.PROTOCOL_CHECK_BEFORE_CELLS
        if isinstance(event, CheckOutcome):
            if event.key in self.reported:
                return messages.PROTOCOL_REPORTED_TWICE.format(name=_name(event.key))
            if event.key not in self.allowed:
                return messages.PROTOCOL_OUTCOME_NO_SUCH_CHECK
            if event.key != self.running:
                return messages.PROTOCOL_OUTCOME_NOT_RUNNING.format(name=_name(event.key))
            return None
        return None if CellsDone in seen else messages.PROTOCOL_DONE_BEFORE_CELLS  # Done

    def take(self, event: Event) -> None:
        """Record an event :meth:`why_not` allowed."""
        self.seen.add(type(event))
        if isinstance(event, CellStarted):
            self.started += 1
        elif isinstance(event, CheckStarted):
            self.announced.add(event.key)
            self.running = event.key
        elif isinstance(event, CheckOutcome):
            self.reported.add(event.key)
            self.running = None


def _name(key: str) -> str:
    """The check's name in a key this grader made (``sNN.todo:hidden:name``); never learner text."""
    return key.rsplit(":", 1)[-1]


# -- what the parent makes of a child's events ---------------------------------------------------
@dataclass(frozen=True)
class ChildSummary:
    """What one child's accepted events say. A pure function of them (:func:`summarize`).

    Invariant: built from a legal sequence, so every field below holds at most what the child's
    harness could have sent once.
    """

    ready: bool = False
    """The harness reported ``Ready``: learner code may have run from here on."""
    cell: int | None = None
    """Index of the last cell that started (None: no cell started)."""
    cell_errors: tuple[CellError, ...] = ()
    """The cells that raised, in order."""
    cells_done: bool = False
    """Every cell ran."""
    course_versions: tuple[str, ...] = ()
    """Given code the course supplied because the learner's cell lacks it (dotted names)."""
    missing: str | None = None
    """What the TODO needs and the notebook lacks (None: nothing missing)."""
    check: str | None = None
    """Key of the last check that started (it may have reported since)."""
    outcomes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Raw outcome per check key, for each check that reported."""
    done: bool = False
    """The child reported ``Done``."""

    @property
    def reached(self) -> str:
        """How far the child got: ``""``, ``ready``, ``cell``, ``cells_done``, ``check`` or ``done``."""
        for name, here in (("done", self.done), ("check", self.check is not None), ("cells_done", self.cells_done),
                           ("cell", self.cell is not None), ("ready", self.ready)):
            if here:
                return name
        return ""


def summarize(events: Iterable[Event]) -> ChildSummary:
    """The :class:`ChildSummary` of a legal sequence of events (what a :class:`Channel` accepted)."""
    s: dict[str, Any] = {}
    outcomes: dict[str, Mapping[str, Any]] = {}
    for e in events:
        if isinstance(e, Ready):
            s["ready"] = True
        elif isinstance(e, CellStarted):
            s["cell"] = e.index
        elif isinstance(e, CellErrors):
            s["cell_errors"] = e.errors
        elif isinstance(e, CellsDone):
            s["cells_done"] = True
        elif isinstance(e, CourseVersions):
            s["course_versions"] = e.names
        elif isinstance(e, Missing):
            s["missing"] = e.text
        elif isinstance(e, CheckStarted):
            s["check"] = e.key
        elif isinstance(e, CheckOutcome):
            outcomes[e.key] = e.outcome
        elif isinstance(e, Done):
            s["done"] = True
    return ChildSummary(**s, outcomes=MappingProxyType(outcomes))

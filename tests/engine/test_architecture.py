"""The package's rooms, as ``docs/ARCHITECTURE.md`` draws them: every module in a room, no room larger than
15 modules, and every import (also one inside a function) running only to a room that its row allows."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "autograder"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
MAX_MODULES = 15
FACE = "face"


def _rooms() -> dict[str, set[str]]:
    """Room -> the rooms it may import, from the doc's table (bottom room first)."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- rooms: begin -->", 1)[1].split("<!-- rooms: end -->", 1)[0]
    rooms: dict[str, set[str]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`(\w+)/`", cells[0]) if len(cells) == 3 else None
        if not m:
            continue
        may = cells[2]
        rooms[m.group(1)] = set(rooms) if may == "every room" else set(re.findall(r"`(\w+)/`", may))
    return rooms


ROOMS = _rooms()


def _room_of(dotted: str) -> str:
    """``autograder.grading.grade`` -> ``grading``; a module of the face (``autograder.runtime``) -> face."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else FACE


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``autograder`` module that ``path`` imports, wherever the import stands."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "autograder"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "autograder":
            if node.module == "autograder" or node.module.count(".") == 1 and node.module.split(".")[1] in ROOMS:
                # ``from autograder import check`` names the face; ``from autograder.core import layout`` a module
                out += [(node.lineno, f"{node.module}.{a.name}" if node.module != "autograder" else "autograder") for a in node.names]
            else:
                out.append((node.lineno, node.module))
    return out


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts and "templates" not in p.parts)


def test_the_doc_names_rooms_bottom_first_and_they_form_no_cycle():
    assert len(ROOMS) >= 7, ROOMS
    seen: set[str] = set()
    for room, may in ROOMS.items():
        assert may <= seen, f"{room}/ may import {sorted(may - seen)}, which the table lists above it"
        seen.add(room)


def test_every_module_is_in_a_room_or_the_face_and_no_room_is_crowded():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert folders == set(ROOMS), f"folders of autograder/ without a row in docs/ARCHITECTURE.md, or rows without a folder: {folders ^ set(ROOMS)}"
    for room in ROOMS:
        n = len([p for p in (PACKAGE / room).rglob("*.py") if p.name != "__init__.py"])
        assert n <= MAX_MODULES, f"{room}/ holds {n} modules (at most {MAX_MODULES}): split it"


def test_every_import_runs_down_to_an_allowed_room():
    bad = []
    for path in _modules():
        room = _room_of(_module(path))
        for line, target in _imports(path):
            to = _room_of(target)
            if room == FACE or to == room:
                continue  # the face may name any room; a room may use itself
            if to == FACE or to not in ROOMS[room]:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {room}/ imports {target} ({to})")
    assert not bad, "imports the table in docs/ARCHITECTURE.md does not allow:\n" + "\n".join(bad)


def test_the_package_ships_no_test_helper():
    """Helpers of the project's own tests live in tests/ (tests/support/): the package a learner installs
    never imports them, nor the test tools."""
    test_only = {"tests", "pytest", "hypothesis"}
    bad = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in test_only]
    assert not bad, "the package imports test-only code:\n" + "\n".join(bad)


def test_the_face_holds_no_code_of_its_own():
    """A module of the face only names what a room defines (so a fact never lives in two places)."""
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.AsyncFunctionDef))
               or isinstance(n, ast.FunctionDef) and n.name != "__getattr__"]
        assert not own, f"{path.relative_to(ROOT)} defines {[n.name for n in own]}: move it into a room"


def test_the_face_exports_resolve():
    import importlib

    import autograder

    for name in autograder.__all__:
        assert callable(getattr(autograder, name)), name
    for path in PACKAGE.glob("*.py"):
        if path.stem.startswith("_"):
            continue
        mod = importlib.import_module(f"autograder.{path.stem}")
        for name in mod.__all__:
            assert getattr(mod, name) is not None, f"autograder.{path.stem}.{name}"


@pytest.mark.parametrize("room", list(ROOMS))
def test_a_room_says_what_it_is(room):
    doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text(encoding="utf-8")))
    assert doc, f"autograder/{room}/__init__.py needs a docstring: what the room holds"


def test_figures():
    """Modules per room and the arrows between rooms (run with ``-s`` to read them)."""
    arrows: dict[tuple[str, str], int] = {}
    for path in _modules():
        room = _room_of(_module(path))
        for _, target in _imports(path):
            to = _room_of(target)
            if to != room:
                arrows[room, to] = arrows.get((room, to), 0) + 1
    for room in ROOMS:
        n = len([p for p in (PACKAGE / room).rglob("*.py") if p.name != "__init__.py"])
        print(f"{room + '/':15} {n:3} modules")
    print(f"{len([a for a in arrows if FACE not in a])} room-to-room arrows ({sum(n for a, n in arrows.items() if FACE not in a)} imports):")
    for (a, b), n in sorted(arrows.items()):
        print(f"  {a} -> {b}: {n}")
    assert arrows

"""Reading Python source as text: where a definition is, where its TODO region is, and the markers.

One rule for "the source of a definition", used by the build (to put reference code into notebook
cells) and by the grader (to stub a TODO region), so both always cut the same lines.
"""
from __future__ import annotations

import ast
import functools
import re
import threading
from collections.abc import Iterable
from pathlib import Path

#: nbgrader's markers around a solution region and around hidden tests (its defaults).
SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
#: What a learner's copy has in place of a solution region (nbgrader's ``ClearSolutions.code_stub``).
STUB_LINES = ("# YOUR CODE HERE", "raise NotImplementedError()")
STUB_CODE = "\n".join(STUB_LINES)

_DEFS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)

# CPython 3.11's ``ast.parse`` is not safe from several threads at once: turning the C tree into Python
# objects keeps one recursion counter per interpreter, and a thread switch inside it (a garbage
# collection running Python code) ends in "SystemError: AST constructor recursion depth mismatch".
# Grading judges TODOs on worker threads, so every parse of the package goes through this lock.
_PARSE_LOCK = threading.Lock()


def parse(source: str) -> ast.Module:
    """``ast.parse``, one thread at a time (see ``_PARSE_LOCK``)."""
    with _PARSE_LOCK:
        return ast.parse(source)



def names_defined(body: Iterable[ast.stmt], *, imports: bool = True) -> set[str]:
    """The names a block of statements binds at its own level: the one rule for "what a cell (or a
    class body) defines". ``def`` and ``class``, every name an assignment binds (plain, annotated,
    augmented, unpacked) and, with ``imports``, the names an import binds (``import a.b`` binds ``a``)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, _DEFS):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif imports and isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def imported_modules(source: str) -> set[str]:
    """Top-level packages a cell imports anywhere in it (``import torch.nn`` and ``from torch import
    nn`` give ``torch``); a cell that does not parse is read line by line."""
    return set(_imported_modules(source))


# Grading asks these of every learner cell once per TODO, from several threads: each answer depends on
# the source text alone, so it is worked out once per text (a bounded cache: a class's cells, many times over).
@functools.lru_cache(maxsize=8192)
def _imported_modules(source: str) -> frozenset[str]:
    return frozenset(_find_imports(source))


_FROM_LINE = re.compile(r"^\s*from\s", flags=re.M)


def _find_imports(source: str) -> set[str]:
    if "import" not in source and not _FROM_LINE.search(source):  # neither branch below can find any
        return set()
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_][A-Za-z0-9_]*)", source, flags=re.M))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


#: Builtins through which code can reach a name it never spells out.
_INDIRECT = ("eval", "exec", "compile", "globals", "locals", "vars", "getattr", "__import__", "__builtins__")


@functools.lru_cache(maxsize=8192)
def reaches_only_through(source: str, function: str, name: str) -> bool:
    """Whether running the cell ``source`` and then calling any function it defines, other than
    ``function``, provably neither runs ``function`` nor imports anything.

    True only when every top-level statement merely defines (a docstring, ``pass``, a ``def``
    without decorators whose defaults are literals: nothing runs at cell time), no import appears
    outside the body of the top-level ``def function``, and the word ``name`` (the function's, or
    anything that could reach it) appears nowhere outside that body, not even in a string (so
    ``globals()["..."]`` is caught too). Conservative: a cell that does not parse is not provably
    anything, and any doubt answers False."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return False

    def literal(node: ast.expr | None) -> bool:
        return node is None or all(isinstance(n, (ast.Constant, ast.Tuple, ast.UnaryOp, ast.USub, ast.UAdd,
                                                  ast.Load)) for n in ast.walk(node))

    outside: list[ast.AST] = []
    node: ast.AST  # a statement here, any node of theirs below
    for node in tree.body:
        if isinstance(node, ast.Pass) or isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
            return False
        if not all(literal(d) for d in [*node.args.defaults, *node.args.kw_defaults]):
            return False
        if node.name != function:
            outside.append(node)
    for node in (n for top in outside for n in ast.walk(top)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return False
        if isinstance(node, ast.Name) and node.id in (name, *_INDIRECT) or \
                isinstance(node, ast.Attribute) and node.attr == name:
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and name in node.value:
            return False
    return True


def defined_names(source: str, *, imports: bool = True) -> set[str]:
    """:func:`names_defined` of a cell's source. A cell that does not parse (a learner's unfinished
    one) is read line by line instead: its ``def``/``class`` heads and ``name =`` lines."""
    try:
        return names_defined(parse(source).body, imports=imports)
    except (SyntaxError, ValueError):
        found = re.findall(r"^(?:class|def|async\s+def)\s+([A-Za-z_][A-Za-z0-9_]*)", source, flags=re.M)
        found += re.findall(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=\n]*)?=(?!=)", source, flags=re.M)
        return set(found)


@functools.lru_cache(maxsize=8)
def _module_tree(text: str) -> ast.Module:
    """:func:`parse` of a whole module's text, kept for the last few texts: the build and the tests cut
    each TODO's definition out of one module's text in turn (a parse each, otherwise). Only read, never
    changed, by the functions below that take it."""
    return parse(text)


def _text(module: Path | str) -> str:
    return module.read_text(encoding="utf-8") if isinstance(module, Path) else module


def _node(tree: ast.Module, target: str) -> ast.stmt:
    """The definition named ``target`` (``name`` or ``Class.method``), or the assignment of ``name``."""
    body: list[ast.stmt] = tree.body
    node: ast.stmt | None = None
    for part in target.split("."):
        node = None
        for n in body:
            if isinstance(n, _DEFS) and n.name == part:
                node = n
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    node = n
            if node is not None:
                break
        if node is None:
            raise KeyError(f"no top-level {target!r} in the module")
        body = getattr(node, "body", [])
    assert node is not None
    return node


def definition_span(module: Path | str, target: str, *, with_comments_above: bool = True) -> tuple[int, int]:
    """0-based ``[start, end)`` lines of ``target``'s definition.

    The span starts at its first decorator, or at the comment lines right above it when
    ``with_comments_above``; it ends after the last statement plus any more-indented comment lines
    that follow (an END marker after a ``return`` belongs to the function).
    """
    text = _text(module)
    lines = text.splitlines()
    node = _node(_module_tree(text), target)
    decorators = getattr(node, "decorator_list", [])
    start = (decorators[0].lineno if decorators else node.lineno) - 1
    if with_comments_above:
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1
    end: int = node.end_lineno  # type: ignore[assignment]  # set on every parsed node
    if isinstance(node, _DEFS):
        indent, j = node.col_offset, end
        while j < len(lines) and (not lines[j].strip() or (
                lines[j].lstrip().startswith("#") and len(lines[j]) - len(lines[j].lstrip()) > indent)):
            j += 1
            if lines[j - 1].strip():
                end = j
    return start, end


def object_source(module: Path | str, name: str) -> str:
    """Source of top-level ``name`` (a class, function or assignment), with the comments right above it."""
    text = _text(module)
    start, end = definition_span(text, name)
    return "\n".join(text.splitlines()[start:end])


def solution_region(module: Path | str, target: str) -> tuple[int, int]:
    """0-based line indices (begin marker, end marker) of the one solution region in ``target``."""
    text = _text(module)
    lines = text.splitlines()
    start, end = definition_span(text, target, with_comments_above=False)
    marks = [i for i in range(start, end) if lines[i].strip() in (SOLUTION_BEGIN, SOLUTION_END)]
    if len(marks) != 2 or lines[marks[0]].strip() != SOLUTION_BEGIN:
        raise ValueError(f"{target}: expected exactly one {SOLUTION_BEGIN}/{SOLUTION_END} region")
    return marks[0], marks[1]


def stub_region(module: Path | str, target: str) -> str:
    """The module's text with ``target``'s solution region replaced by the learner's stub."""
    text = _text(module)
    lines = text.splitlines()
    begin, end = solution_region(text, target)
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    return "\n".join(lines[:begin] + [indent + s for s in STUB_LINES] + lines[end + 1:]) + "\n"


def top_level_imports(module: Path | str) -> str:
    """The module's top-level import statements (without ``from __future__``), in order."""
    text = _text(module)
    lines = text.splitlines()
    out = []
    for node in parse(text).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            out.append("\n".join(lines[node.lineno - 1: node.end_lineno]))
    return "\n".join(out)


def checks_only_of(module: Path | str, todo_id: str) -> str:
    """A checks module with every check of another TODO removed: each top-level function decorated
    with ``<anything>.check("<id>", ...)`` whose ``<id>`` is not ``todo_id`` loses its lines
    (decorators included). What the module defines besides checks stays as it is."""
    text = _text(module)
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    for node in parse(text).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "check" \
                    and dec.args and isinstance(dec.args[0], ast.Constant) and dec.args[0].value != todo_id:
                drop.update(range(node.decorator_list[0].lineno - 1, node.end_lineno))  # type: ignore[arg-type]  # parsed: set
                break
    return "".join(line for i, line in enumerate(lines) if i not in drop)

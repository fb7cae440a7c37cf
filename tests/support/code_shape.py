"""Syntax-level checks of the code's shape (ast only, nothing imported): comparisons of enum-typed fields
with string literals, alias constants for enum members, event type tests outside an EventTable, long
functions, large classes and ``__init__`` methods with many parameters. tests/test_code_shape.py
asserts them; ``python -m tests.support.code_shape`` prints what they find."""

from __future__ import annotations

import ast
import functools
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("core", "tui")
ENUM_BASES = {"StrEnum", "Enum", "IntEnum"}
LONG_FUNCTION = 80  # lines, decorators and docstring included
LARGE_CLASS_METHODS = 30  # methods (properties and nested functions' own methods not counted twice)
LARGE_CLASS_LINES = 300  # lines, decorators and docstring included
INIT_PARAMETERS = 10  # parameters of __init__ besides self, *args and **kwargs counted as one each


@dataclass(frozen=True)
class Found:
    path: Path
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.text}"


@functools.cache  # one parse of the tree per test session
def sources(packages: tuple[str, ...] = PACKAGES) -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8")) for d in packages for p in sorted((ROOT / d).rglob("*.py"))}


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def enum_values(trees: dict[Path, ast.Module]) -> dict[str, set[str]]:
    """Each enum class's name -> its members' string values."""
    found: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(_base_name(b) in ENUM_BASES for b in node.bases):
                found[node.name] = {
                    s.value.value for s in node.body if isinstance(s, ast.Assign)
                    and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
                }
    return found


def enum_fields(trees: dict[Path, ast.Module], enums: dict[str, set[str]]) -> dict[str, set[str]]:
    """A field name some class annotates with an enum -> the values of every enum it is annotated with."""
    found: dict[str, set[str]] = defaultdict(set)
    for tree in trees.values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    names = {_base_name(n) for n in ast.walk(stmt.annotation)
                             if isinstance(n, ast.Name | ast.Attribute)}
                    for enum in names & set(enums):
                        found[stmt.target.id] |= enums[enum]
    return found


def _literals(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [v for e in node.elts for v in _literals(e)]
    return []


def enum_string_compares(trees: dict[Path, ast.Module] | None = None) -> list[Found]:
    """``x.field == "value"`` (or ``in (...)``) where ``field`` is enum-typed in some class and ``value`` is one of
    that enum's values: the comparison should name the member."""
    trees = trees or sources()
    fields = enum_fields(trees, enum_values(trees))
    found: list[Found] = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            for a, b in pairwise(sides):
                for attr, other in ((a, b), (b, a)):
                    if isinstance(attr, ast.Attribute) and set(_literals(other)) & fields.get(attr.attr, set()):
                        found.append(Found(path, node.lineno, ast.unparse(node)))
    return sorted(set(found), key=str)


def enum_aliases(trees: dict[Path, ast.Module] | None = None) -> list[Found]:
    """Module-level ``NAME = Enum.MEMBER``: a second name for a member."""
    trees = trees or sources()
    enums = set(enum_values(trees))
    found: list[Found] = []
    for path, tree in trees.items():
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(value, ast.Attribute) and _base_name(value.value) in enums:
                found.append(Found(path, node.lineno, ast.unparse(node)))
    return found


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _classes(trees: dict[Path, ast.Module]) -> Iterator[tuple[Path, ast.ClassDef]]:
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                yield path, node


def long_functions(trees: dict[Path, ast.Module] | None = None, limit: int = LONG_FUNCTION) -> list[Found]:
    """Functions of ``limit`` lines or more (from the first decorator to the last line)."""
    trees = trees or sources()
    found: list[Found] = []
    for path, tree in trees.items():
        for fn in _functions(tree):
            size = _span(fn)
            if size >= limit:
                found.append(Found(path, fn.lineno, f"{fn.name} {size} lines"))
    return found


def _span(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return (node.end_lineno or node.lineno) - start + 1


def large_classes(trees: dict[Path, ast.Module] | None = None, methods: int = LARGE_CLASS_METHODS,
                  lines: int = LARGE_CLASS_LINES) -> list[Found]:
    """Classes with more than ``methods`` methods (defined in their own body) or more than ``lines`` lines."""
    found: list[Found] = []
    for path, node in _classes(trees or sources()):
        count = sum(isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) for s in node.body)
        size = _span(node)
        if count > methods or size > lines:
            found.append(Found(path, node.lineno, f"{node.name} {count} methods, {size} lines"))
    return found


def _parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    named = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    own = len(named) - (1 if named and named[0].arg in ("self", "cls") else 0)
    return own + (a.vararg is not None) + (a.kwarg is not None)


def wide_inits(trees: dict[Path, ast.Module] | None = None, limit: int = INIT_PARAMETERS) -> list[Found]:
    """``__init__`` methods taking more than ``limit`` parameters (self not counted): a request or options
    object belongs there instead."""
    found: list[Found] = []
    for path, node in _classes(trees or sources()):
        for fn in node.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__" and _parameter_count(fn) > limit:
                found.append(Found(path, fn.lineno, f"{node.name}.__init__ {_parameter_count(fn)} parameters"))
    return found


def event_type_tests(trees: dict[Path, ast.Module] | None = None) -> list[Found]:
    """``isinstance(x, ev.Kind)`` outside the event module: dispatch that belongs in an EventTable (or a filter
    that ``core.runtime.dispatch.of_kind`` does)."""
    trees = trees or sources()
    found: list[Found] = []
    for path, tree in trees.items():
        if path == ROOT / "core" / "runtime" / "events.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                    and len(node.args) == 2 and "ev." in ast.unparse(node.args[1]):
                found.append(Found(path, node.lineno, ast.unparse(node)))
    return found


def main() -> int:
    trees = sources()
    for title, items in (("enum fields compared with a string literal", enum_string_compares(trees)),
                         ("alias constants for enum members", enum_aliases(trees)),
                         ("isinstance(..., ev.Kind) checks", event_type_tests(trees)),
                         (f"functions of {LONG_FUNCTION} lines or more", long_functions(trees)),
                         (f"classes over {LARGE_CLASS_METHODS} methods or {LARGE_CLASS_LINES} lines",
                          large_classes(trees)),
                         (f"__init__ over {INIT_PARAMETERS} parameters", wide_inits(trees))):
        print(f"{title}: {len(items)}")
        for item in items:
            print(f"  {item}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A method sees its run through the narrow RunContext (core.runtime.run_context), never the engine: at most
twelve names across core/methods, and no reach-through into the engine's services (``ctx.control.x``)."""

from __future__ import annotations

import ast
from pathlib import Path

from core.runtime.run_context import RunContext

METHODS = Path(__file__).resolve().parents[3] / "core" / "methods"
MOST_NAMES = 12  # issue 45: calls, events, barrier/steering, budgets, the team, the settings
VALUES = {"spec", "state"}  # plain values (RunBrief, RunState): reading their fields is not a reach-through


def _context_of(node: ast.AST) -> bool:
    """``ctx`` or ``self.ctx``: the run context, as every method names it."""
    if isinstance(node, ast.Name):
        return node.id == "ctx"
    return isinstance(node, ast.Attribute) and node.attr == "ctx" and isinstance(node.value, ast.Name) \
        and node.value.id == "self"


def _uses() -> tuple[dict[str, set[str]], list[str]]:
    """(name -> the files using ``ctx.name``, the reach-throughs ``ctx.service.x`` as "file:line")."""
    names: dict[str, set[str]] = {}
    reach: list[str] = []
    for path in sorted(METHODS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _context_of(node.value):
                names.setdefault(node.attr, set()).add(path.name)
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                  and _context_of(node.value.value) and node.value.attr not in VALUES):
                reach.append(f"{path.relative_to(METHODS)}:{node.lineno} ctx.{node.value.attr}.{node.attr}")
    return names, reach


def test_methods_use_at_most_twelve_names_of_their_run_context() -> None:
    names, _ = _uses()
    assert len(names) <= MOST_NAMES, f"{len(names)} names used: {sorted(names)}"
    # Every name a method uses is one the protocol declares (a method cannot lean on the engine's others).
    declared = {n for n in dir(RunContext) if not n.startswith("_")}
    assert set(names) <= declared, sorted(set(names) - declared)


def test_methods_never_reach_through_the_context_into_a_service() -> None:
    _, reach = _uses()
    assert reach == []


def test_no_method_holds_the_engine() -> None:
    for path in sorted(METHODS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = [a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names]
        assert "SwarmEngine" not in imported, path
        params = [a.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                  for a in node.args.args]
        assert "rt" not in params, f"{path}: a method's run context is named ctx"

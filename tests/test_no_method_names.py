"""Generic code never tests a method's name: a method's view is registered for it (tui.widgets.method_views)
and its traits are fields of its MethodInfo (core.methods.registry), so a new method needs no edit here."""

from __future__ import annotations

import ast
from pathlib import Path

from core.methods.catalogue import method_names

ROOT = Path(__file__).resolve().parent.parent
GENERIC = ["tui/screens", "tui/widgets", "tui/cli", "tui/model.py", "tui/app.py", "core/compose", "core/mcp",
           "core/bench", "core/sessions"]
# Sites that name a method on purpose, each with its reason (not a trait spelled as a name test).
ALLOWED = {
    ("tui/screens/inbox.py", "broadcast"),  # a delivery's kind (routed or broadcast), not the method
    ("core/sessions/html/graph_svg.py", "broadcast"),  # a drawn edge's kind (every-to-every), not the method
    ("tui/cli/train.py", "topodim"), ("tui/cli/train.py", "dmoa"),  # `swarm-tui train METHOD`: the trainers
    ("core/compose/train_dmoa.py", "dmoa"), ("core/compose/train_topodim.py", "topodim"),  # train one method
    ("core/sessions/model.py", "dytopo"),  # sessions recorded before methods existed were all DyTopo's
    ("core/bench/report.py", "single"),  # the report's reference baseline (issue 42's pages own it)
    ("tui/cli/options.py", "topoweaver"),  # --orchestrator-model, TopoWeaver-R1's own flag (issue 45 item 3)
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            found.add(id(body[0].value))
    return found


def _name_literals() -> list[tuple[str, str, int]]:
    names = set(method_names())
    hits = []
    for where in GENERIC:
        path = ROOT / where
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            relative = str(file.relative_to(ROOT))
            if relative.startswith("tui/widgets/") and file.name.endswith("_view.py"):
                continue  # a method's own view names its method (it registers itself for it)
            tree = ast.parse(file.read_text(encoding="utf-8"))
            docs = _docstrings(tree)
            hits += [(relative, node.value, node.lineno) for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
                     and id(node) not in docs and (relative, node.value) not in ALLOWED]
    return hits


def test_generic_code_names_no_method() -> None:
    assert _name_literals() == []


def test_the_views_are_registered_for_their_methods_and_others_get_the_graph() -> None:
    from tui.widgets.method_views import view_for

    assert view_for("dmoa").__name__ == "DmoaView"  # type: ignore[union-attr]
    assert view_for("topoweaver").__name__ == "TopoWeaverView"  # type: ignore[union-attr]
    assert view_for("topodim").__name__ == "TopoDIMView"  # type: ignore[union-attr]
    assert view_for("dytopo") is None and view_for("a-method-of-a-plugin") is None  # the generic graph pane

"""No import circle anywhere in core/ or tui/: the import graph (grimp, import-linter's own graph builder,
which sees imports inside functions too) has no strongly connected group of two or more modules."""

from __future__ import annotations

import grimp


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The graph's strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    if len(group) > 1:
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def test_circles_finds_a_circle_it_is_shown() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "b", "c"):
        graph.add_module(name)
    graph.add_import(importer="a", imported="b")
    graph.add_import(importer="b", imported="a")
    graph.add_import(importer="b", imported="c")
    assert circles(graph) == [["a", "b"]]


def test_the_tree_has_no_import_circle() -> None:
    graph = grimp.build_graph("tui", "core", cache_dir=None)
    assert "tui.cli.serve" in graph.modules and "tui.cli.main" in graph.modules
    assert circles(graph) == []

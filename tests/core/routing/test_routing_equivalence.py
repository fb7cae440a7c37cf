"""The fast routing in core.routing.dytopo against the networkx version it replaced, kept here as the reference.

core.routing.dytopo breaks cycles, orders and tiers the graph on plain dicts (networkx's call overhead was
most of route()'s time at 20 agents). Which edge a cycle loses depends on which cycle the search finds, so
the port must find the very cycle networkx's find_cycle does: these tests run both over many seeded random
similarity matrices and compare the whole RoutingResult. No timing here: bench/team_scale.py measures it.
"""

from __future__ import annotations

import itertools
import random

import networkx as nx
import numpy as np
import pytest

from core.routing import dytopo
from core.routing.dytopo import (
    CycleError,
    Edge,
    RemovalReason,
    RemovedEdge,
    RoutingResult,
    order_and_tiers,
    paper_cyclic_order,
    route_from_similarity,
)

# --- the reference: route_from_similarity as it was, on networkx ----------------------------------------


def reference_select_edges(
    names: list[str], sim: np.ndarray, tau: float, k_in: int
) -> tuple[list[Edge], list[RemovedEdge]]:
    kept: list[Edge] = []
    removed: list[RemovedEdge] = []
    rows = sim.tolist()
    for i, dst in enumerate(names):
        row = rows[i]
        candidates = [Edge(src, dst, row[j]) for j, src in enumerate(names) if j != i and row[j] >= tau]
        candidates.sort(key=lambda e: (-e.score, e.src))
        kept.extend(candidates[:k_in])
        removed.extend(RemovedEdge(e.src, e.dst, e.score, RemovalReason.K_IN) for e in candidates[k_in:])
    return kept, removed


def reference_break_cycles(names: list[str], edges: list[Edge]) -> tuple[list[Edge], list[RemovedEdge]]:
    """DyTopo's cycle breaking as networkx does it: find_cycle, drop the lowest-weight edge (ties: the
    alphabetically last (src, dst)), search again from scratch."""
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(names))
    for e in sorted(edges, key=lambda e: (e.src, e.dst)):
        graph.add_edge(e.src, e.dst, score=e.score)
    removed: list[RemovedEdge] = []
    while True:
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            break
        lowest = min(graph.edges[u, v]["score"] for u, v in cycle)
        src, dst = max((u, v) for u, v in cycle if graph.edges[u, v]["score"] == lowest)
        removed.append(RemovedEdge(src, dst, graph.edges[src, dst]["score"], RemovalReason.CYCLE))
        graph.remove_edge(src, dst)
    remaining = [e for e in edges if graph.has_edge(e.src, e.dst)]
    return remaining, removed


def reference_order_and_tiers(names: list[str], edges: list[Edge]) -> tuple[list[str], list[list[str]]]:
    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    graph.add_edges_from((e.src, e.dst) for e in edges)
    order = list(nx.lexicographical_topological_sort(graph))
    tiers = [sorted(gen) for gen in nx.topological_generations(graph)]
    return order, tiers


def reference_route_from_similarity(
    names: list[str], sim: np.ndarray, tau: float, k_in: int, *, break_cycles: bool = True
) -> RoutingResult:
    sim = np.asarray(sim, dtype=np.float64)
    selected, removed = reference_select_edges(names, sim, tau, k_in)
    paper_order = paper_cyclic_order(names, selected)
    if break_cycles:
        kept, cycle_removed = reference_break_cycles(names, selected)
        removed = removed + cycle_removed
        order, tiers = reference_order_and_tiers(names, kept)
        acyclic = True
    else:
        kept = selected
        order = paper_order
        tiers = [[name] for name in order]
        graph = nx.DiGraph()
        graph.add_nodes_from(names)
        graph.add_edges_from((e.src, e.dst) for e in kept)
        acyclic = nx.is_directed_acyclic_graph(graph)
    return RoutingResult(
        names=list(names),
        tau=float(tau),
        k_in=int(k_in),
        similarity=[[float(x) for x in row] for row in sim],
        edges=sorted(kept, key=lambda e: (e.dst, -e.score, e.src)),
        removed=sorted(removed, key=lambda e: (e.reason, e.dst, -e.score, e.src)),
        order=order,
        tiers=tiers,
        paper_order=paper_order,
        acyclic=acyclic,
    )


# --- random inputs ----------------------------------------------------------------------------------------


def random_names(rng: np.random.Generator, n: int) -> list[str]:
    """Names in a shuffled input order (the result must not depend on it, and sorting must matter)."""
    names = [f"{chr(ord('A') + i % 26)}gent{i:02d}" for i in range(n)]
    return [names[i] for i in rng.permutation(n)]


def random_similarity(rng: np.random.Generator, n: int, style: str) -> np.ndarray:
    if style == "uniform":
        return rng.uniform(-0.3, 1.0, size=(n, n))
    if style == "ties":  # few distinct values: equal weights on a cycle, equal k_in candidates
        return rng.choice([0.1, 0.3, 0.5, 0.5, 0.7, 0.9], size=(n, n))
    vectors = rng.normal(size=(2 * n, 8))  # cosines of real vectors, as route() computes them
    return dytopo.similarity_matrix(vectors[:n], vectors[n:])


STYLES = ("uniform", "ties", "cosine")


def cases(n: int, count: int) -> list[tuple[list[str], np.ndarray, float, int]]:
    rng = np.random.default_rng(1000 + n)
    out = []
    for index in range(count):
        tau = float(rng.choice([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, rng.uniform(0.0, 0.6)]))
        k_in = int(rng.integers(1, n)) if n > 2 else 1  # 1 .. n - 1
        out.append((random_names(rng, n), random_similarity(rng, n, STYLES[index % len(STYLES)]), tau, k_in))
    return out


# --- equivalence --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(2, 21))
@pytest.mark.parametrize("break_cycles", [True, False])
def test_route_matches_the_networkx_reference(n: int, break_cycles: bool) -> None:
    cycles_broken = 0
    for names, sim, tau, k_in in cases(n, 24):
        expected = reference_route_from_similarity(names, sim, tau, k_in, break_cycles=break_cycles)
        actual = route_from_similarity(names, sim, tau, k_in, break_cycles=break_cycles)
        assert actual == expected, (names, tau, k_in)
        cycles_broken += sum(1 for e in actual.removed if e.reason == RemovalReason.CYCLE)
    if break_cycles and n >= 3:
        assert cycles_broken > 0  # the cases do exercise the cycle search


def test_dense_graphs_with_many_cycles_match() -> None:
    # tau 0 and k_in N-1: nearly complete graphs, dozens of cycles broken one after another.
    rng = np.random.default_rng(7)
    for n in (5, 10, 15, 20):
        for style in STYLES:
            names = random_names(rng, n)
            sim = np.abs(random_similarity(rng, n, style))
            expected = reference_route_from_similarity(names, sim, 0.0, n - 1)
            assert route_from_similarity(names, sim, 0.0, n - 1) == expected


def test_break_cycles_removes_what_find_cycle_finds_on_random_digraphs() -> None:
    # Straight at _break_cycles, on edge sets route() would not produce (any in-degree, repeated scores).
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(2, 12)
        names = [f"N{i}" for i in rng.sample(range(50), n)]
        pairs = [(a, b) for a, b in itertools.permutations(names, 2) if rng.random() < 0.35]
        edges = [Edge(a, b, rng.choice([0.2, 0.4, 0.4, 0.6, rng.random()])) for a, b in pairs]
        rng.shuffle(edges)
        assert dytopo._break_cycles(names, edges) == reference_break_cycles(names, edges)


def test_order_and_tiers_match_networkx_on_random_dags() -> None:
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(1, 15)
        names = [f"N{i}" for i in rng.sample(range(40), n)]
        rank = {name: index for index, name in enumerate(rng.sample(names, n))}  # a random topological order
        edges = [
            Edge(a, b, 0.5) for a, b in itertools.permutations(names, 2) if rank[a] < rank[b] and rng.random() < 0.3
        ]
        if edges and rng.random() < 0.3:
            edges.append(edges[0])  # a repeated edge counts once, as in a DiGraph
        extra = [f"X{i}" for i in range(rng.randint(0, 2))]
        edges += [Edge(x, names[0], 0.1) for x in extra]  # endpoints outside names join the graph
        assert order_and_tiers(names, edges) == reference_order_and_tiers(names, edges)


def test_order_and_tiers_refuses_a_cycle_as_networkx_does() -> None:
    edges = [Edge("A", "B", 0.5), Edge("B", "C", 0.5), Edge("C", "A", 0.5)]
    with pytest.raises(nx.NetworkXUnfeasible):
        reference_order_and_tiers(["A", "B", "C", "D"], edges)
    with pytest.raises(CycleError):
        order_and_tiers(["A", "B", "C", "D"], edges)

"""Wiring rules: where a round's graph comes from.

DyTopo (semantic matching) is the product; the others are the paper's comparison baselines (§4,
Appendix D) and share one signature so later topology methods slot in the same way. Every rule
returns a RoutingResult built from the same similarity matrix, so the graph pane, sessions and what-if
treat them alike. A graph that keeps cycles (acyclic=False, e.g. broadcast) runs with barrier
semantics: all workers in one tier, messages delivered into the next round's memory.
"""

from __future__ import annotations

import itertools
import random
from typing import Protocol

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.routing.dytopo import KIND_FIXED, Edge, EdgeSet, RoutingResult, order_and_tiers, route_from_similarity


class WiringRule(Protocol):
    name: str

    def build(
        self, round_no: int, names: list[str], similarity: np.ndarray, tau: float, k_in: int, *, break_cycles: bool
    ) -> RoutingResult: ...


def _fixed_graph(
    names: list[str], similarity: np.ndarray, tau: float, k_in: int, pairs: list[tuple[str, str]], *, acyclic: bool
) -> RoutingResult:
    """A RoutingResult for a graph chosen without looking at the scores (the scores are still shown)."""
    index = {name: i for i, name in enumerate(names)}
    edges = [Edge(src, dst, float(similarity[index[dst]][index[src]]), KIND_FIXED) for src, dst in pairs]
    if acyclic:
        order, tiers = order_and_tiers(names, edges)
    else:
        order, tiers = sorted(names), [sorted(names)]
    return RoutingResult(
        names=list(names),
        tau=float(tau),
        k_in=int(k_in),
        similarity=[[float(x) for x in row] for row in np.asarray(similarity)],
        edges=sorted(edges, key=lambda e: (e.dst, -e.score, e.src)),
        order=order,
        tiers=tiers,
        paper_order=order,
        acyclic=acyclic,
    )


class DyTopoWiring:
    """Semantic matching of query and key descriptors against tau, capped at k_in (the paper)."""

    name = "dytopo"

    def build(
        self,
        round_no: int,
        names: list[str],
        similarity: np.ndarray,
        tau: float,
        k_in: int,
        *,
        break_cycles: bool,
        pinned: EdgeSet = frozenset(),
        cut: EdgeSet = frozenset(),
        silenced: frozenset[str] = frozenset(),
    ) -> RoutingResult:
        """``pinned``, ``cut``, ``silenced``: a person's steering (core.routing.dytopo's rules)."""
        return route_from_similarity(names, similarity, tau, k_in, break_cycles=break_cycles, pinned=pinned,
                                     cut=cut, silenced=silenced)


class RandomWiring:
    """Each round a random acyclic graph with as many edges as DyTopo chose for that round, so the
    comparison isolates *which* agents talk from *how many* messages flow."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def build(
        self, round_no: int, names: list[str], similarity: np.ndarray, tau: float, k_in: int, *, break_cycles: bool
    ) -> RoutingResult:
        count = len(route_from_similarity(names, similarity, tau, k_in, break_cycles=True).edges)
        rng = random.Random(f"{self.seed}:{round_no}")
        ranking = rng.sample(names, len(names))  # edges only go forward in a random order: no cycles
        candidates = [(ranking[i], ranking[j]) for i in range(len(ranking)) for j in range(i + 1, len(ranking))]
        return _fixed_graph(names, similarity, tau, k_in, rng.sample(candidates, count), acyclic=True)


class BroadcastWiring:
    """Every worker receives every other worker's message (a complete graph, barrier semantics)."""

    name = "broadcast"

    def build(
        self, round_no: int, names: list[str], similarity: np.ndarray, tau: float, k_in: int, *, break_cycles: bool
    ) -> RoutingResult:
        pairs = [(src, dst) for dst in names for src in names if src != dst]
        return _fixed_graph(names, similarity, tau, k_in, pairs, acyclic=False)


class ChainWiring:
    """A fixed pipeline in roster order: each worker hands on to the next (AgentScope-style)."""

    name = "chain"

    def build(
        self, round_no: int, names: list[str], similarity: np.ndarray, tau: float, k_in: int, *, break_cycles: bool
    ) -> RoutingResult:
        pairs = list(itertools.pairwise(names))
        return _fixed_graph(names, similarity, tau, k_in, pairs, acyclic=True)


class StarWiring:
    """Every other worker sends to one hub (the domain's answer role), which works last."""

    name = "star"

    def __init__(self, hub: str | None = None) -> None:
        self.hub = hub

    def build(
        self, round_no: int, names: list[str], similarity: np.ndarray, tau: float, k_in: int, *, break_cycles: bool
    ) -> RoutingResult:
        hub = self.hub if self.hub in names else names[0]
        pairs = [(src, hub) for src in names if src != hub]
        return _fixed_graph(names, similarity, tau, k_in, pairs, acyclic=True)


WIRINGS = ("dytopo", "random", "broadcast", "chain", "star")

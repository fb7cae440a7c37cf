"""Routing: descriptor embeddings in, a sparse ordered graph out. A pure function (docs/architecture.md, rule 4).

S[i][j] = cos(query_i, key_j). An edge j -> i (j provides for i) exists when S[i][j] >= tau and i != j.

Why ``>=`` and not the paper's ``>`` (eq. 6): the reference deployment builds ``A = (S >= tau)``, the
matrix view highlights cells "at or above tau", and an inclusive threshold means tau = 0 connects every
pair with non-negative similarity. With float scores the two differ only on exact ties.

Then: keep the k_in strongest inbound edges per agent (ties: lower source name first); break cycles by
repeatedly removing the lowest-weight edge of a cycle found (ties: the alphabetically last edge goes);
order with Kahn's algorithm taking the alphabetically first ready node; tiers are the topological
generations. The paper's order for a cyclic graph (greedy minimum restricted in-degree, eq. 10–11) is
computed on the graph before cycle breaking, for the single-pass protocol.

A person steering the run (core.runtime.steering) adds three sets, and these rules hold:
* a pinned edge src→dst is in the graph whatever its score (kind "pinned"); it counts toward dst's k_in,
  so each pin takes the place of dst's weakest routed edge (pins beyond k_in are all kept, and then
  nothing is routed into dst); cycle breaking never removes a pin (only routed edges of the cycle);
* a cut edge is never in the graph; every cut pair is listed in ``removed`` with reason "cut by user";
* a silenced agent has no edge in or out (listed in ``inactive``; its routed edges at or above tau are
  removed with reason "silenced", pins to or from it wait until it is restored);
* a pin to oneself, or a pin that closes a cycle of pins when the graph must be acyclic, is refused
  before it gets here (check_pin: one line naming the cycle).
"""

from __future__ import annotations

import heapq
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from itertools import pairwise
from typing import Any

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)


class RemovalReason(StrEnum):
    """Why an edge is not in the graph although its pair was scored (kept in ``RoutingResult.removed``)."""

    K_IN = "k_in"  # past the target's k_in strongest inbound matches
    CYCLE = "cycle"  # it would have closed a cycle (the graph is made acyclic)
    CUT = "cut by user"  # a steering cut (core.runtime.steering)
    SILENCED = "silenced"  # an edge of an agent the user silenced
    MASKED = "masked"  # TopoDIM (arXiv 2601.10120) eq. 7: it would have closed a conditioned/debate cycle
    PRUNED = "pruned"  # TopoDIM eq. 8: outside the top (1 - alpha) by probability


# Edge kinds: what an edge means in the method that drew it. DyTopo's are "routed"; the other methods
# draw typed graphs in the same shape (score is then a probability or a weight).
KIND_ROUTED = "routed"  # DyTopo: a semantic match above tau
KIND_FIXED = "fixed"  # a baseline's graph chosen without the scores
KIND_CONDITIONED = "conditioned"  # TopoDIM: the target answers with the source's output
KIND_FEEDBACK = "feedback"  # TopoDIM: the target critiques the source, which revises
KIND_DEBATE = "debate"  # TopoDIM: the target challenges the source, which defends
KIND_REF = "ref"  # TopoWeaver-R1: an agent reads an earlier step's agent
KIND_CROSS = "cross"  # TopoWeaver-R1: an agent reads its own output from the previous turn
KIND_HANDOFF = "handoff"  # DMoA: the previous step's responses reach this step's agents (weight alpha)
KIND_PINNED = "pinned"  # DyTopo steered: the user keeps this edge whatever its score
EDGE_KINDS = (
    KIND_ROUTED,
    KIND_PINNED,
    KIND_FIXED,
    KIND_CONDITIONED,
    KIND_FEEDBACK,
    KIND_DEBATE,
    KIND_REF,
    KIND_CROSS,
    KIND_HANDOFF,
)


# How each kind is drawn in text (the graph pane, headless progress): the line's two halves around the
# weight, e.g. "Tester ┄0.40┄↺ Developer". DOT and Mermaid exports style them to match.
EDGE_GLYPHS: dict[str, tuple[str, str]] = {
    KIND_ROUTED: ("─", "─▶"),
    KIND_FIXED: ("─", "─▶"),
    KIND_PINNED: ("━", "━▶"),
    KIND_CONDITIONED: ("─", "─▶"),
    KIND_FEEDBACK: ("┄", "┄↺"),
    KIND_DEBATE: ("═", "═⇄"),
    KIND_REF: ("─", "─▶"),
    KIND_CROSS: ("┄", "┄▶"),
    KIND_HANDOFF: ("─α", "─▶"),
}


def edge_glyphs(kind: str) -> tuple[str, str]:
    return EDGE_GLYPHS.get(kind, EDGE_GLYPHS[KIND_ROUTED])


@dataclass(frozen=True)
class Edge:
    src: str  # provider
    dst: str  # consumer
    score: float  # similarity (DyTopo), probability (TopoDIM) or weight (DMoA's alpha)
    kind: str = KIND_ROUTED


def edge_label(e: Edge | RemovedEdge) -> str:
    """The score of a routed edge; the kind of a typed one (with its weight when that means something)."""
    if e.kind in (KIND_ROUTED, KIND_FIXED, KIND_PINNED):
        return f"{e.score:.2f}"
    if e.kind in (KIND_REF, KIND_CROSS):
        return e.kind
    return f"{e.kind} {e.score:.2f}"


@dataclass(frozen=True)
class RemovedEdge:
    src: str
    dst: str
    score: float
    reason: RemovalReason
    kind: str = KIND_ROUTED


@dataclass(frozen=True)
class RoutingResult:
    names: list[str]
    tau: float
    k_in: int
    similarity: list[list[float]]  # similarity[i][j] = cos(query_i, key_j), names order
    edges: list[Edge]  # kept edges, sorted by (dst, -score, src)
    removed: list[RemovedEdge] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # execution order
    tiers: list[list[str]] = field(default_factory=list)  # topological generations
    paper_order: list[str] = field(default_factory=list)  # eq. 10–11 on the pre-cycle-breaking graph
    acyclic: bool = True  # False when cycles were kept (single-pass protocol)
    inactive: list[str] = field(default_factory=list)  # agents in names that do not run in this graph

    @property
    def kinds(self) -> dict[str, int]:
        """Kept edges per kind, in EDGE_KINDS order (only kinds present)."""
        counts = {kind: sum(1 for e in self.edges if e.kind == kind) for kind in EDGE_KINDS}
        extra = {e.kind for e in self.edges} - set(EDGE_KINDS)
        counts.update({kind: sum(1 for e in self.edges if e.kind == kind) for kind in sorted(extra)})
        return {kind: n for kind, n in counts.items() if n}

    @property
    def typed(self) -> bool:
        """True when the graph carries a method's typed edges rather than DyTopo's routed ones (a pin is a
        routed edge the user kept; agents a user silenced in a routed graph do not make it typed)."""
        routed = (KIND_ROUTED, KIND_FIXED, KIND_PINNED)
        if any(e.kind not in routed for e in self.edges):
            return True
        return bool(self.inactive) and not any(e.kind in routed for e in self.edges) and not self.removed

    @property
    def possible_edges(self) -> int:
        n = len(self.names)
        return n * (n - 1)

    @property
    def pinned_pairs(self) -> frozenset[tuple[str, str]]:
        """(src, dst) of the edges a person pinned (core.runtime.steering): kept whatever their score."""
        return frozenset((e.src, e.dst) for e in self.edges if e.kind == KIND_PINNED)

    @property
    def cut_pairs(self) -> frozenset[tuple[str, str]]:
        """(src, dst) of the edges a person cut: in no graph while the cut holds."""
        return frozenset((r.src, r.dst) for r in self.removed if r.reason == RemovalReason.CUT)

    def in_edges(self, agent: str) -> list[Edge]:
        """Edges into agent, strongest first (the paper's recipient order, §3.4)."""
        return sorted((e for e in self.edges if e.dst == agent), key=lambda e: (-e.score, e.src))

    def tier_of(self, agent: str) -> int:
        for index, tier in enumerate(self.tiers):
            if agent in tier:
                return index
        return -1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoutingResult:
        return cls(
            names=list(data["names"]),
            tau=float(data["tau"]),
            k_in=int(data["k_in"]),
            similarity=[[float(x) for x in row] for row in data["similarity"]],
            edges=[Edge(e["src"], e["dst"], float(e["score"]), e.get("kind", KIND_ROUTED)) for e in data["edges"]],
            removed=[
                RemovedEdge(e["src"], e["dst"], float(e["score"]), RemovalReason(e["reason"]),
                            e.get("kind", KIND_ROUTED))
                for e in data["removed"]
            ],
            order=list(data["order"]),
            tiers=[list(t) for t in data["tiers"]],
            paper_order=list(data["paper_order"]),
            acyclic=bool(data.get("acyclic", True)),
            inactive=list(data.get("inactive", [])),
        )


def similarity_matrix(query: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Cosine similarities of L2-normalised rows: out[i][j] = cos(query_i, key_j)."""
    q = np.asarray(query, dtype=np.float64)
    k = np.asarray(key, dtype=np.float64)
    q = q / np.clip(np.linalg.norm(q, axis=1, keepdims=True), 1e-12, None)
    k = k / np.clip(np.linalg.norm(k, axis=1, keepdims=True), 1e-12, None)
    cosine: np.ndarray = np.clip(q @ k.T, -1.0, 1.0)
    return cosine


def paper_cyclic_order(names: list[str], edges: list[Edge]) -> list[str]:
    """Greedy order of eq. 10–11: repeatedly place the unplaced agent with the fewest in-edges from
    unplaced agents; ties alphabetical. Well defined even when the graph has cycles."""
    # In-degrees from unplaced agents, updated as agents are placed: O(N^2 + E), not O(N^2 * E).
    degree = dict.fromkeys(names, 0)
    out: dict[str, list[str]] = {name: [] for name in names}
    for e in edges:
        if e.src in degree and e.dst in degree:
            degree[e.dst] += 1
            out[e.src].append(e.dst)
    unplaced = set(names)
    order: list[str] = []
    while unplaced:
        chosen = min(unplaced, key=lambda agent: (degree[agent], agent))
        order.append(chosen)
        unplaced.remove(chosen)
        for dst in out[chosen]:
            degree[dst] -= 1
    return order


class CycleError(ValueError):
    """order_and_tiers was given a graph with a cycle."""


EdgeSet = frozenset[tuple[str, str]]
_NONE: EdgeSet = frozenset()


def _select_edges(
    names: list[str],
    rows: list[list[float]],
    tau: float,
    k_in: int,
    pinned: EdgeSet = _NONE,
    cut: EdgeSet = _NONE,
    silenced: frozenset[str] = frozenset(),
) -> tuple[list[Edge], list[RemovedEdge]]:
    """The threshold (eq. 6, inclusive) and the k_in strongest inbound edges per agent (ties: lower
    source name first); a user's pins take routed places, cuts and silenced agents none (module doc)."""
    kept: list[Edge] = []
    removed: list[RemovedEdge] = []
    steered = bool(pinned or cut or silenced)
    index = {name: j for j, name in enumerate(names)}
    for i, dst in enumerate(names):
        row = rows[i]
        if steered:
            pins = sorted((index[s] for s, d in pinned if d == dst and s in index and s != dst
                           and s not in silenced and dst not in silenced), key=lambda j: (-row[j], names[j]))
            kept.extend(Edge(names[j], dst, row[j], KIND_PINNED) for j in pins)
            removed.extend(RemovedEdge(names[j], dst, row[j], RemovalReason.CUT) for j in range(len(names))
                           if (names[j], dst) in cut and j != i)
            gone = {j for j in range(len(names)) if (names[j], dst) in cut} | set(pins)
            silent = [j for j in range(len(names)) if j != i and j not in gone and row[j] >= tau
                      and (dst in silenced or names[j] in silenced)]
            removed.extend(RemovedEdge(names[j], dst, row[j], RemovalReason.SILENCED) for j in silent)
            gone |= set(silent)
            slots = max(0, k_in - len(pins))
        else:
            gone, slots = set(), k_in
        # Sort source indices, not Edge objects: most candidates are cut by k_in and never need an Edge.
        # The sort is stable on the same keys as before, so equal keys keep their input order.
        ranked = sorted((j for j in range(len(names)) if j != i and row[j] >= tau and j not in gone),
                        key=lambda j: (-row[j], names[j]))
        kept.extend(Edge(names[j], dst, row[j]) for j in ranked[:slots])
        removed.extend(RemovedEdge(names[j], dst, row[j], RemovalReason.K_IN) for j in ranked[slots:])
    return kept, removed


def _first_cycle(succ: dict[str, dict[str, float]]) -> list[tuple[str, str]]:
    """The cycle networkx's ``find_cycle(G)`` returns for the DiGraph with these adjacency dicts (nodes and
    successors in insertion order), or [] when there is none.

    A port of its traversal (``edge_dfs`` from each node in order, skipping nodes explored from earlier
    starts): that is a depth-first search in which the first edge into a node on the current path closes
    the cycle. An edge into a node already finished cannot close one (networkx re-enters it and finds its
    edge iterator exhausted), so finished nodes are skipped outright. The cycle runs from that node along
    the path and back, as networkx returns it.
    """
    finished: set[str] = set()
    for start in succ:
        if start in finished:
            continue
        path = [start]
        on_path = {start}
        pending = [iter(succ[start])]  # each path node's unread successors, as edge_dfs keeps them
        while pending:
            for head in pending[-1]:
                if head in on_path:
                    return list(pairwise([*path[path.index(head) :], head]))
                if head not in finished:
                    path.append(head)
                    on_path.add(head)
                    pending.append(iter(succ[head]))
                    break
            else:  # every successor read: backtrack
                node = path.pop()
                on_path.remove(node)
                finished.add(node)
                pending.pop()
    return []


def _break_cycles(names: list[str], edges: list[Edge]) -> tuple[list[Edge], list[RemovedEdge]]:
    """DyTopo's acyclic graph: while a cycle is found, remove its lowest-weight edge (ties: the
    alphabetically last (src, dst)). The cycle is the one networkx's ``find_cycle`` finds on a DiGraph
    with the nodes added in sorted order and the edges sorted by (src, dst);
    tests/core/routing/test_routing_equivalence.py checks the two agree."""
    # Plain dicts in the DiGraph's insertion order: successors iterate as its adjacency would, and a
    # repeated (src, dst) keeps its first position with the last score, as add_edge does.
    succ: dict[str, dict[str, float]] = {name: {} for name in sorted(names)}
    for e in sorted(edges, key=lambda e: (e.src, e.dst)):
        succ.setdefault(e.src, {})[e.dst] = e.score
        succ.setdefault(e.dst, {})
    pins = {(e.src, e.dst) for e in edges if e.kind == KIND_PINNED}
    removed: list[RemovedEdge] = []
    # Each search starts over, as find_cycle did: which cycle comes next depends on the whole graph.
    while cycle := _first_cycle(succ):
        # A user's pin is never the one removed (pins alone are acyclic: check_pin); of the others the
        # lowest weight goes; among equal weights the alphabetically last (src, dst) goes, so the
        # choice never depends on where the search happened to enter the cycle.
        candidates = [(u, v) for u, v in cycle if (u, v) not in pins] or cycle
        lowest = min(succ[u][v] for u, v in candidates)
        src, dst = max((u, v) for u, v in candidates if succ[u][v] == lowest)
        removed.append(RemovedEdge(src, dst, succ[src][dst], RemovalReason.CYCLE))
        del succ[src][dst]
    remaining = [e for e in edges if e.dst in succ[e.src]]
    return remaining, removed


def _graph(names: list[str], edges: list[Edge]) -> dict[str, set[str]]:
    """Successor sets of the DiGraph built from names and then edges (endpoints outside names added)."""
    succ: dict[str, set[str]] = {name: set() for name in names}
    for e in edges:
        succ.setdefault(e.src, set()).add(e.dst)
        succ.setdefault(e.dst, set())
    return succ


def _in_degrees(succ: dict[str, set[str]]) -> dict[str, int]:
    degree = dict.fromkeys(succ, 0)
    for heads in succ.values():
        for head in heads:
            degree[head] += 1
    return degree


def _is_acyclic(names: list[str], edges: list[Edge]) -> bool:
    """networkx's is_directed_acyclic_graph on the graph of names and edges: Kahn's algorithm places
    every node exactly when there is no cycle."""
    succ = _graph(names, edges)
    degree = _in_degrees(succ)
    ready = [node for node, d in degree.items() if d == 0]
    placed = 0
    while ready:
        node = ready.pop()
        placed += 1
        for head in succ[node]:
            degree[head] -= 1
            if degree[head] == 0:
                ready.append(head)
    return placed == len(succ)


def order_and_tiers(names: list[str], edges: list[Edge]) -> tuple[list[str], list[list[str]]]:
    """Execution order of an acyclic graph (Kahn, alphabetically first ready node) and its tiers
    (topological generations, each sorted). The same as networkx's lexicographical_topological_sort and
    topological_generations; a cycle is a CycleError (a ValueError)."""
    succ = _graph(names, edges)
    degree = _in_degrees(succ)
    ready = [node for node, d in degree.items() if d == 0]
    heapq.heapify(ready)
    order: list[str] = []
    # A node's generation is its longest path from a source: it is ready once its last parent is placed.
    generation = dict.fromkeys(ready, 0)
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for head in succ[node]:
            generation[head] = max(generation.get(head, 0), generation[node] + 1)
            degree[head] -= 1
            if degree[head] == 0:
                heapq.heappush(ready, head)
    if len(order) < len(succ):
        raise CycleError("the graph has a cycle: it has no execution order")
    tiers: list[list[str]] = [[] for _ in range(max(generation.values(), default=-1) + 1)]
    for node in order:
        tiers[generation[node]].append(node)
    return order, [sorted(tier) for tier in tiers]


def _sorted_edges(edges: list[Edge]) -> list[Edge]:
    return sorted(edges, key=lambda e: (e.dst, -e.score, e.src))


def route(
    names: list[str],
    query_embeddings: np.ndarray | list[list[float]],
    key_embeddings: np.ndarray | list[list[float]],
    tau: float,
    k_in: int,
    *,
    break_cycles: bool = True,
) -> RoutingResult:
    """Build one round's graph. With break_cycles=False (paper's single-pass protocol, where a barrier
    makes cycles harmless) cycles are kept and the order is the paper's greedy order."""
    if len(set(names)) != len(names):
        raise ValueError("agent names must be unique")
    sim = similarity_matrix(np.asarray(query_embeddings), np.asarray(key_embeddings))
    if sim.shape != (len(names), len(names)):
        raise ValueError(f"expected {len(names)} query and key embeddings, got matrix {sim.shape}")
    return route_from_similarity(names, sim, tau, k_in, break_cycles=break_cycles)


def route_from_similarity(
    names: list[str],
    sim: np.ndarray | list[list[float]],
    tau: float,
    k_in: int,
    *,
    break_cycles: bool = True,
    pinned: EdgeSet = _NONE,
    cut: EdgeSet = _NONE,
    silenced: frozenset[str] = frozenset(),
) -> RoutingResult:
    """The same as route(), from a similarity matrix already computed (what-if re-routing). ``pinned``,
    ``cut`` and ``silenced``: a person's steering (module doc for the rules)."""
    sim = np.asarray(sim, dtype=np.float64)
    if sim.shape != (len(names), len(names)):
        raise ValueError(f"similarity matrix is {sim.shape}, expected {len(names)}x{len(names)}")
    if k_in < 1:
        raise ValueError("k_in must be at least 1")
    rows = sim.tolist()  # plain floats: indexing a numpy matrix per element is slow
    selected, removed = _select_edges(names, rows, tau, k_in, pinned, cut, silenced)
    running = [name for name in names if name not in silenced]  # a silenced agent has no place in the order
    paper_order = paper_cyclic_order(running, selected)
    if break_cycles:
        kept, cycle_removed = _break_cycles(running, selected)
        removed = removed + cycle_removed
        order, tiers = order_and_tiers(running, kept)
        acyclic = True
    else:
        kept = selected
        order = paper_order
        tiers = [[name] for name in order]
        acyclic = _is_acyclic(running, kept)
    return RoutingResult(
        names=list(names),
        tau=float(tau),
        k_in=int(k_in),
        similarity=rows,
        edges=_sorted_edges(kept),
        removed=sorted(removed, key=lambda e: (e.reason, e.dst, -e.score, e.src)),
        order=order,
        tiers=tiers,
        paper_order=paper_order,
        acyclic=acyclic,
        inactive=[name for name in names if name in silenced],
    )


def pin_cycle(pins: EdgeSet, src: str, dst: str) -> list[str]:
    """The cycle that pinning src→dst would close among the pins already kept, as the agents along it
    (``[dst, ..., src, dst]``), or [] when it closes none: a path of pins from dst back to src."""
    succ: dict[str, list[str]] = {}
    for a, b in sorted(pins):
        succ.setdefault(a, []).append(b)
    path = [dst]
    seen = {dst}

    def walk(node: str) -> bool:
        if node == src:
            return True
        for nxt in succ.get(node, []):
            if nxt not in seen:
                seen.add(nxt)
                path.append(nxt)
                if walk(nxt):
                    return True
                path.pop()
        return False

    return [*path, dst] if walk(dst) else []


def check_pin(pins: EdgeSet, src: str, dst: str, *, acyclic: bool) -> str:
    """The one-line refusal of pinning src→dst, or "": a pin to oneself; a pin closing a cycle of pins in
    a graph that must be acyclic (DyTopo's phased work runs in tiers; its cycle breaking never removes a
    pin, so a cycle of pins could not be broken)."""
    if src == dst:
        return f"cannot pin {src}→{dst}: an agent does not send to itself"
    if acyclic:
        cycle = pin_cycle(pins, src, dst)
        if cycle:
            return (f"cannot pin {src}→{dst}: it would close the cycle {'→'.join(cycle)} of pinned edges "
                    "(the graph must stay acyclic; release one first)")
    return ""


def edge_diff(before: RoutingResult, after: RoutingResult) -> tuple[list[Edge], list[Edge]]:
    """(added, removed) kept edges going from one routing to another, by (src, dst)."""
    old = {(e.src, e.dst): e for e in before.edges}
    new = {(e.src, e.dst): e for e in after.edges}
    added = [new[k] for k in sorted(new.keys() - old.keys())]
    dropped = [old[k] for k in sorted(old.keys() - new.keys())]
    return added, dropped

"""TopoDIM's typed graphs (Sun et al., "TopoDIM: One-shot Topology Generation of Diverse Interaction
Modes"): pure functions from per-pair relation distributions to a scheduled, typed graph.

A relation per ordered pair of agents is one of R' = {none, conditioned, feedback, debate} (§3.1).
The decoder visits the pairs in a fixed order (eq. 6), masks conditioned and debate relations that
would close a cycle (eq. 7, App. B), keeps the top (1 - alpha) share of the sampled edges by
probability (eq. 8) and drops the agents left without an edge (eq. 9). The schedule is the paper's
breadth-first traversal (§3.2 "Execution order", App. B), and eq. 10 scores the edge-type diversity.

Nothing here calls a model or knows where the probabilities come from (random, a Manager-written prior
or the policy network, core.methods.topodim.method).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.routing.dytopo import (
    KIND_CONDITIONED,
    KIND_DEBATE,
    KIND_FEEDBACK,
    Edge,
    RemovalReason,
    RemovedEdge,
    RoutingResult,
)

NONE = "none"
RELATIONS = (NONE, KIND_CONDITIONED, KIND_FEEDBACK, KIND_DEBATE)  # R' in a fixed order; index 0 is "no edge"
EDGE_TYPES = RELATIONS[1:]  # R
ACYCLIC_TYPES = (KIND_CONDITIONED, KIND_DEBATE)  # App. B: only these must stay acyclic
SHORT = {KIND_CONDITIONED: "cond", KIND_FEEDBACK: "fbk", KIND_DEBATE: "dbt", NONE: "∅"}


class CallMode(StrEnum):
    """What an agent is asked to do in one call (§3.1 ❶–❸, the case study's labels, App. G)."""

    SOLUTION = "solution"  # answer the task (with conditioned inputs and debates as context)
    EVALUATE = "evaluate"  # feedback edge: the target reviews the source's answer
    REVISE = "revise"  # feedback edge: the source answers again with that review
    CHALLENGE = "challenge"  # debate edge: the target challenges the source's answer
    DEFEND = "defend"  # debate edge: the source defends (or corrects) its answer
    FINAL = "final"  # the decision-maker reads every kept agent and writes the answer


MODES = tuple(CallMode)


@dataclass(frozen=True)
class PairDecision:
    """The decoder's choice for one ordered pair (src -> dst)."""

    src: str
    dst: str
    relation: str  # one of RELATIONS
    p: float  # p(r_ij) ⊙ M_ij of the chosen relation (eq. 7): its confidence score for eq. 8
    dist: tuple[float, ...]  # p(r_ij) over RELATIONS (eq. 6, allowed types only), before the mask
    masked: str = ""  # a relation first drawn, then removed by the acyclic mask (eq. 7)
    masked_p: float = 0.0  # its probability
    mask: tuple[bool, ...] = (True, True, True, True)  # which RELATIONS the mask left for this pair
    position: int = 0  # place in the decoding order
    rank: float = 0.0  # a seeded uniform draw: breaks ties between equal scores in eq. 8 without bias


@dataclass(frozen=True)
class TypedEdge:
    src: str
    dst: str
    kind: str  # conditioned | feedback | debate
    p: float
    position: int = 0  # decoding order
    rank: float = 0.0  # ties in eq. 8 go to the lower rank (then the earlier pair)


@dataclass(frozen=True)
class CallStep:
    """One call of the schedule: ``index`` of ``total`` (the case study's "3/9")."""

    index: int
    total: int
    agent: str
    mode: CallMode
    partner: str = ""  # the other agent of a feedback/debate step; conditioned inputs of a solution
    kind: str = ""  # the edge type that caused the call ("" for a plain solution and the final)


@dataclass
class TypedGraph:
    names: list[str]
    decisions: list[PairDecision]
    kept: list[TypedEdge]
    pruned: list[TypedEdge]
    masked: list[TypedEdge]
    active: list[str]  # V_final (eq. 9), in node order
    dropped: list[str]  # agents without a kept edge: they do not run
    alpha: float
    fallback: bool = False  # no edge survived: every agent answers alone
    ignored: list[str] = field(default_factory=list)  # proposals that could not be used, and why

    @property
    def sampled(self) -> list[TypedEdge]:
        return sorted([*self.kept, *self.pruned], key=lambda e: e.position)


def pair_order(n: int) -> list[tuple[int, int]]:
    """The decoding order over every ordered pair: eq. 6's (j = 2..N, i < j), each pair (i, j) followed
    by its reverse (j, i), so an edge may point either way and the mask (eq. 7) decides."""
    order: list[tuple[int, int]] = []
    for j in range(1, n):
        for i in range(j):
            order += [(i, j), (j, i)]
    return order


def reaches(adjacency: dict[int, set[int]], start: int, goal: int) -> bool:
    """Is there a directed path start ⇝ goal?"""
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        for nxt in adjacency.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def acyclic_allowed(adjacency: dict[int, set[int]], i: int, j: int) -> bool:
    """M_ij of eq. 7: may a conditioned/debate edge i -> j be added to the conditioned/debate edges so far?
    Only when no path j ⇝ i exists (eq. 7 and App. B say a path v_i ⇝ v_j;
    our reading, docs/methods.md: the path that would close a cycle)."""
    return not reaches(adjacency, j, i)


def restrict(dist: Sequence[float], mask: Sequence[bool]) -> tuple[float, ...]:
    """p ⊙ M, renormalised (eq. 7). When nothing is left, "no edge" gets all the mass."""
    values = [max(0.0, float(p)) if ok else 0.0 for p, ok in zip(dist, mask, strict=True)]
    total = sum(values)
    if total <= 0.0 or not math.isfinite(total):
        return tuple(1.0 if r == NONE else 0.0 for r in RELATIONS)
    return tuple(v / total for v in values)


def inverse_transform(dist: Sequence[float], u: float) -> int:
    """Inverse transform sampling (§3.2, Alg. 1 l.10): r = min{r : F(r) >= u}, F the cumulative sum."""
    cumulative = 0.0
    last = 0
    for index, p in enumerate(dist):
        if p <= 0.0:
            continue
        cumulative += p
        last = index
        if cumulative >= u:
            return index
    return last  # rounding left F(last) a hair below u


def type_mask(allowed: Collection[str]) -> tuple[bool, ...]:
    """The relations a run may draw: "no edge" always, plus the allowed edge types (Fig. 5a ablation)."""
    return tuple(r == NONE or r in allowed for r in RELATIONS)


def decode(
    names: Sequence[str],
    base: Callable[[int, int], Sequence[float]],
    allowed: Collection[str],
    rng: np.random.Generator,
) -> list[PairDecision]:
    """Sample a relation for every ordered pair in pair_order (eq. 6), under the mask (eq. 7).

    ``base(i, j)`` is p(r_ij) over RELATIONS before any mask. Types outside ``allowed`` are removed
    first. A draw is made from that distribution; when it lands on a conditioned/debate relation the
    mask forbids, that draw is recorded as masked and a second draw is made from the masked,
    renormalised distribution. The result is distributed exactly as p ⊙ M / Σ(p ⊙ M) (eq. 7 with
    renormalisation), and the masked draws can be shown. An edge's score for eq. 8 is p ⊙ M at its
    relation (not renormalised: a pair that lost options to the mask does not gain confidence)."""
    allowed_mask = type_mask(allowed)
    adjacency: dict[int, set[int]] = {}
    decisions: list[PairDecision] = []
    for position, (i, j) in enumerate(pair_order(len(names))):
        before = restrict(base(i, j), allowed_mask)
        open_ = acyclic_allowed(adjacency, i, j)
        mask = tuple(ok and (open_ or r not in ACYCLIC_TYPES) for r, ok in zip(RELATIONS, allowed_mask, strict=True))
        after = restrict(before, mask)
        rank = float(rng.random())
        choice = inverse_transform(before, float(rng.random()))
        masked, masked_p = "", 0.0
        if not mask[choice]:
            masked, masked_p = RELATIONS[choice], before[choice]
            choice = inverse_transform(after, float(rng.random()))
        relation = RELATIONS[choice]
        if relation in ACYCLIC_TYPES:
            adjacency.setdefault(i, set()).add(j)
        decisions.append(
            PairDecision(names[i], names[j], relation, before[choice], before, masked, masked_p, mask, position, rank)
        )
    return decisions


def proposal_decisions(
    names: Sequence[str],
    proposals: Sequence[tuple[str, str, str, float]],
    allowed: Collection[str],
) -> tuple[list[PairDecision], list[str]]:
    """A proposed typed graph (src, dst, type, confidence) as decisions, under the same rules.

    Proposals are taken by confidence (highest first, ties in decoding order), so when two would close
    a conditioned/debate cycle the less confident one is masked (eq. 7); a masked pair may still take a
    later proposal of another type, as the decoder redraws. Unknown agents, self-loops, types not
    allowed and a second type for a pair that has one are ignored, each with a reason."""
    index = {name: i for i, name in enumerate(names)}
    order = {pair: k for k, pair in enumerate(pair_order(len(names)))}
    ignored: list[str] = []
    usable: list[tuple[int, int, str, float]] = []
    for src, dst, kind, confidence in proposals:
        if src not in index or dst not in index:
            unknown = src if src not in index else dst
            ignored.append(f"{src}->{dst}: unknown agent {unknown!r}")
        elif src == dst:
            ignored.append(f"{src}->{dst}: an agent cannot link to itself")
        elif kind not in EDGE_TYPES:
            ignored.append(f"{src}->{dst}: unknown type {kind!r}")
        elif kind not in allowed:
            ignored.append(f"{src}->{dst}: type {kind} is not allowed in this run")
        else:
            usable.append((index[src], index[dst], kind, min(1.0, max(0.0, float(confidence)))))
    usable.sort(key=lambda p: (-p[3], order[(p[0], p[1])]))
    adjacency: dict[int, set[int]] = {}
    decided: dict[tuple[int, int], PairDecision] = {}
    allowed_mask = type_mask(allowed)
    for i, j, kind, confidence in usable:
        earlier = decided.get((i, j))
        if earlier is not None and earlier.relation != NONE:
            ignored.append(f"{names[i]}->{names[j]}: the pair was already given a type")
            continue
        k = RELATIONS.index(kind)
        dist = tuple(confidence if n == k else (1.0 - confidence if n == 0 else 0.0) for n in range(len(RELATIONS)))
        if kind in ACYCLIC_TYPES and not acyclic_allowed(adjacency, i, j):
            if earlier is None:  # the pair's most confident proposal is the one shown as masked
                mask = tuple(ok and r not in ACYCLIC_TYPES for r, ok in zip(RELATIONS, allowed_mask, strict=True))
                decided[(i, j)] = PairDecision(
                    names[i], names[j], NONE, 1.0 - confidence, dist, kind, confidence, mask, order[(i, j)]
                )
            continue
        if kind in ACYCLIC_TYPES:
            adjacency.setdefault(i, set()).add(j)
        masked, masked_p, mask = ("", 0.0, allowed_mask) if earlier is None else (
            earlier.masked, earlier.masked_p, earlier.mask)
        # a pair whose first choice was masked falls back to its next proposal, as the decoder redraws
        decided[(i, j)] = PairDecision(
            names[i], names[j], kind, confidence, dist, masked, masked_p, mask, order[(i, j)]
        )
    return sorted(decided.values(), key=lambda d: d.position), ignored


def keep_count(sampled: int, alpha: float) -> int:
    """How many sampled edges eq. 8 keeps: the top (1 - alpha) share, rounded up
    (TopoDIM §3.2, eq. 8: TopK(·, 1 − α); the rounding is our reading, docs/methods.md)."""
    return min(sampled, max(0, math.ceil(round((1.0 - alpha) * sampled, 9))))


def sparsify(edges: Sequence[TypedEdge], alpha: float) -> tuple[list[TypedEdge], list[TypedEdge]]:
    """Eq. 8: E_final = TopK({p(r_ij)}, 1 - alpha). Ties go by the seeded rank, then the earlier pair.
    (kept, pruned)."""
    ranked = sorted(edges, key=lambda e: (-e.p, e.rank, e.position))
    count = keep_count(len(ranked), alpha)
    return ranked[:count], ranked[count:]


def active_agents(names: Sequence[str], edges: Sequence[TypedEdge]) -> list[str]:
    """Eq. 9: V_final = {v | v is the head or tail of a kept edge}, in node order."""
    touched = {e.src for e in edges} | {e.dst for e in edges}
    return [name for name in names if name in touched]


def build_graph(
    names: Sequence[str], decisions: Sequence[PairDecision], alpha: float, ignored: Sequence[str] = ()
) -> TypedGraph:
    """Decisions -> the final typed graph: sparsification (eq. 8), node filtering (eq. 9), and the
    fallback when nothing is left (every agent answers alone, as the public code's direct answer)."""
    sampled = [TypedEdge(d.src, d.dst, d.relation, d.p, d.position, d.rank) for d in decisions if d.relation != NONE]
    masked = [TypedEdge(d.src, d.dst, d.masked, d.masked_p, d.position, d.rank) for d in decisions if d.masked]
    kept, pruned = sparsify(sampled, alpha)
    active = active_agents(names, kept)
    fallback = not kept
    if fallback:
        active = list(names)
    return TypedGraph(
        names=list(names),
        decisions=list(decisions),
        kept=kept,
        pruned=pruned,
        masked=masked,
        active=active,
        dropped=[n for n in names if n not in active],
        alpha=alpha,
        fallback=fallback,
        ignored=list(ignored),
    )


def histogram(edges: Sequence[TypedEdge]) -> dict[str, int]:
    return {kind: sum(1 for e in edges if e.kind == kind) for kind in EDGE_TYPES}


def r_div(edges: Sequence[TypedEdge]) -> float:
    """Eq. 10: R_div(G) = -Σ_r p(r) log p(r), p(r) = |E_r| / |E| (natural log; 0 for no edge)."""
    counts = [c for c in histogram(edges).values() if c]
    total = sum(counts)
    if not total:
        return 0.0
    return max(0.0, float(-sum((c / total) * math.log(c / total) for c in counts)))


def schedule(names: Sequence[str], graph: TypedGraph, decider: str) -> list[CallStep]:
    """The paper's execution order (§3.2, App. B) as a numbered call list.

    Breadth-first from the agents with no conditioned/debate in-edge; the next agent is always the
    ready one with the lowest node index (this reproduces the case study's 1/9..9/9 order, App. G).
    When an agent has answered, its outgoing feedback edges run at once (the target evaluates, the
    agent revises; feedback edges are not counted as in-degree and are used up), then its debate
    edges (the target challenges, the agent defends); the debate target answers later, with the
    debate as context. A decision-maker reads every kept agent at the end.
    Calls: |V_final| + 2 per feedback edge + 2 per debate edge + 1."""
    index = {name: i for i, name in enumerate(names)}
    edges = graph.kept
    blocking = [e for e in edges if e.kind in ACYCLIC_TYPES]
    indegree = {name: 0 for name in graph.active}
    for e in blocking:
        indegree[e.dst] += 1
    ready = [index[n] for n in graph.active if indegree[n] == 0]
    heapq.heapify(ready)
    visited: set[str] = set()
    steps: list[tuple[str, CallMode, str, str]] = []  # agent, mode, partner, kind

    def visit(agent: str) -> None:
        visited.add(agent)
        inputs = sorted((e.src for e in blocking if e.dst == agent), key=index.__getitem__)
        steps.append((agent, CallMode.SOLUTION, ", ".join(inputs), ""))
        outgoing = sorted((e for e in edges if e.src == agent), key=lambda e: index[e.dst])
        for e in outgoing:
            if e.kind == KIND_FEEDBACK:
                steps.append((e.dst, CallMode.EVALUATE, agent, KIND_FEEDBACK))
                steps.append((agent, CallMode.REVISE, e.dst, KIND_FEEDBACK))
        for e in outgoing:
            if e.kind == KIND_DEBATE:
                steps.append((e.dst, CallMode.CHALLENGE, agent, KIND_DEBATE))
                steps.append((agent, CallMode.DEFEND, e.dst, KIND_DEBATE))
        for e in outgoing:
            if e.kind in ACYCLIC_TYPES:
                indegree[e.dst] -= 1
                if indegree[e.dst] == 0:
                    heapq.heappush(ready, index[e.dst])

    while True:
        while ready:
            visit(names[heapq.heappop(ready)])
        left = [n for n in graph.active if n not in visited]
        if not left:
            break
        heapq.heappush(ready, index[left[0]])  # only if a cycle slipped through: never stall
    steps.append((decider, CallMode.FINAL, "all kept agents", ""))
    total = len(steps)
    return [CallStep(k + 1, total, agent, mode, partner, kind) for k, (agent, mode, partner, kind) in enumerate(steps)]


def to_routing(graph: TypedGraph, steps: Sequence[CallStep], tau: float, k_in: int) -> RoutingResult:
    """The one graph shape every method shares (core.routing.dytopo.RoutingResult): kept edges with their
    type and probability, masked and pruned edges with the reason, agents that do not run, the order
    and the tiers of the conditioned/debate DAG. ``similarity[dst][src]`` holds the probability of the
    relation drawn for src -> dst (0 when none). tau and k_in are the run's (TopoDIM does not use them)."""
    names = graph.names
    index = {name: i for i, name in enumerate(names)}
    similarity = [[0.0] * len(names) for _ in names]
    for d in graph.decisions:
        if d.relation != NONE:
            similarity[index[d.dst]][index[d.src]] = round(float(d.p), 6)
    order: list[str] = []
    for step in steps:
        if step.mode == CallMode.SOLUTION and step.agent not in order:
            order.append(step.agent)
    import networkx as nx  # here, not at the top: importing it cost every start-up ~0.2 s for this one call

    dag: nx.DiGraph[str] = nx.DiGraph()
    dag.add_nodes_from(graph.active)
    dag.add_edges_from((e.src, e.dst) for e in graph.kept if e.kind in ACYCLIC_TYPES)
    tiers = [sorted(gen, key=index.__getitem__) for gen in nx.topological_generations(dag)]
    whole: nx.DiGraph[str] = nx.DiGraph()
    whole.add_nodes_from(names)
    whole.add_edges_from((e.src, e.dst) for e in graph.kept)
    removed = [RemovedEdge(e.src, e.dst, round(e.p, 6), RemovalReason.MASKED, e.kind) for e in graph.masked]
    removed += [RemovedEdge(e.src, e.dst, round(e.p, 6), RemovalReason.PRUNED, e.kind) for e in graph.pruned]
    return RoutingResult(
        names=list(names),
        tau=float(tau),
        k_in=int(k_in),
        similarity=similarity,
        edges=[Edge(e.src, e.dst, round(e.p, 6), e.kind) for e in graph.kept],
        removed=removed,
        order=order,
        tiers=tiers,
        paper_order=list(order),
        acyclic=nx.is_directed_acyclic_graph(whole),
        inactive=list(graph.dropped),
    )

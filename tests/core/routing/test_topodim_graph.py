"""TopoDIM's typed graphs as pure functions: the mask (eq. 7), the sparsification (eq. 8), the node filter
(eq. 9), the schedule and its call count, the diversity reward (eq. 10)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from core.routing.topodim import (
    ACYCLIC_TYPES,
    EDGE_TYPES,
    NONE,
    RELATIONS,
    CallMode,
    PairDecision,
    TypedEdge,
    active_agents,
    build_graph,
    decode,
    histogram,
    inverse_transform,
    keep_count,
    pair_order,
    proposal_decisions,
    r_div,
    schedule,
    sparsify,
    to_routing,
)
from tests.support.topodim import expected_calls

NAMES = ["Developer", "Researcher", "Tester", "Designer", "BugFixer"]


def _acyclic_part(names: list[str], edges: list[tuple[str, str, str]]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    graph.add_edges_from((s, d) for s, d, kind in edges if kind in ACYCLIC_TYPES)
    return graph


def _random_base(seed: int) -> object:
    rng = np.random.default_rng(10_000 + seed)
    table = rng.dirichlet([0.5, 1.0, 1.0, 1.0], size=(len(NAMES), len(NAMES)))
    return lambda i, j: table[i][j].tolist()


@pytest.mark.parametrize("seed", range(300))
def test_mask_never_lets_a_conditioned_or_debate_cycle_through(seed: int) -> None:
    rng = np.random.default_rng(seed)
    allowed = [t for t in EDGE_TYPES if rng.random() < 0.8] or ["conditioned"]
    decisions = decode(NAMES, _random_base(seed), allowed, rng)
    sampled = [(d.src, d.dst, d.relation) for d in decisions if d.relation != NONE]
    assert nx.is_directed_acyclic_graph(_acyclic_part(NAMES, sampled))
    assert all(kind in allowed for _, _, kind in sampled)
    # every ordered pair is decided exactly once, in the fixed order
    assert [(d.src, d.dst) for d in decisions] == [(NAMES[i], NAMES[j]) for i, j in pair_order(len(NAMES))]
    for d in decisions:
        if d.masked:  # a draw the mask removed was one that would have closed a cycle
            assert d.masked in ACYCLIC_TYPES and d.relation not in ACYCLIC_TYPES
            assert not d.mask[RELATIONS.index(d.masked)]


def test_the_mask_does_work_and_feedback_may_close_loops() -> None:
    masked = feedback_loops = 0
    for seed in range(300):
        decisions = decode(NAMES, _random_base(seed), EDGE_TYPES, np.random.default_rng(seed))
        masked += sum(1 for d in decisions if d.masked)
        fb = nx.DiGraph([(d.src, d.dst) for d in decisions if d.relation == "feedback"])
        feedback_loops += not nx.is_directed_acyclic_graph(fb)
    assert masked > 50  # reverse pairs keep running into the mask
    assert feedback_loops > 0  # feedback edges are not constrained (App. B)


def test_masked_sampling_follows_the_renormalised_distribution() -> None:
    # Pair (0, 1) is always conditioned, so (1, 0) may only be none or feedback: p ⊙ M renormalised.
    base = {(0, 1): [0.0, 1.0, 0.0, 0.0], (1, 0): [0.1, 0.4, 0.2, 0.3]}
    counts = {r: 0 for r in RELATIONS}
    for seed in range(3000):
        decisions = decode(["A", "B"], lambda i, j: base[(i, j)], EDGE_TYPES, np.random.default_rng(seed))
        counts[decisions[1].relation] += 1
    assert counts["conditioned"] == counts["debate"] == 0
    assert counts["feedback"] / 3000 == pytest.approx(2 / 3, abs=0.03)
    assert counts["none"] / 3000 == pytest.approx(1 / 3, abs=0.03)


def test_inverse_transform_takes_the_first_cumulative_at_or_above_u() -> None:
    dist = [0.25, 0.25, 0.25, 0.25]
    assert inverse_transform(dist, 0.0) == 0
    assert inverse_transform(dist, 0.25) == 0
    assert inverse_transform(dist, 0.2501) == 1
    assert inverse_transform(dist, 0.99) == 3
    assert inverse_transform([0.0, 0.5, 0.0, 0.5], 0.1) == 1  # zero-probability relations are never drawn


def test_a_seed_repeats_its_graph() -> None:
    def draw(seed: int) -> list[str]:
        return [d.relation for d in decode(NAMES, _random_base(1), EDGE_TYPES, np.random.default_rng(seed))]

    assert draw(7) == draw(7)
    assert len({tuple(draw(s)) for s in range(10)}) > 1


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 0.7, 1.0])
@pytest.mark.parametrize("sampled", [0, 1, 3, 7, 10, 20])
def test_sparsification_keeps_the_top_one_minus_alpha_share(alpha: float, sampled: int) -> None:
    rng = np.random.default_rng(sampled)
    edges = [TypedEdge(f"a{k}", f"b{k}", "conditioned", float(rng.random()), k) for k in range(sampled)]
    kept, pruned = sparsify(edges, alpha)
    assert len(kept) == math.ceil(round((1 - alpha) * sampled, 9)) == keep_count(sampled, alpha)
    assert len(kept) + len(pruned) == sampled
    if kept and pruned:
        assert min(e.p for e in kept) >= max(e.p for e in pruned)


def test_sparsification_known_counts_and_ties() -> None:
    assert [keep_count(n, 0.7) for n in (1, 3, 7, 10, 20)] == [1, 1, 3, 3, 6]
    assert keep_count(10, 1.0) == 0 and keep_count(10, 0.0) == 10
    tied = [TypedEdge("a", "b", "feedback", 0.25, position=5, rank=0.9), TypedEdge("c", "d", "feedback", 0.25,
            position=9, rank=0.1)]
    kept, _ = sparsify(tied, 0.5)
    assert [(e.src, e.dst) for e in kept] == [("c", "d")]  # equal scores: the seeded rank decides


def _decision(src: str, dst: str, relation: str, p: float, position: int = 0) -> PairDecision:
    dist = tuple(p if r == relation else 0.0 for r in RELATIONS)
    return PairDecision(src, dst, relation, p, dist, position=position)


def test_eq9_drops_exactly_the_agents_without_a_kept_edge() -> None:
    decisions = [
        _decision("Developer", "Researcher", "conditioned", 0.9, 0),
        _decision("Tester", "Developer", "feedback", 0.8, 1),
        _decision("Designer", "Tester", "debate", 0.1, 2),  # pruned: Designer is left alone
        _decision("BugFixer", "Researcher", "none", 0.5, 3),
    ]
    graph = build_graph(NAMES, decisions, alpha=0.4)  # keeps ceil(0.6 * 3) = 2
    assert {(e.src, e.dst) for e in graph.kept} == {("Developer", "Researcher"), ("Tester", "Developer")}
    assert graph.active == ["Developer", "Researcher", "Tester"]
    assert graph.dropped == ["Designer", "BugFixer"]
    assert active_agents(NAMES, []) == []
    empty = build_graph(NAMES, decisions, alpha=1.0)
    assert empty.fallback and empty.active == NAMES and empty.dropped == []


# The paper's case study (App. G): AD -> BF conditioned, BF -> PE debate, PM -> AD feedback.
CASE = [
    ("Developer", "Researcher", "conditioned", 0.92),
    ("Researcher", "BugFixer", "debate", 0.88),
    ("Tester", "Developer", "feedback", 0.81),
]


def _graph(edges: list[tuple[str, str, str, float]], names: list[str] = NAMES) -> object:
    decisions = [_decision(s, d, k, p, n) for n, (s, d, k, p) in enumerate(edges)]
    return build_graph(names, decisions, alpha=0.0)


def test_schedule_of_the_case_study_is_the_papers_nine_calls() -> None:
    graph = _graph(CASE)
    steps = schedule(NAMES, graph, "Manager")
    assert [(s.agent, s.mode) for s in steps] == [
        ("Developer", "solution"),
        ("Researcher", "solution"),
        ("BugFixer", "challenge"),
        ("Researcher", "defend"),
        ("Tester", "solution"),
        ("Developer", "evaluate"),
        ("Tester", "revise"),
        ("BugFixer", "solution"),
        ("Manager", "final"),
    ]
    assert [s.index for s in steps] == list(range(1, 10)) and {s.total for s in steps} == {9}
    assert steps[1].partner == "Developer" and steps[7].partner == "Researcher"
    assert graph.dropped == ["Designer"] and expected_calls(graph) == 9


def test_schedule_runs_feedback_before_debate_and_counts_two_calls_each() -> None:
    edges = [
        ("Developer", "Tester", "feedback", 0.9),
        ("Developer", "Researcher", "feedback", 0.8),
        ("Developer", "Designer", "debate", 0.7),
        ("Designer", "BugFixer", "conditioned", 0.6),
        ("BugFixer", "Developer", "feedback", 0.5),  # feedback may point back: no in-degree
    ]
    graph = _graph(edges)
    steps = schedule(NAMES, graph, "Manager")
    assert [(s.agent, s.mode) for s in steps][:7] == [
        ("Developer", "solution"),
        ("Researcher", "evaluate"),  # targets in node order
        ("Developer", "revise"),
        ("Tester", "evaluate"),
        ("Developer", "revise"),
        ("Designer", "challenge"),
        ("Developer", "defend"),
    ]
    assert len(steps) == 5 + 2 * 3 + 2 * 1 + 1 == expected_calls(graph)
    assert steps[-1].mode == CallMode.FINAL


def test_schedule_without_edges_is_every_agent_then_the_decision() -> None:
    graph = build_graph(NAMES, [], alpha=0.7)
    steps = schedule(NAMES, graph, "Manager")
    assert [(s.agent, s.mode) for s in steps] == [(n, "solution") for n in NAMES] + [("Manager", "final")]


@pytest.mark.parametrize("seed", range(60))
def test_schedule_respects_dependencies_and_the_call_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    decisions = decode(NAMES, _random_base(seed), EDGE_TYPES, rng)
    graph = build_graph(NAMES, decisions, alpha=float(rng.choice([0.0, 0.3, 0.7])))
    steps = schedule(NAMES, graph, "Manager")
    assert len(steps) == expected_calls(graph)
    solved = [s.agent for s in steps if s.mode == "solution"]
    assert sorted(solved) == sorted(graph.active) and len(set(solved)) == len(solved)
    first = {agent: solved.index(agent) for agent in solved}
    for e in graph.kept:
        if e.kind in ACYCLIC_TYPES:
            assert first[e.src] < first[e.dst]
    for k, s in enumerate(steps):  # a feedback/debate exchange comes in pairs, the partner answering back
        if s.mode in ("evaluate", "challenge"):
            assert steps[k + 1].agent == s.partner and steps[k + 1].partner == s.agent


def test_r_div_is_the_entropy_of_the_edge_types() -> None:
    def edges(*kinds: str) -> list[TypedEdge]:
        return [TypedEdge("a", "b", k, 0.5) for k in kinds]

    assert r_div([]) == 0.0
    assert r_div(edges("feedback", "feedback")) == 0.0
    assert r_div(edges("conditioned", "feedback", "debate")) == pytest.approx(math.log(3))
    assert r_div(edges("conditioned", "conditioned", "debate", "debate")) == pytest.approx(math.log(2))
    assert histogram(edges("debate", "debate", "conditioned")) == {"conditioned": 1, "feedback": 0, "debate": 2}


def test_proposals_are_masked_by_confidence_and_bad_ones_ignored() -> None:
    proposals = [
        ("Developer", "Researcher", "conditioned", 0.9),
        ("Researcher", "Developer", "debate", 0.6),  # closes a cycle with the more confident edge: masked
        ("Researcher", "Developer", "feedback", 0.5),  # the same pair again: ignored
        ("Ghost", "Developer", "conditioned", 0.9),
        ("Tester", "Tester", "feedback", 0.9),
        ("Tester", "Designer", "telepathy", 0.9),
        ("Tester", "Designer", "debate", 0.9),  # not allowed in this run
    ]
    decisions, ignored = proposal_decisions(NAMES, proposals, ["conditioned", "feedback"])
    # debate is not allowed here: the reverse debate is ignored, and the reverse feedback is free to go
    assert [(d.src, d.dst, d.relation, d.masked) for d in decisions] == [
        ("Developer", "Researcher", "conditioned", ""),
        ("Researcher", "Developer", "feedback", ""),
    ]
    assert len(ignored) == 5 and any("Ghost" in i for i in ignored) and any("itself" in i for i in ignored)
    decisions, ignored = proposal_decisions(NAMES, proposals[:2], EDGE_TYPES)
    assert [(d.relation, d.masked) for d in decisions] == [("conditioned", ""), ("none", "debate")]
    # a masked pair takes its next proposal (as the decoder redraws); a third type for it is ignored
    decisions, ignored = proposal_decisions(NAMES, [*proposals[:3], ("Researcher", "Developer", "feedback", 0.4)],
                                            EDGE_TYPES)
    assert [(d.relation, d.masked) for d in decisions] == [("conditioned", ""), ("feedback", "debate")]
    assert ignored == ["Researcher->Developer: the pair was already given a type"]


@pytest.mark.parametrize("seed", range(40))
def test_random_proposals_never_form_a_conditioned_or_debate_cycle(seed: int) -> None:
    rng = np.random.default_rng(seed)
    proposals = [
        (str(rng.choice(NAMES)), str(rng.choice(NAMES)), str(rng.choice(EDGE_TYPES)), float(rng.random()))
        for _ in range(25)
    ]
    decisions, _ = proposal_decisions(NAMES, proposals, EDGE_TYPES)
    kept = [(d.src, d.dst, d.relation) for d in decisions if d.relation != NONE]
    assert nx.is_directed_acyclic_graph(_acyclic_part(NAMES, kept))


def test_to_routing_carries_types_reasons_and_dropped_agents() -> None:
    decisions = [
        _decision("Developer", "Researcher", "conditioned", 0.92, 0),
        PairDecision("Researcher", "Developer", NONE, 0.3, (0.3, 0.0, 0.0, 0.0), masked="debate", masked_p=0.7,
                     position=1),
        _decision("Tester", "Developer", "feedback", 0.81, 2),
        _decision("Designer", "Tester", "debate", 0.2, 3),
    ]
    graph = build_graph(NAMES, decisions, alpha=0.5)  # 3 sampled: keeps 2
    steps = schedule(NAMES, graph, "Manager")
    routing = to_routing(graph, steps, 0.3, 3)
    assert {(e.src, e.dst, e.kind) for e in routing.edges} == {
        ("Developer", "Researcher", "conditioned"),
        ("Tester", "Developer", "feedback"),
    }
    assert {(r.src, r.dst, r.reason, r.kind) for r in routing.removed} == {
        ("Researcher", "Developer", "masked", "debate"),
        ("Designer", "Tester", "pruned", "debate"),
    }
    assert routing.inactive == ["Designer", "BugFixer"]
    assert routing.order == ["Developer", "Researcher", "Tester"]
    assert routing.similarity[1][0] == pytest.approx(0.92)  # [dst][src]
    assert routing.acyclic  # feedback Tester -> Developer does not close a loop here

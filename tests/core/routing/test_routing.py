"""Routing on hand-made similarity matrices and vectors: every rule of core.routing.dytopo, checked by hand.

Convention (core.routing.dytopo): sim[i][j] = cos(query_i, key_j); an edge src -> dst means dst receives
from src, so edge j -> i exists when sim[i][j] >= tau. The helper ``matrix`` builds sim from a dict of
"src->dst": score, so each test reads as the graph it describes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.routing.dytopo import (
    Edge,
    RemovalReason,
    RemovedEdge,
    RoutingResult,
    edge_diff,
    paper_cyclic_order,
    route,
    route_from_similarity,
    similarity_matrix,
)


def matrix(names: list[str], edges: dict[str, float], diagonal: float = 0.0) -> np.ndarray:
    """sim with sim[dst][src] = score for each "src->dst"; everything else 0 (below any tau > 0)."""
    index = {name: i for i, name in enumerate(names)}
    sim = np.zeros((len(names), len(names)))
    np.fill_diagonal(sim, diagonal)
    for spec, score in edges.items():
        src, dst = spec.split("->")
        sim[index[dst]][index[src]] = score
    return sim


def pairs(edges: list[Edge] | list[RemovedEdge]) -> list[tuple[str, str]]:
    return [(e.src, e.dst) for e in edges]


def unit(dim: int, axis: int) -> list[float]:
    vec = [0.0] * dim
    vec[axis] = 1.0
    return vec


# --- threshold ---------------------------------------------------------------------------------------


def test_threshold_is_inclusive_on_an_exact_tie() -> None:
    # Exact tie: a score equal to tau makes an edge (>=, see the core.routing.dytopo docstring); the paper's
    # strict ">" would drop it. Just below tau makes none.
    names = ["A", "B", "C"]
    sim = matrix(names, {"A->B": 0.3, "A->C": 0.2999999})
    result = route_from_similarity(names, sim, tau=0.3, k_in=2)
    assert pairs(result.edges) == [("A", "B")]
    assert result.edges[0].score == pytest.approx(0.3)
    assert result.removed == []


def test_threshold_tie_with_real_vectors_at_tau_one() -> None:
    # Identical unit vectors have cosine exactly 1.0, so tau = 1.0 still connects them.
    names = ["Developer", "Tester"]
    query = [unit(2, 1), unit(2, 0)]  # Tester needs axis 0
    key = [unit(2, 0), unit(2, 1)]  # Developer provides axis 0
    result = route(names, query, key, tau=1.0, k_in=1)
    assert pairs(result.edges) == [("Developer", "Tester")]


def test_direction_provider_to_consumer_from_vectors() -> None:
    # Tester's query matches Developer's key: Developer -> Tester, never the reverse.
    names = ["Developer", "Researcher", "Tester"]
    query = [unit(3, 2), unit(3, 2), unit(3, 0)]
    key = [unit(3, 0), unit(3, 1), unit(3, 1)]
    result = route(names, query, key, tau=0.5, k_in=2)
    # sim[i][j] = cos(query_i, key_j)
    assert result.similarity[2][0] == pytest.approx(1.0)
    assert result.similarity[0][2] == pytest.approx(0.0)
    assert pairs(result.edges) == [("Developer", "Tester")]


def test_tau_zero_connects_every_non_negative_pair_and_tau_one_almost_none() -> None:
    names = ["A", "B", "C"]
    sim = np.array([[0.9, 0.1, -0.2], [0.0, 0.9, 0.4], [0.5, 0.6, 0.9]])
    loose = route_from_similarity(names, sim, tau=0.0, k_in=2, break_cycles=False)
    assert sorted(pairs(loose.edges)) == [("A", "B"), ("A", "C"), ("B", "A"), ("B", "C"), ("C", "B")]
    strict = route_from_similarity(names, sim, tau=1.0, k_in=2)
    assert strict.edges == []


# --- self-loops ----------------------------------------------------------------------------------------


def test_no_self_loops_even_with_a_perfect_diagonal() -> None:
    names = ["A", "B", "C"]
    result = route_from_similarity(names, matrix(names, {}, diagonal=1.0), tau=0.3, k_in=2)
    assert result.edges == []
    assert result.removed == []  # a self-match is not even a candidate, so not a "removed" edge
    assert result.possible_edges == 6


def test_no_self_loops_when_each_agent_needs_what_it_offers() -> None:
    names = ["A", "B"]
    vectors = [unit(2, 0), unit(2, 1)]
    result = route(names, vectors, vectors, tau=0.3, k_in=1)
    assert result.edges == []


# --- k_in ----------------------------------------------------------------------------------------------


def test_k_in_keeps_the_strongest_and_records_the_rest() -> None:
    names = ["A", "B", "C", "D"]
    sim = matrix(names, {"B->A": 0.7, "C->A": 0.9, "D->A": 0.8, "A->B": 0.5})
    result = route_from_similarity(names, sim, tau=0.3, k_in=2)
    assert pairs(result.in_edges("A")) == [("C", "A"), ("D", "A")]  # strongest first
    assert result.removed == [RemovedEdge("B", "A", 0.7, RemovalReason.K_IN)]
    # The cap is per recipient: B keeps its single in-edge.
    assert pairs(result.in_edges("B")) == [("A", "B")]


def test_k_in_tie_keeps_the_alphabetically_first_source() -> None:
    names = ["A", "B", "C", "D"]
    sim = matrix(names, {"D->A": 0.6, "B->A": 0.6, "C->A": 0.6})
    result = route_from_similarity(names, sim, tau=0.3, k_in=1)
    assert pairs(result.edges) == [("B", "A")]
    assert [(e.src, e.reason) for e in result.removed] == [("C", RemovalReason.K_IN), ("D", RemovalReason.K_IN)]


def test_k_in_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="k_in"):
        route_from_similarity(["A", "B"], np.eye(2), tau=0.3, k_in=0)


# --- cycle removal -------------------------------------------------------------------------------------


def test_three_cycle_loses_its_lowest_edge() -> None:
    names = ["A", "B", "C"]
    sim = matrix(names, {"A->B": 0.9, "B->C": 0.8, "C->A": 0.5})
    result = route_from_similarity(names, sim, tau=0.3, k_in=2)
    assert result.removed == [RemovedEdge("C", "A", 0.5, RemovalReason.CYCLE)]
    assert sorted(pairs(result.edges)) == [("A", "B"), ("B", "C")]
    assert result.order == ["A", "B", "C"]
    assert result.acyclic


def test_cycle_with_equal_weights_drops_the_alphabetically_last_edge() -> None:
    names = ["C", "A", "B"]  # input order must not matter
    sim = matrix(names, {"A->B": 0.5, "B->C": 0.5, "C->A": 0.5})
    result = route_from_similarity(names, sim, tau=0.3, k_in=2)
    assert pairs(result.removed) == [("C", "A")]
    assert result.order == ["A", "B", "C"]


def test_two_interlocking_cycles_each_lose_their_lowest_edge() -> None:
    # A->B->C->A and C->D->C share C. By hand: the search from A finds A->B->C->A first (C's edge
    # to A is tried before C->D), drops C->A (0.35); then C->D->C remains and drops C->D (0.5).
    names = ["A", "B", "C", "D"]
    sim = matrix(names, {"A->B": 0.9, "B->C": 0.8, "C->A": 0.35, "D->C": 0.6, "C->D": 0.5})
    result = route_from_similarity(names, sim, tau=0.3, k_in=3)
    assert {(e.src, e.dst, e.reason) for e in result.removed} == {
        ("C", "A", RemovalReason.CYCLE),
        ("C", "D", RemovalReason.CYCLE),
    }
    # The removed list is sorted by (reason, dst, -score, src), not by discovery.
    assert pairs(result.removed) == [("C", "A"), ("C", "D")]
    assert sorted(pairs(result.edges)) == [("A", "B"), ("B", "C"), ("D", "C")]
    # Kahn: ready {A, D} -> A; then {B, D} -> B; C still waits for D -> D; then C.
    assert result.order == ["A", "B", "D", "C"]
    assert result.tiers == [["A", "D"], ["B"], ["C"]]


def test_shared_edge_cycles_remove_in_search_order() -> None:
    # A<->B (A->B 0.2, B->A 0.5) and B->A->C->B share B->A. The 2-cycle is found first and loses
    # A->B (0.2); the 3-cycle remains and loses its lowest, the shared B->A (0.5). Two removals,
    # though removing B->A alone would have broken both: the rule is per cycle found, in order.
    names = ["A", "B", "C"]
    sim = matrix(names, {"A->B": 0.2, "B->A": 0.5, "A->C": 0.6, "C->B": 0.7})
    result = route_from_similarity(names, sim, tau=0.1, k_in=2)
    assert sorted(pairs(result.removed)) == [("A", "B"), ("B", "A")]
    assert all(e.reason == RemovalReason.CYCLE for e in result.removed)
    assert sorted(pairs(result.edges)) == [("A", "C"), ("C", "B")]
    assert result.order == ["A", "C", "B"]


def test_k_in_applies_before_cycle_breaking() -> None:
    # With k_in = 1, A keeps only C->A (0.9), so the weaker B->A never forms the A<->B cycle.
    names = ["A", "B", "C"]
    sim = matrix(names, {"B->A": 0.4, "C->A": 0.9, "A->B": 0.8})
    result = route_from_similarity(names, sim, tau=0.3, k_in=1)
    assert [(e.src, e.dst, e.reason) for e in result.removed] == [("B", "A", RemovalReason.K_IN)]
    assert sorted(pairs(result.edges)) == [("A", "B"), ("C", "A")]
    assert result.order == ["C", "A", "B"]


def test_result_does_not_depend_on_input_order_of_names() -> None:
    base = ["A", "B", "C", "D"]
    edges = {"A->B": 0.9, "B->C": 0.8, "C->A": 0.35, "D->C": 0.6, "C->D": 0.5, "B->D": 0.45}
    expected = route_from_similarity(base, matrix(base, edges), tau=0.3, k_in=3)
    for shuffled in (["D", "C", "B", "A"], ["B", "D", "A", "C"]):
        result = route_from_similarity(shuffled, matrix(shuffled, edges), tau=0.3, k_in=3)
        assert result.edges == expected.edges
        assert result.removed == expected.removed
        assert result.order == expected.order
        assert result.tiers == expected.tiers
        assert result.paper_order == expected.paper_order


# --- order and tiers -----------------------------------------------------------------------------------


def test_kahn_breaks_ties_alphabetically() -> None:
    names = ["Tester", "Developer", "Researcher", "Designer"]
    result = route_from_similarity(names, matrix(names, {}), tau=0.3, k_in=3)
    assert result.order == ["Designer", "Developer", "Researcher", "Tester"]
    assert result.tiers == [["Designer", "Developer", "Researcher", "Tester"]]


def test_kahn_takes_the_alphabetically_first_ready_node_each_step() -> None:
    # Z -> A and Y -> B: both Y and Z start ready. Y goes first; then B (freed by Y) is ready with
    # Z, and B < Z, so B runs before Z even though Z was ready earlier.
    names = ["A", "B", "Y", "Z"]
    sim = matrix(names, {"Z->A": 0.9, "Y->B": 0.9})
    result = route_from_similarity(names, sim, tau=0.3, k_in=1)
    assert result.order == ["Y", "B", "Z", "A"]


def test_tiers_are_topological_generations() -> None:
    names = ["Designer", "Developer", "Researcher", "Tester"]
    sim = matrix(names, {"Researcher->Developer": 0.7, "Developer->Tester": 0.8, "Designer->Tester": 0.4})
    result = route_from_similarity(names, sim, tau=0.3, k_in=3)
    assert result.tiers == [["Designer", "Researcher"], ["Developer"], ["Tester"]]
    assert result.tier_of("Researcher") == 0
    assert result.tier_of("Tester") == 2
    assert result.tier_of("Nobody") == -1
    # Every edge goes from an earlier tier to a later one.
    for e in result.edges:
        assert result.tier_of(e.src) < result.tier_of(e.dst)


def test_in_edges_strongest_first() -> None:
    names = ["A", "B", "C", "D"]
    sim = matrix(names, {"B->D": 0.4, "C->D": 0.8, "A->D": 0.6})
    result = route_from_similarity(names, sim, tau=0.3, k_in=3)
    assert [e.src for e in result.in_edges("D")] == ["C", "A", "B"]


# --- the paper's cyclic order (eq. 10-11) ----------------------------------------------------------------

_CYCLIC = {"A->B": 0.9, "B->C": 0.8, "C->A": 0.35, "D->C": 0.6, "C->D": 0.5}


def test_paper_order_on_a_cyclic_graph_by_hand() -> None:
    # In-edges: A<-C, B<-A, C<-{B,D}, D<-C.
    # Step 1: restricted in-degrees A1 B1 C2 D1 -> A (alphabetical among the 1s).
    # Step 2: B0 C2 D1 -> B.  Step 3: C1 (from D) D1 (from C) -> C.  Step 4: D.
    names = ["A", "B", "C", "D"]
    result = route_from_similarity(names, matrix(names, _CYCLIC), tau=0.3, k_in=3)
    assert result.paper_order == ["A", "B", "C", "D"]
    assert result.order == ["A", "B", "D", "C"]  # Kahn on the cycle-free graph differs


def test_paper_order_function_directly() -> None:
    edges = [Edge("B", "A", 0.9), Edge("A", "B", 0.4), Edge("C", "B", 0.5)]
    # A: in from B (1); B: in from A, C (2); C: 0 -> C. Then A1 B1 -> A. Then B.
    assert paper_cyclic_order(["A", "B", "C"], edges) == ["C", "A", "B"]


def test_break_cycles_false_keeps_cycles_and_uses_paper_order() -> None:
    names = ["A", "B", "C", "D"]
    result = route_from_similarity(names, matrix(names, _CYCLIC), tau=0.3, k_in=3, break_cycles=False)
    assert not result.acyclic
    assert sorted(pairs(result.edges)) == sorted(tuple(k.split("->")) for k in _CYCLIC)
    assert result.removed == []
    assert result.order == ["A", "B", "C", "D"] == result.paper_order
    assert result.tiers == [["A"], ["B"], ["C"], ["D"]]


def test_break_cycles_false_on_an_acyclic_graph_says_so() -> None:
    names = ["A", "B"]
    result = route_from_similarity(names, matrix(names, {"A->B": 0.9}), tau=0.3, k_in=1, break_cycles=False)
    assert result.acyclic
    assert result.order == ["A", "B"]


# --- diff, serialisation, input checks -------------------------------------------------------------------


def test_edge_diff_between_two_taus() -> None:
    names = ["A", "B", "C"]
    sim = matrix(names, {"A->B": 0.9, "B->C": 0.5, "A->C": 0.35})
    low = route_from_similarity(names, sim, tau=0.3, k_in=2)
    high = route_from_similarity(names, sim, tau=0.6, k_in=2)
    added, dropped = edge_diff(low, high)
    assert added == []
    assert pairs(dropped) == [("A", "C"), ("B", "C")]
    added_back, dropped_back = edge_diff(high, low)
    assert pairs(added_back) == [("A", "C"), ("B", "C")]
    assert dropped_back == []
    assert edge_diff(low, low) == ([], [])


def test_to_dict_from_dict_round_trip_through_json() -> None:
    names = ["A", "B", "C", "D"]
    sim = matrix(names, {**_CYCLIC, "B->A": 0.31, "D->A": 0.32})
    for break_cycles in (True, False):
        result = route_from_similarity(names, sim, tau=0.3, k_in=1, break_cycles=break_cycles)
        assert result.removed or not break_cycles
        data = json.loads(json.dumps(result.to_dict()))
        assert RoutingResult.from_dict(data) == result


def test_from_dict_defaults_acyclic_for_older_files() -> None:
    names = ["A", "B"]
    data = route_from_similarity(names, matrix(names, {"A->B": 0.9}), tau=0.3, k_in=1).to_dict()
    del data["acyclic"]
    assert RoutingResult.from_dict(data).acyclic is True


def test_route_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="unique"):
        route(["A", "A"], np.eye(2), np.eye(2), tau=0.3, k_in=1)
    with pytest.raises(ValueError, match="expected 3"):
        route(["A", "B", "C"], np.eye(2), np.eye(2), tau=0.3, k_in=1)


def test_similarity_matrix_normalises_rows() -> None:
    query = np.array([[3.0, 0.0], [1.0, 1.0]])
    key = np.array([[0.0, 5.0], [2.0, 0.0]])
    sim = similarity_matrix(query, key)
    assert sim == pytest.approx(np.array([[0.0, 1.0], [np.sqrt(0.5), np.sqrt(0.5)]]))

"""Wiring rules: the baselines' graphs the benchmark compares DyTopo against."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from core.demo.server import ScriptedServer
from core.routing.dytopo import route_from_similarity
from core.routing.wiring import WIRINGS
from core.runtime import events as ev
from core.runtime.config import Settings
from tests.support.engine import of
from tests.support.routing import get_wiring

NAMES = ["Designer", "Developer", "Researcher", "Tester"]


def _similarity(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.2, 0.9, size=(4, 4))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("tau", [0.1, 0.3, 0.5])
def test_random_graph_has_dytopos_edge_count_and_no_cycles(seed: int, tau: float) -> None:
    sim = _similarity(seed)
    dytopo = route_from_similarity(NAMES, sim, tau, 2)
    for round_no in (2, 3):
        graph = get_wiring("random", seed=seed).build(round_no, NAMES, sim, tau, 2, break_cycles=True)
        assert len(graph.edges) == len(dytopo.edges)
        assert graph.acyclic and sorted(graph.order) == sorted(NAMES)
        position = {name: i for i, name in enumerate(graph.order)}
        assert all(position[e.src] < position[e.dst] for e in graph.edges)


def test_random_graph_differs_between_rounds_but_repeats_for_a_seed() -> None:
    sim = np.full((4, 4), 0.9)
    def build(seed: int, round_no: int) -> set[tuple[str, str]]:
        graph = get_wiring("random", seed=seed).build(round_no, NAMES, sim, 0.3, 1, break_cycles=True)
        return {(e.src, e.dst) for e in graph.edges}

    assert build(1, 2) == build(1, 2)
    assert len({frozenset(build(1, r)) for r in range(2, 10)}) > 1


def test_fixed_graphs_have_their_shapes() -> None:
    sim = _similarity(0)
    broadcast = get_wiring("broadcast").build(2, NAMES, sim, 0.3, 3, break_cycles=True)
    assert len(broadcast.edges) == 12 and not broadcast.acyclic and broadcast.tiers == [sorted(NAMES)]
    chain = get_wiring("chain").build(2, NAMES, sim, 0.3, 3, break_cycles=True)
    assert [(e.src, e.dst) for e in sorted(chain.edges, key=lambda e: chain.order.index(e.src))] == list(
        itertools.pairwise(NAMES)
    )
    assert chain.tiers == [[n] for n in NAMES]
    star = get_wiring("star", hub="Developer").build(2, NAMES, sim, 0.3, 3, break_cycles=True)
    assert {(e.src, e.dst) for e in star.edges} == {(n, "Developer") for n in NAMES if n != "Developer"}
    assert star.tiers[-1] == ["Developer"]
    # Scores shown on fixed edges are the real similarities.
    index = {n: i for i, n in enumerate(NAMES)}
    assert all(e.score == pytest.approx(sim[index[e.dst]][index[e.src]]) for e in broadcast.edges)


def test_unknown_wiring_rule_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="choose one of"):
        get_wiring("telepathy")
    assert "dytopo" in WIRINGS


async def test_broadcast_wiring_delivers_every_message_at_the_barrier(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    from core.compose.plan import BackendChoice
    from core.compose.runner import build_engine, open_backend
    from core.demo.scripts import DEMO_PROBLEMS

    settings = Settings(max_rounds=2)
    backend = await open_backend(settings, BackendChoice(server=demo_server))
    events: list[ev.Event] = []
    engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], wiring=get_wiring("broadcast"))
    await engine.run()
    await backend.close()
    routed = {(d["src"], d["dst"]) for m in of(events, ev.MessagesRouted, round=2) for d in m.deliveries}
    assert len(routed) == 12
    tester_round2 = [r for r in demo_server.requests
                     if r.role == "Tester" and r.round == 2 and r.call == ev.CallKind.WORK]
    assert "[from" not in tester_round2[0].messages[-1]["content"]  # nothing in-round: one tier

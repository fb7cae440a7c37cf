"""What-if re-routing of recorded sessions equals routing recomputed directly."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from core.routing.dytopo import route, route_from_similarity
from core.sessions.model import Session
from core.sessions.store import load_session
from core.sessions.whatif import reroute_session
from sessions import EXAMPLES_DIR

EXAMPLES = sorted(EXAMPLES_DIR.glob("example-*.json"))
GRID = [(tau, k_in) for tau in (0.0, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0) for k_in in (1, 2, 3)]


def _keys(edges: Any) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in edges}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_reroute_equals_routing_recomputed_from_the_stored_embeddings(path: Path) -> None:
    session = load_session(path)
    routed = [r for r in session.rounds if r.routing is not None]
    assert routed
    for tau, k_in in GRID:
        diffs = reroute_session(session, tau, k_in)
        assert [d.round for d in diffs] == [r.round for r in routed]
        for diff, record in zip(diffs, routed, strict=True):
            direct = route(record.routing.names, record.query_embeddings, record.key_embeddings, tau, k_in)
            assert diff.rerouted.order == direct.order and diff.rerouted.tiers == direct.tiers
            assert [(e.src, e.dst) for e in diff.rerouted.edges] == [(e.src, e.dst) for e in direct.edges]
            assert [e.score for e in diff.rerouted.edges] == pytest.approx([e.score for e in direct.edges], abs=1e-6)
            # The diff is exactly the difference of the two edge sets, with the scores that would flow.
            recorded, new = _keys(record.routing.edges), _keys(direct.edges)
            assert _keys(diff.added) == new - recorded
            assert _keys(diff.removed) == recorded - new
            sim = record.routing.similarity
            index = {n: i for i, n in enumerate(record.routing.names)}
            for e in diff.added:
                assert e.score == sim[index[e.dst]][index[e.src]] and e.score >= tau


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_reroute_at_the_recorded_parameters_changes_nothing(path: Path) -> None:
    session = load_session(path)
    for record in session.rounds:
        if record.routing is None:
            continue
        diffs = reroute_session(session, record.routing.tau, record.routing.k_in)
        (diff,) = [d for d in diffs if d.round == record.round]
        assert not diff.added and not diff.removed and not diff.changed
        assert diff.rerouted == record.routing


def test_lower_tau_adds_edges_and_higher_tau_removes_them() -> None:
    session = load_session(EXAMPLES_DIR / "example-code.json")
    recorded = sum(len(r.edges) for r in session.rounds)
    loose = reroute_session(session, 0.0, 3)
    strict = reroute_session(session, 0.95, 3)
    assert sum(len(d.added) for d in loose) > 0
    assert sum(len(d.removed) for d in strict) == recorded and not any(d.added for d in strict)


def test_single_pass_rounds_keep_cycles_when_rerouted() -> None:
    session = load_session(EXAMPLES_DIR / "example-code.json")
    data = copy.deepcopy(session.to_dict())
    data["events"][0]["protocol"] = "single-pass"
    data["metadata"]["protocol"] = "single-pass"
    single = Session.from_dict(json.loads(json.dumps(data)))
    for diff in reroute_session(single, 0.0, 3):
        record = single.rounds[diff.round - 1]
        direct = route_from_similarity(record.routing.names, record.routing.similarity, 0.0, 3, break_cycles=False)
        assert diff.rerouted == direct and not diff.rerouted.acyclic


def test_bad_parameters_are_refused() -> None:
    session = load_session(EXAMPLES_DIR / "example-math.json")
    with pytest.raises(ValueError, match="tau"):
        reroute_session(session, 1.5, 2)
    with pytest.raises(ValueError, match="k_in"):
        reroute_session(session, 0.3, 0)

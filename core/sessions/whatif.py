"""What-if: re-route a recorded session at other tau / k_in, from the stored similarity matrices.

Hypothetical by nature: the agents' outputs are the recorded ones, only the graph is recomputed.
Each round is re-routed the way the engine routed it (the phased protocol breaks cycles, the
single-pass protocol keeps them), with the same pure routing function, so no model is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.routing.dytopo import Edge, RoutingResult, edge_diff, route_from_similarity
from core.runtime.config import DEFAULT_STRATEGY, RoundProtocol
from core.sessions.model import RoundRecord, Session


@dataclass(frozen=True)
class RoundDiff:
    round: int
    recorded: RoutingResult
    rerouted: RoutingResult
    added: list[Edge]  # messages that would have flowed (src -> dst, with the score)
    removed: list[Edge]  # recorded messages that would not have flowed

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed) or self.recorded.order != self.rerouted.order


class WhatIfUnsupported(ValueError):
    """The session's method does not route by tau and k_in; the message is one line for the user."""


def what_if_refusal(session: Session) -> str:
    """Why this session cannot be re-routed ("" when it can): what-if is DyTopo's, whose graphs come
    from tau and k_in; other methods' graphs (a baseline's fixed graph, a typed or learned one) do not."""
    from core.methods.catalogue import get_method_info
    from core.methods.registry import MethodError

    strategy = session.metadata.strategy or DEFAULT_STRATEGY
    try:
        supported = get_method_info(strategy).what_if
    except MethodError:
        supported = False
    if supported:
        return ""
    return f"what-if re-routing is DyTopo's: a {strategy} run's graphs do not come from tau and k_in"


def breaks_cycles(session: Session, record: RoundRecord) -> bool:
    """Whether this round's routing broke cycles, as the engine decided it."""
    if record.routing is not None and not record.routing.acyclic:
        return False  # cycles were kept: only the single-pass protocol does that
    return session.metadata.protocol != RoundProtocol.SINGLE_PASS


def reroute_round(session: Session, record: RoundRecord, tau: float, k_in: int) -> RoundDiff | None:
    if record.routing is None:
        return None  # a broadcast round (round 1) has no graph to re-route
    recorded = record.routing
    rerouted = route_from_similarity(
        recorded.names, recorded.similarity, tau, k_in, break_cycles=breaks_cycles(session, record)
    )
    added, removed = edge_diff(recorded, rerouted)
    return RoundDiff(record.round, recorded, rerouted, added, removed)


def reroute_session(session: Session, tau: float, k_in: int) -> list[RoundDiff]:
    """One diff per routed round, in round order. Raises ValueError for tau outside 0..1 or k_in < 1."""
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be between 0 and 1, got {tau}")
    if k_in < 1:
        raise ValueError(f"k_in must be at least 1, got {k_in}")
    refusal = what_if_refusal(session)
    if refusal:
        raise WhatIfUnsupported(refusal)
    diffs = [reroute_round(session, record, tau, k_in) for record in session.rounds]
    return [d for d in diffs if d is not None]

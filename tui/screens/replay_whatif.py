"""A replay's what-if (t/T, k/K): tau and k_in other than the recorded ones, the graph the recorded similarities
would have given at them (HYPOTHETICAL, core.sessions.whatif; never mixed up with what happened) and how many
messages would have flowed differently across the session."""

from __future__ import annotations

from typing import Any

from core.routing.dytopo import RoutingResult

from ..model import RunModel, reroute

HYPOTHETICAL = "HYPOTHETICAL"


def recorded_routing(model: RunModel, round_no: int) -> RoutingResult | None:
    rv = model.round_view(round_no)
    return rv.routing if rv is not None else None


class WhatIf:
    """The what-if values, None while the replay shows what happened."""

    def __init__(self) -> None:
        self.values: tuple[float, int] | None = None

    def change(self, screen: Any, tau: float = 0.0, k_in: int = 0) -> None:
        """Move tau and k_in by the given steps from the viewed round's values (``screen``: a ReplayScreen: its
        session, model, shown round and toasts); back at the recorded ones, the what-if ends."""
        session, model, round_no = screen.session, screen.model, screen.shown_round
        if session is not None:
            from core.sessions.whatif import what_if_refusal

            refusal = what_if_refusal(session)
            if refusal:
                screen.notify(refusal, severity="warning")
                return
        base = recorded_routing(model, round_no)
        rv = model.round_view(round_no)
        if base is not None:
            recorded, n = (base.tau, base.k_in), len(base.names)
        elif rv is not None and rv.params:
            # A broadcast round (round 1) has no graph of its own; the values still apply to the
            # later rounds' what-if and to a fork from here.
            recorded, n = (float(rv.params["tau"]), int(rv.params["k_in"])), len(model.workers)
        else:
            screen.notify("no round to re-route yet", severity="warning")
            return
        cur_tau, cur_k = self.values or recorded
        new = (round(min(1.0, max(0.0, cur_tau + tau)), 2), min(max(1, n - 1), max(1, cur_k + k_in)))
        self.values = None if new == recorded else new
        if base is None and self.values is not None:
            screen.notify(f"round {round_no} was a broadcast (no graph): the what-if shows in later rounds "
                          "and a fork from here uses it", timeout=4)

    def graph(self, model: RunModel, round_no: int, session: Any) -> tuple[RoutingResult | None, str]:
        """The viewed round re-routed at the what-if values, tagged HYPOTHETICAL (nothing while there is none)."""
        base = recorded_routing(model, round_no)
        if self.values is None or base is None:
            return None, ""
        tau, k_in = self.values
        if session is not None:
            from core.sessions.whatif import reroute_round

            record = next((r for r in session.rounds if r.round == round_no), None)
            diff = reroute_round(session, record, tau, k_in) if record is not None else None
            if diff is not None:
                return diff.rerouted, HYPOTHETICAL
        return reroute(base, tau, k_in, model.protocol), HYPOTHETICAL

    def summary(self, session: Any) -> str:
        """Across the whole session: how many edges the what-if adds and removes."""
        if session is None or self.values is None:
            return ""
        from core.sessions.whatif import reroute_session

        diffs = reroute_session(session, *self.values)
        added = sum(len(d.added) for d in diffs)
        removed = sum(len(d.removed) for d in diffs)
        return f" (all rounds: +{added} −{removed} edges)"

"""Steering TopoDIM: add or remove a typed edge of the one-shot graph between the barrier where the graph is
drawn and the first call it schedules. The edited graph is checked as the method checks its own (eq. 7:
conditioned and debate edges stay acyclic), the schedule is made again, and the graph is shown again
(TopologyBuilt with rerouted=True, and TopoDIMGraph). An edit taken before the graph is drawn waits for it;
after the calls began there is nothing left to edit (docs/steering.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from core.methods.steer_checks import refusal
from core.routing.dytopo import pin_cycle
from core.routing.topodim import (
    ACYCLIC_TYPES,
    EDGE_TYPES,
    CallStep,
    TypedEdge,
    TypedGraph,
    active_agents,
    schedule,
    to_routing,
)
from core.runtime import events as ev
from core.runtime.steering import SteerAction, SteerKind

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


class TopoDIMSteering:
    """The graph a run may still edit (None before it is drawn and once its calls began)."""

    def __init__(self, ctx: RunContext, method: str, names: list[str], decider: str,
                 on_edit: Callable[[TypedGraph, list[CallStep]], None]) -> None:
        self.ctx, self.method, self.names, self.decider = ctx, method, names, decider
        self.on_edit = on_edit  # the method shows the edited graph (its own event beside routing_event)
        self.graph: TypedGraph | None = None
        self.steps: list[CallStep] = []
        self.edited = False  # the user changed the graph: show it again
        self.executing = False

    def apply(self, action: SteerAction) -> str | None:
        why = refusal(self.method, action, self.names)
        if why:
            return why
        if action.action is SteerKind.STOP:
            self.ctx.stop()
            return ""
        if self.executing:
            return "the graph's calls have begun: TopoDIM draws and runs one graph, nothing is left to edit"
        if self.graph is None or not self.ctx.state.at_barrier:
            return None  # the graph is not drawn yet: the edit waits for it
        edited = self._edit(self.graph, action)
        if isinstance(edited, str):
            return edited
        self.graph, self.edited = edited, True
        self.steps = schedule(self.names, edited, self.decider)
        self.ctx.emit(self.routing_event())
        self.on_edit(self.graph, self.steps)
        return ""

    def _edit(self, graph: TypedGraph, a: SteerAction) -> TypedGraph | str:
        src, dst = a.src, a.dst
        present = next((e for e in graph.kept if (e.src, e.dst) == (src, dst)), None)
        if a.action is SteerKind.EDGE_REMOVE:
            if present is None:
                return f"no {src}→{dst} edge in the graph to remove"
            kept = [e for e in graph.kept if e is not present]
        else:
            kind = str(a.payload.get("type", ""))
            if kind not in EDGE_TYPES:
                return f"edge type {kind!r} is not one of {', '.join(EDGE_TYPES)}"
            if src == dst:
                return f"cannot add {src}→{dst}: an agent does not link to itself"
            if present is not None:
                return f"{src}→{dst} is a {present.kind} edge already: remove it first"
            if kind in ACYCLIC_TYPES:
                acyclic = frozenset((e.src, e.dst) for e in graph.kept if e.kind in ACYCLIC_TYPES)
                cycle = pin_cycle(acyclic, src, dst)
                if cycle:
                    return (f"cannot add {kind} {src}→{dst}: it would close the cycle {'→'.join(cycle)} "
                            "(TopoDIM keeps conditioned and debate edges acyclic, eq. 7)")
            position = max((e.position for e in (*graph.kept, *graph.pruned)), default=0) + 1
            kept = [*graph.kept, TypedEdge(src, dst, kind, 1.0, position)]
        active = active_agents(graph.names, kept) if kept else list(graph.names)
        return replace(graph, kept=kept, active=active, dropped=[n for n in graph.names if n not in active],
                       fallback=not kept)

    def routing_event(self) -> ev.TopologyBuilt:
        """The edited graph as the shared graph event (shown in place of the drawn one)."""
        assert self.graph is not None
        params = self.ctx.state.params
        routing = to_routing(self.graph, self.steps, params.tau, params.k_in)
        return ev.TopologyBuilt(round=1, routing=routing.to_dict(), query_embeddings=[], key_embeddings=[],
                                strategy=self.method, rerouted=True)

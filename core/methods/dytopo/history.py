"""A fork's history: the parent's recorded rounds, read back into DyTopo's memory as the live run had it.

A fork (core.sessions.fork) re-announces the parent's events before it runs on; from them each worker's
memory (DyTopo eq. 3: its own outputs, what was routed or broadcast to it, the test results; arXiv
2602.06039 §3.1), the last graph, the user's recorded steering, the last outputs (for the convergence test)
and what the code's check had taken in (the Developer's code, the Tester's tests) are restored. The
conversations are rebuilt beside it (core.methods.dytopo.rebuild).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.methods.dytopo.calls import DyTopoCalls
from core.methods.dytopo.steer import DyTopoSteering, recorded_action
from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.runtime.engine import AgentResult, CheckedRound, Evaluation
from core.runtime.memory import MemoryItem
from core.runtime.run_context import notice

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

SUMMARY_ONLY = ("this session was recorded before the test results' full text was kept: the fork's agents remember "
                "each recorded check by its one-line summary")

# What the fork takes from each recorded event (HistoryReplay's ``@READS.on`` methods).
READS: EventTable[HistoryReplay] = EventTable()


@dataclass
class HistoryReplay:
    """Reads the parent's events in order; a round's outputs, deliveries and test results enter memory at its end."""

    ctx: RunContext
    calls: DyTopoCalls
    steer: DyTopoSteering
    routing: RoutingResult | None = None  # the last graph built
    previous_public: dict[str, str] | None = None  # the last finished round's public outputs
    outputs: dict[str, AgentResult] = field(default_factory=dict)
    deliveries: list[ev.MessagesRouted] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)
    summary_told: bool = False  # the note that an old session's test results come back as summaries: once

    def read(self, event: ev.Event) -> None:
        READS.dispatch(self, event)

    @READS.on(ev.AgentFinished)
    def _finished(self, event: ev.AgentFinished) -> None:
        if event.call not in (ev.CallKind.WORK, ev.CallKind.SINGLE_PASS):
            return
        result = AgentResult(agent=event.agent, status=event.status, public=event.public,
                             private=dict(event.private), query=event.query, key=event.key, answer=event.answer,
                             raw=event.raw)
        self.outputs[event.agent] = result
        self.ctx.record(result)

    @READS.on(ev.MessagesRouted)
    def _routed(self, event: ev.MessagesRouted) -> None:
        self.deliveries.append(event)

    @READS.on(ev.TopologyBuilt)
    def _topology(self, event: ev.TopologyBuilt) -> None:
        self.routing = RoutingResult.from_dict(event.routing)

    @READS.on(ev.UserSteered)
    def _steered(self, event: ev.UserSteered) -> None:
        action = recorded_action(event)
        if action is not None:
            self.steer.replay(event, action)

    @READS.on(ev.TestRun)
    def _tested(self, event: ev.TestRun) -> None:
        # As the live run gave it; a session recorded before TestRun kept that text: its one-line summary.
        text = event.feedback if event.feedback is not None else f"Test results: {event.outcome} — {event.detail}"
        if event.feedback is None and not self.summary_told:
            self.summary_told = True
            notice(self.ctx, SUMMARY_ONLY, "info")
        self.feedback.append(text)
        self.ctx.record(Evaluation(passed=event.passed, feedback=text))

    @READS.on(ev.RoundFinished)
    def _round_done(self, event: ev.RoundFinished) -> None:
        """The run stands where this round left it (the engine's record restored round and tokens)."""
        for name in self.ctx.spec.workers:
            if name in self.outputs:
                self.calls.remember(name, MemoryItem(event.round, "own", name, self.outputs[name].public))
        for routed in self.deliveries:
            kind = "broadcast" if routed.broadcast else "routed"
            for d in routed.deliveries:
                self.calls.remember(d["dst"], MemoryItem(event.round, kind, d["src"], d["content"], d.get("score")))
        for text in self.feedback:
            self.calls.remember_feedback(event.round, text)
        self.ctx.record(CheckedRound(self.outputs))  # the code's check takes in the round's code and tests again
        self.previous_public = {name: r.public for name, r in self.outputs.items()}
        self.outputs, self.deliveries, self.feedback = {}, [], []

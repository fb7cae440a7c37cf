"""A TopoWeaver-R1 fork's conversations, rebuilt from the parent's recorded turns as the live run built them
(issue 46).

A fork (core.methods.topoweaver.replay) re-emits the parent's turns and rebuilds what later turns read: the
history H_k (eq. 3), every agent's memory Mem_i and the view View^(k-1) (eq. 15). Each recorded call then
becomes the request the live run sent (core.methods.topoweaver.threads), through the same request builders and
the same context budget: the Orchestrator's turn k with the history it had before turn k, an agent's call with
the plan of its turn, the view, its own earlier outputs and what it read (the outputs of the earlier steps it
refs, an earlier turn's output it names), each with the reply the run kept (a parsed reply). The fork's first
requests then continue the parent's conversations, byte for byte.

What the events cannot give back: a turn the live run cut to fit a model's smaller context is rebuilt uncut (the
fork's prefix then differs from that turn on). A kept call whose raw reply the session lacks gives that caller a
fresh conversation, said in one notice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.methods.topoweaver.plan import Plan, PlanAgent
from core.methods.topoweaver.prompts import CALL_AGENT, CALL_ORCHESTRATE, ORCHESTRATOR
from core.methods.topoweaver.threads import Request, TopoWeaverRequests
from core.methods.topoweaver.turns import TurnHistory
from core.runtime import events as ev
from core.runtime.agent_threads import keep_recorded, quietly, start_fresh


@dataclass
class TopoWeaverRebuild:
    """Feeds a fork's history, call by call, into the run's conversations (TopoWeaverRequests)."""

    requests: TopoWeaverRequests
    history: TurnHistory  # as the replay rebuilt it so far: the records of the turns before the call's
    domain: str
    turns: int = 0  # K as the turn had it (its RoundStarted's max_rounds)
    missing: set[str] = field(default_factory=set)  # callers whose turns the session cannot give back

    def round_started(self, event: ev.RoundStarted) -> None:
        self.turns = int(event.params.get("max_rounds", self.turns))

    def call(self, event: ev.AgentFinished, plan: Plan | None) -> None:
        """A recorded call, ``plan`` the plan its turn ran."""
        if self.requests.threads is None:
            return
        with quietly(self.requests.threads):  # the parent's trims are in its history already
            if event.call == CALL_ORCHESTRATE and event.agent == ORCHESTRATOR:
                self._keep(self.requests.orchestrator(event.round, self.turns, self.history.notes(self.domain)),
                           event)
            elif event.call == CALL_AGENT and plan is not None:
                agent = plan.agent(event.agent)
                if agent is not None:
                    self._keep(self._agent(agent, event.round, plan), event)

    def _agent(self, agent: PlanAgent, turn: int, plan: Plan) -> Request:
        """The agent's request as TopoWeaverMethod._run_agent made it (its replayed outputs are in memory)."""
        memory = self.history.memory
        mine = sorted((t, text) for t, text in memory.get(agent.id, {}).items() if t < turn and text)
        reads: list[tuple[str, str]] = []
        for ref in agent.intra_refs:
            source = plan.agent(ref)
            ran = source is not None and source.step < agent.step  # an earlier step's output, this turn
            reads.append((f"{ref} ({source.type if source is not None else '?'})",
                          memory.get(ref, {}).get(turn, "") if ran else ""))
        for name, ref_turn in agent.cross_refs:
            reads.append((f"{name}, turn {ref_turn}", memory.get(name, {}).get(ref_turn, "")))
        return self.requests.agent(agent, turn, len(plan.steps), self.history.view(plan), mine, reads)

    def _keep(self, request: Request, event: ev.AgentFinished) -> None:
        keep_recorded(request, event, self.missing)

    def finish(self) -> None:
        """The callers the session could not rebuild start fresh, said once."""
        start_fresh(self.requests.ctx, self.requests.threads, self.missing, "replies")

"""A fork's conversations, rebuilt from the parent's recorded rounds as the live run built them.

A fork (core.sessions.fork) replays the parent's events before it runs on; DyTopo's memory is rebuilt from
them (core.methods.dytopo.protocol), and so is each agent's conversation (core.methods.dytopo.threads): each
recorded worker call becomes the turn the live run sent (what the agent had not been shown yet, the round's
goal, the inbox routed to it before its call) with the reply it kept, and each Manager call its plan or review
turn. The fork's first requests then continue the parent's conversations, and a server that still holds
them in its cache prefills only what is new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.runtime.prompts import manager_turn, plan_turn

# (the order of the round's workers, their recorded work calls) -> the Manager's TEAM OUTPUTS text
Summary = Callable[[list[str], dict[str, ev.AgentFinished]], str]
Inbox = Callable[[list[dict[str, Any]]], str]


# What the rebuild takes from each recorded event (ConversationRebuild's ``@SEES.on`` methods).
SEES: EventTable[ConversationRebuild] = EventTable()


@dataclass
class ConversationRebuild:
    """Feeds a fork's history, event by event, into the run's conversations (DyTopoCalls)."""

    calls: Any  # core.methods.dytopo.calls.DyTopoCalls (typed loosely: it imports this module's users)
    max_rounds: int
    summary: Summary
    inbox: Inbox
    manager: str = "Manager"
    workers: list[str] = field(default_factory=list)  # the roster's order (round 1's review lists them so)
    goal: str = ""
    routed: list[dict[str, Any]] = field(default_factory=list)  # this round's deliveries so far
    outputs: dict[str, ev.AgentFinished] = field(default_factory=dict)  # this round's work calls
    order: list[str] = field(default_factory=list)  # the round's routing order (rounds >= 2)
    feedback: str = ""

    def see(self, event: ev.Event) -> None:
        if self.calls.conversational:
            SEES.dispatch(self, event)

    @SEES.on(ev.RoundStarted)
    def _round(self, _event: ev.RoundStarted) -> None:
        self.routed, self.outputs, self.order, self.feedback = [], {}, [], ""

    @SEES.on(ev.MessagesRouted)
    def _routed(self, event: ev.MessagesRouted) -> None:
        if not event.broadcast:
            self.routed.extend(event.deliveries)

    @SEES.on(ev.TopologyBuilt)
    def _topology(self, event: ev.TopologyBuilt) -> None:
        self.order = list(event.routing.get("order", []))

    @SEES.on(ev.TestRun)
    def _tested(self, event: ev.TestRun) -> None:
        self.feedback = f"TEST RESULTS:\nTest results: {event.outcome} — {event.detail}"

    @SEES.on(ev.ManagerDecided)
    def _decided(self, event: ev.ManagerDecided) -> None:
        if event.next_goal:
            self.goal = event.next_goal

    @SEES.on(ev.AgentFinished)
    def _finished(self, event: ev.AgentFinished) -> None:
        if event.raw:
            self._call(event)

    def _call(self, event: ev.AgentFinished) -> None:
        # As the live run kept them: a parsed reply, or a worker's unparsed work (it became its output).
        parsed = event.status is ev.CallStatus.DONE
        if event.agent == self.manager:
            if parsed:
                user = plan_turn(self.max_rounds) if event.call == ev.CallKind.PLAN else self._review(event.round)
                self.calls.replay_manager(user, event.raw, event.round)
            return
        if not parsed and (event.call == ev.CallKind.DESCRIPTORS or event.status is not ev.CallStatus.UNPARSED):
            return
        if event.call == ev.CallKind.WORK:
            mine = [d for d in self.routed if d["dst"] == event.agent]
            self.calls.replay_worker(event.agent, event.call, event.round, self.goal, self.inbox(mine), event.raw)
        else:
            self.calls.replay_worker(event.agent, event.call, event.round, self.goal, "", event.raw)
        if event.call in (ev.CallKind.WORK, ev.CallKind.SINGLE_PASS):
            self.outputs[event.agent] = event

    def _review(self, round_no: int) -> str:
        order = [n for n in (self.order if round_no > 1 and self.order else self.workers) if n in self.outputs]
        return manager_turn(round_no, self.max_rounds, self.goal, self.summary(order, self.outputs), self.feedback)

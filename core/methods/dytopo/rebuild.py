"""A fork's conversations, rebuilt from the parent's recorded rounds as the live run built them.

A fork (core.sessions.fork) replays the parent's events before it runs on; DyTopo's memory is rebuilt from
them (core.methods.dytopo.history), and so is each agent's conversation (core.methods.dytopo.threads): each
recorded worker call becomes the turn the live run sent (what the agent had not been shown yet, the round's
goal, the inbox routed to it before its call) with the reply it kept, and the Manager's plan its first turn (a
review is a side request: nothing of it is kept). The fork's first requests then continue the parent's
conversations, and a server that still holds them in its cache prefills only what is new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.runtime.prompts import plan_turn

Inbox = Callable[[list[dict[str, Any]]], str]


# What the rebuild takes from each recorded event (ConversationRebuild's ``@SEES.on`` methods).
SEES: EventTable[ConversationRebuild] = EventTable()


@dataclass
class ConversationRebuild:
    """Feeds a fork's history, event by event, into the run's conversations (DyTopoCalls)."""

    calls: Any  # core.methods.dytopo.calls.DyTopoCalls (typed loosely: it imports this module's users)
    max_rounds: int
    inbox: Inbox
    manager: str = "Manager"
    goal: str = ""
    routed: list[dict[str, Any]] = field(default_factory=list)  # this round's deliveries so far

    def see(self, event: ev.Event) -> None:
        if self.calls.conversational:
            SEES.dispatch(self, event)

    @SEES.on(ev.RoundStarted)
    def _round(self, _event: ev.RoundStarted) -> None:
        self.routed = []

    @SEES.on(ev.MessagesRouted)
    def _routed(self, event: ev.MessagesRouted) -> None:
        if not event.broadcast:
            self.routed.extend(event.deliveries)

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
            if parsed and event.call == ev.CallKind.PLAN:
                self.calls.replay_manager(plan_turn(self.max_rounds), event.raw, event.round)
            return
        if not parsed and (event.call == ev.CallKind.DESCRIPTORS or event.status is not ev.CallStatus.UNPARSED):
            return
        mine = [d for d in self.routed if d["dst"] == event.agent] if event.call == ev.CallKind.WORK else []
        self.calls.replay_worker(event.agent, event.call, event.round, self.goal, self.inbox(mine), event.raw)

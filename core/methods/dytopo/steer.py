"""Steering DyTopo's rounds (and the graph baselines that run them): what each action changes, and when.

The method sets ``apply`` as the run's steering hook (RunControl.steer_hook); it is called at a barrier, or
at once for a note that says "now". Actions change state kept here; the round loop reads it at fixed
points (docs/steering.md):

* a note waits for its agent's next call and comes first in that call's inbox, from "User"; once sent it
  stays in the agent's memory like a routed message. "now" cancels the agent's call in flight and asks
  again with the note (the cancelled call's tokens are counted, as any cut-off call's);
* a new goal replaces the goal of the next round's workers before any of them sees it, and the Manager's
  review of that round is told the user changed it;
* pins, cuts and silenced agents go into every graph built from then on (core.routing.dytopo's rules);
  at the barrier between routing and work the current graph is rebuilt at once;
* retry and replace act on an output of the round whose work just finished, before it is routed (the
  single-pass protocol's barrier) and before the Manager reviews it; messages the phased protocol
  already delivered within the round stay as delivered;
* continue vetoes the next ending (the Manager's, max_rounds' or convergence's): one more round;
* agent changes a worker's model, endpoint or temperature from its next call on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from core.methods.registry import registered
from core.routing.dytopo import RemovalReason, RemovedEdge, RoutingResult, check_pin
from core.runtime import events as ev
from core.runtime.engine import AgentResult
from core.runtime.events import CallStatus
from core.runtime.memory import AgentMemory, MemoryItem
from core.runtime.run_context import notice
from core.runtime.steering import ALL, SteerAction, SteerError, SteerKind, SteerWhen, parse_action, unknown_agent

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

USER = "User"  # who a note comes from, in an inbox and in memory
Pair = tuple[str, str]
MakeCall = Callable[[str], Awaitable[AgentResult]]  # the user's notes (rendered) -> the agent's call


@dataclass
class _Span:
    """How long a pin or cut holds: ``rounds`` graphs from the first it enters (None: until released)."""

    rounds: int | None
    first: int | None = None

    def holds(self, round_no: int) -> bool:
        if self.first is None:
            self.first = round_no
        return self.rounds is None or round_no < self.first + self.rounds


def render_notes(notes: list[str]) -> str:
    """The user's notes as inbox items, in the shape of a routed message (marked as the user's)."""
    return "\n\n".join(f"[from {USER}, the person running this team]\n{text.strip()}" for text in notes)


def join_inbox(notes: str, inbox: str) -> str:
    return "\n\n".join(part for part in (notes, inbox) if part)


class DyTopoSteering:
    """One run's steering state; ``apply`` is the run's steering hook."""

    def __init__(
        self, ctx: RunContext, method_name: str, *, acyclic: bool, reroute: Callable[[], bool],
        memory: dict[str, AgentMemory],
    ) -> None:
        self.ctx = ctx
        self.memory = memory  # the workers' memories (core.methods.dytopo.calls): a sent note stays there
        self.method_name = method_name
        self.acyclic = acyclic  # the graph must stay acyclic (phased work runs in tiers)
        self._reroute = reroute  # rebuild the current graph now; False when its work has begun
        self.pins: dict[Pair, _Span] = {}
        self.cuts: dict[Pair, _Span] = {}
        self.silenced: set[str] = set()
        self.notes: dict[str, list[str]] = {}
        self.new_goal: str | None = None
        self.goal_changed: dict[int, str] = {}  # round -> the Manager's goal the user replaced
        self.continues = 0
        self.vetoed_round = 0  # the round whose ending a continue vetoed
        self.redo: dict[str, str | None] = {}  # agent -> None (retry) or its output by hand (replace)
        self._last_call: dict[str, MakeCall] = {}  # each agent's latest work call, to ask it again
        self._inflight: dict[str, asyncio.Task[AgentResult]] = {}
        self._renote: set[str] = set()  # agents whose call in flight a "now" note cancelled

    # --- the hook -----------------------------------------------------------------------------------
    def apply(self, action: SteerAction) -> str:
        """Take one action; "" or the one-line reason it is refused."""
        info = registered().get(self.method_name)
        why = info.why_not(action.action) if info is not None else ""
        if why:
            return why
        why = unknown_agent(action, self.ctx.spec.workers)
        if why:
            return why
        handler = getattr(self, f"_{action.action.value}")
        reason: str = handler(action)
        return reason

    def _note(self, a: SteerAction) -> str:
        if not a.text.strip():
            return "an empty note: nothing to send"
        targets = list(self.ctx.spec.workers) if a.to == ALL else [a.to]
        for name in targets:
            self.notes.setdefault(name, []).append(a.text)
        if a.when == SteerWhen.NOW:
            for name in targets:
                task = self._inflight.get(name)
                if task is not None and not task.done():
                    self._renote.add(name)
                    task.cancel()
        return ""

    def _goal(self, a: SteerAction) -> str:
        if not a.text.strip():
            return "an empty goal: the round keeps its own"
        self.new_goal = a.text.strip()
        return ""

    def _pin(self, a: SteerAction) -> str:
        why = check_pin(frozenset(self.pins), a.src, a.dst, acyclic=self.acyclic)
        if why:
            return why
        self.cuts.pop((a.src, a.dst), None)
        self.pins[(a.src, a.dst)] = _Span(a.rounds)
        self._reroute()
        return ""

    def _cut(self, a: SteerAction) -> str:
        if a.src == a.dst:
            return f"cannot cut {a.src}→{a.dst}: an agent does not send to itself"
        self.pins.pop((a.src, a.dst), None)
        self.cuts[(a.src, a.dst)] = _Span(a.rounds)
        self._reroute()
        return ""

    def _release(self, a: SteerAction) -> str:
        if self.pins.pop((a.src, a.dst), None) is None and self.cuts.pop((a.src, a.dst), None) is None:
            return f"{a.src}→{a.dst} is neither pinned nor cut"
        self._reroute()
        return ""

    def _silence(self, a: SteerAction) -> str:
        if a.agent in self.silenced:
            return f"{a.agent} is silenced already"
        if len(self.active(self.ctx.spec.workers)) <= 1:
            return f"cannot silence {a.agent}: it is the last agent that runs"
        self.silenced.add(a.agent)
        self.redo.pop(a.agent, None)
        self._reroute()
        return ""

    def _restore(self, a: SteerAction) -> str:
        if a.agent not in self.silenced:
            return f"{a.agent} is not silenced"
        self.silenced.discard(a.agent)
        self._reroute()
        return ""

    def _retry(self, a: SteerAction) -> str:
        if a.agent in self.silenced:
            return f"{a.agent} is silenced: restore it first"
        self.redo[a.agent] = None
        return ""

    def _replace(self, a: SteerAction) -> str:
        if a.agent in self.silenced:
            return f"{a.agent} is silenced: restore it first"
        if not a.text.strip():
            return f"an empty output for {a.agent}: its own stays"
        self.redo[a.agent] = a.text
        return ""

    def _stop(self, a: SteerAction) -> str:
        self.ctx.stop()
        return ""

    def _continue(self, a: SteerAction) -> str:
        self.continues += 1
        return ""

    def _agent(self, a: SteerAction) -> str:
        role = self.ctx.spec.team.role(a.agent)
        changes = a.payload
        endpoint = str(changes.get("endpoint", "")) or None
        if endpoint is not None and not endpoint.startswith(("http://", "https://")):
            return f"endpoint {endpoint!r} is not an http(s) URL"
        new = replace(
            role,
            temperature=float(changes["temperature"]) if "temperature" in changes else role.temperature,
            model=str(changes.get("model") or role.model or "") or None,
            base_url=endpoint or role.base_url,
        )
        self.ctx.record(new)  # a new model or endpoint: the run opens (and closes) the agent's own client
        return ""

    # --- what the round loop reads ------------------------------------------------------------------
    def active(self, workers: list[str] | tuple[str, ...]) -> list[str]:
        """The workers that run: every one but the silenced."""
        return [name for name in workers if name not in self.silenced]

    def graph_sets(self, round_no: int) -> tuple[frozenset[Pair], frozenset[Pair], frozenset[str]]:
        """(pinned, cut, silenced) for this round's graph; pins and cuts whose rounds are over are dropped."""
        for table in (self.pins, self.cuts):
            for pair in [p for p, span in table.items() if not span.holds(round_no)]:
                del table[pair]
        return frozenset(self.pins), frozenset(self.cuts), frozenset(self.silenced)

    def without_silenced(self, routing: RoutingResult) -> RoutingResult:
        """A baseline's fixed graph with the silenced agents' edges taken out (DyTopo's own routing does
        this itself)."""
        if not self.silenced:
            return routing
        gone = [e for e in routing.edges if e.src in self.silenced or e.dst in self.silenced]
        return replace(
            routing,
            edges=[e for e in routing.edges if e not in gone],
            removed=[*routing.removed,
                     *(RemovedEdge(e.src, e.dst, e.score, RemovalReason.SILENCED, e.kind) for e in gone)],
            inactive=[name for name in routing.names if name in self.silenced],
            # Out of the order and the tiers too: a silenced agent does not run, so it has no place.
            order=[name for name in routing.order if name not in self.silenced],
            paper_order=[name for name in routing.paper_order if name not in self.silenced],
            tiers=[tier for tier in ([n for n in t if n not in self.silenced] for t in routing.tiers) if tier],
        )

    def round_goal(self, round_no: int, goal: str) -> str:
        """The goal this round's workers get: the user's, when one was given since the last round began."""
        if self.new_goal is None:
            return goal
        self.goal_changed[round_no] = goal
        goal, self.new_goal = self.new_goal, None
        # Every face shows the goal the round ran with, as the user's, beside the one it replaced.
        self.ctx.emit(ev.GoalReplaced(round=round_no, goal=goal, replaced=self.goal_changed[round_no]))
        return goal

    def review_note(self, round_no: int) -> str:
        """What the Manager's review of this round is told about a goal the user replaced."""
        old = self.goal_changed.get(round_no)
        if old is None:
            return ""
        return (f"NOTE: the person running this team replaced your goal for this round with the goal above; "
                f"your goal was: {old}")

    def veto(self, round_no: int) -> bool:
        """True when a pending continue vetoes this round's ending (it is used up)."""
        if self.vetoed_round == round_no:
            return True
        if self.continues <= 0:
            return False
        self.continues -= 1
        self.vetoed_round = round_no
        notice(self.ctx, "the user vetoed the end of the run: one more round", "info")
        return True

    # --- calls --------------------------------------------------------------------------------------
    async def call(self, name: str, make: MakeCall) -> AgentResult:
        """One worker call with the user's pending notes first in its inbox. A "now" note cancels the call
        in flight and asks again with it; once the call is answered the notes are in the agent's memory."""
        while True:
            notes = list(self.notes.get(name, []))
            task: asyncio.Task[AgentResult] = asyncio.ensure_future(make(render_notes(notes)))
            self._inflight[name] = task
            try:
                result = await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if name in self._renote and (current is None or not current.cancelling()):
                    self._renote.discard(name)
                    continue  # a "now" note: the same call again, with it
                raise
            finally:
                self._inflight.pop(name, None)
            self._last_call[name] = make
            self._delivered(name, notes)
            return result

    def _delivered(self, name: str, notes: list[str]) -> None:
        pending = self.notes.get(name, [])
        del pending[: len(notes)]
        for text in notes:
            self.memory[name].add(MemoryItem(self.ctx.state.round, "user", USER, text))

    async def redo_outputs(self, outputs: dict[str, AgentResult], call: str) -> dict[str, AgentResult]:
        """Retried and replaced outputs of the round whose work just finished, in place of the agents' own;
        the agent's memory of its own output follows."""
        if not self.redo:
            return outputs
        todo, self.redo = self.redo, {}
        outputs = dict(outputs)
        for name, text in todo.items():
            if name not in outputs:
                notice(self.ctx, f"{name} did not run this round: nothing to {'retry' if text is None else 'replace'}",
                               "warning", name)
                continue
            make = self._last_call.get(name)
            if text is None and make is not None:
                result = await self.call(name, make)
            else:
                result = AgentResult(name, CallStatus.DONE, public=(text or "").strip(), raw=text or "",
                                     query=outputs[name].query, key=outputs[name].key)
                self.ctx.record(result)
                self.ctx.emit(ev.AgentFinished(round=self.ctx.state.round, agent=name, call=call,
                                               status=CallStatus.DONE,
                                              public=result.public, raw=result.raw))
            outputs[name] = result
            memory = self.memory[name]
            own = (self.ctx.state.round, "own", name)
            memory.items = [replace(item, text=result.public) if (item.round, item.kind, item.source) == own else item
                            for item in memory.items]
        return outputs

    def replay(self, event: ev.UserSteered, action: SteerAction) -> None:
        """A fork: the parent's accepted actions rebuild the state they left (pins, cuts, silenced agents,
        changed agents) and the notes sent before the fork point stay in their agents' memory."""
        if not event.accepted:
            return
        if action.action is SteerKind.NOTE:
            for name in list(self.ctx.spec.workers) if action.to == ALL else [action.to]:
                if name in self.memory:
                    self.memory[name].add(MemoryItem(event.round, "user", USER, action.text))
        elif action.action in (SteerKind.PIN, SteerKind.CUT, SteerKind.RELEASE, SteerKind.SILENCE,
                               SteerKind.RESTORE, SteerKind.AGENT):
            self.apply(action)


def recorded_action(event: ev.UserSteered) -> SteerAction | None:
    """The action a recorded UserSteered event took, or None when it cannot be read back (a newer kind)."""
    fields = {k: v for k, v in event.payload.items() if k != "at_round"}
    try:
        return parse_action({"action": event.action, **fields})
    except SteerError:
        return None

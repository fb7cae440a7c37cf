"""A DMoA fork's conversations, rebuilt from the parent's recorded steps as the live run built them (issue 46).

A fork (core.methods.dmoa.replay) re-emits the parent's steps; each caller's conversation (core.methods.dmoa.threads:
a pool agent's, the Summarizer's, the Selector's) is rebuilt from them. Each recorded call becomes the request the
live run sent (Wu et al., arXiv 2605.15706, Alg. 2: an agent of step i reads P_last, the responses of step i-1's
routed agents that answered, and step i-1's test results; the Summarizer reads step i's responses and test
results; the Selector reads P_last), through the same request builders and the same context budget, with the
reply the run kept (a parsed reply: ``keep_reply``). The person's notes reach the calls they reached live (a note
to all: every agent of the next step; to one agent: the next step it runs in, core.methods.dmoa.steer).

What the events cannot give back: a turn the live run cut to fit a model's smaller context is rebuilt uncut
(the fork's prefix then differs from that turn on). A session that lacks what a caller's turns need (the raw
reply of a kept call, or a step's test results in sessions recorded before DmoaStepDone.feedback) gives that
caller a fresh conversation, said in one notice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.methods.dmoa.events import CALL_SELECT, CALL_STEP, CALL_SUMMARY, DmoaRouted, DmoaStepDone
from core.methods.dmoa.prompts import PoolAgent
from core.methods.dmoa.selector import SELECTOR
from core.methods.dmoa.steer import USER
from core.methods.dmoa.summary import SUMMARIZER
from core.methods.dmoa.threads import DmoaRequests, Request
from core.runtime import events as ev
from core.runtime.agent_threads import keep_recorded, quietly, start_fresh
from core.runtime.dispatch import EventTable
from core.runtime.steering import ALL, SteerKind

UNKNOWN = None  # a step's test results that the session did not record


@dataclass
class PendingNotes:
    """The person's notes as DmoaSteering delivered them: to all, every agent of the next step; to one agent,
    the next step it runs in. What no call had read by the fork point reaches the fork's (DmoaSteering.carry)."""

    to_all: list[str] = field(default_factory=list)
    this_step: list[str] = field(default_factory=list)
    waiting: dict[str, list[str]] = field(default_factory=dict)

    def add(self, to: str, text: str) -> None:
        if to == ALL:
            self.to_all.append(text)
        else:
            self.waiting.setdefault(to, []).append(text)

    def step_begins(self) -> None:
        self.this_step, self.to_all = self.to_all, []

    def block(self, name: str) -> str:
        notes = [*self.this_step, *self.waiting.pop(name, [])]
        return "\n\n".join(f"A NOTE FROM {USER}, the person running this team:\n{text}" for text in notes)


@dataclass
class DmoaRebuild:
    """Feeds a fork's history, event by event, into the run's conversations (DmoaRequests)."""

    requests: DmoaRequests
    pool: Sequence[PoolAgent]
    k_max: int
    l_max: int = 0  # the step's L_max as the run had it (its RoundStarted's max_rounds)
    selected: dict[int, list[str]] = field(default_factory=dict)  # step -> the agents it routed
    public: dict[int, dict[str, str]] = field(default_factory=dict)  # step -> agent -> its response
    feedback: dict[int, str | None] = field(default_factory=dict)  # step -> its test results (UNKNOWN)
    tested: set[int] = field(default_factory=set)  # steps whose code was tested
    summaries: dict[int, ev.AgentFinished] = field(default_factory=dict)  # waiting for the step's results
    notes: PendingNotes = field(default_factory=PendingNotes)
    missing: set[str] = field(default_factory=set)  # callers whose turns the session cannot give back

    def see(self, event: ev.Event) -> None:
        """One recorded event (in the paper's layout only what a fork's first step reads is kept)."""
        with quietly(self.requests.threads):  # the parent's trims are in its history already
            SEES.dispatch(self, event)

    def responses(self, step: int) -> list[tuple[str, str]]:
        """P_last after ``step``: its routed agents that answered, in the router's order (DmoaMethod._aggregate)."""
        said = self.public.get(step, {})
        return [(name, said[name]) for name in self.selected.get(step, []) if said.get(name)]

    def results_of(self, step: int) -> str | None:
        """The test results a step left ("" before step 1, or when its code was not tested)."""
        if step in self.feedback:
            return self.feedback[step]
        return UNKNOWN if step in self.tested else ""

    def keep(self, request: Request, event: ev.AgentFinished) -> None:
        keep_recorded(request, event, self.missing)

    def finish(self) -> None:
        """The Summarizer's calls still waiting for their step's results; then the callers the session could not
        rebuild start fresh, said once."""
        threads = self.requests.threads
        with quietly(threads):
            for step in sorted(self.summaries):
                self.summarize(self.summaries.pop(step), self.results_of(step))
        start_fresh(self.requests.ctx, threads, self.missing, "turns (a raw reply or a step's test results)")

    def summarize(self, event: ev.AgentFinished, results: str | None) -> None:
        """The Summarizer's call of a step, once the step's test results are known."""
        if results is UNKNOWN:
            self.missing.add(SUMMARIZER)
        step = event.round
        self.keep(self.requests.summarizer(SUMMARIZER, step, self.l_max, self.responses(step), results or ""), event)


SEES: EventTable[DmoaRebuild] = EventTable()  # what the rebuild takes from each recorded event


@SEES.on(ev.RoundStarted)
def _step(rebuild: DmoaRebuild, event: ev.RoundStarted) -> None:
    rebuild.l_max = int(event.params.get("max_rounds", rebuild.l_max))


@SEES.on(DmoaRouted)
def _routed(rebuild: DmoaRebuild, event: DmoaRouted) -> None:
    rebuild.selected[event.round] = list(event.selected)
    rebuild.notes.step_begins()


@SEES.on(ev.TestRun)
def _tested(rebuild: DmoaRebuild, event: ev.TestRun) -> None:
    rebuild.tested.add(event.round)


@SEES.on(DmoaStepDone)
def _step_done(rebuild: DmoaRebuild, event: DmoaStepDone) -> None:
    if event.feedback is not None:
        rebuild.feedback[event.round] = event.feedback
    waiting = rebuild.summaries.pop(event.round, None)
    if waiting is not None:
        rebuild.summarize(waiting, rebuild.results_of(event.round))


@SEES.on(ev.UserSteered)
def _steered(rebuild: DmoaRebuild, event: ev.UserSteered) -> None:
    text = str(event.payload.get("text", "")).strip()
    if event.accepted and event.action == SteerKind.NOTE and text:
        rebuild.notes.add(str(event.payload.get("to", ALL)), text)


@SEES.on(ev.AgentFinished)
def _call(rebuild: DmoaRebuild, event: ev.AgentFinished) -> None:
    step = event.round
    if event.call == CALL_STEP:
        rebuild.public.setdefault(step, {})[event.agent] = event.public
        _agent_call(rebuild, event)
    elif event.call == CALL_SUMMARY:
        rebuild.summaries[step] = event  # its request holds the step's test results, recorded after it
    elif event.call == CALL_SELECT:
        request = rebuild.requests.selector(SELECTOR, step, rebuild.responses(step - 1), rebuild.pool, rebuild.k_max)
        rebuild.keep(request, event)


def _agent_call(rebuild: DmoaRebuild, event: ev.AgentFinished) -> None:
    agent = next((a for a in rebuild.pool if a.name == event.agent), None)
    note = rebuild.notes.block(event.agent)  # used up by the call, kept or not, as live
    if agent is None:  # a pool this fork does not have: its conversation is not this run's
        return
    step = event.round
    results = rebuild.results_of(step - 1)
    if results is UNKNOWN:
        rebuild.missing.add(event.agent)
    request = rebuild.requests.agent(agent, step, rebuild.responses(step - 1), results or "", note)
    rebuild.keep(request, event)

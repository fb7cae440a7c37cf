"""TopoWeaver-R1's requests: the Orchestrator's and each reused agent's growing conversation (the default), or
each request rebuilt (the paper's).

The Orchestrator writes a plan every turn, and an id reused in a later turn is the same agent, which sees its
own earlier output (TopoWeaver-R1 Alg. 1, eq. 3 and 15). In the default prompt order each keeps one
conversation (core.runtime.agent_threads): its system prompt, then per call a user turn and the reply it kept.
The Orchestrator's later turns hold only the history H that is new since its last kept plan (the outcome of
the turns since); a reused agent's later turns hold the new view and what it reads (its earlier outputs are
its own assistant turns). The problem is said once, in the first turn. What the layout adds to the paper's
prompt: the earlier turns' requests (asks, views and reads) stay in the transcript. An agent whose type
changes starts a new conversation. ``prompt_order=paper`` rebuilds every request (the history, the memory).
"""

from __future__ import annotations

from collections.abc import Callable

from core.methods.topoweaver.plan import PlanAgent
from core.methods.topoweaver.prompts import (
    ORCHESTRATOR,
    TurnNote,
    agent_request,
    agent_system_prompt,
    orchestrator_request,
    orchestrator_system_prompt,
)
from core.runtime.agent_threads import ThreadRequest, threads_for
from core.runtime.context import Messages, shrink_pieces
from core.runtime.run_context import RunContext

Request = ThreadRequest


class TopoWeaverRequests:
    """One run's requests, by the prompt order the run chose."""

    def __init__(self, ctx: RunContext, domain: str, prompt_order: str) -> None:
        self.ctx = ctx
        self.domain = domain
        self.threads = threads_for(ctx, prompt_order)

    def orchestrator(self, turn: int, turns: int, notes: list[TurnNote]) -> Request:
        """Over the model's context, the history H loses its oldest turns first."""
        problem, system = self.ctx.spec.problem, orchestrator_system_prompt(self.domain, turns)
        if self.threads is None:
            return self._rebuilt(system, lambda kept: orchestrator_request(problem, turn, turns, kept), notes)
        conversation = self.threads.conversations.get(ORCHESTRATOR)
        if self.threads.begun(ORCHESTRATOR) and conversation is not None and conversation.system == system:
            notes = [n for n in notes if n.turn >= conversation.last_round()]  # what is new since its last plan
        return self._continued(ORCHESTRATOR, system, turn, notes,
                               lambda said, kept: orchestrator_request(None if said else problem, turn, turns, kept))

    def agent(self, agent: PlanAgent, turn: int, steps: int, view: str, memory: list[tuple[int, str]],
              reads: list[tuple[str, str]]) -> Request:
        """Over the model's context: its own oldest outputs go first, then what it reads is cut to equal shares."""
        problem, system = self.ctx.spec.problem, agent_system_prompt(self.domain, agent)
        if self.threads is not None:
            labels = [label for label, _ in reads]
            turn_, shrink = self.threads.turn(agent.id, system, turn, lambda said, texts: agent_request(
                None if said else problem, agent, turn=turn, steps=steps, view=view,
                memory=[] if said else memory,  # its kept outputs are its own assistant turns
                reads=list(zip(labels, texts, strict=True))), [text for _, text in reads])
            return turn_.messages, shrink, turn_

        def build(kept: list[str], texts: list[str]) -> Messages:
            mine = memory[len(memory) - len(kept):] if kept else []
            return [{"role": "system", "content": system}, {"role": "user", "content": agent_request(
                problem, agent, turn=turn, steps=steps, view=view,
                memory=[(t, text) for (t, _), text in zip(mine, kept, strict=True)],
                reads=[(label, text) for (label, _), text in zip(reads, texts, strict=True)])}]

        own, read = [text for _, text in memory], [text for _, text in reads]
        return build(own, read), shrink_pieces(build, own, read), None

    @staticmethod
    def _rebuilt(system: str, user: Callable[[list[TurnNote]], str], notes: list[TurnNote]) -> Request:
        def build(kept: list[str], _: list[str]) -> Messages:
            shown = notes[len(notes) - len(kept):] if kept else []
            return [{"role": "system", "content": system}, {"role": "user", "content": user(shown)}]

        texts = [note.text for note in notes]
        return build(texts, []), shrink_pieces(build, texts), None

    def _continued(self, name: str, system: str, turn: int, notes: list[TurnNote],
                   user: Callable[[bool, list[TurnNote]], str]) -> Request:
        assert self.threads is not None
        numbers = [n.turn for n in notes]
        turn_, shrink = self.threads.turn(name, system, turn, lambda said, texts: user(
            said, [TurnNote(number, text) for number, text in zip(numbers, texts, strict=True)]),
            [n.text for n in notes])
        return turn_.messages, shrink, turn_


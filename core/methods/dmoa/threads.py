"""DMoA's requests: each caller's growing conversation (the default), or each request rebuilt (the paper's).

DMoA calls the same agent step after step (a pool agent whenever the router picks it, the Summarizer and the
Selector at every step; Wu et al., arXiv 2605.15706, Alg. 2). In the default prompt order each of them keeps
one conversation (core.runtime.agent_threads): its system prompt (the profile and, by default, the user query:
P_sys = (Profile, P_usr), §3.1), then per step a user turn with the previous step's responses (P_last) and the
ask, and the reply it kept. The problem is said once, in the first turn, where it is not in the system prompt.
What the layout adds to the paper's prompt: the agent's own earlier steps (the paper shows only P_last).
``prompt_order=paper`` rebuilds every request from the profile, the query and P_last alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.methods.dmoa.prompts import (
    PoolAgent,
    QueryPlace,
    agent_request,
    agent_system_prompt,
    fitted,
    selector_request,
    selector_system_prompt,
    summarizer_request,
    summarizer_system_prompt,
)
from core.runtime import events as ev
from core.runtime.agent_threads import ThreadRequest, ThreadTurn, threads_for
from core.runtime.engine import AgentResult
from core.runtime.run_context import RunContext

Responses = Sequence[tuple[str, str]]
Request = ThreadRequest


class DmoaRequests:
    """One run's requests, by the prompt order the run chose."""

    def __init__(self, ctx: RunContext, query_in: str, prompt_order: str) -> None:
        self.ctx = ctx
        self.domain = ctx.spec.team.name
        self.in_system = query_in == QueryPlace.SYSTEM
        self.threads = threads_for(ctx, prompt_order)

    def agent(self, agent: PoolAgent, step: int, previous: Responses, feedback: str, note: str) -> Request:
        problem = self.ctx.spec.problem
        system = agent_system_prompt(self.domain, agent, problem if self.in_system else None)

        def user(said: bool, responses: Responses) -> str:
            asked = agent_request(agent.name, step, None if self.in_system or said else problem, responses, feedback)
            return "\n\n".join(part for part in (asked, note) if part)

        return self._request(agent.name, system, step, previous, user)

    def summarizer(self, name: str, step: int, l_max: int, responses: Responses, feedback: str) -> Request:
        problem = self.ctx.spec.problem
        return self._request(name, summarizer_system_prompt(self.domain), step, responses,
                             lambda said, shown: summarizer_request(step, l_max, None if said else problem, shown,
                                                                    feedback))

    def selector(self, name: str, step: int, previous: Responses, pool: Sequence[PoolAgent], k_max: int) -> Request:
        problem = self.ctx.spec.problem
        return self._request(name, selector_system_prompt(self.domain, pool, k_max), step, previous,
                             lambda said, responses: selector_request(step, None if said else problem, responses,
                                                                      k_max))

    def _request(self, name: str, system: str, step: int, responses: Responses,
                 user: Callable[[bool, Responses], str]) -> Request:
        """``user(said, responses)``: the user text, without the problem when the conversation holds it."""
        names = [who for who, _ in responses]
        if self.threads is None:
            messages, shrink = fitted(responses, lambda shown: [
                {"role": "system", "content": system}, {"role": "user", "content": user(False, shown)}])
            return messages, shrink, None
        turn, shrink = self.threads.turn(
            name, system, step, lambda said, texts: user(said, list(zip(names, texts, strict=True))),
            [text for _, text in responses])
        return turn.messages, shrink, turn



def keep_reply(turn: ThreadTurn | None, result: AgentResult) -> None:
    """A reply the run kept goes into its caller's conversation (a failed or copied one does not)."""
    if turn is not None and result.status == ev.CallStatus.DONE:
        turn.keep(result.raw)

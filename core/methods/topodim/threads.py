"""TopoDIM's agent requests: each agent's growing conversation (the default), or each rebuilt (the paper's).

TopoDIM calls an agent more than once when its typed edges say so (Sun et al., §3.2 "Execution order": a
feedback edge's review and the revision, a debate's challenge and defence, and the agent's own answer). In
the default prompt order each agent keeps one conversation (core.runtime.agent_threads): its system prompt,
then per call a user turn with what it reads and the call's ask, and the reply it kept; the problem is said
once, in its first turn. What the layout adds to the paper's prompt: the agent's own earlier calls of the
pass. ``prompt_order=paper`` rebuilds every request from the role, the problem and what the call reads. The
decision-maker's two calls (the prior's graph and the final answer) have different system prompts: each is
one request.
"""

from __future__ import annotations

from collections.abc import Callable

from core.methods.topodim.prompts import PEER_CHARS, clip_shrink
from core.runtime.agent_threads import ThreadTurn, threads_for, tracked
from core.runtime.context import Messages, Shrink
from core.runtime.run_context import RunContext

UserText = Callable[[str | None, int], str]  # (the problem or None when said already, the quote limit) -> text


class TopoDIMRequests:
    """One run's agent requests, by the prompt order the run chose."""

    def __init__(self, ctx: RunContext, prompt_order: str) -> None:
        self.ctx = ctx
        self.threads = threads_for(ctx, prompt_order)

    def agent(self, name: str, system: str, user: UserText) -> tuple[Messages, Shrink, ThreadTurn | None]:
        """The messages of an agent's call, how to clip what it quotes to fit a context, the turn to keep."""
        problem = self.ctx.spec.problem
        if self.threads is None:
            def make(limit: int) -> Messages:
                return [{"role": "system", "content": system}, {"role": "user", "content": user(problem, limit)}]

            return make(PEER_CHARS), clip_shrink(make), None
        turn = self.threads.open(name, system, 1, lambda said: user(None if said else problem, PEER_CHARS))
        conversation, shown = turn.conversation, None if self.threads.begun(name) else problem
        shrink = tracked(turn, clip_shrink(lambda limit: conversation.request(user(shown, limit))))
        return turn.messages, shrink, turn


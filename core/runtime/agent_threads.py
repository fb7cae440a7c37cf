"""Each agent's requests as one growing conversation, for a method that calls the same agent more than once
(issue 46: DMoA's agents and its Summarizer step after step, TopoDIM's agents in several modes, TopoWeaver-R1's
Orchestrator turn after turn).

An agent's first request is its system prompt and one user turn; every later one is the previous request, the
reply the method kept as an assistant turn, and the new user turn, byte for byte (core.runtime.conversation),
so a server's prefix cache prefills only what is new. A re-ask is a side request (core.runtime.calls adds its
turns after the request and keeps nothing); a reply is appended only when the method keeps it (``keep``). When
a conversation outgrows the run's context budget its oldest exchanges go in one step (the prefix breaks once)
and the method hears what was dropped; over a model's smaller context the new turn's pieces are cut first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from core.runtime import events as ev
from core.runtime.context import Messages, Shrink, shrink_pieces
from core.runtime.conversation import Conversation, Trimmed
from core.runtime.prompts import PromptOrder
from core.runtime.run_context import RunContext, notice

Report = Callable[[str, Trimmed], None]  # (agent, what a trim dropped)


@dataclass
class ThreadTurn:
    """A request about to be sent as the next turn of an agent's conversation."""

    conversation: Conversation
    user: str  # the new user turn, as sent (a shrink may cut its pieces)
    round: int

    @property
    def messages(self) -> Messages:
        return self.conversation.request(self.user)

    def keep(self, reply: str) -> None:
        """Append the kept reply: the agent's next request begins with this one and the reply."""
        self.conversation.commit(self.user, reply, self.round)


ThreadRequest = tuple[Messages, Shrink, ThreadTurn | None]  # the messages, how to fit them, the turn to keep (or None)


def keep_recorded(request: ThreadRequest, event: ev.AgentFinished, missing: set[str]) -> None:
    """A fork's rebuild keeps a recorded call as the live run kept it: a parsed reply goes into the caller's
    conversation. A session saved without the raw reply adds the caller to ``missing`` (it then starts fresh)."""
    turn = request[2]
    if turn is None or event.status is not ev.CallStatus.DONE:
        return
    if not event.raw:
        missing.add(event.agent)
    turn.keep(event.raw)


def start_fresh(ctx: RunContext, threads: AgentThreads | None, missing: set[str], what: str) -> None:
    """The end of a fork's rebuild: the callers whose ``what`` (e.g. "replies") the session does not record
    lose their rebuilt conversations and start fresh, said once."""
    if threads is None or not missing:
        return
    for name in missing:
        threads.conversations.pop(name, None)
    notice(ctx, f"{', '.join(sorted(missing))}: this session does not record all their {what}, so their "
           "conversations start fresh", "info")


class AgentThreads:
    """One run's conversations, one per agent, each begun with that agent's own system prompt."""

    def __init__(self, budget_tokens: int, report: Report) -> None:
        self.budget_tokens = budget_tokens
        self.report = report
        self.conversations: dict[str, Conversation] = {}

    def begun(self, agent: str) -> bool:
        """The agent's conversation still holds its first turn, which carried the problem (a trim that dropped
        it makes the next turn say the problem again)."""
        conversation = self.conversations.get(agent)
        return conversation is not None and conversation.exchanges > 0 and not conversation.dropped

    def open(self, agent: str, system: str, round_no: int, make_user: Callable[[bool], str]) -> ThreadTurn:
        """The agent's next turn; ``make_user(said)`` writes its user text, ``said`` telling whether the
        conversation still holds the first turn (the problem). A conversation over the run's context budget
        first drops its oldest exchanges, in one step, and says so."""
        conversation = self.conversations.get(agent)
        if conversation is None or conversation.system != system:  # a new role is a new conversation
            conversation = self.conversations[agent] = Conversation(system)
        if conversation.tokens(make_user(self.begun(agent))) > self.budget_tokens:
            trimmed = conversation.trim(self.budget_tokens // 2)
            if trimmed is not None:
                self.report(agent, trimmed)
        return ThreadTurn(conversation, make_user(self.begun(agent)), round_no)

    def turn(
        self, agent: str, system: str, round_no: int, make_user: Callable[[bool, list[str]], str],
        pieces: Sequence[str],
    ) -> tuple[ThreadTurn, Shrink]:
        """The agent's next turn, its user text made from ``pieces`` (this turn's quoted texts; see open for
        ``said``), and how to cut those pieces to equal shares when the request must fit the model's context."""
        turn = self.open(agent, system, round_no, lambda said: make_user(said, list(pieces)))
        conversation, said = turn.conversation, self.begun(agent)
        return turn, tracked(turn, shrink_pieces(lambda _, shared: conversation.request(make_user(said, shared)), [],
                                                 list(pieces)))


@contextmanager
def quietly(threads: AgentThreads | None) -> Iterator[AgentThreads | None]:
    """The conversations with their trims unreported: a fork rebuilding them from the parent's events, whose
    history already holds each trim's MemoryTrimmed and notice (None: the paper's layout, no conversations)."""
    if threads is None:
        yield None
        return
    report, threads.report = threads.report, lambda _agent, _trimmed: None
    try:
        yield threads
    finally:
        threads.report = report


def tracked(turn: ThreadTurn, shrink: Shrink) -> Shrink:
    """``shrink`` (of the turn's whole request), remembering the user text it sent: what is kept is what was
    sent."""

    def smaller(most_chars: int) -> Messages | None:
        messages = shrink(most_chars)
        if messages is not None:
            turn.user = messages[-1]["content"]
        return messages

    return smaller


# The layouts a method that keeps its agents' conversations here offers (its ``prompt_order`` option).
THREAD_ORDERS = (PromptOrder.CONVERSATION, PromptOrder.PAPER)


def threads_for(ctx: RunContext, prompt_order: str) -> AgentThreads | None:
    """The run's agent conversations within its context budget, each trim reported (report_trim); None in the
    paper's layout (``-o prompt_order=paper``: every request rebuilt)."""
    if prompt_order != PromptOrder.CONVERSATION:
        return None
    return AgentThreads(ctx.spec.settings.context_budget_tokens, partial(report_trim, ctx))


def report_trim(ctx: RunContext, agent: str, trimmed: Trimmed) -> None:
    """What a trim dropped, recorded and said once: the server's cache starts again from there."""
    ctx.emit(ev.MemoryTrimmed(round=ctx.state.round, agent=agent, dropped=trimmed.exchanges,
                              dropped_tokens=trimmed.tokens))
    notice(ctx, f"{agent}: the conversation outgrew the context: its {trimmed.exchanges} oldest exchanges "
                f"(~{trimmed.tokens} tokens) were dropped, so the server's cache starts again from there",
           "info", agent)

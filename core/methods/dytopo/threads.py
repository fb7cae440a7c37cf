"""DyTopo's agents as growing conversations (the default prompt order, core.runtime.prompts PromptOrder.CONVERSATION).

Each agent (every worker, and the Manager) has one thread: a conversation (core.runtime.conversation) whose
system prompt is the team's preamble and the agent's role, and what the agent has been shown of its memory.
A worker's user turn carries what arrived since its last turn (routed messages, broadcasts, test results,
the person's notes: DyTopo eq. 3's H_i, arXiv 2602.06039 §3.1), the round's goal once per round, the call's
inbox and its ask; its own outputs are its assistant turns. Phased DyTopo's descriptor call and work call of a
round are consecutive turns. A turn is kept with the reply the run kept; a call that fails, or a reply that is
not the agent's own, leaves the conversation as it was, and what it showed is shown again next time. The
Manager's thread keeps its plan only: each review is a side request after it (eqs. 12-13: one round's state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.llm.tokens import estimate_tokens
from core.runtime import events as ev
from core.runtime.context import Messages, Shrink, prompt_chars, shrink_pieces
from core.runtime.conversation import Conversation, Trimmed
from core.runtime.memory import AgentMemory, MemoryItem
from core.runtime.prompts import worker_turn

Report = Callable[[str, Trimmed], None]  # (agent, what a trim dropped): the method reports it

# Memory kinds a worker's inbox already delivered in a kept turn (not shown again when they enter memory).
_DELIVERED_KINDS = ("routed", "broadcast", "user")


@dataclass
class Thread:
    """One agent's conversation and what of its memory it has been shown."""

    conversation: Conversation
    shown: set[int] = field(default_factory=set)  # id() of memory items a kept turn showed
    answered: set[int] = field(default_factory=set)  # rounds with a kept reply (its "own" memory item)
    delivered: list[tuple[int, str]] = field(default_factory=list)  # (round, inbox) of kept turns
    goal: tuple[int, str] = (0, "")  # the last goal a kept turn showed

    def held(self, item: MemoryItem) -> bool:
        """The conversation already holds this memory item (shown, its own reply, or delivered in an inbox)."""
        if id(item) in self.shown:
            return True
        if item.kind == "own":
            return item.round in self.answered
        return item.kind in _DELIVERED_KINDS and any(
            r == item.round and item.text in text for r, text in self.delivered
        )


@dataclass
class Turn:
    """A request about to be sent: the messages, how to shrink them, and what keeping its reply commits."""

    thread: Thread | None  # None: a side request (nothing is kept)
    round: int
    goal: str
    inbox: str
    items: list[MemoryItem]
    user: str
    messages: Messages
    shrink: Shrink | None = None

    def keep(self, reply: str) -> None:
        """Append the kept reply: the next request of this agent begins with this one and the reply."""
        thread = self.thread
        if thread is None:
            return
        thread.conversation.commit(self.user, reply, self.round)
        thread.shown.update(id(item) for item in self.items)
        thread.answered.add(self.round)
        thread.delivered.append((self.round, self.inbox))
        thread.goal = (self.round, self.goal)


def worker_turn_for(
    thread: Thread, memory: AgentMemory, call: str, round_no: int, goal: str, inbox: str, *,
    suffix: str = "", report: Report | None = None, agent: str = "",
) -> Turn:
    """The next turn of a worker's conversation, with a shrink that drops the oldest exchanges for good
    (the prefix breaks once) and then cuts what this turn shows to equal shares."""
    first = not thread.conversation.turns and not thread.conversation.dropped
    items = [item for item in memory.visible() if not thread.held(item)]
    new_goal = thread.goal != (round_no, goal)

    def text(kept: list[str], shared: list[str]) -> str:
        return worker_turn(call, round_no, goal, "\n\n".join(kept), shared[0] if shared else "",
                           new_goal=new_goal, first=first) + suffix

    turn = Turn(thread, round_no, goal, inbox, items, "", [])
    turn.user = text([i.render() for i in items], [inbox] if inbox else [])
    turn.messages = thread.conversation.request(turn.user)

    def build(kept: list[str], shared: list[str]) -> Messages:
        turn.user = text(kept, shared)
        return thread.conversation.request(turn.user)

    cut = shrink_pieces(build, [i.render() for i in items], [inbox] if inbox else [])
    turn.shrink = conversation_shrink(thread.conversation, lambda: turn.user, cut, report, agent)
    return turn


def side_turn(system: str, user: str, round_no: int, goal: str) -> Turn:
    """A request that reads the conversation's system prompt only and keeps nothing (phased DyTopo's
    descriptor call under descriptor_context=round)."""
    return Turn(None, round_no, goal, "", [], user,
                [{"role": "system", "content": system}, {"role": "user", "content": user}])


def conversation_shrink(
    conversation: Conversation, user: Callable[[], str], fallback: Shrink | None, report: Report | None, agent: str
) -> Shrink:
    """Fit a conversation's request into ``most_chars``: its oldest exchanges go first, in one step and for
    good, down to half of it; when that is not enough, ``fallback`` cuts what the new turn shows."""

    def shrink(most_chars: int) -> Messages | None:
        # Down to half of what fits, so that the next turns grow from there before another trim.
        trimmed = conversation.trim_chars(max(0, most_chars // 2 - len(user()))) if conversation.turns else None
        if trimmed is not None and report is not None:
            report(agent, trimmed)
        request = conversation.request(user())
        if trimmed is not None and prompt_chars(request) <= most_chars:
            return request
        smaller = fallback(most_chars) if fallback is not None else None
        return smaller if smaller is not None else (request if trimmed is not None else None)

    return shrink


def within_budget(conversation: Conversation, user: str, budget_tokens: int) -> Trimmed | None:
    """The context budget (Settings.context_budget_tokens): a conversation that would outgrow it drops its
    oldest exchanges in one step, down to half of it, so that the prefix breaks once and then grows again."""
    if conversation.tokens(user) <= budget_tokens:
        return None
    return conversation.trim(max(0, budget_tokens // 2 - estimate_tokens(user)))


def trimmed_event(round_no: int, agent: str, trimmed: Trimmed) -> ev.MemoryTrimmed:
    return ev.MemoryTrimmed(round=round_no, agent=agent, dropped=trimmed.exchanges, dropped_tokens=trimmed.tokens)

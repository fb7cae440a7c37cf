"""DyTopo's own calls: a worker's call (work, descriptors, or both in one) with its memory, and the Manager's.

Each worker keeps a memory (core.runtime.memory: eq. 3's accumulated outputs and messages, or only the
latest per sender). In the default prompt order each agent's requests form one growing conversation
(core.runtime.conversation): the team's preamble and the role, then per call what arrived since the agent's
last turn, the round's goal, its inbox and the ask, and its kept reply; the transcript is eq. 3's memory.
The other orders rebuild each prompt from the memory, showing as much of it as the context budget leaves.
When a prompt must fit the model's context the oldest turns or items go first, for good. The engine only
sends the calls (core.runtime.calls) and announces them; what a worker is asked and remembers is DyTopo's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.llm.tokens import estimate_tokens
from core.methods.dytopo.threads import (
    Thread,
    Turn,
    conversation_shrink,
    side_turn,
    trimmed_event,
    within_budget,
    worker_turn_for,
)
from core.runtime import events as ev
from core.runtime.config import RoundProtocol
from core.runtime.context import Messages, Shrink, shrink_pieces
from core.runtime.conversation import Conversation, Trimmed
from core.runtime.engine import AgentResult, RunAborted
from core.runtime.events import CallStatus
from core.runtime.memory import AgentMemory, MemoryItem, MemoryRule
from core.runtime.parsing import is_template_copy, parse_descriptors, parse_manager, parse_work, parse_worker
from core.runtime.prompts import (
    PromptOrder,
    manager_request,
    manager_role,
    manager_system_prompt,
    manager_turn,
    plan_request,
    plan_turn,
    team_preamble,
    worker_messages,
    worker_role,
    worker_turn,
)
from core.runtime.run_context import CallReply, notice

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


# What the notice says of a worker whose reply copied the reply template twice (issue 44).
COPY_NOTICE = ("copied the reply template again: its reply is not used (not shown as work, not routed, its "
               "descriptors not embedded, so it has no routed edges this round)")


class DyTopoCalls:
    """One run's worker and Manager calls, and the workers' memories."""

    def __init__(
        self, ctx: RunContext, *, private_only: bool = False, memory_rule: str = MemoryRule.ACCUMULATE,
        prompt_order: str = PromptOrder.CONVERSATION, full_descriptors: bool = True,
    ) -> None:
        self.ctx = ctx
        # The edge payload: True when only the private message travels (the workers' prompt says so).
        self.private_only = private_only
        self.prompt_order = prompt_order  # core.runtime.prompts PROMPT_ORDERS: how a worker prompt is ordered
        # A descriptor call sees the agent's whole state (eq. 1: the whole problem and memory), a prefix the work
        # call then reuses from a server's cache; False: the economy of the last round's memory and the
        # problem's opening (descriptor_context=round).
        self.full_descriptors = full_descriptors
        self.memory: dict[str, AgentMemory] = {name: AgentMemory(rule=memory_rule) for name in ctx.spec.workers}
        # One growing conversation per agent; "latest" memory supersedes what a transcript already holds, so
        # that economy keeps the per-request layout (core.runtime.prompts PromptOrder.CACHE).
        self.conversational = prompt_order == PromptOrder.CONVERSATION and memory_rule == MemoryRule.ACCUMULATE
        self.threads: dict[str, Thread] = {}

    def remember(self, agent: str, item: MemoryItem) -> None:
        self.memory[agent].add(item)

    def remember_feedback(self, round_no: int, feedback: str) -> None:
        """A check's result (the tests) goes into every worker's memory."""
        for name in self.ctx.spec.workers:
            self.memory[name].add(MemoryItem(round_no, "feedback", "test results", feedback))

    async def worker_call(
        self,
        name: str,
        call: str,
        goal: str,
        *,
        inbox: str,
        tier: int | None = None,
        inbox_from: frozenset[str] = frozenset(),
    ) -> AgentResult:
        ctx = self.ctx
        parsers: dict[str, Callable[[str], Any]] = {
            ev.CallKind.DESCRIPTORS: parse_descriptors, ev.CallKind.WORK: parse_work,
        }
        turn = self._worker_turn(name, call, goal, inbox, inbox_from)

        def shape(parsed: Any | None, outcome: CallReply) -> AgentResult:
            result = self._worker_result(name, call, parsed, outcome)
            if outcome.replied and (parsed is not None or result.public):  # the reply the run keeps
                turn.keep(outcome.text)
            return result

        result, _ = await ctx.call(
            name, call, turn.messages, kind="descriptor" if call == ev.CallKind.DESCRIPTORS else "worker",
            parser=parsers.get(call, parse_worker), json_mode=True, tier=tier, shrink=turn.shrink, shape=shape,
            keep=call != ev.CallKind.DESCRIPTORS,
        )
        return result

    def _worker_result(self, name: str, call: str, parsed: Any | None, outcome: CallReply) -> AgentResult:
        """A worker's result keeps its descriptors (query, key) and private messages; an unparsed reply keeps
        its raw text and falls back to the role's own description."""
        if parsed is not None:
            return AgentResult(
                agent=name,
                status=CallStatus.DONE,
                public=getattr(parsed, "public", ""),
                private=dict(getattr(parsed, "private", {}) or {}),
                query=parsed.query,
                key=parsed.key,
                answer=getattr(parsed, "answer", ""),
                raw=outcome.text,
            )
        role = self.ctx.spec.team.role(name)
        # A copy of the reply template is nobody's work: not shown as work, not routed, not embedded (no
        # descriptors: no routed edges this round). Other raw text is kept, and descriptors fall back to
        # the role's own description.
        copied = is_template_copy(outcome.error)
        notice(self.ctx, f"{name}: " + (COPY_NOTICE if copied else
                                        f"{'reply unparsed' if outcome.replied else 'call failed'} ({outcome.error})"),
               "warning", name)
        return AgentResult(
            agent=name,
            status=CallStatus.UNPARSED if outcome.replied else CallStatus.FAILED,
            public=outcome.text.strip() if call != ev.CallKind.DESCRIPTORS and not copied else "",
            query="" if copied else role.default_query,
            key="" if copied else role.default_key,
            raw=outcome.text,
            error=outcome.error,
            connection_failed=outcome.connection_failed,
            context_overflow=outcome.context_overflow,
        )

    async def manager_call(
        self, call: str, messages: list[dict[str, str]], *, shrink: Shrink | None = None
    ) -> tuple[Any | None, ev.CallStatus]:
        ctx = self.ctx
        name = ctx.spec.team.manager.name
        unreachable: list[str] = []
        turn = self._manager_turn(call, messages, shrink)

        def shape(parsed: Any | None, outcome: CallReply) -> AgentResult:
            if parsed is not None:
                if outcome.replied:
                    turn.keep(outcome.text)
                return AgentResult(name, CallStatus.DONE, public=parsed.reasoning, raw=outcome.text)
            status = CallStatus.UNPARSED if outcome.replied else CallStatus.FAILED
            what = "copied the reply template again: its decision is not used" if is_template_copy(outcome.error) \
                else ("reply unparsed" if outcome.replied else "call failed")
            notice(ctx, f"Manager: {what} ({outcome.error})", "warning", name)
            if outcome.connection_failed:
                unreachable.append(outcome.error)
            return AgentResult(name, status, raw=outcome.text, error=outcome.error)

        result, parsed = await ctx.call(name, call, turn.messages, kind="manager", parser=parse_manager,
                                        json_mode=True, shrink=turn.shrink, shape=shape, keep=False)
        if unreachable:
            raise RunAborted(unreachable[0])
        return parsed, result.status

    # --- the growing conversations (PromptOrder.CONVERSATION) ------------------------------------------
    def thread(self, name: str) -> Thread:
        """The agent's conversation, begun with the team's preamble and then its role."""
        thread = self.threads.get(name)
        if thread is None:
            ctx = self.ctx
            preamble = team_preamble(ctx.spec.team, ctx.spec.problem)
            if name == ctx.spec.team.manager.name:
                role = manager_role(ctx.spec.team)
            else:
                calls = (ev.CallKind.SINGLE_PASS,) if ctx.spec.settings.protocol == RoundProtocol.SINGLE_PASS else (
                    ev.CallKind.DESCRIPTORS, ev.CallKind.WORK)
                role = worker_role(ctx.spec.team, ctx.spec.team.role(name), calls, private_only=self.private_only)
            thread = self.threads[name] = Thread(Conversation(f"{preamble}\n{role}"))
        return thread

    def _report_trim(self, agent: str, trimmed: Trimmed) -> None:
        self.ctx.emit(trimmed_event(self.ctx.state.round, agent, trimmed))
        notice(self.ctx, f"{agent}: the conversation outgrew the context: its {trimmed.exchanges} oldest exchanges "
                       f"(~{trimmed.tokens} tokens) were dropped, so the server's cache starts again from there",
                       "info", agent)

    def _worker_turn(
        self, name: str, call: str, goal: str, inbox: str, inbox_from: frozenset[str] = frozenset()
    ) -> Turn:
        ctx = self.ctx
        if not self.conversational:
            messages = self._worker_messages(name, call, goal, inbox, inbox_from)
            return Turn(None, ctx.state.round, goal, inbox, [], "", messages,
                        self._worker_shrink(name, call, goal, inbox, inbox_from))
        suffix = " /no_think" if call == ev.CallKind.DESCRIPTORS and ctx.spec.settings.no_think else ""
        thread = self.thread(name)
        if call == ev.CallKind.DESCRIPTORS and not self.full_descriptors:  # the round economy: a side request
            memory_text, _, _ = self.memory[name].render(self._memory_budget(goal, inbox),
                                                         since_round=ctx.state.round - 1)
            user = worker_turn(call, ctx.state.round, goal, memory_text, "", first=True) + suffix
            return side_turn(thread.conversation.system, user, ctx.state.round, goal)
        turn = worker_turn_for(thread, self.memory[name], call, ctx.state.round, goal, inbox, suffix=suffix,
                               report=self._report_trim, agent=name)
        trimmed = within_budget(thread.conversation, turn.user, ctx.spec.settings.context_budget_tokens)
        if trimmed is not None:
            self._report_trim(name, trimmed)
            turn = worker_turn_for(thread, self.memory[name], call, ctx.state.round, goal, inbox, suffix=suffix,
                                   report=self._report_trim, agent=name)
        return turn

    def replay_worker(self, name: str, call: str, round_no: int, goal: str, inbox: str, reply: str) -> None:
        """A fork: the turn a recorded worker call sent, kept with its recorded reply (core.methods.dytopo.rebuild)."""
        if call == ev.CallKind.DESCRIPTORS and not self.full_descriptors:
            return  # a side request
        suffix = " /no_think" if call == ev.CallKind.DESCRIPTORS and self.ctx.spec.settings.no_think else ""
        worker_turn_for(self.thread(name), self.memory[name], call, round_no, goal, inbox, suffix=suffix).keep(reply)

    def replay_manager(self, user: str, reply: str, round_no: int) -> None:
        """A fork: the recorded plan's turn and its reply (a review is a side request: nothing to rebuild)."""
        self.thread(self.ctx.spec.team.manager.name).conversation.commit(user, reply, round_no)

    def plan_messages(self, max_rounds: int) -> Messages:
        """The Manager's first request: its conversation's first turn, or the per-request layout."""
        ctx = self.ctx
        if self.conversational:
            return self.thread(ctx.spec.team.manager.name).conversation.request(plan_turn(max_rounds))
        return [{"role": "system", "content": manager_system_prompt(ctx.spec.team)},
                {"role": "user", "content": plan_request(ctx.spec.problem, max_rounds)}]

    def review_messages(self, round_no: int, max_rounds: int, goal: str, outputs: str, extra: str) -> Messages:
        """The Manager's review of a round: a side request after its plan (its conversation's prefix), or the
        per-request layout."""
        ctx = self.ctx
        if self.conversational:
            user = manager_turn(round_no, max_rounds, goal, outputs, extra)
            return self.thread(ctx.spec.team.manager.name).conversation.request(user)
        return [{"role": "system", "content": manager_system_prompt(ctx.spec.team)},
                {"role": "user", "content": manager_request(round_no, max_rounds, ctx.spec.problem, goal, outputs,
                                                            extra)}]

    def _manager_turn(self, call: str, messages: Messages, shrink: Shrink | None) -> Turn:
        """The Manager's request as a turn of its conversation: the plan is kept (when its decision parses); a
        round's review is a side request after it: the paper's Manager decides from the current round's global state
        only (the round's goal and public outputs: DyTopo, arXiv 2602.06039 §3.5.1-3.5.2, eqs. 12-13), and keeping
        every earlier review would send each round's outputs again in every later one. The shared preamble, the
        role and the plan stay a prefix the server has cached."""
        ctx = self.ctx
        if not self.conversational:
            return Turn(None, ctx.state.round, "", "", [], "", messages, shrink)
        name = ctx.spec.team.manager.name
        thread = self.thread(name)
        user = messages[-1]["content"]
        trimmed = within_budget(thread.conversation, user, ctx.spec.settings.context_budget_tokens)
        if trimmed is not None:
            self._report_trim(name, trimmed)
            messages = thread.conversation.request(user)
        turn = Turn(thread if call == ev.CallKind.PLAN else None, ctx.state.round, "", "", [], user, messages)

        def cut(most_chars: int) -> Messages | None:  # the outputs cut to equal shares, remembered as sent
            smaller = shrink(most_chars) if shrink is not None else None
            if smaller is not None:
                turn.user = smaller[-1]["content"]
            return smaller

        turn.shrink = conversation_shrink(thread.conversation, lambda: turn.user, cut, self._report_trim, name)
        return turn

    # --- a worker's prompt and its memory (the per-request orders) ---------------------------------
    def _worker_messages(
        self, name: str, call: str, goal: str, inbox: str, inbox_from: frozenset[str] = frozenset()
    ) -> list[dict[str, str]]:
        memory_text, dropped, dropped_tokens = self.memory[name].render(
            self._memory_budget(goal, inbox), since_round=self._memory_since(call), newer_from=inbox_from
        )
        if dropped:
            self.ctx.emit(
                ev.MemoryTrimmed(round=self.ctx.state.round, agent=name, dropped=dropped, dropped_tokens=dropped_tokens)
            )
        return self._compose_worker(name, call, goal, memory_text, inbox)

    def _memory_since(self, call: str) -> int:
        # A descriptor call states needs and offers for this round: the last round's memory is its context.
        return self.ctx.state.round - 1 if call == ev.CallKind.DESCRIPTORS and not self.full_descriptors else 0

    def _compose_worker(self, name: str, call: str, goal: str, memory_text: str, inbox: str) -> list[dict[str, str]]:
        ctx = self.ctx
        return worker_messages(
            ctx.spec.team, ctx.spec.team.role(name), call, round_no=ctx.state.round, problem=ctx.spec.problem,
            goal=goal,
            memory=memory_text, inbox=inbox, private_only=self.private_only, order=self.prompt_order,
            suffix=" /no_think" if call == ev.CallKind.DESCRIPTORS and ctx.spec.settings.no_think else "",
            digest=not self.full_descriptors,
        )

    def _worker_shrink(
        self, name: str, call: str, goal: str, inbox: str, inbox_from: frozenset[str]
    ) -> Shrink:
        """DyTopo's memory rule when a prompt must fit the context: the oldest memory items go first, for
        good (as the token budget drops them), then this round's inbox is cut."""
        memory = self.memory[name]
        # The memory as the prompt showed it (after its budget trim); the shrink reads it only when needed.
        shown = memory.rendered(since_round=self._memory_since(call), newer_from=inbox_from)

        def build(kept: list[str], shared: list[str]) -> list[dict[str, str]]:
            return self._compose_worker(name, call, goal, "\n\n".join(kept), shared[0] if shared else "")

        forgotten = [0]  # a later shrink of the same prompt drops more, never the same items twice

        def forget(count: int) -> None:
            gone, forgotten[0] = shown[forgotten[0]:count], max(forgotten[0], count)
            if not gone:
                return
            memory.forget([item for item, _ in gone])
            tokens = sum(estimate_tokens(text) + 1 for _, text in gone)
            self.ctx.emit(ev.MemoryTrimmed(round=self.ctx.state.round, agent=name, dropped=len(gone),
                                           dropped_tokens=tokens))

        return shrink_pieces(build, [text for _, text in shown], [inbox] if inbox else [], on_drop=forget)

    def _memory_budget(self, goal: str, inbox: str) -> int:
        """What is left of the context budget for memory once the fixed parts are in."""
        fixed = (len(self.ctx.spec.problem) + len(goal) + len(inbox)) // 4 + 800  # prompts and schema
        return max(200, self.ctx.spec.settings.context_budget_tokens - fixed)

"""DyTopo's own calls: a worker's call (work, descriptors, or both in one) with its memory, and the Manager's.

Each worker keeps a memory (core.runtime.memory: eq. 3's accumulated outputs and messages, or only the
latest per sender); a worker's prompt shows as much of it as the context budget leaves, and when a prompt
must fit the model's context the oldest items go first, for good. The engine only sends the calls
(core.runtime.calls) and announces them; what a worker is asked and what it remembers is DyTopo's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.llm.tokens import estimate_tokens
from core.runtime import events as ev
from core.runtime.context import Shrink, shrink_pieces
from core.runtime.engine import STATUS_DONE, STATUS_FAILED, STATUS_UNPARSED, AgentResult, RunAborted
from core.runtime.memory import MEMORY_ACCUMULATE, AgentMemory, MemoryItem
from core.runtime.parsing import parse_descriptors, parse_manager, parse_work, parse_worker
from core.runtime.prompts import PROMPT_CACHE, worker_messages
from core.runtime.run_context import CallReply, notice

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


class DyTopoCalls:
    """One run's worker and Manager calls, and the workers' memories."""

    def __init__(
        self, ctx: RunContext, *, private_only: bool = False, memory_rule: str = MEMORY_ACCUMULATE,
        prompt_order: str = PROMPT_CACHE, full_descriptors: bool = True,
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
        parsers: dict[str, Callable[[str], Any]] = {ev.CALL_DESCRIPTORS: parse_descriptors, ev.CALL_WORK: parse_work}
        messages = self._worker_messages(name, call, goal, inbox, inbox_from)
        result, _ = await ctx.call(
            name, call, messages, kind="descriptor" if call == ev.CALL_DESCRIPTORS else "worker",
            parser=parsers.get(call, parse_worker), json_mode=True, tier=tier,
            shrink=self._worker_shrink(name, call, goal, inbox, inbox_from),
            shape=lambda parsed, outcome: self._worker_result(name, call, parsed, outcome),
            keep=call != ev.CALL_DESCRIPTORS,
        )
        return result

    def _worker_result(self, name: str, call: str, parsed: Any | None, outcome: CallReply) -> AgentResult:
        """A worker's result keeps its descriptors (query, key) and private messages; an unparsed reply keeps
        its raw text and falls back to the role's own description."""
        if parsed is not None:
            return AgentResult(
                agent=name,
                status=STATUS_DONE,
                public=getattr(parsed, "public", ""),
                private=dict(getattr(parsed, "private", {}) or {}),
                query=parsed.query,
                key=parsed.key,
                answer=getattr(parsed, "answer", ""),
                raw=outcome.text,
            )
        role = self.ctx.spec.team.role(name)
        notice(self.ctx, f"{name}: {'reply unparsed' if outcome.replied else 'call failed'} ({outcome.error})",
               "warning", name)
        return AgentResult(
            agent=name,
            status=STATUS_UNPARSED if outcome.replied else STATUS_FAILED,
            public=outcome.text.strip() if call != ev.CALL_DESCRIPTORS else "",
            query=role.default_query,
            key=role.default_key,
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

        def shape(parsed: Any | None, outcome: CallReply) -> AgentResult:
            if parsed is not None:
                return AgentResult(name, STATUS_DONE, public=parsed.reasoning, raw=outcome.text)
            status = STATUS_UNPARSED if outcome.replied else STATUS_FAILED
            notice(ctx, f"Manager: {'reply unparsed' if outcome.replied else 'call failed'} ({outcome.error})",
                   "warning", name)
            if outcome.connection_failed:
                unreachable.append(outcome.error)
            return AgentResult(name, status, raw=outcome.text, error=outcome.error)

        result, parsed = await ctx.call(name, call, messages, kind="manager", parser=parse_manager, json_mode=True,
                                        shrink=shrink, shape=shape, keep=False)
        if unreachable:
            raise RunAborted(unreachable[0])
        return parsed, result.status

    # --- a worker's prompt and its memory ---------------------------------------------------------
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
        return self.ctx.state.round - 1 if call == ev.CALL_DESCRIPTORS and not self.full_descriptors else 0

    def _compose_worker(self, name: str, call: str, goal: str, memory_text: str, inbox: str) -> list[dict[str, str]]:
        ctx = self.ctx
        return worker_messages(
            ctx.spec.team, ctx.spec.team.role(name), call, round_no=ctx.state.round, problem=ctx.spec.problem,
            goal=goal,
            memory=memory_text, inbox=inbox, private_only=self.private_only, order=self.prompt_order,
            suffix=" /no_think" if call == ev.CALL_DESCRIPTORS and ctx.spec.settings.no_think else "",
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

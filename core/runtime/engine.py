"""The round engine: Manager goals, worker calls, routing, message flow and termination.

Everything the engine does is announced as a typed event (core.runtime.events) to its sinks; it never knows
who listens. Two protocols:

* phased (reference, default): round 1 broadcast; rounds >= 2 run A) descriptors in parallel,
  B) routing, C) work in topological tiers, each agent receiving its in-neighbours' messages of this
  round; then the Manager.
* single-pass (paper): one call per worker per round gives work and descriptors together; routing
  after the barrier; routed messages enter the recipients' memory for the next round, strongest first.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import openai

from core.evaluation.extract import latest_code
from core.evaluation.math_answers import extract_answer
from core.llm.client import ChatResult, LLMClient
from core.llm.embeddings import Embedder
from core.routing.dytopo import RoutingResult, similarity_matrix
from core.routing.strategies import DyTopoStrategy, TopologyStrategy
from core.runtime import events as ev
from core.runtime.config import CallLimits, Settings
from core.runtime.control import BOUNDARY_PHASE, BOUNDARY_ROUND, Params, RunControl
from core.runtime.convergence import text_similarity
from core.runtime.domains import Domain, get_domain
from core.runtime.memory import AgentMemory, MemoryItem
from core.runtime.parsing import (
    ParseError,
    ReplyTally,
    parse_descriptors,
    parse_manager,
    parse_worker,
    response_schema,
)
from core.runtime.prompts import (
    manager_request,
    manager_system_prompt,
    plan_request,
    repair_request,
    worker_request,
    worker_system_prompt,
)
from core.sessions.fork import ForkPoint
from core.sessions.model import redact_url

STATUS_DONE = "done"
STATUS_UNPARSED = "unparsed"
STATUS_FAILED = "failed"


@dataclass
class RunSpec:
    """What to run: the problem and the choices that do not change during a run."""

    problem: str
    domain: str = "code"
    protocol: str = "phased"
    model: str = ""
    base_url: str = ""
    demo: bool = False
    parent: dict[str, Any] | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


@dataclass
class AgentResult:
    agent: str
    status: str
    public: str = ""
    private: dict[str, str] = field(default_factory=dict)
    query: str = ""
    key: str = ""
    answer: str = ""
    raw: str = ""
    error: str = ""
    connection_failed: bool = False


@dataclass
class Evaluation:
    """What a round evaluator (e.g. running the code's tests) found."""

    passed: bool
    feedback: str  # shown to the Manager and added to the workers' memory
    events: list[ev.Event] = field(default_factory=list)


class RoundEvaluator(Protocol):
    async def evaluate(self, round_no: int, problem: str, outputs: dict[str, AgentResult]) -> Evaluation | None: ...


_FATAL_API_ERRORS = (
    openai.APIConnectionError,
    openai.AuthenticationError,
    openai.PermissionDeniedError,
    openai.NotFoundError,
)


class RunAborted(Exception):
    """The run cannot go on (e.g. the endpoint is unreachable); the message is for the user."""


def message_for(sender: AgentResult, recipient: str) -> str:
    """What flows along an edge: the sender's private note for this recipient (or for all), then its
    public work. Notes are matched to the recipient's role name without regard to case."""
    notes = {k.strip().lower(): v for k, v in sender.private.items() if isinstance(v, str) and v.strip()}
    note = notes.get(recipient.lower()) or notes.get("all") or notes.get("*")
    if note:
        return f"Note for you: {note}\n\n{sender.public}".strip()
    return sender.public


class SwarmEngine:
    def __init__(
        self,
        spec: RunSpec,
        settings: Settings,
        llm: LLMClient,
        embedder: Embedder,
        sinks: list[ev.EventSink] | None = None,
        *,
        control: RunControl | None = None,
        strategy: TopologyStrategy | None = None,
        evaluator: RoundEvaluator | None = None,
        fork: ForkPoint | None = None,
    ) -> None:
        self.spec = spec
        self.fork = fork
        self.settings = settings
        self.domain: Domain = get_domain(spec.domain)
        self.workers = self.domain.worker_names
        self.llm = llm
        self.embedder = embedder
        self.sinks: list[ev.EventSink] = list(sinks or [])
        self.strategy: TopologyStrategy = strategy or DyTopoStrategy()
        self.evaluator = evaluator
        params = Params(settings.tau, settings.k_in, settings.max_rounds)
        self.control = control or RunControl(params, len(self.workers))
        self.control.cancel_hook = self._cancel_now
        self.control.reroute_hook = self._reroute_now
        self.control.on_change = self._control_changed
        self.control.on_params = self._params_changed
        self.memory: dict[str, AgentMemory] = {name: AgentMemory() for name in self.workers}
        self.round = 0
        self.phase = ""
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._task: asyncio.Task[Any] | None = None
        self._similarity: np.ndarray | None = None  # current round's, for re-routing
        self._descriptor_vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # embedded on arrival
        self._embeddings: tuple[list[list[float]], list[list[float]]] | None = None
        self._routing: RoutingResult | None = None
        self._can_reroute = False
        self._previous_public: dict[str, str] = {}
        self._latest: dict[str, AgentResult] = {}
        self._last_evaluation: Evaluation | None = None
        self.finished: ev.RunFinished | None = None
        self.reply_tally = ReplyTally()  # model calls that got a reply / that parsed, for RunFinished

    # --- events -------------------------------------------------------------------------------
    def emit(self, event: ev.Event) -> None:
        for sink in self.sinks:
            sink(event)

    def _control_changed(self, status: str) -> None:
        self.emit(ev.ControlChanged(round=self.round, status=status, mode=self.control.mode))

    def _params_changed(self, params: Params, changed: list[str]) -> None:
        self.emit(ev.ParamsChanged(round=self.round, params=params.as_dict(), changed=changed))

    def _notice(self, message: str, severity: str = "warning", agent: str = "") -> None:
        self.emit(ev.Notice(round=self.round, severity=severity, message=message, agent=agent))

    # --- lifecycle ----------------------------------------------------------------------------
    async def run(self) -> ev.RunFinished:
        """Run to the end. Always returns the RunFinished event, which says why the run ended."""
        self.emit(
            ev.RunStarted(
                run_id=self.spec.run_id,
                problem=self.spec.problem,
                domain=self.domain.name,
                manager=self.domain.manager.name,
                workers=list(self.workers),
                roles={r.name: r.description for r in (self.domain.manager, *self.domain.workers)},
                protocol=self.spec.protocol,
                strategy=self.strategy.name,
                model=self.spec.model or self.llm.model,
                base_url=redact_url(self.spec.base_url or self.llm.base_url),
                demo=self.spec.demo,
                params=self.control.params.as_dict(),
                parent=self.fork.parent if self.fork is not None else self.spec.parent,
            )
        )
        self._task = asyncio.current_task()
        start_round, goal = 0, ""
        if self.fork is not None:
            self._replay_history(self.fork.history)
            start_round, goal = self.fork.round, self.fork.goal
        try:
            reason, detail, answer, source = await self._run_rounds(start_round, goal)
        except asyncio.CancelledError:
            if not self.control.cancelled:
                raise
            # Swallow the cancel we asked for ourselves; a cancel from outside still propagates.
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            answer, source = self._extract_answer()
            reason, detail = "cancelled", "cancelled by the user"
        except RunAborted as exc:
            answer, source = self._extract_answer()
            reason, detail = "error", str(exc)
        finally:
            self._task = None  # a cancel from now on must not hit the caller's task (it awaited run())
        return self._finish(reason, detail, answer, source)

    def _cancel_now(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _finish(self, reason: str, detail: str, answer: str, source: str) -> ev.RunFinished:
        solved = self._last_evaluation.passed if self._last_evaluation is not None else None
        self.finished = ev.RunFinished(
            reason=reason,
            detail=detail,
            final_answer=answer,
            answer_source=source,
            rounds=self.round,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            solved=solved,
            replies_parsed=self.reply_tally.parsed,
            replies_total=self.reply_tally.total,
        )
        self.emit(self.finished)
        return self.finished

    async def _checkpoint(self, boundary: str) -> None:
        await self.control.checkpoint(boundary)

    # --- rounds -------------------------------------------------------------------------------
    async def _run_rounds(self, round_no: int, goal: str) -> tuple[str, str, str, str]:
        """Run rounds after round_no (0 for a fresh run, the fork round for a fork)."""
        while True:
            round_no += 1
            await self._checkpoint(BOUNDARY_ROUND)
            if round_no > self.control.params.max_rounds:
                # A fork from the last allowed round, or max_rounds lowered while waiting to start this one.
                answer, source = self._extract_answer()
                return "max_rounds", f"reached max_rounds ({round_no - 1})", answer, source
            self.round = round_no
            self._can_reroute = False
            self.emit(ev.RoundStarted(round=round_no, params=self.control.params.as_dict()))
            if round_no == 1:
                goal = await self._plan()
                await self._checkpoint(BOUNDARY_PHASE)
                outputs = await self._broadcast_round(goal)
            elif self.spec.protocol == "single-pass":
                outputs = await self._single_pass_round(goal)
            else:
                outputs = await self._phased_round(goal)
            await self._checkpoint(BOUNDARY_PHASE)
            evaluation = await self._evaluate(round_no, outputs)
            decision = await self._decide(round_no, goal, outputs, evaluation)
            convergence = self._convergence(outputs)
            self.emit(
                ev.RoundFinished(
                    round=round_no,
                    prompt_tokens=self.prompt_tokens,
                    completion_tokens=self.completion_tokens,
                    convergence=convergence,
                )
            )
            if decision is not None and decision.terminate:
                answer = decision.final_answer
                if answer:
                    return "manager", decision.reasoning or "the Manager ended the run", answer, "manager"
                answer, source = self._extract_answer()
                return "manager", decision.reasoning or "the Manager ended the run", answer, source
            if round_no >= self.control.params.max_rounds:
                answer = decision.final_answer if decision is not None else ""
                if answer:
                    return "max_rounds", f"reached max_rounds ({round_no})", answer, "manager"
                answer, source = self._extract_answer()
                return "max_rounds", f"reached max_rounds ({round_no})", answer, source
            if convergence is not None and convergence >= self.settings.convergence_threshold:
                answer, source = self._extract_answer()
                return (
                    "converged",
                    f"outputs stopped changing (similarity {convergence:.2f} ≥ "
                    f"{self.settings.convergence_threshold:.2f})",
                    answer,
                    source,
                )
            if decision is not None and decision.goal:
                goal = decision.goal

    def _replay_history(self, history: list[ev.Event]) -> None:
        """A fork: re-emit the parent's rounds and rebuild memory from them as the live run did."""
        outputs: dict[str, AgentResult] = {}
        deliveries: list[ev.MessagesRouted] = []
        feedback: list[str] = []
        for event in history:
            self.emit(event)
            if isinstance(event, ev.AgentFinished) and event.call in (ev.CALL_WORK, ev.CALL_SINGLE_PASS):
                result = AgentResult(
                    agent=event.agent,
                    status=event.status,
                    public=event.public,
                    private=dict(event.private),
                    query=event.query,
                    key=event.key,
                    answer=event.answer,
                    raw=event.raw,
                )
                outputs[event.agent] = self._latest[event.agent] = result
            elif isinstance(event, ev.MessagesRouted):
                deliveries.append(event)
            elif isinstance(event, ev.TopologyBuilt):
                self._routing = RoutingResult.from_dict(event.routing)
            elif isinstance(event, ev.TestRun):
                text = f"Test results: {event.outcome} — {event.detail}"
                feedback.append(text)
                self._last_evaluation = Evaluation(passed=event.passed, feedback=text)
            elif isinstance(event, ev.RoundFinished):
                self.round = event.round
                self.prompt_tokens, self.completion_tokens = event.prompt_tokens, event.completion_tokens
                for name in self.workers:
                    if name in outputs:
                        self.memory[name].add(MemoryItem(event.round, "own", name, outputs[name].public))
                for routed in deliveries:
                    kind = "broadcast" if routed.broadcast else "routed"
                    for d in routed.deliveries:
                        item = MemoryItem(event.round, kind, d["src"], d["content"], d.get("score"))
                        self.memory[d["dst"]].add(item)
                for text in feedback:
                    for name in self.workers:
                        self.memory[name].add(MemoryItem(event.round, "feedback", "test results", text))
                self._previous_public = {name: r.public for name, r in outputs.items()}
                outputs, deliveries, feedback = {}, [], []

    def _start_phase(self, phase: str, detail: str = "") -> None:
        self.phase = phase
        self.emit(ev.PhaseStarted(round=self.round, phase=phase, detail=detail))

    async def _plan(self) -> str:
        self._start_phase(ev.PHASE_PLAN, "Manager sets the first goal")
        messages = [
            {"role": "system", "content": manager_system_prompt(self.domain)},
            {"role": "user", "content": plan_request(self.spec.problem, self.control.params.max_rounds)},
        ]
        decision, status = await self._manager_call(ev.CALL_PLAN, messages)
        goal = decision.goal if decision is not None and decision.goal else ""
        if not goal:
            goal = "Work on the problem from your role's perspective and produce a first complete attempt."
        self.emit(
            ev.ManagerDecided(
                round=self.round,
                terminate=False,
                next_goal=goal,
                reasoning=decision.reasoning if decision is not None else "",
                status=status,
                plan=True,
            )
        )
        return goal

    async def _broadcast_round(self, goal: str) -> dict[str, AgentResult]:
        """Round 1: every worker works on the first goal; every output goes to every worker."""
        call = ev.CALL_SINGLE_PASS if self.spec.protocol == "single-pass" else ev.CALL_WORK
        self._start_phase(ev.PHASE_WORK, "all workers, broadcast")
        results = await self._gather(
            {name: self._worker_call(name, call, goal, inbox="", tier=0) for name in self.workers}
        )
        self._abort_if_unreachable(results)
        deliveries = [
            {"src": src, "dst": dst, "score": None, "content": message_for(results[src], dst)}
            for dst in self.workers
            for src in self.workers
            if src != dst and results[src].public
        ]
        self.emit(ev.MessagesRouted(round=self.round, deliveries=deliveries, broadcast=True))
        for name in self.workers:
            self.memory[name].add(MemoryItem(self.round, "own", name, results[name].public))
        for d in deliveries:
            self.memory[d["dst"]].add(MemoryItem(self.round, "broadcast", d["src"], d["content"]))
        return results

    async def _phased_round(self, goal: str) -> dict[str, AgentResult]:
        self._start_phase(ev.PHASE_DESCRIPTORS, "phase A: every worker states its need and offer")
        descriptors = await self._gather(
            {name: self._described_call(name, ev.CALL_DESCRIPTORS, goal) for name in self.workers}
        )
        self._abort_if_unreachable(descriptors)
        self.emit(
            ev.DescriptorsReady(
                round=self.round,
                descriptors={n: {"query": d.query, "key": d.key} for n, d in descriptors.items()},
            )
        )
        await self._checkpoint(BOUNDARY_PHASE)
        self._route()
        self._can_reroute = True
        await self._checkpoint(BOUNDARY_PHASE)
        self._can_reroute = False
        routing = self._routing
        assert routing is not None
        self._start_phase(ev.PHASE_WORK, f"phase C: {len(routing.tiers)} tiers")
        results: dict[str, AgentResult] = {}
        received: dict[str, list[dict[str, Any]]] = {name: [] for name in self.workers}
        for tier_index, tier in enumerate(routing.tiers):
            deliveries = []
            for dst in tier:
                for edge in routing.in_edges(dst):
                    sender = results.get(edge.src)
                    if sender is None or not sender.public:
                        continue
                    deliveries.append(
                        {"src": edge.src, "dst": dst, "score": edge.score, "content": message_for(sender, dst)}
                    )
            if deliveries:
                self.emit(ev.MessagesRouted(round=self.round, deliveries=deliveries))
            for d in deliveries:
                received[d["dst"]].append(d)
            tier_results = await self._gather(
                {
                    name: self._worker_call(
                        name, ev.CALL_WORK, goal, inbox=_render_inbox(received[name]), tier=tier_index
                    )
                    for name in tier
                }
            )
            self._abort_if_unreachable(tier_results)
            for name, result in tier_results.items():
                # A work reply may carry fresh descriptors; the phase-A ones stay the round's record.
                results[name] = result
        # Edges whose provider did not run in an earlier tier (a strategy that keeps cycles, e.g.
        # broadcast) deliver at the barrier, into next round's memory, as in the single-pass protocol.
        delivered = {(d["src"], d["dst"]) for deliveries in received.values() for d in deliveries}
        late = [
            {"src": e.src, "dst": e.dst, "score": e.score, "content": message_for(results[e.src], e.dst)}
            for e in routing.edges
            if (e.src, e.dst) not in delivered and results[e.src].public
        ]
        if late:
            self.emit(ev.MessagesRouted(round=self.round, deliveries=late))
        for name in self.workers:
            self.memory[name].add(MemoryItem(self.round, "own", name, results[name].public))
            for d in received[name]:
                self.memory[name].add(MemoryItem(self.round, "routed", d["src"], d["content"], d["score"]))
        for d in sorted(late, key=lambda d: (d["dst"], -d["score"], d["src"])):
            self.memory[d["dst"]].add(MemoryItem(self.round, "routed", d["src"], d["content"], d["score"]))
        return results

    async def _single_pass_round(self, goal: str) -> dict[str, AgentResult]:
        self._start_phase(ev.PHASE_WORK, "single pass: work and descriptors together")
        results = await self._gather(
            {name: self._described_call(name, ev.CALL_SINGLE_PASS, goal) for name in self.workers}
        )
        self._abort_if_unreachable(results)
        self.emit(
            ev.DescriptorsReady(
                round=self.round,
                descriptors={n: {"query": r.query, "key": r.key} for n, r in results.items()},
            )
        )
        await self._checkpoint(BOUNDARY_PHASE)
        self._route()
        routing = self._routing
        assert routing is not None
        # Barrier semantics (paper eq. 3): messages enter next round's memory, strongest first.
        deliveries = []
        for dst in routing.order:
            for edge in routing.in_edges(dst):
                deliveries.append(
                    {"src": edge.src, "dst": dst, "score": edge.score, "content": message_for(results[edge.src], dst)}
                )
        self.emit(ev.MessagesRouted(round=self.round, deliveries=deliveries))
        for name in self.workers:
            self.memory[name].add(MemoryItem(self.round, "own", name, results[name].public))
        for d in deliveries:
            self.memory[d["dst"]].add(MemoryItem(self.round, "routed", d["src"], d["content"], d["score"]))
        return results

    # --- routing ------------------------------------------------------------------------------
    async def _described_call(self, name: str, call: str, goal: str) -> AgentResult:
        """A call whose reply carries descriptors. They are embedded as soon as the reply is in, while
        the other agents are still answering, so routing after the barrier has no model work left."""
        result = await self._worker_call(name, call, goal, inbox="")
        vectors = await self.embedder.aembed([result.query, result.key])
        self._descriptor_vectors[name] = (vectors[0], vectors[1])
        return result

    def _route(self) -> None:
        """Phase B, from the descriptors _described_call embedded as each reply arrived."""
        self._start_phase(ev.PHASE_ROUTING, "phase B: build the graph from the embedded descriptors")
        q = np.asarray([self._descriptor_vectors[name][0] for name in self.workers])
        k = np.asarray([self._descriptor_vectors[name][1] for name in self.workers])
        self._descriptor_vectors = {}
        self._similarity = similarity_matrix(q, k)
        self._embeddings = (q.tolist(), k.tolist())
        self._build_graph(rerouted=False)

    def _build_graph(self, *, rerouted: bool) -> None:
        assert self._similarity is not None and self._embeddings is not None
        params = self.control.params
        self._routing = self.strategy.build(
            self.round, list(self.workers), self._similarity, params.tau, params.k_in, break_cycles=self._breaks_cycles
        )
        self.emit(
            ev.TopologyBuilt(
                round=self.round,
                routing=self._routing.to_dict(),
                query_embeddings=self._embeddings[0],
                key_embeddings=self._embeddings[1],
                strategy=self.strategy.name,
                rerouted=rerouted,
            )
        )

    @property
    def _breaks_cycles(self) -> bool:
        """Phased work runs in tiers, so its graph must be acyclic; single-pass delivers at a barrier."""
        return self.spec.protocol != "single-pass"

    def _reroute_now(self) -> bool:
        if not self._can_reroute or self._similarity is None:
            if self.round <= 1 and self.phase != ev.PHASE_MANAGER:
                why = "round 1 is a broadcast: the new values apply at round 2's routing"
            elif self.phase in (ev.PHASE_PLAN, ev.PHASE_DESCRIPTORS):
                why = "this round's graph is not built yet: the new values apply when it is"
            else:
                why = "this round's work has already started: the new values apply at the next routing"
            self._notice(why, "info")
            return False
        self._build_graph(rerouted=True)
        return True

    # --- calls --------------------------------------------------------------------------------
    async def _gather(self, calls: dict[str, Awaitable[AgentResult]]) -> dict[str, AgentResult]:
        """Run calls in parallel. A TaskGroup cancels the siblings if one is cancelled, so a cancel
        leaves no orphan tasks behind."""
        async with asyncio.TaskGroup() as group:
            tasks = {name: group.create_task(call) for name, call in calls.items()}  # type: ignore[arg-type]
        return {name: task.result() for name, task in tasks.items()}

    def _abort_if_unreachable(self, results: dict[str, AgentResult]) -> None:
        """End the run when no call of a phase got any reply (the endpoint is unreachable, refuses us,
        or fails every call even after the SDK's retries): going on would only repeat the failure."""
        if results and all(r.status == STATUS_FAILED for r in results.values()):
            raise RunAborted(next(iter(results.values())).error)

    def _worker_messages(self, name: str, call: str, goal: str, inbox: str) -> list[dict[str, str]]:
        memory_text, dropped, dropped_tokens = self.memory[name].render(self._memory_budget(goal, inbox))
        if dropped:
            self.emit(ev.MemoryTrimmed(round=self.round, agent=name, dropped=dropped, dropped_tokens=dropped_tokens))
        content = worker_request(call, name, self.round, self.spec.problem, goal, memory_text, inbox)
        if call == ev.CALL_DESCRIPTORS and self.settings.no_think:
            content += " /no_think"
        return [
            {"role": "system", "content": worker_system_prompt(self.domain, self.domain.role(name))},
            {"role": "user", "content": content},
        ]

    def _memory_budget(self, goal: str, inbox: str) -> int:
        """What is left of the context budget for memory once the fixed parts are in."""
        fixed = (len(self.spec.problem) + len(goal) + len(inbox)) // 4 + 800  # prompts and schema
        return max(200, self.settings.context_budget_tokens - fixed)

    async def _worker_call(
        self, name: str, call: str, goal: str, *, inbox: str, tier: int | None = None
    ) -> AgentResult:
        limits = self.settings.descriptor_call if call == ev.CALL_DESCRIPTORS else self.settings.work_call
        parser: Callable[[str], Any] = parse_descriptors if call == ev.CALL_DESCRIPTORS else parse_worker
        messages = self._worker_messages(name, call, goal, inbox)
        self.emit(ev.AgentStarted(round=self.round, agent=name, call=call, tier=tier))
        outcome = await self._call_and_parse(name, call, messages, limits, parser)
        role = self.domain.role(name)
        parsed, chat, error, connection_failed = outcome
        if parsed is not None:
            result = AgentResult(
                agent=name,
                status=STATUS_DONE,
                public=getattr(parsed, "public", ""),
                private=dict(getattr(parsed, "private", {}) or {}),
                query=parsed.query,
                key=parsed.key,
                answer=getattr(parsed, "answer", ""),
                raw=chat.text if chat else "",
            )
        else:
            raw = chat.text if chat else ""
            # Keep the raw text and go on: descriptors fall back to the role's own description.
            result = AgentResult(
                agent=name,
                status=STATUS_UNPARSED if chat else STATUS_FAILED,
                public=raw.strip() if call != ev.CALL_DESCRIPTORS else "",
                query=role.default_query,
                key=role.default_key,
                raw=raw,
                error=error,
                connection_failed=connection_failed,
            )
            self._notice(f"{name}: {'reply unparsed' if chat else 'call failed'} ({error})", "warning", name)
        self._latest_update(call, result)
        self._emit_finished(name, call, result, outcome[1])
        return result

    def _latest_update(self, call: str, result: AgentResult) -> None:
        if call != ev.CALL_DESCRIPTORS:
            self._latest[result.agent] = result

    def _emit_finished(self, name: str, call: str, result: AgentResult, chat: _Usage | None) -> None:
        self.emit(
            ev.AgentFinished(
                round=self.round,
                agent=name,
                call=call,
                status=result.status,
                public=result.public,
                private=result.private,
                query=result.query,
                key=result.key,
                answer=result.answer,
                raw=result.raw,
                error=result.error,
                prompt_tokens=chat.prompt_tokens if chat else 0,
                completion_tokens=chat.completion_tokens if chat else 0,
                usage_estimated=chat.usage_estimated if chat else False,
                latency_s=round(chat.latency_s, 4) if chat else 0.0,
                attempts=chat.attempts if chat else 1,
            )
        )

    async def _call_and_parse(
        self,
        agent: str,
        call: str,
        messages: list[dict[str, str]],
        limits: CallLimits,
        parser: Callable[[str], Any],
    ) -> tuple[Any | None, _Usage | None, str, bool]:
        """(parsed or None, usage summed over attempts, error text, connection failed).
        A reply that does not parse, or was cut off at max_tokens, is asked for once more, with the error.
        The endpoint is asked for the contract's JSON schema (core.runtime.parsing.response_schema)."""
        usage: _Usage | None = None
        tally = self.reply_tally
        decision = call in (ev.CALL_PLAN, ev.CALL_MANAGER)
        for attempt in (1, 2):
            try:
                chat = await self.llm.chat(
                    messages,
                    temperature=limits.temperature,
                    max_tokens=limits.max_tokens,
                    schema=response_schema(parser),
                    on_delta=lambda text: self.emit(ev.AgentDelta(round=self.round, agent=agent, call=call, text=text)),
                    on_retry=lambda message: self._retrying(agent, call, message),
                )
            except openai.OpenAIError as exc:
                # No later call can succeed either: the server is gone, refuses the key, has no such
                # model (a model name it does not serve answers 404), never answers or rate-limits us.
                unreachable = isinstance(exc, _FATAL_API_ERRORS)
                tally.count(replied=usage is not None, parsed=False)
                return None, usage, self.llm.describe_error(exc), unreachable
            usage = _Usage.add(usage, chat)
            self.prompt_tokens += chat.prompt_tokens
            self.completion_tokens += chat.completion_tokens
            try:
                parsed = parser(chat.text)
                if chat.finish_reason == "length" and (decision or attempt == 1):
                    # json-repair may complete a cut-off object: never take it as a decision, and ask a
                    # worker once more before using what it got.
                    raise ParseError(
                        f"the reply was cut off at the token limit ({limits.max_tokens} tokens): "
                        "reply with a shorter JSON object"
                    )
                tally.count(replied=True, parsed=True)
                return parsed, usage, "", False
            except ParseError as exc:
                if attempt == 2:
                    tally.count(replied=True, parsed=False)
                    return None, usage, str(exc), False
                self._retrying(agent, call, f"reply did not parse ({exc}); asking again")
                messages = [
                    *messages,
                    {"role": "assistant", "content": chat.text},
                    {"role": "user", "content": repair_request(str(exc))},
                ]
        return None, usage, "unreachable", False  # pragma: no cover - the loop always returns

    def _retrying(self, agent: str, call: str, message: str) -> None:
        self._notice(f"{agent}: {message}", "info", agent)
        # A fresh AgentStarted tells panes to clear the partial text of the attempt that failed.
        self.emit(ev.AgentStarted(round=self.round, agent=agent, call=call))

    # --- manager ------------------------------------------------------------------------------
    async def _manager_call(self, call: str, messages: list[dict[str, str]]) -> tuple[Any | None, str]:
        name = self.domain.manager.name
        self.emit(ev.AgentStarted(round=self.round, agent=name, call=call))
        parsed, chat, error, unreachable = await self._call_and_parse(
            name, call, messages, self.settings.manager_call, parse_manager
        )
        if parsed is not None:
            result = AgentResult(name, STATUS_DONE, public=parsed.reasoning, raw=chat.text if chat else "")
        else:
            status = STATUS_UNPARSED if chat else STATUS_FAILED
            result = AgentResult(name, status, raw=chat.text if chat else "", error=error)
            self._notice(f"Manager: {'reply unparsed' if chat else 'call failed'} ({error})", "warning", name)
            if unreachable:
                self._emit_finished(name, call, result, chat)
                raise RunAborted(error)
        self._emit_finished(name, call, result, chat)
        return parsed, result.status

    async def _evaluate(self, round_no: int, outputs: dict[str, AgentResult]) -> Evaluation | None:
        if self.evaluator is None:
            return None
        evaluation = await self.evaluator.evaluate(round_no, self.spec.problem, outputs)
        if evaluation is not None:
            self._last_evaluation = evaluation
            for event in evaluation.events:
                self.emit(event)
            for name in self.workers:
                self.memory[name].add(MemoryItem(round_no, "feedback", "test results", evaluation.feedback))
        return evaluation

    async def _decide(
        self, round_no: int, goal: str, outputs: dict[str, AgentResult], evaluation: Evaluation | None
    ) -> Any | None:
        self._start_phase(ev.PHASE_MANAGER, "Manager reviews the round")
        order = self._routing.order if (self._routing and round_no > 1) else self.workers
        summary = "\n\n".join(
            f"## {name} ({outputs[name].status})\n{outputs[name].public or '(no output)'}"
            + (f"\nAnswer: {outputs[name].answer}" if outputs[name].answer else "")
            for name in order
            if name in outputs
        )
        extra = f"TEST RESULTS:\n{evaluation.feedback}" if evaluation is not None else ""
        messages = [
            {"role": "system", "content": manager_system_prompt(self.domain)},
            {
                "role": "user",
                "content": manager_request(
                    round_no, self.control.params.max_rounds, self.spec.problem, goal, summary, extra
                ),
            },
        ]
        decision, status = await self._manager_call(ev.CALL_MANAGER, messages)
        tests_fail = evaluation is not None and not evaluation.passed
        if decision is not None and decision.terminate and tests_fail and round_no < self.control.params.max_rounds:
            # The Manager may not end a run as solved while the tests fail.
            self._notice("Manager wanted to stop but the tests fail: the run goes on", "info")
            decision.terminate = False
            decision.goal = decision.goal or "Fix the code so that every test passes."
        self.emit(
            ev.ManagerDecided(
                round=round_no,
                terminate=bool(decision is not None and decision.terminate),
                next_goal=decision.goal if decision is not None else goal,
                reasoning=decision.reasoning if decision is not None else "",
                final_answer=decision.final_answer if decision is not None else "",
                status=status,
            )
        )
        return decision

    # --- termination helpers ------------------------------------------------------------------
    def _convergence(self, outputs: dict[str, AgentResult]) -> float | None:
        """Least similarity of any worker's public output to its previous round's; None in round 1.

        The run has converged when even the worker that changed most changed by less than
        1 - threshold (default 0.95) in difflib's character ratio: nobody is adding anything."""
        current = {name: r.public for name, r in outputs.items()}
        previous = self._previous_public
        self._previous_public = current
        if not previous:
            return None
        scores = [text_similarity(previous.get(name, ""), text) for name, text in current.items()]
        return round(min(scores), 4) if scores else None

    def _extract_answer(self) -> tuple[str, str]:
        """The answer when the Manager gave none: the answer role's latest output."""
        role = self.domain.answer_role
        result = self._latest.get(role)
        if result is None:
            candidates = [r for r in self._latest.values() if r.public]
            if not candidates:
                return "", ""
            result = candidates[-1]
        if self.domain.name == "code":
            code = latest_code([result.public])
            if code:
                return f"```python\n{code}\n```", f"extracted:{result.agent}"
        if self.domain.name == "math":
            answer = result.answer or extract_answer(result.public)
            if answer:
                return answer, f"extracted:{result.agent}"
        return result.public, f"extracted:{result.agent}"


@dataclass
class _Usage:
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    latency_s: float
    attempts: int
    text: str  # the last attempt's text

    @staticmethod
    def add(total: _Usage | None, chat: ChatResult) -> _Usage:
        if total is None:
            return _Usage(
                chat.prompt_tokens,
                chat.completion_tokens,
                chat.usage_estimated,
                chat.latency_s,
                chat.attempts,
                chat.text,
            )
        return _Usage(
            total.prompt_tokens + chat.prompt_tokens,
            total.completion_tokens + chat.completion_tokens,
            total.usage_estimated or chat.usage_estimated,
            total.latency_s + chat.latency_s,
            total.attempts + chat.attempts,
            chat.text,
        )


def _render_inbox(deliveries: list[dict[str, Any]]) -> str:
    """Routed messages, strongest first (paper §3.4)."""
    ordered = sorted(deliveries, key=lambda d: (-(d["score"] or 0.0), d["src"]))
    return "\n\n".join(
        f"[from {d['src']}" + (f", relevance {d['score']:.2f}" if d["score"] is not None else "") + f"]\n{d['content']}"
        for d in ordered
    )

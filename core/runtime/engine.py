"""The runtime every method runs on: one run's shared services and its lifecycle.

A method (core.methods) drives the run; the engine gives it what every method shares: the team, LLM
calls with streaming, parsing, repair and retries, embeddings, per-agent memory, the control checkpoints
(pause, step, cancel, parameter changes), the round evaluator (sandbox), token accounting and event
emission. Everything is announced as a typed event (core.runtime.events) to the sinks; the engine never
knows who listens, and never asks which method it hosts.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from core.evaluation.extract import latest_code
from core.evaluation.math_answers import extract_answer
from core.llm.call_id import CallId
from core.llm.embeddings import Embedder, EmbeddingError
from core.llm.tokens import CutOffCost, estimate_tokens
from core.llm.urls import redact_url
from core.runtime import events as ev
from core.runtime.answers import honest_answer
from core.runtime.config import CallLimits, DomainName, RoundProtocol, Settings
from core.runtime.context import Shrink, cut_text, prompt_chars, shrink_pieces
from core.runtime.control import BOUNDARY_ROUND, ControlStatus, Params, RunControl
from core.runtime.domains import Domain, Role, get_domain
from core.runtime.faults import FailureStreak, default_limit, why_the_run_ends
from core.runtime.memory import AgentMemory, MemoryItem
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.parsing import (
    ParseError,
    ReplyTally,
    parse_descriptors,
    parse_manager,
    parse_work,
    parse_worker,
    response_schema,
)
from core.runtime.prompts import JSON_REPLY, PROMPT_CACHE, repair_request, worker_messages
from core.runtime.steering import SteerAction
from core.runtime.teams import team_record

STATUS_DONE = ev.CallStatus.DONE
STATUS_UNPARSED = ev.CallStatus.UNPARSED
STATUS_FAILED = ev.CallStatus.FAILED


@dataclass
class RunSpec:
    """What to run: the problem and the choices that do not change during a run."""

    problem: str
    domain: DomainName = DomainName.CODE
    protocol: RoundProtocol = RoundProtocol.PHASED
    model: str = ""
    base_url: str = ""
    demo: bool = False
    # In a demo, the scripted server's own problem it plays instead of ``problem`` (its name); "" when it
    # plays this one, or when no demo runs. Its answer and verdict are then about that problem, not this.
    demo_played: str = ""
    parent: dict[str, Any] | None = None
    # The team (a user team from core.runtime.teams, or a built-in Domain); None: the domain's built-in one.
    team: Domain | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


@dataclass(frozen=True)
class ForkPoint:
    parent: dict[str, Any]  # {"session": str, "round": int}
    round: int  # the last recorded round kept; the fork runs round + 1 next
    history: list[ev.Event]  # the parent's events of rounds 1..round
    goal: str  # the goal for round + 1


@dataclass
class AgentResult:
    agent: str
    status: ev.CallStatus
    public: str = ""
    private: dict[str, str] = field(default_factory=dict)
    query: str = ""
    key: str = ""
    answer: str = ""
    raw: str = ""
    error: str = ""
    connection_failed: bool = False
    top_logprobs: list[list[float]] | None = None  # per token, when the call asked for them (agent_call)
    context_overflow: bool = False  # the prompt did not fit the model's context, even trimmed: no reply


class CallOutcome(NamedTuple):
    """What call_and_parse ends with."""

    parsed: Any | None
    usage: _Usage | None
    error: str
    unreachable: bool  # no later call can succeed either (the endpoint is down, refuses us, ...)
    overflow: bool = False  # the prompt does not fit the model's context, even trimmed


@dataclass
class Evaluation:
    """What a round evaluator (e.g. running the code's tests) found."""

    passed: bool
    feedback: str  # shown to the Manager and added to the workers' memory
    events: list[ev.Event] = field(default_factory=list)


class RoundEvaluator(Protocol):
    async def evaluate(self, round_no: int, problem: str, outputs: dict[str, AgentResult]) -> Evaluation | None: ...


if TYPE_CHECKING:  # the openai SDK takes ~0.8 s to import: the launch form's first frame does not wait for it
    from core.llm.client import ChatResult, LLMClient


class Method(Protocol):
    """What the engine hosts (core.methods): a method drives one run to its end through the runtime."""

    name: str
    # Each call kind's settings table (``{"manager": "manager_call"}``), as the method's call options record
    # it (core.methods.registry.call_tables): call_limits reads it, so a kind is paired with its table once.
    call_tables: Mapping[str, str]

    def roster(self, domain: Domain) -> tuple[str, list[str], dict[str, str]]:
        """(manager name or "", the agents shown from the start, role descriptions) for RunStarted."""
        ...

    async def run(self, rt: SwarmEngine) -> RunOutcome:
        """Drive the run; return why it ended and its answer, for RunFinished."""
        ...


class RunAborted(Exception):
    """The run cannot go on (e.g. the endpoint is unreachable); the message is for the user."""


class SwarmEngine:
    def __init__(
        self,
        spec: RunSpec,
        settings: Settings,
        llm: LLMClient,
        embedder: Embedder,
        sinks: list[ev.EventSink] | None = None,
        *,
        method: Method,
        control: RunControl | None = None,
        evaluator: RoundEvaluator | None = None,
        fork: ForkPoint | None = None,
    ) -> None:
        self.spec = spec
        self.fork = fork
        self.settings = settings
        self.domain: Domain = spec.team or get_domain(spec.domain)
        self.workers = self.domain.worker_names
        self.llm = llm
        # Agents of a user team with their own model or endpoint: name -> client (core.compose.runner).
        self.agent_clients: dict[str, LLMClient] = {}
        self._roles = {r.name: r for r in (self.domain.manager, *self.domain.workers)}
        self.embedder = embedder
        self.sinks: list[ev.EventSink] = list(sinks or [])
        # The method is chosen by the composition root (core.compose.runner): the engine hosts any of them.
        self.method: Method = method
        self.evaluator = evaluator
        params = Params(settings.tau, settings.k_in, settings.max_rounds)
        self.control = control or RunControl(params, len(self.workers))
        self.control.cancel_hook = self._cancel_now
        self.control.on_change = self._control_changed
        self.control.on_params = self._params_changed
        self.control.on_steered = self._steered
        self.memory: dict[str, AgentMemory] = {name: AgentMemory() for name in self.workers}
        self.budget_reached = ""  # why a bound (time_budget, max_calls) ended the run, once one did
        # What the app itself sent (prompts, re-asks): a final answer that merely echoes it is refused.
        self._sent_texts: deque[str] = deque(maxlen=400)
        self.calls_started = 0
        self.round = 0
        self.phase = ""
        self.prompt_tokens = 0
        self.completion_tokens = 0
        # Of those, how many are estimates (calls cut off in flight, servers that report no usage): RunFinished.
        self.estimated_tokens = 0
        self._task: asyncio.Task[Any] | None = None
        self.latest: dict[str, AgentResult] = {}
        # DyTopo's edge payload: True when only the private message travels (set by the method).
        self.private_messages_only = False
        # How worker prompts are ordered (core.runtime.prompts PROMPT_ORDERS; set by the method).
        self.prompt_order = PROMPT_CACHE
        self.last_evaluation: Evaluation | None = None
        self.finished: ev.RunFinished | None = None
        self.reply_tally = ReplyTally()  # model calls that got a reply / that parsed, for RunFinished
        # Calls failed in a row: past the limit the run ends (core.runtime.faults); one failed call does not.
        self.failures = FailureStreak(settings.max_failed_calls_in_a_row or default_limit(len(self.workers) + 1))

    # --- events -------------------------------------------------------------------------------
    def emit(self, event: ev.Event) -> None:
        for sink in self.sinks:
            sink(event)

    def _control_changed(self, status: ControlStatus) -> None:
        self.emit(ev.ControlChanged(round=self.round, status=status, mode=self.control.mode))

    def _params_changed(self, params: Params, changed: list[str]) -> None:
        self.emit(ev.ParamsChanged(round=self.round, params=params.as_dict(), changed=changed))

    def _steered(self, action: SteerAction, reason: str) -> None:
        self.emit(ev.UserSteered(round=self.round, phase=self.phase, action=action.action.value, target=action.target,
                                 payload=action.as_payload(), accepted=not reason, reason=reason))

    def replace_role(self, role: Role) -> None:
        """An agent's own model, endpoint or sampling changed during the run: its next call uses them."""
        self._roles[role.name] = role

    def notice(self, message: str, severity: ev.SeverityName = ev.Severity.WARNING, agent: str = "") -> None:
        self.emit(ev.Notice(round=self.round, severity=ev.Severity(severity), message=message, agent=agent))

    # --- lifecycle ----------------------------------------------------------------------------
    async def run(self) -> ev.RunFinished:
        """Run to the end. Always returns the RunFinished event, which says why the run ended."""
        manager, workers, roles = self.method.roster(self.domain)
        self.emit(
            ev.RunStarted(
                run_id=self.spec.run_id,
                problem=self.spec.problem,
                domain=DomainName(self.domain.name),
                manager=manager,
                workers=workers,
                roles=roles,
                protocol=RoundProtocol(self.spec.protocol),
                strategy=self.method.name,
                model=self.spec.model or self.llm.model,
                base_url=redact_url(self.spec.base_url or self.llm.base_url),
                demo=self.spec.demo,
                demo_played=self.spec.demo_played,
                params=self.control.params.as_dict(),
                parent=self.fork.parent if self.fork is not None else self.spec.parent,
                team=team_record(self.domain),
                method_options=dict(getattr(self.method, "options", None) or {}),
            )
        )
        self._task = asyncio.current_task()
        watchdog = self._start_time_budget()
        try:
            outcome = await self.method.run(self)
        except asyncio.CancelledError:
            if not self.control.cancelled:
                raise
            # Swallow the cancel we asked for ourselves; a cancel from outside still propagates.
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            answer, source = self.extract_answer()
            why = self.control.stop_reason or "cancelled by the user"  # a steering "stop" says so
            outcome = (RunOutcome(EndReason.BUDGET, self.budget_reached, answer, source) if self.budget_reached
                       else RunOutcome(EndReason.CANCELLED, why, answer, source))
        except (RunAborted, EmbeddingError) as exc:
            answer, source = self.extract_answer()
            outcome = RunOutcome(EndReason.ERROR, str(exc), answer, source)
        finally:
            self._task = None  # a cancel from now on must not hit the caller's task (it awaited run())
            if watchdog is not None:
                watchdog.cancel()
        return self._finish(outcome)

    # --- budgets (settings time_budget, max_calls) ----------------------------------------------------
    def _start_time_budget(self) -> asyncio.TimerHandle | None:
        seconds = self.settings.time_budget
        if not seconds:
            return None
        return asyncio.get_running_loop().call_later(seconds, self._stop_for_budget,
                                                     f"the time budget of {seconds:g} s was reached")

    def _stop_for_budget(self, why: str, *, let_running_finish: bool = False) -> None:
        """End the run at a bound; finished calls stay in the record. Calls in flight are cancelled (the
        time budget) or, when ``let_running_finish`` (the call budget: they are within it), complete."""
        if not self.budget_reached and not self.control.cancelled:
            self.budget_reached = why
            self.notice(why + "; the run ends with the best valid answer so far", "warning")
            self.control.cancel(let_running_finish=let_running_finish)

    def _cancel_now(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _finish(self, outcome: RunOutcome) -> ev.RunFinished:
        self.control.end_steering()  # actions still waiting for a barrier are refused before the end
        answer, source, refused = honest_answer(outcome.answer, outcome.source, self.domain.name, self._sent_texts)
        if refused:
            self.notice(f"{refused}: the run ends with no answer", "warning")
        solved = self.last_evaluation.passed if self.last_evaluation is not None else None
        self.finished = ev.RunFinished(
            reason=EndReason(outcome.reason),  # a StrEnum: sessions store its string as before
            detail=outcome.detail,
            final_answer=answer,
            answer_source=source,
            rounds=self.round,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            tokens_estimated=self.estimated_tokens,
            solved=solved,
            replies_parsed=self.reply_tally.parsed,
            replies_total=self.reply_tally.total,
            demo_played=self.spec.demo_played,
        )
        self.emit(self.finished)
        return self.finished

    async def checkpoint(self, boundary: str) -> None:
        # The barrier hook: steering actions due here are applied by the method (RunControl.steer_hook).
        await self.control.checkpoint(boundary, self.round + 1 if boundary == BOUNDARY_ROUND else self.round)

    def start_phase(self, phase: str, detail: str = "") -> None:
        self.phase = phase
        self.emit(ev.PhaseStarted(round=self.round, phase=phase, detail=detail))


    # --- calls --------------------------------------------------------------------------------
    async def gather(self, calls: dict[str, Awaitable[AgentResult]]) -> dict[str, AgentResult]:
        """Run calls in parallel. A TaskGroup cancels the siblings if one is cancelled, so a cancel
        leaves no orphan tasks behind."""
        try:
            async with asyncio.TaskGroup() as group:
                tasks = {name: group.create_task(call) for name, call in calls.items()}  # type: ignore[arg-type]
        except BaseExceptionGroup as group_error:
            # A run-ending error inside one call (the endpoint refused us, MiniLM cannot load) ends the run
            # with its own one-line message, not as "unhandled errors in a TaskGroup".
            for exc in group_error.exceptions:
                if isinstance(exc, RunAborted | EmbeddingError):
                    raise exc from None
            raise
        return {name: task.result() for name, task in tasks.items()}

    def abort_if_unreachable(self, results: dict[str, AgentResult]) -> None:
        """End the run when the endpoint is down (no call of the phase got a reply, and one found it down),
        an agent's own endpoint is, or too many calls failed in a row (core.runtime.faults). A call that
        failed otherwise failed its agent's turn only: the run goes on."""
        why = why_the_run_ends(results.values(), self.failures, self.agent_clients)
        if why:
            raise RunAborted(why)

    def _worker_messages(
        self, name: str, call: str, goal: str, inbox: str, inbox_from: frozenset[str] = frozenset()
    ) -> list[dict[str, str]]:
        memory_text, dropped, dropped_tokens = self.memory[name].render(
            self._memory_budget(goal, inbox), since_round=self._memory_since(call), newer_from=inbox_from
        )
        if dropped:
            self.emit(ev.MemoryTrimmed(round=self.round, agent=name, dropped=dropped, dropped_tokens=dropped_tokens))
        return self._compose_worker(name, call, goal, memory_text, inbox)

    def _memory_since(self, call: str) -> int:
        # A descriptor call states needs and offers for this round: the last round's memory is its context.
        return self.round - 1 if call == ev.CALL_DESCRIPTORS else 0

    def _compose_worker(self, name: str, call: str, goal: str, memory_text: str, inbox: str) -> list[dict[str, str]]:
        return worker_messages(
            self.domain, self.domain.role(name), call, round_no=self.round, problem=self.spec.problem, goal=goal,
            memory=memory_text, inbox=inbox, private_only=self.private_messages_only, order=self.prompt_order,
            suffix=" /no_think" if call == ev.CALL_DESCRIPTORS and self.settings.no_think else "",
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
            self.emit(ev.MemoryTrimmed(round=self.round, agent=name, dropped=len(gone), dropped_tokens=tokens))

        return shrink_pieces(build, [text for _, text in shown], [inbox] if inbox else [], on_drop=forget)

    def _memory_budget(self, goal: str, inbox: str) -> int:
        """What is left of the context budget for memory once the fixed parts are in."""
        fixed = (len(self.spec.problem) + len(goal) + len(inbox)) // 4 + 800  # prompts and schema
        return max(200, self.settings.context_budget_tokens - fixed)

    def call_limits(self, kind: str) -> CallLimits:
        """The temperature and max_tokens of one kind of call: the settings' table the method names for it
        (Method.call_tables: manager_call, work_call or descriptor_call), overlaid by the method's own options
        ``KIND_max_tokens`` and ``KIND_temperature`` when set (-o or [strategy.NAME]). A team file's per-agent
        values and --max-tokens apply on top (call_and_parse)."""
        base: CallLimits = getattr(self.settings, self.method.call_tables[kind])
        options = getattr(self.method, "options", None) or {}
        temperature = options.get(f"{kind}_temperature")
        max_tokens = options.get(f"{kind}_max_tokens")
        return CallLimits(
            base.temperature if temperature is None else float(temperature),
            base.max_tokens if max_tokens is None else int(max_tokens),
        )

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
        limits = self.call_limits("descriptor" if call == ev.CALL_DESCRIPTORS else "worker")
        parser: Callable[[str], Any] = {ev.CALL_DESCRIPTORS: parse_descriptors, ev.CALL_WORK: parse_work}.get(
            call, parse_worker
        )
        messages = self._worker_messages(name, call, goal, inbox, inbox_from)
        self.emit(ev.AgentStarted(round=self.round, agent=name, call=call, tier=tier))
        outcome = await self.call_and_parse(
            name, call, messages, limits, parser, shrink=self._worker_shrink(name, call, goal, inbox, inbox_from)
        )
        role = self.domain.role(name)
        parsed, chat, error, connection_failed, overflow = outcome
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
                context_overflow=overflow,
            )
            self.notice(f"{name}: {'reply unparsed' if chat else 'call failed'} ({error})", "warning", name)
        self._latest_update(call, result)
        self._emit_finished(name, call, result, outcome[1])
        return result

    def _latest_update(self, call: str, result: AgentResult) -> None:
        if call != ev.CALL_DESCRIPTORS:
            self.latest[result.agent] = result

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

    async def call_and_parse(
        self,
        agent: str,
        call: str,
        messages: list[dict[str, str]],
        limits: CallLimits,
        parser: Callable[[str], Any],
        *,
        json_mode: bool = True,
        top_logprobs: int = 0,
        client: LLMClient | None = None,
        reply_format: str | None = None,
        shrink: Shrink | None = None,
    ) -> CallOutcome:
        """(parsed or None, usage summed over attempts, error text, connection failed, context overflow).
        A reply that does not parse, or was cut off at max_tokens, is asked for once more, with the error.
        The endpoint is asked for the contract's JSON schema (core.runtime.parsing.response_schema).
        ``client``: another endpoint or model for this call (e.g. a method's own orchestrator model).
        ``shrink``: how the method trims this prompt (core.runtime.context): used to fit a known context from
        the start, and once when the server refuses the request as over its context."""
        import openai  # loaded with the client already; not at the top (see TYPE_CHECKING above)

        from core.llm.client import endpoint_down
        from core.llm.overflow import context_overflow

        llm = client or self.agent_clients.get(agent) or self.llm
        role = self._roles.get(agent)
        if role is not None and (role.temperature is not None or role.max_tokens is not None):
            limits = CallLimits(
                limits.temperature if role.temperature is None else role.temperature,
                limits.max_tokens if role.max_tokens is None else role.max_tokens,
            )
        if self.settings.max_tokens is not None and limits.max_tokens > self.settings.max_tokens:
            limits = CallLimits(limits.temperature, self.settings.max_tokens)  # --max-tokens caps every call
        usage: _Usage | None = None
        tally = self.reply_tally
        decision = call in (ev.CALL_PLAN, ev.CALL_MANAGER)
        # App-authored only: system prompts and re-asks (user messages also carry the team's own outputs).
        self._sent_texts.extend(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        # The format this call's role must write, for a re-ask: the caller's, the parser's own, or by mode.
        reask_format = reply_format or getattr(parser, "reply_format", None) or (
            JSON_REPLY if json_mode else "your reply in the format you were asked for, shorter")
        base, extra = messages, []  # the method's prompt, and a re-ask's turns after it
        overflow_retried = False
        attempt = 1
        while True:
            base, sent, max_tokens, before = self._fit_context(llm, base, extra, shrink, limits.max_tokens)
            if before:
                self.notice(f"{agent}: prompt trimmed to fit the model's context of {llm.context_size} tokens "
                            f"({before} → {prompt_chars(sent)} characters, oldest messages first)", "info", agent)
            if self.settings.max_calls is not None and self.calls_started >= self.settings.max_calls:
                self._stop_for_budget(f"the budget of {self.settings.max_calls} model calls was reached",
                                      let_running_finish=True)
                raise asyncio.CancelledError  # this call is never sent; the run ends as "budget"
            self.calls_started += 1
            cut_off = CutOffCost()
            try:
                chat = await llm.chat(
                    sent,
                    temperature=limits.temperature,
                    max_tokens=max_tokens,
                    json_mode=json_mode,
                    schema=response_schema(parser) if json_mode else None,
                    on_delta=lambda text: self.emit(ev.AgentDelta(round=self.round, agent=agent, call=call, text=text)),
                    on_retry=lambda message: self._retrying(agent, call, message),
                    # A decision call is named by its kind, "Manager", whatever the team calls its Manager.
                    call_id=CallId("Manager" if decision else agent, call, self.round),
                    **({"top_logprobs": top_logprobs} if top_logprobs > 0 else {}),
                    cut_off=cut_off,
                )
            except asyncio.CancelledError:
                self._count_cut_off(agent, call, cut_off)
                raise
            except openai.OpenAIError as exc:
                overflow = context_overflow(exc)
                if overflow is not None:
                    self.failures.replied()  # the server answered: it is up
                    retry = None if overflow_retried else self._after_overflow(
                        llm, base, extra, shrink, limits.max_tokens, sent, max_tokens)
                    if retry is not None:
                        overflow_retried, base = True, retry[0]
                        self.notice(f"{agent}: {overflow.describe()}; asking once more with {retry[1]}", "warning",
                                    agent)
                        self.emit(ev.AgentStarted(round=self.round, agent=agent, call=call))
                        continue
                    tally.count(replied=usage is not None, parsed=False)
                    why = "even after trimming it once" if overflow_retried else "and nothing in it can be trimmed"
                    return CallOutcome(None, usage, f"{overflow.describe()}, {why}", False, True)
                # No later call can succeed either: the server is gone, refuses the key, has no such
                # model (a model name it does not serve answers 404), never answers or rate-limits us.
                unreachable = endpoint_down(exc)
                tally.count(replied=usage is not None, parsed=False)
                error = llm.describe_error(exc)
                if agent in self.agent_clients and client is None:  # say whose endpoint failed
                    error = f"agent {agent} (model {llm.model or '?'} at {llm.shown_url}): {error}"
                ended = self.failures.failed(error)
                if ended:
                    return CallOutcome(None, usage, ended, True)
                return CallOutcome(None, usage, error if unreachable else f"{error}; {self.failures.goes_on()}",
                                   unreachable)
            self.failures.replied()
            if chat.cut_short:
                self.notice(f"{agent}: {chat.cut_short}", "warning", agent)
            usage = _Usage.add(usage, chat)
            self.prompt_tokens += chat.prompt_tokens
            self.completion_tokens += chat.completion_tokens
            if chat.usage_estimated:
                self.estimated_tokens += chat.prompt_tokens + chat.completion_tokens
            try:
                parsed = parser(chat.text)
                if chat.finish_reason == "length" and (decision or attempt == 1):
                    # json-repair may complete a cut-off object: never take it as a decision, and ask a
                    # worker once more before using what it got.
                    raise ParseError(f"the reply was cut off at max_tokens ({max_tokens} tokens): be shorter")
                tally.count(replied=True, parsed=True)
                return CallOutcome(parsed, usage, "", False)
            except ParseError as exc:
                if attempt == 2:
                    tally.count(replied=True, parsed=False)
                    return CallOutcome(None, usage, str(exc), False)
                attempt = 2
                self._retrying(agent, call, f"reply did not parse ({exc}); asking again")
                extra = [
                    {"role": "assistant", "content": chat.text},
                    {"role": "user", "content": repair_request(str(exc), reask_format)},
                ]
                self._sent_texts.append(extra[-1]["content"])

    def _count_cut_off(self, agent: str, call: str, cost: CutOffCost) -> None:
        """A call cancelled in flight (the time budget, a cancel) still cost what the server did: its tokens
        go into the run's totals, and a notice records them (the call itself never finishes)."""
        if not cost.sent:
            return
        self.prompt_tokens += cost.prompt_tokens
        self.completion_tokens += cost.completion_tokens
        if cost.estimated:
            self.estimated_tokens += cost.tokens
        self.notice(
            f"{agent}: {call} call cut off in flight; its {'~' if cost.estimated else ''}{cost.prompt_tokens} prompt "
            f"+ {cost.completion_tokens} completion tokens{' (estimated)' if cost.estimated else ''} are counted",
            "info", agent,
        )

    @staticmethod
    def _fit_context(
        llm: LLMClient, base: list[dict[str, str]], extra: list[dict[str, str]], shrink: Shrink | None, max_tokens: int
    ) -> tuple[list[dict[str, str]], list[dict[str, str]], int, int]:
        """Plan a request within the model's context when it is known (llama.cpp's /props, or an earlier
        overflow error): the prompt keeps room for the reply (max_tokens, at most a quarter of it) and is
        trimmed by ``shrink`` when it does not; max_tokens never asks for more than the context leaves.
        (the method's prompt, the messages to send, max_tokens, the prompt's characters before a trim or 0)."""
        sent = [*base, *extra]
        n_ctx = llm.context_size
        if not n_ctx:
            return base, sent, max_tokens, 0
        margin = max(16, n_ctx // 32)  # the character estimate of a prompt's tokens is not exact
        limit = n_ctx - min(max_tokens, n_ctx // 4) - margin
        before = 0
        if shrink is not None and llm.estimate_prompt_tokens(sent) > limit:
            most = int((limit - 4 * len(sent)) * llm.chars_per_token) - prompt_chars(extra)
            smaller = shrink(max(0, most))
            if smaller is not None and prompt_chars(smaller) < prompt_chars(base):
                before, base = prompt_chars(sent), smaller
                sent = [*base, *extra]
        over = llm.estimate_prompt_tokens(sent) - limit
        if extra and over > 0:  # a re-ask: the reply it quotes is cut (it only shows what was wrong)
            reply = extra[0]["content"]
            keep = max(0, len(reply) - int(over * llm.chars_per_token))
            if keep < len(reply):
                before = before or prompt_chars(sent)
                sent = [*base, {**extra[0], "content": cut_text(reply, keep)}, *extra[1:]]
        room = n_ctx - llm.estimate_prompt_tokens(sent) - margin
        if room >= min(max_tokens, 32):
            max_tokens = min(max_tokens, room)
        return base, sent, max_tokens, before

    def _after_overflow(
        self,
        llm: LLMClient,
        base: list[dict[str, str]],
        extra: list[dict[str, str]],
        shrink: Shrink | None,
        max_tokens: int,
        sent: list[dict[str, str]],
        sent_max_tokens: int,
    ) -> tuple[list[dict[str, str]], str] | None:
        """The prompt to retry with after the server refused ``sent`` as over its context, and what changed;
        None when nothing can be made smaller. The client has learned what the error said (the context size,
        the prompt's tokens); without a context size the prompt is cut to half."""
        new_base, new_sent, new_max, _ = self._fit_context(llm, base, extra, shrink, max_tokens)
        if prompt_chars(new_sent) >= prompt_chars(sent) and new_max >= sent_max_tokens:
            smaller = shrink(prompt_chars(base) // 2) if shrink is not None else None
            if smaller is None:
                return None
            new_base, new_sent = smaller, [*smaller, *extra]
            new_max = self._fit_context(llm, new_base, extra, None, max_tokens)[2]
        changes = []
        if prompt_chars(new_sent) < prompt_chars(sent):
            changes.append(f"the prompt trimmed from {prompt_chars(sent)} to {prompt_chars(new_sent)} characters "
                           "(oldest messages first)")
        if new_max < sent_max_tokens:
            changes.append(f"max_tokens {new_max}")
        if not changes:
            return None
        return new_base, " and ".join(changes)

    async def agent_call(
        self,
        name: str,
        call: str,
        messages: list[dict[str, str]],
        *,
        limits: CallLimits | None = None,
        parser: Callable[[str], Any] | None = None,
        json_mode: bool = False,
        tier: int | None = None,
        top_logprobs: int = 0,
        client: LLMClient | None = None,
        reply_format: str | None = None,
        shrink: Shrink | None = None,
    ) -> tuple[AgentResult, Any | None]:
        """One call of any method, announced (AgentStarted, deltas, AgentFinished) and accounted.

        ``call`` labels it (a method's own mode: solution, evaluate, orchestrate, ...). Without a parser the
        reply's text is the result; with one, a reply that does not parse is re-asked once and the parsed
        value comes back beside the result. A connection-level failure is marked on the result; the
        caller decides whether the run can go on (abort_if_unreachable). ``top_logprobs`` > 0 asks for each
        token's top logprobs, returned on the result (None when the endpoint sends none). ``shrink``: how the
        method trims this prompt to fit the model's context (core.runtime.context); without one a prompt over
        the context fails this call only."""
        limits = limits or self.settings.work_call
        self.emit(ev.AgentStarted(round=self.round, agent=name, call=call, tier=tier))
        parsed, usage, error, connection_failed, overflow = await self.call_and_parse(
            name, call, messages, limits, parser or _plain_text, json_mode=json_mode, top_logprobs=top_logprobs,
            client=client, reply_format=reply_format, shrink=shrink,
        )
        text = usage.text if usage else ""
        if parsed is not None or (parser is None and usage is not None):
            result = AgentResult(name, STATUS_DONE, public=text.strip(), raw=text)
        else:
            status = STATUS_UNPARSED if usage else STATUS_FAILED
            result = AgentResult(
                name, status, public=text.strip(), raw=text, error=error, connection_failed=connection_failed,
                context_overflow=overflow,
            )
            self.notice(f"{name}: {'reply unparsed' if usage else 'call failed'} ({error})", "warning", name)
        result.top_logprobs = usage.top_logprobs if usage else None
        self.latest[name] = result
        self._emit_finished(name, call, result, usage)
        return result, parsed

    def _retrying(self, agent: str, call: str, message: str) -> None:
        self.notice(f"{agent}: {message}", "info", agent)
        # A fresh AgentStarted tells panes to clear the partial text of the attempt that failed.
        self.emit(ev.AgentStarted(round=self.round, agent=agent, call=call))

    # --- manager ------------------------------------------------------------------------------
    async def manager_call(
        self, call: str, messages: list[dict[str, str]], *, shrink: Shrink | None = None
    ) -> tuple[Any | None, str]:
        name = self.domain.manager.name
        self.emit(ev.AgentStarted(round=self.round, agent=name, call=call))
        parsed, chat, error, unreachable, _ = await self.call_and_parse(
            name, call, messages, self.call_limits("manager"), parse_manager, shrink=shrink
        )
        if parsed is not None:
            result = AgentResult(name, STATUS_DONE, public=parsed.reasoning, raw=chat.text if chat else "")
        else:
            status = STATUS_UNPARSED if chat else STATUS_FAILED
            result = AgentResult(name, status, raw=chat.text if chat else "", error=error)
            self.notice(f"Manager: {'reply unparsed' if chat else 'call failed'} ({error})", "warning", name)
            if unreachable:
                self._emit_finished(name, call, result, chat)
                raise RunAborted(error)
        self._emit_finished(name, call, result, chat)
        return parsed, result.status

    async def evaluate(self, round_no: int, outputs: dict[str, AgentResult]) -> Evaluation | None:
        if self.evaluator is None:
            return None
        evaluation = await self.evaluator.evaluate(round_no, self.spec.problem, outputs)
        if evaluation is not None:
            self.last_evaluation = evaluation
            for event in evaluation.events:
                self.emit(event)
            for name in self.workers:
                self.memory[name].add(MemoryItem(round_no, "feedback", "test results", evaluation.feedback))
        return evaluation


    # --- termination helpers ------------------------------------------------------------------

    def extract_answer(self) -> tuple[str, str]:
        """The answer when the Manager gave none: the answer role's latest output."""
        role = self.domain.answer_role
        result = self.latest.get(role)
        if result is None:
            candidates = [r for r in self.latest.values() if r.public]
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
    top_logprobs: list[list[float]] | None = None  # the last attempt's, when asked for

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
                chat.top_logprobs,
            )
        return _Usage(
            total.prompt_tokens + chat.prompt_tokens,
            total.completion_tokens + chat.completion_tokens,
            total.usage_estimated or chat.usage_estimated,
            total.latency_s + chat.latency_s,
            total.attempts + chat.attempts,
            chat.text,
            chat.top_logprobs,
        )


def _plain_text(text: str) -> str:
    return text

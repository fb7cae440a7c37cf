"""The runtime every method runs on: one run's shared services and its lifecycle.

A method (core.methods) drives the run; the engine gives it what every method shares: the team, LLM
calls (core.runtime.calls: streaming, parsing, re-asks, the context's limits, token accounting),
embeddings, the control checkpoints (pause, step, cancel, parameter changes) at the barrier, the round
evaluator (sandbox), the time and call budgets, and event emission. A method changes the run's state
through the engine's methods (begin_round, finish_round, set_latest, record_evaluation, ...), never by
writing its fields. Everything is announced as a typed event (core.runtime.events) to the sinks; the
engine never knows who listens, and never asks which method it hosts (a method's own calls and memory,
such as DyTopo's, live with the method).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from core.llm.embeddings import Embedder, EmbeddingError
from core.llm.urls import redact_url
from core.runtime import events as ev
from core.runtime.answers import honest_answer, latest_answer
from core.runtime.calls import ModelCalls, Usage, finished_event
from core.runtime.config import CallLimits, DomainName, RoundProtocol, Settings
from core.runtime.context import Shrink
from core.runtime.control import BOUNDARY_ROUND, ControlStatus, Params, RunControl
from core.runtime.domains import Domain, Role, get_domain
from core.runtime.faults import FailureStreak, default_limit, why_the_run_ends
from core.runtime.outcome import EndReason, RunOutcome
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


@dataclass
class Evaluation:
    """What a round evaluator (e.g. running the code's tests) found."""

    passed: bool
    feedback: str  # for the next prompts (DyTopo: the Manager's, and the workers' memory)
    events: list[ev.Event] = field(default_factory=list)


class RoundEvaluator(Protocol):
    async def evaluate(self, round_no: int, problem: str, outputs: dict[str, AgentResult]) -> Evaluation | None: ...


if TYPE_CHECKING:  # the openai SDK takes ~0.8 s to import: the launch form's first frame does not wait for it
    from core.llm.client import LLMClient


class Method(Protocol):
    """What the engine hosts (core.methods): a method drives one run to its end through the runtime."""

    name: str
    # Each call kind's settings table (``{"manager": "manager_call"}``), as the method's call options record
    # it (core.methods.registry.call_tables): call_limits reads it, so a kind is paired with its table once.
    @property
    def call_tables(self) -> Mapping[str, str]: ...

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
        control: RunControl,
        evaluator: RoundEvaluator | None = None,
        fork: ForkPoint | None = None,
        agent_clients: Mapping[str, LLMClient] | None = None,
    ) -> None:
        self.spec = spec
        self.fork = fork
        self.settings = settings
        self.domain: Domain = spec.team or get_domain(spec.domain)
        self.workers = self.domain.worker_names
        self.llm = llm
        # Agents of a user team with their own model or endpoint: name -> client (core.compose.runner).
        self.agent_clients: dict[str, LLMClient] = dict(agent_clients or {})
        self.embedder = embedder
        self.sinks: list[ev.EventSink] = list(sinks or [])
        # The method is chosen by the composition root (core.compose.runner): the engine hosts any of them.
        self.method: Method = method
        self.evaluator = evaluator
        self.control = control  # the face's (core.compose.plan.new_control): keys reach the run through it
        self.control.cancel_hook = self._cancel_now
        self.control.on_change = self._control_changed
        self.control.on_params = self._params_changed
        self.control.on_steered = self._steered
        self.budget_reached = ""  # why a bound (time_budget, max_calls) ended the run, once one did
        self.round = 0
        self.phase = ""
        self._task: asyncio.Task[Any] | None = None
        self.latest: dict[str, AgentResult] = {}
        self.last_evaluation: Evaluation | None = None
        self.finished: ev.RunFinished | None = None
        # Every model call of the run, and what they cost (tokens, calls started, replies parsed, failures in
        # a row: past the limit the run ends, core.runtime.faults; one failed call does not).
        streak = FailureStreak(settings.max_failed_calls_in_a_row or default_limit(len(self.workers) + 1))
        self.calls = ModelCalls(self, {r.name: r for r in (self.domain.manager, *self.domain.workers)}, streak)

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

    def replace_role(self, role: Role, client: LLMClient | None = None) -> None:
        """An agent's own model, endpoint or sampling changed during the run: its next call uses them."""
        self.calls.roles[role.name] = role
        if client is not None:
            self.agent_clients[role.name] = client

    def notice(self, message: str, severity: ev.SeverityName = ev.Severity.WARNING, agent: str = "") -> None:
        self.emit(ev.Notice(round=self.round, severity=ev.Severity(severity), message=message, agent=agent))

    # --- lifecycle ----------------------------------------------------------------------------
    async def run(self) -> ev.RunFinished:
        """Run to the end. Always returns the RunFinished event, which says why the run ended."""
        manager, workers, roles = self.method.roster(self.domain)
        slots = self.llm.plan_slots([name for name in (manager, *workers) if name])  # a llama.cpp slot per agent
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
            self.llm.release_slots(slots)
        return self._finish(outcome)

    # --- budgets (settings time_budget, max_calls) ----------------------------------------------------
    def _start_time_budget(self) -> asyncio.TimerHandle | None:
        seconds = self.settings.time_budget
        if not seconds:
            return None
        return asyncio.get_running_loop().call_later(seconds, self.stop_for_budget,
                                                     f"the time budget of {seconds:g} s was reached")

    def stop_for_budget(self, why: str, *, let_running_finish: bool = False) -> None:
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
        calls = self.calls
        answer, source, refused = honest_answer(outcome.answer, outcome.source, self.domain.name, calls.sent_texts)
        if refused:
            self.notice(f"{refused}: the run ends with no answer", "warning")
        solved = self.last_evaluation.passed if self.last_evaluation is not None else None
        self.finished = ev.RunFinished(
            reason=EndReason(outcome.reason),  # a StrEnum: sessions store its string as before
            detail=outcome.detail,
            final_answer=answer,
            answer_source=source,
            rounds=self.round,
            prompt_tokens=calls.prompt_tokens,
            completion_tokens=calls.completion_tokens,
            tokens_estimated=calls.estimated_tokens,
            cached_tokens=calls.cached_tokens,
            solved=solved,
            replies_parsed=calls.reply_tally.parsed,
            replies_total=calls.reply_tally.total,
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

    # --- run state: what a method changes, through these ------------------------------------------
    def begin_round(self, round_no: int, params: dict[str, Any] | None = None) -> None:
        """Round (a method's step, turn) ``round_no`` starts, with the live parameters or the method's own."""
        self.round = round_no
        self.emit(ev.RoundStarted(round=round_no, params=self.control.params.as_dict() if params is None else params))

    def finish_round(self, convergence: float | None = None) -> None:
        """The current round ends: RoundFinished with the run's token totals so far."""
        self.emit(ev.RoundFinished(round=self.round, prompt_tokens=self.calls.prompt_tokens,
                                   completion_tokens=self.calls.completion_tokens, convergence=convergence))

    def resume_round(self, recorded: ev.RoundFinished) -> None:
        """A fork replays its parent's round: the run stands where that round left it (round, tokens)."""
        self.round = recorded.round
        self.calls.prompt_tokens, self.calls.completion_tokens = recorded.prompt_tokens, recorded.completion_tokens

    def set_latest(self, result: AgentResult, *, newest: bool = False) -> None:
        """An agent's latest output (extract_answer reads it); ``newest`` also makes it the last one in order."""
        if newest:
            self.latest.pop(result.agent, None)
        self.latest[result.agent] = result

    def record_evaluation(self, evaluation: Evaluation) -> None:
        """The run's latest check (RunFinished.solved reads it): a method's own check, or a replayed one."""
        self.last_evaluation = evaluation

    def attach(self, *, reroute: Callable[[], bool] | None = None,
               steer: Callable[[SteerAction], str | None] | None = None) -> None:
        """The method's hooks: ``reroute`` rebuilds its graph after a parameter change mid-round (False: too
        late, the values apply next time); ``steer`` applies one steering action at the barrier ("" or why not;
        None keeps it for a later barrier)."""
        self.control.reroute_hook = reroute or self.control.reroute_hook
        self.control.steer_hook = steer or self.control.steer_hook

    # --- calls --------------------------------------------------------------------------------
    async def gather(self, calls: Mapping[str, Coroutine[Any, Any, AgentResult]]) -> dict[str, AgentResult]:
        """Run calls in parallel. A TaskGroup cancels the siblings if one is cancelled, so a cancel
        leaves no orphan tasks behind."""
        try:
            async with asyncio.TaskGroup() as group:
                tasks = {name: group.create_task(call) for name, call in calls.items()}
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
        why = why_the_run_ends(results.values(), self.calls.failures, self.agent_clients)
        if why:
            raise RunAborted(why)

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

    def call_finished(self, call: str, result: AgentResult, chat: Usage | None) -> None:
        """Announce a finished call (AgentFinished) with what it cost; a method's own call kinds use it too."""
        self.emit(finished_event(self.round, call, result, chat))

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
        parsed, usage, error, connection_failed, overflow = await self.calls.call_and_parse(
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
        self.call_finished(call, result, usage)
        return result, parsed

    async def evaluate(self, round_no: int, outputs: dict[str, AgentResult]) -> Evaluation | None:
        if self.evaluator is None:
            return None
        evaluation = await self.evaluator.evaluate(round_no, self.spec.problem, outputs)
        if evaluation is not None:
            self.last_evaluation = evaluation
            for event in evaluation.events:
                self.emit(event)
        return evaluation

    # --- termination helpers ------------------------------------------------------------------
    def extract_answer(self) -> tuple[str, str]:
        """The answer when the Manager gave none: the answer role's latest output (core.runtime.answers)."""
        return latest_answer(self.domain.name, self.domain.answer_role, self.latest)


def _plain_text(text: str) -> str:
    return text

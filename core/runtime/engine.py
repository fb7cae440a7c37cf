"""The runtime every method runs on: one run's shared services and its lifecycle.

A method (core.methods) drives the run; the engine gives it what every method shares: the team, LLM
calls (core.runtime.calls: streaming, parsing, re-asks, the context's limits, token accounting),
embeddings, the control checkpoints (pause, step, cancel, parameter changes) at the barrier, the round
evaluator (sandbox), the time and call budgets, and event emission. A method never holds the engine: it
runs on a RunContext (core.runtime.run_context.EngineContext, over this engine's parts), and changes the
run's state by announcing it (its RoundStarted and PhaseStarted move the round and phase) or recording it.
Everything is announced as a typed event (core.runtime.events) to the sinks; the engine never knows who
listens, and never asks which method it hosts (a method's own calls and memory, such as DyTopo's, live
with the method).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from core.llm.embeddings import Embedder, EmbeddingError
from core.llm.urls import redact_url
from core.runtime import events as ev
from core.runtime.answers import honest_answer, latest_answer
from core.runtime.calls import CallRequest, ModelCalls, Usage, finished_event
from core.runtime.config import CallLimits, DomainName, RoundProtocol, Settings, resolve_api_key
from core.runtime.context import Shrink
from core.runtime.control import ControlStatus, Params, RunControl, StepBoundary
from core.runtime.dispatch import EventTable
from core.runtime.faults import FailureStreak, default_limit, why_the_run_ends
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.parsing import is_template_copy
from core.runtime.rosters import Role, Team, builtin_team
from core.runtime.run_context import CallReply, RunBrief, RunContext, RunState, Shape
from core.runtime.run_types import (
    AgentResult,
    CheckedRound,
    Evaluation,
    ForkPoint,
    RoundEvaluator,
    RunAborted,
    RunSpec,
)
from core.runtime.steering import SteerAction
from core.runtime.teams import team_record

if TYPE_CHECKING:  # the openai SDK takes ~0.8 s to import: the launch form's first frame does not wait for it
    from core.llm.client import LLMClient

# The run's values live in core.runtime.run_types; methods and tests import them from here too.
__all__ = [
    "AgentResult", "CheckedRound", "Evaluation", "ForkPoint", "Method", "RoundEvaluator", "RunAborted", "RunSpec",
    "SwarmEngine",
]


class Method(Protocol):
    """What the engine hosts (core.methods): a method drives one run to its end through the runtime."""

    name: str
    # Each call kind's settings table (``{"manager": "manager_call"}``), as the method's call options record
    # it (core.methods.registry.call_tables): call_limits reads it, so a kind is paired with its table once.
    @property
    def call_tables(self) -> Mapping[str, str]: ...

    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        """(manager name or "", the agents shown from the start, role descriptions) for RunStarted."""
        ...

    async def run(self, ctx: RunContext) -> RunOutcome:
        """Drive the run through its context (core.runtime.run_context); return why it ended and its answer,
        for RunFinished."""
        ...


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
        self.team: Team = spec.team or builtin_team(spec.domain)
        self.workers = self.team.worker_names
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
        self.calls = ModelCalls(self, {r.name: r for r in (self.team.manager, *self.team.workers)}, streak)
        self._own_clients: list[LLMClient] = []  # made for an agent's new model or endpoint (replace_role)

    # --- events -------------------------------------------------------------------------------
    def emit(self, event: ev.Event) -> None:
        """Announce ``event`` to the sinks. A method moves the run by announcing it: its RoundStarted sets
        the round, its PhaseStarted the phase (a fork's replayed history does not: EngineContext.record)."""
        MOVES.dispatch(self, event)
        self._announce(event)

    def _announce(self, event: ev.Event) -> None:
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
        """An agent's own model, endpoint or sampling changed during the run: its next call uses them. A new
        model or endpoint gets a client of its own (the run closes it when it ends)."""
        old = self.calls.roles.get(role.name)
        self.calls.roles[role.name] = role
        if old is not None and (role.model, role.base_url) != (old.model, old.base_url):
            current = self.agent_clients.get(role.name) or self.llm
            client = self.connect(role.model or current.model or None, role.base_url or current.base_url,
                                  key_env=role.api_key_env)
            self._own_clients.append(client)
            self.agent_clients[role.name] = client

    def connect(self, model: str | None, base_url: str | None = None, *, key_env: str | None = None,
                max_concurrency: int | None = None) -> LLMClient:
        """A client for another model or endpoint (the run's endpoint when ``base_url`` is None), with the
        settings' API key (or ``key_env``'s)."""
        from core.runtime.clients import client_for  # imports the openai SDK: only when another model is asked for

        key = resolve_api_key(self.settings, key_env=key_env)
        return client_for(self.settings, base_url or self.llm.base_url, key, model, max_concurrency=max_concurrency)

    def replay(self, event: ev.Event) -> None:
        """An event of the recorded run a fork continues, announced again as it was; its RoundFinished puts the
        run where that round left it (round, token totals)."""
        self._announce(event)
        REPLAY_MOVES.dispatch(self, event)

    def notice(self, message: str, severity: ev.SeverityName = ev.Severity.WARNING, agent: str = "") -> None:
        self.emit(ev.Notice(round=self.round, severity=ev.Severity(severity), message=message, agent=agent))

    # --- lifecycle ----------------------------------------------------------------------------
    async def run(self) -> ev.RunFinished:
        """Run to the end. Always returns the RunFinished event, which says why the run ended."""
        manager, workers, roles = self.method.roster(self.team)
        slots = self.llm.plan_slots([name for name in (manager, *workers) if name])  # a llama.cpp slot per agent
        self.emit(
            ev.RunStarted(
                run_id=self.spec.run_id,
                problem=self.spec.problem,
                domain=DomainName(self.team.name),
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
                team=team_record(self.team),
                method_options=dict(getattr(self.method, "options", None) or {}),
            )
        )
        self._task = asyncio.current_task()
        watchdog = self._start_time_budget()
        try:
            outcome = await self.method.run(EngineContext(self))
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
            await self._close_own_clients()
        return self._finish(outcome)

    async def _close_own_clients(self) -> None:
        clients, self._own_clients = self._own_clients, []
        for client in clients:
            await client.close()

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
        answer, source, refused = honest_answer(outcome.answer, outcome.source, self.team.name, calls.sent_texts)
        if refused:
            self.notice(f"{refused}: the run ends with no answer", "warning")
        solved = self.last_evaluation.passed if self.last_evaluation is not None else None
        detail = outcome.detail
        if not answer and self.control.stop_reason and detail == self.control.stop_reason:  # no "best answer" to end on
            detail = "stopped by the user before any answer passed the answer check: the run ends with no answer"
        self.finished = ev.RunFinished(
            reason=EndReason(outcome.reason),  # a StrEnum: sessions store its string as before
            detail=detail,
            final_answer=answer,
            answer_source=source,
            rounds=self.round,
            prompt_tokens=calls.prompt_tokens,
            completion_tokens=calls.completion_tokens,
            tokens_estimated=calls.estimated_tokens,
            cached_tokens=calls.cached_tokens,
            cost_usd=round(calls.cost.usd, 8),
            cost_unknown=sorted(calls.cost.unknown),
            cost_local=calls.cost.local,
            solved=solved,
            replies_parsed=calls.reply_tally.parsed,
            replies_total=calls.reply_tally.total,
            replies_copied=calls.reply_tally.copied,
            demo_played=self.spec.demo_played,
        )
        self.emit(self.finished)
        return self.finished

    def start_phase(self, phase: str, detail: str = "") -> None:
        self.phase = phase
        self.emit(ev.PhaseStarted(round=self.round, phase=phase, detail=detail))

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

    # --- termination helpers ------------------------------------------------------------------
    def extract_answer(self) -> tuple[str, str]:
        """The answer when the Manager gave none: the answer role's latest output (core.runtime.answers)."""
        return latest_answer(self.team.name, self.team.answer_role, self.latest)


def _plain_text(text: str) -> str:
    return text


# What an announced event moves in the run (a method's RoundStarted its round, its PhaseStarted its phase);
# what a fork's replayed event moves (its RoundFinished: the round and the token totals that round left).
MOVES: EventTable[SwarmEngine] = EventTable()
REPLAY_MOVES: EventTable[SwarmEngine] = EventTable()


@MOVES.on(ev.RoundStarted)
def _round_started(engine: SwarmEngine, event: ev.RoundStarted) -> None:
    engine.round = event.round


@MOVES.on(ev.PhaseStarted)
def _phase_started(engine: SwarmEngine, event: ev.PhaseStarted) -> None:
    engine.phase = event.phase


@REPLAY_MOVES.on(ev.RoundFinished)
def _round_replayed(engine: SwarmEngine, event: ev.RoundFinished) -> None:
    engine.round = event.round
    engine.calls.prompt_tokens, engine.calls.completion_tokens = event.prompt_tokens, event.completion_tokens


class EngineContext:
    """The engine's side of RunContext: one per run, over the engine's parts."""

    def __init__(self, engine: SwarmEngine) -> None:
        self._engine = engine
        evaluator = engine.evaluator
        self.spec = RunBrief(
            problem=engine.spec.problem, team=engine.team, settings=engine.settings, fork=engine.fork,
            model=engine.llm.model or engine.spec.model or "", runs_code=evaluator is not None,
            sandbox_limits=getattr(evaluator, "limits", None),
        )

    @property
    def state(self) -> RunState:
        engine = self._engine
        return RunState(engine.round, engine.phase, engine.control.params, engine.control.at_barrier,
                        engine.calls.prompt_tokens, engine.calls.completion_tokens, engine.extract_answer)

    def emit(self, event: ev.Event) -> None:
        self._engine.emit(event)

    def record(self, item: AgentResult | Evaluation | CheckedRound | ev.Event | Params | Role, *,
               newest: bool = False) -> None:
        """The run keeps ``item``: an agent's latest output (``newest``: also the last one in order, which
        the fallback answer reads), the latest check (RunFinished.solved), a recorded round's outputs as its
        check took them in (a fork's replay: the check takes them in again, running nothing), an event of the
        recorded run a fork continues (announced again as it was; its RoundFinished puts the run where that
        round left it: the round and token totals), the live parameters (clamped; the ones that changed are
        announced), or an agent's new role (its next call uses it; a new model or endpoint gets a client of
        its own)."""
        engine = self._engine
        if isinstance(item, AgentResult):
            if newest:
                engine.latest.pop(item.agent, None)
            engine.latest[item.agent] = item
        elif isinstance(item, Evaluation):
            engine.last_evaluation = item
        elif isinstance(item, CheckedRound):
            if engine.evaluator is not None:
                engine.evaluator.collect(item.outputs)
        elif isinstance(item, Params):
            now = engine.control.params
            engine.control.set_params(  # only what changed: the others are not re-clamped nor announced
                tau=item.tau if item.tau != now.tau else None,
                k_in=item.k_in if item.k_in != now.k_in else None,
                max_rounds=item.max_rounds if item.max_rounds != now.max_rounds else None,
            )
        elif isinstance(item, Role):
            engine.replace_role(item)
        else:
            engine.replay(item)

    def call_limits(self, kind: str) -> CallLimits:
        """The temperature and max_tokens of one kind of call: the settings' table the method names for it
        (Method.call_tables: manager_call, work_call or descriptor_call), overlaid by the method's own options
        ``KIND_max_tokens`` and ``KIND_temperature`` when set (-o or [strategy.NAME]). A team file's per-agent
        values and --max-tokens apply on top (call_and_parse)."""
        engine = self._engine
        base: CallLimits = getattr(engine.settings, engine.method.call_tables[kind])
        options = getattr(engine.method, "options", None) or {}
        temperature = options.get(f"{kind}_temperature")
        max_tokens = options.get(f"{kind}_max_tokens")
        return CallLimits(
            base.temperature if temperature is None else float(temperature),
            base.max_tokens if max_tokens is None else int(max_tokens),
        )

    async def call(
        self, name: str, call: str, messages: list[dict[str, str]], *, kind: str = "",
        limits: CallLimits | None = None, parser: Callable[[str], Any] | None = None, json_mode: bool = False,
        tier: int | None = None, top_logprobs: int = 0, client: LLMClient | None = None,
        reply_format: str | None = None, shrink: Shrink | None = None, shape: Shape | None = None,
        keep: bool = True,
    ) -> tuple[AgentResult, Any | None]:
        """One call of any method, announced (AgentStarted, deltas, AgentFinished) and accounted.

        ``call`` labels it (a method's own mode: solution, evaluate, orchestrate, ...); ``kind`` names its
        limits (call_limits; else ``limits``, else the settings' work_call). Without a parser the reply's
        text is the result; with one, a reply that does not parse is re-asked once and the parsed value comes
        back beside the result. A connection-level failure is marked on the result; whether the run can go on
        is gather's to say. ``top_logprobs`` > 0 asks for each token's top logprobs, returned on the result.
        ``shrink``: how the method trims this prompt to fit the model's context (core.runtime.context);
        without one a prompt over the context fails this call only. ``shape``: the method builds the result
        itself (and says its own notice); ``keep`` False: the result is not the agent's latest output."""
        engine = self._engine
        limits = self.call_limits(kind) if kind else limits or engine.settings.work_call
        engine.emit(ev.AgentStarted(round=engine.round, agent=name, call=call, tier=tier))
        parsed, usage, error, connection_failed, overflow = await engine.calls.call_and_parse(CallRequest(
            name, call, messages, limits, parser or _plain_text, json_mode=json_mode, top_logprobs=top_logprobs,
            client=client, reply_format=reply_format, shrink=shrink,
        ))
        text = usage.text if usage else ""
        if shape is not None:
            result = shape(parsed, CallReply(text, error, connection_failed, overflow, usage is not None))
        elif parsed is not None or (parser is None and usage is not None):
            result = AgentResult(name, ev.CallStatus.DONE, public=text.strip(), raw=text)
        else:
            status = ev.CallStatus.UNPARSED if usage else ev.CallStatus.FAILED
            copied = is_template_copy(error)  # a copy is nobody's work: not shown, passed on nor aggregated
            result = AgentResult(
                name, status, public="" if copied else text.strip(), raw=text, error=error,
                connection_failed=connection_failed, context_overflow=overflow,
            )
            what = "copied the reply template again: its reply is not used" if copied else (
                "reply unparsed" if usage else "call failed")
            engine.notice(f"{name}: {what} ({error})", "warning", name)
        if shape is None:
            result.top_logprobs = usage.top_logprobs if usage else None
        if keep:
            engine.latest[name] = result
        self._finished(call, result, usage)
        return result, parsed

    def _finished(self, call: str, result: AgentResult, chat: Usage | None) -> None:
        self._engine.emit(finished_event(self._engine.round, call, result, chat))

    async def gather(self, calls: Mapping[str, Coroutine[Any, Any, AgentResult]]) -> dict[str, AgentResult]:
        """Run calls in parallel (a cancel leaves no orphan behind), then end the run (RunAborted) when the
        endpoint is down (no call got a reply, and one found it down), an agent's own endpoint is, or too many
        calls failed in a row (core.runtime.faults). A call that failed otherwise failed its agent's turn
        only: the run goes on."""
        engine = self._engine
        results = await engine.gather(calls)
        why = why_the_run_ends(results.values(), engine.calls.failures, engine.agent_clients)
        if why:
            raise RunAborted(why)
        return results

    def connect(self, model: str | None = None, base_url: str | None = None, *,
                max_concurrency: int | None = None) -> LLMClient:
        """A client for another model or endpoint (the run's endpoint when ``base_url`` is None), with the
        settings' API key; the caller closes it."""
        return self._engine.connect(model, base_url, max_concurrency=max_concurrency)

    async def checkpoint(self, boundary: StepBoundary) -> None:
        """The barrier: pause, step and cancel take effect here, and steering actions due here are applied
        (by the method's steer hook)."""
        engine = self._engine
        await engine.control.checkpoint(boundary, engine.round + 1 if boundary == StepBoundary.ROUND else engine.round)

    def attach(self, *, reroute: Callable[[], bool] | None = None,
               steer: Callable[[Any], str | None] | None = None) -> None:
        """The method's hooks: ``reroute`` rebuilds its graph after a parameter change mid-round (False: too
        late, the values apply next time); ``steer`` applies one steering action at the barrier ("" or why not;
        None keeps it for a later barrier)."""
        control = self._engine.control
        control.reroute_hook = reroute or control.reroute_hook
        control.steer_hook = steer or control.steer_hook

    def stop(self) -> None:
        """A steering "stop": the run ends with the best answer so far."""
        self._engine.control.stop()

    async def embed(self, texts: Sequence[str]) -> Any:
        """MiniLM's vectors of ``texts`` (EmbeddingError ends the run with its one line)."""
        return await self._engine.embedder.aembed(list(texts))

    async def evaluate(self, round_no: int, outputs: dict[str, AgentResult]) -> Evaluation | None:
        """The round's check (the code's tests in the sandbox), announced and kept; None when none runs."""
        engine = self._engine
        if engine.evaluator is None:
            return None
        evaluation = await engine.evaluator.evaluate(round_no, engine.spec.problem, outputs)
        if evaluation is not None:
            engine.last_evaluation = evaluation
            for event in evaluation.events:
                engine.emit(event)
        return evaluation

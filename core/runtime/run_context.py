"""What a method sees of its run: the narrow ``RunContext`` (a method never holds the engine).

Twelve names, in six groups, are all a method (core.methods) may use:

* what the run is: ``spec`` (a RunBrief: the problem, the team, the settings, the recorded run a fork
  continues, the model, whether and how code runs in the sandbox);
* where it stands: ``state`` (a RunState snapshot: round, phase, the live parameters, at a barrier or
  not, the tokens so far);
* events: ``emit`` (every announcement; RoundStarted and PhaseStarted move the run's round and phase)
  and ``record`` (what the run keeps: an agent's latest output, the latest check, a fork's replayed
  round, changed live parameters, an agent's new role);
* calls: ``call`` (one call, streamed, parsed, re-asked once, announced and accounted) and ``gather``
  (calls in parallel, then whether the run can go on), ``connect`` (a client for another model);
* the barrier and steering: ``checkpoint``, ``attach`` (the method's steering and re-routing hooks),
  ``stop`` (a steering "stop");
* the shared services: ``embed`` (MiniLM) and ``evaluate`` (the round's code tests).

``tests/core/methods/test_run_context.py`` counts the names core/methods uses and fails past twelve, or
on a reach-through (``ctx.x.y(...)`` into a service). The engine implements the context
(``core.runtime.engine.EngineContext``); a test or another host may implement it too.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from core.runtime import events as ev
from core.runtime.config import CallLimits, Settings
from core.runtime.context import Shrink
from core.runtime.control import Params, StepBoundary
from core.runtime.rosters import Role, Team
from core.runtime.run_types import AgentResult, CheckedRound, Evaluation, ForkPoint

if TYPE_CHECKING:
    from core.llm.client import LLMClient

# How a method shapes one call's result itself (DyTopo's workers keep their descriptors, its Manager its
# reasoning): (the parsed reply or None, the call's outcome) -> the AgentResult announced.
Shape = Callable[[Any | None, "CallReply"], AgentResult]


@dataclass(frozen=True)
class CallReply:
    """What one call came to, for a Shape: the reply's text ("" without a reply), why it failed, whether
    the endpoint could not be reached, whether the prompt did not fit the context."""

    text: str
    error: str
    connection_failed: bool
    context_overflow: bool
    replied: bool


@dataclass(frozen=True)
class RunBrief:
    """What the run is; none of it changes while it runs."""

    problem: str
    team: Team
    settings: Settings
    fork: ForkPoint | None  # the recorded run this one continues after its round ``fork.round``
    model: str  # the agents' model, as the endpoint names it
    runs_code: bool  # the code's tests run in the sandbox (the round evaluator is on)
    sandbox_limits: Any = None  # that sandbox's limits (core.evaluation.sandbox.SandboxLimits; None: defaults)

    @property
    def workers(self) -> list[str]:
        """The team's workers' names."""
        return self.team.worker_names


@dataclass(frozen=True)
class RunState:
    """Where the run stands now (a snapshot)."""

    round: int
    phase: str
    params: Params  # tau, k_in, max_rounds in force
    at_barrier: bool  # the run waits at a checkpoint: a steering action applies now
    prompt_tokens: int
    completion_tokens: int
    _answer: Callable[[], tuple[str, str]] = field(repr=False, compare=False)

    @cached_property
    def answer(self) -> tuple[str, str]:
        """(answer, source) the run would end with if its method gave none: the answer role's latest output,
        else the last agent's (core.runtime.answers.latest_answer)."""
        return self._answer()


class RunContext(Protocol):
    """What a method uses of its run (see the module's docstring)."""

    @property
    def spec(self) -> RunBrief: ...

    @property
    def state(self) -> RunState: ...

    def emit(self, event: ev.Event) -> None: ...

    def record(self, item: AgentResult | Evaluation | CheckedRound | ev.Event | Params | Role, *,
               newest: bool = False) -> None: ...

    async def call(
        self, name: str, call: str, messages: list[dict[str, str]], *, kind: str = "",
        limits: CallLimits | None = None, parser: Callable[[str], Any] | None = None, json_mode: bool = False,
        tier: int | None = None, top_logprobs: int = 0, client: LLMClient | None = None,
        reply_format: str | None = None, shrink: Shrink | None = None, shape: Shape | None = None,
        keep: bool = True,
    ) -> tuple[AgentResult, Any | None]: ...

    async def gather(self, calls: Mapping[str, Coroutine[Any, Any, AgentResult]]) -> dict[str, AgentResult]: ...

    def connect(self, model: str | None = None, base_url: str | None = None, *,
                max_concurrency: int | None = None) -> LLMClient: ...

    async def checkpoint(self, boundary: StepBoundary) -> None: ...

    def attach(self, *, reroute: Callable[[], bool] | None = None,
               steer: Callable[[Any], str | None] | None = None) -> None: ...

    def stop(self) -> None: ...

    async def embed(self, texts: Sequence[str]) -> Any: ...

    async def evaluate(self, round_no: int, outputs: dict[str, AgentResult]) -> Evaluation | None: ...


# --- a method's steps, said through the context -------------------------------------------------------------
def notice(ctx: RunContext, message: str, severity: ev.SeverityName = ev.Severity.WARNING, agent: str = "") -> None:
    """Something the user should hear about (a Notice in the current round)."""
    ctx.emit(ev.Notice(round=ctx.state.round, severity=ev.Severity(severity), message=message, agent=agent))


def start_phase(ctx: RunContext, phase: str, detail: str = "") -> None:
    """A phase of the current round starts (the run's phase follows)."""
    ctx.emit(ev.PhaseStarted(round=ctx.state.round, phase=phase, detail=detail))


def begin_round(ctx: RunContext, round_no: int, params: dict[str, Any] | None = None) -> None:
    """Round (a method's step, turn) ``round_no`` starts, with the live parameters or the method's own."""
    ctx.emit(ev.RoundStarted(round=round_no, params=ctx.state.params.as_dict() if params is None else params))


def finish_round(ctx: RunContext, convergence: float | None = None) -> None:
    """The current round ends: RoundFinished with the run's token totals so far."""
    state = ctx.state
    ctx.emit(ev.RoundFinished(round=state.round, prompt_tokens=state.prompt_tokens,
                              completion_tokens=state.completion_tokens, convergence=convergence))

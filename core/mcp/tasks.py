"""The swarm tasks behind the MCP tools: start (validated, returns at once), status, result, cancel.

Pure asyncio, no MCP SDK here (core.mcp.server wraps this in tools), so it is tested and reused without
the optional extra. Every swarm is an asyncio task whose handle is kept in its entry; it runs the same
engine and event stream as the TUI and the headless CLI, records its session (and the event log that
``swarm-tui attach`` follows) in the sessions folder, and never raises into the server: a crash, an
endpoint failure or a blown wall-clock budget becomes status ``failed`` with its message.

The store keeps at most MAX_TASKS entries. A start when it is full evicts the oldest half of the
finished entries (by finish time); when every entry is still running, the start is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from core.compose.plan import BackendChoice, RunPlan, embedder_for
from core.evaluation.sandbox import allow_unisolated_code
from core.mcp.start_request import (
    StartError,
    plan_start,
    team_choices,
)
from core.methods.catalogue import method_names
from core.runtime import events as ev
from core.runtime.config import (
    DEFAULT_STRATEGY,
    MAX_ROUNDS,
    ConfigError,
    Settings,
)
from core.runtime.control import RunControl
from core.runtime.dispatch import EventTable, is_delta, of_kind
from core.runtime.outcome import EndReason
from core.runtime.rosters import Team
from core.runtime.steering import SteerAction, SteerError, parse_action
from core.sessions.store import SessionRecorder

MAX_TASKS = 20
ROUND_BUDGET_S = 120.0  # the wall-clock budget is max_rounds x this (the reference server's rule)
CANCEL_GRACE_S = 15.0  # after a budget cancel, how long the run gets to stop before it is torn down
MAX_ROUNDS_LIMIT = MAX_ROUNDS  # the settings' bound (core.runtime.config), named as the server's tools knew it


class TaskStatus(StrEnum):
    """A swarm task's status, as the tools' results publish it (the output schema lists the four)."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


STATUSES = tuple(TaskStatus)

# The strategies a swarm can run are the registered methods (core.methods); the list is read when needed.
STRATEGIES = tuple(method_names())

class UnknownTask(KeyError):
    def __init__(self, task_id: str, known: list[str]) -> None:
        self.task_id, self.known = task_id, known
        super().__init__(task_id)

    def __str__(self) -> str:
        ids = ", ".join(self.known) if self.known else "none"
        return f"no swarm task {self.task_id!r}; known task ids: {ids}"


# What a task's status takes from each event (SwarmTask's ``@TASK_FOLDS.on`` methods); every event but a token
# delta is also kept in the task's list.
TASK_FOLDS: EventTable[SwarmTask] = EventTable()


@dataclass
class SwarmTask:
    """One swarm: what was asked, how far it got, how it ended."""

    id: str
    task: str
    domain: str
    strategy: str
    params: dict[str, Any]  # tau, k_in, max_rounds
    options: dict[str, Any]
    context: str
    budget_s: float
    team: str = ""  # the team's name: a built-in one's is its domain, a user team's its [team.NAME]
    agents: list[str] = field(default_factory=list)  # the team's Manager and workers
    notes: list[str] = field(default_factory=list)
    status: TaskStatus = TaskStatus.RUNNING
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    round: int = 0
    phase: str = "starting"
    active: dict[str, str] = field(default_factory=dict)  # agent -> call, for calls under way
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    finished: ev.RunFinished | None = None
    events: list[ev.Event] = field(default_factory=list)  # the stream without token deltas
    session_path: Path | None = None
    handle: asyncio.Task[None] | None = field(default=None, repr=False)
    control: RunControl | None = field(default=None, repr=False)
    recorder: SessionRecorder | None = field(default=None, repr=False)
    cancel_requested: bool = False
    timed_out: bool = False
    compare_rows: list[dict[str, Any]] | None = None  # a comparison (core.mcp.compare_tasks): a row per method
    steer_waiting: list[SteerAction] = field(default_factory=list)  # swarm_steer before the engine exists

    # --- progress, from the event stream --------------------------------------------------
    @property
    def steering(self) -> list[ev.UserSteered]:
        """The steering actions applied so far, taken or refused."""
        return of_kind(self.events, ev.UserSteered)

    def observe(self, event: ev.Event) -> None:
        """An engine sink: keeps the status fields current (token deltas are not kept)."""
        if is_delta(event):
            return
        self.events.append(event)
        TASK_FOLDS.dispatch(self, event)

    @TASK_FOLDS.on(ev.RoundStarted)
    def _round_started(self, event: ev.RoundStarted) -> None:
        self.round, self.active = event.round, {}

    @TASK_FOLDS.on(ev.PhaseStarted)
    def _phase(self, event: ev.PhaseStarted) -> None:
        self.phase = event.phase

    @TASK_FOLDS.on(ev.AgentStarted)
    def _call_started(self, event: ev.AgentStarted) -> None:
        self.active[event.agent] = event.call

    @TASK_FOLDS.on(ev.AgentFinished)
    def _call_finished(self, event: ev.AgentFinished) -> None:
        self.active.pop(event.agent, None)
        self.llm_calls += max(1, event.attempts)
        self.prompt_tokens += event.prompt_tokens
        self.completion_tokens += event.completion_tokens

    @TASK_FOLDS.on(ev.RoundFinished)
    def _round_finished(self, event: ev.RoundFinished) -> None:
        self.prompt_tokens, self.completion_tokens = event.prompt_tokens, event.completion_tokens
        self.active = {}

    @TASK_FOLDS.on(ev.RunFinished)
    def _run_finished(self, event: ev.RunFinished) -> None:
        self.prompt_tokens, self.completion_tokens = event.prompt_tokens, event.completion_tokens
        self.active, self.phase = {}, "finished"

    @TASK_FOLDS.on(ev.RunStarted)
    def _run_started(self, event: ev.RunStarted) -> None:
        if self.recorder is not None:
            self.session_path = self.recorder.path

    # --- views ----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.status == TaskStatus.RUNNING

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def elapsed(self, now: float | None = None) -> float:
        end = self.finished_at if self.finished_at is not None else (time.time() if now is None else now)
        return max(0.0, end - self.started_at)

    def poll_interval(self, now: float | None = None) -> float | None:
        """How long a client should wait before asking again: about half a round, 2..30 s."""
        if not self.running:
            return None
        elapsed = self.elapsed(now)
        per_round = elapsed / self.round if self.round >= 1 else 10.0
        return float(min(30.0, max(2.0, round(per_round / 2))))

    @property
    def max_rounds(self) -> int:
        return int(self.params["max_rounds"])


def problem_text(entry: SwarmTask) -> str:
    """What the swarm is asked: the task, and the client's context under it."""
    if not entry.context.strip():
        return entry.task
    return f"{entry.task}\n\nContext:\n{entry.context.strip()}"


def _tear_down(entry: SwarmTask) -> None:
    """A run that outlived its budget and the grace after its cancel: its task is cancelled."""
    if entry.running and entry.handle is not None and not entry.handle.done():
        entry.handle.cancel()


ENDPOINT = BackendChoice()  # the configured endpoint (a manager's default)


class SwarmManager:
    """Starts swarms against one backend (opened on first use and shared), with one MiniLM embedder."""

    def __init__(
        self,
        settings: Settings,
        *,
        backend: BackendChoice = ENDPOINT,
        embedder: Any = None,
        round_budget_s: float = ROUND_BUDGET_S,
        cancel_grace_s: float = CANCEL_GRACE_S,
        max_tasks: int = MAX_TASKS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.backend_choice = backend  # the endpoint, or the demo server (one the caller started, or its own)
        self._embedder = embedder
        self.round_budget_s = round_budget_s
        self.cancel_grace_s = cancel_grace_s
        self.max_tasks = max_tasks
        self.clock = clock
        self.tasks: dict[str, SwarmTask] = {}
        self._backend_task: asyncio.Task[Any] | None = None
        # Concurrency limits of the agents' own endpoints, by URL: shared by every run, as the main
        # endpoint's client is (two runs of a team must not send twice max_concurrency calls to one server).
        self._endpoint_limits: dict[str, asyncio.Semaphore] = {}
        self._warm: asyncio.Task[None] | None = None
        self.closed = False

    @property
    def sessions_dir(self) -> Path:
        return Path(self.settings.sessions_dir).resolve()

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            self._embedder = embedder_for(self.settings)
        return self._embedder

    def warm_up(self) -> asyncio.Task[None]:
        """Load MiniLM in the background now, so the first swarm does not wait for it (a failure is
        reported by the swarm that needs the model)."""

        async def load() -> None:
            with contextlib.suppress(Exception):
                await self.embedder.aload()

        self._warm = asyncio.get_running_loop().create_task(load(), name="swarm-tui-embedder")
        return self._warm

    # --- the store ------------------------------------------------------------------------
    def get(self, task_id: str) -> SwarmTask:
        entry = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if entry is None:
            raise UnknownTask(str(task_id), list(self.tasks))
        return entry

    def _make_room(self) -> None:
        """Before an insert: when full, drop the oldest half of the finished tasks (at least one)."""
        if len(self.tasks) < self.max_tasks:
            return
        done = sorted((t for t in self.tasks.values() if not t.running), key=lambda t: t.finished_at or 0.0)
        if not done:
            raise StartError(
                f"too many running swarms ({len(self.tasks)} of {self.max_tasks}): wait for one to finish "
                "or stop one with swarm_cancel"
            )
        for entry in done[: max(1, len(done) // 2)]:
            del self.tasks[entry.id]

    # --- start ----------------------------------------------------------------------------
    def team_choices(self) -> dict[str, Team]:
        """The teams a start may name (core.mcp.start_request)."""
        return team_choices(self.settings)

    def plan(self, *args: Any, **kwargs: Any) -> tuple[RunPlan, dict[str, Any], list[str]]:
        """A start checked against the server's settings (core.mcp.start_request.plan_start)."""
        return plan_start(self.settings, *args, **kwargs)

    def validate(self, *args: Any, **kwargs: Any) -> tuple[Settings, dict[str, Any], list[str]]:
        """(settings for the run, the checked options, notes) or StartError (see plan)."""
        plan, checked, notes = self.plan(*args, **kwargs)
        return plan.settings, checked, notes

    def start(
        self,
        task: Any,
        domain: Any = None,
        strategy: Any = DEFAULT_STRATEGY,
        tau: Any = None,  # None: the server's settings (core.runtime.config has the defaults)
        k_in: Any = None,
        max_rounds: Any = None,
        context: Any = "",
        options: Mapping[str, Any] | None = None,
        *,
        team: Any = None,
    ) -> SwarmTask:
        """Validate, make room, schedule the swarm; returns its entry at once (StartError if refused)."""
        if self.closed:
            raise StartError("the server is shutting down")
        plan, checked, notes = self.plan(task, domain, strategy, tau, k_in, max_rounds, context, options, team=team)
        settings, chosen = plan.settings, plan.team
        self._make_room()
        budget = self.wall_budget(checked, settings.max_rounds)
        task_id = uuid.uuid4().hex[:12]
        while task_id in self.tasks:  # pragma: no cover - 48 random bits
            task_id = uuid.uuid4().hex[:12]
        entry = SwarmTask(
            id=task_id, task=task.strip(), domain=settings.domain, strategy=strategy,
            params={"tau": settings.tau, "k_in": settings.k_in, "max_rounds": settings.max_rounds},
            options=checked, context=context or "", budget_s=float(budget), notes=notes,
            team=chosen.team_name, agents=[chosen.manager.name, *chosen.worker_names], started_at=self.clock(),
        )
        self.tasks[task_id] = entry
        entry.handle = asyncio.get_running_loop().create_task(self._run(entry, plan), name=f"swarm-{task_id}")
        return entry

    def wall_budget(self, checked: Mapping[str, Any], max_rounds: int, runs: int = 1) -> float:
        """The hard stop of a task of ``runs`` runs (one swarm, or a comparison's methods): budget_s when
        given, else max_rounds x the per-round budget a run; a time_budget leaves each run time to end on
        its own (its budget ending comes first, then the grace a cancel gets)."""
        budget = checked.get("budget_s", max_rounds * self.round_budget_s * runs)
        if "time_budget" in checked and "budget_s" not in checked:
            budget = max(budget, runs * checked["time_budget"] + self.cancel_grace_s)
        return float(budget)

    # --- running --------------------------------------------------------------------------
    async def _open_backend(self) -> Any:
        """The shared backend, opened once. The opening runs as its own task, shielded: a swarm that is
        cancelled while it waits does not abort the opening the others share. A failed opening is
        retried by the next swarm."""
        from core.compose.runner import open_backend

        if self._backend_task is None or (self._backend_task.done() and (
                self._backend_task.cancelled() or self._backend_task.exception() is not None)):
            # The server's endpoint only: each run opens its own team's agent endpoints (_agent_clients),
            # so a --team of the server's config neither reaches nor can break the other runs.
            self._backend_task = asyncio.get_running_loop().create_task(
                open_backend(replace(self.settings, team=None), self.backend_choice),
                name="swarm-tui-backend",
            )
            # Its failure is reported to every swarm awaiting it; none left: do not warn about it.
            self._backend_task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return await asyncio.shield(self._backend_task)

    async def _run(self, entry: SwarmTask, plan: RunPlan) -> None:
        """The swarm's asyncio task: never raises (except the server's own shutdown cancel)."""
        from core.compose.assembly import RunIO, open_run

        settings = plan.settings
        loop = asyncio.get_running_loop()
        timers: list[asyncio.TimerHandle] = []
        recorder = SessionRecorder(Path(settings.sessions_dir), log_header={"task_id": entry.id})
        entry.recorder = recorder
        try:
            timers.append(loop.call_later(entry.budget_s, self._out_of_time, entry, timers))
            entry.phase = "connecting"
            backend = await self._open_backend()
            # The server's endpoint is shared; the run opens its own team's agent endpoints (none in demo
            # mode: every agent talks to the scripted server, as in the CLI), within the server's limits.
            io = RunIO(sinks=[entry.observe], recorder=recorder, close_recorder=False, backend=backend,
                       endpoint_limits=self._endpoint_limits, embedder=self.embedder)
            async with open_run(plan, problem_text(entry), io) as run:
                entry.phase = "loading embeddings"
                await self.embedder.aload()
                # This run's own choice (the client's option), in this task only: other runs keep theirs.
                allow_unisolated_code(settings.allow_unisolated_code, here_only=True)
                entry.control = run.control
                for action in entry.steer_waiting:  # steered while it was still connecting
                    run.control.steer(action)
                entry.steer_waiting = []
                if entry.cancel_requested or entry.timed_out:
                    run.control.cancel()
                entry.phase = "starting"
                # Finished (status set) before the run's own clients close: a cancel then loses nothing.
                self._finish(entry, await run.run())
        except asyncio.CancelledError:
            if entry.timed_out:
                self._fail(entry, f"timed out after {entry.budget_s:g} s (the run did not stop when asked)")
            elif entry.cancel_requested:
                entry.status, entry.phase = TaskStatus.CANCELLED, "finished"
            else:  # the server is shutting down
                self._fail(entry, "the server shut down while the swarm was running")
                raise
        except Exception as exc:  # a crash inside the swarm: reported, never raised into the server
            message = str(exc).strip() or type(exc).__name__
            if not _is_user_facing(exc):
                message = f"{type(exc).__name__}: {message}"
            self._fail(entry, message)
        finally:
            for timer in timers:
                timer.cancel()
            recorder.close(entry.status)
            entry.session_path = recorder.path or entry.session_path
            entry.active = {}
            if entry.finished_at is None:
                entry.finished_at = self.clock()
            if entry.status == TaskStatus.RUNNING:  # pragma: no cover - every path above sets it
                self._fail(entry, "the swarm stopped without a result")

    def _finish(self, entry: SwarmTask, finished: ev.RunFinished) -> None:
        entry.finished = finished
        entry.prompt_tokens, entry.completion_tokens = finished.prompt_tokens, finished.completion_tokens
        entry.round = finished.rounds
        if finished.reason == EndReason.ERROR:
            self._fail(entry, finished.detail)
        elif finished.reason == EndReason.CANCELLED:
            if entry.timed_out:
                self._fail(entry, f"timed out after {entry.budget_s:g} s")
            else:
                entry.status = TaskStatus.CANCELLED
        else:
            entry.status = TaskStatus.COMPLETED
        entry.phase = "finished"
        entry.finished_at = self.clock()

    def _fail(self, entry: SwarmTask, message: str) -> None:
        entry.status, entry.error, entry.phase = TaskStatus.FAILED, message, "finished"
        entry.finished_at = self.clock()

    def _out_of_time(self, entry: SwarmTask, timers: list[asyncio.TimerHandle]) -> None:
        """The wall-clock budget ran out: ask the run to stop (it saves and ends as cancelled, reported
        as failed); if it has not stopped after a grace period, tear its task down."""
        if not entry.running:
            return
        entry.timed_out = True
        if entry.control is not None:
            entry.control.cancel()
            timers.append(asyncio.get_running_loop().call_later(self.cancel_grace_s, _tear_down, entry))
        else:
            _tear_down(entry)

    # --- cancel ---------------------------------------------------------------------------
    def cancel(self, task_id: str) -> tuple[SwarmTask, bool]:
        """(entry, True) when a running swarm was asked to stop; (entry, False) when it had ended."""
        entry = self.get(task_id)
        if not entry.running:
            return entry, False
        entry.cancel_requested = True
        if entry.control is not None:
            entry.control.cancel()  # the engine stops at once, saves, and ends as "cancelled"
        elif entry.handle is not None:
            entry.handle.cancel()  # still connecting or loading MiniLM
        return entry, True

    # --- steer ----------------------------------------------------------------------------
    def steer(self, task_id: str, given: Mapping[str, Any]) -> tuple[SwarmTask, SteerAction]:
        """Hand a steering action (the control file's schema) to a running swarm: it applies at the run's
        next barrier, or its ``at_round``, and ends as a user_steered event, taken or refused. SteerError
        (one line) for an action that cannot be read, a swarm that has ended, or a comparison."""
        entry = self.get(task_id)
        action = parse_action(given)
        if entry.compare_rows is not None:
            raise SteerError("swarm_steer steers a run from swarm_start; a comparison's runs go unsteered")
        if not entry.running:
            raise SteerError(f"the swarm has ended ({entry.status}): {action.describe()} was not taken")
        if entry.control is None:
            entry.steer_waiting.append(action)
        else:
            entry.control.steer(action)
        return entry, action

    async def wait(self, task_id: str) -> SwarmTask:
        """Until the swarm's task is done (tests; bound it with a timeout)."""
        entry = self.get(task_id)
        if entry.handle is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(entry.handle)
        return entry

    async def aclose(self, timeout: float = 10.0) -> None:
        """Stop every running swarm (each saves its session as cancelled) and close the backend."""
        self.closed = True
        running = [t for t in self.tasks.values() if t.running]
        for entry in running:
            entry.cancel_requested = True
            if entry.control is not None:
                entry.control.cancel()
            elif entry.handle is not None:
                entry.handle.cancel()
        handles = [t.handle for t in running if t.handle is not None]
        if handles:
            _, pending = await asyncio.wait(handles, timeout=timeout)
            for handle in pending:
                handle.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2.0)
        opening, self._backend_task = self._backend_task, None
        if opening is not None:
            if not opening.done():
                opening.cancel()
            await asyncio.wait([opening], timeout=5.0)
            if opening.done() and not opening.cancelled() and opening.exception() is None:
                await opening.result().close()


def _is_user_facing(exc: BaseException) -> bool:
    """Errors whose message is already one clear line for a user (endpoint, MiniLM, config)."""
    from core.llm.client import EndpointError
    from core.llm.embeddings import EmbeddingError

    return isinstance(exc, EndpointError | EmbeddingError | ConfigError)

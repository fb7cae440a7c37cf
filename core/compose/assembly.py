"""One way to assemble a run: ``open_run`` builds what a run needs, once, and closes what it opened.

Every face that runs a method goes through it: the headless CLI (a fork too), the TUI's run screen (a
fork or what-if too), a comparison's runs (live and headless), the MCP server and the benchmark runner.
The face first makes the run's plan (core.compose.plan.RunPlan: the team resolved and the method built
once, before any I/O, so a bad option ends the run before a connection is made), then opens it here
with what the run talks to (``RunIO``). In order:

* the backend: the face's shared one (a comparison, the MCP server, a benchmark), or one opened here
  (the endpoint and a user team's agent endpoints, or the scripted demo server);
* the code-execution rule (``make_evaluator``), written here only;
* the engine, with the face's recorder first among its sinks and the face's RunControl, through which
  pause, step, cancel, parameter changes and steering actions reach the run.

Leaving the ``async with`` closes what open_run opened (the backend, the run's own agent clients) and
ends the recorder's log when the run stopped without a run_finished event; a shared backend stays open.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from core.compose.control_feed import ControlScript
from core.compose.plan import BackendChoice, RunPlan
from core.compose.runner import Backend, build_engine, open_agent_clients, open_backend
from core.evaluation.sandbox import SandboxLimits
from core.llm.embeddings import Embedder
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import RunControl
from core.runtime.engine import ForkPoint, SwarmEngine
from core.runtime.rosters import Team
from core.runtime.round_check import CodeExecutionEvaluator
from core.sessions.store import SessionRecorder
from core.telemetry.setup import trace_sink

if TYPE_CHECKING:
    import asyncio



def make_evaluator(settings: Settings, limits: SandboxLimits | None = None) -> CodeExecutionEvaluator | None:
    """The code's tests after each round, by the execute-code rule (Settings.runs_code_tests); None when the
    rule says no. ``limits``: the sandbox's (a benchmark's own)."""
    if not settings.runs_code_tests:
        return None
    return CodeExecutionEvaluator(limits=limits) if limits is not None else CodeExecutionEvaluator()


@dataclass
class RunIO:
    """What a run talks to, chosen by the face: where its events go, who steers it, what it runs on.

    ``recorder``: the face's session recorder, first among the sinks; ``close_recorder`` False when the face
    ends its log itself (the MCP server, with the swarm's status). ``control``: the face's RunControl (else
    the plan's, in auto mode). ``backend``: a shared Backend, used and left open (with ``endpoint_limits``
    the run opens its own team's agent endpoints, sharing those limits by URL, and closes them: the MCP
    server), or a BackendChoice opened here and closed. ``embedder``: a face's own (else the plan's).
    ``sandbox_limits``: a benchmark's sandbox. ``steering``: a steering script (``--control``) whose actions
    go to this run's control while it is open."""

    sinks: Sequence[ev.EventSink] = ()
    recorder: SessionRecorder | None = None
    close_recorder: bool = True
    control: RunControl | None = None
    backend: Backend | BackendChoice = field(default_factory=BackendChoice)
    endpoint_limits: dict[str, asyncio.Semaphore] | None = None
    embedder: Embedder | None = None
    sandbox_limits: SandboxLimits | None = None
    steering: ControlScript | None = None


@dataclass
class AssembledRun:
    """An assembled run: await ``run()`` for its RunFinished; ``control`` steers it meanwhile."""

    engine: SwarmEngine
    backend: Backend
    team: Team
    recorder: SessionRecorder | None

    @property
    def control(self) -> RunControl:
        return self.engine.control

    async def run(self) -> ev.RunFinished:
        return await self.engine.run()


@asynccontextmanager
async def open_run(
    plan: RunPlan, problem: str, io: RunIO | None = None, *, fork: ForkPoint | None = None,
    parent: dict[str, Any] | None = None,
) -> AsyncIterator[AssembledRun]:
    """Assemble one run of ``problem`` as ``plan`` settled it (see the module's docstring), talking to what
    ``io`` names. ``fork``: the recorded run it continues; ``parent``: the session it was made from.
    Raises EndpointError for an unusable endpoint (a bad method option failed making the plan)."""
    io = io or RunIO()
    settings, team = plan.settings, plan.team
    own_backend = isinstance(io.backend, BackendChoice)
    own_clients: dict[str, Any] = {}
    if isinstance(io.backend, BackendChoice):
        choice = io.backend
        backend = await open_backend(settings, choice, team=team)
    else:
        backend = io.backend
        if io.endpoint_limits is not None and not backend.demo and any(
                role.has_endpoint for role in (team.manager, *team.workers)):
            own_clients = await open_agent_clients(settings, backend.llm, backend.llm.base_url, team=team,
                                                   limits=io.endpoint_limits)
            backend = replace(backend, agent_clients=own_clients)
    recorder, steering = io.recorder, io.steering
    tracer = trace_sink(settings)  # None unless the run is traced (core.telemetry): one more sink
    try:
        engine = build_engine(
            problem, settings, backend, [*([recorder] if recorder is not None else []), *io.sinks,
                                         *([tracer] if tracer is not None else [])],
            embedder=io.embedder or plan.embedder.open(), control=io.control or plan.new_control(),
            method=plan.method, evaluator=make_evaluator(settings, io.sandbox_limits), parent=parent, fork=fork,
            team=team,
        )
        if steering is not None:
            steering.attach(engine.control)
        if tracer is not None:
            tracer.notify = engine.notice
        try:
            yield AssembledRun(engine, backend, team, recorder)
        finally:
            if steering is not None:
                steering.detach(engine.control)
    finally:
        if tracer is not None:
            tracer.close()
        if recorder is not None and io.close_recorder:
            recorder.close("failed")  # a no-op after a normal end; a crash must not leave it "running"
        if own_backend:
            await backend.close()
        elif own_clients:
            shared = backend.llm
            for client in {id(c): c for c in own_clients.values() if c is not shared}.values():
                with contextlib.suppress(Exception):  # closing a run's own client never fails its outcome
                    await client.close()

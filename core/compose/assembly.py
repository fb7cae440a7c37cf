"""One way to assemble a run: ``open_run`` builds what a run needs, once, and closes what it opened.

Every face that runs a method goes through it: the headless CLI (a fork too), the TUI's run screen (a
fork or what-if too), a comparison's runs (live and headless), the MCP server and the benchmark runner.
In order, and before anything else runs:

* the team is resolved once (a user team or the domain's built-in one);
* the method is built once, before any I/O, so a bad option ends the run before a connection is made;
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
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from core.compose.control_feed import ControlScript
from core.compose.runner import Backend, build_engine, open_agent_clients, open_backend
from core.evaluation.sandbox import SandboxLimits
from core.llm.embeddings import Embedder
from core.methods.catalogue import build_method
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import RunControl
from core.runtime.domains import Domain
from core.runtime.engine import ForkPoint, Method, SwarmEngine
from core.runtime.round_check import CodeExecutionEvaluator
from core.runtime.teams import resolve_team
from core.sessions.store import SessionRecorder
from core.telemetry.setup import trace_sink

if TYPE_CHECKING:
    import asyncio

    from core.demo.server import ScriptedServer


def make_evaluator(settings: Settings, limits: SandboxLimits | None = None) -> CodeExecutionEvaluator | None:
    """The code's tests after each round, by the execute-code rule (Settings.runs_code_tests); None when the
    rule says no. ``limits``: the sandbox's (a benchmark's own)."""
    if not settings.runs_code_tests:
        return None
    return CodeExecutionEvaluator(limits=limits) if limits is not None else CodeExecutionEvaluator()


@dataclass
class OpenRun:
    """An assembled run: await ``run()`` for its RunFinished; ``control`` steers it meanwhile."""

    engine: SwarmEngine
    backend: Backend
    team: Domain
    recorder: SessionRecorder | None

    @property
    def control(self) -> RunControl:
        return self.engine.control

    async def run(self) -> ev.RunFinished:
        return await self.engine.run()


@asynccontextmanager
async def open_run(
    settings: Settings,
    problem: str,
    *,
    sinks: Sequence[ev.EventSink] = (),
    recorder: SessionRecorder | None = None,
    close_recorder: bool = True,
    control: RunControl | None = None,
    step: bool = False,
    team: Domain | None = None,
    method: Method | None = None,
    backend: Backend | None = None,
    endpoint_limits: dict[str, asyncio.Semaphore] | None = None,
    demo: bool = False,
    demo_chunk_delay: float = 0.0,
    server: ScriptedServer | None = None,
    on_status: Callable[[str], None] | None = None,
    embedder: Embedder | None = None,
    sandbox_limits: SandboxLimits | None = None,
    fork: ForkPoint | None = None,
    parent: dict[str, Any] | None = None,
    steering: ControlScript | None = None,
) -> AsyncIterator[OpenRun]:
    """Assemble one run of ``problem`` under ``settings`` (see the module's docstring).

    ``recorder``: the face's session recorder (it chose where the session goes); ``close_recorder`` False
    when the face ends its log itself (the MCP server, with the swarm's status). ``control``: the face's
    RunControl (else one in auto mode, or step mode with ``step``). ``team``/``method``: given when the face
    built them already (else from settings). ``backend``: a shared backend, used and left open; with
    ``endpoint_limits`` too, the run opens its own team's agent endpoints, sharing those concurrency
    limits by URL, and closes them (the MCP server). Otherwise the backend is opened here (``demo``,
    ``demo_chunk_delay``, ``server``, ``on_status`` as core.compose.runner.open_backend) and closed.
    ``steering``: a steering script (``--control``) whose actions go to this run's control while it is open.
    Raises MethodError before any I/O for a bad method option, EndpointError for an unusable endpoint."""
    team = team or resolve_team(settings)
    if method is None:
        method = build_method(settings.strategy, settings.strategy_options.get(settings.strategy), team)
    own_backend = backend is None
    own_clients: dict[str, Any] = {}
    if backend is None:
        backend = await open_backend(settings, demo=demo, demo_chunk_delay=demo_chunk_delay, server=server,
                                     on_status=on_status, team=team)
    elif endpoint_limits is not None and not backend.demo and any(
            role.has_endpoint for role in (team.manager, *team.workers)):
        own_clients = await open_agent_clients(settings, backend.llm, backend.llm.base_url, team=team,
                                               limits=endpoint_limits)
        backend = replace(backend, agent_clients=own_clients)
    tracer = trace_sink(settings)  # None unless the run is traced (core.telemetry): one more sink
    try:
        engine = build_engine(
            problem, settings, backend, [*([recorder] if recorder is not None else []), *sinks,
                                         *([tracer] if tracer is not None else [])],
            embedder=embedder, control=control, method=method, evaluator=make_evaluator(settings, sandbox_limits),
            parent=parent, step_mode=step, fork=fork, team=team,
        )
        if steering is not None:
            steering.attach(engine.control)
        if tracer is not None:
            tracer.notify = engine.notice
        try:
            yield OpenRun(engine, backend, team, recorder)
        finally:
            if steering is not None:
                steering.detach(engine.control)
    finally:
        if tracer is not None:
            tracer.close()
        if recorder is not None and close_recorder:
            recorder.close("failed")  # a no-op after a normal end; a crash must not leave it "running"
        if own_backend:
            await backend.close()
        elif own_clients:
            shared = backend.llm
            for client in {id(c): c for c in own_clients.values() if c is not shared}.values():
                with contextlib.suppress(Exception):  # closing a run's own client never fails its outcome
                    await client.close()

"""Wiring for a run: the endpoint (or the in-process demo server), the LLM client and the engine.

Shared by the headless CLI, the TUI and the benchmark runner so they start runs the same way.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.compose.plan import BackendChoice, embedder_for, new_control, team_of
from core.llm.client import EndpointError, LLMClient
from core.llm.embeddings import Embedder
from core.llm.urls import redact_url
from core.methods.catalogue import build_method
from core.methods.dytopo import DyTopoMethod
from core.methods.steer_checks import catalogue_hook
from core.routing.wiring import WiringRule
from core.runtime.clients import client_for
from core.runtime.config import ConfigError, DomainName, Settings, resolve_api_key, resolve_base_url
from core.runtime.control import RunControl
from core.runtime.engine import ForkPoint, Method, RoundEvaluator, RunSpec, SwarmEngine
from core.runtime.events import EventSink
from core.runtime.rosters import Team

if TYPE_CHECKING:  # the demo server is imported by a demo run only (http.server: start-up time)
    from core.demo.server import ScriptedServer


DEFAULT_CHOICE = BackendChoice()  # the configured endpoint, nothing told while it is awaited


@dataclass
class Backend:
    llm: LLMClient
    base_url: str
    model: str
    demo: bool
    server: ScriptedServer | None = None
    # A user team's agents with their own model or endpoint: agent name -> its client (one per distinct
    # endpoint, base URL + key variable + model, shared by the agents that name the same one).
    agent_clients: dict[str, LLMClient] = field(default_factory=dict)

    async def close(self) -> None:
        await self.llm.close()
        for client in {id(c): c for c in self.agent_clients.values() if c is not self.llm}.values():
            await client.close()
        if self.server is not None:
            self.server.stop()


async def open_backend(
    settings: Settings, choice: BackendChoice = DEFAULT_CHOICE, *, team: Team | None = None
) -> Backend:
    """Connect to the configured endpoint, or start the scripted demo server, as ``choice`` says (its
    ``on_status`` hears "contacting URL … N s" while the endpoint is awaited), and settle the model.
    Raises llm.EndpointError with a one-line message when the endpoint is unusable (a bad URL, no answer
    within first_byte_timeout, ...). ``team``: the run's team when the caller resolved it (its agents' own
    endpoints are opened too)."""
    demo, server = choice.demo, choice.server
    if demo and server is None:
        from core.demo.behaviour import ServerBehaviour
        from core.demo.scripts import demo_script
        from core.demo.server import ScriptedServer

        server = ScriptedServer(demo_script, ServerBehaviour(chunk_delay=choice.demo_chunk_delay)).start()
    if server is not None:
        base_url, api_key = server.base_url, "demo"
    else:
        base_url, api_key = resolve_base_url(settings), resolve_api_key(settings)
    try:
        llm = client_for(settings, base_url, api_key, settings.model)
        llm.on_status = choice.on_status
    except BaseException:
        if server is not None:
            server.stop()
        raise
    try:
        # Where the server reports its context (llama.cpp's /props), prompts are planned within it. Both asked
        # at once: a round trip less before the first request.
        model, _ = await asyncio.gather(llm.ensure_model(), llm.probe_context_size())
    except BaseException:
        await llm.close()
        if server is not None:
            server.stop()
        raise
    backend = Backend(llm=llm, base_url=redact_url(base_url), model=model, demo=demo, server=server)
    if not demo:
        try:
            backend.agent_clients = await open_agent_clients(settings, llm, base_url, team=team)
        except BaseException:
            await backend.close()
            raise
    # Backend.base_url is what runs show and record: never the secrets a URL may carry.
    return backend


async def open_agent_clients(
    settings: Settings,
    default: LLMClient,
    default_url: str,
    *,
    team: Team | None = None,
    limits: dict[str, asyncio.Semaphore] | None = None,
) -> dict[str, LLMClient]:
    """One client per distinct (base URL, key variable, model) among a user team's agents that name their
    own (each tells ``default``'s ``on_status`` while it waits); clients of one base URL share its
    concurrency limit (``limits``, by URL: pass the same dict to share them across runs, as the MCP server
    does). A model the endpoint does not list, or an endpoint
    that cannot be reached, is an EndpointError naming the agent and the endpoint."""
    try:
        team = team or team_of(settings)
    except ConfigError as exc:
        raise EndpointError(str(exc)) from None
    clients: dict[tuple[str, str, str], LLMClient] = {}
    limits = {} if limits is None else limits
    limits.setdefault(default_url, default._limit)
    listed: dict[tuple[str, str], list[str]] = {}
    out: dict[str, LLMClient] = {}
    try:
        for role in (team.manager, *team.workers):
            if not role.has_endpoint:
                continue
            url = role.base_url or default_url
            key_env = role.api_key_env or settings.api_key_env
            where = f"team {team.team_name}, agent {role.name}: endpoint {redact_url(url)}"
            if role.model:
                if (url, key_env) not in listed:
                    probe = _agent_client(settings, url, key_env, None, default)
                    try:
                        listed[(url, key_env)] = await probe.list_models()
                    except EndpointError as exc:
                        raise EndpointError(f"{where}: {exc}") from None
                    finally:
                        await probe.close()
                models = listed[(url, key_env)]
                if models and role.model not in models:
                    shown = ", ".join(models[:8]) + (" …" if len(models) > 8 else "")
                    raise EndpointError(f"{where} does not list model {role.model!r} (it lists: {shown})")
            model = role.model or (default.model if url == default_url else None)
            client = clients.get((url, key_env, model or ""))
            if client is None:
                client = _agent_client(settings, url, key_env, model, default)
                client._limit = limits.setdefault(url, client._limit)
                clients[(url, key_env, model or "")] = client
                if not client.model:
                    try:
                        await client.ensure_model()
                    except EndpointError as exc:
                        raise EndpointError(f"{where}: {exc}") from None
                await client.probe_context_size()
            out[role.name] = client
    except BaseException:
        for client in clients.values():
            await client.close()
        raise
    return out


def _agent_client(settings: Settings, url: str, key_env: str, model: str | None, default: LLMClient) -> LLMClient:
    """A client for an agent's own endpoint, with the key from that agent's variable; it reports its waits
    where the run's own client does."""
    client = client_for(settings, url, resolve_api_key(settings, key_env=key_env), model)
    client.on_status = default.on_status
    return client


def build_engine(
    problem: str,
    settings: Settings,
    backend: Backend,
    sinks: list[EventSink],
    *,
    embedder: Embedder | None = None,
    control: RunControl | None = None,
    wiring: WiringRule | None = None,
    method: Method | None = None,
    evaluator: RoundEvaluator | None = None,
    parent: dict[str, Any] | None = None,
    step_mode: bool = False,
    fork: ForkPoint | None = None,
    team: Team | None = None,
) -> SwarmEngine:
    """The engine of one run over an opened backend (core.compose.assembly.open_run assembles a whole run;
    training loops and benches that hold their own backend call this directly)."""
    team = team or team_of(settings)
    spec = RunSpec(
        problem=problem,
        domain=DomainName(team.name),
        team=team,
        protocol=settings.protocol,
        model=backend.model,
        base_url=backend.base_url,
        demo=backend.demo,
        # The demo server plays its own scenarios: say which, when it is not the problem asked.
        demo_played=backend.server.plays_instead(problem, team.name) if backend.demo and backend.server else "",
        parent=parent,
    )
    n_workers = len(team.workers)
    if method is None and wiring is not None:  # DyTopo over a fixed topology (the baselines' graphs)
        method = DyTopoMethod(wiring)
    elif method is None:
        options = settings.strategy_options.get(settings.strategy)
        method = build_method(settings.strategy, options, team)
    if control is None:
        control = new_control(settings, n_workers, step=step_mode)
    # Until the method sets its own steering hook (most do at the start of their run), the catalogue answers.
    control.steer_hook = control.steer_hook or catalogue_hook(method.name, control)
    return SwarmEngine(
        spec,
        settings,
        backend.llm,
        embedder or embedder_for(settings),
        sinks,
        method=method,
        control=control,
        evaluator=evaluator,
        fork=fork,
        agent_clients=backend.agent_clients,
    )

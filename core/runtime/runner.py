"""Wiring for a run: the endpoint (or the in-process demo server), the LLM client and the engine.

Shared by the headless CLI, the TUI and the benchmark runner so they start runs the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.demo.server import ScriptedServer
from core.llm.client import LLMClient
from core.llm.embeddings import Embedder, shared_embedder
from core.routing.strategies import TopologyStrategy
from core.runtime.config import Settings, resolve_api_key, resolve_base_url
from core.runtime.control import Params, RunControl
from core.runtime.domains import get_domain
from core.runtime.engine import Method, RoundEvaluator, RunSpec, SwarmEngine
from core.runtime.events import EventSink
from core.sessions.fork import ForkPoint
from core.sessions.model import redact_url


@dataclass
class Backend:
    llm: LLMClient
    base_url: str
    model: str
    demo: bool
    server: ScriptedServer | None = None

    async def close(self) -> None:
        await self.llm.close()
        if self.server is not None:
            self.server.stop()


def sampling_extras(settings: Settings) -> dict[str, float | int | None]:
    return {"top_p": settings.top_p, "top_k": settings.top_k, "min_p": settings.min_p}


async def open_backend(
    settings: Settings,
    *,
    demo: bool = False,
    demo_chunk_delay: float = 0.0,
    server: ScriptedServer | None = None,
    on_status: Callable[[str], None] | None = None,
) -> Backend:
    """Connect to the configured endpoint, or start the scripted demo server, and settle the model.
    Raises llm.EndpointError with a one-line message when the endpoint is unusable (a bad URL, no answer
    within first_byte_timeout, ...). ``on_status`` hears "contacting URL … N s" while it waits."""
    if demo and server is None:
        from core.demo.scripts import demo_script

        server = ScriptedServer(demo_script, chunk_delay=demo_chunk_delay).start()
    if server is not None:
        base_url, api_key = server.base_url, "demo"
    else:
        base_url, api_key = resolve_base_url(settings), resolve_api_key(settings)
    try:
        llm = LLMClient(
            base_url,
            api_key,
            settings.model,
            timeout=settings.call_timeout,
            first_byte_timeout=settings.first_byte_timeout,
            max_retries=settings.max_retries,
            max_retry_wait=settings.max_retry_wait,
            max_concurrency=settings.max_concurrency,
            sampling_extras=sampling_extras(settings),
            on_status=on_status,
        )
    except BaseException:
        if server is not None:
            server.stop()
        raise
    try:
        model = await llm.ensure_model()
    except BaseException:
        await llm.close()
        if server is not None:
            server.stop()
        raise
    # Backend.base_url is what runs show and record: never the secrets a URL may carry.
    return Backend(llm=llm, base_url=redact_url(base_url), model=model, demo=demo, server=server)


def build_engine(
    problem: str,
    settings: Settings,
    backend: Backend,
    sinks: list[EventSink],
    *,
    embedder: Embedder | None = None,
    control: RunControl | None = None,
    strategy: TopologyStrategy | None = None,
    method: Method | None = None,
    evaluator: RoundEvaluator | None = None,
    parent: dict | None = None,
    step_mode: bool = False,
    fork: ForkPoint | None = None,
) -> SwarmEngine:
    spec = RunSpec(
        problem=problem,
        domain=settings.domain,
        protocol=settings.protocol,
        model=backend.model,
        base_url=backend.base_url,
        demo=backend.demo,
        parent=parent,
    )
    n_workers = len(get_domain(settings.domain).workers)
    if method is None and strategy is None:
        from core.methods import build_method

        options = settings.strategy_options.get(settings.strategy)
        method = build_method(settings.strategy, options, get_domain(settings.domain))
    if control is None:
        control = RunControl(
            Params(settings.tau, settings.k_in, settings.max_rounds), n_workers, mode="step" if step_mode else "auto"
        )
    return SwarmEngine(
        spec,
        settings,
        backend.llm,
        embedder or shared_embedder(settings.embedding_model_path),
        sinks,
        control=control,
        strategy=strategy,
        method=method,
        evaluator=evaluator,
        fork=fork,
    )

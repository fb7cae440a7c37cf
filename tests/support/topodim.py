"""A TopoDIM run against its own scripted server, and the call count the paper gives a typed graph."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.routing.dytopo import KIND_DEBATE, KIND_FEEDBACK
from core.routing.topodim import TypedGraph, histogram
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import RunControl
from core.runtime.scripted import RequestInfo


async def run_topodim(
    embedder: Any,
    script: Callable[[RequestInfo], str] = demo_script,
    *,
    options: dict[str, Any] | None = None,
    domain: str = "code",
    problem: str | None = None,
    evaluator: Any = None,
    faults: Sequence[FaultRule] = (),
    settings: Settings | None = None,
    drive: Callable[[Any, list[ev.Event]], Any] | None = None,
    control: RunControl | None = None,
) -> tuple[ev.RunFinished, list[ev.Event], ScriptedServer]:
    settings = settings or Settings(domain=domain, strategy="topodim", strategy_options={"topodim": options or {}})
    with ScriptedServer(script) as server:
        for rule in faults:
            server.add_fault(rule)
        backend = await open_backend(settings, BackendChoice(server=server))
        events: list[ev.Event] = []
        engine = build_engine(
            problem or DEMO_PROBLEMS[settings.domain], settings, backend, [events.append], embedder=embedder,
            evaluator=evaluator, control=control,
        )
        try:
            task = asyncio.create_task(engine.run())
            if drive is not None:
                await drive(engine, events)
            finished = await asyncio.wait_for(task, timeout=120)  # a hang guard, not a speed test
        finally:
            await backend.close()
    return finished, events, server


def expected_calls(graph: TypedGraph) -> int:
    """|V_final| + 2 per feedback edge + 2 per debate edge + 1 decision (TopoDIM §3.2
    "Execution order" and App. B: each agent once, a feedback or debate edge two calls each)."""
    counts = histogram(graph.kept)
    return len(graph.active) + 2 * counts[KIND_FEEDBACK] + 2 * counts[KIND_DEBATE] + 1

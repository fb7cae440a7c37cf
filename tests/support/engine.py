"""One run of the real engine against a scripted server, and the event filters the engine tests share."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from core.compose.plan import BackendChoice
from core.compose.runner import Backend, build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.engine import SwarmEngine


async def run_swarm(
    server: ScriptedServer | None,
    embedder: Any,
    *,
    settings: Settings | None = None,
    problem: str | None = None,
    step: bool = False,
    drive: Callable[[SwarmEngine, list[ev.Event]], Any] | None = None,
    timeout: float = 60,
) -> tuple[ev.RunFinished, list[ev.Event], SwarmEngine]:
    """One run to its end; ``server`` None: the settings' own base_url and key (the real endpoint path)."""
    settings = settings or Settings()
    backend: Backend = await open_backend(settings, BackendChoice(server=server))
    events: list[ev.Event] = []
    engine = build_engine(
        problem or DEMO_PROBLEMS[settings.domain], settings, backend, [events.append], embedder=embedder, step_mode=step
    )
    try:
        run = asyncio.create_task(engine.run())
        if drive is not None:
            await drive(engine, events)
        finished = await asyncio.wait_for(run, timeout=timeout)  # a guard against hangs, not a speed test
    finally:
        await backend.close()
    return finished, events, engine


def of(events: list[ev.Event], kind: type[ev.Event], **match: Any) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())]


async def wait_until(predicate: Callable[[], bool]) -> None:
    for _ in range(3000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never became true")


def changing_replies(info: Any) -> str:
    """The demo, except that the Manager never halts before max_rounds and every reply names its round."""
    reply = demo_script(info)
    data = json.loads(reply)
    if info.call in ("plan", "manager"):
        data.update(terminate=False, final_answer="", goal=f"Goal of round {info.round + 1}.")
    elif isinstance(data.get("public"), str):
        data["public"] = f"{data['public']} [{info.role}, round {info.round}]"
    return json.dumps(data)

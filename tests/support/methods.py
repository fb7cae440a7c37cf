"""Every registered method run end to end through the shared engine helper."""

from __future__ import annotations

from typing import Any

from core.demo.server import ScriptedServer
from core.methods.catalogue import get_method_info
from core.methods.registry import MethodError
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.steering import SteerKind
from tests.support.engine import run_swarm


async def run_method(
    server: ScriptedServer, embedder: Any, name: str, domain: str, *, step: bool = False, drive: Any = None
) -> tuple[ev.RunFinished, list[ev.Event]]:
    settings = Settings(domain=domain, strategy=name, execute_code=False, k_in=2)
    finished, events, _ = await run_swarm(server, embedder, settings=settings, step=step, drive=drive, timeout=120)
    return finished, events


def steering_refusal(name: str, kind: SteerKind | str) -> str:
    """One line: why method ``name`` does not take ``kind``; "" when it does (an unknown method: why not)."""
    try:
        return get_method_info(name).why_not(kind)
    except MethodError as exc:
        return str(exc)

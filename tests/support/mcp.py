"""An MCP client session on the in-memory transport, and the calls the MCP tests make through it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.shared.memory import create_connected_server_and_client_session

from core.compose.plan import BackendChoice
from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.mcp.server import build_server
from core.mcp.tasks import SwarmManager, TaskStatus
from core.runtime.config import Settings

RUN_TIMEOUT = 120.0  # a guard against hangs, not a speed assertion
CALL_TIMEOUT = 30.0


@asynccontextmanager
async def connected(
    tmp_path: Path, embedder: Any, *, server: ScriptedServer | None = None, settings: Settings | None = None,
    demo: bool = True, **manager_kwargs: Any
) -> AsyncIterator[tuple[Any, SwarmManager, ScriptedServer]]:
    """A client session with a server whose swarms use ``server`` (demo: every agent talks to it; not
    demo: it is the run's endpoint, and a team's agents may name their own)."""
    scripted = server or ScriptedServer(demo_script)
    scripted.start()
    settings = replace(settings or Settings(max_retries=0), sessions_dir=str(tmp_path / "sessions"))
    manager = SwarmManager(settings, backend=BackendChoice(demo=demo, server=scripted), embedder=embedder,
                           **manager_kwargs)
    mcp_server = build_server(manager)
    try:
        async with create_connected_server_and_client_session(mcp_server, raise_exceptions=True) as session:
            yield session, manager, scripted
    finally:
        await asyncio.wait_for(manager.aclose(), 30)
        scripted.stop()


async def call(session: Any, tool: str, **arguments: Any) -> Any:
    return await asyncio.wait_for(session.call_tool(tool, arguments), CALL_TIMEOUT)


async def ok(session: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await call(session, tool, **arguments)
    assert not result.isError, result.content[0].text
    return result.structuredContent


async def refused(session: Any, tool: str, **arguments: Any) -> str:
    result = await call(session, tool, **arguments)
    assert result.isError, result.structuredContent
    return result.content[0].text


async def poll_until(session: Any, task_id: str, done: Callable[[dict[str, Any]], bool],
                     timeout: float = RUN_TIMEOUT) -> dict[str, Any]:
    async def loop() -> dict[str, Any]:
        while True:
            status = await ok(session, "swarm_status", task_id=task_id)
            if done(status):
                return status
            await asyncio.sleep(0.1)

    return await asyncio.wait_for(loop(), timeout)


def finished(status: dict[str, Any]) -> bool:
    return status["status"] != TaskStatus.RUNNING

"""A call's identity travels in the X-Swarm-Call header, never in the messages a model reads."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import ScriptedServer
from core.llm.call_id import CallId, parse_call_id
from core.runtime.config import Settings


def test_call_id_round_trips_and_rejects_malformed_values() -> None:
    call = CallId("Tester", "work", 3)
    assert parse_call_id(call.header_value()) == call
    malformed = ("role=Tester call=work round=3", "role=Te ster; call=work; round=3", "role=A; call=b; round=x")
    for bad in (None, "", *malformed):
        assert parse_call_id(bad) is None


@pytest.mark.parametrize("strategy", ["dytopo", "single", "dmoa", "topoweaver", "topodim"])
async def test_every_method_names_its_calls_in_a_header_and_not_in_the_prompt(
    demo_server: ScriptedServer, embedder: Any, strategy: str
) -> None:
    settings = Settings(strategy=strategy, max_rounds=2)
    backend = await open_backend(settings, BackendChoice(server=demo_server))
    try:
        engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [], embedder=embedder)
        await asyncio.wait_for(engine.run(), timeout=120)  # a guard against hangs, not a speed test
    finally:
        await backend.close()
    assert demo_server.requests, "the run made no request"
    for info in demo_server.requests:
        assert info.role and info.call, f"a request without its call header: {info.body.get('messages')}"
        text = "\n".join(str(m.get("content", "")) for m in info.messages)
        assert "swarm-tui call" not in text

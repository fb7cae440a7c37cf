"""A transient failure of one call fails that agent's turn, not the run; the fault is named for what it is."""

from __future__ import annotations

from typing import Any

from core.demo.scripts import demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from tests.support.engine import of, run_swarm


async def test_one_agents_broken_calls_do_not_end_the_run(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule("http_429", role="Tester", call="work", times=1))
        server.add_fault(FaultRule("http_500", role="Tester", call="work", times=1))
        server.add_fault(FaultRule("drop", role="Tester", call="work", times=0))  # every later work call breaks
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_retry_wait=1.0))
    assert finished.reason != "error", finished.detail
    failed = [e for e in of(events, ev.AgentFinished) if e.agent == "Tester" and e.call == "work"]
    assert failed and all(e.status == "failed" for e in failed)
    notices = " ".join(getattr(e, "message", "") for e in events)
    assert "reset or dropped" in notices and "start your server there" not in notices


async def test_a_server_that_is_not_there_ends_the_run_as_unreachable(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        url = server.base_url
    # the server is stopped: nothing listens on its port any more
    from core.compose.runner import open_backend

    try:
        await open_backend(Settings(base_url=url, first_byte_timeout=2.0))
    except Exception as exc:  # EndpointError: one line naming the URL
        assert "cannot reach" in str(exc) or "no answer" in str(exc)
    else:  # pragma: no cover - a port reused at once by another process
        raise AssertionError("a stopped server was reachable")

"""One run assembly (core.compose.assembly.open_run): a bad method option fails before any request, a run
assembled on a shared backend leaves it open for the next run, and a run that opened its own demo server
and client closes them when it ends, even when the face's code fails inside it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.compose.assembly import RunIO, make_evaluator, open_run
from core.compose.plan import BackendChoice, RunPlan
from core.compose.runner import open_backend
from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import ScriptedServer
from core.methods.registry import MethodError
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.outcome import EndReason
from core.sessions.store import SessionRecorder, load_session


async def test_a_bad_method_option_ends_before_any_request(demo_server: ScriptedServer, embedder: Any) -> None:
    settings = Settings(strategy="star", strategy_options={"star": {"hub": "Nobody"}})
    with pytest.raises(MethodError, match="hub must be one of"):
        plan = RunPlan.make(settings)  # the plan is made before open_run: no run opens
        async with open_run(plan, "x", RunIO(backend=BackendChoice(server=demo_server), embedder=embedder)):
            pass  # pragma: no cover - never reached
    assert demo_server.requests == []  # no connection was made for a run that could not start


async def test_runs_on_a_shared_backend_leave_it_open_and_record_each_session(
    demo_server: ScriptedServer, embedder: Any, tmp_path: Path
) -> None:
    settings = Settings(domain="math", strategy="single", sessions_dir=str(tmp_path))
    shared = await open_backend(settings, BackendChoice(server=demo_server))
    try:
        finished = []
        for name in ("first", "second"):  # the second run works on what the first left open
            recorder = SessionRecorder(tmp_path, path=tmp_path / f"{name}.json")
            io = RunIO(recorder=recorder, backend=shared, embedder=embedder)
            async with open_run(RunPlan.make(settings), DEMO_PROBLEMS["math"], io) as run:
                finished.append(await run.run())
            assert load_session(tmp_path / f"{name}.json").outcome is not None
        assert [f.reason for f in finished] == [EndReason.SINGLE, EndReason.SINGLE]
        assert await shared.llm.list_models()  # still open after both runs
    finally:
        await shared.close()


async def test_a_run_closes_the_demo_server_it_started_even_when_the_face_fails(embedder: Any) -> None:
    events: list[ev.Event] = []
    with pytest.raises(RuntimeError, match="the face failed"):
        io = RunIO(sinks=[events.append], backend=BackendChoice(demo=True), embedder=embedder)
        async with open_run(RunPlan.make(Settings(strategy="single")), "x", io) as run:
            url = run.backend.server.base_url if run.backend.server is not None else ""
            async with httpx.AsyncClient() as client:
                assert (await client.get(f"{url}/models")).status_code == 200  # up while the run is open
            raise RuntimeError("the face failed")
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.TransportError):
            await asyncio.wait_for(client.get(f"{url}/models"), timeout=10)
    assert events == []  # the run never started: nothing was announced


def test_code_tests_run_only_for_code_with_execute_code_on() -> None:
    assert make_evaluator(Settings(domain="code", execute_code=True)) is not None
    assert make_evaluator(Settings(domain="code", execute_code=False)) is None
    assert make_evaluator(Settings(domain="math", execute_code=True)) is None

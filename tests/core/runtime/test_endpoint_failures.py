"""Endpoints that fail slowly or confusingly: an endpoint that never answers, rate limits with long
Retry-After, malformed URLs, user:password@ in the URL, replies cut off at max_tokens, a model that never
follows the JSON contract, and structured output with its fallbacks. The real openai client against the
scripted server (or a raw socket that never answers), real MiniLM."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import FaultRule, RequestInfo, ScriptedServer
from core.llm.client import EndpointError
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.parsing import DESCRIPTOR_SCHEMA, MANAGER_SCHEMA, WORK_SCHEMA
from tests.support.engine import of, run_swarm
from tests.support.paths import ROOT
from tui.entry import main as cli_main


class SilentServer:
    """Accepts connections on 127.0.0.1 and never answers (never sends headers)."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.05)
        self._stop = threading.Event()
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections.append(conn)  # read nothing, answer nothing

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self.connections:
            conn.close()
        self._sock.close()


@pytest.fixture()
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def one_line_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


# --- an endpoint that never answers ------------------------------------------------------------------


async def test_startup_against_a_silent_endpoint_is_bounded_and_says_what_it_waits_for(
    silent: SilentServer,
) -> None:
    statuses: list[str] = []
    start = time.monotonic()
    with pytest.raises(EndpointError) as info:
        await asyncio.wait_for(
            open_backend(Settings(base_url=silent.base_url, first_byte_timeout=1.5),
                         BackendChoice(on_status=statuses.append)), 20
        )
    assert time.monotonic() - start < 10
    assert str(info.value).startswith(f"no answer from {silent.base_url} in 1.5 s") and "\n" not in str(info.value)
    assert statuses == [f"contacting {silent.base_url} … 1 s"]


async def test_a_call_that_is_never_answered_ends_the_run_without_retrying(silent: SilentServer, embedder: Any) -> None:
    settings = Settings(base_url=silent.base_url, model="m", first_byte_timeout=1.0)
    backend = await open_backend(settings)  # a model is given: only the context size is asked (/props), in vain
    events: list[ev.Event] = []
    start = time.monotonic()
    try:
        engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], embedder=embedder)
        finished = await asyncio.wait_for(engine.run(), timeout=30)
    finally:
        await backend.close()
    assert time.monotonic() - start < 10
    assert finished.reason == "error"
    assert finished.detail.startswith(f"no answer from {silent.base_url} in 1 s")
    # The /props probe when the backend opened, then the Manager's plan call, once: no retry, no worker called.
    assert len(silent.connections) == 2
    assert not of(events, ev.AgentStarted, call=ev.CallKind.WORK)


def test_headless_against_a_silent_endpoint_is_one_line_and_exit_1(silent: SilentServer, tmp_path: Path) -> None:
    config = one_line_config(tmp_path, "first_byte_timeout = 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "tui", "--headless", "--config", str(config), "--base-url", silent.base_url, "x"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "SWARM_TUI_SESSIONS_DIR": str(tmp_path)},
    )
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"swarm-tui: no answer from {silent.base_url} in 1 s"), lines


# --- rate limits -------------------------------------------------------------------------------------


@pytest.mark.usefixtures("embedder")
def test_a_rate_limit_is_announced_on_stderr_and_retried(
    demo_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWARM_TUI_SESSIONS_DIR", str(tmp_path))
    demo_server.add_fault(FaultRule("http_429", role="Designer", call=ev.CallKind.WORK, round=1, retry_after=0.3))
    config = one_line_config(tmp_path, "")
    code = cli_main(["--headless", "--config", str(config), "--base-url", demo_server.base_url, "--max-rounds", "1",
                     "x"])
    assert code == 0
    err = capsys.readouterr().err
    assert f"  ! Designer: rate limited by {demo_server.base_url}, retrying in 0.3 s" in err.splitlines()
    designer = [r for r in demo_server.requests if r.role == "Designer" and r.call == ev.CallKind.WORK]
    assert len(designer) == 2


async def test_a_retry_after_longer_than_the_cap_ends_the_run_at_the_managers_first_call(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    demo_server.add_fault(FaultRule("http_429", times=0, retry_after=120))
    url, start = demo_server.base_url, time.monotonic()
    finished, events, _ = await run_swarm(demo_server, embedder)
    assert time.monotonic() - start < 20
    assert finished.reason == "error"
    assert finished.detail == (
        f"rate limited by {url}: it asks to wait 120 s, more than max_retry_wait allows "
        "(60 s a call): try again later or raise max_retry_wait"
    )
    assert len(demo_server.requests) == 1  # no worker is called after the Manager's first call failed
    assert not of(events, ev.AgentStarted, call=ev.CallKind.WORK)


async def test_the_total_wait_of_one_call_is_capped(demo_server: ScriptedServer, embedder: Any) -> None:
    demo_server.add_fault(FaultRule("http_429", times=0, retry_after=0.4))
    settings = Settings(max_retries=5, max_retry_wait=1.0)
    finished, events, _ = await run_swarm(demo_server, embedder, settings=settings)
    assert finished.reason == "error" and "still refused after 0.8 s of waiting" in finished.detail
    assert len(demo_server.requests) == 3  # two retries fit in 1 s, a third wait would not
    retries = [n.message for n in of(events, ev.Notice) if "rate limited" in n.message and "retrying in" in n.message]
    assert len(retries) == 2 and all(m.endswith("retrying in 0.4 s") for m in retries)


# --- URLs ----------------------------------------------------------------------------------------------


def _swarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )


@pytest.mark.parametrize(
    ("args", "env", "fragment"),
    [
        (["--headless", "--base-url", "http://[::1/v1", "x"], {}, "cannot be parsed (Invalid IPv6 URL)"),
        (["--headless", "--base-url", "http://127.0.0.1:99999/v1", "x"], {}, "has port '99999'"),
        (["--headless", "--base-url", "ftp://host/v1", "x"], {}, "must start with http:// or https://"),
        (["--headless", "--base-url", "http:///v1", "x"], {}, "has no host"),
        (["--headless", "--base-url", "http://me:hunter2@127.0.0.1:1/v1", "x"], {}, "put the key in $OPENAI_API_KEY"),
        (["--headless", "x"], {"OPENAI_BASE_URL": "http://127.0.0.1:70000/v1"}, "$OPENAI_BASE_URL: "),
        (["--base-url", "http://[::1/v1", "x"], {}, "cannot be parsed"),  # the TUI: refused before it starts
        (["bench", "/no/such.jsonl", "--base-url", "http://[::1/v1"], {}, "cannot be parsed"),
    ],
)
def test_a_malformed_endpoint_url_is_one_line_and_exit_2(args: list[str], env: dict[str, str], fragment: str) -> None:
    result = _swarm(*args, env=env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr and "hunter2" not in result.stderr


async def test_open_backend_refuses_a_malformed_url_with_one_line() -> None:
    # The TUI and the bench build Settings without the CLI's check: the backend checks again.
    with pytest.raises(EndpointError) as info:
        await open_backend(Settings(base_url="http://127.0.0.1:99999/v1"))
    assert "port '99999'" in str(info.value)


async def test_user_and_password_in_the_url_never_replace_the_api_key(
    demo_server: ScriptedServer, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The 403 fault echoes what came in the Authorization header: the key (redacted as ***), not Basic auth.
    monkeypatch.setenv("SWARM_TEST_KEY", "sk-test-KEY-0123456789")
    demo_server.add_fault(FaultRule("http_403", role="Tester", call=ev.CallKind.WORK, round=1))
    url = demo_server.base_url.replace("http://", "http://user:URLPASSWORD@")
    settings = Settings(base_url=url, api_key_env="SWARM_TEST_KEY", max_rounds=1)
    _, events, _ = await run_swarm(None, embedder, settings=settings)
    (tester,) = of(events, ev.AgentFinished, agent="Tester")
    assert "key *** may not use this model" in tester.error, tester.error


# --- replies cut off at max_tokens ---------------------------------------------------------------------

FULL_ANSWER = "def f(x):\n    return x + 1\n" * 20


def _terminating_manager(info: RequestInfo) -> str:
    if info.role == "Manager" and info.call == ev.CallKind.MANAGER:
        # terminate first: a reply cut in half still repairs into "terminate: true" with half an answer.
        return json.dumps({"terminate": True, "reasoning": "Done.", "goal": "", "final_answer": FULL_ANSWER})
    return demo_script(info)


async def test_a_manager_reply_cut_off_is_asked_for_again_not_taken_as_the_decision(embedder: Any) -> None:
    with ScriptedServer(_terminating_manager) as server:
        server.add_fault(FaultRule("truncated", role="Manager", call=ev.CallKind.MANAGER, round=1))
        finished, _, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=2))
    asks = [r for r in server.requests if r.role == "Manager" and r.call == ev.CallKind.MANAGER and r.round == 1]
    assert len(asks) == 2 and asks[1].is_repair
    assert "cut off at max_tokens (2000 tokens)" in asks[1].messages[-1]["content"]
    assert finished.reason == "manager" and finished.final_answer == FULL_ANSWER.strip()


async def test_a_manager_reply_cut_off_twice_is_no_decision(embedder: Any) -> None:
    with ScriptedServer(_terminating_manager) as server:
        server.add_fault(FaultRule("truncated", role="Manager", call=ev.CallKind.MANAGER, round=1, times=2))
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=2))
    (decided,) = of(events, ev.ManagerDecided, round=1, plan=False)
    assert decided.status == "unparsed" and not decided.terminate
    assert finished.rounds == 2  # the cut-off "terminate" did not end the run


async def test_a_worker_reply_cut_off_is_asked_for_again(demo_server: ScriptedServer, embedder: Any) -> None:
    demo_server.add_fault(FaultRule("truncated", role="Tester", call=ev.CallKind.WORK, round=1))
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=1))
    (tester,) = of(events, ev.AgentFinished, round=1, agent="Tester")
    assert tester.status == "done" and tester.attempts == 2
    assert finished.replies_parsed == finished.replies_total == 6  # plan, four workers, the Manager


@pytest.mark.parametrize(
    ("kind", "fragment"),
    [
        ("stream_error", "failed mid-stream: the model crashed mid-reply"),
        ("garbage_chunk", "stream chunk that is not JSON"),
    ],
)
async def test_a_stream_broken_mid_reply_fails_that_agent_with_one_line_and_the_run_goes_on(
    demo_server: ScriptedServer, embedder: Any, kind: str, fragment: str
) -> None:
    demo_server.add_fault(FaultRule(kind, role="Tester", call=ev.CallKind.WORK, round=1, times=5))
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=1))
    (tester,) = of(events, ev.AgentFinished, round=1, agent="Tester")
    assert tester.status == "failed"
    (started,) = of(events, ev.RunStarted)
    assert fragment in tester.error and f"the endpoint {started.base_url}" in tester.error
    assert "\n" not in tester.error and "\x1b" not in tester.error and "\x07" not in tester.error
    notices = [n.message for n in of(events, ev.Notice) if "Tester" in n.message]
    assert notices and all(fragment in n for n in notices)
    assert finished.rounds == 1 and finished.replies_parsed == 5  # everyone else's work went on


async def test_server_sent_events_are_framed_as_the_standard_says() -> None:
    from core.llm.stream import sse_data

    async def lines() -> Any:
        for line in [": a comment", "event: message", "data: {\"a\":", "data: 1}", "", "", "id: 7", "data:[DONE]"]:
            yield line

    assert [data async for data in sse_data(lines())] == ['{"a":\n1}', "[DONE]"]


# --- a model that never follows the contract -----------------------------------------------------------


@pytest.mark.usefixtures("embedder")
def test_a_run_in_which_no_reply_parsed_says_so_and_exits_1(
    demo_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWARM_TUI_SESSIONS_DIR", str(tmp_path))
    demo_server.add_fault(FaultRule("malformed", times=0))
    config = one_line_config(tmp_path, "")
    code = cli_main(["--headless", "--config", str(config), "--base-url", demo_server.base_url, "--max-rounds", "1",
                     "x"])
    assert code == 1
    err = capsys.readouterr().err
    assert "swarm-tui: 0 of 6 replies parsed: the model is not following the JSON contract" in err.splitlines()
    (saved,) = tmp_path.glob("*.json")
    finished = json.loads(saved.read_text())["outcome"]
    assert (finished["replies_parsed"], finished["replies_total"]) == (0, 6)


# --- structured output ---------------------------------------------------------------------------------


async def test_each_call_asks_for_its_contracts_json_schema(demo_server: ScriptedServer, embedder: Any) -> None:
    await run_swarm(demo_server, embedder, settings=Settings(max_rounds=2))
    # A phased work call's reply carries no descriptors (phase A gave them): its own, smaller contract.
    schemas = {ev.CallKind.PLAN: MANAGER_SCHEMA, ev.CallKind.MANAGER: MANAGER_SCHEMA, ev.CallKind.WORK: WORK_SCHEMA,
               ev.CallKind.DESCRIPTORS: DESCRIPTOR_SCHEMA}
    assert {r.call for r in demo_server.requests} == set(schemas)
    for r in demo_server.requests:
        sent = r.body["response_format"]
        assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == schemas[r.call]
        assert sent["json_schema"]["strict"] is False


async def test_a_server_without_json_schema_falls_back_to_json_mode(demo_server: ScriptedServer, embedder: Any) -> None:
    demo_server.add_fault(FaultRule("reject_json_schema", times=0))
    finished, events, engine = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=1))
    assert finished.reason == "max_rounds" or finished.reason == "manager"
    assert engine.llm.schema_supported is False and engine.llm.json_mode_supported is True
    kinds = [r.body.get("response_format", {}).get("type") for r in demo_server.requests]
    assert kinds[0] == "json_schema" and kinds[1] == "json_object"
    assert kinds.count("json_schema") == 1  # remembered: asked once, never again
    assert any("rejected JSON-schema output" in n.message for n in of(events, ev.Notice))


async def test_a_server_without_any_json_mode_falls_back_twice(demo_server: ScriptedServer, embedder: Any) -> None:
    demo_server.add_fault(FaultRule("reject_response_format", times=0))
    finished, _, engine = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=1))
    assert finished.replies_parsed == finished.replies_total > 0
    assert engine.llm.schema_supported is False and engine.llm.json_mode_supported is False
    kinds = [r.body.get("response_format", {}).get("type") for r in demo_server.requests]
    assert kinds[:3] == ["json_schema", "json_object", None]
    assert set(kinds[3:]) == {None}

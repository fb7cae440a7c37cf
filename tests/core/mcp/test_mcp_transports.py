"""``swarm-tui mcp`` as a real process, through the SDK's real clients: stdio (which also proves that
nothing but the protocol reaches stdout) and streamable HTTP on a free loopback port. Plus the one-line
answer when the SDK is missing. Every await is bounded; every process is killed afterwards."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from core.demo.scripts import DEMO_PROBLEMS
from core.sessions.eventlog import find_task, has_ended
from core.sessions.store import load_session
from tests.support.paths import ROOT

STEP = 60.0  # one protocol step (the server loads MiniLM and starts the demo server on first use)
RUN = 180.0  # a whole demo run


def server_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "SWARM_TUI_SESSIONS_DIR": str(tmp_path / "sessions"),
    }


async def lifecycle(session: ClientSession, **start: Any) -> dict[str, Any]:
    """initialize, start, poll until done, result with topology; every step bounded."""
    await asyncio.wait_for(session.initialize(), STEP)
    tools = await asyncio.wait_for(session.list_tools(), STEP)
    assert {t.name for t in tools.tools} == {
        "swarm_start", "swarm_compare", "swarm_status", "swarm_result", "swarm_cancel", "swarm_steer"}
    arguments = start or {"task": DEMO_PROBLEMS["math"], "domain": "math"}
    started = await asyncio.wait_for(session.call_tool("swarm_start", arguments), STEP)
    assert not started.isError, started.content
    task_id = started.structuredContent["task_id"]

    async def poll() -> dict[str, Any]:
        while True:
            status = await session.call_tool("swarm_status", {"task_id": task_id})
            assert not status.isError, status.content
            if status.structuredContent["status"] != "running":
                return status.structuredContent
            await asyncio.sleep(0.2)

    status = await asyncio.wait_for(poll(), RUN)
    assert status["status"] == "completed", status
    result = await asyncio.wait_for(
        session.call_tool("swarm_result", {"task_id": task_id, "include_topology": True}), STEP
    )
    assert not result.isError
    return result.structuredContent


async def test_stdio_server_runs_a_swarm_with_only_the_protocol_on_stdout(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tui", "mcp", "--demo"], env=server_env(tmp_path), cwd=str(ROOT)
    )
    errlog = (tmp_path / "stderr.txt").open("w")
    try:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            # Code with its tests run in the sandbox after every round: child processes, and still
            # nothing but the protocol on stdout.
            result = await lifecycle(session, task=DEMO_PROBLEMS["code"], options={"execute": True})
    finally:
        errlog.close()
    assert "def make_palindrome" in result["final_answer"] and result["termination_reason"] == "manager"
    assert [r["round"] for r in result["topology"]] == [1, 2, 3]
    assert result["topology"][1]["graphs"][0]["edges"]
    saved = load_session(Path(result["session_file"]))
    assert [t.passed for t in saved.rounds[-1].test_runs] == [True]
    assert Path(result["session_file"]).parent == tmp_path / "sessions"
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "swarm-tui MCP server on stdio" in stderr and "Traceback" not in stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = STEP) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode}")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listened on port {port} within {timeout:g} s")


async def test_streamable_http_server_on_a_loopback_port_and_a_graceful_sigterm(tmp_path: Path) -> None:
    port = free_port()
    stderr = (tmp_path / "stderr.txt").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "mcp", "--http", "--port", str(port), "--demo", "--demo-delay", "0.05"],
        cwd=ROOT, env=server_env(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
    )
    try:
        await asyncio.to_thread(wait_for_port, port, proc)
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _),
            ClientSession(read, write) as session,
        ):
            result = await lifecycle(session)
            # A second swarm, still running when the server is told to stop.
            started = await asyncio.wait_for(session.call_tool("swarm_start", {"task": DEMO_PROBLEMS["code"]}), STEP)
            task_id = started.structuredContent["task_id"]

            async def in_round_one() -> None:
                while True:
                    status = (await session.call_tool("swarm_status", {"task_id": task_id})).structuredContent
                    assert status["status"] == "running", status
                    if status["round"] >= 1:
                        return
                    await asyncio.sleep(0.1)

            await asyncio.wait_for(in_round_one(), RUN)
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        stderr.close()
    assert result["final_answer"] and result["status"] == "completed"
    assert result["topology"][1]["graphs"][0]["kind"] == "topology_built"
    log = (tmp_path / "stderr.txt").read_text()
    assert f"http://127.0.0.1:{port}/mcp" in log and "Traceback" not in log
    # SIGTERM stopped the running swarm the way a cancel does: its session is saved and ended.
    stopped = find_task(tmp_path / "sessions", task_id)
    assert stopped is not None and has_ended(stopped.log)
    assert load_session(stopped.session).outcome.reason == "cancelled"


def test_without_the_sdk_the_command_says_how_to_get_it(tmp_path: Path) -> None:
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "mcp.py").write_text("raise ImportError('No module named mcp')\n")
    env = {**server_env(tmp_path), "PYTHONPATH": str(blocker) + os.pathsep + str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "mcp", "--demo"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=STEP, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "swarm-tui: error: the MCP server needs the MCP SDK: pip install 'swarm-tui[mcp]' (the MCP Python SDK, "
        "mcp>=1.29,<2)"
    ]


def test_bad_server_flags_get_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "mcp", "--port", "9000"], cwd=ROOT, env=server_env(tmp_path),
        capture_output=True, text=True, timeout=STEP, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "--host and --port go with --http" in proc.stderr
    assert "Traceback" not in proc.stderr

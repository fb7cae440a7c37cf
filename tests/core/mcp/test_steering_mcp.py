"""swarm_steer: a run started over MCP is steered with the same actions, checks and events as the TUI and
``--control``, through the SDK's in-memory client against the scripted model server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from core.demo.scripts import DEMO_PROBLEMS
from core.mcp.tasks import TaskStatus
from core.sessions.store import load_session
from tests.support.mcp import connected, finished, ok, poll_until, refused


async def test_swarm_steer_notes_pins_and_is_recorded(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, _, scripted):
        started = await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"])
        task_id = started["task_id"]
        steered = await ok(session, "swarm_steer", task_id=task_id, action="note", to="Tester",
                           text="MCP-NOTE: check the empty string", at_round=2)
        assert steered["action"] == "note Tester" and steered["message"].startswith("queued")
        await ok(session, "swarm_steer", task_id=task_id, action="pin", src="Researcher", dst="Tester", at_round=2)
        await ok(session, "swarm_steer", task_id=task_id, action="pin", src="Tester", dst="Tester", at_round=2)
        # Input that cannot be read is one line, and the run goes on.
        assert "swarm_steer: unknown action 'shout'" in await refused(session, "swarm_steer", task_id=task_id,
                                                                      action="shout")
        assert "\"text\" is missing" in await refused(session, "swarm_steer", task_id=task_id, action="goal")
        status = await poll_until(session, task_id, finished)
        assert status["status"] == TaskStatus.COMPLETED
        assert [(s["action"], s["target"], s["accepted"]) for s in status["steering"]] == [
            ("note", "Tester", True), ("pin", "Researcher→Tester", True), ("pin", "Tester→Tester", False)]
        assert status["steering"][2]["reason"] == "cannot pin Tester→Tester: an agent does not send to itself"
        noted = {r.role for r in scripted.requests if any("MCP-NOTE" in str(m.get("content")) for m in r.messages)}
        assert noted == {"Tester"}
        recorded = load_session(Path(status["session_file"])).steering
        assert [e.action for e in recorded] == ["note", "pin", "pin"]
        late = await refused(session, "swarm_steer", task_id=task_id, action="stop")
        assert late.endswith("swarm_steer: the swarm has ended (completed): stop was not taken")
        assert "no swarm task 'nope'" in await refused(session, "swarm_steer", task_id="nope", action="stop")

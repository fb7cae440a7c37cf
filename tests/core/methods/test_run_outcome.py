"""A method's run ends with a typed outcome: the reason is an EndReason, and the session file still stores
it as the plain string older sessions hold (so they load unchanged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.demo.server import ScriptedServer
from core.methods.catalogue import method_names
from core.runtime import events as ev
from core.runtime.outcome import EndReason
from core.sessions.model import session_from_events
from core.sessions.store import load_session, save_session
from tests.support.methods import run_method


@pytest.mark.parametrize("name", method_names())
async def test_every_method_ends_with_a_known_reason_stored_as_plain_text(
    name: str, demo_server: ScriptedServer, embedder: Any, tmp_path: Path
) -> None:
    finished, events = await run_method(demo_server, embedder, name, "math")

    assert isinstance(finished.reason, EndReason)
    assert finished.reason not in (EndReason.ERROR, EndReason.CANCELLED), finished.detail
    session = session_from_events([e for e in events if not isinstance(e, ev.AgentDelta)])
    path = save_session(session, tmp_path / "s.json")
    stored = [e for e in json.loads(path.read_text())["events"] if e["type"] == "run_finished"]
    assert stored == [{**stored[0], "reason": finished.reason.value}] and type(stored[0]["reason"]) is str
    loaded = load_session(path)
    assert loaded.outcome is not None and loaded.outcome.reason == finished.reason

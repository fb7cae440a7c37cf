"""DMoA's P_sys = (Profile, P_usr) (METHODS.md §2.3): by default each agent's system prompt holds the user's
query and the user message only the previous step's responses; ``-o query=user`` moves the query back
into the user message. Read from the requests the scripted server received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.methods.dmoa_events import CALL_STEP
from tests.test_dmoa import run_dmoa


def _parts(info: Any) -> tuple[str, str]:
    system = "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "system")
    user = "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "user")
    return system, user


@pytest.mark.parametrize(("query", "in_system"), [({}, True), ({"query": "user"}, False)])
async def test_the_query_travels_where_the_option_says(
    embedder: Any, tmp_path: Path, query: dict[str, str], in_system: bool
) -> None:
    problem = DEMO_PROBLEMS["math"]
    with ScriptedServer(demo_script) as server:
        finished, _, _ = await run_dmoa(server, embedder, tmp_path, options={"router": "semantic", **query})
        steps = [r for r in server.requests if r.call == CALL_STEP]
    assert finished.final_answer, "the run gave no answer"
    assert steps, "no agent call"
    for request in steps:
        system, user = _parts(request)
        assert (problem in system) is in_system, request.role
        assert (problem in user) is not in_system, request.role

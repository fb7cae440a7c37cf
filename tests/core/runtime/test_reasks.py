"""Each re-ask asks for the format its role must write, and says what was wrong."""

from __future__ import annotations

from typing import Any

from core.demo.scripts import demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.methods.topoweaver.method import ORCHESTRATOR_REPLY_FORMAT
from core.runtime.parsing import parse_descriptors, parse_manager, parse_work, parse_worker
from core.runtime.prompts import repair_request
from tests.support.engine import run_swarm


def test_each_parser_names_its_own_fields() -> None:
    assert "goal, terminate, reasoning and final_answer" in parse_manager.reply_format  # type: ignore[attr-defined]
    assert "query and key" in parse_descriptors.reply_format  # type: ignore[attr-defined]
    assert "public and private" in parse_work.reply_format  # type: ignore[attr-defined]
    assert "public, private, query and key" in parse_worker.reply_format  # type: ignore[attr-defined]
    assert "YAML" in ORCHESTRATOR_REPLY_FORMAT and "JSON" not in ORCHESTRATOR_REPLY_FORMAT
    text = repair_request("no YAML block found", ORCHESTRATOR_REPLY_FORMAT)
    assert text.startswith("Your previous reply could not be used: no YAML block found.") and "YAML" in text


async def test_a_manager_reask_names_the_managers_fields(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule("malformed", role="Manager", call="manager", times=1))
        await run_swarm(server, embedder)
        reasks = [r for r in server.requests if r.is_repair and r.role == "Manager"]
    assert reasks
    last = str(reasks[0].messages[-1]["content"])
    assert "goal, terminate, reasoning and final_answer" in last


async def test_a_cut_off_orchestrator_is_asked_for_yaml_not_json(embedder: Any) -> None:
    from core.runtime.config import Settings

    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule("truncated", role="Orchestrator", times=1))
        await run_swarm(server, embedder, settings=Settings(strategy="topoweaver"))
        reasks = [r for r in server.requests if r.is_repair and r.role == "Orchestrator"]
    assert reasks, "the cut-off plan was not asked for again"
    for request in reasks:
        last = str(request.messages[-1]["content"])
        assert "YAML" in last and "JSON" not in last

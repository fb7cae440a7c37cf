"""TopoWeaver-R1 runs and the orchestrator plans the tests script."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.demo.server import FaultRule, ScriptedServer
from core.methods.topoweaver.demo import topoweaver_script
from core.methods.topoweaver.prompts import CALL_AGENT, CALL_ORCHESTRATE
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.engine import SwarmEngine
from core.runtime.scripted import RequestInfo
from tests.support.engine import run_swarm


def yaml_block(body: str) -> str:
    return f"```yaml\n{body.strip()}\n```"


CHAIN = yaml_block("""
difficulty: introductory
steps:
  - step: 1
    agents: [{id: coder_1, type: coder, ref: []}]
  - step: 2
    agents: [{id: tester_1, type: tester, ref: [coder_1]}]
""")


LATER_STEP_REF = yaml_block("""
difficulty: interview
steps:
  - step: 1
    agents: [{id: planner_1, type: planner, ref: []}]
  - step: 2
    agents: [{id: coder_1, type: coder, ref: [planner_1, tester_1]}]
  - step: 3
    agents: [{id: tester_1, type: tester, ref: [coder_1]}]
""")


NO_TESTER_LAST = yaml_block("""
difficulty: interview
steps:
  - step: 1
    agents: [{id: planner_1, type: planner, ref: []}]
  - step: 2
    agents: [{id: coder_1, type: coder, ref: [planner_1]}]
""")


def script_with(
    plans: dict[int, str] | Callable[[int], str] | None = None,
    agents: Callable[[RequestInfo], str | None] | None = None,
) -> Callable[[RequestInfo], str]:
    """The demo's TopoWeaver script, with the orchestrator's replies per turn and agents' replies overridden."""

    def script(info: RequestInfo) -> str:
        if info.call == CALL_ORCHESTRATE and plans is not None:
            reply = plans(info.round) if callable(plans) else plans.get(info.round)
            if reply is not None:
                return reply
        if info.call == CALL_AGENT and agents is not None:
            reply = agents(info)
            if reply is not None:
                return reply
        return topoweaver_script(info)

    return script


async def run_tw(
    script: Callable[[RequestInfo], str],
    *,
    options: dict[str, Any] | None = None,
    domain: str = "code",
    problem: str | None = None,
    faults: list[FaultRule] | None = None,
    drive: Callable[[SwarmEngine, list[ev.Event]], Any] | None = None,
) -> tuple[ev.RunFinished, list[ev.Event], ScriptedServer]:
    settings = Settings(domain=domain, strategy="topoweaver", strategy_options={"topoweaver": options or {}},
                        max_retries=0)
    with ScriptedServer(script) as server:
        for rule in faults or []:
            server.add_fault(rule)
        finished, events, _ = await run_swarm(server, None, settings=settings, problem=problem, drive=drive,
                                              timeout=120)
    return finished, events, server

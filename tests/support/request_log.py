"""Request logs of a scripted run, by agent: does each request of an agent begin with its previous request
plus the reply kept for it (issue 46's growing conversations)?"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from core.compose.assembly import make_evaluator
from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import FaultRule, ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import RunControl
from core.runtime.engine import ForkPoint
from core.runtime.scripted import RequestInfo, Script


async def logged_run(embedder: Any, settings: Settings, script: Script, faults: tuple[FaultRule, ...] = (),
                     behaviour: ServerBehaviour | None = None,
                     fork: ForkPoint | None = None,
                     control: RunControl | None = None) -> tuple[list[RequestInfo], list[ev.Event]]:
    """A run against the scripted server (``behaviour``: e.g. a context it refuses past; ``fork``: the
    recorded run it continues; ``control``: e.g. steering queued before it starts; the code's tests run when
    the settings say so): the requests that named their call, and the events."""
    events: list[ev.Event] = []
    with ScriptedServer(script, behaviour or ServerBehaviour()) as server:
        for fault in faults:
            server.add_fault(fault)
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            engine = build_engine(DEMO_PROBLEMS[settings.domain], settings, backend, [events.append],
                                  embedder=embedder, fork=fork,
                                  evaluator=make_evaluator(settings), control=control)
            await asyncio.wait_for(engine.run(), timeout=120)  # a guard against hangs, not a speed test
        finally:
            await backend.close()
        return [r for r in server.requests if r.role], events


def by_agent(requests: list[RequestInfo]) -> dict[str, list[RequestInfo]]:
    """Each agent's requests in order, re-asks left out."""
    out: dict[str, list[RequestInfo]] = {}
    for r in requests:
        if not r.is_repair:
            out.setdefault(r.role, []).append(r)
    return out


def kept_replies(events: list[ev.Event]) -> dict[tuple[str, str, int], str]:
    """The reply each call ended with (its last attempt's text), by (agent, call, round)."""
    return {(e.agent, e.call, e.round): e.raw for e in events if isinstance(e, ev.AgentFinished) and e.raw}


def breaks(calls: list[RequestInfo], kept: dict[tuple[str, str, int], str]) -> list[RequestInfo]:
    """The requests that do not begin with the agent's previous request plus the reply kept for it."""
    broken = []
    for before, after in itertools.pairwise(calls):
        n = len(before.messages)
        reply = kept.get((before.role, before.call, before.round))
        if after.messages[:n] != before.messages or after.messages[n] != {"role": "assistant", "content": reply}:
            broken.append(after)
    return broken


def continues(request: RequestInfo, before: RequestInfo, reply: str) -> bool:
    """``request`` begins with ``before`` plus ``reply`` as its assistant turn, byte for byte."""
    n = len(before.messages)
    return request.messages[:n] == before.messages and request.messages[n:n + 1] == [
        {"role": "assistant", "content": reply}]

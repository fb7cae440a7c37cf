"""DyTopo eq. 3 by default: a worker's round t+1 prompt holds its whole memory, every own output and every
message routed to it in earlier rounds; ``-o memory=latest`` keeps only the newest message per teammate."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.demo.scripts import demo_script
from core.demo.server import RequestInfo, ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.events import CallKind
from tests.support.engine import of, run_swarm


def _marked(info: RequestInfo) -> str:
    """The demo's replies, each work reply's public text marked with its author and round."""
    reply = demo_script(info)
    if info.call == CallKind.WORK:
        data = json.loads(reply)
        data["public"] = f"WORK {info.role} r{info.round}"
        data["private"] = {}
        return json.dumps(data)
    return reply


async def _run(embedder: Any, options: dict[str, Any], strategy: str = "dytopo") -> tuple[list[ev.Event], list]:
    settings = Settings(max_rounds=3, context_budget_tokens=100_000, strategy=strategy,
                        strategy_options={strategy: options})
    with ScriptedServer(_marked) as server:
        finished, events, _ = await run_swarm(server, embedder, settings=settings)
        requests = list(server.requests)
    assert finished.reason in ("manager", "max_rounds")
    assert not of(events, ev.MemoryTrimmed), "the budget trimmed memory: the test must fit it"
    return events, requests


def _memory_due(events: list[ev.Event], worker: str, before_round: int) -> list[str]:
    """What eq. 3 puts in the worker's memory before ``before_round``: own outputs and messages routed in."""
    own = [f"WORK {worker} r{r}" for r in range(1, before_round)]
    routed = [
        d["content"] for m in of(events, ev.MessagesRouted) if m.round < before_round
        for d in m.deliveries if d["dst"] == worker
    ]
    return own + routed


@pytest.mark.parametrize("strategy", ["dytopo", "broadcast"])
async def test_work_prompts_hold_the_whole_accumulated_memory_by_default(embedder: Any, strategy: str) -> None:
    events, requests = await _run(embedder, {}, strategy)
    later = [r for r in requests if r.call == CallKind.WORK and r.round >= 2]
    assert later, "no round-2 work call"
    for request in later:
        # The whole request: in the default conversation the memory is the transcript (its own outputs are
        # its replies, JSON-escaped there), in the other orders the last user message.
        text = "\n".join(str(m["content"]) for m in request.messages)
        for item in _memory_due(events, request.role, request.round):
            assert item in text or json.dumps(item)[1:-1] in text, (request.role, request.round, item[:60])


async def test_memory_latest_drops_a_teammates_older_messages(embedder: Any) -> None:
    events, requests = await _run(embedder, {"memory": "latest"}, "broadcast")
    round3 = [r for r in requests if r.call == CallKind.WORK and r.round == 3]
    assert round3
    missing = 0
    for request in round3:
        text = request.messages[-1]["content"]
        assert f"WORK {request.role} r2" in text and f"WORK {request.role} r1" not in text  # own: newest only
        missing += sum(item not in text for item in _memory_due(events, request.role, 3))
    assert missing > 0, "memory=latest showed everything: it should keep only the newest per sender"

"""Issue 36: prompts that only grow. From the scripted server's request log: each worker prompt begins with
the same agent's previous prompt up to that prompt's round-specific tail, so a server's prefix cache
(llama.cpp slots, vLLM prefix caching) prefills what an agent already sent once; the paper order stays
available and sends the same text."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import pytest

from core.demo.requests import RequestInfo
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime.config import Settings
from core.runtime.events import CALL_DESCRIPTORS, CALL_SINGLE_PASS, CALL_WORK
from core.runtime.prompts import problem_digest
from tests.test_engine import run_swarm


def _changing(info: RequestInfo) -> str:
    """The demo, except that the Manager never halts before max_rounds and every reply names its round."""
    reply = demo_script(info)
    data = json.loads(reply)
    if info.call in ("plan", "manager"):
        data.update(terminate=False, final_answer="", goal=f"Goal of round {info.round + 1}.")
    elif isinstance(data.get("public"), str):
        data["public"] = f"{data['public']} [{info.role}, round {info.round}]"
    return json.dumps(data)


def _text(request: RequestInfo) -> str:
    """The messages as a chat template lays them out: one block per message, in order."""
    return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in request.messages)


async def _log(embedder: Any, protocol: str, **options: str) -> list[RequestInfo]:
    settings = Settings(max_rounds=3, protocol=protocol, convergence_threshold=1.01,
                        strategy_options={"dytopo": options} if options else {})
    with ScriptedServer(_changing) as server:
        finished, _, _ = await run_swarm(server, embedder, settings=settings)
        requests = [r for r in server.requests if r.role]
    assert finished.reason == "max_rounds", finished.detail
    return requests


def _calls(requests: list[RequestInfo], call: str) -> dict[str, list[RequestInfo]]:
    by_agent: dict[str, list[RequestInfo]] = {}
    for r in requests:
        if r.call == call:
            by_agent.setdefault(r.role, []).append(r)
    return by_agent


@pytest.mark.parametrize(("protocol", "call"), [("single-pass", CALL_SINGLE_PASS), ("phased", CALL_WORK)])
async def test_each_round_begins_with_the_agents_previous_prompt(embedder: Any, protocol: str, call: str) -> None:
    requests = await _log(embedder, protocol)
    by_agent = _calls(requests, call)
    assert len(by_agent) == 4 and all(len(calls) == 3 for calls in by_agent.values())
    for agent, calls in by_agent.items():
        for before, after in itertools.pairwise(calls):
            earlier, later = _text(before), _text(after)
            # Up to the round's own tail (its goal, inbox and ask): role, problem and the memory so far.
            stable = earlier[: earlier.index(f"ROUND {before.round} GOAL:")]
            assert later.startswith(stable), (agent, before.round)
            if before.round >= 2:  # round 1 has no memory yet
                assert "YOUR MEMORY" in stable, (agent, before.round)
        # What round 1 said and did is in round 3's prompt, before round 3's goal.
        last = _text(calls[-1])
        assert last.index(f"[{agent}, round 1]") < last.index("ROUND 3 GOAL:")


async def test_a_rounds_descriptor_and_work_calls_share_their_opening(embedder: Any) -> None:
    requests = await _log(embedder, "phased")
    work, descriptors = _calls(requests, CALL_WORK), _calls(requests, CALL_DESCRIPTORS)
    for agent, calls in descriptors.items():
        for described in calls:
            (worked,) = [w for w in work[agent] if w.round == described.round]
            a, b = _text(described), _text(worked)
            shared = a[: next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))]
            # The whole system prompt, and the problem up to where the descriptor call's digest cuts it.
            head = problem_digest(DEMO_PROBLEMS["code"]).split("\n[…")[0]
            assert worked.messages[0]["content"] in shared and f"PROBLEM:\n{head}" in shared, agent


@pytest.mark.parametrize("protocol", ["single-pass", "phased"])
async def test_the_paper_order_sends_the_same_text_in_another_order(embedder: Any, protocol: str) -> None:
    cache = await _log(embedder, protocol)
    paper = await _log(embedder, protocol, prompt_order="paper")

    def pieces(requests: list[RequestInfo]) -> Counter[tuple[str, str, int, str]]:
        """Each request's lines (blank lines aside), by agent, call and round: what it was told."""
        return Counter(
            (r.role, r.call, r.round, line)
            for r in requests
            for m in r.messages
            for line in str(m["content"]).splitlines()
            if line.strip()
        )

    assert pieces(cache) == pieces(paper)
    # ... and the order differs: in the paper's, the round's goal comes before the memory.
    late = [r for r in paper if r.call in (CALL_WORK, CALL_SINGLE_PASS) and r.round == 3]
    assert late and all(
        r.messages[-1]["content"].index("GOAL:") < r.messages[-1]["content"].index("YOUR MEMORY") for r in late
    )

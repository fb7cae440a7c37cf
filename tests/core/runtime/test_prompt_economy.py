"""Issue 16 and the paper's message flow: the first request never waits for MiniLM, prompts stay lean yet
carry every routed message and the problem, and single-pass runs route from round 1 with private messages."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import RequestInfo, ScriptedServer
from core.llm.embeddings import Embedder
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.events import CallKind
from core.runtime.memory import AgentMemory, MemoryItem, MemoryRule
from tests.support.engine import of, run_swarm


class GatedEmbedder(Embedder):
    """A MiniLM whose load waits until the test opens the gate: a deliberately slow start-up."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def load(self) -> None:
        self.gate.wait(timeout=60)
        super().load()


def test_the_first_request_leaves_before_minilm_has_loaded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import tui.cli.headless as headless

    slow = GatedEmbedder()
    seen: dict[str, bool] = {}

    def script(info: RequestInfo) -> str:
        if info.role and "first" not in seen:
            seen["first"] = slow.loaded  # the model is still loading when the Manager is first asked
            slow.gate.set()
        return demo_script(info)

    # The run's embedder comes from its plan (core.compose.plan, the one place one is made).
    monkeypatch.setattr("core.compose.plan.shared_embedder", lambda path=None, int8=False: slow)
    with ScriptedServer(script) as server:
        settings = Settings(max_rounds=2, base_url=server.base_url, sessions_dir=str(tmp_path))
        code = headless.run_headless("Complete the function.\n" + DEMO_PROBLEMS["code"], settings, demo=False,
                                     json_lines=False, save=None, expect=None)
    assert seen == {"first": False}
    assert code == 0 and slow.loaded  # round 2 routed: the load happened while the model was answering
    assert "graph:" in capsys.readouterr().err


async def test_phased_prompts_carry_the_problem_and_every_routed_message(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    # The per-request layout (a conversation sends each call kind's shape once, in its system prompt).
    settings = Settings(strategy_options={"dytopo": {"prompt_order": "cache"}})
    finished, events, _ = await run_swarm(demo_server, embedder, settings=settings)
    assert finished.reason == "manager"
    work = [r for r in demo_server.requests if r.call == CallKind.WORK]
    problem = DEMO_PROBLEMS["code"]
    assert work and all(problem in r.messages[-1]["content"] for r in work)
    deliveries = [(m.round, m.broadcast, d) for m in of(events, ev.MessagesRouted) for d in m.deliveries]
    for round_no, broadcast, d in deliveries:
        # Round 1's broadcast reaches round 2's prompts through memory; a routed message its own round's.
        shown_in = round_no + 1 if broadcast else round_no
        for request in [r for r in work if r.role == d["dst"] and r.round == shown_in]:
            text = request.messages[-1]["content"]
            newer = [
                x for r2, _, x in deliveries
                if r2 > round_no and r2 <= shown_in and (x["src"], x["dst"]) == (d["src"], d["dst"])
            ]
            # Every message is in the prompt, unless the same sender's newer message to it is there instead.
            assert d["content"] in text or any(x["content"] in text for x in newer), (d["src"], d["dst"])
    # Only the call's own reply shape is sent: a work call is never told the descriptor-only shape.
    def sent(r: RequestInfo) -> str:
        return "\n".join(str(m["content"]) for m in r.messages)

    assert all('"query"' not in sent(r) for r in work)
    descriptors = [r for r in demo_server.requests if r.call == CallKind.DESCRIPTORS]
    assert descriptors and all('"public"' not in sent(r) for r in descriptors)


def _private_notes(info: RequestInfo) -> str:
    """The demo's replies, with a private message for all on every worker reply."""
    reply = demo_script(info)
    if info.call == CallKind.SINGLE_PASS:
        data = json.loads(reply)
        data["private"] = {"all": f"PRIVATE from {info.role} r{info.round}"}
        data["public"] = f"PUBLIC from {info.role} r{info.round}: " + data["public"]
        return json.dumps(data)
    return reply


async def test_single_pass_routes_round_one_and_sends_only_private_messages(embedder: Any) -> None:
    with ScriptedServer(_private_notes) as server:
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(protocol="single-pass"))
        requests = list(server.requests)
    assert finished.reason == "manager"
    assert of(events, ev.TopologyBuilt, round=1), "the paper routes from round 1"
    assert not [m for m in of(events, ev.MessagesRouted) if m.broadcast]
    deliveries = [d for m in of(events, ev.MessagesRouted, round=1) for d in m.deliveries]
    assert deliveries
    for d in deliveries:
        assert d["content"] == f"PRIVATE from {d['src']} r1"
        (nxt,) = [r for r in requests if r.role == d["dst"] and r.round == 2 and r.call == CallKind.SINGLE_PASS]
        text = nxt.messages[-1]["content"]
        assert d["content"] in text and f"PUBLIC from {d['src']} r1" not in text
    manager = [r for r in requests if r.role == "Manager" and r.round == 1 and r.call == "manager"]
    assert manager and "PUBLIC from Developer r1" in manager[0].messages[-1]["content"]  # public goes up


async def test_the_reference_payload_can_be_chosen_for_single_pass(embedder: Any) -> None:
    settings = Settings(protocol="single-pass", strategy_options={"dytopo": {"payload": "private+public"}})
    with ScriptedServer(_private_notes) as server:
        _, events, _ = await run_swarm(server, embedder, settings=settings)
    d = next(d for m in of(events, ev.MessagesRouted, round=1) for d in m.deliveries)
    assert "PRIVATE from" in d["content"] and "PUBLIC from" in d["content"]


def test_memory_latest_shows_the_newest_message_of_each_sender() -> None:
    memory = AgentMemory(rule=MemoryRule.LATEST)
    memory.add(MemoryItem(1, "own", "Tester", "draft tests"))
    memory.add(MemoryItem(1, "broadcast", "Developer", "draft code"))
    memory.add(MemoryItem(1, "broadcast", "Researcher", "analysis"))
    memory.add(MemoryItem(2, "own", "Tester", "final tests"))
    memory.add(MemoryItem(2, "routed", "Developer", "fixed code", 0.8))
    text, dropped, _ = memory.render(10_000)
    assert dropped == 0
    assert "draft" not in text and "final tests" in text and "fixed code" in text and "analysis" in text
    recent, _, _ = memory.render(10_000, since_round=2)
    assert "analysis" not in recent and "fixed code" in recent
    inbox_newer, _, _ = memory.render(10_000, newer_from=frozenset({"Developer"}))
    assert "fixed code" not in inbox_newer and "analysis" in inbox_newer
    assert len(memory.items) == 5  # nothing is lost from the record


def test_memory_accumulates_by_default_as_eq_3() -> None:
    memory = AgentMemory()
    memory.add(MemoryItem(1, "own", "Tester", "draft tests"))
    memory.add(MemoryItem(1, "broadcast", "Developer", "draft code"))
    memory.add(MemoryItem(2, "own", "Tester", "final tests"))
    memory.add(MemoryItem(2, "routed", "Developer", "fixed code", 0.8))
    text, dropped, _ = memory.render(10_000, newer_from=frozenset({"Developer"}))
    assert dropped == 0
    for part in ("draft tests", "draft code", "final tests", "fixed code"):
        assert part in text
    trimmed, dropped, _ = memory.render(20)  # the budget trim still drops the oldest first
    assert dropped >= 1 and "fixed code" in trimmed and "draft tests" not in trimmed

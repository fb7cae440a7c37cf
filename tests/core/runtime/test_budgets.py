"""Bounded runs: --time-budget and --max-calls end a run with reason "budget", keep every finished call and
send nothing past the bound; --max-tokens caps every call kind."""

from __future__ import annotations

from typing import Any

import pytest

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.runtime import events as ev
from core.runtime.config import ConfigError, Settings
from core.runtime.scripted import estimate_tokens
from tests.support.engine import of, run_swarm


@pytest.mark.parametrize("strategy", ["dytopo", "dmoa"])
async def test_a_time_budget_ends_the_run_with_reason_budget(embedder: Any, strategy: str) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(latency=0.4)) as server:
        settings = Settings(strategy=strategy, time_budget=1.0)
        finished, events, _ = await run_swarm(server, embedder, settings=settings)
        sent = len(server.requests)
    assert finished.reason == "budget" and "time budget of 1 s" in finished.detail
    done = of(events, ev.AgentFinished)
    assert done, "the calls that finished before the budget are in the record"
    assert len(done) <= sent  # a call cut off in flight is not recorded as finished
    assert events[-1] is finished


async def test_calls_cut_off_by_the_time_budget_still_count_their_tokens(embedder: Any) -> None:
    # Every work call streams one piece of its reply, then stalls: the budget cuts them off in flight.
    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule("stall", call="work", times=0))
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(time_budget=1.0))
        requests = [r for r in server.requests if r.call]
    cut = [r for r in requests if r.call == "work"]
    assert finished.reason == "budget" and cut, "the work calls were in flight when the budget ended the run"
    done = of(events, ev.AgentFinished)
    assert {e.call for e in done} == {"plan"}  # a cut-off call never finishes
    # Every prompt the server was sent is counted, the cut-off ones by the same estimate as the server's.
    sent_prompts = sum(estimate_tokens("".join(m["content"] for m in r.messages)) for r in requests)
    assert finished.prompt_tokens == sent_prompts
    assert finished.completion_tokens > sum(e.completion_tokens for e in done)  # the pieces streamed so far
    finished_tokens = sum(e.prompt_tokens + e.completion_tokens for e in done)
    assert finished.tokens_estimated == finished.prompt_tokens + finished.completion_tokens - finished_tokens > 0
    noted = [e for e in of(events, ev.Notice) if "cut off in flight" in e.message]
    assert len(noted) == len(cut) and all("(estimated) are counted" in e.message for e in noted)


def test_a_session_without_estimated_tokens_keeps_its_old_form() -> None:
    old = {"type": "run_finished", "ts": 1.0, "reason": "budget", "detail": "", "final_answer": "", "answer_source": "",
           "rounds": 1, "prompt_tokens": 10, "completion_tokens": 5, "solved": None}
    event = ev.event_from_dict(old)
    assert isinstance(event, ev.RunFinished) and event.tokens_estimated == 0 and event.to_dict() == old


async def test_max_calls_sends_no_call_past_the_bound(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_calls=3))
        chat_requests = [r for r in server.requests if r.call]
    assert finished.reason == "budget" and "3 model calls" in finished.detail
    assert len(chat_requests) == 3 and len(of(events, ev.AgentFinished)) == 3


async def test_max_tokens_caps_every_call_kind(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        await run_swarm(server, embedder, settings=Settings(max_tokens=64, max_rounds=2))
        asked = {r.call: r.body["max_tokens"] for r in server.requests if r.call}
    assert asked and max(asked.values()) == 64 and {"plan", "descriptors", "work", "manager"} <= set(asked)


@pytest.mark.parametrize(("field", "value"), [("time_budget", 0.0), ("max_calls", 0), ("max_tokens", 0)])
def test_bad_bounds_are_refused(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        Settings(**{field: value}).validate()

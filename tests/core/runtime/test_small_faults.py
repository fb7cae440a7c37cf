"""Faults stay small: one agent's failed call fails its turn, not the run; a stream that never ends or only
trickles is cut off at its bound; a busy server's 429s, with or without Retry-After, are waited out. The real
openai client against the scripted server's fault injection (core.demo.server), real MiniLM."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from core.demo.scripts import demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.runtime import events as ev
from core.runtime.config import CallLimits, Settings
from tests.support.engine import of, run_swarm


def notices(events: list[ev.Event], agent: str) -> list[str]:
    return [n.message for n in of(events, ev.Notice, agent=agent)]


# --- one failed call fails one turn ---------------------------------------------------------------------------


async def test_a_reset_in_a_one_agent_tier_fails_that_turn_and_the_run_ends_normally(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        # Every attempt of the Tester's round-2 work call is reset: it fails after the client's retries.
        server.add_fault(FaultRule("reset", role="Tester", call=ev.CallKind.WORK, round=2, times=0))
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=3))
    tiers: dict[int | None, list[str]] = defaultdict(list)
    for started in of(events, ev.AgentStarted, round=2, call=ev.CallKind.WORK):
        if started.agent not in tiers[started.tier]:
            tiers[started.tier].append(started.agent)
    assert ["Tester"] in tiers.values()  # the Tester was alone in its tier: the whole phase failed
    (tester,) = of(events, ev.AgentFinished, round=2, agent="Tester", call=ev.CallKind.WORK)
    assert tester.status == "failed" and "reset or dropped" in tester.error
    assert finished.reason != "error", finished.detail
    assert finished.rounds >= 2 and of(events, ev.RoundFinished, round=2)
    said = [m for m in notices(events, "Tester") if "call failed" in m]
    assert said and "its turn is marked failed and the run goes on (1 of 10 failures in a row allowed)" in said[0]


# --- a stream is bounded by what the call asked for -----------------------------------------------------------


async def test_a_stream_that_never_ends_is_cut_off_past_max_tokens_with_a_notice(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule("endless", role="Tester", call=ev.CallKind.WORK, round=1))
        settings = Settings(max_rounds=1, work_call=CallLimits(0.3, 300))
        finished, events, _ = await run_swarm(server, embedder, settings=settings)
    cut = [m for m in notices(events, "Tester") if "kept streaming past max_tokens" in m]
    assert cut == [m for m in cut if m.startswith("Tester: the server kept streaming past max_tokens (300): cut off")]
    assert len(cut) == 1
    # Taken as cut off at max_tokens (the existing path): asked once more, and that reply is used.
    assert any("cut off at max_tokens" in m and "asking again" in m for m in notices(events, "Tester"))
    (tester,) = of(events, ev.AgentFinished, round=1, agent="Tester", call=ev.CallKind.WORK)
    assert tester.status == "done" and "and so on" not in tester.raw
    assert finished.reason != "error"


async def test_a_trickling_stream_ends_at_its_wall_bound_with_a_clear_message(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        # After its reply the Tester's stream goes on, a chunk every half second, for ever.
        server.add_fault(FaultRule("endless", role="Tester", call=ev.CallKind.WORK, round=1, interval=0.5))
        # Bound: 400 tokens at 200 a second, plus one call_timeout (1 s) for the first token: 3 s.
        settings = Settings(max_rounds=1, work_call=CallLimits(0.3, 400), min_tokens_per_second=200.0,
                            call_timeout=1.0)
        finished, events, _ = await run_swarm(server, embedder, settings=settings)
    slow = [m for m in notices(events, "Tester") if "slower than min_tokens_per_second" in m]
    assert len(slow) == 1 and "cut off after 3 s" in slow[0] and "as if at max_tokens (400)" in slow[0]
    (tester,) = of(events, ev.AgentFinished, round=1, agent="Tester", call=ev.CallKind.WORK)
    assert tester.status == "done"
    assert finished.reason != "error"


# --- a busy server ---------------------------------------------------------------------------------------


async def test_three_429s_without_retry_after_are_backed_off_and_the_call_succeeds(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule("http_429", role="Designer", call=ev.CallKind.WORK, round=1, times=3,
                                   send_retry_after=False))
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=1, max_retry_wait=20))
    (designer,) = of(events, ev.AgentFinished, round=1, agent="Designer", call=ev.CallKind.WORK)
    assert designer.status == "done" and designer.attempts == 4
    waits = [m for m in notices(events, "Designer") if "(no Retry-After), retrying in" in m]
    assert len(waits) == 3 and all("of the 20 s max_retry_wait" in m for m in waits)
    assert finished.reason != "error"


async def test_429s_that_name_their_wait_are_waited_out_past_max_retries_within_max_retry_wait(
    embedder: Any,
) -> None:
    """A server that answers "429, Retry-After: 1" three times, then serves: more attempts than max_retries
    (2), 3 s of the 60 s max_retry_wait, and the call succeeds (it used to end the run after 3 attempts)."""
    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule("http_429", role="Designer", call=ev.CallKind.WORK, round=1, times=3, retry_after=1))
        settings = Settings(max_rounds=1, max_retries=2, max_retry_wait=60)
        finished, events, _ = await run_swarm(server, embedder, settings=settings)
    (designer,) = of(events, ev.AgentFinished, round=1, agent="Designer", call=ev.CallKind.WORK)
    assert designer.status == "done" and designer.attempts == 4
    waits = [m for m in notices(events, "Designer") if "rate limited by" in m]
    assert len(waits) == 3 and all(m.endswith("retrying in 1 s") for m in waits)
    assert finished.reason != "error"


async def test_429s_past_max_retry_wait_fail_the_call_saying_how_long_it_waited(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule("http_429", role="Designer", call=ev.CallKind.WORK, round=1, times=0,
                                   send_retry_after=False))
        url = server.base_url
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=1, max_retry_wait=1.0))
    (designer,) = of(events, ev.AgentFinished, round=1, agent="Designer", call=ev.CallKind.WORK)
    assert designer.status == "failed"
    assert "s of backing off, more than max_retry_wait allows (1 s a call)" in designer.error
    assert f"rate limited by {url}: still refused after " in designer.error
    assert finished.reason != "error"  # the others were served: the endpoint is up, the run goes on

"""The round engine end to end: the real openai client, the scripted server over real HTTP, real MiniLM."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import FaultRule, RequestInfo, ScriptedServer
from core.routing.dytopo import RoutingResult, route_from_similarity
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import ControlMode, Params, RunControl
from core.runtime.engine import SwarmEngine
from core.runtime.rosters import builtin_team
from tests.support.engine import of, run_swarm, wait_until

# --- both protocols -------------------------------------------------------------------------------


async def test_phased_code_run_routes_round_two_along_the_graph(demo_server: ScriptedServer, embedder: Any) -> None:
    finished, events, _ = await run_swarm(demo_server, embedder)

    assert isinstance(events[0], ev.RunStarted) and events[-1] is finished
    assert finished.reason == "manager" and finished.answer_source == "manager"
    assert "def make_palindrome" in finished.final_answer
    # Round 1 is a broadcast to everyone.
    broadcast = of(events, ev.MessagesRouted, round=1)
    assert len(broadcast) == 1 and broadcast[0].broadcast
    assert {(d["src"], d["dst"]) for d in broadcast[0].deliveries} == {
        (a, b) for a in builtin_team("code").worker_names for b in builtin_team("code").worker_names if a != b
    }
    # Round 2: descriptors, then the graph, then messages only along kept edges, tier by tier.
    (topology,) = of(events, ev.TopologyBuilt, round=2)
    routing = RoutingResult.from_dict(topology.routing)
    kept = {(e.src, e.dst) for e in routing.edges}
    routed = [(d["src"], d["dst"]) for m in of(events, ev.MessagesRouted, round=2) for d in m.deliveries]
    assert routed and set(routed) <= kept
    index = {id(e): i for i, e in enumerate(events)}
    assert index[id(of(events, ev.DescriptorsReady, round=2)[0])] < index[id(topology)]
    work_started = {e.agent: index[id(e)] for e in of(events, ev.AgentStarted, round=2, call=ev.CallKind.WORK)}
    work_finished = {e.agent: index[id(e)] for e in of(events, ev.AgentFinished, round=2, call=ev.CallKind.WORK)}
    for earlier, later in zip(routing.tiers, routing.tiers[1:], strict=False):
        assert max(work_finished[a] for a in earlier) < min(work_started[b] for b in later)
    # The routed content reached the recipient's prompt in the same round.
    for src, dst in routed:
        prompts = [r for r in demo_server.requests if r.role == dst and r.round == 2 and r.call == ev.CallKind.WORK]
        assert f"[from {src}, relevance" in prompts[0].messages[-1]["content"]


async def test_calls_use_the_reference_temperatures_and_token_limits(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    await run_swarm(demo_server, embedder)
    seen = {(r.call, r.body["temperature"], r.body["max_tokens"]) for r in demo_server.requests}
    assert seen == {
        (ev.CallKind.PLAN, 0.1, 2000),
        (ev.CallKind.MANAGER, 0.1, 2000),
        (ev.CallKind.WORK, 0.3, 4096),
        (ev.CallKind.DESCRIPTORS, 0.1, 256),
    }
    # Structured output: each call names its contract's JSON schema (the scripted server accepts it).
    names = {
        ev.CallKind.PLAN: "manager_decision",
        ev.CallKind.MANAGER: "manager_decision",
        ev.CallKind.WORK: "work_reply",
        ev.CallKind.DESCRIPTORS: "descriptors",
    }
    for r in demo_server.requests:
        response_format = r.body.get("response_format")
        assert response_format["type"] == "json_schema", response_format
        assert response_format["json_schema"]["name"] == names[r.call]
    assert all(r.body.get("stream") for r in demo_server.requests)


async def test_single_pass_routes_messages_into_next_round_memory_strongest_first(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    settings = Settings(protocol="single-pass", tau=0.2)
    finished, events, _ = await run_swarm(demo_server, embedder, settings=settings)

    assert finished.reason == "manager"
    assert not any(r.call == ev.CallKind.DESCRIPTORS for r in demo_server.requests)
    assert {r.call for r in demo_server.requests if r.role != "Manager"} == {ev.CallKind.SINGLE_PASS}
    (routed,) = of(events, ev.MessagesRouted, round=2)
    by_recipient: dict[str, list[float]] = {}
    for d in routed.deliveries:
        by_recipient.setdefault(d["dst"], []).append(d["score"])
    assert by_recipient, "expected some routed messages at tau 0.2"
    for scores in by_recipient.values():
        assert scores == sorted(scores, reverse=True)
    # Routed messages show up in the recipients' round-3 prompts, not in round 2's.
    dst, first = routed.deliveries[0]["dst"], routed.deliveries[0]["src"]
    round3 = [r for r in demo_server.requests if r.role == dst and r.round == 3]
    assert round3 and f"[round 2, from {first} (relevance" in round3[0].messages[-1]["content"]


async def test_math_run_ends_with_the_solver_answer(demo_server: ScriptedServer, embedder: Any) -> None:
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(domain="math", k_in=2))
    assert finished.reason == "manager"
    assert "14" in finished.final_answer and "3" in finished.final_answer
    assert {e.agent for e in of(events, ev.AgentFinished)} == {"Manager", "ProblemParser", "Solver", "Verifier"}


# --- faults ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fenced", "think", "repairable"])
async def test_wrapped_or_repairable_json_is_parsed_without_asking_again(
    demo_server: ScriptedServer, embedder: Any, kind: str
) -> None:
    demo_server.add_fault(FaultRule(kind, role="Tester", call=ev.CallKind.WORK, round=1))
    finished, events, _ = await run_swarm(demo_server, embedder)
    (tester,) = of(events, ev.AgentFinished, round=1, agent="Tester")
    assert tester.status == "done" and tester.attempts == 1 and tester.query
    assert finished.reason == "manager"


@pytest.mark.parametrize("kind", ["malformed", "missing_fields"])
async def test_bad_reply_is_asked_for_again_once(demo_server: ScriptedServer, embedder: Any, kind: str) -> None:
    demo_server.add_fault(FaultRule(kind, role="Developer", call=ev.CallKind.DESCRIPTORS, round=2))
    finished, events, _ = await run_swarm(demo_server, embedder)
    (developer,) = of(events, ev.AgentFinished, round=2, agent="Developer", call=ev.CallKind.DESCRIPTORS)
    assert developer.status == "done" and developer.attempts == 2
    repairs = [r for r in demo_server.requests if r.role == "Developer" and r.round == 2 and r.is_repair]
    assert len(repairs) == 1 and "could not be used" in repairs[0].messages[-1]["content"]
    assert finished.reason == "manager"


async def test_reply_bad_twice_is_kept_raw_with_role_descriptors(demo_server: ScriptedServer, embedder: Any) -> None:
    demo_server.add_fault(FaultRule("malformed", role="Researcher", call=ev.CallKind.WORK, round=1, times=2))
    finished, events, _ = await run_swarm(demo_server, embedder)
    (researcher,) = of(events, ev.AgentFinished, round=1, agent="Researcher")
    role = builtin_team("code").role("Researcher")
    assert researcher.status == "unparsed"
    assert researcher.raw and researcher.public == researcher.raw.strip()
    assert (researcher.query, researcher.key) == (role.default_query, role.default_key)
    assert any("Researcher" in n.message for n in of(events, ev.Notice))
    assert finished.reason == "manager"  # the round went on


@pytest.mark.parametrize("kind", ["http_429", "http_500"])
async def test_server_errors_are_retried_by_the_sdk(demo_server: ScriptedServer, embedder: Any, kind: str) -> None:
    demo_server.add_fault(FaultRule(kind, role="Designer", call=ev.CallKind.WORK, round=1))
    finished, events, _ = await run_swarm(demo_server, embedder)
    (designer,) = of(events, ev.AgentFinished, round=1, agent="Designer")
    assert designer.status == "done"
    assert len([r for r in demo_server.requests if r.role == "Designer" and r.round == 1]) == 2
    assert finished.reason == "manager"


@pytest.mark.parametrize("kind", ["stall", "drop"])
async def test_stalled_or_dropped_stream_is_retried_once(embedder: Any, kind: str) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(stall_seconds=30)) as server:
        server.add_fault(FaultRule(kind, role="Tester", call=ev.CallKind.WORK, round=1))
        settings = Settings(call_timeout=1.0)
        finished, events, _ = await run_swarm(server, embedder, settings=settings)
    (tester,) = of(events, ev.AgentFinished, round=1, agent="Tester")
    assert tester.status == "done" and tester.attempts == 2
    assert any("retrying" in n.message for n in of(events, ev.Notice, agent="Tester"))
    assert finished.reason == "manager"


async def test_server_without_json_mode_falls_back(demo_server: ScriptedServer, embedder: Any) -> None:
    demo_server.add_fault(FaultRule("reject_response_format", times=0))
    finished, _, engine = await run_swarm(demo_server, embedder)
    assert finished.reason == "manager"
    assert engine.llm.json_mode_supported is False
    later = demo_server.requests[2:]
    assert later and all("response_format" not in r.body for r in later)


async def test_usage_is_estimated_and_marked_when_the_server_sends_none(embedder: Any) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(usage=False)) as server:
        _, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=1))
    finished = of(events, ev.AgentFinished)
    assert finished and all(e.usage_estimated and e.completion_tokens > 0 for e in finished)


async def test_unreachable_endpoint_fails_with_one_line_naming_the_url() -> None:
    import socket

    from core.llm.client import EndpointError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(EndpointError) as info:
        await open_backend(Settings(base_url=url, max_retries=0))
    message = str(info.value)
    assert url in message and "--demo" in message and "\n" not in message


async def test_a_model_the_server_does_not_serve_ends_the_run_with_one_line(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    demo_server.add_fault(FaultRule("http_404", times=0))
    finished, _, _ = await run_swarm(demo_server, embedder, settings=Settings(model="no-such-model"))
    assert finished.reason == "error"
    assert "404" in finished.detail and "--model" in finished.detail and "\n" not in finished.detail
    assert len(demo_server.requests) == 1  # the plan call: nothing after an error no call can get past


async def test_every_worker_failing_every_round_never_fakes_convergence(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    # The server is up (the Manager and the descriptors are answered): failed turns go on, round after round,
    # but empty outputs that stay empty are not "outputs stopped changing".
    demo_server.add_fault(FaultRule("http_500", call=ev.CallKind.WORK, times=0))
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_retries=0, max_rounds=3))
    assert finished.reason != "converged"
    work = of(events, ev.AgentFinished, call=ev.CallKind.WORK)
    assert work and all(e.status == "failed" for e in work)
    assert all(r.convergence is None for r in of(events, ev.RoundFinished))


async def test_too_many_failed_calls_in_a_row_end_the_run_with_the_count_and_the_last_error(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    demo_server.add_fault(FaultRule("http_500", call=ev.CallKind.WORK, times=0))
    settings = Settings(max_retries=0, max_failed_calls_in_a_row=3)
    finished, events, _ = await run_swarm(demo_server, embedder, settings=settings)
    assert finished.reason == "error"
    assert finished.detail.startswith("3 model calls in a row failed (max_failed_calls_in_a_row is 3); the last: ")
    assert "status 500" in finished.detail
    assert not of(events, ev.RoundFinished)


async def test_an_api_key_echoed_by_the_server_is_never_recorded(
    demo_server: ScriptedServer, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("SWARM_TEST_KEY", secret)
    demo_server.add_fault(FaultRule("http_403", role="Tester", call=ev.CallKind.WORK, round=1))
    settings = Settings(base_url=demo_server.base_url, api_key_env="SWARM_TEST_KEY", max_rounds=1)
    _, events, _ = await run_swarm(None, embedder, settings=settings)  # the real key path, not the demo placeholder
    (tester,) = of(events, ev.AgentFinished, round=1, agent="Tester")
    assert tester.status == "failed" and "***" in tester.error
    assert secret not in json.dumps([e.to_dict() for e in events])


async def test_secrets_in_the_endpoint_url_never_reach_the_event_stream(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    import json

    url = demo_server.base_url.replace("http://", "http://user:URLPASSWORD@")
    demo_server.add_fault(FaultRule("http_404", role="Tester", call=ev.CallKind.WORK, round=1))
    settings = Settings(base_url=url, max_rounds=1)
    _, events, _ = await run_swarm(None, embedder, settings=settings)
    assert of(events, ev.AgentFinished, agent="Tester")[0].status == "failed"  # its error names the URL
    text = json.dumps([e.to_dict() for e in events])
    assert "URLPASSWORD" not in text
    assert events[0].base_url == demo_server.base_url


# --- control --------------------------------------------------------------------------------------


async def test_step_mode_waits_at_each_phase_and_cancel_ends_cleanly(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
        await wait_until(lambda: engine.control.waiting)
        assert not of(events, ev.RoundStarted)  # waiting before round 1
        engine.control.step_phase()
        await wait_until(lambda: engine.control.waiting and bool(of(events, ev.ManagerDecided)))
        assert [e.phase for e in of(events, ev.PhaseStarted)] == [ev.Phase.PLAN]
        engine.control.step_phase()
        await wait_until(lambda: engine.control.waiting and len(of(events, ev.PhaseStarted)) == 2)
        assert len(of(events, ev.AgentFinished, round=1)) == 5  # plan + four workers
        engine.control.cancel()

    finished, events, _ = await run_swarm(demo_server, embedder, step=True, drive=drive)
    assert finished.reason == "cancelled"
    assert not of(events, ev.PhaseStarted, phase=ev.Phase.MANAGER)
    assert {t for t in asyncio.all_tasks() if not t.done()} == {asyncio.current_task()}


async def test_a_cancel_after_the_run_ended_leaves_the_caller_alone(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    # Headless awaits engine.run() in its own task and then closes the backend, saves, checks --expect:
    # a Ctrl-C in that window must not cancel the caller (a CancelledError traceback).
    settings = Settings(max_rounds=1)
    backend = await open_backend(settings, BackendChoice(server=demo_server))
    try:
        engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [], embedder=embedder)
        finished = await engine.run()
        engine.control.cancel()
        await asyncio.sleep(0)
    finally:
        await backend.close()
    assert finished.reason != "cancelled"
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_step_round_runs_to_the_next_round_start(demo_server: ScriptedServer, embedder: Any) -> None:
    async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
        await wait_until(lambda: engine.control.waiting)
        engine.control.step_round()
        await wait_until(lambda: engine.control.waiting and bool(of(events, ev.RoundFinished)))
        assert len(of(events, ev.RoundFinished)) == 1 and not of(events, ev.RoundStarted, round=2)
        engine.control.resume()

    finished, _, _ = await run_swarm(demo_server, embedder, step=True, drive=drive)
    assert finished.reason == "manager"


async def test_cancel_while_calls_stream_leaves_no_tasks(embedder: Any) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(chunk_delay=0.05)) as server:

        async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
            await wait_until(lambda: bool(of(events, ev.AgentDelta, round=1, call=ev.CallKind.WORK)))
            engine.control.cancel()

        finished, _, _ = await run_swarm(server, embedder, drive=drive)
    assert finished.reason == "cancelled" and finished.rounds == 1
    assert {t for t in asyncio.all_tasks() if not t.done()} == {asyncio.current_task()}


async def test_tau_change_mid_run_reroutes_before_phase_c(demo_server: ScriptedServer, embedder: Any) -> None:
    async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
        await wait_until(lambda: engine.control.waiting)
        engine.control.step_round()  # round 1
        await wait_until(lambda: engine.control.waiting and bool(of(events, ev.RoundFinished)))
        for _ in range(2):  # past the round start and the descriptors: stop after routing
            engine.control.step_phase()
            await wait_until(lambda: engine.control.waiting and not engine.control._pass_current)
        assert of(events, ev.TopologyBuilt, round=2) and not of(events, ev.AgentStarted, round=2, call=ev.CallKind.WORK)
        engine.control.set_params(tau=0.6)
        assert engine.control.reroute_now()
        engine.control.resume()

    finished, events, _ = await run_swarm(demo_server, embedder, step=True, drive=drive)
    (changed,) = of(events, ev.ParamsChanged)
    assert changed.changed == ["tau"] and changed.params["tau"] == 0.6
    first, second = of(events, ev.TopologyBuilt, round=2)
    assert second.rerouted and second.routing["tau"] == 0.6
    expected = route_from_similarity(first.routing["names"], first.routing["similarity"], 0.6, 3)
    assert RoutingResult.from_dict(second.routing).edges == expected.edges
    routed = {(d["src"], d["dst"]) for m in of(events, ev.MessagesRouted, round=2) for d in m.deliveries}
    assert routed <= {(e.src, e.dst) for e in expected.edges}
    assert finished.reason == "manager"


async def test_parameter_change_applies_at_next_routing(demo_server: ScriptedServer, embedder: Any) -> None:
    async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
        await wait_until(lambda: bool(of(events, ev.RoundStarted, round=1)))
        engine.control.set_params(k_in=1)

    _, events, _ = await run_swarm(demo_server, embedder, drive=drive)
    for topology in of(events, ev.TopologyBuilt):
        routing = RoutingResult.from_dict(topology.routing)
        assert routing.k_in == 1
        assert all(len(routing.in_edges(name)) <= 1 for name in routing.names)


def test_control_clamps_parameters_to_their_ranges() -> None:
    control = RunControl(Params(0.3, 3, 5), n_workers=4, mode=ControlMode.STEP)
    assert control.set_params(tau=1.4, k_in=9, max_rounds=0) == Params(1.0, 3, 1)
    assert control.set_params(tau=-0.2, k_in=0, max_rounds=42) == Params(0.0, 1, 10)


# --- termination and memory ------------------------------------------------------------------------


def _never_terminates(info: RequestInfo) -> str:
    """Workers say the same thing every round; the Manager always wants another round."""
    import json

    if info.role == "Manager":
        return json.dumps(
            {"goal": "Keep refining.", "terminate": False, "reasoning": "Not sure yet.", "final_answer": ""}
        )
    if info.call == ev.CallKind.DESCRIPTORS:
        return json.dumps({"query": "I need the implementation.", "key": f"I provide {info.role} notes."})
    return json.dumps(
        {
            "public": f"{info.role}: the same steady answer.\n```python\nanswer = 42\n```",
            "private": {},
            "query": "I need code.",
            "key": "I give notes.",
        }
    )


async def test_run_ends_when_outputs_converge(embedder: Any) -> None:
    with ScriptedServer(_never_terminates) as server:
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=5))
    assert finished.reason == "converged" and finished.rounds == 2
    assert of(events, ev.RoundFinished, round=2)[0].convergence == 1.0
    assert finished.final_answer and finished.answer_source == "extracted:Developer"


async def test_run_ends_at_max_rounds_with_an_extracted_answer(embedder: Any) -> None:
    with ScriptedServer(_never_terminates) as server:
        finished, _, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=1))
    assert finished.reason == "max_rounds" and finished.rounds == 1
    assert finished.final_answer == "```python\nanswer = 42\n```"  # the answer role's code, extracted


async def test_memory_stays_within_budget_and_drops_are_recorded(demo_server: ScriptedServer, embedder: Any) -> None:
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(context_budget_tokens=900))
    trimmed = of(events, ev.MemoryTrimmed)
    assert trimmed and all(t.dropped >= 1 and t.dropped_tokens > 0 for t in trimmed)
    assert finished.reason == "manager"


async def test_sampling_extras_and_no_think_reach_the_server(demo_server: ScriptedServer, embedder: Any) -> None:
    settings = Settings(top_p=0.85, top_k=20, min_p=0.05, no_think=True, max_rounds=2)
    await run_swarm(demo_server, embedder, settings=settings)
    assert all((r.body["top_p"], r.body["top_k"], r.body["min_p"]) == (0.85, 20, 0.05) for r in demo_server.requests)
    descriptor_calls = [r for r in demo_server.requests if r.call == ev.CallKind.DESCRIPTORS]
    assert descriptor_calls and all(r.messages[-1]["content"].endswith("/no_think") for r in descriptor_calls)
    assert not any(
        r.messages[-1]["content"].endswith("/no_think") for r in demo_server.requests if r.call == ev.CallKind.WORK
    )


async def test_reroute_now_explains_why_it_cannot_apply_yet(demo_server: ScriptedServer, embedder: Any) -> None:
    async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
        await wait_until(lambda: engine.control.waiting)
        assert not engine.control.reroute_now()  # before round 1: a broadcast round, no graph
        engine.control.step_round()
        await wait_until(lambda: engine.control.waiting and bool(of(events, ev.RoundFinished)))
        engine.control.step_phase()  # into round 2, stops after phase A: no graph yet
        await wait_until(lambda: engine.control.waiting and bool(of(events, ev.DescriptorsReady)))
        assert not engine.control.reroute_now()
        engine.control.resume()

    _, events, _ = await run_swarm(demo_server, embedder, step=True, drive=drive)
    messages = [n.message for n in of(events, ev.Notice, severity="info")]
    assert any("round 1 is a broadcast" in m for m in messages)
    assert any("graph is not built yet" in m for m in messages)

"""Steering DyTopo's rounds, read off the scripted server's request log: what each action changes in the
requests the team sends (docs/steering.md)."""

from __future__ import annotations

from typing import Any

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import RequestInfo, ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.engine import SwarmEngine
from core.runtime.steering import SteerAction
from core.runtime.steering import SteerKind as K
from tests.support.engine import of, run_swarm, wait_until

WORKERS = ("Developer", "Researcher", "Tester", "Designer")


def _says(request: RequestInfo, text: str) -> bool:
    return any(text in str(m.get("content", "")) for m in request.messages)


def _queue(*actions: SteerAction) -> Any:
    """A drive that queues the actions before the first barrier, as a control file does."""

    async def drive(engine: SwarmEngine, _: list[ev.Event]) -> None:
        for action in actions:
            engine.control.steer(action)

    return drive


async def test_a_note_reaches_only_its_targets_next_request_and_stays_in_its_memory(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    note = SteerAction(K.NOTE, to="Tester", text="USER-NOTE: check the empty string", at_round=2)
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=3), drive=_queue(note))
    assert finished.rounds >= 2
    with_note = [r for r in demo_server.requests if _says(r, "USER-NOTE")]
    assert {r.role for r in with_note} == {"Tester"}  # never shown to another agent
    tester = [r for r in demo_server.requests if r.role == "Tester" and r.round >= 2]
    assert _says(tester[0], "[from User, the person running this team]\nUSER-NOTE")  # in its inbox, marked
    assert all(_says(r, "USER-NOTE") for r in tester if r.call == ev.CallKind.WORK)  # and in its memory after
    before = [r for r in demo_server.requests if r.role == "Tester" and r.round < 2]
    assert before and not any(_says(r, "USER-NOTE") for r in before)
    (steered,) = of(events, ev.UserSteered)
    assert (steered.action, steered.target, steered.accepted) == ("note", "Tester", True)
    assert steered.payload["when"] == "next"


async def test_a_new_goal_reaches_every_worker_of_that_round_and_the_managers_review(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    goal = SteerAction(K.GOAL, text="USER-GOAL: handle unicode input", at_round=2)
    _, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=3), drive=_queue(goal))
    round2 = [r for r in demo_server.requests if r.round == 2 and r.role in WORKERS]
    assert {r.role for r in round2} == set(WORKERS)
    assert all(_says(r, "ROUND 2 GOAL:\nUSER-GOAL") for r in round2)
    review = [r for r in demo_server.requests if r.role == "Manager" and r.round == 2]
    assert _says(review[-1], "replaced your goal for this round")
    round1 = [r for r in demo_server.requests if r.round == 1 and r.role in WORKERS]
    assert not any(_says(r, "USER-GOAL") for r in round1)
    # The stream says so, for every face to show: the round's goal is the user's, the Manager's beside it.
    (replaced,) = of(events, ev.GoalReplaced)
    assert (replaced.round, replaced.goal) == (2, "USER-GOAL: handle unicode input")
    managers = [e.next_goal for e in of(events, ev.ManagerDecided) if e.round == 1 and not e.plan]
    assert managers and replaced.replaced == managers[-1] and "USER-GOAL" not in replaced.replaced


async def test_a_pinned_edge_is_in_every_later_graph_and_a_cut_one_in_none(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    # Developer→Tester is routed in the demo's graphs; Researcher→Tester is not.
    actions = (SteerAction(K.PIN, src="Researcher", dst="Tester", at_round=2),
               SteerAction(K.CUT, src="Developer", dst="Tester", at_round=2),
               SteerAction(K.PIN, src="Tester", dst="Researcher", at_round=2),  # closes a cycle of pins
               SteerAction(K.PIN, src="Designer", dst="Designer", at_round=2))
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=3),
                                          drive=_queue(*actions))
    graphs = of(events, ev.TopologyBuilt)
    assert len(graphs) >= 2 and all(g.round >= 2 for g in graphs)
    for graph in graphs:
        edges = {(e["src"], e["dst"]): e["kind"] for e in graph.routing["edges"]}
        assert edges.get(("Researcher", "Tester")) == "pinned"
        assert ("Developer", "Tester") not in edges
        assert {"src": "Developer", "dst": "Tester", "reason": "cut by user"}.items() <= next(
            r for r in graph.routing["removed"] if (r["src"], r["dst"]) == ("Developer", "Tester")).items()
    refused = {e.target: e.reason for e in of(events, ev.UserSteered, accepted=False)}
    assert refused["Tester→Researcher"].startswith(
        "cannot pin Tester→Researcher: it would close the cycle Researcher→Tester→Researcher")
    assert refused["Designer→Designer"] == "cannot pin Designer→Designer: an agent does not send to itself"
    assert finished.reason != "error"  # the run went on


async def test_a_pin_for_one_round_is_gone_from_the_next_graph(demo_server: ScriptedServer, embedder: Any) -> None:
    pin = SteerAction(K.PIN, src="Researcher", dst="Tester", rounds=1, at_round=2)
    _, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=3), drive=_queue(pin))
    kinds = [{(e["src"], e["dst"]): e["kind"] for e in g.routing["edges"]} for g in of(events, ev.TopologyBuilt)]
    assert len(kinds) >= 2
    assert kinds[0].get(("Researcher", "Tester")) == "pinned"
    assert all(k.get(("Researcher", "Tester")) != "pinned" for k in kinds[1:])


async def test_a_silenced_agent_gets_no_calls_and_no_edges_until_restored(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    actions = (SteerAction(K.SILENCE, agent="Designer", at_round=2),
               SteerAction(K.RESTORE, agent="Designer", at_round=3))
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=3),
                                          drive=_queue(*actions))
    assert finished.rounds >= 3
    calls = {r.round for r in demo_server.requests if r.role == "Designer"}
    assert 1 in calls and 2 not in calls and 3 in calls
    (graph2,) = of(events, ev.TopologyBuilt, round=2)
    assert graph2.routing["inactive"] == ["Designer"]
    assert all("Designer" not in (e["src"], e["dst"]) for e in graph2.routing["edges"])
    # Out of the order and the tiers: a silenced agent does not run, so it has no place in them.
    assert "Designer" not in graph2.routing["order"] and all("Designer" not in t for t in graph2.routing["tiers"])
    (graph3,) = of(events, ev.TopologyBuilt, round=3)
    assert "Designer" in graph3.routing["order"]  # restored
    routed2 = [d for m in of(events, ev.MessagesRouted, round=2) for d in m.deliveries]
    assert routed2 and all("Designer" not in (d["src"], d["dst"]) for d in routed2)


async def test_retry_makes_one_more_call_of_that_agent(demo_server: ScriptedServer, embedder: Any) -> None:
    retry = SteerAction(K.RETRY, agent="Developer", at_round=2)
    await run_swarm(demo_server, embedder, settings=Settings(max_rounds=2), drive=_queue(retry))
    work = [(r.role, r.round) for r in demo_server.requests if r.call == ev.CallKind.WORK and r.round == 2]
    assert work.count(("Developer", 2)) == 2
    assert all(work.count((name, 2)) == 1 for name in WORKERS if name != "Developer")


async def test_replace_puts_the_users_text_before_the_managers_review(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    replace = SteerAction(K.REPLACE, agent="Researcher", text="REPLACED-BY-USER: n = 0 is the edge case", at_round=2)
    _, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=2), drive=_queue(replace))
    review = [r for r in demo_server.requests if r.role == "Manager" and r.round == 2]
    assert _says(review[-1], "REPLACED-BY-USER")
    finished = of(events, ev.AgentFinished, agent="Researcher", round=2)
    assert finished[-1].public.startswith("REPLACED-BY-USER")


async def test_stop_ends_at_the_barrier_with_the_best_answer_so_far(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    finished, _, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=3),
                                     drive=_queue(SteerAction(K.STOP, at_round=2)))
    assert finished.rounds == 1 and finished.reason == "cancelled"
    assert finished.detail.startswith("stopped by the user") and finished.final_answer
    assert not [r for r in demo_server.requests if r.round == 2]


async def test_continue_vetoes_the_end_one_more_round(demo_server: ScriptedServer, embedder: Any) -> None:
    plain, _, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=2))
    with ScriptedServer(demo_script) as server:
        steered, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=2),
                                             drive=_queue(SteerAction(K.CONTINUE)))
    assert steered.rounds == plain.rounds + 1
    assert any("one more round" in n.message for n in of(events, ev.Notice))


async def test_a_note_now_cancels_the_call_in_flight_and_asks_again_with_it(embedder: Any) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(chunk_delay=0.02)) as server:

        async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
            await wait_until(lambda: bool(of(events, ev.AgentDelta, agent="Tester", round=1)))
            engine.control.steer(SteerAction(K.NOTE, to="Tester", text="NOW-NOTE: stop and read this", when="now"))

        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=1), drive=drive)
    tester = [r for r in server.requests if r.role == "Tester" and r.round == 1]
    assert len(tester) == 2 and not _says(tester[0], "NOW-NOTE") and _says(tester[1], "NOW-NOTE")
    assert any("Tester: work call cut off in flight" in n.message for n in of(events, ev.Notice))
    assert len(of(events, ev.AgentFinished, agent="Tester", round=1)) == 1
    assert finished.prompt_tokens >= sum(e.prompt_tokens for e in of(events, ev.AgentFinished))


async def test_bad_actions_are_one_line_each_and_the_run_goes_on(demo_server: ScriptedServer, embedder: Any) -> None:
    actions = (SteerAction(K.NOTE, to="Nobody", text="x", at_round=2),
               SteerAction(K.NOTE, to="Tester", text="   ", at_round=2),
               SteerAction(K.PLAN, text="agents: []", at_round=2),
               SteerAction(K.RELEASE, src="Tester", dst="Developer", at_round=2),
               SteerAction(K.RESTORE, agent="Tester", at_round=2))
    finished, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=2),
                                          drive=_queue(*actions))
    refused = of(events, ev.UserSteered, accepted=False)
    assert [e.reason for e in refused] == [
        "no agent 'Nobody' in this team (agents: Developer, Researcher, Tester, Designer)",
        "an empty note: nothing to send",
        "dytopo cannot take plan (it takes note, goal, pin, cut, release, silence, restore, retry, replace, stop, "
        "continue, agent)",
        "Tester→Developer is neither pinned nor cut",
        "Tester is not silenced",
    ]
    assert finished.reason in ("manager", "max_rounds") and finished.rounds == 2


async def test_single_pass_takes_pins_silence_and_retry_before_routing(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    actions = (SteerAction(K.PIN, src="Researcher", dst="Tester", at_round=2),
               SteerAction(K.PIN, src="Tester", dst="Researcher", at_round=2),  # cycles are fine at a barrier
               SteerAction(K.SILENCE, agent="Designer", at_round=2),
               SteerAction(K.RETRY, agent="Developer", at_round=2))
    settings = Settings(max_rounds=2, protocol="single-pass")
    finished, events, _ = await run_swarm(demo_server, embedder, settings=settings, drive=_queue(*actions))
    assert not of(events, ev.UserSteered, accepted=False)
    (graph,) = of(events, ev.TopologyBuilt, round=2)
    edges = {(e["src"], e["dst"]): e["kind"] for e in graph.routing["edges"]}
    assert edges[("Researcher", "Tester")] == edges[("Tester", "Researcher")] == "pinned"
    assert not [r for r in demo_server.requests if r.role == "Designer" and r.round == 2]
    round2 = [(r.role, r.call) for r in demo_server.requests if r.round == 2]
    assert round2.count(("Developer", ev.CallKind.SINGLE_PASS)) == 2
    assert finished.rounds == 2


async def test_a_fork_keeps_the_originals_actions_and_what_they_left(embedder: Any) -> None:
    from core.compose.plan import BackendChoice
    from core.compose.runner import build_engine, open_backend
    from core.demo.scripts import DEMO_PROBLEMS
    from core.sessions.fork import fork_point
    from core.sessions.model import session_from_events

    actions = (SteerAction(K.PIN, src="Researcher", dst="Tester", at_round=2),
               SteerAction(K.NOTE, to="Tester", text="FORK-NOTE: keep this", at_round=2))
    with ScriptedServer(demo_script) as server:
        _, events, _ = await run_swarm(server, embedder, settings=Settings(max_rounds=3), drive=_queue(*actions))
    point = fork_point(session_from_events(events), 2, "parent.json")
    settings = Settings(max_rounds=3)
    forked: list[ev.Event] = []
    with ScriptedServer(demo_script) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [forked.append], embedder=embedder,
                              fork=point)
        try:
            await engine.run()
        finally:
            await backend.close()
        tester3 = [r for r in server.requests if r.role == "Tester" and r.round == 3]
    assert [(e.action, e.accepted) for e in of(forked, ev.UserSteered)] == [("pin", True), ("note", True)]
    (graph3,) = [g for g in of(forked, ev.TopologyBuilt, round=3)]
    assert {(e["src"], e["dst"]): e["kind"] for e in graph3.routing["edges"]}[("Researcher", "Tester")] == "pinned"
    assert tester3 and all(_says(r, "FORK-NOTE") for r in tester3 if r.call == ev.CallKind.WORK)


async def test_an_agents_model_and_temperature_change_from_its_next_call(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    change = SteerAction(K.AGENT, agent="Tester", payload={"temperature": 0.05, "model": "other-model"}, at_round=2)
    _, events, _ = await run_swarm(demo_server, embedder, settings=Settings(max_rounds=2), drive=_queue(change))
    assert of(events, ev.UserSteered)[0].accepted
    tester = [r for r in demo_server.requests if r.role == "Tester"]
    before = [r for r in tester if r.round == 1]
    after = [r for r in tester if r.round == 2]
    assert before and after
    assert all(r.body.get("temperature") != 0.05 and r.body.get("model") != "other-model" for r in before)
    assert all(r.body.get("temperature") == 0.05 and r.body.get("model") == "other-model" for r in after)
    others = [r for r in demo_server.requests if r.role == "Developer" and r.round == 2]
    assert all(r.body.get("model") != "other-model" for r in others)

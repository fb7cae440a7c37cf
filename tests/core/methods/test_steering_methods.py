"""Steering the methods that are not DyTopo's rounds: TopoWeaver-R1's plan edit, TopoDIM's typed edges,
DMoA's force, exclude and note, and one line for what a method does not take (docs/steering.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.methods.catalogue import build_method
from core.methods.dmoa.events import CALL_STEP, DmoaRouted
from core.methods.topodim.events import TopoDIMGraph
from core.methods.topoweaver.demo import topoweaver_script
from core.methods.topoweaver.events import PlanProposed
from core.methods.topoweaver.method import run_metrics
from core.methods.topoweaver.prompts import CALL_AGENT
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import Params, RunControl
from core.runtime.demo_scenarios import DEMO_PROBLEMS
from core.runtime.engine import SwarmEngine
from core.runtime.rosters import builtin_team
from core.runtime.steering import SteerAction
from core.runtime.steering import SteerKind as K
from tests.support.engine import of, wait_until
from tests.support.topodim import run_topodim
from tests.support.topoweaver import CHAIN, LATER_STEP_REF, run_tw


def _queued(*actions: SteerAction, workers: int = 4) -> RunControl:
    control = RunControl(Params(0.3, 2, 5), workers)
    for action in actions:
        control.steer(action)
    return control


def _drive(*actions: SteerAction) -> Any:
    async def drive(engine: SwarmEngine, _: list[ev.Event]) -> None:
        for action in actions:
            engine.control.steer(action)

    return drive


# --- TopoWeaver-R1 ------------------------------------------------------------------------------------


async def test_an_edited_plan_runs_in_place_of_the_orchestrators(embedder: Any) -> None:
    finished, events, server = await run_tw(topoweaver_script, drive=_drive(SteerAction(K.PLAN, text=CHAIN)))
    (steered,) = of(events, ev.UserSteered)
    assert steered.accepted and steered.round == 1 and steered.phase == "orchestrate"
    turn1 = {r.role for r in server.requests if r.call == CALL_AGENT and r.round == 1}
    assert turn1 == {"coder_1", "tester_1"}
    plans = of(events, PlanProposed, round=1)
    assert [p.by_user for p in plans] == [False, True]
    assert run_metrics(events)["turns"] == len(of(events, PlanProposed)) - 1  # the user's plan is not a turn
    assert finished.reason in ("passed", "max-turns")


async def test_a_broken_plan_edit_is_refused_with_the_validators_tag_and_the_old_plan_runs(embedder: Any) -> None:
    actions = (SteerAction(K.PLAN, text=LATER_STEP_REF),
               SteerAction(K.PLAN, text="```yaml\nsteps: [\n  - step: 1\n```"),
               SteerAction(K.PIN, src="a", dst="b"),
               SteerAction(K.PLAN, text="x: [unclosed\n" + CHAIN))  # a junk first line: the plan is read whole
    _, _, plain_server = await run_tw(topoweaver_script)
    _, events, server = await run_tw(topoweaver_script, drive=_drive(*actions))
    refused = [e.reason for e in of(events, ev.UserSteered, accepted=False)]
    assert refused[0].startswith("topoweaver cannot take pin")
    assert refused[1].startswith("the edited plan is invalid, [YAML_LOGIC_INVALID] L")
    assert refused[2].startswith("the edited plan is invalid, [YAML_PARSE_ERROR]: YAML parse failed at line ")
    assert refused[3].startswith("the edited plan is invalid, [YAML_PARSE_ERROR]: YAML parse failed at line ")
    assert "(while parsing a flow sequence from line 1)" in refused[3]  # the junk line, by its number
    assert all(r.endswith("the Orchestrator's plan stays") for r in refused[1:])
    assert not [e for e in of(events, ev.UserSteered) if e.accepted]
    ran = sorted((r.role, r.round) for r in server.requests if r.call == CALL_AGENT)
    assert ran == sorted((r.role, r.round) for r in plain_server.requests if r.call == CALL_AGENT)


# --- TopoDIM ------------------------------------------------------------------------------------------


async def test_a_typed_edge_added_before_the_graph_runs_brings_its_agent_in(embedder: Any) -> None:
    control = _queued(SteerAction(K.EDGE_ADD, src="Designer", dst="Tester", payload={"type": "feedback"}),
                      SteerAction(K.EDGE_ADD, src="Researcher", dst="Developer", payload={"type": "conditioned"}),
                      SteerAction(K.EDGE_REMOVE, src="Researcher", dst="BugFixer"))
    finished, events, server = await run_topodim(embedder, control=control)
    steered = of(events, ev.UserSteered)
    assert [e.accepted for e in steered] == [True, False, True]
    assert steered[1].reason.startswith(
        "cannot add conditioned Researcher→Developer: it would close the cycle Developer→Researcher→Developer")
    shown = of(events, ev.TopologyBuilt)[-1]
    assert shown.rerouted
    edges = {(e["src"], e["dst"]): e["kind"] for e in shown.routing["edges"]}
    assert edges[("Designer", "Tester")] == "feedback" and ("Researcher", "BugFixer") not in edges
    assert of(events, TopoDIMGraph)[-1].dropped == ["BugFixer"]  # Designer came in; BugFixer lost its one edge
    asked = {(r.role, r.call) for r in server.requests}
    assert ("Designer", "solution") in asked and ("Tester", "evaluate") in asked
    assert not {r.role for r in server.requests} & {"BugFixer"} and ("Researcher", "defend") not in asked
    assert finished.reason == "one-shot"


async def test_a_topodim_edit_after_its_calls_began_is_one_line(embedder: Any) -> None:
    async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
        await wait_until(lambda: bool(of(events, ev.AgentStarted, call="solution")))  # the graph's first call
        engine.control.steer(SteerAction(K.EDGE_REMOVE, src="Developer", dst="Researcher"))

    finished, events, _ = await run_topodim(embedder, drive=drive)
    (steered,) = of(events, ev.UserSteered)
    assert not steered.accepted and "nothing is left to edit" in steered.reason
    assert finished.reason == "one-shot"


# --- DMoA ---------------------------------------------------------------------------------------------


async def _run_dmoa(tmp_path: Path, embedder: Any, control: RunControl) -> tuple[ev.RunFinished, list[ev.Event],
                                                                                 ScriptedServer]:
    settings = Settings(domain="code", strategy="dmoa", sessions_dir=str(tmp_path / "sessions"))
    with ScriptedServer(demo_script) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        events: list[ev.Event] = []
        method = build_method("dmoa", {"weights_dir": str(tmp_path)}, builtin_team("code"))
        engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], embedder=embedder,
                              method=method, control=control)
        try:
            finished = await engine.run()
        finally:
            await backend.close()
    return finished, events, server


async def test_dmoa_forces_excludes_and_notes_the_next_step(tmp_path: Path, embedder: Any) -> None:
    _, plain, _ = await _run_dmoa(tmp_path, embedder, _queued())
    first = of(plain, DmoaRouted, round=1)[0].selected
    left_out = next(name for name in ("Developer", "Researcher", "Tester", "Designer") if name not in first)
    control = _queued(SteerAction(K.FORCE, agent=left_out), SteerAction(K.EXCLUDE, agent=first[0]),
                      SteerAction(K.NOTE, to="all", text="USER-NOTE-DMOA: mind the empty string"))
    finished, events, server = await _run_dmoa(tmp_path, embedder, control)
    routed = of(events, DmoaRouted, round=1)[0]
    assert left_out in routed.selected and first[0] not in routed.selected and "by the user" in routed.note
    ran = {r.role for r in server.requests if r.call == CALL_STEP and r.round == 1}
    assert ran == set(routed.selected)
    # Delivered once, in step 1's new turn (a later request of the same agent holds that turn as it was).
    noted = [r for r in server.requests if "USER-NOTE-DMOA" in str(r.messages[-1].get("content"))]
    assert noted and all(r.call == CALL_STEP and r.round == 1 for r in noted)
    assert {r.role for r in noted} == ran
    assert all(e.accepted for e in of(events, ev.UserSteered)) and finished.rounds >= 1


async def test_dmoa_refuses_what_it_does_not_take_and_unknown_agents(tmp_path: Path, embedder: Any) -> None:
    control = _queued(SteerAction(K.GOAL, text="x"), SteerAction(K.FORCE, agent="Nobody"))
    finished, events, _ = await _run_dmoa(tmp_path, embedder, control)
    reasons = [e.reason for e in of(events, ev.UserSteered)]
    assert reasons[0].startswith("dmoa cannot take goal: its router selects the agents of each step")
    assert reasons[1].startswith("no agent 'Nobody' in this team")
    assert finished.reason == "summarizer"


async def test_a_method_without_its_own_hook_answers_from_the_catalogue(embedder: Any) -> None:
    settings = Settings(strategy="single")
    control = _queued(SteerAction(K.NOTE, to="all", text="x"))
    with ScriptedServer(demo_script) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        events: list[ev.Event] = []
        engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], embedder=embedder,
                              control=control)
        try:
            finished = await engine.run()
        finally:
            await backend.close()
    (steered,) = of(events, ev.UserSteered)
    assert not steered.accepted
    assert steered.reason == ("single cannot take note: one agent answers in one call: nothing runs after it to "
                              "steer (it takes stop)")
    assert finished.final_answer


async def test_dmoa_force_then_exclude_of_one_agent_says_the_later_wins(tmp_path: Path, embedder: Any) -> None:
    _, plain, _ = await _run_dmoa(tmp_path, embedder, _queued())
    first = of(plain, DmoaRouted, round=1)[0].selected
    control = _queued(SteerAction(K.FORCE, agent=first[0]), SteerAction(K.EXCLUDE, agent=first[0]))
    _, events, _ = await _run_dmoa(tmp_path, embedder, control)
    assert first[0] not in of(events, DmoaRouted, round=1)[0].selected  # exclude, the later, wins
    said = [n.message for n in of(events, ev.Notice) if n.agent == first[0]]
    assert f"exclude {first[0]} replaces the earlier force of {first[0]}: the later action wins" in said


async def test_a_stop_before_any_answer_does_not_promise_the_best_answer(tmp_path: Path, embedder: Any) -> None:
    control = _queued(SteerAction(K.STOP, at_round=2))
    finished, _, _ = await _run_dmoa(tmp_path, embedder, control)
    assert finished.reason == "cancelled" and not finished.final_answer.strip()
    assert "best answer so far" not in finished.detail and "no answer" in finished.detail

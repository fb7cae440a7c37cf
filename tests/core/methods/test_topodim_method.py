"""TopoDIM end to end: the real engine and openai client against the scripted server over HTTP, real MiniLM
(for the policy generator)."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import FINAL_CODE, demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.methods.catalogue import build_method
from core.methods.registry import MethodError
from core.methods.topodim.events import TopoDIMCall, TopoDIMGraph
from core.methods.topodim.method import CALL_GRAPH, usable_text
from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import ControlMode, Params, RunControl
from core.runtime.engine import AgentResult
from core.runtime.rosters import builtin_team
from core.runtime.round_check import CodeExecutionEvaluator
from core.runtime.scripted import RequestInfo
from core.sessions.fork import fork_point
from core.sessions.model import Session, session_from_events
from core.sessions.store import load_session, session_to_json
from tests.support.engine import of
from tests.support.topodim import run_topodim

CASE_STUDY = [
    ("Developer", "solution"),
    ("Researcher", "solution"),
    ("BugFixer", "challenge"),
    ("Researcher", "defend"),
    ("Tester", "solution"),
    ("Developer", "evaluate"),
    ("Tester", "revise"),
    ("BugFixer", "solution"),
    ("Manager", "final"),
]


def calls(events: list[ev.Event]) -> list[tuple[str, str]]:
    """Every finished call except the prior graph's, in order."""
    return [(e.agent, e.call) for e in of(events, ev.AgentFinished) if e.call != CALL_GRAPH]


def request(server: ScriptedServer, role: str, call: str) -> str:
    found = [r for r in server.requests if r.role == role and r.call == call]
    assert found, f"no {role} {call} request"
    return "\n".join(str(m.get("content", "")) for m in found[-1].messages if m.get("role") == "user")


async def test_demo_run_is_the_case_studys_nine_calls(embedder: Any) -> None:
    finished, events, server = await run_topodim(embedder)
    assert calls(events) == CASE_STUDY
    started = of(events, TopoDIMCall)
    assert [(c.index, c.total) for c in started] == [(k, 9) for k in range(1, 10)]
    assert [(c.agent, c.mode) for c in started] == CASE_STUDY
    graph = of(events, TopoDIMGraph)[0]
    assert graph.generator == "prior" and graph.dropped == ["Designer"]
    status = [e["status"] for e in graph.edges]
    assert (status.count("kept"), status.count("pruned"), status.count("masked")) == (3, 4, 1)
    assert graph.r_div == pytest.approx(math.log(3), abs=1e-5)
    routing = RoutingResult.from_dict(of(events, ev.TopologyBuilt)[0].routing)
    assert {(e.src, e.dst, e.kind) for e in routing.edges} == {
        ("Developer", "Researcher", "conditioned"),
        ("Researcher", "BugFixer", "debate"),
        ("Tester", "Developer", "feedback"),
    }
    assert routing.inactive == ["Designer"]
    assert finished.reason == "one-shot" and finished.rounds == 1
    assert finished.answer_source == "manager" and "range(len(string))" in finished.final_answer
    # The prompts carry what each edge type means (§3.1).
    assert "ANSWERS YOU BUILD ON" in request(server, "Researcher", "solution")
    assert "[Developer, the Implementation Engineer]" in request(server, "Researcher", "solution")
    assert "ANSWER TO CHALLENGE" in request(server, "BugFixer", "challenge")
    assert "CHALLENGE FROM [BugFixer" in request(server, "Researcher", "defend")
    assert "YOUR DEBATE WITH Researcher" in request(server, "BugFixer", "solution")
    assert "ANSWER TO REVIEW" in request(server, "Developer", "evaluate")
    assert "REVIEW FROM [Developer" in request(server, "Tester", "revise")
    final = request(server, "Manager", "final")
    assert all(f"[{n}" in final for n in ("Developer", "Researcher", "Tester", "BugFixer"))
    assert "[Designer" not in final
    assert "code execution is off" in final
    decided = of(events, ev.ManagerDecided)
    assert decided[0].plan and "9 calls" in decided[0].next_goal
    assert decided[-1].terminate and decided[-1].final_answer == finished.final_answer


@pytest.mark.parametrize(("domain", "answer"), [("math", "\\frac{14}{3}"), ("general", "monorepo")])
async def test_math_and_general_demos_end_with_the_decision(embedder: Any, domain: str, answer: str) -> None:
    finished, events, _ = await run_topodim(embedder, domain=domain)
    assert len(calls(events)) == 9 and calls(events)[-1] == ("Manager", "final")
    assert finished.reason == "one-shot" and answer in finished.final_answer
    assert len(of(events, TopoDIMGraph)[0].dropped) == 1


async def test_the_sandbox_tells_the_decision_maker_which_candidates_pass(embedder: Any) -> None:
    finished, events, server = await run_topodim(embedder, evaluator=CodeExecutionEvaluator())
    runs = {t.source_agent: t for t in of(events, ev.TestRun)}
    assert not runs["Developer"].passed and runs["BugFixer"].passed  # the draft fails 'cat'
    assert "Tester" not in runs  # bare asserts are tests, not a candidate solution
    final = request(server, "Manager", "final")
    assert "- Developer: WRONG_ANSWER" in final and "- BugFixer: PASSED" in final
    assert runs["Manager"].passed and finished.solved is True


async def test_session_round_trip_keeps_the_typed_graph(embedder: Any, tmp_path: Path) -> None:
    _, events, _ = await run_topodim(embedder)
    session = session_from_events(events)
    path = tmp_path / "topodim.json"
    path.write_text(session_to_json(session), encoding="utf-8")
    loaded = load_session(path)
    assert [e.to_dict() for e in loaded.replay_events()] == [e.to_dict() for e in session.replay_events()]
    record = loaded.rounds[0]
    assert {e.kind for e in record.edges} == {"conditioned", "feedback", "debate"}
    assert {r.reason for r in record.removed} == {"masked", "pruned"}
    assert record.decision is not None and record.decision.terminate
    assert isinstance(Session.from_dict(json.loads(path.read_text())), Session)
    with pytest.raises(ValueError, match="cannot fork a TopoDIM run"):
        fork_point(loaded, 1, str(path))
    # A fresh process that never imported the method still reads the method's events.
    script = (
        "import sys; from pathlib import Path; from core.sessions.store import load_session\n"
        f"s = load_session(Path({str(path)!r}))\n"
        "print(sum(e.type.startswith('topodim') for e in s.replay_events()))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "10"  # the graph and 9 calls


async def test_an_unusable_prior_graph_falls_back_to_every_agent_alone(embedder: Any) -> None:
    rule = FaultRule("malformed", role="Manager", call=CALL_GRAPH, times=2)
    finished, events, _ = await run_topodim(embedder, faults=[rule])
    assert any("no usable typed graph" in n.message for n in of(events, ev.Notice))
    graph = of(events, TopoDIMGraph)[0]
    assert graph.fallback and graph.dropped == []
    names = ["Developer", "Researcher", "Tester", "Designer", "BugFixer"]
    assert calls(events) == [(n, "solution") for n in names] + [("Manager", "final")]
    assert finished.reason == "one-shot" and "no edge survived" in finished.detail


def _hostile_graph(info: RequestInfo) -> str:
    if info.call == CALL_GRAPH:
        return json.dumps({"edges": [
            {"src": "Developer", "dst": "Researcher", "type": "Conditional", "confidence": "0.9"},
            {"src": "Researcher", "dst": "Developer", "type": "debate", "confidence": 0.8},  # masked
            {"src": "Nobody", "dst": "Tester", "type": "feedback", "confidence": 1e308},
            {"src": "Tester", "dst": "Tester", "type": "feedback", "confidence": 0.7},
            {"src": "Tester", "dst": "Designer", "type": "mind-meld", "confidence": 0.7},
            {"src": "Tester", "dst": "Designer", "type": "feedback", "confidence": "lots"},
            ["not", "an", "edge"],
            {"src": 3, "dst": None},
        ]})
    return demo_script(info)


async def test_a_hostile_prior_graph_is_cleaned_with_one_notice(embedder: Any) -> None:
    finished, events, _ = await run_topodim(embedder, _hostile_graph, options={"alpha": 0.0})
    notices = [n.message for n in of(events, ev.Notice) if "ignored" in n.message]
    assert len(notices) == 1 and "6 proposed edge(s) ignored" in notices[0]
    graph = of(events, TopoDIMGraph)[0]
    kept = {(e["src"], e["dst"], e["kind"]) for e in graph.edges if e["status"] == "kept"}
    assert kept == {("Developer", "Researcher", "conditioned"), ("Tester", "Designer", "feedback")}
    assert [(e["src"], e["kind"]) for e in graph.edges if e["status"] == "masked"] == [("Researcher", "debate")]
    assert finished.reason == "one-shot"


async def test_a_failing_call_skips_what_needed_it_and_the_run_goes_on(embedder: Any) -> None:
    rule = FaultRule("http_500", role="Researcher", call="solution", times=0)
    settings = Settings(strategy="topodim", max_retries=0)
    finished, events, _ = await run_topodim(embedder, faults=[rule], settings=settings)
    skipped = [(c.index, c.mode) for c in of(events, TopoDIMCall) if c.skipped]
    assert skipped == [(3, "challenge"), (4, "defend")]
    assert ("Tester", "revise") in calls(events) and calls(events)[-1] == ("Manager", "final")
    assert finished.reason == "one-shot" and finished.final_answer


async def test_an_endpoint_that_refuses_the_key_ends_the_run_with_one_line(embedder: Any) -> None:
    finished, events, _ = await run_topodim(embedder, faults=[FaultRule("http_401", times=0)])
    assert finished.reason == "error" and "\n" not in finished.detail
    assert not of(events, TopoDIMCall)


async def test_edge_types_option_limits_the_types_drawn(embedder: Any) -> None:
    options = {"generator": "random", "edge_types": "conditioned", "alpha": 0.5}
    _, events, _ = await run_topodim(embedder, options=options)
    graph = of(events, TopoDIMGraph)[0]
    assert graph.edge_types == ["conditioned"]
    assert {e["kind"] for e in graph.edges} == {"conditioned"}
    assert len(calls(events)) == len(graph.active) + 1  # no feedback or debate exchanges


async def test_alpha_one_keeps_no_edge_and_every_agent_answers_alone(embedder: Any) -> None:
    _, events, _ = await run_topodim(embedder, options={"generator": "random", "alpha": 1.0})
    graph = of(events, TopoDIMGraph)[0]
    assert graph.fallback and not [e for e in graph.edges if e["status"] == "kept"]
    assert len(calls(events)) == 6


async def test_the_random_generator_repeats_for_a_problem_and_seed(embedder: Any) -> None:
    async def graph(seed: int) -> list[Any]:
        _, events, _ = await run_topodim(embedder, options={"generator": "random", "seed": seed})
        return of(events, TopoDIMGraph)[0].decisions

    first, again, other = await graph(1), await graph(1), await graph(2)
    assert first == again and first != other


async def test_the_policy_generator_says_which_weights_it_uses(embedder: Any, tmp_path: Path) -> None:
    from core.methods.topodim.policy import TopoDIMPolicy, save_checkpoint

    missing = tmp_path / "none.pt"
    _, events, _ = await run_topodim(embedder, options={"generator": "policy", "weights": str(missing)})
    assert any("untrained (seeded initialisation" in n.message for n in of(events, ev.Notice))
    graph = of(events, TopoDIMGraph)[0]
    assert graph.generator == "policy" and graph.temperature == 0.5 and graph.weights.startswith("untrained")
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint at all")
    finished, events, _ = await run_topodim(embedder, options={"generator": "policy", "weights": str(broken)})
    assert any("cannot read" in n.message and n.severity == "warning" for n in of(events, ev.Notice))
    assert finished.reason == "one-shot"
    trained = tmp_path / "trained.pt"
    save_checkpoint(trained, TopoDIMPolicy(seed=5), step=7)
    _, events, _ = await run_topodim(embedder, options={"generator": "policy", "weights": str(trained)})
    assert any("trained weights" in n.message and "7 steps" in n.message for n in of(events, ev.Notice))


async def test_step_mode_runs_one_call_per_step_and_cancel_ends_cleanly(embedder: Any) -> None:
    control = RunControl(Params(0.3, 3, 5), 4, mode=ControlMode.STEP)

    async def drive(engine: Any, events: list[ev.Event]) -> None:
        pauses = 0

        async def settle() -> None:
            """Until the engine pauses at its next checkpoint (a new "paused" state is announced)."""
            nonlocal pauses
            for _ in range(3000):
                paused = len(of(events, ev.ControlChanged, status="paused"))
                if engine.control.waiting and paused > pauses:
                    pauses = paused
                    return
                await asyncio.sleep(0.01)
            raise AssertionError("the engine never paused again")

        await settle()  # before the round
        engine.control.step_phase()
        await settle()  # the graph is built, no call yet
        assert of(events, TopoDIMGraph) and not of(events, TopoDIMCall)
        engine.control.step_phase()
        await settle()
        assert len(of(events, TopoDIMCall)) == 1 and len(calls(events)) == 1
        engine.control.step_phase()
        await settle()
        assert len(calls(events)) == 2
        engine.control.cancel()

    finished, events, _ = await run_topodim(embedder, drive=drive, control=control)
    assert finished.reason == "cancelled" and len(calls(events)) == 2


def test_options_are_checked_when_the_method_is_built() -> None:
    code, math_ = builtin_team("code"), builtin_team("math")
    with pytest.raises(MethodError, match="edge_types"):
        build_method("topodim", {"edge_types": "telepathy"}, code)
    with pytest.raises(MethodError, match="alpha"):
        build_method("topodim", {"alpha": "1.5"}, code)
    with pytest.raises(MethodError, match="generator"):
        build_method("topodim", {"generator": "oracle"}, code)
    with pytest.raises(MethodError, match="agents"):
        build_method("topodim", {"agents": 7}, code)
    manager, workers, roles = build_method("topodim", {"agents": 6}, math_).roster(math_)
    assert manager == "Manager" and workers == ["ProblemParser", "Solver", "Verifier", "Mathematician", "Programmer",
                                                "Critic"]
    assert "decision-maker" in roles["Manager"]
    _, workers, _ = build_method("topodim", {"edge_types": "conditioned+feedback"}, code).roster(code)
    assert workers == ["Developer", "Researcher", "Tester", "Designer", "BugFixer"]


def test_a_json_work_reply_is_unwrapped_for_the_next_agent() -> None:
    wrapped = json.dumps({"public": "the sum is 3", "answer": "3", "query": "q", "key": "k"})
    assert usable_text(AgentResult("Solver", "done", public=wrapped)) == "the sum is 3\n\nFinal answer: \\boxed{3}"
    assert usable_text(AgentResult("Solver", "done", public="{not json}")) == "{not json}"
    assert FINAL_CODE.strip() in usable_text(AgentResult("Dev", "done", public=FINAL_CODE))

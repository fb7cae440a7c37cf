"""TopoWeaver-R1 end to end: the real openai client, the scripted server over real HTTP, real PyYAML, the
real sandbox. Each validation tag from a scripted orchestrator reply and its way into the next turn's
prompt, early stop on PASSED, K turns exhausted, the agents' views, sessions, headless and the bench."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from core.bench.runner import BenchRunner
from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.datasets.problems import Problem, humaneval_task
from core.demo.bench_script import benchmark_script
from core.demo.server import FaultRule, ScriptedServer
from core.methods.catalogue import build_method
from core.methods.registry import MethodError
from core.methods.topoweaver.demo import topoweaver_script
from core.methods.topoweaver.events import PlanProposed, TurnEnded
from core.methods.topoweaver.method import run_metrics
from core.methods.topoweaver.prompts import CALL_AGENT, CALL_ORCHESTRATE
from core.routing.dytopo import KIND_CROSS, RoutingResult
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.demo_scenarios import DEMO_PROBLEMS, DRAFT_CODE, FINAL_CODE
from core.runtime.engine import SwarmEngine
from core.runtime.rosters import builtin_team
from core.runtime.scripted import RequestInfo
from core.sessions.export import export_session
from core.sessions.model import Session, session_from_events
from tests.support.engine import of
from tests.support.topoweaver import CHAIN, LATER_STEP_REF, NO_TESTER_LAST, run_tw, script_with, yaml_block
from tui.cli.headless import ProgressPrinter

PROBLEM = DEMO_PROBLEMS["code"]


def humaneval_problem(n: int) -> Problem:
    """A HumanEval-format problem of our own: docstring examples visible, check() hidden."""
    prompt = f'def add{n}(a: int, b: int) -> int:\n    """ Add two numbers.\n    >>> add{n}(2, 3)\n    5\n    """\n'
    return Problem(
        task_id=f"Mini/{n}", domain="code", task=humaneval_task(prompt, f"add{n}"), prompt=prompt,
        entry_point=f"add{n}", test="def check(candidate):\n    assert candidate(-1, 1) == 0\n",
        canonical_solution="    return a + b\n",
    )


TESTS = "```python\nassert make_palindrome('x') == 'x'\nassert make_palindrome('cat') == 'catac'\n```"


def user_text(info: RequestInfo) -> str:
    return "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "user")


def always_draft(info: RequestInfo) -> str | None:
    """A coder and debugger that never fix the off-by-one; a tester with the decisive case."""
    if info.role.startswith(("coder", "debugger")):
        return f"```python\n{DRAFT_CODE}\n```"
    if info.role.startswith("tester"):
        return TESTS
    return None


def requests(server: ScriptedServer, call: str, role: str | None = None, round_no: int | None = None) -> list[Any]:
    return [r for r in server.requests if r.call == call and (role is None or r.role == role)
            and (round_no is None or r.round == round_no)]


# --- the demo: a failing first plan, a passing second ----------------------------------------------------


async def test_the_demo_fails_a_test_in_turn_one_and_passes_in_turn_two() -> None:
    finished, events, _ = await run_tw(topoweaver_script)

    assert finished.reason == "passed" and finished.rounds == 2 and finished.solved is True
    assert "range(len(string))" in finished.final_answer and finished.answer_source == "extracted:debugger_1"
    plans = of(events, PlanProposed)
    assert [p.tag for p in plans] == ["VALID", "VALID"]
    assert [p.agent_count() for p in plans] == [5, 3] and plans[0].difficulty == "interview" and plans[0].n_max == 7
    assert [t.outcome for t in of(events, ev.TestRun)] == ["WRONG_ANSWER", "PASSED"]
    assert of(events, ev.TestRun, round=1)[0].failing_test.strip() == "assert make_palindrome('x') == 'x'"
    (last,) = of(events, TurnEnded, round=2)
    assert last.history == "turn 1: 5 agents, 3 steps, WRONG_ANSWER → turn 2: 3 agents, 3 steps, PASSED"
    assert last.reward == 1.5  # the paper's PASSED reward (Table 1), informational
    # Turn 2's graph: coder_1 recurs, so its turn-1 output reaches it along a dashed cross-turn edge.
    routing = RoutingResult.from_dict(of(events, ev.TopologyBuilt, round=2)[0].routing)
    assert ("coder_1@1", "coder_1", KIND_CROSS) in {(e.src, e.dst, e.kind) for e in routing.edges}
    assert routing.tiers == [["coder_1"], ["debugger_1"], ["tester_1"]] and routing.inactive
    # The agents of a step run as one tier; the engine announced every call with its step.
    tiers = {(e.agent, e.round): e.tier for e in of(events, ev.AgentStarted, call=CALL_AGENT)}
    assert tiers[("planner_1", 1)] == tiers[("searcher_1", 1)] == 0 and tiers[("tester_1", 1)] == 2
    assert of(events, ev.ParamsChanged)[0].params["max_rounds"] == 2  # max_rounds follows K


async def test_each_agent_sees_problem_role_view_memory_and_its_refs() -> None:
    _, _, server = await run_tw(topoweaver_script, options={"prompt_order": "paper"})

    (coder_2,) = requests(server, CALL_AGENT, "coder_1", 2)
    text = user_text(coder_2)
    assert "PROBLEM:\n" + PROBLEM in text and "YOUR ROLE: coder" in text
    assert "THE LAST TURN" in text and "ended WRONG_ANSWER" in text and "make_palindrome('x') == 'x'" in text
    assert "YOUR OWN EARLIER OUTPUT" in text and "range(1, len(string))" in text  # its turn-1 draft (Mem)
    assert "Start the scan at i = 0" in text  # the orchestrator's note
    assert "OUTPUTS YOU READ" not in text  # first step: no refs
    (debugger,) = requests(server, CALL_AGENT, "debugger_1", 2)
    assert "[from coder_1 (coder)]" in user_text(debugger) and "YOUR OWN EARLIER OUTPUT" not in user_text(debugger)
    (coder_1,) = requests(server, CALL_AGENT, "coder_1", 1)
    assert all(f"[from {a}" in user_text(coder_1) for a in ("planner_1", "searcher_1", "algorithmmer_1"))
    assert "THE LAST TURN" not in user_text(coder_1)
    # The orchestrator's second turn hears the first turn's plan and the tester's verdict.
    (orchestrate,) = requests(server, CALL_ORCHESTRATE, round_no=2)
    history = user_text(orchestrate)
    assert "HISTORY OF EARLIER TURNS" in history and "WRONG_ANSWER" in history and "coder_1" in history
    assert "solving one code problem" in orchestrate.messages[0]["content"]


# --- validation tags ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "tag", "rule", "told"),
    [
        ("Let me think about a good team for this.", "[NO_YAML_FOUND]", "found", "no YAML block"),
        (yaml_block("difficulty: interview\nsteps: [ {id: coder_1"), "[YAML_PARSE_ERROR]", "parse", "parse failed"),
        (yaml_block("difficulty: interview\nsteps:\n  - [{id: coder_1, type: wizard}]"), "[YAML_SCHEMA_INVALID]",
         "schema", "wizard"),
        (LATER_STEP_REF, "[YAML_LOGIC_INVALID]", "L2", "coder_1 (step 2) refs tester_1 in a later step"),
        (NO_TESTER_LAST, "[YAML_LOGIC_INVALID]", "L3", "the last step (step 2) has no tester"),
    ],
    ids=["no-yaml", "parse-error", "schema-invalid", "ref-to-a-later-step", "no-tester-last"],
)
async def test_an_invalid_plan_uses_up_its_turn_and_its_tag_reaches_the_next_prompt(
    reply: str, tag: str, rule: str, told: str
) -> None:
    finished, events, server = await run_tw(script_with({1: reply, 2: CHAIN}))

    (plan,) = of(events, PlanProposed, round=1)
    assert (plan.tag, plan.rule) == (tag, rule) and told in plan.message and not plan.runs
    assert plan.raw == reply
    assert of(events, TurnEnded, round=1)[0].status == tag
    # Nothing ran in turn 1: no agent, no graph, no test.
    assert not of(events, ev.AgentStarted, call=CALL_AGENT, round=1)
    assert not of(events, ev.TopologyBuilt, round=1) and not of(events, ev.TestRun, round=1)
    assert any(tag in n.message for n in of(events, ev.Notice, severity="warning"))
    (second,) = requests(server, CALL_ORCHESTRATE, round_no=2)
    assert tag in user_text(second) and told in user_text(second)
    # Turn 2's chain ran; the demo coder's turn-2 code passes.
    assert of(events, PlanProposed, round=2)[0].valid and finished.reason == "passed" and finished.rounds == 2
    assert of(events, TurnEnded, round=2)[0].history.startswith(f"turn 1: {tag} → turn 2: 2 agents, 2 steps")


async def test_k_turns_exhausted_ends_the_run_with_the_last_tested_code() -> None:
    finished, events, server = await run_tw(script_with(lambda turn: CHAIN, always_draft), options={"turns": 3})

    assert finished.reason == "max_turns" and finished.rounds == 3 and finished.solved is False
    assert len(requests(server, CALL_ORCHESTRATE)) == 3
    assert [t.outcome for t in of(events, ev.TestRun)] == ["WRONG_ANSWER"] * 3
    assert "range(1, len(string))" in finished.final_answer
    assert "3 turn(s) used, none passed" in finished.detail


async def test_a_passing_turn_stops_the_run_early() -> None:
    def fixed_at_once(info: RequestInfo) -> str | None:
        return f"```python\n{FINAL_CODE}\n```" if info.role == "coder_1" else None

    finished, events, server = await run_tw(script_with({1: CHAIN}, fixed_at_once), options={"turns": 4})

    assert finished.reason == "passed" and finished.rounds == 1
    assert len(requests(server, CALL_ORCHESTRATE)) == 1 and len(of(events, ev.RoundStarted)) == 1
    assert of(events, ev.TestRun)[0].tests_agent == "tester_1"  # the demo tester's cases ran too


async def test_an_orchestrator_that_never_writes_yaml_cannot_crash_the_run() -> None:
    finished, events, _ = await run_tw(script_with(lambda turn: "{not yaml at all" * 50))

    assert finished.reason == "max_turns" and finished.rounds == 2 and finished.final_answer == ""
    assert [p.tag for p in of(events, PlanProposed)] == ["[NO_YAML_FOUND]"] * 2


async def test_the_fallback_option_runs_a_template_instead_of_losing_the_turn() -> None:
    finished, events, _ = await run_tw(script_with(lambda turn: "no plan today"), options={"fallback": True})

    plans = of(events, PlanProposed)
    assert all(p.tag == "[NO_YAML_FOUND]" and p.fallback and p.runs for p in plans)
    assert plans[0].shape() == "[planner_1, searcher_1] → [algorithmmer_1] → [coder_1] → [tester_1]"
    assert finished.reason == "passed" and finished.rounds == 2  # the retry template reruns coder_1, who fixes it
    assert plans[1].shape() == "[coder_1] → [debugger_1] → [tester_1]"
    said = [n.message for n in of(events, ev.Notice, severity="warning")]
    assert said == ["plan refused [NO_YAML_FOUND]; fallback plan runs"] * 2  # short: the details are in the plans


# --- hostile and broken outputs --------------------------------------------------------------------------


async def test_code_that_does_not_compile_is_the_papers_compile_error() -> None:
    def broken(info: RequestInfo) -> str | None:
        return "```python\ndef make_palindrome(string:\n    return string\n```" if info.role == "coder_1" else None

    finished, events, _ = await run_tw(script_with(lambda turn: CHAIN, broken), options={"turns": 1})

    (test,) = of(events, ev.TestRun)
    assert test.outcome == "COMPILE_ERROR" and "sandbox: SYNTAX_ERROR" in test.detail
    assert of(events, TurnEnded)[0].reward == 0.6 and finished.reason == "max_turns"


async def test_a_coder_without_code_gives_no_code_and_the_next_turn_hears_it() -> None:
    def chatty(info: RequestInfo) -> str | None:
        return "I would rather discuss the approach first." if info.role == "coder_1" and info.round == 1 else None

    finished, events, server = await run_tw(script_with(lambda turn: CHAIN, chatty))

    assert of(events, ev.TestRun, round=1)[0].outcome == "NO_CODE"
    assert "NO_CODE" in user_text(requests(server, CALL_ORCHESTRATE, round_no=2)[0])
    assert finished.reason == "passed"


async def test_an_unreachable_agent_endpoint_ends_the_run_with_a_clear_reason() -> None:
    finished, events, _ = await run_tw(topoweaver_script, faults=[FaultRule("http_401", call=CALL_AGENT, times=0)])

    assert finished.reason == "error" and "rejected the API key" in finished.detail
    assert of(events, PlanProposed)[0].valid


async def test_an_orchestrator_call_that_fails_once_fails_that_turn_and_the_run_goes_on() -> None:
    finished, events, _ = await run_tw(topoweaver_script, faults=[FaultRule("http_500", call=CALL_ORCHESTRATE)])

    assert finished.reason != "error"
    said = [n.message for n in of(events, ev.Notice) if "status 500" in n.message]
    assert said and "its turn is marked failed and the run goes on" in said[0]


async def test_an_orchestrator_endpoint_that_refuses_us_ends_the_run_with_a_clear_reason() -> None:
    finished, events, _ = await run_tw(topoweaver_script, faults=[FaultRule("http_401", call=CALL_ORCHESTRATE)])

    assert finished.reason == "error" and "rejected the API key" in finished.detail and finished.rounds == 1
    assert not of(events, PlanProposed)


async def test_cancel_after_a_tested_turn_keeps_that_code_as_the_answer() -> None:
    async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
        for _ in range(6000):
            if of(events, TurnEnded):
                engine.control.cancel()
                return
            await asyncio.sleep(0.005)
        raise AssertionError("turn 1 never ended")

    finished, _, _ = await run_tw(script_with(None, always_draft), drive=drive)

    assert finished.reason == "cancelled"
    assert "range(1, len(string))" in finished.final_answer and finished.answer_source == "extracted:coder_1"


# --- options, other domains ----------------------------------------------------------------------------


async def test_the_orchestrator_can_run_on_its_own_model() -> None:
    finished, events, server = await run_tw(topoweaver_script, options={"orchestrator_model": "tiny-orchestrator"})

    assert finished.reason == "passed"
    assert {r.body["model"] for r in requests(server, CALL_ORCHESTRATE)} == {"tiny-orchestrator"}
    assert {r.body["model"] for r in requests(server, CALL_AGENT)} == {"scripted-demo"}
    assert any("tiny-orchestrator" in n.message for n in of(events, ev.Notice))


def test_options_are_checked() -> None:
    team = builtin_team("code")
    assert build_method("topoweaver", {"turns": "3"}, team).turns == 3  # type: ignore[attr-defined]
    for bad in ({"turns": 0}, {"turns": 6}, {"fallback": "maybe"}, {"alpha": 2}):
        with pytest.raises(MethodError):
            build_method("topoweaver", bad, team)


async def test_math_runs_on_the_reasoning_pool_with_the_verifiers_answer_check() -> None:
    finished, events, _ = await run_tw(topoweaver_script, domain="math")

    assert finished.reason == "passed" and finished.rounds == 1 and finished.final_answer == "\\frac{14}{3}"
    assert finished.solved is None and not of(events, ev.TestRun)  # no sandbox outside code
    (turn,) = of(events, TurnEnded)
    assert (turn.status, turn.source_agent) == ("CORRECT", "verifier_1")


async def test_a_verifier_that_rejects_the_answer_sends_the_run_into_another_turn() -> None:
    def doubtful(info: RequestInfo) -> str | None:
        if info.role == "verifier_1" and info.round == 1:
            return "The sum is wrong.\nANSWER: 5\nVERDICT: INCORRECT"
        return None

    finished, events, server = await run_tw(script_with(None, doubtful), domain="math")

    assert [t.status for t in of(events, TurnEnded)] == ["INCORRECT", "CORRECT"] and finished.reason == "passed"
    assert "INCORRECT" in user_text(requests(server, CALL_ORCHESTRATE, round_no=2)[0])


# --- sessions, headless, --json, bench ------------------------------------------------------------------


async def test_a_topoweaver_session_round_trips_and_exports_its_dag_with_kinds(tmp_path: Path) -> None:
    _, events, _ = await run_tw(topoweaver_script)

    session = session_from_events(events)
    path = tmp_path / "tw.json"
    path.write_text(json.dumps(session.to_dict()), encoding="utf-8")
    loaded = Session.from_dict(json.loads(path.read_text(encoding="utf-8")), source=str(path))
    assert [e.to_dict() for e in loaded.replay_events()] == session.events
    replayed = [e for e in loaded.replay_events() if isinstance(e, PlanProposed | TurnEnded)]
    assert [type(e).__name__ for e in replayed] == ["PlanProposed", "TurnEnded"] * 2
    assert loaded.metadata.strategy == "topoweaver" and loaded.metadata.workers == []
    assert [r.routing is not None for r in loaded.rounds] == [True, True]
    dot, mermaid = export_session(loaded, "dot"), export_session(loaded, "mermaid")
    assert '"r2_coder_1@1" -> "r2_coder_1" [label="cross", style=dashed];' in dot
    assert '"r1_coder_1" -> "r1_tester_1" [label="ref"];' in dot
    assert "-.->|cross|" in mermaid and "-->|ref|" in mermaid
    assert "steps [coder_1] → [debugger_1] → [tester_1]" in export_session(loaded, "md")


async def test_headless_progress_and_json_lines_carry_the_plans() -> None:
    _, events, _ = await run_tw(topoweaver_script)

    out = io.StringIO()
    printer = ProgressPrinter(out)
    for event in events:
        printer(event)
    text = out.getvalue()
    assert "team: Orchestrator (the agents join as it names them)" in text
    # TopoWeaver steps by turns, and says so (core.methods.registry.MethodInfo.unit).
    assert "── turn 1/2\n" in text and "tau" not in text.split("── turn 1/2")[1].splitlines()[0]
    assert "plan: VALID" in text and "interview (N_max 7): 5 agents in 3 steps" in text
    assert "density: |V| 5 · |E| 4 · s 3" in text and "S_complex(α=1) 3.60" in text
    assert "graph: coder_1@1→coder_1 (cross)" in text
    assert "history: turn 1: 5 agents, 3 steps, WRONG_ANSWER → turn 2: 3 agents, 3 steps, PASSED" in text
    for event in events:  # --json writes event.to_dict(); each line reads back as the same event
        assert ev.event_from_dict(json.loads(json.dumps(event.to_dict()))) == event


async def test_the_bench_reports_calls_turns_valid_plan_rate_and_s_complex(tmp_path: Path) -> None:
    problems = [humaneval_problem(0), humaneval_problem(1)]
    settings = Settings(strategy="topoweaver")
    with ScriptedServer(benchmark_script(problems)) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            runner = BenchRunner(settings, backend, None, tmp_path)  # type: ignore[arg-type]  # no embeddings
            rows = await runner.run([(p, "topoweaver") for p in problems])
        finally:
            await backend.close()
    assert [r.correct for r in rows] == [True, True] and all(r.end_reason == "passed" for r in rows)
    assert all(r.calls == 3 and r.rounds == 1 for r in rows)
    assert all(r.metrics["valid_plan_rate"] == 1.0 and r.metrics["turns"] == 1.0 for r in rows)
    assert rows[0].metrics["s_complex"] == pytest.approx(2.7726, abs=1e-4)


def test_run_metrics_count_invalid_plans_and_average_only_valid_ones() -> None:
    def plan(turn: int, tag: str, s_complex: float | None) -> PlanProposed:
        return PlanProposed(round=turn, raw="", yaml="", tag=tag,
                            density={"S_complex": s_complex} if s_complex is not None else {})

    metrics = run_metrics([plan(1, "[YAML_PARSE_ERROR]", None), plan(2, "VALID", 3.0), plan(3, "VALID", 4.0)])
    assert metrics == {"turns": 3.0, "valid_plan_rate": pytest.approx(2 / 3), "s_complex": 3.5}
    assert run_metrics([]) == {}


async def test_a_fork_from_turn_one_rebuilds_the_history_and_memory_before_turn_two() -> None:
    from core.sessions.fork import fork_point

    _, parent_events, _ = await run_tw(script_with(None, always_draft), options={"turns": 2})
    point = fork_point(session_from_events(parent_events), 1, "parent.json")

    async def run_fork() -> tuple[ev.RunFinished, list[ev.Event], ScriptedServer]:
        settings = Settings(strategy="topoweaver", max_retries=0)
        with ScriptedServer(topoweaver_script) as server:
            backend = await open_backend(settings, BackendChoice(server=server))
            events: list[ev.Event] = []
            engine = build_engine(PROBLEM, settings, backend, [events.append], fork=point)
            try:
                finished = await asyncio.wait_for(engine.run(), timeout=120)
            finally:
                await backend.close()
        return finished, events, server

    finished, events, server = await run_fork()
    assert events[0].parent == {"session": "parent.json", "round": 1}  # type: ignore[attr-defined]
    assert [p.round for p in of(events, PlanProposed)] == [1, 2]  # turn 1 re-emitted, turn 2 live
    assert not requests(server, CALL_ORCHESTRATE, round_no=1) and not requests(server, CALL_AGENT, round_no=1)
    assert "WRONG_ANSWER" in user_text(requests(server, CALL_ORCHESTRATE, round_no=2)[0])
    # Its memory: the fork continues its conversation, where its turn-1 draft is its own assistant turn.
    coder = requests(server, CALL_AGENT, "coder_1", 2)[0]
    assert any(m["role"] == "assistant" and "range(1, len(string))" in str(m["content"]) for m in coder.messages)
    assert finished.reason == "passed" and finished.rounds == 2
    assert of(events, TurnEnded, round=2)[0].history.startswith("turn 1: 5 agents, 3 steps, WRONG_ANSWER → turn 2")
    session_from_events(events)  # the fork's own session is valid

"""DMoA end to end: the real openai client over HTTP to the scripted server, real MiniLM, the real engine.

The router's logged logits give back k_i and alpha; X_{i+1} matches a direct computation from the step's
responses; the Summarizer's tags and L_max end the run; hostile replies do not crash it; one training
step lowers the ranking loss; training is refused without logprobs; test-time training updates the
router; sessions round-trip, export and fork; a pool larger than the built-in teams just works.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.methods.catalogue import build_method
from core.methods.dmoa.events import CALL_SELECT, CALL_STEP, CALL_SUMMARY, DmoaRouted, DmoaStepDone, steps_from_events
from core.methods.dmoa.method import SUMMARIZER, DmoaMethod
from core.methods.dmoa.routing import choose
from core.methods.dmoa.selector import SELECTOR
from core.methods.dmoa.ttt import reset_ttt
from core.routing.dytopo import KIND_HANDOFF, RoutingResult
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.engine import SwarmEngine
from core.runtime.rosters import Role, Team, builtin_team
from core.runtime.scripted import RequestInfo
from core.sessions.export import export_session
from core.sessions.fork import fork_point
from core.sessions.model import session_from_events
from core.sessions.store import SessionRecorder, load_session

pytestmark = pytest.mark.usefixtures("embedder")


async def run_dmoa(
    server: ScriptedServer,
    embedder: Any,
    weights: Path,
    *,
    domain: str = "math",
    options: dict[str, Any] | None = None,
    problem: str | None = None,
    sinks: list[Callable[[ev.Event], None]] | None = None,
    fork: Any = None,
    team: Team | None = None,
) -> tuple[ev.RunFinished, list[ev.Event], SwarmEngine]:
    settings = Settings(domain=domain, strategy="dmoa", sessions_dir=str(weights / "sessions"))
    backend = await open_backend(settings, BackendChoice(server=server))
    events: list[ev.Event] = []
    given = {"weights_dir": str(weights), **(options or {})}
    method = build_method("dmoa", given, team or builtin_team(domain))
    engine = build_engine(problem or DEMO_PROBLEMS[domain], settings, backend, [events.append, *(sinks or [])],
                          embedder=embedder, method=method, fork=fork)
    if team is not None:
        engine.team, engine.workers = team, team.worker_names
    backend.server = None  # the caller's `with` stops the server: it may serve several runs
    try:
        finished = await asyncio.wait_for(engine.run(), timeout=120)  # a hang guard, not a speed test
    finally:
        await backend.close()
    return finished, events, engine


def of(events: list[ev.Event], kind: type[ev.Event], **match: Any) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())]


def user_text(info: RequestInfo) -> str:
    return "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "user")


def with_summaries(replies: dict[int, str], last: str | None = None) -> Callable[[RequestInfo], str]:
    """The demo script, with the Summarizer's reply per step replaced."""

    def script(info: RequestInfo) -> str:
        if info.call == CALL_SUMMARY:
            if last is not None and "This is the last step" in user_text(info):
                return last
            return replies.get(info.round, "[CONTINUE] keep going")
        return demo_script(info)

    return script


# --- one run, checked against the equations ---------------------------------------------------------


async def test_each_step_routes_by_the_equations_and_the_summarizer_ends_the_run(
    tmp_path: Path, embedder: Any
) -> None:
    with ScriptedServer(demo_script) as server:
        finished, events, _ = await run_dmoa(server, embedder, tmp_path, domain="code")
        requests = list(server.requests)
    assert finished.reason == "summarizer" and finished.rounds == 3
    assert "def make_palindrome" in finished.final_answer and finished.answer_source == "summarizer"
    routed = of(events, DmoaRouted)
    assert [r.round for r in routed] == [1, 2, 3]
    for r in routed:
        again = choose(np.asarray(r.logits), r.tau, r.k_max)
        assert (again.k, [r.names[i] for i in again.selected]) == (r.k, r.selected)
        assert list(again.alpha) == pytest.approx(r.alpha, abs=1e-5)
        assert r.k >= 1 and r.k_max == 3 and r.names == ["Developer", "Researcher", "Tester", "Designer"]
        ran = {e.agent for e in of(events, ev.AgentFinished, round=r.round, call=CALL_STEP)}
        assert ran == set(r.selected)  # sparse: only the routed agents run
    for before, after in itertools.pairwise(routed):
        outputs = {e.agent: e.public for e in of(events, ev.AgentFinished, round=before.round, call=CALL_STEP)}
        vectors = embedder.embed([outputs[name] for name in before.selected])
        direct = sum(a * v for a, v in zip(before.alpha, vectors, strict=True))  # X_{i+1} = sum alpha_j R_hat_j
        assert after.context == pytest.approx(list(direct), abs=1e-4)
        cos = np.dot(after.context, before.context) / np.linalg.norm(after.context) / np.linalg.norm(before.context)
        assert after.context_shift == pytest.approx(float(cos), abs=1e-3)
        graph = RoutingResult.from_dict(of(events, ev.TopologyBuilt, round=after.round)[0].routing)
        weight = dict(zip(before.selected, before.alpha, strict=True))
        assert {(e.src, e.dst) for e in graph.edges} == {(s, d) for s in before.selected for d in after.selected}
        assert all(e.kind == KIND_HANDOFF and e.score == pytest.approx(weight[e.src], abs=1e-4) for e in graph.edges)
        # P_last: every agent of step i+1 reads every response of step i, numbered.
        for info in (q for q in requests if q.call == CALL_STEP and q.round == after.round):
            text = user_text(info)
            assert f"RESPONSES FROM STEP {before.round}" in text
            assert all(outputs[name] in text for name in before.selected)
    first = [q for q in requests if q.call == CALL_STEP and q.round == 1]
    assert first and all("RESPONSES FROM" not in user_text(q) for q in first)  # P_last is empty at step 1
    x1 = embedder.embed([DEMO_PROBLEMS["code"]])[0]
    assert routed[0].context == pytest.approx(list(x1), abs=1e-5)  # eq. 1: X_1 = MiniLM(problem)
    done = of(events, DmoaStepDone)
    assert [d.tag for d in done] == ["CONTINUE", "CONTINUE", "FINAL"]
    decisions = of(events, ev.ManagerDecided)
    assert [d.terminate for d in decisions] == [False, False, True]


async def test_a_step_with_more_agents_than_the_team_runs_k_of_them(tmp_path: Path, embedder: Any) -> None:
    """The team issue will bring pools of up to 20: a pool of 10 routes at most K = 4 a step."""
    roles = tuple(Role(f"Expert{i}", f"Expert {i}", f"Knows area {i} well.", "", "") for i in range(10))
    team = Team("math", builtin_team("math").manager, roles, "Expert0", "")
    with ScriptedServer(demo_script) as server:
        finished, events, _ = await run_dmoa(server, embedder, tmp_path, team=team, options={"tau": 1.0})
    started = of(events, ev.RunStarted)[0]
    assert started.workers == [r.name for r in roles] and started.manager == SUMMARIZER
    routed = of(events, DmoaRouted)
    assert routed and all(len(r.logits) == 10 and r.k_max == 4 and 1 <= r.k <= 4 for r in routed)
    assert finished.reason == "summarizer"


# --- how runs end ------------------------------------------------------------------------------------


async def test_l_max_stops_the_run_and_asks_for_the_final_answer(tmp_path: Path, embedder: Any) -> None:
    script = with_summaries({}, last="My best answer is 7.")  # never [FINAL], not even at the end
    with ScriptedServer(script) as server:
        finished, events, _ = await run_dmoa(server, embedder, tmp_path, options={"l_max": 2})
        asks = [user_text(q) for q in server.requests if q.call == CALL_SUMMARY]
    assert finished.reason == "max_rounds" and finished.rounds == 2
    assert finished.final_answer == "My best answer is 7."
    assert "This is the last step" not in asks[0] and "This is the last step (2)" in asks[1]
    done = of(events, DmoaStepDone)
    assert [d.tag for d in done] == ["CONTINUE", "CONTINUE"] and "L_max" in done[-1].note
    assert of(events, ev.ManagerDecided)[-1].terminate


async def test_summarizer_tags_neither_both_and_final(tmp_path: Path, embedder: Any) -> None:
    script = with_summaries({
        1: "The responses look promising but I cannot tell yet.",
        2: "[CONTINUE] check f(-1) again. If it holds: [FINAL] 14/3",
        3: "[FINAL] \\frac{14}{3}\n[CONTINUE] (ignore this)",
    })
    with ScriptedServer(script) as server:
        finished, events, _ = await run_dmoa(server, embedder, tmp_path)
    done = of(events, DmoaStepDone)
    assert [(d.found, d.tag) for d in done] == [("none", "CONTINUE"), ("both", "CONTINUE"), ("both", "FINAL")]
    assert finished.reason == "summarizer" and finished.rounds == 3
    assert finished.final_answer == "\\frac{14}{3}"


async def test_hostile_replies_get_a_notice_and_the_run_goes_on(tmp_path: Path, embedder: Any) -> None:
    def script(info: RequestInfo) -> str:
        if info.call == CALL_SELECT:
            return "I will not choose. {{{ [[[ not json"
        if info.call == CALL_SUMMARY:
            return {1: "[FINAL]", 2: "[" * 5000 + "]]]"}.get(info.round, "[FINAL] 14/3")
        if info.call == CALL_STEP and info.round == 2:
            return ""  # an agent with nothing to say
        return demo_script(info)

    with ScriptedServer(script) as server:
        finished, events, _ = await run_dmoa(server, embedder, tmp_path, options={"router": "llm"})
    assert finished.reason == "summarizer" and finished.final_answer == "14/3" and finished.rounds == 3
    notices = [n.message for n in of(events, ev.Notice)]
    assert sum("Selector's reply was unusable" in m for m in notices) == 3  # once a step
    assert any("no routed agent answered" in m for m in notices)
    assert all("semantic" in r.note for r in of(events, DmoaRouted))
    assert [d.tag for d in of(events, DmoaStepDone)] == ["CONTINUE", "CONTINUE", "FINAL"]
    assert SELECTOR in {e.agent for e in of(events, ev.AgentFinished)}


async def test_a_selector_that_works_drives_the_steps(tmp_path: Path, embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        finished, events, _ = await run_dmoa(server, embedder, tmp_path, options={"router": "llm"})
    routed = of(events, DmoaRouted)
    assert [(r.selected, r.alpha) for r in routed] == [(["ProblemParser", "Solver"], [0.5, 0.5]),
                                                      (["Verifier", "Solver"], [0.6, 0.4])]
    assert finished.reason == "summarizer" and finished.final_answer == "\\frac{14}{3}"


# --- training ----------------------------------------------------------------------------------------


async def test_one_training_step_lowers_the_ranking_loss(tmp_path: Path, embedder: Any) -> None:
    from core.methods.dmoa.train import GRURouter, mean_loss, train

    traces = []
    with ScriptedServer(demo_script) as server:
        for problem in (DEMO_PROBLEMS["math"], "What is 2 + 3 * 4?"):
            _, events, engine = await run_dmoa(server, embedder, tmp_path, problem=problem, options={"collect": True})
            method = engine.method
            assert isinstance(method, DmoaMethod) and method.trace is not None
            traces.append(method.trace)
            done = of(events, DmoaStepDone)
            assert all(set(d.entropy) == {"ProblemParser", "Solver", "Verifier"} for d in done)
            assert all(d.rank_loss is not None and d.top_logprobs == 5 for d in done)
            assert all(r.dense for r in of(events, DmoaRouted))
            ran = {e.agent for e in of(events, ev.AgentFinished, round=1, call=CALL_STEP)}
            assert ran == {"ProblemParser", "Solver", "Verifier"}  # dense: every agent runs
        asked = [q.body for q in server.requests if q.call == CALL_STEP]
    assert asked and all(b.get("logprobs") is True and b.get("top_logprobs") == 5 for b in asked)
    entropies = [e for t in traces for s in t.steps for e in s.entropy]
    assert len(set(entropies)) > 1  # the scripted pool is not uniformly confident
    router = GRURouter(3, seed=0)
    before = mean_loss(router, traces, tau=0.1, k_max=2)
    reports = train(router, traces, tau=0.1, k_max=2, epochs=1, batch_size=8)
    assert reports[0].batches == 1  # one optimiser step
    assert mean_loss(router, traces, tau=0.1, k_max=2) < before


def _math_dataset(path: Path) -> Path:
    path.write_text(json.dumps({"problem": DEMO_PROBLEMS["math"], "answer": "\\frac{14}{3}"}) + "\n")
    return path


def test_training_is_refused_without_logprobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tui.cli.train_dmoa import main

    dataset = _math_dataset(tmp_path / "m.jsonl")
    with ScriptedServer(demo_script, ServerBehaviour(logprobs=False)) as server:
        code = main([str(dataset), "--limit", "1", "--base-url", server.base_url, "-o", f"weights_dir={tmp_path}"])
        served = list(server.requests)
    err = capsys.readouterr().err
    assert code == 1
    assert "training refused" in err and "logprobs" in err and len(err.strip().splitlines()) == 1
    assert len(served) == 1  # only the probe: no run was started
    assert not list(tmp_path.glob("*.npz"))


def test_training_cli_trains_and_saves_per_domain_and_team(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from core.methods.dmoa.router import RouterStore
    from tui.cli.train_dmoa import main

    dataset = _math_dataset(tmp_path / "m.jsonl")
    code = main([str(dataset), "--demo", "--limit", "1", "-o", f"weights_dir={tmp_path}"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "entropy: ProblemParser" in err and "epoch 3/3" in err and "router weights saved" in err
    _, info = RouterStore(tmp_path).load("math", ["ProblemParser", "Solver", "Verifier"])
    assert info.trained_queries == 1 and info.source == "few-shot"


async def test_test_time_training_goes_dense_then_updates_the_router(tmp_path: Path, embedder: Any) -> None:
    reset_ttt()
    try:
        with ScriptedServer(demo_script) as server:
            _, first, _ = await run_dmoa(server, embedder, tmp_path, options={"ttt": 1})
            _, second, _ = await run_dmoa(server, embedder, tmp_path, options={"ttt": 1})
    finally:
        reset_ttt()
    assert all(r.dense for r in of(first, DmoaRouted))
    assert any("router updated on 1 dense runs" in n.message for n in of(first, ev.Notice))
    assert list(tmp_path.glob("math-3-*.npz"))
    assert not any(r.dense for r in of(second, DmoaRouted))
    assert "trained (ttt) on 1 queries" in of(second, DmoaRouted)[0].note


async def test_test_time_training_without_logprobs_goes_on_sparse(tmp_path: Path, embedder: Any) -> None:
    reset_ttt()
    try:
        with ScriptedServer(demo_script, ServerBehaviour(logprobs=False)) as server:
            finished, events, _ = await run_dmoa(server, embedder, tmp_path, options={"ttt": 1})
    finally:
        reset_ttt()
    assert finished.reason == "summarizer"
    assert sum("test-time training is off" in n.message for n in of(events, ev.Notice)) == 1
    assert [r.dense for r in of(events, DmoaRouted)] == [True, False]
    assert not list(tmp_path.glob("*.npz"))


async def test_damaged_weights_fall_back_to_a_seeded_router(tmp_path: Path, embedder: Any) -> None:
    from core.methods.dmoa.router import RouterStore

    RouterStore(tmp_path).path("math", ["ProblemParser", "Solver", "Verifier"]).write_bytes(b"not a torch file")
    with ScriptedServer(demo_script) as server:
        finished, events, _ = await run_dmoa(server, embedder, tmp_path)
    assert finished.reason == "summarizer"
    assert any("cannot load router weights" in n.message for n in of(events, ev.Notice))
    assert "seeded initialisation" in of(events, DmoaRouted)[0].note


# --- sessions ----------------------------------------------------------------------------------------


async def test_session_round_trip_export_and_fork(tmp_path: Path, embedder: Any) -> None:
    path = tmp_path / "dmoa.json"
    recorder = SessionRecorder(tmp_path, path=path)
    with ScriptedServer(demo_script) as server:
        _, events, _ = await run_dmoa(server, embedder, tmp_path, sinks=[recorder])
    loaded = load_session(path)
    recorded = [e.to_dict() for e in events if not isinstance(e, ev.AgentDelta)]
    assert [e.to_dict() for e in loaded.replay_events()] == recorded
    assert steps_from_events(loaded.replay_events()).keys() == {1, 2}
    toml_path = tmp_path / "dmoa.toml"
    from core.sessions.store import save_session

    save_session(loaded, toml_path)
    assert [e.to_dict() for e in load_session(toml_path).replay_events()] == recorded
    markdown = export_session(loaded, "md")
    assert "router (gru): k " in markdown and "1/N = 0.33" in markdown
    assert "->|handoff " in export_session(loaded, "mermaid")  # the hand-off edges, weighted by alpha
    assert loaded.outcome is not None and loaded.outcome.reason == "summarizer"

    # Fork after step 1: the history comes back, step 2 runs from the same context vector.
    point = fork_point(loaded, 1, str(path))
    with ScriptedServer(demo_script) as server:
        forked, fork_events, _ = await run_dmoa(server, embedder, tmp_path, fork=point)
        fresh = [q for q in server.requests if q.call in (CALL_STEP, CALL_SUMMARY)]
    assert forked.reason == "summarizer" and forked.rounds == 2
    assert {q.round for q in fresh} == {2}  # step 1 was not run again
    parent_step2 = of(events, DmoaRouted, round=2)[0]
    fork_step2 = of(fork_events, DmoaRouted, round=2)[0]
    assert fork_step2.context == pytest.approx(parent_step2.context, abs=1e-4)
    assert fork_step2.selected == parent_step2.selected
    assert session_from_events([e for e in fork_events if not isinstance(e, ev.AgentDelta)]).completed_rounds == 2


async def test_bench_reports_accuracy_steps_and_mean_k(tmp_path: Path, embedder: Any) -> None:
    from core.bench.runner import BenchRunner, format_table, summarize
    from core.datasets.loader import load_dataset
    from core.demo.bench_script import benchmark_script

    dataset = load_dataset(_math_dataset(tmp_path / "m.jsonl"))
    settings = Settings(domain="math", strategy_options={"dmoa": {"weights_dir": str(tmp_path)}})
    with ScriptedServer(benchmark_script(dataset.problems)) as server:
        backend = await open_backend(settings, BackendChoice(server=server, demo=True))
        try:
            runner = BenchRunner(settings, backend, embedder, tmp_path / "out")
            rows = await runner.run([(dataset.problems[0], "dmoa")])
        finally:
            await backend.close()
    assert rows[0].correct and rows[0].rounds == 2 and rows[0].metrics["k"] >= 1
    summary = summarize(rows, ["dmoa"])
    assert summary[0]["mean_k"] == rows[0].metrics["k"]
    assert "k " in format_table(summary)  # DMoA's mean k, on the method's own figures line


@pytest.mark.parametrize(("query_in", "in_system"), [(None, True), ("system", True), ("user", False)])
async def test_the_problem_sits_in_each_agents_system_prompt_as_the_paper_builds_it(
    tmp_path: Path, embedder: Any, query_in: str | None, in_system: bool
) -> None:
    """P_sys = (Profile, P_usr) (§3.1) by default; -o query_in=user moves the problem to the user message."""
    problem = DEMO_PROBLEMS["math"]
    options = {"query_in": query_in} if query_in else {}
    with ScriptedServer(demo_script) as server:
        await run_dmoa(server, embedder, tmp_path, options=options)
        steps = [r for r in server.requests if r.call == CALL_STEP]
    assert steps
    for request in steps:
        system = "\n".join(str(m["content"]) for m in request.messages if m["role"] == "system")
        assert (problem in system) is in_system
        assert (problem in user_text(request)) is not in_system

"""The MCP server's six tools through the SDK's in-memory client, against the scripted model server
(real HTTP, real openai client, real MiniLM): start -> poll -> result with topology, unknown ids, a
result while running, cancel, a 500 storm, the wall-clock budget, eviction at 20, refused values and two
swarms at once. Every wait is bounded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")


from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.mcp.tasks import MAX_TASKS, SwarmTask, TaskStatus
from core.runtime.config import Settings
from core.sessions.compare_record import load_record
from core.sessions.eventlog import find_task, has_ended, log_path_for, read_header
from core.sessions.store import load_session
from tests.support.mcp import CALL_TIMEOUT, RUN_TIMEOUT, connected, finished, ok, poll_until, refused


async def test_tools_are_published_with_input_and_output_schemas(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, _, _):
        tools = {t.name: t for t in (await asyncio.wait_for(session.list_tools(), CALL_TIMEOUT)).tools}
    assert set(tools) == {"swarm_start", "swarm_compare", "swarm_status", "swarm_result", "swarm_cancel", "swarm_steer"}
    start = tools["swarm_start"].inputSchema["properties"]
    assert start["tau"]["maximum"] == 1.0 and start["tau"]["minimum"] == 0.0
    assert start["max_rounds"]["maximum"] == 10 and "(default code;" in start["domain"]["description"]
    assert start["domain"]["default"] is None  # so that a domain given beside a team can be checked
    assert start["strategy"]["default"] == "dytopo" and "chain" in start["strategy"]["description"]
    assert tools["swarm_start"].inputSchema["required"] == ["task"]
    compare = tools["swarm_compare"].inputSchema["properties"]
    assert "each method's run" in compare["time_budget"]["description"]
    assert "each method's run" in compare["max_calls"]["description"]
    # The bounds the settings model checks, published from it (core.runtime.config.schema_bounds).
    assert (compare["time_budget"]["minimum"], compare["time_budget"]["maximum"]) == (1, 36000)
    assert (compare["max_calls"]["minimum"], compare["max_calls"]["maximum"]) == (1, 100000)
    for name, field in (("swarm_start", "task_id"), ("swarm_status", "poll_interval_s"),
                        ("swarm_result", "topology"), ("swarm_cancel", "cancelled")):
        assert field in tools[name].outputSchema["properties"], name


async def test_start_poll_result_with_every_rounds_topology(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, manager, _):
        began = time.monotonic()
        started = await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"])
        assert time.monotonic() - began < 5  # the id comes back at once; the run goes on in the background
        task_id = started["task_id"]
        assert started["status"] == "running" and started["strategy"] == "dytopo"
        assert started["params"] == {"tau": 0.3, "k_in": 3, "max_rounds": 5}
        assert started["team"] == ["Manager", "Developer", "Researcher", "Tester", "Designer"]
        assert started["attach"] == f"swarm-tui attach {task_id}" and started["poll_interval_s"] > 0

        seen_rounds: set[int] = set()

        def progress(status: dict[str, Any]) -> bool:
            seen_rounds.add(status["round"])
            return finished(status)

        status = await poll_until(session, task_id, progress)
        assert status["status"] == TaskStatus.COMPLETED and status["termination_reason"] == "manager"
        assert status["round"] == 3 and status["max_rounds"] == 5 and status["poll_interval_s"] is None
        assert status["llm_calls"] > 10
        assert status["tokens"] == status["prompt_tokens"] + status["completion_tokens"] > 0
        assert status["active_agents"] == [] and status["elapsed_s"] > 0
        assert seen_rounds & {1, 2, 3}, "the status followed the rounds while it ran"

        plain = await ok(session, "swarm_result", task_id=task_id)
        assert plain["topology"] is None
        result = await ok(session, "swarm_result", task_id=task_id, include_topology=True)
    assert result["status"] == "completed" and "def make_palindrome" in result["final_answer"]
    assert result["termination_reason"] == "manager" and result["rounds"] == 3 and result["wall_s"] > 0
    assert result["tokens"] == status["tokens"]
    rounds = result["topology"]
    assert [r["round"] for r in rounds] == [1, 2, 3]
    assert rounds[0]["broadcast"] and rounds[0]["goal"] and rounds[0]["graphs"] == []
    for r in rounds[1:]:
        assert r["goal"] and r["decision"] is not None and r["params"]["tau"] == 0.3
        (graph,) = r["graphs"]
        assert graph["kind"] == "topology_built" and graph["strategy"] == "dytopo"
        edges = graph["edges"]
        assert edges and all(set(e) == {"src", "dst", "score", "kind"} and e["score"] >= 0.3 for e in edges)
        assert {e["kind"] for e in graph["edges"]} == {"routed"}
        assert sorted(graph["order"]) == ["Designer", "Developer", "Researcher", "Tester"] and graph["tiers"]
        assert "similarity" not in graph and "query_embeddings" not in graph
    assert rounds[-1]["decision"]["terminate"] is True

    # Saved like any run: the session loads, and its event log names the task and has ended.
    session_file = Path(result["session_file"])
    assert load_session(session_file).outcome.reason == "manager"
    assert read_header(log_path_for(session_file))["task_id"] == task_id and has_ended(log_path_for(session_file))
    assert find_task(manager.sessions_dir, task_id).session == session_file


async def test_an_unknown_id_is_an_error_that_lists_the_known_ids(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, _, _):
        assert "known task ids: none" in await refused(session, "swarm_status", task_id="nope")
        started = await ok(session, "swarm_start", task="Say hello.", domain="general")
        for tool in ("swarm_status", "swarm_result", "swarm_cancel"):
            text = await refused(session, tool, task_id="nope")
            assert "no swarm task 'nope'" in text and started["task_id"] in text, tool
        await poll_until(session, started["task_id"], finished)


async def test_result_while_running_says_still_running_then_cancel_stops_it(tmp_path: Path, embedder: Any) -> None:
    slow = ScriptedServer(demo_script, ServerBehaviour(chunk_delay=0.02))
    async with connected(tmp_path, embedder, server=slow) as (session, _, _):
        task_id = (await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"]))["task_id"]
        await poll_until(session, task_id, lambda s: s["round"] >= 1 and bool(s["active_agents"]))
        early = await ok(session, "swarm_result", task_id=task_id, include_topology=True)
        assert early["status"] == "running" and early["final_answer"] is None
        assert early["message"].startswith("still running") and early["termination_reason"] is None
        assert early["topology"][0]["round"] == 1  # what has happened so far

        cancel = await ok(session, "swarm_cancel", task_id=task_id)
        assert cancel["cancelled"] is True
        status = await poll_until(session, task_id, finished, timeout=30)
        assert status["status"] == "cancelled" and status["termination_reason"] == "cancelled"
        again = await ok(session, "swarm_cancel", task_id=task_id)
        assert again["cancelled"] is False and again["status"] == "cancelled"
        result = await ok(session, "swarm_result", task_id=task_id)
    assert result["status"] == "cancelled" and result["termination_reason"] == "cancelled"
    saved = load_session(Path(result["session_file"]))
    assert saved.outcome is not None and saved.outcome.reason == "cancelled"
    assert has_ended(log_path_for(Path(result["session_file"])))


async def test_a_500_storm_fails_the_swarm_and_the_server_keeps_answering(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, _, scripted):
        scripted.add_fault(FaultRule("http_500", times=0))  # every call, for good
        task_id = (await ok(session, "swarm_start", task=DEMO_PROBLEMS["math"], domain="math"))["task_id"]
        status = await poll_until(session, task_id, finished)
        assert status["status"] == "failed" and status["error"] and "500" in status["error"]
        result = await ok(session, "swarm_result", task_id=task_id)
        assert result["status"] == "failed" and result["error"] == status["error"]
        assert result["message"].startswith("failed:")

        scripted.clear_faults()  # the server still answers, and the next swarm runs
        second = (await ok(session, "swarm_start", task=DEMO_PROBLEMS["math"], domain="math"))["task_id"]
        assert (await poll_until(session, second, finished))["status"] == "completed"
        assert (await ok(session, "swarm_status", task_id=task_id))["status"] == "failed"


async def test_a_swarm_over_its_wall_clock_budget_is_stopped_and_reported_failed(
    tmp_path: Path, embedder: Any
) -> None:
    slow = ScriptedServer(demo_script, ServerBehaviour(latency=0.4))
    async with connected(tmp_path, embedder, server=slow) as (session, _, _):
        started = await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"], options={"budget_s": 2})
        assert started["budget_s"] == 2
        status = await poll_until(session, started["task_id"], finished, timeout=60)
    assert status["status"] == "failed" and "timed out after 2 s" in status["error"]
    assert status["elapsed_s"] < 30


async def test_a_time_budget_ends_the_run_as_completed_with_reason_budget(tmp_path: Path, embedder: Any) -> None:
    slow = ScriptedServer(demo_script, ServerBehaviour(latency=0.4))
    async with connected(tmp_path, embedder, server=slow) as (session, _, _):
        started = await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"], options={"time_budget": 2})
        assert started["budget_s"] >= 2 + 1  # the hard stop leaves the run time to end on its own
        status = await poll_until(session, started["task_id"], finished, timeout=60)
        result = await ok(session, "swarm_result", task_id=started["task_id"])
    assert status["status"] == "completed" and status["termination_reason"] == "budget", status
    assert "time budget of 2 s" in result["detail"]


async def test_max_calls_ends_the_run_after_that_many_model_calls(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, _, scripted):
        started = await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"], options={"max_calls": 3})
        status = await poll_until(session, started["task_id"], finished)
        sent = len(scripted.requests)
    assert status["status"] == "completed" and status["termination_reason"] == "budget", status
    assert sent == 3  # the Manager's plan and two workers' calls: the rest were never sent


async def test_a_full_store_evicts_the_oldest_half_of_the_finished_tasks(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, manager, _):
        now = time.time()
        for i in range(MAX_TASKS):
            entry = SwarmTask(id=f"old{i:02d}", task="t", domain="code", strategy="dytopo",
                              params={"tau": 0.3, "k_in": 3, "max_rounds": 5}, options={}, context="",
                              budget_s=600, status=TaskStatus.COMPLETED, started_at=now - 100)
            entry.finished_at = now - 50 + (i * 7) % MAX_TASKS  # finish times out of insertion order
            manager.tasks[entry.id] = entry
        by_age = sorted(manager.tasks.values(), key=lambda t: t.finished_at or 0)
        oldest = {t.id for t in by_age[: MAX_TASKS // 2]}
        new_id = (await ok(session, "swarm_start", task="Say hello.", domain="general"))["task_id"]
        assert len(manager.tasks) == MAX_TASKS // 2 + 1
        assert not oldest & set(manager.tasks) and new_id in manager.tasks
        assert "known task ids" in await refused(session, "swarm_status", task_id=sorted(oldest)[0])
        await poll_until(session, new_id, finished)

        # Every slot running: a start is refused, nothing is evicted.
        manager.tasks.clear()
        for i in range(MAX_TASKS):
            manager.tasks[f"run{i:02d}"] = SwarmTask(
                id=f"run{i:02d}", task="t", domain="code", strategy="dytopo",
                params={"tau": 0.3, "k_in": 3, "max_rounds": 5}, options={}, context="", budget_s=600,
            )
        text = await refused(session, "swarm_start", task="One more.")
        assert "too many running swarms (20 of 20)" in text and len(manager.tasks) == MAX_TASKS


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"tau": 1.5}, "tau must be between 0 and 1, got 1.5"),
        ({"tau": -0.1}, "tau must be between 0 and 1, got -0.1"),
        ({"k_in": 0}, "k_in must be at least 1, got 0"),
        ({"k_in": 4}, "k_in must be between 1 and 3 for the code team of 4 workers, got 4"),
        ({"k_in": 3, "domain": "math"}, "k_in must be between 1 and 2 for the math team"),
        ({"max_rounds": 11}, "max_rounds must be between 1 and 10, got 11"),
        ({"max_rounds": 0}, "max_rounds must be between 1 and 10, got 0"),
        ({"domain": "poetry"}, "unknown domain 'poetry': choose one of code, math, general"),
        ({"strategy": "telepathy"}, "unknown strategy 'telepathy': choose one of dytopo, single, single-turn"),
        ({"context": "x" * 4001}, "context is 4001 characters; the limit is 4000"),
        ({"options": {"turbo": True}},
         "unknown option 'turbo': the options are protocol, execute, allow_unisolated_code, budget_s, time_budget, "
         "max_calls, max_cost, descriptor_context, memory, "
         "payload, prompt_order; and KIND_max_tokens, KIND_temperature for KIND in manager, worker, descriptor"),
        ({"options": {"time_budget": 0}}, "option time_budget must be between 1 and 36000 seconds, got 0"),
        ({"options": {"time_budget": 60, "budget_s": 30}}, "option time_budget (60 s) must be shorter than budget_s"),
        ({"options": {"max_calls": 2.5}}, "option max_calls must be a whole number, got 2.5"),
        ({"options": {"max_cost": 0}}, "option max_cost must be more than 0 and at most 100000 USD, got 0"),
        ({"options": {"max_calls": 0}}, "option max_calls must be between 1 and 100000, got 0"),
        ({"options": {"manager_max_tokens": 0}}, "[strategy.dytopo] manager_max_tokens must be between 1"),
        ({"options": {"payload": "gossip"}}, "[strategy.dytopo] payload must be one of auto"),
        ({"options": {"protocol": "gossip"}}, "unknown protocol 'gossip'"),
        ({"options": {"execute": True}, "domain": "math"}, "option execute runs code tests: it needs domain code"),
        ({"task": "   "}, "task must be a non-empty text"),
    ],
)
async def test_values_out_of_range_are_refused_not_clamped(
    tmp_path: Path, embedder: Any, arguments: dict[str, Any], expected: str
) -> None:
    async with connected(tmp_path, embedder) as (session, manager, _):
        text = await refused(session, "swarm_start", **{"task": "Solve it.", **arguments})
        assert expected in text
        assert manager.tasks == {}  # nothing started


async def test_defaults_fit_smaller_teams_and_strategies_say_what_they_ignore(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, _, _):
        math = await ok(session, "swarm_start", task=DEMO_PROBLEMS["math"], domain="math", context="x" * 4000)
        assert math["params"]["k_in"] == 2  # the default 3, or N-1 for the three-worker math team
        single = await ok(session, "swarm_start", task="Say hello.", domain="general", strategy="single-turn")
        assert single["params"]["max_rounds"] == 1 and any("max_rounds is 1" in n for n in single["notes"])
        for started in (math, single):
            await poll_until(session, started["task_id"], finished)
        assert (await ok(session, "swarm_result", task_id=single["task_id"]))["rounds"] == 1


async def test_two_swarms_run_at_once_sharing_one_embedder(tmp_path: Path, embedder: Any) -> None:
    slow = ScriptedServer(demo_script, ServerBehaviour(chunk_delay=0.005))
    async with connected(tmp_path, embedder, server=slow) as (session, manager, _):
        code = await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"])
        math = await ok(session, "swarm_start", task=DEMO_PROBLEMS["math"], domain="math", strategy="chain")
        both_running = False

        async def until_both_done() -> None:
            nonlocal both_running
            while True:
                states = [(await ok(session, "swarm_status", task_id=s["task_id"])) for s in (code, math)]
                if all(s["status"] == "running" and s["round"] >= 1 for s in states):
                    both_running = True
                if all(finished(s) for s in states):
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(until_both_done(), RUN_TIMEOUT)
        assert manager.embedder is embedder
        results = [await ok(session, "swarm_result", task_id=s["task_id"], include_topology=True) for s in (code, math)]
    assert both_running, "the two swarms were never in a round at the same time"
    assert [r["status"] for r in results] == ["completed", "completed"]
    assert results[0]["session_file"] != results[1]["session_file"]
    chain_graphs = [g for r in results[1]["topology"] for g in r["graphs"]]
    assert chain_graphs and all(g["strategy"] == "chain" for g in chain_graphs)
    assert chain_graphs[0]["edges"] == [
        {"src": a, "dst": b, "score": e["score"], "kind": "fixed"}
        for (a, b), e in zip([("ProblemParser", "Solver"), ("Solver", "Verifier")], chain_graphs[0]["edges"],
                             strict=True)
    ]


async def test_a_crash_inside_a_swarm_is_reported_failed_and_its_log_ends(
    tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.mcp.start_request as start_request

    class Exploding:
        name = "dytopo"

        def build(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the graph builder blew up")

    from core.methods.dytopo import DyTopoMethod

    monkeypatch.setattr(start_request, "method_for", lambda strategy, team, options: DyTopoMethod(Exploding()))
    async with connected(tmp_path, embedder) as (session, manager, _):
        task_id = (await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"]))["task_id"]
        status = await poll_until(session, task_id, finished)
        assert status["status"] == "failed" and status["error"] == "RuntimeError: the graph builder blew up"
        assert status["round"] == 2  # round 1 ran (a broadcast, no graph); round 2 needed one
        # The server goes on answering, and the run's files say it ended.
        assert (await ok(session, "swarm_result", task_id=task_id))["error"] == status["error"]
        entry = manager.get(task_id)
    assert entry.session_path is not None and has_ended(log_path_for(entry.session_path))
    saved = load_session(entry.session_path)
    assert saved.outcome is None and saved.completed_rounds == 1


async def test_the_server_configs_strategy_table_gives_defaults_the_client_can_override(
    tmp_path: Path, embedder: Any
) -> None:
    settings = Settings(max_retries=0, strategy_options={"star": {"hub": "Tester"}})
    async with connected(tmp_path, embedder, settings=settings) as (session, _, _):
        from_config = await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"], strategy="star", max_rounds=2)
        from_client = await ok(session, "swarm_start", task=DEMO_PROBLEMS["code"], strategy="star", max_rounds=2,
                               options={"hub": "Designer"})
        hubs = []
        for started in (from_config, from_client):
            await poll_until(session, started["task_id"], finished)
            result = await ok(session, "swarm_result", task_id=started["task_id"], include_topology=True)
            hubs.append({e["dst"] for r in result["topology"] for g in r["graphs"] for e in g["edges"]})
    assert from_config["options"]["method"] == {"hub": "Tester"}
    assert hubs == [{"Tester"}, {"Designer"}]


async def test_compare_runs_several_methods_under_one_task_id(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder) as (session, _, _):
        started = await ok(session, "swarm_compare", task=DEMO_PROBLEMS["math"], strategies="dytopo,dmoa",
                           domain="math", options={"dmoa": {"k": 2}}, parallel=1)
        assert started["strategy"] == "compare: dytopo,dmoa" and started["status"] == "running"
        assert started["options"]["options"]["dmoa"] == {"k": 2}
        status = await poll_until(session, started["task_id"], finished)
        assert status["status"] == TaskStatus.COMPLETED
        result = await ok(session, "swarm_result", task_id=started["task_id"])
        rows = result["summary"]
        assert [r["method"] for r in rows] == ["dytopo", "dmoa"]
        assert all(r["state"] == "done" and r["calls"] > 0 and r["answer"] for r in rows)
        assert status["llm_calls"] == sum(r["calls"] for r in rows)
        assert status["tokens"] == sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows)
        record = Path(result["session_file"])
        assert record.name.endswith(".compare.json") and record.is_file()
        # Refused at once, one line each: one method, a method it does not run, an unknown method.
        assert "2 to 10 methods" in await refused(session, "swarm_compare", task="x", strategies="dytopo")
        assert "does not run" in await refused(session, "swarm_compare", task="x", strategies="dytopo,single",
                                               options={"dmoa": {"k": 2}})
        assert "unknown strategy" in await refused(session, "swarm_compare", task="x", strategies="dytopo,nope")


async def test_compare_bounds_every_method_by_time_budget_and_max_calls(tmp_path: Path, embedder: Any) -> None:
    slow = ScriptedServer(demo_script, ServerBehaviour(latency=0.4))
    async with connected(tmp_path, embedder, server=slow) as (session, _, _):
        started = await ok(session, "swarm_compare", task=DEMO_PROBLEMS["code"], strategies="dytopo,dmoa",
                           time_budget=2)
        assert started["options"]["time_budget"] == 2 and started["budget_s"] >= 2 * 2 + 1
        status = await poll_until(session, started["task_id"], finished, timeout=60)
        result = await ok(session, "swarm_result", task_id=started["task_id"])
    assert status["status"] == TaskStatus.COMPLETED, status
    assert [(r["method"], r["reason"]) for r in result["summary"]] == [("dytopo", "budget"), ("dmoa", "budget")]

    async with connected(tmp_path, embedder) as (session, _, scripted):
        started = await ok(session, "swarm_compare", task=DEMO_PROBLEMS["code"], strategies="dytopo,single",
                           max_calls=3, parallel=1)
        await poll_until(session, started["task_id"], finished)
        result = await ok(session, "swarm_result", task_id=started["task_id"])
        sent = len([r for r in scripted.requests if r.call])
        record = load_record(Path(result["session_file"]))
    rows = {r["method"]: r for r in result["summary"]}
    assert rows["dytopo"]["reason"] == "budget" and rows["dytopo"]["calls"] == 3
    assert rows["single"]["calls"] == 1  # within its bound: it ends on its own
    assert sent == 4 and record.settings["max_calls"] == 3


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"time_budget": 0}, "option time_budget must be between 1 and 36000 seconds, got 0"),
        ({"max_calls": 0}, "option max_calls must be between 1 and 100000, got 0"),
    ],
)
async def test_compare_refuses_bounds_as_a_single_run_does(
    tmp_path: Path, embedder: Any, arguments: dict[str, Any], expected: str
) -> None:
    async with connected(tmp_path, embedder) as (session, manager, _):
        assert expected in await refused(session, "swarm_compare", task="Solve it.", strategies="dytopo,single",
                                         **arguments)
        assert expected in await refused(session, "swarm_start", task="Solve it.", options=arguments)
        assert manager.tasks == {}

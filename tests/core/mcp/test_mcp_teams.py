"""swarm_start's team: a built-in team or a [team.NAME] table of the server's config, by name only, through
the SDK's in-memory client against the scripted model server (real HTTP): the run, its start result and
its session use the team; unknown names, file paths and a contradicting domain are refused in one line;
k_in ranges over the chosen team; a team's agents reach their own endpoints, with no secret in results."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.runtime.config import Settings
from core.sessions.eventlog import log_path_for
from core.sessions.store import load_session
from tests.support.mcp import CALL_TIMEOUT, connected, finished, ok, poll_until, refused

PROBLEM = "Should a small city replace its bus fleet with electric buses this year?"


def agent(name: str, role: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "role": role, **extra}


def team_table(domain: str, workers: list[dict[str, Any]], manager: str = "Chair") -> dict[str, Any]:
    return {"domain": domain, "manager": agent(manager, "Sets each round's goal and decides when the team is done."),
            "workers": workers}


SIX = team_table("general", [agent("Economist", "Weighs costs and incentives."),
                             agent("Engineer", "Checks what is feasible."),
                             agent("Planner", "Writes the recommendation.")])
FIVE = team_table("math", [agent(f"Solver{i}", f"Solves the problem by method {i}.") for i in range(5)])
DUO = team_table("general", [agent("Pro", "Argues for."), agent("Con", "Argues against.")])
TEAMS = {"six": SIX, "five": FIVE, "duo": DUO}


def with_teams(**extra: Any) -> Settings:
    return Settings(max_retries=0, teams=TEAMS, **extra)


async def test_the_teams_are_listed_in_the_start_tools_schema(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder, settings=with_teams()) as (session, _, _):
        tools = {t.name: t for t in (await asyncio.wait_for(session.list_tools(), CALL_TIMEOUT)).tools}
        listed = tools["swarm_start"].inputSchema["properties"]["team"]["description"]
    assert "six (general, Chair + 3 workers: Economist, Engineer, Planner)" in listed
    assert "five (math, Chair + 5 workers:" in listed and "duo (general, Chair + 2 workers: Pro, Con)" in listed
    assert "code (code, Manager + 4 workers: Developer, Researcher, Tester, Designer)" in listed
    assert tools["swarm_start"].inputSchema["properties"]["team"].get("default") is None


async def test_a_user_team_from_the_config_runs_with_its_agents_and_is_recorded(
    tmp_path: Path, embedder: Any
) -> None:
    async with connected(tmp_path, embedder, settings=with_teams()) as (session, _, scripted):
        started = await ok(session, "swarm_start", task=PROBLEM, team="six", max_rounds=3)
        assert (started["team_name"], started["domain"]) == ("six", "general")  # the domain follows the team
        assert started["team"] == ["Chair", "Economist", "Engineer", "Planner"]
        assert started["params"]["k_in"] == 2  # the default 3, or N-1 for this team of three
        assert "team six, general" in started["message"]
        status = await poll_until(session, started["task_id"], finished)
        assert status["status"] == "completed", status
        result = await ok(session, "swarm_result", task_id=started["task_id"], include_topology=True)
    assert result["status"] == "completed" and result["final_answer"]
    graphs = [g for r in result["topology"] for g in r["graphs"]]
    assert graphs and all(sorted(g["order"]) == ["Economist", "Engineer", "Planner"] for g in graphs)
    # The scripted server was asked by this team's workers, and by no built-in one (a Manager call's header
    # names the call's kind, Manager, whatever the team calls its Manager).
    assert {r.role for r in scripted.requests if r.role} == {"Manager", "Economist", "Engineer", "Planner"}
    saved = load_session(Path(result["session_file"]))
    assert saved.metadata.team["name"] == "six" and saved.metadata.team["manager"]["name"] == "Chair"
    assert saved.metadata.workers == ["Economist", "Engineer", "Planner"] and saved.metadata.domain == "general"


async def test_a_built_in_team_by_name_and_no_team_at_all(tmp_path: Path, embedder: Any) -> None:
    # The server's own --team is not a default for MCP clients: no team is the built-in team of the domain.
    async with connected(tmp_path, embedder, settings=with_teams(team="six", domain="general")) as (session, _, _):
        by_name = await ok(session, "swarm_start", task=PROBLEM, team="math")
        assert (by_name["team_name"], by_name["domain"]) == ("math", "math")
        assert by_name["team"] == ["Manager", "ProblemParser", "Solver", "Verifier"]
        plain = await ok(session, "swarm_start", task=PROBLEM)
        assert (plain["team_name"], plain["domain"]) == ("general", "general")
        assert plain["team"][0] == "Manager" and "Economist" not in plain["team"]
        for started in (by_name, plain):
            await poll_until(session, started["task_id"], finished)
        result = await ok(session, "swarm_result", task_id=plain["task_id"])
    assert load_session(Path(result["session_file"])).metadata.team == {}  # a built-in team records none


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"team": "nope"}, "unknown team 'nope': choose one of code, math, general, six, five, duo"),
        ({"team": "Six"}, "unknown team 'Six': choose one of code, math, general, six, five, duo"),
        ({"team": ""}, "unknown team '': choose one of"),
        ({"team": "six", "domain": "code"},
         "domain code does not match team six (domain general): the team sets the domain, leave domain out"),
        ({"team": "math", "domain": "general"}, "domain general does not match team math (domain math)"),
        ({"team": "six", "domain": "poetry"}, "unknown domain 'poetry'"),
        ({"team": "duo", "k_in": 2}, "k_in must be between 1 and 1 for the duo team of 2 workers, got 2"),
        ({"team": "five", "k_in": 5}, "k_in must be between 1 and 4 for the five team of 5 workers, got 5"),
        ({"domain": "math", "k_in": 4}, "k_in must be between 1 and 2 for the math team of 3 workers, got 4"),
        ({"team": "six", "options": {"execute": True}}, "option execute runs code tests: it needs domain code"),
        # A method option that depends on the team is checked against the chosen one.
        ({"strategy": "star", "options": {"hub": "Economist"}, "domain": "general"},
         "[strategy.star] hub must be one of Analyst, Critic, Synthesizer, got 'Economist'"),
        ({"strategy": "star", "options": {"hub": "Developer"}, "team": "six"},
         "[strategy.star] hub must be one of Economist, Engineer, Planner, got 'Developer'"),
    ],
)
async def test_bad_team_choices_are_refused_in_one_line(
    tmp_path: Path, embedder: Any, arguments: dict[str, Any], expected: str
) -> None:
    async with connected(tmp_path, embedder, settings=with_teams()) as (session, manager, _):
        text = await refused(session, "swarm_start", **{"task": PROBLEM, **arguments})
        assert expected in text and "\n" not in text
        assert manager.tasks == {}  # nothing started


async def test_a_team_file_path_is_refused_even_a_valid_one(tmp_path: Path, embedder: Any) -> None:
    # A valid team file, which the command line's --team would run: over MCP it is only a string.
    team_file = tmp_path / "eight.toml"
    workers = "".join(f'[[workers]]\nname = "W{i}"\nrole = "Role {i}."\n' for i in range(8))
    team_file.write_text(f'domain = "math"\nmanager = {{ name = "Chair", role = "Leads." }}\n{workers}',
                         encoding="utf-8")
    async with connected(tmp_path, embedder, settings=with_teams()) as (session, manager, _):
        for path in (str(team_file), "eight.toml", "teams/six"):
            text = await refused(session, "swarm_start", task=PROBLEM, team=path)
            assert text.endswith(
                f"unknown team {path!r}: choose one of code, math, general, six, five, duo (team files are not "
                "read over MCP: add a [team.NAME] table to the server's config)"
            )
        assert manager.tasks == {}


async def test_k_in_follows_the_chosen_team(tmp_path: Path, embedder: Any) -> None:
    async with connected(tmp_path, embedder, settings=with_teams()) as (session, _, _):
        five = await ok(session, "swarm_start", task="What is 6 times 7?", team="five", k_in=4, max_rounds=2)
        assert five["params"]["k_in"] == 4 and five["domain"] == "math"  # more than the built-in math team allows
        duo = await ok(session, "swarm_start", task=PROBLEM, team="duo", max_rounds=2)
        assert duo["params"]["k_in"] == 1 and duo["team"] == ["Chair", "Pro", "Con"]
        star = await ok(session, "swarm_start", task=PROBLEM, team="six", strategy="star",
                        options={"hub": "Economist"}, max_rounds=2)
        results = []
        for started in (five, duo, star):
            await poll_until(session, started["task_id"], finished)
            results.append(await ok(session, "swarm_result", task_id=started["task_id"], include_topology=True))
    assert [r["status"] for r in results] == ["completed"] * 3, [r["error"] for r in results]
    five_graphs = [g for r in results[0]["topology"] for g in r["graphs"]]
    assert five_graphs and all(g["k_in"] == 4 for g in five_graphs)
    star_edges = [e for r in results[2]["topology"] for g in r["graphs"] for e in g["edges"]]
    assert star_edges and {e["dst"] for e in star_edges} == {"Economist"}


# --- per-agent endpoints --------------------------------------------------------------------------


SECRET = "sk-agent-secret-4711"


async def test_a_teams_agents_reach_their_own_endpoints_and_no_secret_is_shown(
    tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPLIT_KEY", SECRET)
    with ScriptedServer(demo_script, ServerBehaviour(model="model-b")) as b:
        split = team_table("general", [
            agent("Economist", "Weighs costs.", model="model-b", base_url=b.base_url, api_key_env="SPLIT_KEY",
                  temperature=0.9),
            agent("Engineer", "Checks feasibility."),
            agent("Planner", "Writes the plan.", model="model-b", base_url=b.base_url, api_key_env="SPLIT_KEY"),
        ])
        a = ScriptedServer(demo_script, ServerBehaviour(model="model-a"))
        settings = Settings(max_retries=0, teams={"split": split})
        async with connected(tmp_path, embedder, server=a, settings=settings, demo=False) as (session, manager, _):
            started = await ok(session, "swarm_start", task=PROBLEM, team="split", max_rounds=2)
            status = await poll_until(session, started["task_id"], finished)
            result = await ok(session, "swarm_result", task_id=started["task_id"], include_topology=True)
            assert status["status"] == "completed", status
            # The shared endpoint is still the run's default, and the agents' own clients are closed.
            second = await ok(session, "swarm_start", task=PROBLEM, domain="general", max_rounds=1)
            await poll_until(session, second["task_id"], finished)
            assert manager.get(second["task_id"]).status == "completed"
        on_a = {(r.role, r.body["model"]) for r in a.requests if r.role}
        on_b = {(r.role, r.body["model"]) for r in b.requests if r.role}
    assert {role for role, _ in on_b} == {"Economist", "Planner"} and {m for _, m in on_b} == {"model-b"}
    assert {role for role, _ in on_a} >= {"Manager", "Engineer"} and {m for _, m in on_a} == {"model-a"}
    assert not {"Economist", "Planner"} & {role for role, _ in on_a}
    assert {r.body["temperature"] for r in b.requests if r.role == "Economist"} == {0.9}
    session_file = Path(result["session_file"])
    recorded = load_session(session_file).metadata.team
    assert recorded["workers"][0]["api_key_env"] == "SPLIT_KEY" and recorded["workers"][0]["model"] == "model-b"
    shown = json.dumps([started, status, result]) + session_file.read_text() + log_path_for(session_file).read_text()
    assert SECRET not in shown


async def test_an_agent_endpoint_problem_fails_only_the_run_that_uses_the_team(
    tmp_path: Path, embedder: Any
) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(model="model-b")) as b:
        url = b.base_url
        broken = team_table("general", [agent("Economist", "Weighs costs.", model="model-z", base_url=url),
                                        agent("Engineer", "Checks feasibility.")])
        # The server's own --team names it: built-in runs must not open (or fail on) its endpoints.
        settings = Settings(max_retries=0, teams={"broken": broken}, team="broken", domain="general")
        a = ScriptedServer(demo_script, ServerBehaviour(model="model-a"))
        async with connected(tmp_path, embedder, server=a, settings=settings, demo=False) as (session, _, _):
            plain = await ok(session, "swarm_start", task=PROBLEM, max_rounds=1)
            assert (await poll_until(session, plain["task_id"], finished))["status"] == "completed"
            started = await ok(session, "swarm_start", task=PROBLEM, team="broken", max_rounds=1)
            status = await poll_until(session, started["task_id"], finished)
    assert status["status"] == "failed"
    assert status["error"] == (
        f"team broken, agent Economist: endpoint {url} does not list model 'model-z' (it lists: model-b)"
    )

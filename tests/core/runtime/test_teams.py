"""User teams: config tables, --team, validation, per-agent endpoints over two scripted servers, sessions."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.llm.client import EndpointError
from core.runtime import events as ev
from core.runtime.config import ConfigError, Settings
from core.runtime.config_file import load_settings
from core.runtime.teams import MAX_WORKERS, resolve_team, team_from_table, team_record, with_team
from core.sessions.fork import fork_point
from core.sessions.model import Session, session_from_events
from core.sessions.store import load_session, save_session
from tui.cli.options import add_run_options, settings_from_args
from tui.entry import main as cli_main

PROBLEM = "Should a small city replace its bus fleet with electric buses this year?"


def table(workers: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "domain": "general",
        "manager": {"name": "Manager", "role": "Sets each round's goal and decides when the team is done."},
        "workers": workers
        if workers is not None
        else [
            {"name": "Economist", "role": "Weighs costs and incentives."},
            {"name": "Engineer", "role": "Checks what is feasible."},
            {"name": "Planner", "role": "Writes the recommendation."},
        ],
        **extra,
    }


async def run_team(settings: Settings, server: ScriptedServer, embedder: Any) -> tuple[ev.RunFinished, list[ev.Event]]:
    backend = await open_backend(settings, BackendChoice(server=server))
    events: list[ev.Event] = []
    engine = build_engine(PROBLEM, settings, backend, [events.append], embedder=embedder)
    try:
        finished = await asyncio.wait_for(engine.run(), timeout=60)
    finally:
        await backend.close()
    return finished, events


# --- the config file and --team ---------------------------------------------------------------------


CONFIG = """
[swarm]
team = "six"

[team.six]
domain = "general"
manager = { name = "Manager", role = "Sets each round's goal and decides when the team is done." }
[[team.six.workers]]
name = "Economist"
role = "Weighs costs and incentives."
model = "model-b"
base_url = "http://127.0.0.1:8001/v1"
api_key_env = "SIX_KEY"
temperature = 0.7
[[team.six.workers]]
name = "Engineer"
role = "Checks what is feasible."
"""


def test_config_tables_define_a_team(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, encoding="utf-8")
    settings = with_team(load_settings(path))
    team = resolve_team(settings)
    assert (team.custom_name, team.name, team.worker_names) == ("six", "general", ["Economist", "Engineer"])
    economist = team.role("Economist")
    assert (economist.model, economist.base_url, economist.api_key_env, economist.temperature) == (
        "model-b", "http://127.0.0.1:8001/v1", "SIX_KEY", 0.7
    )
    assert not team.role("Engineer").has_endpoint
    assert team.answer_role == "Synthesizer" or team.answer_role == "Engineer"


def test_top_level_team_tables_and_a_team_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG.replace("[swarm]\nteam = \"six\"\n", ""), encoding="utf-8")
    settings = load_settings(path)
    assert settings.team is None and "six" in settings.teams
    team_file = tmp_path / "eight.toml"
    workers = ",\n".join(f'{{ name = "W{i}", role = "Role {i}." }}' for i in range(8))
    team_file.write_text(
        f'domain = "math"\nmanager = {{ name = "Manager", role = "Leads." }}\nworkers = [\n{workers}\n]\n',
        encoding="utf-8",
    )
    chosen = with_team(replace(settings, team=str(team_file)))
    team = resolve_team(chosen)
    assert (chosen.team, chosen.domain, len(team.workers)) == ("eight", "math", 8)
    assert with_team(replace(settings, team="math")).team is None  # a built-in team by name


def _args(argv: list[str]) -> Any:
    import argparse

    parser = argparse.ArgumentParser()
    add_run_options(parser)
    return parser.parse_args(argv)


def test_k_in_ranges_over_the_chosen_team(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.toml"
    workers = "".join(f'[[team.big.workers]]\nname = "W{i}"\nrole = "Role {i}."\n' for i in range(16))
    path.write_text(f'[team.big]\nmanager = {{ name = "Manager", role = "Leads." }}\n{workers}', encoding="utf-8")
    settings = settings_from_args(_args(["--config", str(path), "--team", "big", "--k-in", "15"]))
    assert settings.k_in == 15 and settings.team == "big"
    with pytest.raises(SystemExit) as stop:
        settings_from_args(_args(["--config", str(path), "--team", "big", "--k-in", "16"]))
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip() == "swarm-tui: error: k_in must be between 1 and 15, got 16"
    with pytest.raises(SystemExit):
        settings_from_args(_args(["--config", str(path), "--team", "big", "--domain", "code"]))
    assert "--domain code does not match team big (domain general)" in capsys.readouterr().err


# --- validation: one line per problem ---------------------------------------------------------------


def _workers(n: int) -> list[dict[str, Any]]:
    return [{"name": f"W{i}", "role": f"Role {i}."} for i in range(n)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (table(_workers(1)), "a team needs at least 2 workers, got 1"),
        (table(_workers(MAX_WORKERS + 1)), "a team has at most 20 workers, got 21"),
        ({k: v for k, v in table().items() if k != "manager"}, "the Manager is missing"),
        (table([{"name": "A", "role": "x"}, {"name": "A", "role": "y"}]), "duplicate agent name 'A'"),
        (table([{"name": "Manager", "role": "x"}, {"name": "B", "role": "y"}]), "duplicate agent name 'Manager'"),
        (table([{"name": "A", "role": "x", "api_key_env": "sk-123 secret"}, {"name": "B", "role": "y"}]),
         "api_key_env 'sk-123 secret' is not an environment variable name"),
        (table([{"name": "A", "role": "x", "base_url": "ftp://host"}, {"name": "B", "role": "y"}]),
         "base_url: the endpoint URL 'ftp://host' must start with http:// or https://"),
        (table([{"name": "A", "role": "x", "colour": "red"}, {"name": "B", "role": "y"}]), "unknown field 'colour'"),
        (table([{"name": "A"}, {"name": "B", "role": "y"}]), "role is missing"),
        (table([{"name": "two words", "role": "x"}, {"name": "B", "role": "y"}]), "must start with a letter"),
        (table([{"name": "A", "role": "x", "temperature": 5}, {"name": "B", "role": "y"}]), "temperature must be"),
        (table(domain="law"), "domain 'law' must be one of code, math, general"),
        (table(answer_role="Nobody"), "answer_role 'Nobody' is not one of the workers"),
    ],
)
def test_each_validation_error_is_one_line(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        team_from_table("t", data)
    text = str(caught.value)
    assert message in text and "\n" not in text and text.startswith("config: [team.t]")


def test_cli_gives_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[team.dup]\nmanager = { name = "Manager", role = "Leads." }\n'
                   'workers = [{ name = "A", role = "x" }, { name = "A", role = "y" }]\n', encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        cli_main(["teams", "--config", str(bad)])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "duplicate agent name 'A'" in err
    with pytest.raises(SystemExit) as stop:
        cli_main(["--headless", "--demo", "--team", "nope", PROBLEM])
    assert stop.value.code == 2
    assert "unknown team 'nope'" in capsys.readouterr().err


def test_teams_lists_builtin_and_user_teams(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, encoding="utf-8")
    assert cli_main(["teams", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    for name in ("code ", "math ", "general ", "six "):
        assert name in out
    assert "Economist: Weighs costs and incentives. [model model-b, at http://127.0.0.1:8001/v1, key $SIX_KEY]" in out


# --- per-agent endpoints over two scripted servers --------------------------------------------------


def test_each_agent_reaches_its_own_server_with_its_own_model(embedder: Any) -> None:
    with (
        ScriptedServer(demo_script, ServerBehaviour(model="model-a")) as a,
        ScriptedServer(demo_script, ServerBehaviour(model="model-b")) as b,
    ):
        data = table([
            {"name": "Economist", "role": "Weighs costs.", "model": "model-b", "base_url": b.base_url,
             "temperature": 0.9},
            {"name": "Engineer", "role": "Checks feasibility."},
            {"name": "Planner", "role": "Writes the plan.", "model": "model-b", "base_url": b.base_url},
        ])
        settings = Settings(team="six", teams={"six": data}, domain="general", k_in=2, max_rounds=2)
        finished, events = asyncio.run(run_team(settings, a, embedder))
        assert finished.reason in ("manager", "max_rounds")
        on_a = {(r.role, r.body["model"]) for r in a.requests if r.role}
        on_b = {(r.role, r.body["model"]) for r in b.requests if r.role}
        assert {role for role, _ in on_b} == {"Economist", "Planner"}
        assert {model for _, model in on_b} == {"model-b"}
        assert {role for role, _ in on_a} == {"Manager", "Engineer"}
        assert {model for _, model in on_a} == {"model-a"}
        assert {r.body["temperature"] for r in b.requests if r.role == "Economist"} == {0.9}
        started = next(e for e in events if isinstance(e, ev.RunStarted))
        assert started.team["name"] == "six" and started.workers == ["Economist", "Engineer", "Planner"]
        assert started.team["workers"][0]["model"] == "model-b"


def test_the_manager_is_told_its_own_name_and_role(embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        data = {**table(), "manager": {"name": "Chair", "role": "Keeps the team on the budget question."}}
        settings = Settings(team="six", teams={"six": data}, domain="general", k_in=2, max_rounds=1)
        asyncio.run(run_team(settings, server, embedder))
        systems = {r.messages[0]["content"] for r in server.requests if r.role == "Manager"}
    # After the team's shared preamble (the problem, the team, the rules of a round): its own name and role.
    assert systems and all(
        "You are Chair," in s and "Your role: Keeps the team on the budget question." in s for s in systems
    )


def test_runs_given_the_same_limits_share_each_endpoints_concurrency() -> None:
    from core.compose.runner import open_agent_clients

    def one_limit_for_two_runs(shared: dict[str, asyncio.Semaphore] | None) -> bool:
        async def open_twice(a: ScriptedServer, b: ScriptedServer) -> bool:
            settings = Settings(team="six", teams={"six": table([
                {"name": "Economist", "role": "Weighs costs.", "model": "model-b", "base_url": b.base_url},
                {"name": "Engineer", "role": "Checks feasibility."},
            ])}, domain="general")
            backend = await open_backend(settings, BackendChoice(server=a))
            runs = [await open_agent_clients(settings, backend.llm, backend.llm.base_url, limits=shared)
                    for _ in range(2)]
            for client in {id(c): c for run in runs for c in run.values()}.values():
                await client.close()
            await backend.close()
            return runs[0]["Economist"]._limit is runs[1]["Economist"]._limit

        with (
            ScriptedServer(demo_script, ServerBehaviour(model="model-a")) as a,
            ScriptedServer(demo_script, ServerBehaviour(model="model-b")) as b,
        ):
            return asyncio.run(open_twice(a, b))

    assert one_limit_for_two_runs({})  # the MCP server's runs: one limit for model-b's endpoint
    assert not one_limit_for_two_runs(None)


def test_a_model_the_endpoint_does_not_list_names_the_agent(embedder: Any) -> None:
    with (
        ScriptedServer(demo_script, ServerBehaviour(model="model-a")) as a,
        ScriptedServer(demo_script, ServerBehaviour(model="model-b")) as b,
    ):
        data = table([
            {"name": "Economist", "role": "Weighs costs.", "model": "model-z", "base_url": b.base_url},
            {"name": "Engineer", "role": "Checks feasibility."},
        ])
        settings = Settings(team="six", teams={"six": data}, domain="general", k_in=1)
        with pytest.raises(EndpointError) as caught:
            asyncio.run(open_backend(settings, BackendChoice(server=a)))
        assert str(caught.value) == (
            f"team six, agent Economist: endpoint {b.base_url} does not list model 'model-z' (it lists: model-b)"
        )


def test_a_dead_agent_endpoint_ends_the_run_naming_agent_and_endpoint(embedder: Any) -> None:
    with (
        ScriptedServer(demo_script, ServerBehaviour(model="model-a")) as a,
        ScriptedServer(demo_script, ServerBehaviour(model="model-b")) as b,
    ):
        url = b.base_url
        data = table([
            {"name": "Economist", "role": "Weighs costs.", "model": "model-b", "base_url": url},
            {"name": "Engineer", "role": "Checks feasibility."},
        ])
        settings = Settings(team="six", teams={"six": data}, domain="general", k_in=1, max_retries=0)

        async def go() -> tuple[ev.RunFinished, list[ev.Event]]:
            backend = await open_backend(settings, BackendChoice(server=a))
            b.stop()  # the agent's endpoint goes away after the run started
            events: list[ev.Event] = []
            engine = build_engine(PROBLEM, settings, backend, [events.append], embedder=embedder)
            try:
                return await asyncio.wait_for(engine.run(), timeout=60), events
            finally:
                await backend.close()

        finished, _ = asyncio.run(go())
        assert finished.reason == "error"
        assert f"agent Economist (model model-b at {url})" in finished.detail


# --- sessions: the team is recorded, replayed and forked ------------------------------------------


def test_session_round_trip_and_fork_keep_the_team(
    tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedServer(demo_script) as server:
        settings = Settings(team="six", teams={"six": table()}, domain="general", k_in=2, max_rounds=3)
        _, events = asyncio.run(run_team(settings, server, embedder))
    session = session_from_events(events)
    path = save_session(session, tmp_path / "run.json")
    loaded = load_session(path)
    assert loaded.metadata.team == team_record(resolve_team(settings))
    assert Session.from_dict(json.loads(path.read_text(encoding="utf-8"))).metadata.team["name"] == "six"
    assert fork_point(loaded, 1, str(path)).round == 1
    # A fork from the command line goes on with the recorded team, with no config file naming it.
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fork.json"
    code = cli_main(["replay", str(path), "--headless", "--fork", "1", "--demo", "--save", str(out)])
    assert code == 0, capsys.readouterr().err
    forked = load_session(out)
    assert forked.metadata.team == loaded.metadata.team
    assert forked.metadata.workers == ["Economist", "Engineer", "Planner"]
    assert forked.parent is not None and forked.parent["round"] == 1


def test_an_old_session_without_a_team_still_loads(tmp_path: Path, embedder: Any) -> None:
    with ScriptedServer(demo_script) as server:
        _, events = asyncio.run(run_team(Settings(domain="general", k_in=2, max_rounds=1), server, embedder))
    data = session_from_events(events).to_dict()
    assert "team" not in data["metadata"]
    assert Session.from_dict(data).metadata.team == {}


def test_launch_form_offers_user_teams_with_their_k_in_range() -> None:
    from tui.screens.launch import _fields_to_settings

    workers = [{"name": f"W{i}", "role": f"Role {i}."} for i in range(12)]
    base = Settings(teams={"twelve": table(workers)})
    values = {"domain": "twelve", "protocol": "phased", "tau": "0.3", "k_in": "11", "max_rounds": "3",
              "base_url": "", "model": ""}
    settings = _fields_to_settings(base, values)
    assert (settings.team, settings.domain, settings.k_in) == ("twelve", "general", 11)
    with pytest.raises(ConfigError, match="k_in must be between 1 and 11, got 12"):
        _fields_to_settings(base, {**values, "k_in": "12"})
    built_in = _fields_to_settings(replace(base, team="twelve"), {**values, "domain": "math", "k_in": "2"})
    assert (built_in.team, built_in.domain) == (None, "math")

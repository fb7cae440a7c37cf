"""The method host: every registered method end to end over the loopback server, the registry's checks,
typed graphs through sessions and exports, and control of a method that is not DyTopo."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from core.demo.server import ScriptedServer
from core.methods.catalogue import build_method, get_method_info, method_names
from core.methods.registry import MethodError
from core.routing.dytopo import (
    KIND_DEBATE,
    KIND_FEEDBACK,
    Edge,
    RemovedEdge,
    RoutingResult,
)
from core.runtime import events as ev
from core.runtime.config import ConfigError
from core.runtime.config_file import load_settings
from core.runtime.engine import SwarmEngine
from core.runtime.rosters import builtin_team
from core.sessions.export import export_session
from core.sessions.model import Session, session_from_events
from core.sessions.store import load_session, save_session
from core.sessions.whatif import WhatIfUnsupported, reroute_session, what_if_refusal
from tests.support.methods import run_method
from tui.entry import main as cli_main


@pytest.mark.parametrize("domain", ["code", "math"])
@pytest.mark.parametrize("name", method_names())
async def test_every_method_runs_end_to_end_and_its_session_round_trips(
    name: str, domain: str, demo_server: ScriptedServer, embedder: Any, tmp_path: Path
) -> None:
    finished, events = await run_method(demo_server, embedder, name, domain)

    started = events[0]
    assert isinstance(started, ev.RunStarted) and started.strategy == name
    assert events[-1] is finished and finished.reason not in ("error", "cancelled"), finished.detail
    assert finished.final_answer.strip(), f"{name} gave no answer"
    assert finished.prompt_tokens > 0 and finished.completion_tokens > 0
    # Every call that started finished, and the server heard every one of them.
    starts = [e for e in events if isinstance(e, ev.AgentStarted)]
    ends = [e for e in events if isinstance(e, ev.AgentFinished)]
    assert ends and {(e.agent, e.call) for e in ends} <= {(e.agent, e.call) for e in starts}
    assert len(demo_server.requests) >= len(ends)

    session = session_from_events([e for e in events if not isinstance(e, ev.AgentDelta)])
    path = save_session(session, tmp_path / f"{name}.json")
    loaded = load_session(path)
    assert loaded.events == session.events
    assert loaded.metadata.strategy == name and loaded.outcome is not None
    assert loaded.outcome.final_answer == finished.final_answer
    for fmt in ("md", "dot", "mermaid", "toml"):
        text = export_session(loaded, fmt)
        assert text.strip()
    assert finished.final_answer.strip().splitlines()[0] in export_session(loaded, "md")


async def test_a_method_other_than_dytopo_can_be_stepped_and_cancelled(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    async def drive(engine: SwarmEngine, events: list[ev.Event]) -> None:
        async def until(predicate: Any) -> None:
            for _ in range(3000):
                if predicate():
                    return
                await asyncio.sleep(0.01)
            raise AssertionError("condition never became true")

        await until(lambda: engine.control.waiting)
        assert not [e for e in events if isinstance(e, ev.RoundStarted)]  # waiting before the round
        engine.control.step_phase()
        await until(lambda: engine.control.waiting and [e for e in events if isinstance(e, ev.RoundStarted)])
        assert not [e for e in events if isinstance(e, ev.AgentStarted)]  # waiting before the call
        engine.control.cancel()

    finished, events = await run_method(demo_server, embedder, "single", "code", step=True, drive=drive)
    assert finished.reason == "cancelled" and finished.rounds == 1
    assert isinstance(events[0], ev.RunStarted) and events[0].workers == ["Solo"]
    assert not demo_server.requests[1:]  # nothing but the model listing reached the server
    assert {t for t in asyncio.all_tasks() if not t.done()} == {asyncio.current_task()}


async def test_single_turn_runs_one_round_whatever_max_rounds_says(
    demo_server: ScriptedServer, embedder: Any
) -> None:
    finished, events = await run_method(demo_server, embedder, "single-turn", "code")
    assert finished.rounds == 1 and finished.reason in ("max_rounds", "manager")
    assert {e.round for e in events if isinstance(e, ev.RoundStarted)} == {1}


# --- the registry ------------------------------------------------------------------------------


def test_every_method_is_listed_with_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["strategies"]) == 0
    out = capsys.readouterr().out
    for name in method_names():
        assert name in out and get_method_info(name).summary in out
    assert {"dytopo", "single", "single-turn", "random", "broadcast", "chain", "star"} <= set(method_names())


def test_options_are_checked_with_one_line() -> None:
    code = builtin_team("code")
    assert build_method("random", {"seed": "7"}, code).graph.seed == 7  # type: ignore[attr-defined]
    with pytest.raises(MethodError, match=r"\[strategy.random\] seed must be a whole number"):
        build_method("random", {"seed": "x"}, code)
    with pytest.raises(MethodError, match="random has no option 'alpha'"):
        build_method("random", {"alpha": 1}, code)
    with pytest.raises(MethodError, match="hub must be one of Developer"):
        build_method("star", {"hub": "Nobody"}, code)
    with pytest.raises(MethodError, match="unknown strategy 'nope'"):
        build_method("nope", {}, code)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--headless", "--demo", "--strategy", "nope", "x"], "unknown strategy 'nope'"),
        (["--headless", "--demo", "--strategy", "star", "-o", "hub=Nobody", "x"], "hub must be one of"),
        (["--headless", "--demo", "--strategy", "random", "-o", "seed"], "must look like key=value"),
    ],
)
def test_bad_strategy_flags_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A flag the parser refuses exits at once; an option only the team can check (star's hub) is found by the
    # run's assembly, which builds the method before any request: the same exit code and one line either way.
    try:
        code = cli_main(argv)
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_method_options_come_from_strategy_tables_in_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[swarm]\nstrategy = "random"\n\n[strategy.random]\nseed = 11\n', encoding="utf-8")
    settings = load_settings(config)
    assert settings.strategy == "random" and settings.strategy_options == {"random": {"seed": 11}}
    config.write_text("[strategy]\nrandom = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[strategy.NAME\] tables"):
        load_settings(config)


# --- typed graphs --------------------------------------------------------------------------------


def _typed_session() -> Session:
    names = ["Developer", "Researcher", "Tester", "Designer"]
    routing = RoutingResult(
        names=names,
        tau=0.0,
        k_in=3,
        similarity=[],
        edges=[Edge("Developer", "Tester", 0.61, KIND_FEEDBACK), Edge("Researcher", "Developer", 0.55, KIND_DEBATE)],
        removed=[RemovedEdge("Tester", "Researcher", 0.2, "pruned", KIND_DEBATE)],
        order=["Researcher", "Developer", "Tester"],
        tiers=[["Researcher"], ["Developer"], ["Tester"]],
        inactive=["Designer"],
    )
    params = {"tau": 0.3, "k_in": 3, "max_rounds": 1}
    events: list[ev.Event] = [
        ev.RunStarted(run_id="t", problem="p", domain="code", manager="Manager", workers=names,
                      roles={n: n for n in names}, protocol="phased", strategy="chain", model="m",
                      base_url="http://127.0.0.1:1/v1", demo=True, params=params),
        ev.RoundStarted(round=1, params=params),
        ev.TopologyBuilt(round=1, routing=routing.to_dict(), query_embeddings=[], key_embeddings=[], strategy="x"),
        ev.RoundFinished(round=1, prompt_tokens=1, completion_tokens=1),
        ev.RunFinished(reason="manager", detail="", final_answer="a", answer_source="", rounds=1, prompt_tokens=1,
                       completion_tokens=1),
    ]
    return session_from_events(events)


def test_typed_edges_survive_a_session_round_trip_and_style_the_exports(tmp_path: Path) -> None:
    session = _typed_session()
    loaded = load_session(save_session(session, tmp_path / "typed.json"))
    routing = loaded.rounds[0].routing
    assert routing is not None and routing.typed and routing.inactive == ["Designer"]
    assert [(e.src, e.kind) for e in routing.edges] == [("Developer", KIND_FEEDBACK), ("Researcher", KIND_DEBATE)]
    dot = export_session(loaded, "dot")
    assert 'label="feedback 0.61", style=dashed' in dot and "dir=both" in dot
    mermaid = export_session(loaded, "mermaid")
    assert "-.->|feedback 0.61|" in mermaid and "<==>|debate 0.55|" in mermaid
    md = export_session(loaded, "md")
    assert "Developer → Tester (feedback 0.61)" in md and "Not running: Designer" in md


def test_an_edge_without_a_kind_loads_as_a_routed_edge() -> None:
    data = RoutingResult(["A", "B"], 0.3, 1, [[1.0, 0.5], [0.5, 1.0]], [Edge("A", "B", 0.5)]).to_dict()
    for edge in data["edges"]:
        del edge["kind"]
    assert RoutingResult.from_dict(data).edges == [Edge("A", "B", 0.5, "routed")]


def test_what_if_is_refused_for_a_method_whose_graphs_do_not_come_from_tau() -> None:
    session = _typed_session()  # recorded as a "chain" run
    assert "DyTopo's" in what_if_refusal(session)
    with pytest.raises(WhatIfUnsupported):
        reroute_session(session, 0.5, 2)

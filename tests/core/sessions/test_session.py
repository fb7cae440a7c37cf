"""Sessions: recorded from the real engine's event stream, saved as JSON/TOML, loaded back equal,
replayed through the same consumer, forked, upgraded and exported."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import ScriptedServer
from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.config import Settings
from core.sessions.export import export_session
from core.sessions.model import SCHEMA_VERSION, Session, SessionFormatError, session_from_events, upgrade
from core.sessions.store import (
    SessionRecorder,
    decode_nulls,
    encode_nulls,
    list_sessions,
    load_session,
    readable_filename,
    save_session,
    session_to_json,
)
from sessions import EXAMPLES_DIR
from tui.cli.headless import ProgressPrinter

EXAMPLES = sorted(EXAMPLES_DIR.glob("example-*.json"))
PARENT = {"session": "sessions/example-math.json", "round": 1}


def _run_live(tmp: Path, embedder: Any, settings: Settings, parent: dict[str, Any] | None) -> dict[str, Any]:
    """A real run (demo script over HTTP, real MiniLM) with the recorder and the live printer."""

    async def go() -> dict[str, Any]:
        with ScriptedServer() as server:
            backend = await open_backend(settings, BackendChoice(server=server))
            recorder = SessionRecorder(tmp)
            printed = io.StringIO()
            stream: list[ev.Event] = []
            engine = build_engine(
                DEMO_PROBLEMS[settings.domain],
                settings,
                backend,
                [stream.append, ProgressPrinter(printed), recorder],
                embedder=embedder,
                parent=parent,
            )
            try:
                finished = await asyncio.wait_for(engine.run(), timeout=120)
            finally:
                await backend.close()
        return {"recorder": recorder, "printed": printed.getvalue(), "stream": stream, "finished": finished}

    return asyncio.run(go())


@pytest.fixture(scope="module")
def forked_math(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> dict[str, Any]:
    settings = Settings(domain="math", k_in=2)
    return _run_live(tmp_path_factory.mktemp("rec"), embedder, settings, PARENT)


@pytest.fixture(scope="module")
def single_pass(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> dict[str, Any]:
    settings = Settings(domain="code", protocol="single-pass", max_rounds=2)
    return _run_live(tmp_path_factory.mktemp("sp"), embedder, settings, None)


# --- recording a live run ------------------------------------------------------------------------


def test_recorder_saves_the_whole_run_to_a_readable_file(forked_math: dict[str, Any]) -> None:
    recorder: SessionRecorder = forked_math["recorder"]
    assert recorder.error is None and recorder.path is not None and recorder.path.exists()
    name = recorder.path.name
    assert name.endswith(".json") and "_math_if-f-x-frac-3x-2-x-2" in name
    session = load_session(recorder.path)
    finished: ev.RunFinished = forked_math["finished"]
    assert session.outcome == finished
    assert session.completed_rounds == finished.rounds == len(session.rounds)
    assert session.tokens == finished.prompt_tokens + finished.completion_tokens
    # Everything but the token deltas is recorded, in order.
    live = [e for e in forked_math["stream"] if not isinstance(e, ev.AgentDelta)]
    assert any(isinstance(e, ev.AgentDelta) for e in forked_math["stream"])
    assert session.replay_events() == live
    assert "api_key" not in recorder.path.read_text() and "demo" not in json.dumps(session.metadata.params)


def test_round_view_holds_what_the_issue_lists(forked_math: dict[str, Any]) -> None:
    session = load_session(forked_math["recorder"].path)
    r1, r2 = session.rounds[0], session.rounds[1]
    assert r1.broadcast and r1.routing is None and r1.plan is not None and r1.goal == r1.plan.next_goal
    assert r2.goal == r1.decision.next_goal
    assert set(r2.descriptors) == set(session.metadata.workers)
    assert len(r2.query_embeddings) == 3 and len(r2.query_embeddings[0]) == 384
    topo = [e for e in forked_math["stream"] if isinstance(e, ev.TopologyBuilt) and e.round == 2][-1]
    assert r2.routing == RoutingResult.from_dict(topo.routing)
    assert r2.similarity and r2.edges and r2.order and r2.tiers
    solver = r2.output("Solver", "work")
    assert solver is not None and solver.raw and solver.public and solver.latency_s > 0 and solver.prompt_tokens > 0
    assert r2.decision is not None and r2.decision.terminate
    assert session.metadata.roles["Solver"] and session.metadata.model == "scripted-demo"
    assert session.metadata.demo is False and session.metadata.base_url.startswith("http://127.0.0.1:")


def test_replay_through_the_live_printer_prints_exactly_what_the_live_run_printed(
    forked_math: dict[str, Any],
) -> None:
    session = load_session(forked_math["recorder"].path)
    out = io.StringIO()
    printer = ProgressPrinter(out)
    for event in session.replay_events():
        printer(event)
    assert out.getvalue() == forked_math["printed"]


def test_fork_parent_and_round_survive_json_and_toml(forked_math: dict[str, Any], tmp_path: Path) -> None:
    session = load_session(forked_math["recorder"].path)
    assert session.parent == PARENT
    toml_path = save_session(session, tmp_path / "fork.toml")
    again = load_session(toml_path)
    assert again.parent == PARENT and again == session
    assert "forked from sessions/example-math.json at round 1" in export_session(again, "md")


def test_single_pass_session_keeps_its_protocol_and_graphs(single_pass: dict[str, Any], tmp_path: Path) -> None:
    session = load_session(single_pass["recorder"].path)
    assert session.metadata.protocol == "single-pass"
    # The paper routes from round 1 (Algorithm 1): no broadcast round in single-pass.
    assert not session.rounds[0].broadcast and all(r.routing is not None for r in session.rounds)
    again = load_session(save_session(session, tmp_path / "sp.toml"))
    assert again == session


# --- the shipped examples -----------------------------------------------------------------------


def test_examples_exist_for_code_and_math_and_are_demo_sessions() -> None:
    domains = {load_session(p).domain for p in EXAMPLES}
    assert {"code", "math"} <= domains
    for path in EXAMPLES:
        session = load_session(path)
        assert session.demo and session.outcome is not None and session.schema_version == SCHEMA_VERSION
        assert session.completed_rounds >= 2 and any(r.routing for r in session.rounds)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_round_trips_json_toml_object(path: Path, tmp_path: Path) -> None:
    from_json = load_session(path)
    twin = path.with_suffix(".toml")
    if twin.exists():
        assert load_session(twin) == from_json
    as_toml = save_session(from_json, tmp_path / "s.toml")
    from_toml = load_session(as_toml)
    assert from_toml == from_json
    as_json = save_session(from_toml, tmp_path / "s.json")
    assert load_session(as_json) == from_json
    # JSON is canonical: the same object always writes the same text.
    assert as_json.read_text(encoding="utf-8") == session_to_json(from_json)
    assert Session.from_dict(from_json.to_dict()) == from_json


def test_toml_null_encoding_is_reversible_even_for_marker_like_keys() -> None:
    data = {
        "a": None,
        "__null__": "real key",
        "~x": [1, None, {"b": None, "~": None}],
        "nested": {"c": {"d": None}},
    }
    encoded = encode_nulls(data)
    assert ": null" not in json.dumps(encoded) and "[null" not in json.dumps(encoded)
    assert decode_nulls(encoded) == data


# --- upgrade, naming, listing --------------------------------------------------------------------


def _v0_layout(session: Session) -> dict[str, Any]:
    """How a pre-release recorder wrote files: events under "log", deltas kept, no strategy."""
    log = [dict(e) for e in session.events]
    log[0].pop("strategy")
    log.insert(2, ev.AgentDelta(round=1, agent="Solver", call="work", text="partial").to_dict())
    return {"schema_version": 0, "app_version": "0.0.9", "log": log}


def test_schema_v0_file_loads_through_the_upgrade(tmp_path: Path) -> None:
    current = load_session(EXAMPLES_DIR / "example-math.json")
    old = _v0_layout(current)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    loaded = load_session(path)
    assert loaded.events == current.events and loaded.metadata.strategy == "dytopo"
    assert loaded.app_version == "0.0.9"
    assert upgrade(old)["schema_version"] == SCHEMA_VERSION
    # Saving writes the current layout.
    again = json.loads(session_to_json(loaded))
    assert again["schema_version"] == SCHEMA_VERSION and "log" not in again


def test_v0_file_without_a_log_is_a_clear_error() -> None:
    with pytest.raises(SessionFormatError, match='no "log" list'):
        Session.from_dict({"schema_version": 0, "events": []}, "x.json")


def test_readable_filename_is_dated_and_unique(tmp_path: Path) -> None:
    session = load_session(EXAMPLES_DIR / "example-code.json")
    name = readable_filename(session)
    assert name.endswith("_code_complete-these-two-functions-humaneval.json")
    assert name[:15].replace("-", "").replace("_", "").isdigit()
    (tmp_path / name).write_text("x")
    second = readable_filename(session, tmp_path)
    assert second != name and second.endswith("-2.json")


def test_list_sessions_reads_summaries_and_reports_unreadable_files(tmp_path: Path) -> None:
    for path in EXAMPLES:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a session", encoding="utf-8")
    listing = list_sessions(tmp_path)
    assert {s.domain for s in listing} >= {"code", "math"}
    code = next(s for s in listing if s.domain == "code")
    assert code.rounds == 3 and code.outcome == "manager" and code.tokens > 0 and code.demo
    assert code.problem.startswith("Complete these two functions")
    assert len(listing.errors) == 1 and "broken.json" in str(listing.errors[0])


def test_session_from_events_drops_deltas_and_rejects_a_stream_without_a_start() -> None:
    with pytest.raises(SessionFormatError, match="first event must be run_started"):
        session_from_events([ev.RoundStarted(round=1, params={"tau": 0.3, "k_in": 3, "max_rounds": 5})])


# --- export --------------------------------------------------------------------------------------


def test_exports_contain_every_kept_edge_with_its_score() -> None:
    session = load_session(EXAMPLES_DIR / "example-code.json")
    routed = [r for r in session.rounds if r.routing is not None]
    assert routed
    md = export_session(session, "md")
    dot = export_session(session, "dot")
    mermaid = export_session(session, "mermaid")
    workers = session.metadata.workers
    for record in routed:
        r = record.round
        assert f"subgraph cluster_r{r} {{" in dot
        assert f"subgraph r{r}[" in mermaid
        for e in record.edges:
            assert f"- {e.src} → {e.dst} ({e.score:.2f})" in md
            assert f'"r{r}_{e.src}" -> "r{r}_{e.dst}" [label="{e.score:.2f}"];' in dot
            ids = {n: f"r{r}_a{i}" for i, n in enumerate(workers)}
            assert f"{ids[e.src]} -->|{e.score:.2f}| {ids[e.dst]}" in mermaid
    assert mermaid.startswith("flowchart LR\n") and dot.startswith("digraph swarm {")
    assert dot.count("{") == dot.count("}")
    assert mermaid.count("subgraph") == mermaid.count("  end") == len(session.rounds)
    for record in session.rounds:
        assert f"**Goal:** {record.goal}" in md
    assert session.outcome is not None and session.outcome.final_answer in md
    assert Session.from_dict(json.loads(export_session(session, "json"))) == session


def test_export_rejects_an_unknown_format() -> None:
    session = load_session(EXAMPLES_DIR / "example-math.json")
    with pytest.raises(ValueError, match="unknown export format"):
        export_session(session, "pdf")

"""A 16-worker user team in the TUI: every pane usable at 160×48 and 80×24, the graph pane compact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import DEMO_PROBLEMS
from core.runtime.config import Settings
from tests.support.tui import app_for, big_team, demo_run, feed_app, pinned_team_events, post_events, wait_for
from tui.cli.launch import OpenReplay
from tui.widgets.agent_pane import AgentPane
from tui.widgets.graph_pane import GraphPane
from tui.widgets.graph_render import COMPACT_AT

pytestmark = pytest.mark.usefixtures("embedder")

N_WORKERS = 16


def big_team_app(tmp: Path) -> Any:

    settings = Settings(
        domain="general", team="big", teams={"big": big_team(N_WORKERS)}, sessions_dir=str(tmp), max_rounds=2, k_in=3,
        tau=0.0,
    )
    return demo_run(settings, DEMO_PROBLEMS["general"])


@pytest.mark.parametrize(("size", "columns"), [((160, 48), 5), ((80, 24), 2)])
async def test_sixteen_agents_run_and_every_pane_is_usable(tmp_path: Path, size: tuple[int, int], columns: int) -> None:
    app = big_team_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        assert screen.model.finished.reason in ("manager", "max_rounds")
        assert screen.has_class("-crowded")
        panes = [p for p in screen.query(AgentPane) if p.display]
        assert len(panes) == N_WORKERS + 1  # the Manager's pane too
        assert screen.query_one("#agents").styles.grid_size_columns == columns
        for pane in panes:
            assert pane.size.width >= 26 and pane.size.height >= 5, (pane.id, pane.size)
        graph = screen.query_one(GraphPane)
        text = graph.text
        assert N_WORKERS + 1 >= COMPACT_AT
        edge_lines = [line for line in text.splitlines() if " ◁ " in line]
        assert 0 < len(edge_lines) <= N_WORKERS  # one line per receiver, not one per edge


async def test_replay_shows_the_recorded_team_and_its_models(tmp_path: Path, embedder: Any) -> None:
    import asyncio

    from core.compose.plan import BackendChoice
    from core.compose.runner import build_engine, open_backend
    from core.demo.behaviour import ServerBehaviour
    from core.demo.server import ScriptedServer
    from core.runtime import events as ev
    from core.sessions.model import session_from_events
    from core.sessions.store import load_session, save_session
    from tui.screens.run import RunScreen

    with (
        ScriptedServer(None, ServerBehaviour(model="model-a")) as a,
        ScriptedServer(None, ServerBehaviour(model="model-b")) as b,
    ):
        workers = [
            {"name": "Economist", "role": "Weighs costs.", "model": "model-b", "base_url": b.base_url},
            {"name": "Engineer", "role": "Checks feasibility."},
            {"name": "Planner", "role": "Writes the plan."},
        ]
        team = {"domain": "general", "manager": {"name": "Manager", "role": "Leads."}, "workers": workers}
        settings = Settings(domain="general", team="six", teams={"six": team}, k_in=2, max_rounds=2)
        backend = await open_backend(settings, BackendChoice(server=a))
        events: list[ev.Event] = []
        engine = build_engine(DEMO_PROBLEMS["general"], settings, backend, [events.append], embedder=embedder)
        try:
            await asyncio.wait_for(engine.run(), timeout=60)
        finally:
            await backend.close()
    path = save_session(session_from_events(events), tmp_path / "team.json")
    session = load_session(path)
    # The app's own settings know nothing of the team: replay and fork take it from the session.
    app = app_for(OpenReplay(session, path, settings=Settings(sessions_dir=str(tmp_path / "forks")), demo=True,
                              demo_chunk_delay=0.0))
    async with app.run_test(size=(120, 40)) as pilot:
        replay = app.screen
        replay.jump_to_round(1)
        await pilot.pause(0.1)
        panes = {p.agent: p for p in app.screen.query(AgentPane) if p.display}
        assert set(panes) == {"Manager", "Economist", "Engineer", "Planner"}
        assert "model-b" in str(panes["Economist"].border_subtitle)
        assert "model-b" not in str(panes["Engineer"].border_subtitle)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        await wait_for(pilot, lambda: run.model.finished is not None)
        assert run.model.run.team == session.metadata.team
        assert run.model.run.workers == ["Economist", "Engineer", "Planner"]
        assert run.fork is not None and run.fork.round == 1


# --- the same 16-worker team in SVG snapshots (pinned events, frozen clock) ------------------------------


@pytest.fixture(scope="module")
def team_events(embedder: object) -> tuple[Any, ...]:
    return pinned_team_events(N_WORKERS)


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
def test_sixteen_agents_finished_snapshot(
    snap_compare: Any, team_events: tuple[Any, ...], size: tuple[int, int]
) -> None:
    """Every pane in a scrolling grid of small panes, the team named in the header, the graph right below."""
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, team_events)

    assert snap_compare(feed_app("general"), terminal_size=size, run_before=run_before)


def test_sixteen_agents_matrix_snapshot(snap_compare: Any, team_events: tuple[Any, ...]) -> None:
    """g on a large team: the similarity matrix as a map of marks, scrolled into view."""
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, team_events)
        await pilot.press("g")
        await pilot.pause()

    assert snap_compare(feed_app("general"), terminal_size=(160, 48), run_before=run_before)


async def test_the_header_names_a_user_team(team_events: tuple[Any, ...]) -> None:
    from tui.widgets.header import RunHeader

    app = feed_app("general")
    async with app.run_test(size=(160, 48)) as pilot:
        await post_events(app, pilot, team_events)
        assert "team big (general)" in app.swarm_screen.query_one(RunHeader).render().plain

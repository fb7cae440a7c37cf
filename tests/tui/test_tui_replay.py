"""Replay: the recorded events go through the same screen handlers; stepping both ways, playing,
jumping, and the HYPOTHETICAL what-if graph (core.sessions.whatif)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.runtime import events as ev
from core.sessions.model import session_from_events
from core.sessions.store import load_session, save_session
from core.sessions.whatif import reroute_session
from tests.support.render import drawn_edges
from tests.support.tui import app_for, pinned_demo_events, wait_for
from tui.app import SwarmApp
from tui.cli.launch import OpenReplay
from tui.screens.replay import JumpScreen, ReplayScreen
from tui.widgets.graph_pane import GraphPane
from tui.widgets.header import ParamsBar


@pytest.fixture(scope="module")
def session_path(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Path:
    recorded = [e for e in pinned_demo_events() if not isinstance(e, ev.AgentDelta)]
    path = tmp_path_factory.mktemp("replay") / "demo.json"
    save_session(session_from_events(recorded), path)
    return path


def replay_app(path: Path) -> SwarmApp:
    session = load_session(path)
    return app_for(OpenReplay(session, path))


async def test_step_forward_and_back_by_phase_and_round(session_path: Path) -> None:
    app = replay_app(session_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        model = lambda: screen.model  # noqa: E731 - the model is rebuilt when stepping back
        assert model().current == 1 and model().phase == ""
        await pilot.press("n")
        assert model().phase == ev.Phase.PLAN and model().rounds[1].goal
        await pilot.press("N")
        assert model().current == 1 and model().rounds[1].decision is not None
        await pilot.press("N")
        assert model().current == 2 and model().rounds[2].decision is not None
        position = screen.cursor
        await pilot.press("n")
        assert model().current == 3 and screen.cursor > position
        await pilot.press("b")
        assert screen.cursor == position and model().current == 2
        await pilot.press("B")
        assert model().current == 1 and model().rounds[1].decision is not None and 2 not in model().rounds
        await pilot.press("j")
        assert isinstance(app.screen, JumpScreen)
        await pilot.press("3", "enter")
        assert model().finished is not None and model().finished.reason == "manager"
        assert "REPLAY" in str(screen.query_one(ParamsBar).render())


async def test_play_advances_at_the_chosen_speed(session_path: Path) -> None:
    app = replay_app(session_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await pilot.press("right_square_bracket", "right_square_bracket", "right_square_bracket")
        assert screen.playback.speed == 8
        start = screen.cursor
        await pilot.press("space")
        await wait_for(pilot, lambda: screen.cursor >= start + 3)
        await pilot.press("space")
        stopped = screen.cursor
        await pilot.pause(0.3)
        assert screen.cursor == stopped and not screen.playback.playing


async def test_tau_change_in_replay_is_a_hypothetical_graph(session_path: Path) -> None:
    app = replay_app(session_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await pilot.press("N", "N", "N")  # through round 3
        await pilot.press("comma")  # look at round 2
        recorded = screen.model.rounds[2].routing
        graph = screen.query_one(GraphPane)
        before = drawn_edges(graph.text)
        await pilot.press("t", "t", "t", "K")
        assert "HYPOTHETICAL" in graph.text and "tau 0.45" in graph.text
        session = load_session(session_path)
        diff = next(d for d in reroute_session(session, 0.45, 2) if d.round == 2)
        assert drawn_edges(graph.text) == {(e.src, e.dst, f"{e.score:.2f}") for e in diff.rerouted.edges}
        assert drawn_edges(graph.text) != before
        assert f"+{len(diff.added)} new, −{len(diff.removed)} dropped" in graph.text
        assert "HYPOTHETICAL" in str(screen.query_one(ParamsBar).render())
        assert screen.model.rounds[2].routing == recorded  # what happened is untouched
        await pilot.press("T", "T", "T", "k")  # back to the recorded values
        assert "HYPOTHETICAL" not in graph.text


async def test_header_says_the_replay_is_paused_or_playing_not_the_recorded_running(session_path: Path) -> None:
    from tui.widgets.header import RunHeader

    app = replay_app(session_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        header = lambda: str(screen.query_one(RunHeader).render())  # noqa: E731
        params = lambda: str(screen.query_one(ParamsBar).render())  # noqa: E731
        await pilot.press("N")
        assert screen.model.control_status == "running"  # what the recording says
        assert "replay paused" in header() and "running" not in header()
        assert "live round" not in params() and "round 1" in params()
        await pilot.press("space")
        assert "replay playing (1x)" in header()
        await pilot.press("space", "j", "3", "enter")
        assert "finished: manager" in header() and "replay" not in header()  # the recorded outcome


async def test_stepping_back_stops_at_the_first_frame_not_an_empty_screen(session_path: Path) -> None:
    app = replay_app(session_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await pilot.press("B", "B", "b", "b")
        assert screen.cursor >= 1 and screen.model.run is not None  # the run's header, not "starting…"
        assert screen.model.problem and "model ?" not in str(screen.query_one("#header").render())


async def test_jump_dialog_says_which_rounds_exist(session_path: Path) -> None:
    app = replay_app(session_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("j")
        assert isinstance(app.screen, JumpScreen)
        assert "(1..3)" in str(app.screen.query_one("#jump-label").render())

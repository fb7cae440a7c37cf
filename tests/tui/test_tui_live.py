"""Pilot tests of the keys that steer a live run: the real engine in the app's loop, the real openai
client against the in-process demo server, real MiniLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.routing.dytopo import RoutingResult, route_from_similarity
from core.runtime import events as ev
from core.runtime.config import Settings
from tests.support.tui import app_for, live_app, wait_for
from tui.cli.launch import OpenRun
from tui.screens.confirm import ConfirmScreen
from tui.widgets.graph_pane import GraphPane
from tui.widgets.header import ParamsBar

pytestmark = pytest.mark.usefixtures("embedder")


def edges_in(text: str) -> set[tuple[str, str, str]]:
    from tests.support.render import drawn_edges

    return drawn_edges(text)


async def test_demo_run_reaches_finished_and_is_saved(tmp_path: Path) -> None:
    app = live_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        model = app.swarm_screen.model
        assert model.finished.reason == "manager" and model.current == 3
        assert "finished: manager" in model.status_text
        assert list(tmp_path.glob("*.json"))  # the recorder autosaved the session


async def test_step_keys_pause_resume_and_auto(tmp_path: Path) -> None:
    app = live_app(tmp_path, step=True)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.swarm_screen
        model = screen.model
        await wait_for(pilot, lambda: model.control_status == "paused")
        assert model.current == 0  # waiting before round 1
        await pilot.press("n")
        await wait_for(pilot, lambda: model.phase == ev.Phase.PLAN and model.control_status == "paused")
        assert model.rounds[1].goal  # the plan ran, then the engine stopped at the next phase
        await pilot.press("n")
        await wait_for(pilot, lambda: model.phase == ev.Phase.WORK and model.control_status == "paused")
        await pilot.press("N")
        await wait_for(pilot, lambda: model.current == 1 and model.rounds[1].decision is not None
                       and model.control_status == "paused")
        await pilot.press("N")
        await wait_for(pilot, lambda: model.current == 2 and model.control_status == "paused")
        await pilot.press("space")  # resume: auto-run
        await wait_for(pilot, lambda: model.mode == "auto")
        await pilot.press("space")  # pause again: stops at the next boundary
        await wait_for(pilot, lambda: model.mode == "step")
        assert "mode step" in str(screen.query_one(ParamsBar).render()).replace("\xa0", " ")
        await pilot.press("a")
        await wait_for(pilot, lambda: model.finished is not None)
        assert model.finished.reason == "manager"


async def test_tau_and_k_in_redraw_the_graph_then_reroute(tmp_path: Path) -> None:
    app = live_app(tmp_path, step=True)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.swarm_screen
        model = screen.model
        await wait_for(pilot, lambda: model.control_status == "paused")
        await pilot.press("N")  # round 1, then wait before round 2 starts
        await wait_for(pilot, lambda: model.current == 1 and model.rounds[1].decision is not None
                       and model.control_status == "paused")
        await pilot.press("n")  # round 2's descriptors (phase A)
        await wait_for(pilot, lambda: model.phase == ev.Phase.DESCRIPTORS and model.control_status == "paused")
        await pilot.press("n")
        await wait_for(pilot, lambda: model.rounds[2].routing is not None and model.control_status == "paused")
        recorded: RoutingResult = model.rounds[2].routing
        graph = screen.query_one(GraphPane)
        assert edges_in(graph.text) == {(e.src, e.dst, f"{e.score:.2f}") for e in recorded.edges}

        await pilot.press("t", "t", "t")  # tau 0.30 -> 0.45: weaker edges drop out
        await wait_for(pilot, lambda: model.params["tau"] == pytest.approx(0.45))
        await pilot.press("K")  # k_in 3 -> 2
        await wait_for(pilot, lambda: model.params["k_in"] == 2)
        expected = route_from_similarity(recorded.names, recorded.similarity, 0.45, 2)
        await wait_for(pilot, lambda: "PREVIEW" in graph.text)
        assert "tau 0.45" in graph.text and "k_in 2" in graph.text
        assert edges_in(graph.text) == {(e.src, e.dst, f"{e.score:.2f}") for e in expected.edges}
        assert edges_in(graph.text) != {(e.src, e.dst, f"{e.score:.2f}") for e in recorded.edges}
        assert "tau 0.45" in str(screen.query_one(ParamsBar).render())

        await pilot.press("r")  # the engine re-routes this round now, before its work phase
        await wait_for(pilot, lambda: model.rounds[2].rerouted)
        assert "PREVIEW" not in graph.text
        assert model.rounds[2].routing.edges == expected.edges
        await pilot.press("a")
        await wait_for(pilot, lambda: model.finished is not None)


async def test_cancel_save_and_quit_confirmation(tmp_path: Path) -> None:
    save = tmp_path / "run.json"
    app = live_app(tmp_path, step=True, save=save)
    async with app.run_test(size=(120, 40)) as pilot:
        model = app.swarm_screen.model
        await wait_for(pilot, lambda: model.control_status == "paused")
        await pilot.press("n")
        await wait_for(pilot, lambda: model.rounds.get(1) is not None and model.rounds[1].goal != "")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("session saved" in n.message for n in app._notifications))
        assert save.exists()
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")  # no: the run goes on
        assert not isinstance(app.screen, ConfirmScreen) and app.is_running
        await pilot.press("x")
        await wait_for(pilot, lambda: model.finished is not None)
        assert model.finished.reason == "cancelled"
        await pilot.press("q")  # nothing running any more: quits without asking
        await wait_for(pilot, lambda: not app.is_running, timeout=10)
    assert app.return_code == 0


async def test_quit_while_running_asks_and_yes_quits(tmp_path: Path) -> None:
    app = live_app(tmp_path, step=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen.model.control_status == "paused")
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, timeout=10)


async def test_endpoint_down_is_a_notification_not_a_traceback(tmp_path: Path) -> None:
    settings = Settings(base_url="http://127.0.0.1:9/v1", sessions_dir=str(tmp_path))
    app = app_for(OpenRun("anything", settings))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: bool(app.swarm_screen.model.error))
        assert "cannot reach the model endpoint" in app.swarm_screen.model.error
        assert any("cannot reach" in n.message for n in app._notifications)
        assert app.is_running
        await pilot.pause()
        header = str(app.swarm_screen.query_one("#header").render())
        assert header.startswith("▍anything") and "code ·" in header  # the user's problem, not "starting…"
        assert "the run stopped before round 1" in app.swarm_screen.query_one(GraphPane).text
        app.swarm_screen.model.embeddings_ready = False  # MiniLM still loading: nothing will use it now
        app.swarm_screen.refresh_all()
        assert "loading embeddings" not in app.swarm_screen.query_one(GraphPane).text
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=10)
    assert app.return_value == 1  # the exit code (run_and_exit): a failed run is no success (as in --headless)

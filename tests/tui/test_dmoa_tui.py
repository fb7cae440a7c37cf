"""Pilot tests of DMoA in the TUI: the demo run live (real engine, real openai client to the in-process
scripted server, real MiniLM), the router view in place of the graph, the Selector's pane, and replay."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.demo.scripts import DEMO_PROBLEMS
from core.methods.dmoa.events import DmoaRouted
from core.runtime import events as ev
from core.runtime.config import Settings
from core.sessions.store import load_session
from tests.support.tui import app_for, demo_run, wait_for
from tui.app import SwarmApp
from tui.cli.launch import OpenReplay
from tui.screens.replay import ReplayScreen
from tui.widgets.dmoa_view import DmoaView
from tui.widgets.graph_pane import GraphPane
from tui.widgets.header import ParamsBar
from tui.widgets.manager_pane import ManagerPane

pytestmark = pytest.mark.usefixtures("embedder")


def dmoa_app(tmp: Path, domain: str = "math", **options: object) -> SwarmApp:
    settings = Settings(
        domain=domain,
        sessions_dir=str(tmp),
        strategy="dmoa",
        strategy_options={"dmoa": {"weights_dir": str(tmp), **options}},
    )
    return demo_run(settings, DEMO_PROBLEMS[domain])


async def test_router_view_shows_each_step_in_place_of_the_graph(tmp_path: Path) -> None:
    app = dmoa_app(tmp_path, "code")
    async with app.run_test(size=(140, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        model = screen.model
        assert model.finished.reason == "summarizer" and model.current == 3
        view = screen.query_one(DmoaView)
        assert view.display and not screen.query_one(GraphPane).display and not screen.query_one(ManagerPane).display
        routed = {e.round: e for e in model.method_events if isinstance(e, DmoaRouted)}
        text = view.text
        # the timeline, then the viewed (last) step: bars with the 1/N line, k and K, alpha, summarizer
        timeline = " / ".join(f"step {n}: {', '.join(routed[n].selected)}" for n in sorted(routed))
        assert timeline.replace(" / ", "") in text.replace("\n", "").replace(" … / ", "").replace(" …", "").replace(
            " ✓", "").replace(" / ", "")
        last = routed[3]
        assert f"k {last.k} of K 3" in text and "1/N = 0.25" in text and "┆" in text
        for name, alpha in zip(last.selected, last.alpha, strict=True):
            assert any(line.startswith(f"▶ {name}") and f"α {alpha:.2f}" in line for line in text.splitlines())
        assert "summarizer [FINAL]" in text and "hand-off" in text
        await pilot.press("comma")  # browse back to step 2 while the view follows
        await pilot.pause(0.1)
        assert "summarizer [CONTINUE]" in view.text and view.border_title.endswith("step 2")
        assert f"k {routed[2].k} of K 3" in view.text
        assert list(tmp_path.glob("*.json"))  # the session was saved


async def test_the_selector_gets_a_pane_of_its_own(tmp_path: Path) -> None:
    app = dmoa_app(tmp_path, "math", router="llm")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        assert list(screen._panes) == ["Summarizer", "ProblemParser", "Solver", "Verifier", "Selector"]
        assert "the Selector's weights" in screen.query_one(DmoaView).text


async def test_replay_shows_the_router_view_stepping_back_and_forth(tmp_path: Path) -> None:
    app = dmoa_app(tmp_path, "math", router="llm")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
    session = load_session(next(tmp_path.glob("*.json")))
    replay = app_for(OpenReplay(session, Path("dmoa")))
    async with replay.run_test(size=(120, 40)) as pilot:
        screen = replay.screen
        assert isinstance(screen, ReplayScreen)
        await pilot.press("N", "N", "N")
        assert screen.model.current == 2
        view = screen.query_one(DmoaView)
        await pilot.pause(0.1)
        assert "step 2: Verifier, Solver" in view.text
        await pilot.press("B", "B")  # back before the Selector's first call: its pane stays, nothing breaks
        await pilot.pause(0.1)
        assert screen.model.current <= 1 and "Selector" in screen._panes
        await pilot.press("j")
        await pilot.press("1", "enter")
        await pilot.pause(0.1)
        assert screen.model.current == 1 and "step 1: ProblemParser, Solver" in view.text
        assert "step 2" not in view.text
        assert all(isinstance(e, ev.Event) for e in screen.model.method_events)


async def test_a_dmoa_run_offers_no_tau_k_in_or_graph_keys_and_counts_steps(tmp_path: Path) -> None:
    app = dmoa_app(tmp_path, "code")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.run is not None)
        screen = app.swarm_screen
        await pilot.pause(0.1)
        shown = {binding.action for _, binding, enabled, _ in screen.active_bindings.values() if enabled}
        assert not shown & {"tau(0.05)", "tau(-0.05)", "k_in(1)", "k_in(-1)", "reroute"}
        assert not shown & {"toggle_matrix", "toggle_removed"}  # the router view has no graph to switch
        assert "toggle_pause" in shown  # the run's other keys stay
        before = screen.control.params
        await pilot.press("t", "k")
        assert screen.control.params == before
        await wait_for(pilot, lambda: screen.model.current >= 1)
        await pilot.pause(0.1)
        assert re.search(r"live step \d+", screen.query_one(ParamsBar).render().plain)

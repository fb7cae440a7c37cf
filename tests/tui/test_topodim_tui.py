"""TopoDIM in the TUI: Pilot runs of the real engine against the demo server, the view in the graph pane's
place, its keys (d removed edges, g distributions), small terminals and replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.demo.scripts import DEMO_PROBLEMS
from core.runtime import events as ev
from core.runtime.config import Settings
from core.sessions.store import load_session
from tests.support.tui import app_for, demo_run, post_events, wait_for
from tui.app import SwarmApp
from tui.cli.launch import OpenReplay
from tui.screens.replay import ReplayScreen
from tui.widgets.graph_pane import GraphPane
from tui.widgets.topodim_view import TopoDIMView

pytestmark = pytest.mark.usefixtures("embedder")


def topodim_app(tmp: Path, **options: object) -> SwarmApp:
    settings = Settings(sessions_dir=str(tmp), strategy="topodim", strategy_options={"topodim": dict(options)})
    return demo_run(settings, DEMO_PROBLEMS["code"])


async def test_a_demo_run_shows_the_typed_graph_and_the_numbered_calls(tmp_path: Path) -> None:
    app = topodim_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        view = screen.query_one(TopoDIMView)
        assert view.display and not screen.query_one(GraphPane).display
        text = view.text
        assert "prior · α 0.70 · kept 3 of 7 sampled edges" in text
        assert "Developer ──cond 0.92──▶ Researcher" in text  # conditioned: solid →
        assert "Researcher ══dbt 0.88══⇄ BugFixer" in text  # debate: double ⇄
        assert "Tester ┄┄fbk 0.81┄┄↺ Developer" in text  # feedback: dashed ↺
        assert "[4 Designer ✗]" in text  # dropped by eq. 9
        assert "4 pruned + 1 masked hidden (d)" in text
        assert "cond ███1  fbk ███1  dbt ███1  R_div 1.10/1.10" in text
        calls = [line for line in text.splitlines() if line.startswith("✓ ")]
        assert calls[0] == "✓ 1/9 solution  Developer" and calls[-1] == "✓ 9/9 final     Manager ← all kept agents"
        assert "✓ 3/9 challenge BugFixer ⇄ Researcher" in calls and len(calls) == 9
        assert view.border_subtitle == "calls 9/9"
        await pilot.press("d")
        text = view.text
        assert "BugFixer ··cond 0.55··▷ Researcher  masked" in text
        assert "Designer ··cond 0.40··▷ Developer  pruned" in text
        assert "masked = would close a cond/dbt cycle (eq. 7)" in text
        await pilot.press("g")
        text = view.text
        assert "p(r) per pair" in text and "0.55✗" in text  # the masked draw, in its 4-way distribution
        assert "Developer→Researcher" in text
        assert "step 1 goal: One pass over the typed graph: 9 calls" in screen.query_one("#manager").copy_text()


async def test_the_view_follows_calls_in_step_mode(tmp_path: Path) -> None:
    settings = Settings(sessions_dir=str(tmp_path), strategy="topodim")
    app = demo_run(settings, DEMO_PROBLEMS["code"], step=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.control.waiting)
        view = app.swarm_screen.query_one(TopoDIMView)
        await pilot.press("n")  # the graph
        await wait_for(pilot, lambda: "· 1/9 solution  Developer" in view.text)
        await pilot.press("n")  # call 1
        await wait_for(pilot, lambda: "✓ 1/9 solution  Developer" in view.text and app.swarm_screen.control.waiting)
        assert "· 2/9 solution  Researcher ← Developer" in view.text
        assert view.border_subtitle == "calls 1/9"


async def test_small_terminal_still_shows_the_view(tmp_path: Path) -> None:
    app = topodim_app(tmp_path, generator="random", seed=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        screen = app.swarm_screen
        view = screen.query_one(TopoDIMView)
        view.scroll_visible(animate=False)
        await pilot.pause(0.1)
        assert screen.has_class("-narrow") and view.display
        assert view.size.width >= 60 and view.size.height >= 10
        assert "random · α 0.70" in view.text and "final     Manager" in view.text


async def test_replay_draws_the_same_view_and_steps_back(tmp_path: Path) -> None:
    app = topodim_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.2)
        live = app.swarm_screen.query_one(TopoDIMView).text
    path = next(tmp_path.glob("*.json"))
    session = load_session(path)
    replay = app_for(OpenReplay(session, path))
    async with replay.run_test(size=(160, 48)) as pilot:
        screen = replay.screen
        assert isinstance(screen, ReplayScreen)
        screen.seek(len(screen.events))
        await pilot.pause(0.1)
        view = screen.query_one(TopoDIMView)
        assert " ".join(view.text.split()) == " ".join(live.split())  # the same drawing (wrapping aside)
        await pilot.press("b")  # one phase back: the decision has not happened yet
        await pilot.pause(0.1)
        assert "· 9/9 final" in view.text and "✓ 8/9 solution  BugFixer ← Researcher" in view.text


async def test_other_strategies_keep_the_graph_pane(tmp_path: Path) -> None:
    from tests.support.tui import feed_app

    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        started = ev.RunStarted(run_id="x", problem="p", domain="code", manager="Manager", workers=["Developer"],
                                roles={}, protocol="phased", strategy="dytopo", model="m", base_url="u", demo=True,
                                params={"tau": 0.3, "k_in": 3, "max_rounds": 5})
        await post_events(app, pilot, [started])
        screen = app.swarm_screen
        assert screen.query_one(GraphPane).display and not screen.query_one(TopoDIMView).display

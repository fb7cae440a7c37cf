"""Pilot tests of TopoWeaver-R1's view: the real engine in the app's loop against the in-process demo
server (real openai client, real PyYAML, real sandbox), and the replay of a recorded run."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path

from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.sessions.model import session_from_events
from core.sessions.store import load_session, save_session
from tests.support.topoweaver import CHAIN, LATER_STEP_REF, NO_TESTER_LAST, script_with
from tests.support.tui import app_for, demo_run, wait_for
from tui.app import SwarmApp
from tui.cli.launch import OpenReplay, OpenRun
from tui.screens.replay import ReplayScreen
from tui.widgets.graph_pane import GraphPane
from tui.widgets.header import ParamsBar
from tui.widgets.manager_pane import ManagerPane
from tui.widgets.topoweaver_view import TopoWeaverView

AGENTS = {"Orchestrator", "planner_1", "searcher_1", "algorithmmer_1", "coder_1", "tester_1", "debugger_1"}


def view_text(app: SwarmApp) -> str:
    return app.screen.query_one(TopoWeaverView).text


def yaml_text(app: SwarmApp) -> str:
    return app.screen.query_one(TopoWeaverView).yaml_shown


async def test_the_live_demo_shows_plans_dag_density_tester_and_history(tmp_path: Path) -> None:
    settings = Settings(strategy="topoweaver", sessions_dir=str(tmp_path))
    app = demo_run(settings, DEMO_PROBLEMS["code"])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        assert screen.model.finished.reason == "passed"
        view = screen.query_one(TopoWeaverView)
        assert view.display and not screen.query_one(GraphPane).display and not screen.query_one(ManagerPane).display
        # Every agent the plans named got its own pane as it joined.
        assert set(screen._panes) == AGENTS
        text = view_text(app)
        assert "turn 2/2   VALID   interview · N_max 7" in text
        assert "◀┄ coder_1@1" in text and "debugger_1" in text
        assert "S_complex 2.98 (α=1; larger = sparser)" in text and "|V| 3 · |E| 2 · s 3 · |V| ≤ N_max 7" in text
        assert "✓ PASSED  on debugger_1's code" in text
        assert "history  turn 1: 5 agents, 3 steps, WRONG_ANSWER → turn 2: 3 agents, 3 steps, PASSED" in text
        assert "difficulty: interview" in yaml_text(app) and "debugger_1" in yaml_text(app)
        assert "tests: on" in str(screen.query_one(ParamsBar).render()).replace("\xa0", " ")
        await pilot.press("comma")  # look back at turn 1
        text = view_text(app)
        assert "turn 1/2   VALID" in text and "step 1" in text and "step 3" in text
        assert "✗ WRONG_ANSWER  on coder_1's code" in text and "failing: assert make_palindrome('x') == 'x'" in text
        assert "algorithmmer_1" in yaml_text(app)
        assert list(tmp_path.glob("*.json"))  # the run was recorded


async def _record(script: object) -> list[ev.Event]:
    from core.compose.plan import BackendChoice
    from core.compose.runner import build_engine, open_backend

    settings = Settings(strategy="topoweaver", sessions_dir="/nonexistent")
    events: list[ev.Event] = []
    with ScriptedServer(script) as server:  # type: ignore[arg-type]
        backend = await open_backend(settings, BackendChoice(server=server, demo=True))
        engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append])
        try:
            await engine.run()
        finally:
            await backend.close()
    return [e for e in events if not isinstance(e, ev.AgentDelta)]


async def test_a_replayed_run_shows_an_invalid_plan_with_its_tag_and_raw_reply(tmp_path: Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a run of its own loop, recorded
        events = pool.submit(asyncio.run, _record(script_with({1: NO_TESTER_LAST, 2: CHAIN}))).result(timeout=120)
    path = tmp_path / "tw.json"
    save_session(session_from_events(events), path)
    session = load_session(path)
    app = app_for(OpenReplay(session, path))
    async with app.run_test(size=(160, 48)) as pilot:
        assert isinstance(app.screen, ReplayScreen)
        await pilot.press("N")  # to the end of turn 1
        text = view_text(app)
        assert "[YAML_LOGIC_INVALID]  L3" in text and "the last step (step 2) has no tester" in text
        assert "the invalid plan uses up this turn" in text and "no plan ran ([YAML_LOGIC_INVALID])" in text
        assert "the Orchestrator's reply" in yaml_text(app)
        await pilot.press("N", "N")
        text = view_text(app)
        assert "turn 2/2   VALID   introductory · N_max 4" in text
        assert "history  turn 1: [YAML_LOGIC_INVALID] → turn 2: 2 agents, 2 steps, PASSED" in text
        assert {n for n, p in app.screen._panes.items() if p.display} == {"Orchestrator", "coder_1", "tester_1"}
        await pilot.press("B", "B", "B")  # back to the start: the view is rebuilt from the events
        assert "turn 2" not in view_text(app)
        assert [n for n, p in app.screen._panes.items() if p.display] == ["Orchestrator"]


async def test_a_refused_plan_is_a_short_toast_with_its_tag_and_the_details_stay_in_the_view(tmp_path: Path) -> None:
    """At 80x24 the toast of a refused plan takes two lines: what was refused (the plan, its tag as the
    validator gives it, never eaten as markup) and what happens next; the validator's message is in the view."""
    from textual.widgets._toast import Toast

    with ScriptedServer(script_with({1: LATER_STEP_REF, 2: CHAIN})) as server:
        settings = Settings(strategy="topoweaver", base_url=server.base_url, model="scripted",
                            sessions_dir=str(tmp_path))
        app = app_for(OpenRun(DEMO_PROBLEMS["code"], settings, step=True))
        async with app.run_test(size=(80, 24), notifications=True) as pilot:  # toasts shown, as in use
            await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.run is not None)
            await pilot.press("n")  # the Orchestrator writes turn 1's plan; it is refused

            def toasts() -> list[Toast]:
                return [t for t in app.screen.query(Toast) if "plan refused" in str(t.render())]

            await wait_for(pilot, lambda: bool(toasts()))
            await pilot.pause(0.1)
            (toast,) = toasts()
            shown = str(toast.render())
            assert shown == "plan refused [YAML_LOGIC_INVALID] L2; turn used up"
            assert toast.size.height - 2 <= 2, toast.size  # its text lines (padding 1 above and below)
            assert "coder_1 (step 2) refs tester_1 in a later step (3)" in view_text(app)

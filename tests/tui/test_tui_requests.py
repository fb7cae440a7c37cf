"""SwarmApp takes one launch request (tui.cli.launch): what the request says (the demo switch, the demo server's
pace, step mode, where to save) is what the screens it opens run with."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Switch

from core.demo.scripts import DEMO_PROBLEMS
from core.runtime.config import Settings
from core.runtime.control import ControlMode
from sessions import EXAMPLES_DIR
from tests.support.tui import app_for, wait_for
from tui.cli.launch import DEMO_PACE, OpenReplay, OpenRun
from tui.screens.launch import LaunchScreen
from tui.screens.replay import ReplayScreen
from tui.screens.run import RunScreen


async def test_a_run_request_s_demo_pace_step_and_save_reach_the_run_screen(tmp_path: Path) -> None:
    save = tmp_path / "mine.json"
    request = OpenRun(DEMO_PROBLEMS["code"], Settings(sessions_dir=str(tmp_path)), demo=True, step=True, save=save,
                      demo_chunk_delay=0.25)
    app = app_for(request, start_engine=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen is app.swarm_screen
        assert screen.backend.demo and screen.backend.demo_chunk_delay == 0.25
        assert screen.control.mode is ControlMode.STEP and screen.recorder.requested == save
    assert OpenRun("p", Settings()).demo_chunk_delay == DEMO_PACE  # the TUI's readable pace unless told


async def test_no_problem_opens_the_form_with_the_request_s_demo_switch(tmp_path: Path) -> None:
    app = app_for(OpenRun(None, Settings(sessions_dir=str(tmp_path)), demo=True), start_engine=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen) and app.swarm_screen is None
        assert app.screen.query_one("#demo", Switch).value


async def test_a_fork_from_a_replay_runs_at_the_replay_request_s_pace(tmp_path: Path) -> None:
    from core.sessions.store import load_session

    path = EXAMPLES_DIR / "example-code.json"
    request = OpenReplay(load_session(path), path, settings=Settings(sessions_dir=str(tmp_path)), demo=True,
                         demo_chunk_delay=0.0)
    app = app_for(request, start_engine=False)
    async with app.run_test(size=(120, 40)) as pilot:
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        await pilot.press("N")  # round 1 whole
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        fork = app.screen
        assert isinstance(fork, RunScreen) and fork.fork is not None and fork.fork.round == 1
        assert fork.backend.demo and fork.backend.demo_chunk_delay == 0.0

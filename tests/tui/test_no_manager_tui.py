"""A method whose roster names no Manager (a plugin's agents that answer and read each other) has no goal to
show: the run screen leaves the manager pane out, as it does for one agent alone, rather than listing
"R1 goal …" lines that stay empty."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.runtime.config import Settings
from tests.support import pair_method
from tests.support.tui import demo_run, wait_for
from tui.app import SwarmApp
from tui.widgets.agent_pane import AgentPane
from tui.widgets.manager_pane import ManagerPane


@pytest.fixture
def pair() -> Iterator[str]:
    pair_method.install()
    yield pair_method.NAME
    pair_method.remove()


@pytest.mark.usefixtures("embedder")
async def test_a_team_without_a_manager_shows_no_empty_goal_lines(tmp_path: Path, pair: str) -> None:
    settings = Settings(domain="math", sessions_dir=str(tmp_path), strategy=pair)
    app: SwarmApp = demo_run(settings, "What is 6 times 7?")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        assert screen.model.finished is not None and screen.model.finished.final_answer == pair_method.ANSWER
        assert screen.model.current == pair_method.ROUNDS and screen.model.manager == ""
        shown = {pane.agent for pane in screen.query(AgentPane) if pane.display}
        assert shown == set(pair_method.AGENTS)  # two agents: not the one-agent layout
        assert not screen.query_one(ManagerPane).display

"""Steering you can see (issue 47): the goal a round ran with is the goal shown, every action leaves a
mark, and the dialog keeps its refusals next to the field. Real engine, scripted server, Pilot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from tests.tui.test_tui_support import live_app, wait_for
from tui.widgets.manager_pane import ManagerPane

pytestmark = pytest.mark.usefixtures("embedder")
SIZES = [(160, 48), (80, 24)]


def _says(request: Any, text: str) -> bool:
    return any(text in str(m.get("content", "")) for m in request.messages)


async def _paused_after_round_one(pilot: Any, model: Any) -> None:
    await wait_for(pilot, lambda: model.control_status == "paused")
    await pilot.press("N")  # round 1, then wait before round 2 starts
    await wait_for(pilot, lambda: model.current == 1 and model.rounds[1].decision is not None
                   and model.control_status == "paused")


@pytest.mark.parametrize("size", SIZES)
async def test_the_users_goal_is_the_goal_shown_with_the_managers_beside_it(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    with ScriptedServer(demo_script) as server:
        app = live_app(tmp_path, step=True, server=server, max_rounds=3)
        async with app.run_test(size=size) as pilot:
            screen = app.swarm_screen
            model = screen.model
            await _paused_after_round_one(pilot, model)
            managers_goal = model.next_goal
            screen.send_steering({"action": "goal", "text": "USER-GOAL handle unicode input"})
            await wait_for(pilot, lambda: model.steered_count == 1)
            await pilot.press("N")
            await wait_for(pilot, lambda: model.rounds.get(2) is not None and model.rounds[2].finished)
            round2 = [r for r in server.requests if r.round == 2 and r.role != "Manager"]
            assert round2 and all(_says(r, "USER-GOAL") for r in round2)  # what the workers received
            rv = model.rounds[2]
            assert (rv.goal, rv.goal_by_user, rv.replaced_goal) == ("USER-GOAL handle unicode input", True,
                                                                    managers_goal)
            screen.view_round = 2
            screen.refresh_all()
            await pilot.pause(0.1)
            shown = screen.query_one(ManagerPane).copy_text()
            assert "R2 goal ✎ yours: USER-GOAL handle unicode input" in shown
            assert f"replaced the Manager's: {managers_goal}" in shown
            assert "R1 goal ✎" not in shown  # round 1 ran with the Manager's own goal
            await pilot.press("a")
            await wait_for(pilot, lambda: model.finished is not None)

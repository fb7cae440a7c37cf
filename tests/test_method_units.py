"""Every method in its own words (core.methods.registry.MethodInfo.unit / layer): DMoA steps, TopoWeaver
turns with plan steps, DyTopo rounds with tiers; in the agent panes, the sparklines and the headless
progress. The demo runs live over the loopback scripted server (real openai client, real MiniLM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.demo.scripts import DEMO_PROBLEMS
from core.runtime.config import Settings
from tests.test_cli import swarm
from tests.test_tui_support import wait_for
from tui.app import SwarmApp
from tui.widgets.agent_pane import AgentPane
from tui.widgets.results_pane import RoundSparks


def test_headless_progress_steps_by_the_method_s_unit(tmp_path: Path) -> None:
    env = {"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}
    dmoa = swarm("--headless", "--demo", "--strategy", "dmoa", "--domain", "math", env=env)
    assert dmoa.returncode == 0, dmoa.stderr
    assert "── step 1/20" in dmoa.stderr and "── step 2/20" in dmoa.stderr and "── round" not in dmoa.stderr
    assert "completion this step;" in dmoa.stderr and "; 2 steps, " in dmoa.stderr
    weaver = swarm("--headless", "--demo", "--strategy", "topoweaver", "--domain", "math", env=env)
    assert weaver.returncode == 0, weaver.stderr
    assert "── turn 1/2" in weaver.stderr and "; 1 turn, " in weaver.stderr
    dytopo = swarm("--headless", "--demo", "--domain", "math", env=env)
    assert "── round 2/5" in dytopo.stderr and "; 2 rounds, " in dytopo.stderr  # DyTopo as it always was
    single = swarm("--headless", "--demo", "--strategy", "single", "--domain", "math", env=env)
    assert "── call 1\n" in single.stderr and "call 1/" not in single.stderr  # one call: no max_rounds to count


def app_for(tmp: Path, strategy: str, domain: str) -> SwarmApp:
    settings = Settings(domain=domain, sessions_dir=str(tmp), strategy=strategy,
                        strategy_options={"dmoa": {"weights_dir": str(tmp)}} if strategy == "dmoa" else {})
    return SwarmApp(settings, problem=DEMO_PROBLEMS[domain], demo=True, state_path=None, demo_chunk_delay=0.0,
                    load_embedder=False)


@pytest.mark.usefixtures("embedder")
@pytest.mark.parametrize(
    ("strategy", "domain", "unit"),
    [("dmoa", "math", "step"), ("topoweaver", "code", "turn"), ("dytopo", "math", "round")],
)
async def test_panes_name_an_agent_s_place_in_the_method_s_words(
    tmp_path: Path, strategy: str, domain: str, unit: str
) -> None:
    app = app_for(tmp_path, strategy, domain)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        model = screen.model
        subtitles = {pane.agent: str(pane.border_subtitle) for pane in screen.query(AgentPane) if pane.display}
        last = model.rounds[model.current]
        ran = [name for name, view in last.agents.items() if view.tier is not None]
        assert ran, subtitles
        sparks = screen.query_one(RoundSparks).query_one("#tokens-label").render()
        assert str(sparks).startswith(f"tokens/{unit} ")
        if strategy == "dmoa":  # the selected experts of a step answer together: the pane names the step
            for name in ran:
                assert subtitles[name].startswith(f"step {model.current} · "), subtitles
            assert not any("tier" in text for text in subtitles.values()), subtitles
        elif strategy == "topoweaver":  # the plan's steps, from 1 as the plans print them
            for name in ran:
                assert f"step {last.agents[name].tier + 1} · " in subtitles[name], subtitles
            assert not any("tier" in text for text in subtitles.values()), subtitles
            assert any(text.endswith("turn 1 output") for text in subtitles.values()), subtitles
        else:  # DyTopo keeps its tiers, numbered as its graph draws them (T0, T1, ...)
            for name in ran:
                assert f"tier {last.agents[name].tier} · " in subtitles[name], subtitles

"""Every method in its own words (core.methods.registry.MethodInfo.unit / layer): DMoA steps, TopoWeaver
turns with plan steps, DyTopo rounds with tiers; in the agent panes, the sparklines and the headless
progress. The demo runs live over the loopback scripted server (real openai client, real MiniLM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.demo.scripts import DEMO_PROBLEMS
from core.runtime.config import Settings
from tests.support.cli import swarm
from tests.support.tui import demo_run, wait_for
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


def app_for(tmp: Path, strategy: str, domain: str, *, step: bool = False) -> SwarmApp:
    settings = Settings(domain=domain, sessions_dir=str(tmp), strategy=strategy,
                        strategy_options={"dmoa": {"weights_dir": str(tmp)}} if strategy == "dmoa" else {})
    app: SwarmApp = demo_run(settings, DEMO_PROBLEMS[domain], step=step)
    return app


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


def footer_keys(screen: object) -> dict[str, str]:
    """The keys the footer and the help show now: key -> label, after check_action."""
    return {key: active.binding.description for key, active in screen.active_bindings.items()  # type: ignore[attr-defined]
            if active.binding.show}


def help_rows(app: SwarmApp) -> dict[str, str]:
    """The help screen's rows (it is open): binding id -> what it does."""
    from tui.screens.help import HelpScreen

    assert isinstance(app.screen, HelpScreen)
    return {ident: what for _keys, _action, ident, what in app.screen.rows if ident}


@pytest.mark.usefixtures("embedder")
@pytest.mark.parametrize(
    ("strategy", "domain", "labels", "tooltip"),
    [
        ("dmoa", "math", {"n": "phase", "N": "step", "comma": "◀step", "full_stop": "step▶"},
         "Run until the next step starts, then wait"),
        ("topoweaver", "code", {"n": "step", "N": "turn", "comma": "◀turn", "full_stop": "turn▶"},
         "Run until the next turn starts, then wait"),
        ("dytopo", "math", {"n": "phase", "N": "round", "comma": "◀rnd", "full_stop": "rnd▶"},
         "Run until the next round starts, then wait"),
    ],
)
async def test_footer_and_help_step_in_the_method_s_unit(
    tmp_path: Path, strategy: str, domain: str, labels: dict[str, str], tooltip: str
) -> None:
    app = app_for(tmp_path, strategy, domain, step=True)  # paused before its first unit: what a newcomer reads first
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.run is not None)
        await pilot.pause(0.1)
        keys = footer_keys(app.screen)
        assert {key: keys.get(key) for key in labels} == labels
        await pilot.press("f1")
        assert help_rows(app)["step_round"] == tooltip
        await pilot.press("escape")
        if strategy == "dmoa":  # its header counts against L_max from the start, as its bar does
            screen = app.swarm_screen
            assert screen.model.position == "step 0/20"
            assert "max steps 20" in str(screen.query_one("#params").render())


@pytest.mark.usefixtures("embedder")
async def test_one_agent_shows_no_graph_keys_manager_or_edge_counts(tmp_path: Path) -> None:
    app = app_for(tmp_path, "single", "math")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        keys = footer_keys(screen)
        assert keys["n"] == "call"
        for key in ("N", "g", "d", "comma", "full_stop", "enter", "t", "k"):  # nothing to step, browse or route
            assert key not in keys, key
        assert not screen.query_one("#manager").display
        sparks = screen.query_one(RoundSparks)
        assert sparks.query_one("#edges-label").styles.display == "none"
        await pilot.press("f1")
        rows = help_rows(app)
        assert "toggle_matrix" not in rows and "step_round" not in rows
        assert rows["step_phase"] == "Run one call, then wait (step mode)"


@pytest.mark.usefixtures("embedder")
async def test_topodim_s_manager_pane_counts_its_step(tmp_path: Path) -> None:
    app = app_for(tmp_path, "topodim", "math")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        text = app.swarm_screen.query_one("#manager").copy_text()
        assert text.startswith("step 1 goal: ") and "R1" not in text
        keys = footer_keys(app.swarm_screen)
        assert keys["n"] == "call" and keys["N"] == "step" and "comma" not in keys  # one step: nothing to browse

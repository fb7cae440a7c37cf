"""The launch form, themes (ours load, the choice is remembered) and the command palette."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Input, Label, Select, Static, Switch, TextArea

from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import ScriptedServer
from core.runtime.config import Settings
from tests.support.paths import ROOT
from tests.support.tui import form_app
from themes import THEMES_DIR, ThemeFileError, load_theme_file, load_themes
from tui.app import SwarmApp
from tui.commands import SwarmCommands
from tui.screens.launch import LaunchScreen
from tui.screens.run import RunScreen


def launch_app(tmp_path: Path, **settings: object) -> SwarmApp:
    return form_app(Settings(sessions_dir=str(tmp_path), **settings))


async def test_demo_switch_prefills_problem_and_follows_domain(tmp_path: Path) -> None:
    app = launch_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(app.screen, LaunchScreen)
        area = app.screen.query_one("#problem", TextArea)
        assert area.text == ""
        await pilot.click("#demo")
        await pilot.pause()
        assert area.text == DEMO_PROBLEMS["code"]
        assert app.screen.query_one("#base_url", Input).disabled
        app.screen.query_one("#domain", Select).value = "math"
        await pilot.pause()
        assert area.text == DEMO_PROBLEMS["math"]


async def test_start_with_bad_values_explains_in_one_line(tmp_path: Path) -> None:
    app = launch_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.click("#start")
        await pilot.pause()
        status = app.screen.query_one("#launch-status", Static)
        assert "type a problem first" in str(status.render())
        app.screen.query_one("#problem", TextArea).text = "Add two numbers."
        app.screen.query_one("#k_in", Input).value = "9"
        await pilot.press("ctrl+r")  # the Start key
        await pilot.pause()
        assert "k_in must be between 1 and 3" in str(status.render())
        assert isinstance(app.screen, LaunchScreen)


async def test_out_of_range_values_name_the_real_range(tmp_path: Path) -> None:
    app = launch_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        app.screen.query_one("#problem", TextArea).text = "Add two numbers."
        status = app.screen.query_one("#launch-status", Static)
        for field, value, expected in (("tau", "7", "tau must be between 0 and 1, got 7"),
                                       ("k_in", "0", "k_in must be between 1 and 3, got 0"),
                                       ("max_rounds", "", "max_rounds is empty: type a whole number")):
            app.screen.query_one(f"#{field}", Input).value = value
            await pilot.press("ctrl+r")
            await pilot.pause()
            assert str(status.render()) == f"✗ {expected}"
            assert isinstance(app.screen, LaunchScreen)
            app.screen.query_one(f"#{field}", Input).value = {"tau": "0.3", "k_in": "3", "max_rounds": "5"}[field]


async def test_domain_switch_moves_the_k_in_range(tmp_path: Path) -> None:
    """Math and general teams have three workers: k_in 3 would be refused, so the form lowers it and
    says the range; back on the code team the value typed comes back."""
    app = launch_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        label = app.screen.query_one("#k_in-label", Label)
        k_in = app.screen.query_one("#k_in", Input)
        assert str(label.render()) == "k_in (1..3)" and k_in.value == "3"
        app.screen.query_one("#domain", Select).value = "math"
        await pilot.pause()
        assert str(label.render()) == "k_in (1..2)" and k_in.value == "2"
        app.screen.query_one("#domain", Select).value = "code"
        await pilot.pause()
        assert str(label.render()) == "k_in (1..3)" and k_in.value == "3"
        app.screen.query_one("#domain", Select).value = "general"
        app.screen.query_one("#demo", Switch).value = True
        await pilot.pause()
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        assert app.screen.settings.domain == "general" and app.screen.settings.k_in == 2


async def test_start_opens_the_run_screen_with_the_form_values(tmp_path: Path) -> None:
    app = launch_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        app.screen.query_one("#demo", Switch).value = True
        app.screen.query_one("#tau", Input).value = "0.45"
        app.screen.query_one("#max_rounds", Input).value = "2"
        await pilot.pause()
        await pilot.click("#start")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        assert app.screen.settings.tau == 0.45 and app.screen.settings.max_rounds == 2
        assert app.screen.demo and app.screen.problem == DEMO_PROBLEMS["code"]


async def test_failed_start_returns_to_the_form_with_the_error(tmp_path: Path) -> None:
    app = form_app(Settings(sessions_dir=str(tmp_path)), start_engine=True)
    async with app.run_test(size=(120, 40)) as pilot:
        app.screen.query_one("#problem", TextArea).text = "Add two numbers."
        app.screen.query_one("#base_url", Input).value = "http://127.0.0.1:9/v1"
        await pilot.press("ctrl+r")
        for _ in range(200):
            await pilot.pause(0.05)
            if isinstance(app.screen, LaunchScreen) and app.screen.error:
                break
        await pilot.pause(0.1)
        assert isinstance(app.screen, LaunchScreen) and app.screen.error
        status = str(app.screen.query_one("#launch-status", Static).render())
        assert "cannot reach the model endpoint" in status
        assert "edit the endpoint URL, or ctrl+o for the demo" in status and "--" not in status  # the form's words
        assert app.screen.query_one("#problem", TextArea).text == "Add two numbers."


async def test_test_connection_reports_what_it_found(tmp_path: Path) -> None:
    app = launch_app(tmp_path)
    with ScriptedServer() as server:
        async with app.run_test(size=(120, 40)) as pilot:
            app.screen.query_one("#base_url", Input).value = server.base_url
            await pilot.click("#test")
            status = app.screen.query_one("#launch-status", Static)
            for _ in range(100):
                await pilot.pause(0.05)
                if "serves" in str(status.render()):
                    break
            assert "serves 1 model(s): scripted-demo" in str(status.render())
            assert app.screen.query_one("#model", Input).value == "scripted-demo"
            app.screen.query_one("#base_url", Input).value = "http://127.0.0.1:9/v1"
            await pilot.press("ctrl+t")  # the test-connection key
            for _ in range(100):
                await pilot.pause(0.05)
                if "✗" in str(status.render()):
                    break
            assert "cannot reach the model endpoint at http://127.0.0.1:9/v1" in str(status.render())


def test_our_theme_files_load_and_bad_ones_are_reported(tmp_path: Path) -> None:
    themes, errors = load_themes([THEMES_DIR])
    names = {t.name: t for t in themes}
    assert not errors
    assert names["swarm-dusk"].dark and not names["swarm-paper"].dark
    (tmp_path / "bad.toml").write_text('name = "bad"\nprimary = "not-a-colour"\n')
    with pytest.raises(ThemeFileError, match="not a colour"):
        load_theme_file(tmp_path / "bad.toml")
    assert load_themes([tmp_path])[1] == ["theme bad.toml: primary = 'not-a-colour' is not a colour"]


def test_tcss_uses_only_theme_variables() -> None:
    import re

    css = (ROOT / "tui" / "app.tcss").read_text()
    assert not re.search(r"#[0-9a-fA-F]{3,8}\b(?![-\w])(?=[;\s])", css.split("/*")[0] + css)
    for line in css.splitlines():
        if re.match(r"\s*(color|background|border[\w-]*)\s*:", line):
            assert "$" in line or "none" in line, line


async def test_chosen_theme_is_remembered_in_the_state_file(tmp_path: Path) -> None:
    state = tmp_path / "state" / "state.json"
    app = form_app(Settings(sessions_dir=str(tmp_path)), state_path=state, start_engine=True)
    async with app.run_test(size=(120, 40)) as pilot:
        assert "swarm-dusk" in app.available_themes and "swarm-paper" in app.available_themes
        app.theme = "swarm-paper"
        await pilot.pause()
    assert json.loads(state.read_text())["theme"] == "swarm-paper"
    again = form_app(Settings(sessions_dir=str(tmp_path)), state_path=state, start_engine=True)
    async with again.run_test(size=(120, 40)):
        assert again.theme == "swarm-paper"


async def test_command_palette_offers_every_run_key(tmp_path: Path) -> None:
    from tests.support.tui import feed_app

    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        provider = SwarmCommands(app.screen)
        hits = [hit async for hit in provider.search("tau")]
        assert any("Raise tau" in str(hit.match_display) for hit in hits)
        found = [hit async for hit in provider.discover()]
        assert len(found) >= 20
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"matrix")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.2)
        from tui.widgets.graph_pane import GraphPane

        assert app.swarm_screen.query_one(GraphPane).matrix


async def test_the_form_offers_the_chosen_method_s_own_options(tmp_path: Path) -> None:
    """DMoA: no protocol, tau or k_in (DyTopo's), its own options with their ranges; a value out of range says
    so in the command line's words; a good one reaches the run (it counts against L_max = 3)."""
    app = launch_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        form = app.screen
        assert isinstance(form, LaunchScreen)
        assert form.query_one("#tau", Input).display and not form.query("#opt-l_max")
        form.query_one("#strategy", Select).value = "dmoa"
        await pilot.pause(0.2)
        assert not form.query_one("#tau", Input).display and not form.query_one("#protocol", Select).display
        assert not form.query_one("#max_rounds", Input).display  # L_max bounds a DMoA run, not max_rounds
        labels = [str(label.render()) for label in form.query("#method-options Label")]
        assert "l_max (1..50)" in labels and "router" in labels and "tau (0.01..1)" in labels
        assert not any("max_tokens" in label for label in labels)  # call limits stay in the config file
        form.query_one("#demo", Switch).value = True
        form.query_one("#opt-l_max", Input).value = "80"
        await pilot.press("ctrl+r")  # Start sits below the options: its key
        await pilot.pause()
        status = str(form.query_one("#launch-status", Static).render())
        assert "l_max must be between 1 and 50, got 80" in status
        form.query_one("#opt-l_max", Input).value = "3"
        form.query_one("#step", Switch).value = True
        await pilot.press("ctrl+r")  # Start sits below the options: its key
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen)
        assert screen.settings.strategy_options["dmoa"]["l_max"] == "3"
        assert screen.model.position == "step 0/3" and screen.control.mode == "step"  # the step-mode switch


async def test_a_comparison_starts_from_the_form(tmp_path: Path) -> None:
    from textual.widgets import SelectionList

    from tui.screens.compare_live import LiveCompareScreen

    app = launch_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        form = app.screen
        assert isinstance(form, LaunchScreen)
        form.query_one("#demo", Switch).value = True
        picker = form.query_one("#compare", SelectionList)
        picker.select("single")
        picker.select("dytopo")  # the chosen method itself: not twice
        await pilot.press("ctrl+r")  # Start sits below the options: its key
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LiveCompareScreen)
        assert screen.plan.methods == ["dytopo", "single"] and screen.plan.problem == DEMO_PROBLEMS["code"]


async def test_the_palette_compares_and_quits_once(tmp_path: Path) -> None:
    from textual.system_commands import SystemCommandsProvider

    from tests.support.tui import feed_app

    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        titles = [hit.text for hit in [h async for h in SwarmCommands(app.screen).discover()]]
        titles += [hit.text for hit in [h async for h in SystemCommandsProvider(app.screen).discover()]]
        assert sum("Quit" in str(t) for t in titles) == 1, titles
        assert "Compare methods" in titles
        app.open_compare_form()  # the command's action, the run being over
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen) and app.screen.focused is app.screen.query_one("#compare")

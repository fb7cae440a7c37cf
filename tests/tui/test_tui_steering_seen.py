"""Steering you can see (issue 47): the goal a round ran with is the goal shown, every action leaves a
mark, and the dialog keeps its refusals next to the field. Real engine, scripted server, Pilot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from tests.support.tui import demo_run, form_app, live_app, paused_after_round_one, says, wait_for
from tui.widgets.manager_pane import ManagerPane

pytestmark = pytest.mark.usefixtures("embedder")
SIZES = [(160, 48), (80, 24)]




@pytest.mark.parametrize("size", SIZES)
async def test_the_users_goal_is_the_goal_shown_with_the_managers_beside_it(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    with ScriptedServer(demo_script) as server:
        app = live_app(tmp_path, step=True, server=server, max_rounds=3)
        async with app.run_test(size=size) as pilot:
            screen = app.swarm_screen
            model = screen.model
            await paused_after_round_one(pilot, model)
            managers_goal = model.next_goal
            screen.send_steering({"action": "goal", "text": "USER-GOAL handle unicode input"})
            await wait_for(pilot, lambda: model.steered_count == 1)
            await pilot.press("N")
            await wait_for(pilot, lambda: model.rounds.get(2) is not None and model.rounds[2].finished)
            round2 = [r for r in server.requests if r.round == 2 and r.role != "Manager"]
            assert round2 and all(says(r, "USER-GOAL") for r in round2)  # what the workers received
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


@pytest.mark.parametrize("size", SIZES)
async def test_a_demo_sessions_fork_runs_on_the_scripted_server_and_esc_from_its_compare_goes_back(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """A demo session replayed without --demo: s, a note, send — the fork runs on the scripted server (no
    endpoint error), the compare screen opens, and esc returns to the replay where the fork was made."""
    import shutil

    from tests.support.tui_sessions import EXAMPLE, replay_app
    from tui.screens.compare_saved import SavedCompareScreen
    from tui.screens.replay import ReplayScreen
    from tui.screens.run import RunScreen
    from tui.screens.steer import SteerScreen

    source = tmp_path / "parent.json"
    shutil.copy(EXAMPLE, source)
    app = replay_app(source, tmp_path / "forks", demo_chunk_delay=0.0)  # no demo=True: the session says demo
    async with app.run_test(size=size) as pilot:
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        replay.jump_to_round(1)
        await pilot.pause()
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SteerScreen))
        app.screen.query_one("#steer-to").value = "Tester"
        app.screen.query_one("#steer-text").value = "FORK-NOTE test the empty string"
        await pilot.press("enter")
        # The fork's run screen, or already the compare screen when the scripted fork ended within a poll.
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen | SavedCompareScreen))
        if isinstance(app.screen, RunScreen):
            assert app.screen.demo
        await wait_for(pilot, lambda: isinstance(app.screen, SavedCompareScreen), timeout=120)
        assert not any("cannot" in n.message for n in app._notifications)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is replay and app.swarm_screen is replay
        await pilot.press("right")  # the replay answers its keys again
        await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
async def test_a_silenced_agent_is_out_of_the_order_and_badged_silenced(tmp_path: Path, size: tuple[int, int]) -> None:
    from tui.widgets.graph_pane import GraphPane

    with ScriptedServer(demo_script) as server:
        app = live_app(tmp_path, step=True, server=server, max_rounds=3)
        async with app.run_test(size=size) as pilot:
            screen = app.swarm_screen
            model = screen.model
            await paused_after_round_one(pilot, model)
            screen.send_steering({"action": "silence", "agent": "Researcher"})
            await wait_for(pilot, lambda: model.steered_count == 1)
            await pilot.press("N")
            await wait_for(pilot, lambda: model.rounds.get(2) is not None and model.rounds[2].finished)
            routing = model.rounds[2].routing
            assert routing is not None and routing.inactive == ["Researcher"]
            assert "Researcher" not in routing.order and all("Researcher" not in tier for tier in routing.tiers)
            view = model.rounds[2].agents["Researcher"]
            assert (view.status, view.tier) == ("silenced", None)
            screen.view_round = 2
            screen.refresh_all()
            await pilot.pause(0.1)
            pane = screen.query_one("#agent-Researcher")
            assert "[silenced]" in str(pane.border_title) and "tier" not in str(pane.border_subtitle)
            graph = screen.query_one(GraphPane)
            text = "\n".join(line.plain for line in graph._lines)
            tiers = [line for line in text.splitlines() if line.startswith("T")]
            assert tiers and not any("Researcher" in line for line in tiers)
            assert "not running: Researcher" in text
            await pilot.press("a")
            await wait_for(pilot, lambda: model.finished is not None)


@pytest.mark.parametrize("size", SIZES)
async def test_a_retry_leaves_its_mark_live_and_in_the_replay(tmp_path: Path, size: tuple[int, int]) -> None:
    from tests.support.tui_sessions import replay_app
    from tui.screens.replay import ReplayScreen

    def marked(screen: Any) -> None:
        pane = screen.query_one("#agent-Developer")
        assert "✎ retry Developer" in pane.steer_marks
        assert "↻ retried" in str(pane.border_subtitle)
        assert "↻ retried" not in str(screen.query_one("#agent-Tester").border_subtitle)

    with ScriptedServer(demo_script) as server:
        app = live_app(tmp_path, step=True, server=server, max_rounds=3)
        async with app.run_test(size=size) as pilot:
            screen = app.swarm_screen
            model = screen.model
            await paused_after_round_one(pilot, model)
            screen.send_steering({"action": "retry", "agent": "Developer"})
            await wait_for(pilot, lambda: model.steered_count == 1)
            await pilot.press("N")
            await wait_for(pilot, lambda: model.rounds.get(2) is not None and model.rounds[2].finished)
            work = [r for r in server.requests if r.role == "Developer" and r.round == 2 and r.call == "work"]
            assert len(work) == 2  # asked again
            screen.view_round = 2
            screen.refresh_all()
            await pilot.pause(0.1)
            marked(screen)
            await pilot.press("a")
            await wait_for(pilot, lambda: model.finished is not None)
            saved = screen.recorder.path
    assert saved is not None
    replay = replay_app(saved, tmp_path)
    async with replay.run_test(size=size) as pilot:
        shown = replay.screen
        assert isinstance(shown, ReplayScreen)
        shown.jump_to_round(2)
        await pilot.pause(0.2)
        marked(shown)


@pytest.mark.parametrize("method", ["dytopo", "dmoa", "topoweaver", "topodim", "single"])
def test_the_steer_key_and_the_inbox_are_worded_for_each_method(method: str) -> None:
    from core.methods.catalogue import get_method_info, steering_of
    from tui.bindings import RUN_BINDINGS
    from tui.method_keys import relabel, words_for

    info = get_method_info(method)
    words = words_for(info)
    by_id = {b.id: relabel(b, words) for b in RUN_BINDINGS}
    steer, inbox, removed = by_id["steer"].tooltip, by_id["agent_inbox"].tooltip, by_id["toggle_removed"].tooltip
    taken = {k.value for k in steering_of(method)}
    assert ("a new goal" in steer) == ("goal" in taken)
    assert ("pin or cut an edge" in steer) == ("pin" in taken)
    assert ("retry" in steer) == ("retry" in taken)
    assert ("force or exclude" in steer) == ("force" in taken)
    assert ("the Orchestrator's plan" in steer) == ("plan" in taken)
    assert f"in the {info.unit} shown" in inbox
    assert ("k_in or cycle breaking" in removed) == bool(info.uses_tau)


def test_help_at_80x24_is_two_lines_a_key_snapshot(snap_compare: Any) -> None:
    """At 80x24 each key takes two lines (key, action, id; then what it does, the dialog's width), not a
    description column ~18 characters wide."""
    from tests.support.tui import feed_app, pinned_demo_events, post_events

    events = pinned_demo_events()[:3]

    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=(80, 24), run_before=run_before)


async def test_help_at_80x24_says_each_key_in_two_lines() -> None:
    from rich.console import Console

    from tests.support.tui import feed_app, pinned_demo_events, post_events
    from tui.screens.help import HelpScreen

    app = feed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await post_events(app, pilot, pinned_demo_events()[:3])
        await pilot.press("question_mark")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        console = Console(width=70, record=True, color_system=None)
        console.print(help_screen.table)
        lines = console.export_text().splitlines()
        steer = next(i for i, line in enumerate(lines) if line.startswith("s  steer"))
        assert lines[steer + 1].startswith("    Steer the team: a note to the focused agent")
        assert len(lines[steer + 1]) > 50  # the description has the dialog's width, not a narrow column


@pytest.mark.parametrize("size", SIZES)
async def test_a_refusal_stays_in_the_dialog_next_to_its_field(size: tuple[int, int]) -> None:
    from textual.widgets import Static

    from tests.support.tui import feed_app, pinned_demo_events, post_events
    from tui.screens.steer import SteerScreen

    app = feed_app()
    async with app.run_test(size=size) as pilot:
        await post_events(app, pilot, pinned_demo_events())
        screen = app.swarm_screen
        sent: list[Any] = []
        app.push_screen(SteerScreen(screen.steer_context(initial="note")), sent.append)
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, SteerScreen)
        dialog.query_one("#steer-to").value = "Tester"
        await pilot.press("enter")  # no text typed
        await pilot.pause()
        assert app.screen is dialog and not sent
        error = dialog.query_one("#steer-error", Static)
        assert error.display and str(error.render()) == "✗ type the note"
        assert dialog.query_one("#steer-text").has_class("-invalid") and dialog.focused.id == "steer-text"
        assert dialog.query_one("#steer-to").value == "Tester"  # what was chosen stays
        dialog.query_one("#steer-action").value = "silence"  # silence with no agent picked
        await pilot.pause()
        dialog.query_one("#steer-agent").clear()
        dialog.action_send()
        await pilot.pause()
        assert app.screen is dialog and not sent
        assert str(error.render()) == "✗ pick the agent to silence" and "{" not in str(error.render())
        assert dialog.query_one("#steer-agent").has_class("-invalid")
        region = error.region
        assert region.height >= 1 and region.bottom <= size[1]  # on screen, not clipped away
        dialog.query_one("#steer-agent").value = "Researcher"
        dialog.action_send()
        await pilot.pause()
        assert sent == [{"action": "silence", "agent": "Researcher"}]


@pytest.mark.parametrize("size", SIZES)
async def test_the_goal_editor_replaces_the_managers_goal_in_one_key(size: tuple[int, int]) -> None:
    from tests.support.tui import feed_app, pinned_demo_events, post_events
    from tui.screens.steer import ACTION_LABELS, SteerScreen

    app = feed_app()
    async with app.run_test(size=size) as pilot:
        await post_events(app, pilot, pinned_demo_events())
        screen = app.swarm_screen
        sent: list[Any] = []
        app.push_screen(SteerScreen(screen.steer_context(initial="goal")), sent.append)
        await pilot.pause()
        dialog = app.screen
        area = dialog.query_one("#steer-long_text")
        assert area.text == screen.model.next_goal and area.selected_text == area.text  # prefilled, selected
        hint = str(dialog.query_one("#steer-hint").render())
        assert "next round" in ACTION_LABELS["goal"] and "next round" in hint and "about to run" not in hint
        await pilot.press(*"FIRST")  # the first key typed replaces the whole goal
        assert area.text == "FIRST"
        await pilot.press("ctrl+a", *"USER GOAL")  # select all, and replace again
        assert area.text == "USER GOAL"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert sent == [{"action": "goal", "text": "USER GOAL"}]


def test_a_refusal_in_the_dialog_at_80x24_snapshot(snap_compare: Any) -> None:
    from tests.support.tui import feed_app, pinned_demo_events, post_events
    from tui.screens.steer import SteerScreen

    events = pinned_demo_events()

    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)
        screen = pilot.app.swarm_screen
        pilot.app.push_screen(SteerScreen(screen.steer_context(initial="silence")))
        await pilot.pause()
        pilot.app.screen.action_send()  # no agent picked
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
async def test_a_dmoa_note_to_all_is_marked_only_where_it_ran(tmp_path: Path, size: tuple[int, int]) -> None:
    from core.demo.scripts import DEMO_PROBLEMS
    from core.methods.dmoa.events import DmoaRouted
    from core.runtime.config import Settings

    settings = Settings(domain="code", sessions_dir=str(tmp_path), strategy="dmoa",
                        strategy_options={"dmoa": {"weights_dir": str(tmp_path)}})
    app = demo_run(settings, DEMO_PROBLEMS["code"], step=True)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None
                       and app.swarm_screen.model.control_status == "paused")
        screen = app.swarm_screen
        model = screen.model
        await pilot.press("N")
        await wait_for(pilot, lambda: model.current == 1 and model.rounds[1].finished
                       and model.control_status == "paused")
        screen.send_steering({"action": "note", "to": "all", "text": "DMOA-NOTE mind the empty string"})
        await wait_for(pilot, lambda: model.steered_count == 1)
        await pilot.press("a")
        await wait_for(pilot, lambda: model.finished is not None)
        step2 = next(e for e in model.method_events if isinstance(e, DmoaRouted) and e.round == 2)
        idle = [name for name in model.workers if name not in step2.selected]
        assert step2.selected and idle  # the router ran some agents at step 2, not all
        for name in step2.selected:
            assert model.steered_in(2, name)
        for name in idle:
            assert not model.steered_in(2, name)  # it got no note: no mark
            assert model.rounds[2].agents[name].status != "silenced"  # not picked is not silenced


def test_a_refusal_toast_is_one_line_and_says_what_was_asked_once() -> None:
    from core.runtime import events as ev
    from tui.model import refusal_toast

    def toast(action: str, target: str, reason: str) -> str:
        return refusal_toast(ev.UserSteered(round=1, phase="manager", action=action, target=target, accepted=False,
                                            reason=reason))

    assert toast("pin", "Tester→Tester", "cannot pin Tester→Tester: an agent does not send to itself") == (
        "not taken: cannot pin Tester→Tester: an agent does not send to itself")
    cycle = toast("pin", "A→B", "cannot pin A→B: it would close the cycle B→C→A→B of pinned edges (the graph must "
                                "stay acyclic; release one first)")
    assert cycle == "not taken: cannot pin A→B: it would close the cycle B→C→A→B of pinned edges"
    tagged = toast("plan", "", "the edited plan is invalid, [YAML_PARSE_ERROR]: YAML parse failed at line 3 (while "
                               "parsing a flow sequence from line 1); the Orchestrator's plan stays")
    assert "[YAML_PARSE_ERROR]" in tagged and "from line 1" in tagged
    assert toast("note", "Nobody", "no agent 'Nobody' in this team") == (
        "not taken: note Nobody: no agent 'Nobody' in this team")


@pytest.mark.parametrize("size", SIZES)
async def test_the_form_sets_every_compared_methods_options_and_says_ctrl_r_below_the_fold(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    from textual.widgets import Input, Select, SelectionList, Static, Switch

    from core.runtime.config import Settings
    from tui.screens.compare_live import LiveCompareScreen
    from tui.screens.launch import LaunchScreen

    app = form_app(Settings(sessions_dir=str(tmp_path)))
    async with app.run_test(size=size) as pilot:
        form = app.screen
        assert isinstance(form, LaunchScreen)
        form.query_one("#demo", Switch).value = True
        form.query_one("#strategy", Select).value = "dmoa"
        await pilot.pause(0.2)
        form.query_one("#problem").focus()
        await pilot.pause(0.2)
        fold = form.query_one("#launch-fold", Static)
        start, scroll = form.query_one("#start"), form.query_one("#launch")
        below = not start.region.area or not scroll.region.contains_region(start.region)
        assert fold.display == below  # said exactly when Start is out of sight
        if size == (160, 48):  # DMoA's 11 options, three rows high each, push Start below the fold
            assert below and "ctrl+r starts" in str(fold.render())
            start.focus()  # scrolled into view: no need to say it
            await pilot.pause(0.3)
            assert not fold.display
        picker = form.query_one("#compare", SelectionList)
        picker.select("topoweaver")
        await pilot.pause(0.2)
        assert picker.get_option("topoweaver").prompt.startswith("✓")  # a mark, not colour alone
        assert not str(picker.get_option("single").prompt).startswith("✓")
        turns = form.query_one("#compare-options-topoweaver #opt-turns", Input)  # its own options, settable
        turns.value = "2"
        form.query_one("#opt-l_max", Input).value = "3"
        await pilot.press("ctrl+r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LiveCompareScreen)
        assert screen.plan.methods == ["dmoa", "topoweaver"]
        assert screen.plan.options["topoweaver"]["turns"] == "2" and screen.plan.options["dmoa"]["l_max"] == "3"

"""Steering from the TUI: the dialog sends an action at the barrier, the run takes it (the scripted server's
request log shows it), and the screens mark it: the agent's pane, the params bar, the graph's legend."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.routing.dytopo import route_from_similarity
from core.runtime import events as ev
from core.sessions.store import load_session
from tests.support.tui import live_app, paused_after_round_one, says, wait_for
from tui.screens.steer import SteerScreen, request_of
from tui.widgets.graph_render import GraphOptions, plain, render_graph, render_matrix
from tui.widgets.header import ParamsBar

pytestmark = pytest.mark.usefixtures("embedder")




@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_a_note_in_three_keys_reaches_only_the_focused_agent(tmp_path: Path, size: tuple[int, int]) -> None:
    with ScriptedServer(demo_script) as server:
        app = live_app(tmp_path, step=True, server=server)
        async with app.run_test(size=size) as pilot:
            screen = app.swarm_screen
            model = screen.model
            await paused_after_round_one(pilot, model)
            screen.query_one("#agent-Tester").focus_body()  # as tab or a click does
            await pilot.press("s")  # 1: the dialog opens on "note", to the focused agent, the text focused
            await wait_for(pilot, lambda: isinstance(app.screen, SteerScreen))
            await pilot.press(*"UI-NOTE check empty input")
            await pilot.press("enter")  # 2: sent
            await wait_for(pilot, lambda: any(e.accepted for _, e in model.steered))
            (_, steered), = model.steered
            assert (steered.action, steered.target) == ("note", "Tester")
            await pilot.press("a")
            await wait_for(pilot, lambda: model.finished is not None)
            with_note = [r for r in server.requests if says(r, "UI-NOTE")]
            assert with_note and {r.role for r in with_note} == {"Tester"}
            assert min(r.round for r in with_note) == 2
            # Marked where it applied: the Tester's pane in round 2, and counted in the params bar.
            assert model.steered_in(2, "Tester") and not model.steered_in(2, "Developer")
            screen.view_round = 2
            screen.refresh_all()
            await pilot.pause(0.1)
            pane = screen.query_one("#agent-Tester")
            assert any("UI-NOTE" in line for line in pane.steer_marks)
            bar = str(screen.query_one(ParamsBar).render()).replace("\xa0", " ")
            assert "steered 1" in bar or "✎1" in bar


async def test_a_refused_action_says_why_in_one_line_and_the_run_goes_on(tmp_path: Path) -> None:
    with ScriptedServer(demo_script) as server:
        app = live_app(tmp_path, step=True, server=server)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.swarm_screen
            model = screen.model
            await paused_after_round_one(pilot, model)
            screen.send_steering({"action": "pin", "src": "Tester", "dst": "Tester"})  # a pin to oneself
            await wait_for(pilot, lambda: bool(model.steered))
            (_, refused), = model.steered
            assert not refused.accepted and "Tester" in refused.reason
            screen.send_steering({"action": "note", "to": "Nobody", "text": "hi"})
            await wait_for(pilot, lambda: len(model.steered) == 2)
            assert "Nobody" in model.steered[1][1].reason
            screen.send_steering({"action": "note", "to": "Tester", "text": "   "})  # empty: refused before queuing
            await pilot.pause(0.1)
            assert len(model.steered) == 2 and model.steered_count == 0
            await pilot.press("a")
            await wait_for(pilot, lambda: model.finished is not None)
            assert model.finished.reason == "manager"


async def test_pin_and_cut_from_the_dialog_change_the_next_graph_and_are_drawn_apart(tmp_path: Path) -> None:
    with ScriptedServer(demo_script) as server:
        app = live_app(tmp_path, step=True, server=server)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.swarm_screen
            model = screen.model
            await paused_after_round_one(pilot, model)
            screen.send_steering(request_of("pin", {"src": "Designer", "dst": "Developer"}))
            screen.send_steering(request_of("cut", {"src": "Tester", "dst": "Developer", "rounds": "1"}))
            await wait_for(pilot, lambda: model.steered_count == 2)
            await pilot.press("N")
            await wait_for(pilot, lambda: model.rounds.get(2) is not None and model.rounds[2].routing is not None)
            routing = model.rounds[2].routing
            edges = {(e.src, e.dst): e.kind for e in routing.edges}
            assert edges.get(("Designer", "Developer")) == "pinned"
            assert ("Tester", "Developer") not in edges
            assert any((r.src, r.dst, r.reason) == ("Tester", "Developer", "cut by user") for r in routing.removed)
            text = plain(render_graph(routing, 100, GraphOptions()))
            assert "pinned by you: Designer→Developer" in text and "cut by you: Tester→Developer" in text
            matrix = plain(render_matrix(routing, 100, GraphOptions()))
            assert "+ pinned by you" in matrix and "x cut by you" in matrix
            await pilot.press("a")
            await wait_for(pilot, lambda: model.finished is not None)


def test_request_of_puts_every_field_where_the_control_file_has_it() -> None:
    from core.runtime.steering import SteerKind, parse_action

    agent = parse_action(request_of("agent", {"agent": "Tester", "model": "m2", "temperature": "0.5"}))
    assert agent.action is SteerKind.AGENT and agent.payload == {"model": "m2", "temperature": 0.5}
    edge = parse_action(request_of("edge_add", {"src": "A", "dst": "B", "edge_type": "debate"}))
    assert edge.payload == {"type": "debate"}
    pin = parse_action(request_of("pin", {"src": "A", "dst": "B", "rounds": "2"}))
    assert pin.rounds == 2


def test_a_graph_without_steering_has_no_steering_legend() -> None:
    names = ["A", "B", "C"]
    sim = [[1.0, 0.9, 0.1], [0.8, 1.0, 0.2], [0.1, 0.7, 1.0]]
    routing = route_from_similarity(names, sim, 0.3, 2)
    assert "by you" not in plain(render_graph(routing, 100, GraphOptions()))
    steered = route_from_similarity(names, sim, 0.3, 2, pinned=frozenset({("A", "C")}), cut=frozenset({("B", "A")}))
    text = plain(render_graph(steered, 100, GraphOptions()))
    assert "pinned by you: A→C" in text and "cut by you: B→A" in text
    assert ev.UserSteered  # the event type the markers come from


async def test_steer_a_fork_in_replay_then_compare_it_with_the_original(tmp_path: Path, embedder: object) -> None:
    """Fork and compare in one action: in replay at round 1, a note to the Tester; the fork runs live with
    it and, when it ends, the compare screen shows the original beside the fork."""
    import shutil

    from tests.support.tui_sessions import EXAMPLE, replay_app
    from tui.screens.compare_saved import SavedCompareScreen
    from tui.screens.replay import ReplayScreen
    from tui.screens.run import RunScreen

    source = tmp_path / "parent.json"
    shutil.copy(EXAMPLE, source)
    app = replay_app(source, tmp_path / "forks", demo=True, demo_chunk_delay=0.0)
    async with app.run_test(size=(160, 48)) as pilot:
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        replay.jump_to_round(1)
        await pilot.pause()
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SteerScreen))
        dialog = app.screen
        dialog.query_one("#steer-to").value = "Tester"
        dialog.query_one("#steer-text").value = "FORK-NOTE test the empty string"
        dialog.action_send()
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert run.fork is not None and run.fork.round == 1
        await wait_for(pilot, lambda: isinstance(app.screen, SavedCompareScreen), timeout=120)
        compare = app.screen
        labels = list(compare.runs)
        assert labels == ["original", "fork @ round 1"]
        assert compare.runs["fork @ round 1"].row.steered == 1 and compare.runs["original"].row.steered == 0
        await pilot.pause(0.3)
        assert "✎ 1 steered" in compare.columns["fork @ round 1"].render().plain
        taken = [e for _, e in run.model.steered if e.accepted]
        assert [(e.action, e.target) for e in taken] == [("note", "Tester")]
        assert run.model.steered_in(2, "Tester")  # the note took effect in the fork's first live round
        saved = load_session(run.recorder.path)
        assert any(e["type"] == "user_steered" for e in saved.events)


# --- every action of the dialog, at both sizes ------------------------------------------------------

# A value for each field the dialog can show (what a person would type or pick).
FIELD_VALUES = {"to": "Tester", "agent": "Tester", "src": "Designer", "dst": "Developer", "text": "a note",
                "long_text": "a longer text\non two lines", "when": "now", "rounds": "2", "model": "other-model",
                "temperature": "0.4", "edge_type": "debate"}


def steered_events(events: tuple[ev.Event, ...]) -> list[ev.Event]:
    """The pinned demo run as if, before round 2, the user had noted the Tester and pinned Designer→Developer
    and cut Tester→Developer: a UserSteered event each, and round 2's graph routed with them."""
    from core.routing.dytopo import RoutingResult

    out: list[ev.Event] = []
    for event in events:
        if isinstance(event, ev.RoundStarted) and event.round == 2:
            for action, target, payload in (
                ("note", "Tester", {"to": "Tester", "text": "check the empty string first", "when": "next"}),
                ("pin", "Designer→Developer", {"src": "Designer", "dst": "Developer"}),
                ("cut", "Tester→Developer", {"src": "Tester", "dst": "Developer"}),
            ):
                out.append(ev.UserSteered(round=1, phase="manager", action=action, target=target, payload=payload,
                                          ts=event.ts))
        if isinstance(event, ev.TopologyBuilt) and event.round == 2:
            recorded = RoutingResult.from_dict(event.routing)
            steered = route_from_similarity(recorded.names, recorded.similarity, recorded.tau, recorded.k_in,
                                            pinned=frozenset({("Designer", "Developer")}),
                                            cut=frozenset({("Tester", "Developer")}))
            event = dataclasses.replace(event, routing=steered.to_dict())
        out.append(event)
    return out


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_every_dytopo_action_shows_its_fields_and_sends_a_valid_line(size: tuple[int, int]) -> None:
    from core.methods.catalogue import steering_of
    from core.runtime.steering import parse_action
    from tests.support.tui import feed_app, pinned_demo_events, post_events
    from tui.screens.steer import _FIELDS, ACTION_LABELS

    app = feed_app()
    async with app.run_test(size=size) as pilot:
        await post_events(app, pilot, pinned_demo_events())
        screen = app.swarm_screen
        offered = screen.steer_context().actions
        assert set(offered) == {k.value for k in steering_of("dytopo")}
        assert list(offered) == [a for a in ACTION_LABELS if a in offered]  # the dialog's own order
        for action in offered:
            sent: list[dict[str, Any]] = []
            app.push_screen(SteerScreen(screen.steer_context(initial=action)), sent.append)
            await pilot.pause()
            dialog = app.screen
            assert isinstance(dialog, SteerScreen)
            shown = {w.id.removeprefix("steer-") for w in dialog.query(".steer-row > *, #steer-text, #steer-long_text")
                     if w.display and w.id}
            assert shown == set(_FIELDS[action]), action
            for name in _FIELDS[action]:
                widget = dialog.query_one(f"#steer-{name}")
                if name == "long_text":
                    widget.load_text(FIELD_VALUES[name])
                else:
                    widget.value = FIELD_VALUES[name]
            await pilot.pause()
            dialog.action_send()
            await pilot.pause()
            (request,) = sent
            steer = parse_action(request)  # what the dialog sends is a valid control-file line
            assert steer.action.value == action


def test_steer_dialog_snapshot(snap_compare: Any) -> None:
    from tests.support.tui import feed_app, pinned_demo_events, post_events

    events = pinned_demo_events()

    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)
        screen = pilot.app.swarm_screen
        screen.query_one("#agent-Tester").focus_body()
        await pilot.pause()
        pilot.app.push_screen(SteerScreen(screen.steer_context()))
        await pilot.pause()
        await pilot.press(*"check the empty string first")
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=(160, 48), run_before=run_before)


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
def test_steered_round_snapshot(snap_compare: Any, size: tuple[int, int]) -> None:
    """Round 2 of a steered run: the note in the Tester's pane, the pin and the cut in the graph's legend,
    the count in the params bar."""
    from tests.support.tui import feed_app, pinned_demo_events, post_events

    events = steered_events(pinned_demo_events())

    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)
        screen = pilot.app.swarm_screen
        screen.view_round = 2
        screen.refresh_all()
        pilot.app.clear_notifications()  # the toasts each action raised come and go with time: not the frame
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=size, run_before=run_before)


async def test_a_steered_session_replays_with_its_marks(tmp_path: Path) -> None:
    from core.sessions.model import session_from_events
    from core.sessions.store import save_session
    from tests.support.tui import pinned_demo_events
    from tests.support.tui_sessions import replay_app
    from tui.screens.replay import ReplayScreen
    from tui.widgets.graph_pane import GraphPane

    events = [e for e in steered_events(pinned_demo_events()) if not isinstance(e, ev.AgentDelta)]
    path = tmp_path / "steered.json"
    save_session(session_from_events(events), path)
    app = replay_app(path, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        replay.jump_to_round(2)
        await pilot.pause(0.2)
        assert [e.action for e in replay.model.steered_in(2)] == ["note", "pin", "cut"]
        assert any("check the empty string" in m for m in replay.query_one("#agent-Tester").steer_marks)
        assert not replay.query_one("#agent-Developer").steer_marks or all(
            "note" not in m for m in replay.query_one("#agent-Developer").steer_marks)
        graph = replay.query_one(GraphPane)
        text = "\n".join(line.plain for line in graph._lines)
        assert "pinned by you: Designer→Developer" in text and "cut by you: Tester→Developer" in text

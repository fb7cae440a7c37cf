"""Streaming panes: with many agents at once (issue 14: 16 agents) the bridge coalesces deltas without
reordering an agent's events, every pane gets all of its text, and no pane waits more than a few frames for
its turn; a pane keeps following its text when it shrinks, and stops when the reader scrolls up."""

from __future__ import annotations

import math
from typing import Any

from core.runtime import events as ev
from core.runtime.config import Settings
from tests.support.tui import app_for
from tui.bridge import EngineEvent, EventBridge
from tui.cli.launch import OpenRun
from tui.screens.swarm_view import STREAMS_PER_FRAME
from tui.widgets.agent_pane import AgentPane
from tui.widgets.stream_view import StreamView

NAMES = ["Manager", *(f"Expert{i:02d}" for i in range(16))]
PARAMS = {"tau": 0.3, "k_in": 3, "max_rounds": 2}


def quiet_app() -> Any:

    return app_for(OpenRun("many streams", Settings(sessions_dir="/nonexistent")), start_engine=False)


def start_events() -> list[ev.Event]:
    return [
        ev.RunStarted(run_id="many", problem="many streams", domain="general", manager=NAMES[0], workers=NAMES[1:],
                      roles={}, protocol="phased", strategy="dytopo", model="m", base_url="http://127.0.0.1:1/v1",
                      demo=True, params=PARAMS),
        ev.RoundStarted(round=1, params=PARAMS),
        *(ev.AgentStarted(round=1, agent=name, call="work") for name in NAMES),
    ]


def piece(name: str, i: int) -> str:
    return f"{name} line {i}: some words\n"


def pane_text(app: Any, name: str) -> str:
    return app.swarm_screen.query_one(f"#agent-{name}", AgentPane).query_one(StreamView).text


async def test_deltas_are_coalesced_per_agent_and_never_overtake_the_agents_other_events() -> None:
    app = quiet_app()
    async with app.run_test(size=(160, 48)) as pilot:
        posted: list[ev.Event] = []
        post = app.post_message

        def counting(message: Any) -> bool:
            if isinstance(message, EngineEvent):
                posted.append(message.event)
            return post(message)

        app.post_message = counting  # type: ignore[method-assign]
        bridge = EventBridge(app)
        for event in start_events():
            bridge(event)
        deltas = 0
        for i in range(40):
            for name in NAMES[1:4]:
                bridge(ev.AgentDelta(round=1, agent=name, call="work", text=piece(name, i)))
                deltas += 1
        bridge(ev.AgentFinished(round=1, agent=NAMES[1], call="work", status="done"))
        await pilot.pause(0.2)

        sent = [e for e in posted if isinstance(e, ev.AgentDelta)]
        assert len(sent) < deltas  # one message per agent, not per piece
        # Everything each agent streamed arrived, in order, and before its AgentFinished.
        for name in NAMES[1:4]:
            assert "".join(e.text for e in sent if e.agent == name) == "".join(piece(name, i) for i in range(40))
        finished_at = next(i for i, e in enumerate(posted) if isinstance(e, ev.AgentFinished))
        assert all(i < finished_at for i, e in enumerate(posted) if isinstance(e, ev.AgentDelta))


async def test_sixteen_streaming_panes_each_get_a_turn_within_a_few_frames_and_all_their_text() -> None:
    app = quiet_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.swarm_screen
        for event in start_events():
            screen.apply_event(event)
        await pilot.pause()
        for i in range(30):
            for name in NAMES:
                screen.apply_event(ev.AgentDelta(round=1, agent=name, call="work", text=piece(name, i)))
        expected = {name: "".join(piece(name, i) for i in range(30)) for name in NAMES}

        # Frames driven by hand; one frame redraws a bounded number of panes, so it stays short.
        screen._sync_panes()
        assert sum(pane_text(app, name) == expected[name] for name in NAMES) == STREAMS_PER_FRAME
        for _ in range(math.ceil(len(NAMES) / STREAMS_PER_FRAME) - 1):
            screen._sync_panes()
        assert {name: pane_text(app, name) for name in NAMES} == expected  # nobody left waiting


async def test_a_stream_keeps_following_its_end_when_the_view_shrinks_and_stops_when_the_reader_scrolls_up() -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    class Pane(App[None]):
        CSS = "StreamView { height: 1fr; } #qk { height: 3; display: none; } #qk.-shown { display: block; }"

        def compose(self) -> ComposeResult:
            yield Static("Q: …\nK: …", id="qk")
            yield StreamView()

    app = Pane()
    async with app.run_test(size=(40, 12)) as pilot:
        view = app.query_one(StreamView)
        view.append("".join(f"line {i}\n" for i in range(30)))
        await pilot.pause()
        app.query_one("#qk").add_class("-shown")  # the agent's descriptors appear above its text
        await pilot.pause()
        for i in range(30, 40):
            view.append(f"line {i}\n")
            await pilot.pause()
        assert view.scroll_y == view.max_scroll_y > 0  # the newest line is in view
        view.scroll_to(y=3, animate=False, immediate=True)  # the reader goes back up
        await pilot.pause()
        view.append("line 40\n")
        await pilot.pause()
        assert view.scroll_y == 3  # left where the reader is

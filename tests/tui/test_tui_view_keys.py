"""Pilot tests of the keys that change what is shown, on a run screen fed the pinned demo events
through the same bridge the engine uses."""

from __future__ import annotations

import json

import pytest

from core.runtime import events as ev
from tests.support.tui import feed_app, mid_round_cut, pinned_demo_events, post_events
from tui.bindings import RUN_BINDINGS
from tui.streamtext import display_text
from tui.widgets.agent_pane import AgentPane
from tui.widgets.graph_pane import GraphPane
from tui.widgets.header import RunHeader
from tui.widgets.manager_pane import ManagerPane
from tui.widgets.results_pane import ResultsPane


@pytest.fixture(scope="module")
def events(embedder: object) -> tuple[ev.Event, ...]:
    return pinned_demo_events()


def graph_text(app) -> str:  # type: ignore[no-untyped-def]
    return app.screen.query_one(GraphPane).text


async def test_stream_reaches_panes_and_run_finishes(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        cut = mid_round_cut(events)
        await post_events(app, pilot, events[:cut])
        screen = app.swarm_screen
        researcher = screen.query_one("#agent-Researcher", AgentPane)
        streamed = "".join(e.text for e in events[:cut] if isinstance(e, ev.AgentDelta)
                           and e.agent == "Researcher" and e.round == 2 and e.call == "work")
        assert streamed.startswith('{"public": "')
        assert researcher.copy_text() == display_text(streamed) == json.loads(streamed + '"}')["public"]
        assert "working" in str(researcher.border_title)
        await post_events(app, pilot, events[cut:])
        assert "finished: manager" in str(screen.query_one(RunHeader).render())
        final = next(e for e in events if isinstance(e, ev.RunFinished))
        assert screen.query_one(ResultsPane).copy_text() == final.final_answer


async def test_browse_rounds_shows_earlier_graph_goal_and_outputs(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await post_events(app, pilot, events)
        screen = app.swarm_screen
        assert "graph · round 3" in str(screen.query_one(GraphPane).border_title)
        await pilot.press("comma")
        assert screen.view_round == 2
        r2 = next(e for e in events if isinstance(e, ev.TopologyBuilt) and e.round == 2)
        assert "graph · round 2" in str(screen.query_one(GraphPane).border_title)
        for edge in r2.routing["edges"]:
            assert f"{edge['src']} ─{edge['score']:.2f}─▶ {edge['dst']}" in graph_text(app)
        tester_r2 = next(e for e in events if isinstance(e, ev.AgentFinished) and e.round == 2
                         and e.agent == "Tester" and e.call == "work")
        assert screen.query_one("#agent-Tester", AgentPane).copy_text() == tester_r2.public
        await pilot.press("comma")
        assert screen.view_round == 1 and "broadcast" in graph_text(app)
        await pilot.press("comma")  # no round 0
        assert screen.view_round == 1
        await pilot.press("full_stop", "full_stop")
        assert screen.view_round is None and "round 3" in str(screen.query_one(GraphPane).border_title)


async def test_matrix_and_removed_edges_toggles(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await post_events(app, pilot, events)
        assert "q \\ k" not in graph_text(app)
        await pilot.press("g")
        assert "q \\ k" in graph_text(app) and "similarity" in str(app.screen.query_one(GraphPane).border_title)
        await pilot.press("g", "d")
        r3 = next(e for e in reversed(events) if isinstance(e, ev.TopologyBuilt))
        for removed in r3.routing["removed"]:
            assert f"┄{removed['score']:.2f}┄▷ {removed['dst']}  ({removed['reason']})" in graph_text(app)
        await pilot.press("d")
        assert "removed edge(s) hidden" in graph_text(app)


async def test_problem_maximise_and_copy(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await post_events(app, pilot, events)
        screen = app.swarm_screen
        header = screen.query_one(RunHeader)
        assert "def make_palindrome" not in str(header.render())
        await pilot.press("i")
        assert "def make_palindrome" in str(header.render())
        screen.query_one(ManagerPane).focus()
        await pilot.press("m")
        assert screen.maximized is screen.query_one(ManagerPane)
        await pilot.press("c")
        assert app.clipboard == screen.query_one(ManagerPane).copy_text()
        assert "R3 goal" in app.clipboard
        await pilot.press("m")
        assert screen.maximized is None
        screen.query_one(ResultsPane).focus()
        await pilot.press("c")
        assert app.clipboard == next(e for e in events if isinstance(e, ev.RunFinished)).final_answer


async def test_help_lists_every_key_and_keymap_rebinds(events: tuple[ev.Event, ...]) -> None:
    app = feed_app(keymap={"tau_up": "u", "toggle_matrix": "v"})
    async with app.run_test(size=(120, 40)) as pilot:
        await post_events(app, pilot, events[:5])
        await pilot.press("question_mark")
        from tui.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        rows = app.screen.rows
        ids = {row[2] for row in rows}
        assert {b.id for b in RUN_BINDINGS} <= ids
        keys = {row[2]: row[0] for row in rows}
        assert keys["tau_up"] == "u" and keys["toggle_matrix"] == "v"
        assert all(row[3] for row in rows if row[2] in {b.id for b in RUN_BINDINGS})
        await pilot.press("escape")
        await post_events(app, pilot, events[5:])
        await pilot.press("v")
        assert app.swarm_screen.query_one(GraphPane).matrix


async def test_notice_becomes_a_notification(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await post_events(app, pilot, events[:3])
        notice = ev.Notice(round=1, severity="warning", message="Tester: reply unparsed (no JSON)", agent="Tester")
        await post_events(app, pilot, [notice])
        assert any("reply unparsed" in n.message for n in app._notifications)


async def test_small_terminal_collapses_to_one_scrollable_column(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await post_events(app, pilot, events)
        screen = app.swarm_screen
        assert screen.has_class("-narrow")
        panes = list(screen.query(AgentPane))
        assert len({p.region.x for p in panes}) == 1  # one column
        assert all(p.region.width >= 70 and p.region.height >= 8 for p in panes)  # not clipped to nothing
        body = screen.query_one("#body")
        assert body.max_scroll_y > 0  # the rest is reachable by scrolling
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not screen.has_class("-narrow")


async def test_footer_rewraps_when_the_terminal_shrinks(events: tuple[ev.Event, ...]) -> None:
    """Every key stays on screen after a resize (it used to keep the old row width and cut keys off);
    below 30 rows the footer keeps to one row (help, quit and the palette always in it)."""
    from textual.widgets._footer import FooterKey

    from tui.widgets.footer import WrapFooter

    app = feed_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await post_events(app, pilot, events[:3])
        for width, height in ((80, 24), (120, 40), (200, 60), (80, 24), (80, 40)):
            await pilot.resize_terminal(width, height)
            await pilot.pause()
            await pilot.pause()
            footer = app.screen.query_one(WrapFooter)
            keys = list(footer.query(FooterKey))
            shown = [k for k in keys if footer.region.contains_region(k.region) and k.region.width > 0]
            if height < 30:
                assert footer.region.height == 1 and len(shown) == len(keys) >= 8, (width, len(shown))
                assert footer.hidden_keys == len([b for b in RUN_BINDINGS if b.show]) + 1 - len(keys)
                assert {"help", "request_quit"} <= {k.action for k in shown}
                assert any(k.has_class("-command-palette") for k in shown)
            else:
                assert len(shown) == len(keys) == len([b for b in RUN_BINDINGS if b.show]) + 1, (width, len(shown))
                assert footer.region.height <= (2 if width >= 120 else 3)  # + the palette key; 2 rows at 120


async def test_graph_and_sparklines_before_the_first_round_and_after_a_cancel(events: tuple[ev.Event, ...]) -> None:
    """No stale or misleading drawing: a run paused before round 1 says so, a round that ended before
    routing says it will get no graph, and rounds with no edges or tokens draw no bars."""
    from tui.widgets.results_pane import Bars

    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        started = next(e for e in events if isinstance(e, ev.RunStarted))
        await post_events(app, pilot, [started, ev.ControlChanged(ts=started.ts, round=0, status="paused",
                                                                  mode="step")])
        assert "waiting for round 1 (step mode" in graph_text(app)
        round2 = next(i for i, e in enumerate(events) if isinstance(e, ev.RoundStarted) and e.round == 2)
        await post_events(app, pilot, events[1 : round2 + 1])
        assert "waiting for descriptors" in graph_text(app)
        cancelled = ev.RunFinished(ts=events[round2].ts, reason="cancelled", detail="cancelled by the user",
                                   final_answer="", answer_source="", rounds=1, prompt_tokens=0, completion_tokens=0)
        await post_events(app, pilot, [cancelled])
        assert "round 2: no graph, the run ended before routing" in graph_text(app)
        assert "waiting for descriptors" not in graph_text(app)
        assert app.screen.query_one("#edges-spark", Bars).data == [12, 0]  # round 2 ended with none

    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        round1 = next(i for i, e in enumerate(events) if isinstance(e, ev.RoundStarted))
        await post_events(app, pilot, events[: round1 + 1])  # round 1 started: no edges, no tokens yet
        # The round in progress has no value yet: not drawn (never as 0, never as a full bar).
        assert "edges/round  -" in str(app.screen.query_one("#edges-label").render())
        assert not app.screen.query_one("#edges-spark", Bars).data
        assert not app.screen.query_one("#tokens-spark", Bars).data


async def test_header_keeps_the_state_tokens_and_time_in_view_at_80x24(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await post_events(app, pilot, events)
        header = app.screen.query_one(RunHeader)
        status = str(header.render()).splitlines()[1]
        assert len(status) <= header.content_region.width  # the compact line fits whole
        assert status.startswith("finished: manager") and f"{app.screen.model.tokens:,} tok · 00:" in status
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        await pilot.pause()
        status = str(header.render()).splitlines()[1]
        assert "code · DEMO (scripted server)" in status and "finished: manager — " in status  # all of it

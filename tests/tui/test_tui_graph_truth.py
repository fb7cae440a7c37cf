"""The graph pane shows what actually happened (issue 15, items 1–5): a preview never outlives its
round, every pane recolours with the theme, previews and what-ifs mark added and dropped edges,
nodes are numbered in the order agents run (no tiers in single-pass runs), an earlier round shows
the tau/k_in it ran with, and the edges sparkline scales from 0 without drawing a round in progress."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from textual.color import Color

from core.routing.dytopo import route_from_similarity
from core.runtime import events as ev
from tests.support.render import drawn_edges
from tests.support.tui import app_for, feed_app, live_app, pinned_demo_events, post_events, wait_for
from tui.cli.launch import OpenReplay
from tui.widgets.agent_pane import AgentPane
from tui.widgets.graph_pane import GraphPane
from tui.widgets.header import ParamsBar
from tui.widgets.results_pane import Bars, bar_cells

pytestmark = pytest.mark.usefixtures("embedder")


@pytest.fixture(scope="module")
def events(embedder: object) -> tuple[ev.Event, ...]:
    return pinned_demo_events()


def kept(routing) -> set[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return {(e.src, e.dst, f"{e.score:.2f}") for e in routing.edges}


def params_text(screen) -> str:  # type: ignore[no-untyped-def]
    return str(screen.query_one(ParamsBar).render()).replace("\xa0", " ")


# --- 1 and 3: the preview ends when the round's work starts; it marks what it adds and drops ----------------------
async def test_preview_marks_changes_and_never_outlives_its_round(tmp_path: Path) -> None:
    """The issue's repro: --step, to round 2's routing pause, K K, n. The work runs on the round's own
    graph, so the pane must show that graph from then on, also after browsing away and back."""
    app = live_app(tmp_path, step=True)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.swarm_screen
        model = screen.model
        graph = screen.query_one(GraphPane)
        await wait_for(pilot, lambda: model.control_status == "paused")
        await pilot.press("N")  # round 1, then wait before round 2
        await wait_for(pilot, lambda: model.current == 1 and model.rounds[1].decision is not None
                       and model.control_status == "paused")
        await pilot.press("n")  # round 2's phase A
        await wait_for(pilot, lambda: model.phase == ev.Phase.DESCRIPTORS and model.control_status == "paused")
        await pilot.press("n")  # phase B: the graph, then the pause before the work
        await wait_for(pilot, lambda: model.rounds[2].routing is not None and model.control_status == "paused")
        own = model.rounds[2].routing
        await pilot.press("K", "K")  # k_in 3 -> 1
        await wait_for(pilot, lambda: "PREVIEW" in graph.text)
        preview = route_from_similarity(own.names, own.similarity, own.tau, 1)
        assert drawn_edges(graph.text) == kept(preview)
        # Item 3: which edges go, struck with the reason, and which are new (none: k_in only removes).
        dropped = kept(own) - kept(preview)
        assert dropped and f"−{len(dropped)} dropped" in graph.text
        for src, dst, score in dropped:
            assert re.search(rf"− +{src} ┄{score}┄▷ {dst}  \((k_in|cycle)\)", graph.text), graph.text
        assert not re.search(r"^\+ ", graph.text, re.M)
        assert "r re-routes now" in graph.text

        await pilot.press("n")  # the work phase starts on the round's own graph
        await wait_for(pilot, lambda: model.phase == ev.Phase.WORK)
        await pilot.pause(0.1)
        assert "PREVIEW" not in graph.text and "r re-routes now" not in graph.text
        assert drawn_edges(graph.text) == kept(own)
        assert "the next routing uses tau 0.30 · k_in 1" in graph.text  # what the K K will do
        await pilot.press("comma", "full_stop")  # browse away and back
        assert "PREVIEW" not in graph.text and drawn_edges(graph.text) == kept(own)
        await pilot.press("N")  # to the end of round 2
        await wait_for(pilot, lambda: model.rounds[2].finished and model.control_status == "paused")
        await pilot.press("comma", "full_stop")
        assert "PREVIEW" not in graph.text and drawn_edges(graph.text) == kept(own)
        await pilot.press("x")
        await wait_for(pilot, lambda: model.finished is not None)


async def test_whatif_in_replay_marks_added_and_dropped_edges(tmp_path: Path, events: tuple[ev.Event, ...]) -> None:
    from core.sessions.model import session_from_events
    from core.sessions.store import load_session, save_session
    from core.sessions.whatif import reroute_session

    path = tmp_path / "demo.json"
    save_session(session_from_events([e for e in events if not isinstance(e, ev.AgentDelta)]), path)
    session = load_session(path)
    app = app_for(OpenReplay(session, path))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await pilot.press("N", "N", "N")  # to round 3
        graph = screen.query_one(GraphPane)
        await pilot.press("T", "T")  # tau 0.20: more edges
        diff = next(d for d in reroute_session(session, 0.2, 3) if d.round == 3)
        assert diff.added, "the demo's round 3 gains an edge at tau 0.20"
        assert "HYPOTHETICAL" in graph.text
        assert f"+{len(diff.added)} new, −{len(diff.removed)} dropped" in graph.text
        for e in diff.added:
            assert re.search(rf"^\+ +{e.src} ─{e.score:.2f}─▶ {e.dst}", graph.text, re.M), graph.text
        for e in diff.removed:
            assert re.search(rf"− +{e.src} ┄{e.score:.2f}┄▷ {e.dst}  \(", graph.text), graph.text
        await pilot.press("t", "t", "t", "t", "t", "t", "t", "t")  # tau 0.60: edges go
        diff = next(d for d in reroute_session(session, 0.6, 3) if d.round == 3)
        assert diff.removed
        for e in diff.removed:
            assert re.search(rf"− +{e.src} ┄{e.score:.2f}┄▷ {e.dst}  \((below tau 0.60|k_in|cycle)\)", graph.text)


# --- 2: a theme switch recolours the graph at once --------------------------------------------------------------------
async def test_theme_switch_recolours_the_graph_at_once(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await post_events(app, pilot, events)
        graph = app.screen.query_one(GraphPane)

        def node_colours() -> set[str]:
            tier_row = next(line for line in graph._lines if line.plain.startswith("T0"))
            return {str(span.style) for span in tier_row.spans if "Developer" in tier_row.plain[span.start:span.end]}

        for theme in ("textual-dark", "swarm-paper"):
            app.theme = theme
            await pilot.pause()
            await pilot.pause()
            fg = Color.parse(app.theme_variables["foreground"]).hex6
            assert any(fg in style for style in node_colours()), (theme, node_colours())


# --- 4: numbering follows the run; no tiers in single-pass ---------------------------------------------------------
async def test_nodes_are_numbered_in_the_order_they_run(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await post_events(app, pilot, events)
        text = app.screen.query_one(GraphPane).text
        routing = app.screen.model.rounds[app.screen.model.current].routing
        numbered = re.findall(r"\[(\d+) (\w+)\]", text)
        assert [int(n) for n, _ in numbered] == list(range(1, len(routing.names) + 1))
        assert [name for _, name in numbered] == [name for tier in routing.tiers for name in tier]
        assert "[n X] runs n-th" in text  # the legend of the symbols


async def test_single_pass_run_draws_no_tiers(embedder: object) -> None:
    events = pinned_demo_events("code", "single-pass")
    assert next(e for e in events if isinstance(e, ev.RunStarted)).protocol == "single-pass"
    app = feed_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await post_events(app, pilot, events)
        screen = app.screen
        assert any(rv.routing is not None for rv in screen.model.rounds.values())
        for number in sorted(screen.model.rounds, reverse=True):
            text = screen.query_one(GraphPane).text
            if screen.model.rounds[number].routing is not None:
                assert not re.search(r"^T\d", text, re.M), text
                assert "all work at once" in text and "[1 " not in text
            for pane in screen.query(AgentPane):
                assert "tier" not in str(pane.border_subtitle)
            await pilot.press("comma")


# --- 5: an earlier round's own tau/k_in; the sparkline from 0, no round in progress as 0 -----------------------------
async def test_browsing_shows_the_tau_and_k_in_that_round_used(tmp_path: Path) -> None:
    app = live_app(tmp_path, step=True)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.swarm_screen
        model = screen.model
        await wait_for(pilot, lambda: model.control_status == "paused")
        await pilot.press("N")
        await wait_for(pilot, lambda: model.current == 1 and model.rounds[1].decision is not None
                       and model.control_status == "paused")
        await pilot.press("n", "n")
        await wait_for(pilot, lambda: model.rounds.get(2) is not None and model.rounds[2].routing is not None
                       and model.control_status == "paused")
        await pilot.press("t", "t", "t", "r")  # round 2 re-routed at tau 0.45
        await wait_for(pilot, lambda: model.rounds[2].rerouted)
        await pilot.press("t")  # today: 0.50 (for the next routing)
        await wait_for(pilot, lambda: model.params["tau"] == pytest.approx(0.5))
        assert "tau 0.50" in params_text(screen)
        await pilot.press("comma")  # round 1: it started with 0.30
        assert screen.view_round == 1 and "tau 0.30  k_in 3" in params_text(screen)
        await pilot.press("full_stop")  # round 2 is the live one: today's values
        await pilot.press("N")
        await wait_for(pilot, lambda: model.current == 2 and model.rounds[2].finished
                       and model.control_status == "paused")
        await pilot.press("n")  # round 3 starts with 0.50
        await wait_for(pilot, lambda: model.current == 3)
        await pilot.press("comma")
        assert screen.view_round == 2 and "tau 0.45  k_in 3" in params_text(screen)  # what it re-routed with
        await pilot.press("x")
        await wait_for(pilot, lambda: model.finished is not None)


async def test_edges_sparkline_scales_from_zero_and_skips_the_round_in_progress(events: tuple[ev.Event, ...]) -> None:
    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        round2 = next(i for i, e in enumerate(events) if isinstance(e, ev.RoundStarted) and e.round == 2)
        await post_events(app, pilot, events[: round2 + 1])
        bars = app.screen.query_one("#edges-spark", Bars)
        assert bars.data == [12]  # round 2 has no graph yet: not a 0
        topology = next(i for i, e in enumerate(events) if isinstance(e, ev.TopologyBuilt) and e.round == 2)
        await post_events(app, pilot, events[round2 + 1 : topology + 1])
        count = len(app.screen.model.rounds[2].routing.edges)
        assert bars.data == [12, count]
        cells = bar_cells([12, count], 20)
        assert cells[-1][0] != "▁" and not cells[-1][1]  # a third of a bar, not nothing
        drawn = str(bars.render())
        assert drawn.startswith("█" * 6) and "▁" not in drawn  # 12: full bars; the other: not the floor


def test_bars_scale_from_zero() -> None:
    assert [c for c, _ in bar_cells([12, 4, 0], 3)] == ["█", "▃", "▁"]
    assert bar_cells([0, 0], 4) == [("▁", True)] * 4
    assert bar_cells([], 10) == []


def test_model_drops_a_preview_once_the_work_starts(events: tuple[ev.Event, ...]) -> None:
    """The same rule in the pure model, event by event: PhaseStarted(work) ends a preview, and a
    ParamsChanged after it does not bring one back."""
    from tui.model import RunModel

    topology = next(i for i, e in enumerate(events) if isinstance(e, ev.TopologyBuilt) and e.round == 2)
    model = RunModel()
    for e in events[: topology + 1]:
        model.apply(e)
    changed = ev.ParamsChanged(round=2, params={**model.params, "k_in": 1}, changed=["k_in"])
    model.apply(changed)
    assert model.preview is not None
    model.apply(ev.PhaseStarted(round=2, phase=ev.Phase.WORK, detail=""))
    assert model.preview is None
    model.apply(dataclasses.replace(changed, params={**model.params, "k_in": 2}))
    assert model.preview is None and model.rounds[2].work_started


async def test_the_graph_pane_redraws_to_its_new_width_when_the_layout_narrows_it(events: tuple[ev.Event, ...]) -> None:
    """The run finishing gives the graph pane less room: what it shows is drawn again to fit, not wrapped."""
    app = feed_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await post_events(app, pilot, [e for e in events if not isinstance(e, ev.RunFinished)])
        graph = app.screen.query_one(GraphPane)
        await pilot.press("g")
        await pilot.pause()
        running_width = graph.scrollable_content_region.width
        await post_events(app, pilot, [e for e in events if isinstance(e, ev.RunFinished)])
        await pilot.pause(0.2)
        width = graph.scrollable_content_region.width
        assert width < running_width  # the finished layout narrows it
        names = ("q \\ k", *(e.agent for e in events if isinstance(e, ev.AgentStarted)))
        rows = [line for line in graph.text.splitlines() if line.startswith(names)]
        assert rows and max(len(line) for line in rows) <= width  # the matrix's rows, each on one line

"""SVG snapshots at 120x40 and 80x24 (pytest-textual-snapshot), and once in the light theme. Every run
screen is fed the pinned demo events (fixed timestamps, latencies and URL; a frozen clock), so the
frames are the same on every run. Regenerate with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and look at the SVGs."""

from __future__ import annotations

from typing import Any

import pytest

from core.runtime import events as ev
from core.runtime.config import Settings
from tests.support.tui import feed_app, form_app, mid_round_events, pinned_demo_events, post_events

SIZE = (120, 40)
SMALL = (80, 24)


@pytest.fixture(scope="module")
def events(embedder: object) -> tuple[ev.Event, ...]:
    return pinned_demo_events()


async def steady_cursor(pilot: Any) -> None:
    """The problem box's cursor shown steadily: a blinking one made the frame depend on the moment taken."""
    pilot.app.screen.query_one("#problem").cursor_blink = False
    await pilot.pause()


def test_launch_form(snap_compare: Any) -> None:
    app = form_app(Settings(sessions_dir="/nonexistent"), demo=True, start_engine=True)
    assert snap_compare(app, terminal_size=SIZE, run_before=steady_cursor)


def test_run_mid_round(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, mid_round_events(events))

    assert snap_compare(feed_app(), terminal_size=SIZE, run_before=run_before)


def test_run_finished(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)

    assert snap_compare(feed_app(), terminal_size=SIZE, run_before=run_before)


def test_matrix_view(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)
        await pilot.press("g")
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events[:3])
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=SIZE, run_before=run_before)


def test_session_picker(snap_compare: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The picker over a sessions folder holding one copy of the code example (dates pinned: the
    example's own timestamps, shown in UTC; the folder is the relative default "sessions")."""
    import shutil
    import time

    from sessions import EXAMPLES_DIR
    from tests.support.tui import wait_for

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sessions").mkdir()
    shutil.copy(EXAMPLES_DIR / "example-code.json", tmp_path / "sessions" / "2026-11-21_0751_code_palindrome.json")
    app = form_app(Settings(sessions_dir="sessions"))

    async def run_before(pilot: Any) -> None:
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "listing", None) is not None)
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
    finally:
        monkeypatch.undo()
        time.tzset()


# --- 80x24, the light theme, and the views issue 15 added ------------------------------------------------------------
def test_launch_form_80x24(snap_compare: Any) -> None:
    app = form_app(Settings(sessions_dir="/nonexistent"), demo=True, start_engine=True)
    assert snap_compare(app, terminal_size=SMALL, run_before=steady_cursor)


def test_run_finished_80x24(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)

    assert snap_compare(feed_app(), terminal_size=SMALL, run_before=run_before)


def test_run_mid_round_80x24(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, mid_round_events(events))

    assert snap_compare(feed_app(), terminal_size=SMALL, run_before=run_before)


def test_run_finished_light_theme(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    """swarm-paper, switched to from a dark theme after the run drew (every pane recolours)."""
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)
        pilot.app.theme = "textual-dark"
        await pilot.pause()
        pilot.app.theme = "swarm-paper"
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=SIZE, run_before=run_before)


def test_preview_marks_dropped_edges(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    """Round 2 paused after its routing, k_in lowered to 1: the PREVIEW strikes the edges it drops."""
    topology = next(i for i, e in enumerate(events) if isinstance(e, ev.TopologyBuilt) and e.round == 2)

    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events[: topology + 1])
        params = {**pilot.app.swarm_screen.model.params, "k_in": 1}
        await post_events(pilot.app, pilot, [ev.ParamsChanged(ts=events[topology].ts, round=2, params=params,
                                                              changed=["k_in"])])

    assert snap_compare(feed_app(), terminal_size=SIZE, run_before=run_before)


def test_search(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    """A search open over the finished run, begun in the Tester's pane: matches marked, the second current."""
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)
        pilot.app.screen.query_one("#agent-Tester").focus_body()
        await pilot.press("slash", *"palindrome", "down")
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=SIZE, run_before=run_before)


def test_inbox(snap_compare: Any, events: tuple[ev.Event, ...]) -> None:
    async def run_before(pilot: Any) -> None:
        await post_events(pilot.app, pilot, events)
        pilot.app.screen.query_one("#agent-Designer").focus_body()
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(feed_app(), terminal_size=SIZE, run_before=run_before)

"""SVG snapshots at 120x40 (pytest-textual-snapshot). Every run screen is fed the pinned demo events
(fixed timestamps, latencies and URL; a frozen clock), so the frames are the same on every run.
Regenerate with ``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the SVGs."""

from __future__ import annotations

from typing import Any

import pytest

from core import events as ev
from core.config import Settings
from tests.test_tui_support import feed_app, mid_round_events, pinned_demo_events, post_events
from tui.app import SwarmApp

SIZE = (120, 40)


@pytest.fixture(scope="module")
def events(embedder: object) -> tuple[ev.Event, ...]:
    return pinned_demo_events()


def test_launch_form(snap_compare: Any) -> None:
    app = SwarmApp(Settings(sessions_dir="/nonexistent"), demo=True, state_path=None, load_embedder=False)
    assert snap_compare(app, terminal_size=SIZE)


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

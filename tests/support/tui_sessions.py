"""Apps opened on the session picker or a replay, and the picker's rows as a user reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from core.runtime.config import Settings
from sessions import EXAMPLES_DIR
from tests.support.tui import form_app, replay_of, wait_for
from tui.app import SwarmApp
from tui.commands import SwarmCommands
from tui.screens.sessions import SessionPickerScreen

EXAMPLE = EXAMPLES_DIR / "example-code.json"


def launch_app(sessions_dir: Path, **injected: Any) -> SwarmApp:
    """The launch form, saving to ``sessions_dir``."""
    app: SwarmApp = form_app(Settings(sessions_dir=str(sessions_dir)), **injected)
    return app


def replay_app(path: Path, sessions_dir: Path, **kwargs: Any) -> SwarmApp:
    """The replay of ``path``, its forks saved to ``sessions_dir`` (``settings``: more of the app's settings;
    ``demo``, ``demo_chunk_delay``: where its forks run)."""
    settings = Settings(sessions_dir=str(sessions_dir), **kwargs.pop("settings", {}))
    app: SwarmApp = replay_of(path, settings, **kwargs)
    return app


async def picker_rows(app: SwarmApp, pilot: Any) -> list[tuple[str, ...]]:
    await wait_for(pilot, lambda: isinstance(app.screen, SessionPickerScreen) and app.screen.listing is not None)
    await pilot.pause()
    table = app.screen.query_one(DataTable)
    return [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]


async def run_palette_command(app: SwarmApp, title: str) -> None:
    provider = SwarmCommands(app.screen)
    hits = [hit async for hit in provider.search(title)]
    hit = next(h for h in hits if str(h.text or h.match_display) == title)
    hit.command()

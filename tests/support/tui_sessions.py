"""Apps opened on the session picker or a replay, and the picker's rows as a user reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from core.runtime.config import Settings
from core.sessions.store import load_session
from sessions import EXAMPLES_DIR
from tests.support.tui import wait_for
from tui.app import SwarmApp
from tui.commands import SwarmCommands
from tui.screens.sessions import SessionPickerScreen

EXAMPLE = EXAMPLES_DIR / "example-code.json"


def launch_app(sessions_dir: Path, **kwargs: Any) -> SwarmApp:
    return SwarmApp(Settings(sessions_dir=str(sessions_dir)), state_path=None, load_embedder=False,
                    start_engine=False, **kwargs)


def replay_app(path: Path, sessions_dir: Path, **kwargs: Any) -> SwarmApp:
    session = load_session(path)
    settings = Settings(sessions_dir=str(sessions_dir), **kwargs.pop("settings", {}))
    return SwarmApp(settings, replay=session.replay_events(), replay_source=str(path), replay_session=session,
                    state_path=None, load_embedder=False, **kwargs)


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

"""The app for ``swarm-tui attach``: the follow screen on its own (core.sessions.eventlog explains the
log it reads). Kept out of tui/app.py: the SwarmApp is reused as it is, with only the first screen
changed."""

from __future__ import annotations

from pathlib import Path

from textual import events

from core.runtime.config import Settings

from .app import SwarmApp
from .screens.follow import FollowScreen


class FollowApp(SwarmApp):
    def __init__(self, settings: Settings | None, log_path: Path, *, session_path: Path | None = None,
                 **kwargs: object) -> None:
        kwargs.setdefault("load_embedder", False)
        super().__init__(settings, **kwargs)  # type: ignore[arg-type]
        self.log_path = Path(log_path)
        self.session_path = session_path

    def on_mount(self, event: events.Mount) -> None:
        # Instead of SwarmApp.on_mount (which opens the launch form): themes and keys, then the follower.
        event.prevent_default()
        self._register_themes()
        if self.settings.keymap:
            self.set_keymap(dict(self.settings.keymap))
        self.swarm_screen = FollowScreen(self.log_path, session_path=self.session_path)
        self.push_screen(self.swarm_screen)


def run_follow(log_path: Path, *, session_path: Path | None = None, settings: Settings | None = None) -> int:
    app = FollowApp(settings, log_path, session_path=session_path)
    return int(app.run() or 0)

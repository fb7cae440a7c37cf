"""A replay playing by itself (space): one recorded event every BASE_STEP_S / speed seconds, paused at the end."""

from __future__ import annotations

from typing import Any

from textual.timer import Timer

BASE_STEP_S = 0.4  # one event every 0.4 s at speed 1
MAX_SPEED, MIN_SPEED = 64.0, 0.25


class Playback:
    """Whether the replay plays, how fast, and the timer that steps it (``screen``: a ReplayScreen: its cursor,
    events, seek and a redraw)."""

    def __init__(self, screen: Any) -> None:
        self.screen = screen
        self.speed = 1.0
        self.playing = False
        self._timer: Timer | None = None

    def toggle(self) -> None:
        """Play (from the start again when at the end) or pause."""
        self.playing = not self.playing
        if self.playing and self.screen.cursor >= len(self.screen.events):
            self.screen.seek(0)
        self._schedule()

    def scale(self, factor: float) -> None:
        self.speed = max(MIN_SPEED, min(MAX_SPEED, self.speed * factor))
        self._schedule()

    def stop(self) -> None:
        self.playing = False
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.playing:
            self._timer = self.screen.set_interval(BASE_STEP_S / self.speed, self._tick)

    def _tick(self) -> None:
        screen = self.screen
        if screen.cursor >= len(screen.events):
            self.stop()
            screen.refresh_all()
            return
        screen.seek(screen.cursor + 1)

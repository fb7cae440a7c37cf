"""A fork made to be compared (F in a replay) opens beside the original when it ends: both runs, saved, in the
saved-runs compare screen. Its own module: the compare screen opens replays, whose fork helpers
(tui.screens.replay_fork) must not reach back to it."""

from __future__ import annotations

from typing import Any


def open_fork_comparison(screen: Any) -> None:
    """A fork made to be compared has ended (``screen``: its RunScreen): the original and the fork side by side,
    saved, in the compare screen."""
    # Loaded here, as before the split: the comparison modules cost about half a second of imports that a run
    # screen needs only when a fork made to be compared ends.
    from core.compose.compare_saved import load_saved, unique_labels
    from core.sessions.model import SessionFormatError

    from .compare_saved import SavedCompareScreen

    original, screen.compare_with = screen.compare_with, None
    screen.recorder.save()
    if original is None or screen.recorder.path is None:
        return
    try:
        runs = load_saved([original, screen.recorder.path])
    except SessionFormatError as exc:
        screen.notify(f"cannot compare the fork with the original: {exc}", severity="error", timeout=10)
        return
    runs[0].label, runs[1].label = "original", f"fork @ {screen.model.unit} {screen.fork.round if screen.fork else '?'}"
    for run in runs:
        run.row.method = run.label
    compare = SavedCompareScreen(unique_labels(runs), source=str(screen.recorder.path))
    compare.back_to = screen.fork_origin  # esc: back to the replay where the fork was made
    screen.app.push_screen(compare)

"""Where a replay's steps stop: the cursor positions (how many recorded events are applied) that end a phase or a
round. Plain functions of the event list, which a follower keeps growing (tui.screens.follow)."""

from __future__ import annotations

from collections.abc import Sequence

from core.runtime import events as ev
from core.runtime.dispatch import positions


def phase_stops(events: Sequence[ev.Event]) -> list[int]:
    """Positions that end a phase: just before each phase or round starts, and the end."""
    stops = [i for i in positions(events, ev.PhaseStarted, ev.RoundStarted) if i > 1]
    return [*stops, len(events)]


def round_stops(events: Sequence[ev.Event]) -> list[int]:
    """Positions that end a round: just before each next round starts, and the end."""
    stops = [i for i in positions(events, ev.RoundStarted) if i > 0]
    return [*stops, len(events)]


def later(stops: list[int], cursor: int, end: int) -> int:
    """The first stop after ``cursor`` (the end when none is)."""
    return next((s for s in stops if s > cursor), end)


def earlier(stops: list[int], cursor: int, events: Sequence[ev.Event]) -> int:
    """The last stop before ``cursor``. Stepping back stops once the run has started (before that the screen
    would be empty)."""
    return max((s for s in stops if s < cursor), default=min(1, len(events)))


def round_end(events: Sequence[ev.Event], number: int) -> int | None:
    """The position that shows round ``number`` complete (everything before the next round starts); None when
    the session has no such round."""
    starts = positions(events, ev.RoundStarted)
    if not 1 <= number <= len(starts):
        return None
    return starts[number] if number < len(starts) else len(events)

"""What a fork from a replay continues with (f, F): the viewed round's tau, k_in and max_rounds (the what-if's
values when one is set), and the settings the fork runs with: the recorded run's domain, protocol and team. A
fork made to be compared (F) opens beside the original when it ends."""

from __future__ import annotations

from typing import Any

from core.runtime.config import Settings
from core.runtime.teams import with_recorded_team

from ..model import RunModel


def fork_params(model: RunModel, round_no: int, whatif: tuple[float, int] | None) -> tuple[float, int, int]:
    """tau, k_in and max_rounds for a fork: the what-if values when set, else what the viewed round ran with."""
    rv = model.round_view(round_no)
    params = rv.params if rv is not None and rv.params else model.params
    tau, k_in = float(params.get("tau", 0.3)), int(params.get("k_in", 3))
    if rv is not None and rv.routing is not None:
        tau, k_in = rv.routing.tau, rv.routing.k_in  # a mid-round change re-routed with these
    if whatif is not None:
        tau, k_in = whatif
    return tau, k_in, int(params.get("max_rounds", 5))


def fork_settings(settings: Settings, session: Any, round_no: int, params: tuple[float, int, int]) -> Settings:
    """The app's settings for a fork of ``session`` (a core.sessions.model.Session) from ``round_no``: its
    domain, protocol and team, ``params``' tau and k_in, room for one round more (10 at most). Raises
    ConfigError (one line)."""
    tau, k_in, max_rounds = params
    forked = settings.with_overrides(
        domain=session.domain, protocol=session.metadata.protocol, tau=tau, k_in=k_in,
        max_rounds=min(10, max(max_rounds, round_no + 1)),
    )
    return with_recorded_team(forked, session.metadata.team)  # the fork goes on with the run's team


def open_fork_comparison(screen: Any) -> None:
    """A fork made to be compared has ended (``screen``: its RunScreen): the original and the fork side by side,
    saved, in the compare screen."""
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

"""What a fork from a replay continues with (f, F): the viewed round's tau, k_in and max_rounds (the what-if's
values when one is set), and the settings the fork runs with: the recorded run's domain, protocol, team, method
and method options."""

from __future__ import annotations

from typing import Any

from core.runtime.config import Settings
from core.runtime.teams import with_recorded_team
from core.sessions.fork import with_recorded_method

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
    domain, protocol, team, method and method options, ``params``' tau and k_in, room for one round more (10 at
    most). Raises ConfigError (one line)."""
    tau, k_in, max_rounds = params
    forked = settings.with_overrides(
        domain=session.domain, protocol=session.metadata.protocol, tau=tau, k_in=k_in,
        max_rounds=min(10, max(max_rounds, round_no + 1)),
    )
    forked = with_recorded_method(forked, session)  # ... with the run's method and the options it ran with
    return with_recorded_team(forked, session.metadata.team)  # the fork goes on with the run's team

"""What a launch request (tui.cli.launch) opens first, and the request for a screen its caller builds.

The app (tui.app.SwarmApp) takes one request; a live run and a replay it opens as it opens any later one (its
start_run and open_replay), every other request's first screen is made here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from textual.screen import Screen

from core.runtime.config import Settings

from .cli.launch import (
    Launch,
    OpenBenchShow,
    OpenCompareLive,
    OpenCompareSaved,
    OpenFollow,
    OpenReplay,
    OpenRun,
    RunsOn,
)


@dataclass(frozen=True)
class OpenScreen(RunsOn):
    """A screen the caller builds (a benchmark's compare screen fed by hand), over ``settings``."""

    build: Callable[[], Screen[Any]]
    settings: Settings = field(default_factory=Settings)


Request = Launch | OpenScreen


def settings_of(request: Request) -> Settings:
    """The settings a request opens with (a comparison's are its plan's; none given: the defaults)."""
    match request:
        case OpenCompareLive():
            settings: Settings = request.plan.settings
            return settings
        case OpenBenchShow():
            return Settings()
        case _:
            return request.settings or Settings()


def first_screen(request: Request, app: Any) -> Screen[Any]:
    """The screen ``request`` opens (the launch form for a run without a problem); ``app``: the SwarmApp, whose
    backend a live comparison runs on. The screens are imported here, not at the top: each request needs one
    of them (bench/startup.py measures the import time)."""
    match request:
        case OpenBenchShow():
            from .screens.bench import BenchScreen

            return BenchScreen(request.report)
        case OpenCompareLive():
            from .screens.compare_live import LiveCompareScreen

            return LiveCompareScreen(request.plan, backend=app.backend_for(request.demo), save=request.save)
        case OpenCompareSaved():
            from .screens.compare_saved import SavedCompareScreen

            return SavedCompareScreen(request.runs, request.source)
        case OpenFollow():
            from .screens.follow import FollowScreen

            return FollowScreen(request.log, session_path=request.session_path)
        case OpenScreen():
            return request.build()
        case OpenRun():
            from .screens.launch import LaunchScreen

            return LaunchScreen(settings_of(request), demo=request.demo)
    raise ValueError(f"no first screen for {type(request).__name__}")  # a replay: SwarmApp.open_replay


def open_request(app: Any, request: Request) -> None:
    """Open ``request`` on ``app`` (a tui.app.SwarmApp, mounting): a live run and a replay as the app opens any
    later one, any other request's first screen as first_screen makes it."""
    match request:
        case OpenRun(problem=str(problem)):
            app.start_run(problem, app.settings, demo=app.demo)
        case OpenReplay():
            app.open_replay(request.session, request.path)
        case _:
            screen = first_screen(request, app)
            if isinstance(request, OpenFollow):  # a followed run: the screen the engine's events go to
                app.swarm_screen = screen
            app.push_screen(screen)

"""The Textual app: opens the screen a launch request asks for (tui.cli.launch: a live run or the launch form, a
replay, a followed run, a comparison, the benchmark screen), keeps themes, keymap and toasts, starts runs,
comparisons and forks from the screens, and forwards the engine's events.

``run_request`` is the entry point tui/entry.py calls. The engine's events arrive as EngineEvent messages and
are handed to the screen that shows the run; a replay hands recorded events to the same handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.notifications import Notify

from core.methods.catalogue import get_method_info
from core.runtime.config import Settings
from core.runtime.textsafe import printable

from .bridge import BackendFailed, BackendStatus, EmbedderReady, EngineEvent
from .cli.launch import Launch, OpenRun
from .commands import SwarmCommands
from .loaders import BackgroundLoads
from .looks import apply_keymap, register_themes
from .opening import Request, open_request, settings_of
from .spectate import REFUSAL, refused, spectating
from .state import default_state_path, write_state
from .toasts import ToastLimit

_UNSET: Any = object()


class SwarmApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "swarm-tui"
    COMMANDS = App.COMMANDS | {SwarmCommands}
    ENABLE_COMMAND_PALETTE = True
    NOTIFICATION_TIMEOUT = 4

    def __init__(
        self,
        request: Request | None = None,
        *,
        state_path: Path | None = _UNSET,
        clock: Callable[[], float] = time.time,
        server: Any = None,
        load_embedder: bool | None = None,
        start_engine: bool = True,
        spectate: bool | None = None,
    ) -> None:
        """``request``: what to open (None: the launch form with the default settings). The rest serve tests and
        benchmarks: ``state_path`` (the remembered theme; None: none kept), ``clock`` (a live run's elapsed time),
        ``server`` (a demo server the caller started), ``load_embedder`` (MiniLM; by default only for a live run
        or the form), ``start_engine`` (False: a run screen no engine drives, fed its events by hand) and
        ``spectate`` (read-only; by default as the environment says, tui.spectate)."""
        super().__init__()
        self.request: Request = request or OpenRun(None, Settings())
        # Read-only (swarm-tui serve --spectate): keys that change the run are refused (tui.spectate).
        self.spectate = spectating() if spectate is None else spectate
        if self.spectate:
            self.sub_title = "spectating: read-only"
        self.settings = settings_of(self.request)
        live = self.request if isinstance(self.request, OpenRun) else None
        self.problem = live.problem if live is not None else None
        self.save_path = live.save if live is not None else None
        self.step = live.step if live is not None else False
        self.demo = self.request.demo
        self.state_path = default_state_path() if state_path is _UNSET else state_path
        self.clock = clock
        self.server = server
        self.start_engine = start_engine
        self.loads = BackgroundLoads(self, embedder=live is not None if load_embedder is None else load_embedder)
        self.embeddings_ready = not self.loads.embedder_wanted
        self.swarm_screen: Any = None  # the screen showing the run (live or replay)
        self._themes_ready = False
        self._from_launch: tuple[str, bool] | None = None  # (problem, demo) of a run started from the form
        self._fork_origin: Any = None  # the replay screen a fork started from, until the fork gets going
        self._toasts = ToastLimit()

    async def run_action(self, action: Any, default_namespace: Any = None, namespaces: Any = None) -> bool:
        """Every key and footer click comes through here: a spectator's run-changing one is refused, in one
        line, before any screen sees it."""
        replay = not getattr(default_namespace, "live", True)  # a replay screen: stepping it changes no run
        if self.spectate and isinstance(action, str) and refused(action, replay=replay):
            self.notify(REFUSAL, severity="warning")
            return True
        return await super().run_action(action, default_namespace, namespaces)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.spectate and action == "command_palette":  # its commands export and open files: not a viewer's
            return False
        return super().check_action(action, parameters)

    # --- notices ------------------------------------------------------------------------------
    def _on_notify(self, event: Notify) -> None:
        """Toasts must not pile up over the panes (tui.toasts): a repeat replaces the notice it repeats, and
        the least severe and oldest make room beyond a few."""
        for old in self._toasts.repeats_of(event.notification, list(self._notifications)):
            self._unnotify(old, refresh=False)
        super()._on_notify(event)
        excess = self._toasts.excess(list(self._notifications))
        for old in excess:
            self._unnotify(old, refresh=False)
        if excess:
            self._refresh_notifications()

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Every toast (screens call the app's): its text may quote a model, a server or a file, so it is
        made printable first (core.runtime.textsafe)."""
        super().notify(printable(message), title=printable(title), severity=severity, timeout=timeout, markup=markup)

    # --- start-up -----------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.call_after_refresh(self.loads.preload_client)  # after the first frame, which it would slow down
        register_themes(self)
        self._themes_ready = True
        if self.settings.keymap:
            apply_keymap(self, self.settings.keymap)
        if self.problem is None:  # the form or a replay: load while the user reads; a run warms up itself
            self.call_after_refresh(self.warm_up_embedder)  # after the first frame (a thread would slow it)
        open_request(self, self.request)

    def watch_theme(self, theme: str) -> None:
        if self._themes_ready:
            error = write_state(self.state_path, theme=theme)
            if error:
                self.notify(error, severity="warning")

    async def client_loaded(self) -> None:
        """Wait, without blocking the screen, until the model client is imported (tui.loaders)."""
        await self.loads.client_loaded()

    def warm_up_embedder(self) -> None:
        """Start loading MiniLM (once). A run calls this when its first model call is answering, so the
        first request never waits for torch (the load overlaps the model's reply)."""
        self.loads.warm_up_embedder()

    def on_embedder_ready(self, message: EmbedderReady) -> None:
        if message.error:
            self.notify(message.error, severity="error", timeout=30)
        else:
            self.embeddings_ready = True
        if self.swarm_screen is not None:
            self.swarm_screen.model.embeddings_ready = self.embeddings_ready
            self.swarm_screen.refresh_all()

    def backend_for(self, demo: bool) -> Any:
        """A run's backend choice: the endpoint, or the demo server (the app's own, at the request's pace)."""
        from core.compose.plan import BackendChoice

        return BackendChoice(demo=demo, demo_chunk_delay=self.request.demo_chunk_delay, server=self.server)

    def start_run(self, problem: str, settings: Settings, *, demo: bool, step: bool | None = None) -> None:
        """A live run of ``problem`` (``step``: in step mode; the launch form's switch, else as launched)."""
        from .screens.run import RunScreen

        self.settings = settings
        self.step = self.step if step is None else step
        screen = RunScreen(
            problem, settings, backend=self.backend_for(demo), save=self.save_path, step=self.step, clock=self.clock,
            start=self.start_engine,
        )
        self.swarm_screen = screen
        self._fork_origin = None
        self._from_launch = (problem, demo) if len(self.screen_stack) > 1 else None
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def start_compare(self, problem: str, settings: Settings, methods: list[str], *, demo: bool,
                      step: bool = False) -> None:
        """A comparison of ``methods`` on one problem, started from the launch form (the compare screen in its
        place; esc there is not needed to come back: the form is one ctrl+p "launch form" away)."""
        from core.compose.compare import ComparePlan
        from core.methods.registry import MethodError

        from .screens.compare_live import LiveCompareScreen

        plan = ComparePlan(problem, settings, methods, options={m: dict(settings.strategy_options.get(m, {}))
                                                                for m in methods}, step=step)
        try:
            plan.check()
        except MethodError as exc:
            self.notify(str(exc), severity="error", timeout=15)
            return
        self.settings = settings
        screen = LiveCompareScreen(plan, backend=self.backend_for(demo))
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def get_system_commands(self, screen: Any) -> Any:
        """Textual's own palette commands, less its "Quit" (every screen's q is in the palette already, with its
        question when a run would be lost), plus a comparison from the launch form."""
        for command in super().get_system_commands(screen):
            if command.title != "Quit":
                yield command
        yield SystemCommand("Compare methods", "run several methods side by side on one problem",
                            self.open_compare_form)

    def open_compare_form(self) -> None:
        """The launch form with the cursor on the methods to compare (the palette's "compare")."""
        from .screens.launch import LaunchScreen

        if isinstance(self.screen, LaunchScreen):
            self.screen.query_one("#compare").focus()
            return
        running = self.swarm_screen is not None and self.swarm_screen.live and self.swarm_screen.model.running
        if running or getattr(self.screen, "running", False):
            self.notify("a run is going on: cancel it (x) or let it finish before starting a comparison",
                        severity="warning")
            return
        self.swarm_screen = None
        self.push_screen(LaunchScreen(self.settings, demo=self.demo, problem=self.problem or "", compare=True))

    def start_fork(self, fork: Any, problem: str, settings: Settings, *, steer: Any = None,
                   compare_with: Path | None = None, demo: bool | None = None) -> None:
        """Continue a replayed run live from a core.sessions.fork.ForkPoint, on top of the replay screen (which
        comes back if the endpoint is down). ``steer``: a steering action the fork takes at its first barrier;
        ``compare_with``: the original's session, opened beside the fork in the compare screen when it ends."""
        from .screens.run import RunScreen

        origin = self.swarm_screen
        demo = self.demo if demo is None else demo  # a demo session's fork: the scripted server (fork_on_demo)
        screen = RunScreen(problem, settings, backend=self.backend_for(demo), clock=self.clock,
                           start=self.start_engine, fork=fork)
        if steer is not None:
            screen.control.steer(steer)  # queued: no barrier yet; the fork's first one takes it
        screen.compare_with = compare_with
        screen.fork_origin = origin
        self._fork_origin = origin
        self._from_launch = None
        if self.loads.want_embedder():  # a replay needed no model; the fork's next rounds route live
            self.embeddings_ready = False
        self.warm_up_embedder()
        self.swarm_screen = screen
        self.push_screen(screen)
        self.notify(fork_toast(fork.round, settings) + (" (DEMO server)" if demo else ""))

    # --- saved sessions -----------------------------------------------------------------------
    def open_session_picker(self) -> None:
        screen = self.swarm_screen
        if screen is not None and screen.live and screen.model.running:
            self.notify("a swarm is running: cancel it (x) or let it finish before opening a session",
                        severity="warning")
            return
        from .screens.sessions import SessionPickerScreen

        self.push_screen(SessionPickerScreen(self.settings))

    def open_replay(self, session: Any, path: Path | str, *, picker: Any = None) -> None:
        """Show a loaded core.sessions.model.Session in the replay screen (on top of the current screen).
        ``picker``: the session picker it was chosen in, which esc in the replay goes back to."""
        from .screens.replay import ReplayScreen

        replay = ReplayScreen(list(session.replay_events()), source=str(path), session=session)
        if picker is not None:
            replay.back_to = (picker, self.swarm_screen)
        self.swarm_screen = replay
        self._fork_origin = None
        self.push_screen(replay)

    def close_replay(self, replay: Any) -> None:
        """Back from a replay to the session picker it was opened from."""
        back_to = replay.back_to
        if back_to is None or self.screen is not replay:
            return
        picker, previous = back_to
        self.swarm_screen = previous
        self.pop_screen()
        if self.screen is picker:
            picker.action_reload()  # a fork or an export since may have added a session

    # --- the event stream ---------------------------------------------------------------------
    def on_engine_event(self, message: EngineEvent) -> None:
        if self._exit:  # quitting: events still queued ahead of the exit would only delay it
            return
        if self.swarm_screen is not None:
            self.swarm_screen.apply_event(message.event)

    def on_backend_status(self, message: BackendStatus) -> None:
        if self.swarm_screen is not None and hasattr(self.swarm_screen, "backend_status"):
            self.swarm_screen.backend_status(message.text)

    def on_backend_failed(self, message: BackendFailed) -> None:
        fork_screen = self.swarm_screen
        if self._fork_origin is not None and fork_screen is not None and fork_screen.model.run is None:
            # A fork that never got going (endpoint down): back to the replay it came from.
            self.swarm_screen, self._fork_origin = self._fork_origin, None
            if self.screen is fork_screen:
                self.pop_screen()
            self.notify(f"cannot fork: {message.message}", severity="error", timeout=20)
            return
        if self._from_launch is not None and self.swarm_screen is not None and self.swarm_screen.model.run is None:
            # Started from the form and never got going: back to the form, values kept, error shown.
            from .screens.launch import LaunchScreen

            problem, demo = self._from_launch
            self.swarm_screen = None
            form = LaunchScreen(self.settings, demo=demo, problem=problem, error=message.message)
            self.switch_screen(form)
            self.notify(form.error, severity="error", timeout=20)
            return
        if self.swarm_screen is not None and hasattr(self.swarm_screen, "backend_failed"):
            self.swarm_screen.backend_failed(message.message)
        else:
            self.notify(message.message, severity="error", timeout=20)

    async def action_quit(self) -> None:
        screen = self.swarm_screen
        if screen is not None and screen.model.running and hasattr(screen, "action_request_quit"):
            screen.action_request_quit()
            return
        self.exit(getattr(screen, "exit_code", 0))


def run_request(request: Launch) -> int:
    """Open the screen a command line asked for; returns (as the process ends with) the app's exit code."""
    return run_and_exit(SwarmApp(request))


def run_and_exit(app: SwarmApp) -> int:
    """Run the app, then end the process as soon as Textual has put the terminal back.

    Quitting must be instant, but a normal interpreter exit is not: it joins the loop's executor
    threads (an embedding call), waits on nothing useful while MiniLM and torch are still importing in
    the loader thread (unsafe to interrupt any other way), and tears down torch's modules — 2 to 5 s of
    blank terminal. Nothing is left to do at that point: sessions are written as the run goes and the
    theme when it is picked. So: flush the output and os._exit with the app's code."""
    loop = asyncio.new_event_loop()  # our own loop: asyncio.run() would join the executor's threads
    try:
        result = app.run(loop=loop)
    except KeyboardInterrupt:
        print("swarm-tui: interrupted", file=sys.stderr)
        _exit_now(130)
    except Exception:
        import traceback

        traceback.print_exc()
        _exit_now(1)
    _exit_now(int(result or 0))
    return int(result or 0)  # not reached


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def fork_toast(round_no: int, settings: Settings) -> str:
    """What a fork says as it starts, in its method's words: its unit ("step 2" for DMoA) and, for a method that
    routes by tau and k_in, the values the fork routes with."""
    info = get_method_info(settings.strategy)
    routing = f" with tau {settings.tau:.2f}, k_in {settings.k_in}" if info.uses_tau else ""
    return f"forking from {info.unit} {round_no}: continuing live{routing}"

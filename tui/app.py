"""The Textual app: launch form or run screen, replay, themes, keymap, and the event forwarding.

``run_app`` (live) and ``run_replay`` (a saved session) are the entry points tui/entry.py calls. The
engine's events arrive as EngineEvent messages and are handed to the screen that shows the run; a
replay hands recorded events to the same handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, SystemCommand
from textual.notifications import Notify

from core.runtime import events as ev
from core.runtime.config import Settings

from .bridge import BackendFailed, BackendStatus, EmbedderReady, EngineEvent
from .commands import SwarmCommands
from .spectate import REFUSAL, refused, spectating
from .state import default_state_path, read_state, write_state

_UNSET: Any = object()
MAX_TOASTS = 3  # notices shown at once; older ones make room (errors last)
_SEVERITY_RANK = {"information": 0, "warning": 1, "error": 2}
EMBEDDER_THREAD = "swarm-tui-embedder"
CLIENT_THREAD = "swarm-tui-client"  # imports the openai SDK while the first frames draw


def settle_heap() -> None:
    """Take every object alive now (modules, the openai SDK's types, the model, the screen) out of the cyclic
    garbage collector's walks. Its full collections otherwise went over all of them again and again:
    pauses of 100–200 ms every second or two while 16 agents streamed (bench/tui_stream.py --agents 16)."""
    gc.freeze()


class SwarmApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "swarm-tui"
    COMMANDS = App.COMMANDS | {SwarmCommands}
    ENABLE_COMMAND_PALETTE = True
    NOTIFICATION_TIMEOUT = 4

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        problem: str | None = None,
        demo: bool = False,
        save: Path | None = None,
        step: bool = False,
        replay: list[ev.Event] | None = None,
        replay_source: str = "",
        replay_session: Any = None,
        state_path: Path | None = _UNSET,
        clock: Callable[[], float] = time.time,
        demo_chunk_delay: float = 0.02,
        server: Any = None,
        load_embedder: bool = True,
        start_engine: bool = True,
        bench_report: Any = None,
        compare: Callable[[], Any] | None = None,
        spectate: bool | None = None,
    ) -> None:
        super().__init__()
        # Read-only (swarm-tui serve --spectate): keys that change the run are refused (tui.spectate).
        self.spectate = spectating() if spectate is None else spectate
        if self.spectate:
            self.sub_title = "spectating: read-only"
        self.settings = settings or Settings()
        self.problem = problem
        self.demo = demo
        self.save_path = save
        self.step = step
        self.replay_events = replay
        self.replay_source = replay_source
        self.replay_session = replay_session
        self.state_path = default_state_path() if state_path is _UNSET else state_path
        self.clock = clock
        self.demo_chunk_delay = demo_chunk_delay
        self.server = server
        self.load_embedder = load_embedder
        self.start_engine = start_engine
        self.bench_report = bench_report  # core.bench.report.Report: open on the benchmark screen
        self.compare = compare  # builds the compare screen to open (tui.screens.compare_live / compare_saved)
        self.embeddings_ready = not load_embedder
        self._embedder_started = False
        self.swarm_screen: Any = None  # the screen showing the run (live or replay)
        self._themes_ready = False
        self._from_launch: tuple[str, bool] | None = None  # (problem, demo) of a run started from the form
        self._fork_origin: Any = None  # the replay screen a fork started from, until the fork gets going
        self._embedder_thread: threading.Thread | None = None
        self._client_thread: threading.Thread | None = None
        self._client_loaded = threading.Event()
        self._toast_counts: dict[str, int] = {}  # notification identity -> how many times it was said

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
        """Toasts must not pile up over the panes: a repeat of a notice still shown replaces it (with a
        count and a fresh timeout), and at most MAX_TOASTS show at once, the least severe and oldest
        making room first."""
        new = event.notification
        same = [n for n in self._notifications if (n.message, n.severity) == (new.message, new.severity)]
        if same:
            repeats = 1 + sum(self._toast_counts.pop(n.identity, 1) for n in same)
            self._toast_counts[new.identity] = repeats
            new.title = f"{new.title} (×{repeats})".strip() if new.title else f"×{repeats}"
            for old in same:
                self._unnotify(old, refresh=False)
        super()._on_notify(event)
        shown = list(self._notifications)
        excess = len(shown) - MAX_TOASTS
        if excess > 0:
            by_priority = sorted(shown[:-1], key=lambda n: (_SEVERITY_RANK.get(n.severity, 0), n.raised_at))
            for old in by_priority[:excess]:
                self._toast_counts.pop(old.identity, None)
                self._unnotify(old, refresh=False)
            self._refresh_notifications()

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Every toast (screens call the app's): its text may quote a model, a server or a file, so it is
        made printable first (core.runtime.textsafe)."""
        from core.runtime.textsafe import printable

        super().notify(printable(message), title=printable(title), severity=severity, timeout=timeout, markup=markup)

    # --- start-up -----------------------------------------------------------------------------
    def on_mount(self, event: events.Mount) -> None:  # the event: FollowApp prevents it
        self.call_after_refresh(self._preload_client)  # after the first frame, which it would slow down
        self._register_themes()
        if self.settings.keymap:
            self.apply_keymap(self.settings.keymap)
        if self.problem is None:  # the form or a replay: load while the user reads; a run warms up itself
            self.call_after_refresh(self.warm_up_embedder)  # after the first frame (a thread would slow it)
        if self.bench_report is not None:
            from .screens.bench import BenchScreen

            self.push_screen(BenchScreen(self.bench_report))
        elif self.compare is not None:
            self.push_screen(self.compare())
        elif self.replay_events is not None:
            from .screens.replay import ReplayScreen

            self.swarm_screen = ReplayScreen(
                self.replay_events, source=self.replay_source, session=self.replay_session
            )
            self.push_screen(self.swarm_screen)
        elif self.problem is not None:
            self.start_run(self.problem, self.settings, demo=self.demo)
        else:
            from .screens.launch import LaunchScreen

            self.push_screen(LaunchScreen(self.settings, demo=self.demo))

    def apply_keymap(self, keymap: Any) -> None:
        """The config's [keymap], checked: unknown ids and keys taken twice are left out (those
        actions keep their default keys) and said once, in one warning."""
        from .keymap import check_keymap

        accepted, problems = check_keymap(dict(keymap))
        self.set_keymap(accepted)
        if problems:
            self.notify("keymap: " + "; ".join(problems), title="config [keymap]", severity="warning", timeout=20)

    def _register_themes(self) -> None:
        from themes import load_themes

        themes, errors = load_themes()
        for theme in themes:
            self.register_theme(theme)
        for error in errors:
            self.notify(error, severity="warning")
        wanted = read_state(self.state_path).get("theme") or self.settings.theme
        if wanted in self.available_themes:
            self.theme = wanted
        self._themes_ready = True

    def watch_theme(self, theme: str) -> None:
        if self._themes_ready:
            error = write_state(self.state_path, theme=theme)
            if error:
                self.notify(error, severity="warning")

    def _preload_client(self) -> None:
        """Import the model client (the openai SDK: ~0.8 s) in a daemon thread from the first frame on, so
        neither that frame nor the screen while a run opens its endpoint waits for it."""
        if self._client_loaded.is_set() or self._client_thread is not None:
            return

        def load() -> None:
            try:
                import core.llm.client  # noqa: F401
            finally:
                settle_heap()
                self._client_loaded.set()

        self._client_thread = threading.Thread(target=load, name=CLIENT_THREAD, daemon=True)
        self._client_thread.start()

    async def client_loaded(self) -> None:
        """Wait, without blocking the screen, until the model client is imported (at once if it is)."""
        self._preload_client()
        while not self._client_loaded.is_set():
            await asyncio.sleep(0.02)

    def warm_up_embedder(self) -> None:
        """Start loading MiniLM (once). A run calls this when its first model call is answering, so the
        first request never waits for torch (the load overlaps the model's reply)."""
        if self.load_embedder and not self._embedder_started:
            self._embedder_started = True
            self._start_embedder()

    def _start_embedder(self) -> None:
        """Load MiniLM in a daemon thread (not a Textual worker: those run in the loop's executor, which
        asyncio joins on exit, so quitting waited seconds for torch to finish importing)."""
        thread = threading.Thread(target=self._load_embedder, name=EMBEDDER_THREAD, daemon=True)
        self._embedder_thread = thread
        thread.start()

    def _load_embedder(self) -> None:
        """Thread: load MiniLM so the first routing does not wait; touches no widget, only posts."""
        from core.compose.plan import embedder_for

        embedder = embedder_for(self.settings)
        # A one-time ONNX export (its file missing or damaged) is shown, not written over the screen.
        embedder.on_progress = lambda text: self.call_from_thread(self.notify, text, timeout=15)
        try:
            embedder.load()
        except Exception as exc:  # EmbeddingError, or anything torch raises: one line for the user
            self.post_message(EmbedderReady(str(exc) or type(exc).__name__))
        else:
            settle_heap()
            self.post_message(EmbedderReady())

    def on_embedder_ready(self, message: EmbedderReady) -> None:
        if message.error:
            self.notify(message.error, severity="error", timeout=30)
        else:
            self.embeddings_ready = True
        if self.swarm_screen is not None:
            self.swarm_screen.model.embeddings_ready = self.embeddings_ready
            self.swarm_screen.refresh_all()

    def _backend(self, demo: bool) -> Any:
        """A run's backend choice: the endpoint, or the demo server (the app's own, at its pace)."""
        from core.compose.plan import BackendChoice

        return BackendChoice(demo=demo, demo_chunk_delay=self.demo_chunk_delay, server=self.server)

    def start_run(self, problem: str, settings: Settings, *, demo: bool) -> None:
        from .screens.run import RunScreen

        self.settings = settings
        screen = RunScreen(
            problem, settings, backend=self._backend(demo), save=self.save_path, step=self.step, clock=self.clock,
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
        screen = LiveCompareScreen(plan, demo=demo, demo_chunk_delay=self.demo_chunk_delay, server=self.server)
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
        screen = RunScreen(problem, settings, backend=self._backend(demo), clock=self.clock,
                           start=self.start_engine, fork=fork)
        if steer is not None:
            screen.control.steer(steer)  # queued: no barrier yet; the fork's first one takes it
        screen.compare_with = compare_with
        screen.fork_origin = origin
        self._fork_origin = origin
        self._from_launch = None
        if not self.load_embedder:  # a replay needed no model; the fork's next rounds route live
            self.load_embedder, self.embeddings_ready = True, False
        self.warm_up_embedder()
        self.swarm_screen = screen
        self.push_screen(screen)
        self.notify(f"forking from round {fork.round}: continuing live with tau {settings.tau:.2f}, "
                    f"k_in {settings.k_in}" + (" (DEMO server)" if demo else ""))

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

        self.replay_session, self.replay_source = session, str(path)
        replay = ReplayScreen(session.replay_events(), source=str(path), session=session)
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


def run_app(problem: str | None, settings: Settings, *, demo: bool = False, save: Path | None = None,
            step: bool = False) -> int:
    """The TUI for a live run (or the launch form when problem is None). Returns the exit code."""
    app = SwarmApp(settings, problem=problem, demo=demo, save=save, step=step)
    return run_and_exit(app)


def run_replay(session: Any, path: Path | str, *, settings: Settings | None = None, demo: bool = False) -> int:
    """Replay a loaded core.sessions.model.Session through the same screen and handlers as a live run.
    ``settings`` and ``demo`` say where a fork from the replay continues (default: the config file's
    endpoint)."""
    if settings is None:
        from core.runtime.config import ConfigError
        from core.runtime.config_file import load_settings

        try:
            settings = load_settings()
        except ConfigError:
            settings = Settings()  # the replay itself needs no config; a fork would say what is wrong
    events = list(session.replay_events())
    app = SwarmApp(settings, replay=events, replay_source=str(path), replay_session=session, demo=demo,
                   load_embedder=False)
    return run_and_exit(app)


def run_bench_show(report: Any, settings: Settings | None = None) -> int:
    """The benchmark screen for a loaded core.bench.report.Report (``swarm-tui bench show DIR``)."""
    app = SwarmApp(settings or Settings(), bench_report=report, load_embedder=False)
    return run_and_exit(app)


def run_compare_app(plan: Any, *, demo: bool = False, save: Path | None = None) -> int:
    """The compare screen for a live comparison (a core.compose.compare.ComparePlan)."""
    from .screens.compare_live import LiveCompareScreen

    app = SwarmApp(plan.settings, demo=demo, load_embedder=False,
                   compare=lambda: LiveCompareScreen(plan, demo=demo, save=save))
    return run_and_exit(app)


def run_compare_replay(runs: list[Any], source: str, *, settings: Settings | None = None, demo: bool = False) -> int:
    """The compare screen over saved runs (core.compose.compare_saved.SavedRun), side by side in replay."""
    from .screens.compare_saved import SavedCompareScreen

    app = SwarmApp(settings or Settings(), demo=demo, load_embedder=False,
                   compare=lambda: SavedCompareScreen(runs, source))
    return run_and_exit(app)


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

"""The live run: the engine runs in a Textual worker in the app's loop; keys call its RunControl.

The worker never touches a widget: the engine's sinks are the EventBridge (events -> messages) and
the session recorder. The screen owns the RunControl, so keys work from the first frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from textual import events
from textual.binding import BindingType
from textual.worker import Worker

from core.compose.plan import BackendChoice, RunPlan
from core.runtime import events as ev
from core.runtime.config import DomainName, Settings
from core.runtime.dispatch import EventTable
from core.runtime.engine import ForkPoint
from core.runtime.outcome import EndReason
from core.runtime.textsafe import printable
from core.sessions.model import Session, SessionFormatError
from core.sessions.store import SessionRecorder

from ..bindings import RUN_BINDINGS
from ..bridge import BackendFailed, BackendStatus, EventBridge
from ..cli.launch import DEMO_PACE
from ..model import refusal_toast, steer_line
from .fork_compare import open_fork_comparison
from .steer import SteerScreen
from .swarm_view import SwarmScreen

TAU_STEP = 0.05

# What a live run says on an event besides what every run screen does (tui.screens.swarm_view.REACTS): a
# steering action's outcome, a finished run's parse warning and a fork's comparison.
SAYS: EventTable[RunScreen] = EventTable()
# The engine sink's events that mean a model call is answering (its request has left).
ANSWERING: EventTable[RunScreen] = EventTable()


def limit_message(name: str, wanted: float, now: float, n_workers: int) -> str:
    """What a tau/k_in key at its bound says, with the bound: "k_in is already 1, its lowest (1..4)"."""
    low, high = (1, max(1, n_workers - 1)) if name == "k_in" else (0.0, 1.0)
    which = "lowest" if wanted < now else "highest"
    shown = f"{now:.2f}" if name == "tau" else str(now)
    return f"{name} is already {shown}, its {which} ({low:g}..{high:g})"


class RunScreen(SwarmScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*RUN_BINDINGS]

    def __init__(
        self,
        problem: str,
        settings: Settings,
        *,
        backend: BackendChoice = BackendChoice(demo_chunk_delay=DEMO_PACE),
        save: Path | None = None,
        step: bool = False,
        clock: Callable[[], float] = time.time,
        start: bool = True,
        fork: ForkPoint | None = None,
        plan: RunPlan | None = None,
    ) -> None:
        """``backend``: the endpoint, or the demo server (and its pace). ``plan``: the run's plan when the face
        made it (else made here from ``settings``). ``fork``: a core.sessions.fork.ForkPoint to continue a
        recorded run from (its history is re-emitted first), or None for a new run."""
        super().__init__()
        self.problem = problem
        self.fork = fork
        self.settings = settings
        self.backend = backend
        self.demo = demo = backend.demo
        self.clock = clock
        self.start = start
        # The run's plan, made once (core.compose.plan): the team and the method the run then opens with.
        self.plan = plan or RunPlan.make(settings)
        team = self.plan.team
        self.n_workers = len(team.workers)  # k_in's range is 1..n_workers-1
        self.control = self.plan.new_control(step=step)
        self.model.params = self.plan.params.as_dict()  # the bar shows the run's settings before the engine starts
        self.model.strategy = settings.strategy
        info = self.model.method_info  # ... counting against the method's own limit (DMoA's L_max steps)
        if info is not None:
            given = settings.strategy_options.get(settings.strategy)
            self.model.params["max_rounds"] = info.max_rounds(given, settings.max_rounds)
        # ... and the header the problem, even if the endpoint never answers (RunStarted fills the rest).
        self.model.problem, self.model.domain, self.model.demo = problem, settings.domain, demo
        # ... and the team's panes from the first frame (DyTopo's roster; another method's RunStarted
        # brings its own, and the panes follow).
        if info is not None and info.team_roster:
            self.model.manager, self.model.workers = team.manager.name, list(team.worker_names)
        self.model.protocol, self.model.strategy = settings.protocol, settings.strategy
        self.model.mode = self.control.mode
        self.recorder = SessionRecorder(Path(settings.sessions_dir), path=save)
        self.tests_on = settings.runs_code_tests  # code tests in the sandbox after each round
        self.worker: Worker[None] | None = None
        # A fork made to be compared (replay's "steer a fork"): the original's session, opened beside this
        # run in the compare screen once it ends.
        self.compare_with: Path | None = None
        self.fork_origin: Any = None  # the replay screen this fork was made from (esc in the compare goes back)

    def on_mount(self) -> None:
        super().on_mount()
        self.model.embeddings_ready = getattr(self.app, "embeddings_ready", False)
        if self.start:
            self.worker = self.run_worker(self._run_engine(), name="engine", group="engine", exclusive=True,
                                          exit_on_error=False)

    def now(self) -> float | None:
        return self.clock()

    def _status(self, text: str) -> None:
        """A line from opening the endpoint (loading, connecting), for the header while it waits."""
        self.app.post_message(BackendStatus(text))

    async def _run_engine(self) -> None:
        """Open the endpoint (or the demo server), then run the engine to its end."""
        client_loaded = getattr(self.app, "client_loaded", None)
        if client_loaded is not None:  # imported in a thread: the screen keeps drawing meanwhile
            await client_loaded()
        from core.compose.assembly import RunIO, open_run
        from core.llm.client import EndpointError
        from core.llm.embeddings import EmbeddingError

        io = RunIO(sinks=[EventBridge(self.app), self._warm_up], recorder=self.recorder, control=self.control,
                   backend=replace(self.backend, on_status=self._status))
        assembly = open_run(self.plan, self.problem, io, fork=self.fork)
        try:
            async with assembly as run:
                try:
                    await run.run()
                except EmbeddingError as exc:
                    self.app.post_message(BackendFailed(str(exc)))
                except Exception as exc:  # never a traceback on screen: one line for the user
                    self.app.post_message(BackendFailed(f"the run stopped: {type(exc).__name__}: {exc}"))
        except EndpointError as exc:  # the endpoint (or an agent's own) cannot be used: nothing ran
            self.app.post_message(BackendFailed(str(exc)))

    def _warm_up(self, event: ev.Event) -> None:
        """Engine sink: once a model call is answering, its request has left; MiniLM may load now."""
        ANSWERING.dispatch(self, event)

    def tests_state(self) -> str:
        info, run = self.model.method_info, self.model.run
        always = info is not None and info.tests_code_always and run is not None and run.domain == DomainName.CODE
        return "on" if self.tests_on or always else "off"

    def export_source(self) -> tuple[Session | None, Path | None, str]:
        recorder = self.recorder
        if recorder.path is None:
            return None, None, "nothing to export yet: the run has not been saved"
        try:
            session = recorder.session
        except SessionFormatError as exc:
            return None, None, f"cannot export this run: {exc}"
        return session, recorder.path, "nothing to export yet"

    def backend_status(self, text: str) -> None:
        """"contacting URL … N s" in the header while the endpoint has not answered yet."""
        if self.model.run is None and not self.model.error:
            self.model.control_status = printable(text)
            self.model.rev += 1
            self.refresh_all()

    def apply_event(self, event: ev.Event, *, render: bool = True) -> None:
        super().apply_event(event, render=render)
        SAYS.dispatch(self, event)

    @SAYS.on(ev.RunFinished)
    def _finished(self, event: ev.RunFinished) -> None:
        from core.runtime.parsing import contract_warning

        if self.compare_with is not None:
            self.call_after_refresh(open_fork_comparison, self)
        warning = contract_warning(event.replies_parsed, event.replies_total, event.replies_copied)
        if warning:  # e.g. "0 of 42 replies parsed: the model is not following the JSON contract"
            self.notify(warning, severity="error" if event.replies_parsed == 0 else "warning", timeout=30)

    @SAYS.on(ev.UserSteered)
    def _steered(self, event: ev.UserSteered) -> None:
        """Taken or refused: the person who asked hears which. markup=False: a reason's "[YAML_PARSE_ERROR]" is
        text to read, not a style tag to swallow."""
        if event.accepted:
            self.notify(steer_line(event), timeout=4, markup=False)
        else:
            self.notify(refusal_toast(event), severity="warning", timeout=8, markup=False)

    def backend_failed(self, message: str) -> None:
        self.model.error = printable(message)
        self.model.rev += 1
        self.notify(message, severity="error", timeout=20)
        self.refresh_all()

    # --- control keys -------------------------------------------------------------------------
    def action_step_phase(self) -> None:
        self.control.step_phase()

    def action_step_round(self) -> None:
        self.control.step_round()

    def action_toggle_pause(self) -> None:
        self.control.toggle_pause()

    def action_auto_run(self) -> None:
        self.control.resume()

    def _set_params(self, **changes: float | int) -> None:
        before = self.control.params
        after = self.control.set_params(**changes)  # type: ignore[arg-type]
        if after == before:
            name, wanted = next(iter(changes.items()))
            self.notify(limit_message(name, wanted, getattr(before, name), self.n_workers), severity="warning",
                        timeout=3)
        elif self.model.run is None:
            # No engine yet to announce it: keep the bar honest anyway.
            self.model.params = after.as_dict()
            self.refresh_all()

    def action_tau(self, delta: float) -> None:
        self._set_params(tau=round(self.control.params.tau + delta, 2))

    def action_k_in(self, delta: int) -> None:
        self._set_params(k_in=self.control.params.k_in + delta)

    def action_reroute(self) -> None:
        if not self.model.running:
            self.notify("no run in progress to re-route", severity="warning")
            return
        if not self.control.reroute_now() and self.control.reroute_hook is None:
            self.notify("no graph to re-route yet", severity="warning")

    # --- steering (docs/steering.md) -----------------------------------------------------------
    def action_steer(self) -> None:
        if not self.model.running:
            self.notify("no run in progress to steer", severity="warning")
            return
        context = self.steer_context()
        if context is None:
            self.notify(f"{self.model.strategy} takes no steering actions", severity="warning")
            return
        self.app.push_screen(SteerScreen(context), self.send_steering)

    def send_steering(self, request: dict[str, Any] | None) -> None:
        """Validate the dialog's action as a control-file line would be and queue it (one line if not)."""
        if request is None:
            return
        from core.runtime.steering import SteerError, parse_action

        try:
            action = parse_action(request)
            self.control.steer(action)
        except SteerError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        if any(waiting is action for waiting in self.control.pending_steering):  # not taken at once
            self.notify(f"{action.describe()}: waits for the next barrier", timeout=4)
        self.refresh_all()

    def params_extra(self) -> str:
        waiting = len(self.control.pending_steering)
        return f"✎ {waiting} waiting for the barrier" if waiting else ""

    def action_cancel_run(self) -> None:
        if not self.model.running:
            self.notify("no run in progress", severity="warning")
            return
        self.control.cancel()

    def action_save(self) -> None:
        recorder = self.recorder
        if recorder.path is None:
            self.notify("nothing to save yet", severity="warning")
        elif recorder.save():
            self.notify(f"session saved: {recorder.path}")
        else:
            self.notify(recorder.error or "saving failed", severity="error")

    @property
    def exit_code(self) -> int:
        """What the process ends with: 1 when the run failed (no endpoint, a crash), as headless does."""
        failed = self.model.error or (self.model.finished is not None and self.model.finished.reason == EndReason.ERROR)
        return 1 if failed else 0

    def action_request_quit(self) -> None:
        if not self.model.running:
            self.app.exit(self.exit_code)
            return
        from .confirm import ConfirmScreen

        def answer(yes: bool) -> None:
            if yes:
                self.control.cancel()
                self.recorder.save()  # everything up to now, whatever the engine still emits
                self.app.exit(0)

        saved = f" in {self.recorder.path}" if self.recorder.path is not None else ""
        self.app.push_screen(ConfirmScreen(
            f"A swarm is still running. Quit? The run is cancelled; the session so far is kept{saved}.",
            on_answer=answer))

    def on_unmount(self, event: events.Unmount) -> None:  # the event: LiveCompareScreen prevents it
        self.control.cancel()


def _answering(screen: RunScreen, _event: ev.AgentDelta | ev.AgentFinished) -> None:
    warm_up = getattr(screen.app, "warm_up_embedder", None)
    if warm_up is not None:
        warm_up()


ANSWERING.on(ev.AgentDelta)(_answering)
ANSWERING.on(ev.AgentFinished)(_answering)

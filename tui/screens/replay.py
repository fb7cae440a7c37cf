"""Replay a recorded session through the same screen and handlers as a live run.

A cursor says how many recorded events have been applied. Forward steps apply more events through
``apply_event``; backward steps rebuild the model from the start up to the new cursor (folding a few
hundred events takes milliseconds). Changing tau or k_in shows what the recorded similarities would
have given: a HYPOTHETICAL graph, never mixed up with what happened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.config import ConfigError
from core.runtime.dispatch import of_kind, positions, without_deltas
from core.sessions.model import Session, SessionFormatError, session_from_events

from ..bindings import REPLAY_BINDINGS
from ..model import RunModel
from .replay_fork import fork_params, fork_settings
from .replay_play import Playback
from .replay_stops import earlier, later, phase_stops, round_end, round_stops
from .replay_whatif import WhatIf
from .steer import SteerScreen
from .swarm_view import SwarmScreen


class ReplayScreen(SwarmScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*REPLAY_BINDINGS]
    live = False

    def __init__(self, events: list[ev.Event], *, source: str = "", session: Any = None) -> None:
        super().__init__()
        self.events = events
        self.session = session  # core.sessions.model.Session, for core.sessions.whatif
        self.source = source
        self.cursor = 0
        self.playback = Playback(self)
        self.what_if = WhatIf()
        self.model.embeddings_ready = True
        self.tests_recorded = bool(of_kind(events, ev.TestRun))
        self.back_to: tuple[Any, Any] | None = None  # (the session picker it was opened from, the screen before)

    def on_mount(self) -> None:
        super().on_mount()
        self.seek(phase_stops(self.events)[0])  # the first phase shown whole (the end of a run without phases)

    def seek(self, position: int) -> None:
        """Show the run as it was after ``position`` events."""
        position = max(0, min(len(self.events), position))
        if position < self.cursor:
            self.model = RunModel()
            self.model.embeddings_ready = True
            self.cursor = 0
        for event in self.events[self.cursor : position]:
            self.apply_event(event, render=False)
        self.cursor = position
        if self.view_round is not None and self.view_round > self.model.current:
            self.view_round = None
        self.refresh_all()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            return self.back_to is not None  # esc only means something when a picker is below
        return super().check_action(action, parameters)

    def action_back(self) -> None:
        app: Any = self.app
        app.close_replay(self)

    def action_open_sessions(self) -> None:
        if self.back_to is not None:  # the picker it came from is right below
            self.action_back()
        else:
            super().action_open_sessions()

    def on_notice(self, event: ev.Notice) -> None:
        pass  # recorded notices are in the session; replaying them as toasts would only be noise

    # --- replay keys (tui.screens.replay_stops, replay_play) ------------------------------------
    def action_step_phase(self) -> None:
        self.seek(later(phase_stops(self.events), self.cursor, len(self.events)))

    def action_back_phase(self) -> None:
        self.seek(earlier(phase_stops(self.events), self.cursor, self.events))

    def action_step_round(self) -> None:
        self.seek(later(round_stops(self.events), self.cursor, len(self.events)))

    def action_back_round(self) -> None:
        self.seek(earlier(round_stops(self.events), self.cursor, self.events))

    def jump_to_round(self, number: int) -> None:
        """Show round ``number`` complete (everything before the next round starts)."""
        end = round_end(self.events, number)
        if end is None:
            rounds = len(positions(self.events, ev.RoundStarted))
            self.notify(f"no {self.model.unit} {number}: this session has {rounds}", severity="warning")
            return
        self.seek(end)

    def action_jump(self) -> None:
        def answer(value: int | None) -> None:
            if value is not None:
                self.jump_to_round(value)

        rounds = len(positions(self.events, ev.RoundStarted))
        self.app.push_screen(JumpScreen(rounds, self.model.unit), answer)

    def action_toggle_pause(self) -> None:
        self.playback.toggle()
        self.refresh_all()

    def action_speed(self, factor: float) -> None:
        self.playback.scale(factor)
        self.refresh_all()

    # --- what-if (tui.screens.replay_whatif) ----------------------------------------------------
    def action_tau(self, delta: float) -> None:
        self.what_if.change(self, tau=delta)
        self.refresh_all()

    def action_k_in(self, delta: int) -> None:
        self.what_if.change(self, k_in=delta)
        self.refresh_all()

    def graph_override(self) -> tuple[RoutingResult | None, str]:
        return self.what_if.graph(self.model, self.shown_round, self.session)

    def params_extra(self) -> str:
        state = "▶ playing" if self.playback.playing else "paused"
        extra = f"REPLAY {self.cursor}/{len(self.events)} · {state} · speed {self.playback.speed:g}x"
        whatif = self.what_if.values
        if whatif is not None:
            extra += f" · [b]HYPOTHETICAL tau {whatif[0]:.2f} k_in {whatif[1]}[/b]{self.what_if.summary(self.session)}"
        return extra

    def replay_status(self) -> str:
        if self.playback.playing:
            return f"replay playing ({self.playback.speed:g}x)"
        return "replay paused"

    def tests_state(self) -> str:
        return "on" if self.tests_recorded else ""  # a replay without test runs: nothing to say

    # --- export and fork (tui.screens.replay_fork) ------------------------------------------------
    def _session(self) -> Session | None:
        if self.session is None:
            try:
                self.session = session_from_events(without_deltas(self.events))
            except SessionFormatError:
                return None
        return self.session

    def export_source(self) -> tuple[Session | None, Path | None, str]:
        session = self._session()
        if session is None or not self.source:
            return None, None, "this replay has no session file to export"
        return session, Path(self.source), ""

    def action_fork(self) -> None:
        """Continue live from the viewed round (an endpoint, or the demo server with --demo)."""
        self.fork_from_here()

    def action_steer_fork(self) -> None:
        """Fork and compare in one action: pick a steering action for the round after the one viewed; the
        fork runs with it, and when it ends the compare screen opens with the original beside the fork."""
        session = self._session()
        if session is None:
            self.notify("this replay has no session to fork from", severity="warning")
            return
        round_no = self.shown_round
        context = self.steer_context(
            title=f"fork from {self.model.unit} {round_no} with a steering action, then compare with the original",
            round_no=round_no,
        )
        if context is None:
            self.notify(f"{self.model.strategy} takes no steering actions", severity="warning")
            return

        def chosen(request: dict[str, Any] | None) -> None:
            if request is None:
                return
            from core.runtime.steering import SteerError, parse_action

            try:
                action = parse_action({**request, "at_round": round_no + 1})
            except SteerError as exc:
                self.notify(str(exc), severity="error", timeout=8)
                return
            self.fork_from_here(steer=action)

        self.app.push_screen(SteerScreen(context), chosen)

    def fork_from_here(self, steer: Any = None) -> None:
        """Fork from the viewed round; ``steer`` (a core.runtime.steering.SteerAction): taken at the fork's
        first barrier, and the fork opens beside this session in the compare screen when it ends."""
        from core.sessions.fork import fork_on_demo, fork_point

        session = self._session()
        if session is None:
            self.notify("this replay has no session to fork from", severity="warning")
            return
        round_no = self.shown_round
        try:
            point = fork_point(session, round_no, self.source or session.metadata.run_id)
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            return
        app: Any = self.app
        try:
            params = fork_params(self.model, round_no, self.what_if.values)
            settings = fork_settings(app.settings, session, round_no, params)
        except ConfigError as exc:
            self.notify(f"cannot fork: {exc}", severity="error")
            return
        if round_no >= settings.max_rounds:
            self.notify(f"cannot fork from round {round_no}: no round left (max_rounds is {settings.max_rounds})",
                        severity="warning")
            return
        self.playback.stop()
        demo = fork_on_demo(session, app.demo, settings.base_url)
        if steer is None:
            app.start_fork(point, session.problem, settings, demo=demo)
        else:
            app.start_fork(point, session.problem, settings, steer=steer, demo=demo,
                           compare_with=Path(self.source) if self.source else None)

    def action_request_quit(self) -> None:
        self.app.exit(0)


class JumpScreen(ModalScreen[int | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "cancel", id="jump_cancel", tooltip="Close")]

    def __init__(self, rounds: int, unit: str = "round") -> None:
        super().__init__()
        self.rounds = rounds
        self.unit = unit  # the method's: round, step, turn

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"Jump to {self.unit} (1..{self.rounds}), enter to go, esc to cancel:", id="jump-label")
            yield Input(placeholder=f"{self.unit} number", type="integer", id="jump-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            self.dismiss(int(event.value))
        except ValueError:
            self.dismiss(None)

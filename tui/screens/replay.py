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
from textual.timer import Timer
from textual.widgets import Input, Label

from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.config import ConfigError
from core.runtime.dispatch import of_kind, positions, without_deltas
from core.runtime.teams import with_recorded_team
from core.sessions.model import Session, SessionFormatError, session_from_events

from ..bindings import REPLAY_BINDINGS
from ..model import RunModel, reroute
from .steer import SteerScreen
from .swarm_view import SwarmScreen

BASE_STEP_S = 0.4  # one event every 0.4 s at speed 1
MAX_SPEED, MIN_SPEED = 64.0, 0.25


class ReplayScreen(SwarmScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*REPLAY_BINDINGS]
    live = False

    def __init__(self, events: list[ev.Event], *, source: str = "", session: Any = None) -> None:
        super().__init__()
        self.events = events
        self.session = session  # core.sessions.model.Session, for core.sessions.whatif
        self.source = source
        self.cursor = 0
        self.speed = 1.0
        self.playing = False
        self._timer: Timer | None = None
        self.whatif: tuple[float, int] | None = None  # (tau, k_in) of the what-if, or None
        self.model.embeddings_ready = True
        self.tests_recorded = bool(of_kind(events, ev.TestRun))
        self.back_to: tuple[Any, Any] | None = None  # (the session picker it was opened from, the screen before)

    def on_mount(self) -> None:
        super().on_mount()
        self.seek(self._phase_stops()[0] if self._phase_stops() else len(self.events))

    # --- positions ----------------------------------------------------------------------------
    def _phase_stops(self) -> list[int]:
        """Cursor positions that end a phase: just before each phase or round starts, and the end."""
        stops = [i for i in positions(self.events, ev.PhaseStarted, ev.RoundStarted) if i > 1]
        return [*stops, len(self.events)]

    def _round_stops(self) -> list[int]:
        """Cursor positions that end a round: just before each next round starts, and the end."""
        stops = [i for i in positions(self.events, ev.RoundStarted) if i > 0]
        return [*stops, len(self.events)]

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

    # --- replay keys --------------------------------------------------------------------------
    def action_step_phase(self) -> None:
        self.seek(next((s for s in self._phase_stops() if s > self.cursor), len(self.events)))

    def _first_frame(self) -> int:
        """Stepping back stops once the run has started (before that the screen would be empty)."""
        return min(1, len(self.events))

    def action_back_phase(self) -> None:
        self.seek(max((s for s in self._phase_stops() if s < self.cursor), default=self._first_frame()))

    def action_step_round(self) -> None:
        self.seek(next((s for s in self._round_stops() if s > self.cursor), len(self.events)))

    def action_back_round(self) -> None:
        self.seek(max((s for s in self._round_stops() if s < self.cursor), default=self._first_frame()))

    def jump_to_round(self, number: int) -> None:
        """Show round ``number`` complete (everything before the next round starts)."""
        starts = positions(self.events, ev.RoundStarted)
        if not 1 <= number <= len(starts):
            self.notify(f"no {self.model.unit} {number}: this session has {len(starts)}", severity="warning")
            return
        self.seek(starts[number] if number < len(starts) else len(self.events))

    def action_jump(self) -> None:
        def answer(value: int | None) -> None:
            if value is not None:
                self.jump_to_round(value)

        rounds = len(positions(self.events, ev.RoundStarted))
        self.app.push_screen(JumpScreen(rounds, self.model.unit), answer)

    def action_toggle_pause(self) -> None:
        self.playing = not self.playing
        if self.playing and self.cursor >= len(self.events):
            self.seek(0)
        self._schedule()
        self.refresh_all()

    def action_speed(self, factor: float) -> None:
        self.speed = max(MIN_SPEED, min(MAX_SPEED, self.speed * factor))
        self._schedule()
        self.refresh_all()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.playing:
            self._timer = self.set_interval(BASE_STEP_S / self.speed, self._play_tick)

    def _play_tick(self) -> None:
        if self.cursor >= len(self.events):
            self.playing = False
            self._schedule()
            self.refresh_all()
            return
        self.seek(self.cursor + 1)

    # --- what-if ------------------------------------------------------------------------------
    def _recorded(self) -> RoutingResult | None:
        rv = self.model.round_view(self.shown_round)
        return rv.routing if rv is not None else None

    def action_tau(self, delta: float) -> None:
        self._whatif(tau=delta)

    def action_k_in(self, delta: int) -> None:
        self._whatif(k_in=delta)

    def _whatif(self, tau: float = 0.0, k_in: int = 0) -> None:
        if self.session is not None:
            from core.sessions.whatif import what_if_refusal

            refusal = what_if_refusal(self.session)
            if refusal:
                self.notify(refusal, severity="warning")
                return
        base = self._recorded()
        rv = self.model.round_view(self.shown_round)
        if base is not None:
            recorded, n = (base.tau, base.k_in), len(base.names)
        elif rv is not None and rv.params:
            # A broadcast round (round 1) has no graph of its own; the values still apply to the
            # later rounds' what-if and to a fork from here.
            recorded, n = (float(rv.params["tau"]), int(rv.params["k_in"])), len(self.model.workers)
        else:
            self.notify("no round to re-route yet", severity="warning")
            return
        cur_tau, cur_k = self.whatif or recorded
        new = (round(min(1.0, max(0.0, cur_tau + tau)), 2), min(max(1, n - 1), max(1, cur_k + k_in)))
        self.whatif = None if new == recorded else new
        if base is None and self.whatif is not None:
            self.notify(f"round {self.shown_round} was a broadcast (no graph): the what-if shows in later rounds "
                        "and a fork from here uses it", timeout=4)
        self.refresh_all()

    def graph_override(self) -> tuple[RoutingResult | None, str]:
        base = self._recorded()
        if self.whatif is None or base is None:
            return None, ""
        tau, k_in = self.whatif
        if self.session is not None:
            from core.sessions.whatif import reroute_round

            record = next((r for r in self.session.rounds if r.round == self.shown_round), None)
            diff = reroute_round(self.session, record, tau, k_in) if record is not None else None
            if diff is not None:
                return diff.rerouted, "HYPOTHETICAL"
        return reroute(base, tau, k_in, self.model.protocol), "HYPOTHETICAL"

    def _whatif_summary(self) -> str:
        """Across the whole session: how many messages would have flowed differently."""
        if self.session is None or self.whatif is None:
            return ""
        from core.sessions.whatif import reroute_session

        diffs = reroute_session(self.session, *self.whatif)
        added = sum(len(d.added) for d in diffs)
        removed = sum(len(d.removed) for d in diffs)
        return f" (all rounds: +{added} −{removed} edges)"

    def params_extra(self) -> str:
        state = "▶ playing" if self.playing else "paused"
        extra = f"REPLAY {self.cursor}/{len(self.events)} · {state} · speed {self.speed:g}x"
        if self.whatif is not None:
            extra += f" · [b]HYPOTHETICAL tau {self.whatif[0]:.2f} k_in {self.whatif[1]}[/b]{self._whatif_summary()}"
        return extra

    def replay_status(self) -> str:
        if self.playing:
            return f"replay playing ({self.speed:g}x)"
        return "replay paused"

    def tests_state(self) -> str:
        return "on" if self.tests_recorded else ""  # a replay without test runs: nothing to say

    # --- export and fork ----------------------------------------------------------------------
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

    def fork_params(self) -> tuple[float, int, int]:
        """tau, k_in and max_rounds for a fork: the what-if values when set, else what the viewed
        round ran with."""
        rv = self.model.round_view(self.shown_round)
        params = rv.params if rv is not None and rv.params else self.model.params
        tau, k_in = float(params.get("tau", 0.3)), int(params.get("k_in", 3))
        if rv is not None and rv.routing is not None:
            tau, k_in = rv.routing.tau, rv.routing.k_in  # a mid-round change re-routed with these
        if self.whatif is not None:
            tau, k_in = self.whatif
        return tau, k_in, int(params.get("max_rounds", 5))

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
        tau, k_in, max_rounds = self.fork_params()
        app: Any = self.app
        try:
            settings = app.settings.with_overrides(
                domain=session.domain, protocol=session.metadata.protocol, tau=tau, k_in=k_in,
                max_rounds=min(10, max(max_rounds, round_no + 1)),
            )
            settings = with_recorded_team(settings, session.metadata.team)  # the fork goes on with the run's team
        except ConfigError as exc:
            self.notify(f"cannot fork: {exc}", severity="error")
            return
        if round_no >= settings.max_rounds:
            self.notify(f"cannot fork from round {round_no}: no round left (max_rounds is {settings.max_rounds})",
                        severity="warning")
            return
        self.playing = False
        self._schedule()
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

"""Runtime control of a running swarm: pause/resume, step by phase or round, cancel, live parameters.

The engine calls ``checkpoint()`` at every phase boundary. In auto mode it passes straight through; in
step mode it waits until the user grants a step. All methods are called from the engine's event loop
(the TUI runs the engine in its own loop), so plain asyncio primitives suffice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from core.runtime.steering import SteerAction, SteerError, SteerKind, SteerWhen


class ControlMode(StrEnum):
    """Auto runs straight through; step waits at each boundary for the user's go."""

    AUTO = "auto"
    STEP = "step"


class ControlStatus(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    STEPPING = "stepping"


class StepBoundary(StrEnum):
    """Where a stepping run stops next: at the next phase, or only at the next round's start."""

    PHASE = "phase"
    ROUND = "round"


@dataclass(frozen=True)
class Params:
    tau: float
    k_in: int
    max_rounds: int

    def as_dict(self) -> dict[str, float | int]:
        return {"tau": self.tau, "k_in": self.k_in, "max_rounds": self.max_rounds}


class RunControl:
    def __init__(self, params: Params, n_workers: int, *, mode: ControlMode = ControlMode.AUTO) -> None:
        self._params = params
        self._n_workers = n_workers
        self.mode: ControlMode = mode
        self._wake = asyncio.Event()
        self._pass_current = False  # let the engine past the checkpoint it is waiting at
        self._stop_at = StepBoundary.PHASE  # in step mode: stop at the next phase, or only at a round start
        self.waiting = False  # True while the engine sits at a checkpoint
        self.cancelled = False
        self.stop_reason = ""  # set when a steering "stop" ended the run (RunFinished's detail)
        self.cancel_hook: Callable[[], None] | None = None
        self.reroute_hook: Callable[[], bool] | None = None  # set by the engine; False if too late
        self.on_change: Callable[[ControlStatus], None] | None = None  # engine emits a ControlChanged event
        self.on_params: Callable[[Params, list[str]], None] | None = None  # engine emits ParamsChanged
        # Steering (core.runtime.steering): the method sets steer_hook, which applies one action and returns
        # "" or the one-line reason it refuses it (None: not yet, keep it for the next barrier); the engine
        # sets on_steered (it emits UserSteered).
        self.steer_hook: Callable[[SteerAction], str | None] | None = None
        self.on_steered: Callable[[SteerAction, str], None] | None = None
        self.no_steering = "this method takes no steering actions"  # the refusal when no hook is set
        self._steer_queue: list[SteerAction] = []
        self.at_barrier = False  # True while the engine is at a checkpoint (actions apply at once)
        self.barrier_round = 0  # the round a checkpoint stands before (the next round at a round boundary)
        self.ended = False  # the run has finished: steering is refused

    # --- status -------------------------------------------------------------------------------
    @property
    def params(self) -> Params:
        return self._params

    @property
    def status(self) -> ControlStatus:
        if self.mode == ControlMode.AUTO:
            return ControlStatus.RUNNING
        return ControlStatus.PAUSED if self.waiting and not self._pass_current else ControlStatus.STEPPING

    def _changed(self) -> None:
        self._wake.set()
        if self.on_change:
            self.on_change(self.status)

    # --- user commands ------------------------------------------------------------------------
    def pause(self) -> None:
        """Stop at the next phase boundary."""
        self.mode = ControlMode.STEP
        self._stop_at = StepBoundary.PHASE
        self._changed()

    def resume(self) -> None:
        """Back to auto-run."""
        self.mode = ControlMode.AUTO
        self._pass_current = self.waiting
        self._changed()

    def toggle_pause(self) -> None:
        if self.mode == ControlMode.AUTO:
            self.pause()
        else:
            self.resume()

    def step_phase(self) -> None:
        """Run one phase, then wait at the next boundary. While running freely: stop at the next one."""
        self.mode = ControlMode.STEP
        self._stop_at = StepBoundary.PHASE
        self._pass_current = self.waiting
        self._changed()

    def step_round(self) -> None:
        """Run until the start of the next round, then wait."""
        self.mode = ControlMode.STEP
        self._stop_at = StepBoundary.ROUND
        self._pass_current = self.waiting
        self._changed()

    def cancel(self, *, let_running_finish: bool = False) -> None:
        """End the run. ``let_running_finish``: the calls already under way complete and the run ends at its
        next checkpoint (a call budget spent); otherwise they are cancelled now (the user, a time budget)."""
        if self.cancelled:
            return
        self.cancelled = True
        self._wake.set()
        if self.cancel_hook and not let_running_finish:
            self.cancel_hook()

    def stop(self, why: str = "stopped by the user: the run ends with the best answer so far") -> None:
        """End the run as a steering "stop": at a barrier it ends there (the calls are done), otherwise the
        calls in flight are cancelled now (their tokens count, as any cut-off call's)."""
        self.stop_reason = why
        self.cancel(let_running_finish=self.at_barrier)

    def set_params(self, *, tau: float | None = None, k_in: int | None = None, max_rounds: int | None = None) -> Params:
        """Clamp to the valid ranges; applies at the next routing (or now, with reroute_now)."""
        old = self._params
        new = Params(
            tau=round(min(1.0, max(0.0, old.tau if tau is None else tau)), 4),
            k_in=min(max(1, self._n_workers - 1), max(1, old.k_in if k_in is None else k_in)),
            max_rounds=min(10, max(1, old.max_rounds if max_rounds is None else max_rounds)),
        )
        changed = [name for name in ("tau", "k_in", "max_rounds") if getattr(old, name) != getattr(new, name)]
        if changed:
            self._params = new
            if self.on_params:
                self.on_params(new, changed)
        return new

    def reroute_now(self) -> bool:
        """Recompute the current round's graph with the current parameters, if its work has not begun."""
        return bool(self.reroute_hook and self.reroute_hook())

    def steer(self, action: SteerAction) -> None:
        """Take a steering action. At a barrier (the run waits at a checkpoint) it applies at once; an
        action that says ``when: "now"`` is handed to the method at once (it cancels and re-asks a call in
        flight where it can); otherwise it waits for the next barrier, or for the barrier before its
        ``at_round``. A method may keep an action for a later barrier (a plan edit waits for the plan it
        edits). Each one ends as one UserSteered event, taken or refused. After the run ended there is no
        stream to record it in: SteerError, one line."""
        if self.ended:
            raise SteerError(f"the run has ended: {action.describe()} was not taken")
        at_once = (self.at_barrier and self._due(action)) or (action.when == SteerWhen.NOW and action.at_round is None)
        if not (at_once and self._apply(action)):
            self._steer_queue.append(action)

    @property
    def pending_steering(self) -> list[SteerAction]:
        """Actions waiting for their barrier, oldest first."""
        return list(self._steer_queue)

    def _due(self, action: SteerAction) -> bool:
        return action.at_round is None or action.at_round <= self.barrier_round

    def _apply(self, action: SteerAction) -> bool:
        """Hand one action to the method; False when it keeps it for a later barrier (no event yet)."""
        if self.steer_hook is not None:
            reason = self.steer_hook(action)
            if reason is None:
                return False
        elif action.action is SteerKind.STOP:  # every method can be stopped: no hook needed for it
            self.stop()
            reason = ""
        else:
            reason = self.no_steering
        if self.on_steered is not None:
            self.on_steered(action, reason)
        return True

    def _apply_due(self) -> None:
        queue, self._steer_queue = self._steer_queue, []
        for action in queue:
            if not (self._due(action) and self._apply(action)):
                self._steer_queue.append(action)

    def end_steering(self) -> None:
        """The run is over: what still waited for a barrier is refused (one event each), later ones raise."""
        waiting, self._steer_queue = self._steer_queue, []
        self.ended = True
        for action in waiting:
            if self.on_steered is not None:
                self.on_steered(action, "the run ended before the barrier it waited for")

    # --- engine side --------------------------------------------------------------------------
    async def checkpoint(self, boundary: StepBoundary, round_no: int = 0) -> None:
        """Called by the engine between phases; returns when the engine may go on. ``round_no``: the round
        this barrier stands before (a round boundary) or in; steering actions due by then apply here."""
        self.barrier_round = round_no
        self.at_barrier = True
        try:
            await self._wait_at(boundary)
        finally:
            self.at_barrier = False

    async def _wait_at(self, boundary: StepBoundary) -> None:
        while True:
            if self.cancelled:
                # A cancel asked from inside the run's own task (a sink reacting to an event) is delivered at
                # its next suspension: take it here, so none is left pending after the run has ended.
                await asyncio.sleep(0)
                raise asyncio.CancelledError
            self._apply_due()
            if self.cancelled:  # a stop action ends the run here
                raise asyncio.CancelledError
            if self._pass_current:
                self._pass_current = False
                return
            if self.mode == ControlMode.AUTO:
                return
            if self._stop_at == StepBoundary.ROUND and boundary != StepBoundary.ROUND:
                return
            self.waiting = True
            self._wake.clear()
            if self.on_change:
                self.on_change(self.status)
            try:
                await self._wake.wait()
            finally:
                self.waiting = False

"""Steering a debate at the round barrier: a note (to one debater or to all) joins that debater's next
request; stop ends the run after the round in flight, with the majority so far. The debate has no graph to
pin or cut and no Manager to give a goal: those are refused with the reason (MethodInfo.steering_why)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.methods.steer_checks import refusal
from core.runtime.steering import ALL, SteerAction, SteerKind

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


class DebateSteering:
    def __init__(self, ctx: RunContext, method: str, names: list[str]) -> None:
        self.ctx, self.method, self.names = ctx, method, names
        self._notes: dict[str, list[str]] = {}

    def apply(self, action: SteerAction) -> str:
        """"" when taken, else the one-line reason (the checks every method makes come first)."""
        why = refusal(self.method, action, self.names)
        if why:
            return why
        if action.action is SteerKind.STOP:
            self.ctx.stop()
        elif action.action is SteerKind.NOTE:
            text = action.text.strip()
            if not text:
                return "an empty note: nothing to send"
            for name in self.names if action.to == ALL else [action.to]:
                self._notes.setdefault(name, []).append(text)
        return ""

    def take_notes(self, name: str) -> list[str]:
        """The notes waiting for ``name``'s next call (used up)."""
        return self._notes.pop(name, [])

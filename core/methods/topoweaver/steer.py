"""Steering TopoWeaver-R1: edit the Orchestrator's plan (YAML) between the barrier where a turn's plan is
shown and its first step. The edit goes through the method's own validator (the paper's four stages): a
broken plan is refused with the validator's tag, rule and line, and the Orchestrator's plan stays. An edit
taken at any other barrier waits for the next plan (docs/steering.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from core.methods.steer_checks import refusal
from core.methods.topoweaver.plan import Validation, validate_yaml
from core.runtime.steering import SteerAction, SteerKind

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


def unfenced(text: str) -> str:
    """The plan inside one ```yaml fence that holds the whole text (a pasted block), else the text as typed."""
    lines = text.strip().splitlines()
    if len(lines) >= 2 and lines[0].lstrip().startswith(("```", "~~~")) and lines[-1].strip() in ("```", "~~~"):
        return "\n".join(lines[1:-1])
    return text


class TopoWeaverSteering:
    def __init__(self, ctx: RunContext, method: str, on_plan: Callable[[int, Validation], None]) -> None:
        self.ctx, self.method = ctx, method
        self.on_plan = on_plan  # the method runs and shows the user's plan (turn, its validation)
        self.turn = 0  # the turn whose plan waits to run (0: none)
        self.earlier: dict[int, list[str]] = {}  # turn -> agents that ran (what refs may name)

    def apply(self, action: SteerAction) -> str | None:
        why = refusal(self.method, action, [])
        if why:
            return why
        if action.action is SteerKind.STOP:
            self.ctx.stop()
            return ""
        if not self.turn or not self.ctx.state.at_barrier:
            return None  # no plan waits to run: the edit waits for the next one
        if not action.text.strip():
            return "an empty plan: the Orchestrator's plan stays"
        # The edited text whole: a junk line anywhere is the user's, not a reply's chatter to skip.
        validation = validate_yaml(unfenced(action.text), domain=self.ctx.spec.team.name, turn=self.turn,
                                   earlier=self.earlier)
        if not validation.valid:
            return f"the edited plan is invalid, {validation.badge()}; the Orchestrator's plan stays"
        self.on_plan(self.turn, validation)
        return ""


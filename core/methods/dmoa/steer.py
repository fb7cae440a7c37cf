"""Steering DMoA: force an agent into the next step or keep it out, and send a note to the next step.

Force and exclude change the router's choice of the next step only (its alpha is taken again over the
agents that then run, eq. 7); a note to "all" reaches every agent of the next step, a note to one agent
waits for the next step it runs in, as a block after its request (docs/steering.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from core.methods.dmoa.routing import alpha_weights
from core.methods.steer_checks import refusal
from core.runtime.run_context import notice
from core.runtime.steering import ALL, SteerAction, SteerKind

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

USER = "User"


class DmoaSteering:
    def __init__(self, ctx: RunContext, method: str, names: list[str]) -> None:
        self.ctx, self.method, self.names = ctx, method, names
        self.force: set[str] = set()
        self.exclude: set[str] = set()
        self.notes: dict[str, list[str]] = {}
        self._to_all: list[str] = []  # notes for every agent of the next step
        self._this_step: list[str] = []  # those notes, once the step began

    def apply(self, action: SteerAction) -> str:
        why = refusal(self.method, action, self.names)
        if why:
            return why
        kind, name = action.action, action.agent
        if kind is SteerKind.STOP:
            self.ctx.stop()
        elif kind is SteerKind.FORCE:
            self._overrides(name, self.exclude, "force", "exclude")
            self.force.add(name)
        elif kind is SteerKind.EXCLUDE:
            if not set(self.names) - self.exclude - {name}:
                return f"cannot exclude {name}: no agent would be left to run"
            self._overrides(name, self.force, "exclude", "force")
            self.exclude.add(name)
        elif kind is SteerKind.NOTE:
            if not action.text.strip():
                return "an empty note: nothing to send"
            if action.to == ALL:
                self._to_all.append(action.text.strip())
            else:
                self.notes.setdefault(action.to, []).append(action.text.strip())
        return ""

    def _overrides(self, name: str, earlier: set[str], now: str, before: str) -> None:
        """Force and exclude of one agent for the same step: the later wins, and the user is told so."""
        if name in earlier:
            earlier.discard(name)
            notice(self.ctx, f"{now} {name} replaces the earlier {before} of {name}: the later action wins",
                   "info", name)

    def steer_choice(self, choice: Any, step: int) -> Any:
        """The router's choice for this step with the user's force and exclude applied (used up)."""
        self._this_step, self._to_all = self._to_all, []
        if not self.force and not self.exclude:
            return choice
        index = {name: i for i, name in enumerate(self.names)}
        selected = [i for i in choice.selected if self.names[i] not in self.exclude]
        selected += [index[name] for name in sorted(self.force) if index[name] not in selected]
        if not selected:  # everything the router chose was excluded and nothing forced: its best one runs
            selected = list(choice.selected[:1])
        what = [f"forced {name}" for name in sorted(self.force)] + [f"excluded {name}" for name in sorted(self.exclude)]
        self.force, self.exclude = set(), set()
        note = "; ".join(n for n in (choice.note, f"by the user: {', '.join(what)}") if n)
        return replace(choice, selected=selected, k=len(selected), alpha=alpha_weights(choice.logits, selected),
                       note=note)

    def carry(self, to_all: list[str], waiting: dict[str, list[str]]) -> None:
        """Notes the recorded run took before a fork's point that no call had read yet: they reach the fork's
        next step (to all) or the agent's next call, as they would have reached the recorded run's."""
        self._to_all = [*to_all, *self._to_all]
        for name, notes in waiting.items():
            self.notes[name] = [*notes, *self.notes.get(name, [])]

    def note_block(self, name: str) -> str:
        """The user's notes for this agent's call of this step, as a block after its request ("" if none)."""
        notes = [*self._this_step, *self.notes.pop(name, [])]
        if not notes:
            return ""
        return "\n\n".join(f"A NOTE FROM {USER}, the person running this team:\n{text}" for text in notes)

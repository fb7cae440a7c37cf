"""The run and replay screens' keys in the run's own words: what n, N, ◀ ▶ step over is DyTopo's phase and
round, DMoA's phase and step, TopoWeaver-R1's step and turn, TopoDIM's call and step, single's call.

tui/bindings.py lists every key once, worded for DyTopo. A key whose label or tooltip depends on the method is
one entry of UNIT_LABELS (its binding id -> its words for a method); ``relabelled`` gives a screen its own
copy of its bindings in those words, so the footer, the help screen and the keymap (by id) all follow. Which
keys a method has no use for is ``hidden_for`` (a screen's check_action asks it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from textual.binding import Binding, BindingsMap

SHORT = {"round": "rnd"}  # the footer's short form of a unit (the others are short already)


# What s offers, in its help: a method's steering actions (core.runtime.steering.SteerKind values), in the
# order the dialog lists them, each group said once.
STEER_WORDS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"note"}), "a note to the focused agent (type, enter)"),
    (frozenset({"goal"}), "a new goal"),
    (frozenset({"pin", "cut"}), "pin or cut an edge"),
    (frozenset({"silence"}), "silence an agent"),
    (frozenset({"retry", "replace"}), "retry or replace a turn"),
    (frozenset({"plan"}), "edit the Orchestrator's plan"),
    (frozenset({"edge_add", "edge_remove"}), "add or remove a typed edge"),
    (frozenset({"force", "exclude"}), "force or exclude an agent"),
    (frozenset({"stop"}), "stop"),
)
DYTOPO_STEERING = ("note", "goal", "pin", "cut", "silence", "retry", "replace", "stop")


@dataclass(frozen=True)
class Words:
    unit: str = "round"  # what N steps over and ◀ ▶ browse: round, step, turn, call
    substep: str = "phase"  # what n steps over: phase, call, step
    steering: tuple[str, ...] = DYTOPO_STEERING  # the steering actions the method takes
    uses_tau: bool = True  # its graph's edges are removed by k_in and cycle breaking (else by the method)

    def steer_list(self) -> str:
        """The method's steering actions in a few words: "a note to …, a new goal, pin or cut an edge, … stop"."""
        return ", ".join(words for kinds, words in STEER_WORDS if kinds & set(self.steering))

    def steer_help(self) -> str:
        if set(self.steering) <= {"stop"}:
            return "Stop the run at the next barrier with the best answer so far"
        return f"Steer the team: {self.steer_list()} (applies at the next barrier)"

    @property
    def removed_help(self) -> str:
        if self.uses_tau:
            return "Show the edges removed by k_in or cycle breaking, dimmed, with the reason"
        return "Show the edges taken out of the graph (by the method, or your cuts and silences), dimmed, with why"

    @property
    def short(self) -> str:
        return SHORT.get(self.unit, self.unit)


def words_for(info: Any) -> Words:
    """A core.methods.registry.MethodInfo's words (DyTopo's for a method this version does not know)."""
    if info is None:
        return Words()
    steering = tuple(str(kind.value) for kind in info.steering)
    return Words(info.unit, info.substep, steering, bool(info.uses_tau))


# binding id -> (footer label, help text) in a method's words. A new method-worded key is one entry here.
UNIT_LABELS: dict[str, Callable[[Words], tuple[str, str]]] = {
    # the run screen
    "step_phase": lambda w: (w.substep, f"Run one {w.substep}, then wait (step mode)"),
    "step_round": lambda w: (w.unit, f"Run until the next {w.unit} starts, then wait"),
    "pause": lambda w: ("pause", f"Pause at the next {w.substep} boundary, or resume auto-run"),
    "auto_run": lambda w: ("auto", f"Auto-run: stop waiting between {w.substep}s"),
    "prev_round": lambda w: (f"◀{w.short}", f"Look back: the previous {w.unit}'s outputs and graph (the run goes on)"
                             if w.unit != "round" else
                             "Look back: the previous round's graph, outputs and goal (the run goes on)"),
    "next_round": lambda w: (f"{w.short}▶", f"Next {w.unit}; past the last one: back to live"),
    "steer": lambda w: ("steer", w.steer_help()),
    "toggle_removed": lambda w: ("removed", w.removed_help),
    "agent_inbox": lambda w: ("inbox", f"What the focused agent received in the {w.unit} shown: its inbox "
                                       "(sender, score, message)"),
    "replay_steer_fork": lambda w: ("steer fork", f"Fork from this {w.unit} with a steering action "
                                                  f"({w.steer_list()}); when the fork ends, the compare screen "
                                                  "shows it beside the original"),
    # the replay screen
    "replay_next_phase": lambda w: (f"{w.substep}▶", f"Replay up to the next {w.substep}"),
    "replay_prev_phase": lambda w: (f"◀{w.substep}", f"Step back one {w.substep}"),
    "replay_next_round": lambda w: (f"{w.unit}▶", f"Replay up to the next {w.unit}"),
    "replay_prev_round": lambda w: (f"◀{w.unit}", f"Step back one {w.unit}"),
    "replay_jump": lambda w: ("jump", f"Jump to a {w.unit}"),
}
# The replay's ◀ ▶ keys share the run screen's ids; their help text there says "follow", not "live".
REPLAY_TOOLTIPS: dict[str, Callable[[Words], str]] = {
    "prev_round": lambda w: f"Look at an earlier {w.unit}",
    "next_round": lambda w: f"Next {w.unit}; past the last one: follow",
}

UNIT_ACTIONS = frozenset({"step_round", "back_round"})  # N, B: a whole unit
BROWSE_ACTIONS = frozenset({"browse", "jump"})  # ◀ ▶ and j: between units
GRAPH_ACTIONS = frozenset({"toggle_matrix", "toggle_removed"})  # g, d: the graph pane's views
ONE_AGENT_ACTIONS = GRAPH_ACTIONS | {"inbox"}  # a lone agent has no graph and receives nothing


def relabel(binding: Binding, words: Words, *, replay: bool = False) -> Binding:
    """``binding`` in ``words`` (itself when its words do not depend on the method)."""
    label = UNIT_LABELS.get(binding.id or "")
    if label is None:
        return binding
    description, tooltip = label(words)
    if replay and binding.id in REPLAY_TOOLTIPS:
        tooltip = REPLAY_TOOLTIPS[binding.id](words)
    return replace(binding, description=description, tooltip=tooltip)


def relabelled(bindings: BindingsMap, words: Words, *, replay: bool = False) -> BindingsMap:
    """A copy of a screen's bindings (its class's, merged) in ``words``."""
    out = bindings.copy()
    for key, listed in out.key_to_bindings.items():
        out.key_to_bindings[key] = [relabel(b, words, replay=replay) for b in listed]
    return out


def hidden_for(action: str, words: Words, *, units: int | None, one_agent: bool) -> bool:
    """Whether a key does nothing for the run's method, so the footer and the help leave it out.
    ``units``: the most units the run takes (None: it counts none, single's one call); ``one_agent``: the
    run has a single agent (no graph, no Manager)."""
    if action in UNIT_ACTIONS and words.unit == words.substep:
        return True  # single: a call is both; n already steps it
    if action in BROWSE_ACTIONS and (units is None or units <= 1):
        return True  # one unit at most: nothing to browse between
    return action in ONE_AGENT_ACTIONS and one_agent

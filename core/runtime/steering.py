"""Steering a run while it goes: the actions a person (the TUI, a control file, an MCP client) can take.

An action is plain data (``SteerAction``). ``RunControl.steer`` queues it to the next barrier (any phase
boundary) or hands it over at once when it says ``when: "now"``; the method that hosts the run applies it
through the one hook it sets on the control and says, in one line, why when it refuses. Every action,
taken or refused, becomes one ``UserSteered`` event. docs/steering.md has the rules and the actions each
method takes.

The control file (``--control FILE``) holds one JSON object per line in the schema ``parse_action`` reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from core.llm.urls import redact_url


class SteerKind(StrEnum):
    NOTE = "note"  # a message from the user into an agent's next call (or every agent's)
    GOAL = "goal"  # replace the goal of the round about to run
    PIN = "pin"  # keep the edge src→dst in every graph whatever its score
    CUT = "cut"  # keep src→dst out of every graph
    RELEASE = "release"  # undo a pin or a cut
    SILENCE = "silence"  # no calls and no edges for an agent
    RESTORE = "restore"  # undo a silence
    RETRY = "retry"  # ask an agent again for the round just finished
    REPLACE = "replace"  # replace an agent's output of the round just finished by hand
    STOP = "stop"  # end now with the best answer so far
    CONTINUE = "continue"  # veto the Manager's next termination: one more round
    PLAN = "plan"  # TopoWeaver-R1: a new plan (YAML) for the Orchestrator's next turn
    EDGE_ADD = "edge_add"  # TopoDIM: add a typed edge to the one-shot graph before it executes
    EDGE_REMOVE = "edge_remove"  # TopoDIM: remove one
    FORCE = "force"  # DMoA: select this agent at the next step
    EXCLUDE = "exclude"  # DMoA: keep this agent out of the next step
    AGENT = "agent"  # change an agent's model, endpoint or temperature from the next round on


# What DyTopo's round loop takes (it and the graph baselines that run it), and what only a routed graph takes.
ROUND_ACTIONS = frozenset({
    SteerKind.NOTE, SteerKind.GOAL, SteerKind.SILENCE, SteerKind.RESTORE, SteerKind.RETRY, SteerKind.REPLACE,
    SteerKind.STOP, SteerKind.CONTINUE, SteerKind.AGENT,
})
GRAPH_ACTIONS = frozenset({SteerKind.PIN, SteerKind.CUT, SteerKind.RELEASE})

class SteerWhen(StrEnum):
    """When a steering action takes effect: at the next barrier, or now (mid-round)."""

    NEXT = "next"
    NOW = "now"


ALL = "all"  # a note's ``to`` for every agent

# What each action needs, as the control file spells it (the key after "action").
_EDGE = ("src", "dst")
REQUIRED: dict[SteerKind, tuple[str, ...]] = {
    SteerKind.NOTE: ("to", "text"),
    SteerKind.GOAL: ("text",),
    SteerKind.PIN: _EDGE,
    SteerKind.CUT: _EDGE,
    SteerKind.RELEASE: _EDGE,
    SteerKind.SILENCE: ("agent",),
    SteerKind.RESTORE: ("agent",),
    SteerKind.RETRY: ("agent",),
    SteerKind.REPLACE: ("agent", "text"),
    SteerKind.STOP: (),
    SteerKind.CONTINUE: (),
    SteerKind.PLAN: ("text",),
    SteerKind.EDGE_ADD: (*_EDGE, "type"),
    SteerKind.EDGE_REMOVE: _EDGE,
    SteerKind.FORCE: ("agent",),
    SteerKind.EXCLUDE: ("agent",),
    SteerKind.AGENT: ("agent",),
}
# Optional keys beyond "action" and "at_round".
OPTIONAL: dict[SteerKind, tuple[str, ...]] = {
    SteerKind.NOTE: ("when",),
    SteerKind.STOP: ("when",),  # now: the calls in flight are cancelled (their tokens count)
    SteerKind.PIN: ("rounds",),
    SteerKind.CUT: ("rounds",),
    SteerKind.AGENT: ("model", "endpoint", "temperature"),
}
# Keys that ride in SteerAction.payload rather than a field of their own.
PAYLOAD_KEYS = ("type", "model", "endpoint", "temperature")
_TEXT_KEYS = ("to", "agent", "src", "dst", "text", "type", "model", "endpoint")


class SteerError(ValueError):
    """A steering action that cannot be read or taken; the message is one line fit to show a user."""


@dataclass(frozen=True)
class SteerAction:
    action: SteerKind
    to: str = ""  # a note's recipient: an agent, or "all"
    agent: str = ""  # the agent a silence/restore/retry/replace/force/exclude/agent action is about
    src: str = ""  # an edge's provider (pin, cut, release, edge_add, edge_remove)
    dst: str = ""  # an edge's consumer
    text: str = ""  # a note's, a goal's, a replaced output's or a plan's text
    when: SteerWhen = SteerWhen.NEXT  # a note: the agent's next call, or now (its call in flight again)
    rounds: int | None = None  # a pin or cut: for this many graphs; None until released
    at_round: int | None = None  # the control file's: at the barrier before this round; None: the next barrier
    payload: dict[str, Any] = field(default_factory=dict, hash=False)  # type, model, endpoint, temperature

    @property
    def target(self) -> str:
        """Whom or what the action is about, as the event and the TUI show it: "Tester", "all",
        "Developer→Tester", or "" (stop, continue, goal, plan)."""
        if self.src or self.dst:
            return f"{self.src}→{self.dst}"
        return self.to or self.agent

    @property
    def agents(self) -> tuple[str, ...]:
        """The agent names the action mentions ("all" left out), for the unknown-agent check."""
        return tuple(name for name in (self.to, self.agent, self.src, self.dst) if name and name != ALL)

    def describe(self) -> str:
        """One line: what was asked (``pin Developer→Tester for 1 round``)."""
        words = [self.action.value]
        if self.target:
            words.append(self.target)
        if self.when == SteerWhen.NOW:
            words.append("(now)")
        if self.rounds is not None:
            words.append(f"for {self.rounds} round{'s' if self.rounds != 1 else ''}")
        if self.payload.get("type"):
            words.append(f"({self.payload['type']})")
        changes = [f"{k} {self.payload[k]}" for k in ("model", "endpoint", "temperature") if k in self.payload]
        if changes:
            words.append(": " + ", ".join(changes))
        return " ".join(words)

    def as_payload(self) -> dict[str, Any]:
        """What the UserSteered event records beside action and target: every field that was given."""
        out: dict[str, Any] = {}
        for key in ("to", "agent", "src", "dst", "text"):
            value = getattr(self, key)
            if value:
                out[key] = value
        if self.action is SteerKind.NOTE or self.when == SteerWhen.NOW:
            out["when"] = self.when
        if self.rounds is not None:
            out["rounds"] = self.rounds
        if self.at_round is not None:
            out["at_round"] = self.at_round
        out.update(self.payload)
        if "endpoint" in out:  # a URL may carry user:password@ or ?api-key=: never into a session
            out["endpoint"] = redact_url(str(out["endpoint"]))
        return out

    def to_dict(self) -> dict[str, Any]:
        """The action as one control-file line would write it (parse_action reads it back)."""
        out: dict[str, Any] = {"action": self.action.value}
        for key in REQUIRED[self.action] + OPTIONAL.get(self.action, ()):
            value = self.payload.get(key) if key in PAYLOAD_KEYS else getattr(self, key)
            if value not in (None, ""):
                out[key] = value
        if self.at_round is not None:
            out["at_round"] = self.at_round
        return out


def _expected(kind: SteerKind) -> str:
    keys = ['"action"', *(f'"{k}"' for k in REQUIRED[kind])]
    optional = [f'"{k}"' for k in (*OPTIONAL.get(kind, ()), "at_round")]
    return f"{kind.value} takes {', '.join(keys)}" + (f" (optional {', '.join(optional)})" if optional else "")


def _positive_int(name: str, value: Any, kind: SteerKind) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SteerError(f'"{name}" must be a whole number from 1, got {value!r} ({_expected(kind)})')
    return value


_KINDS = {kind.value: kind for kind in SteerKind}


def parse_action(obj: Mapping[str, Any]) -> SteerAction:
    """One action from its object (a control-file line, an MCP call, the TUI's form). The schema:
    ``{"action": KIND, ...the keys REQUIRED[KIND] names..., "at_round": N}``; e.g.
    ``{"at_round": 2, "action": "note", "to": "Tester", "text": "...", "when": "next"}``,
    ``{"action": "pin", "src": "A", "dst": "B", "rounds": 1}``. Unknown keys, missing or empty ones, and
    values of the wrong type are a SteerError naming what was expected."""
    if not isinstance(obj, Mapping):
        raise SteerError(f"expected a JSON object with an \"action\", got {type(obj).__name__}")
    name = obj.get("action")
    kind = _KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        choices = ", ".join(k.value for k in SteerKind)
        raise SteerError(f'unknown action {name!r}: "action" is one of {choices}')
    allowed = {"action", "at_round", *REQUIRED[kind], *OPTIONAL.get(kind, ())}
    extra = sorted(set(obj) - allowed)
    if extra:
        raise SteerError(f"unknown key{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}: {_expected(kind)}")
    for key in REQUIRED[kind]:
        if key not in obj:
            raise SteerError(f'"{key}" is missing: {_expected(kind)}')
    values: dict[str, Any] = {}
    payload: dict[str, Any] = {}
    for key, value in obj.items():
        if key == "action":
            continue
        if key in _TEXT_KEYS:
            if not isinstance(value, str) or not value.strip():
                raise SteerError(f'"{key}" must be a non-empty string, got {value!r} ({_expected(kind)})')
            value = value if key == "text" else value.strip()
        elif key == "when":
            if value not in tuple(SteerWhen):
                raise SteerError(f'"when" is "next" or "now", got {value!r}')
            value = SteerWhen(value)
        elif key in ("rounds", "at_round"):
            value = _positive_int(key, value, kind)
        elif key == "temperature":
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 2.0:
                raise SteerError(f'"temperature" must be a number from 0 to 2, got {value!r}')
            value = float(value)
        (payload if key in PAYLOAD_KEYS else values)[key] = value
    if kind is SteerKind.AGENT and not payload:
        raise SteerError(f'agent changes nothing: give "model", "endpoint" or "temperature" ({_expected(kind)})')
    return SteerAction(action=kind, payload=payload, **values)


def parse_control_line(line: str, *, source: str, line_no: int) -> SteerAction:
    """One line of a control file; a SteerError says ``FILE:LINE: what was wrong and what was expected``.
    Blank lines and lines starting with ``#`` are skipped by the reader (is_skipped), not parsed here."""
    where = f"{source}:{line_no}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SteerError(
            f'{where}: not JSON ({exc.msg}); expected one object per line, e.g. {{"action": "note", '
            f'"to": "Tester", "text": "..."}}'
        ) from None
    try:
        return parse_action(obj)
    except SteerError as exc:
        raise SteerError(f"{where}: {exc}") from None


def is_skipped(line: str) -> bool:
    """A control-file line with nothing to do: blank, or a ``#`` comment."""
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def unknown_agent(action: SteerAction, agents: Iterable[str]) -> str:
    """The one-line refusal for an action naming an agent the team does not have, or ""."""
    known = list(agents)
    for name in action.agents:
        if name not in known:
            return f"no agent {name!r} in this team (agents: {', '.join(known)})"
    return ""

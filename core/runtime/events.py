"""The one event stream (docs/architecture.md, rule 2).

The engine emits these; the TUI, the headless printer and the session recorder consume them, and a
replay feeds recorded events back through the same consumers. Every event is a plain dataclass of
JSON-friendly values, so ``to_dict``/``event_from_dict`` round-trip exactly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar, Literal, get_type_hints

from core.runtime.config import DomainName, RoundProtocol
from core.runtime.control import ControlMode, ControlStatus
from core.runtime.outcome import EndReason


class CallKind(StrEnum):
    """Which prompt an agent answered: the kinds the engine's own calls use. A method names its own kinds
    beside it (e.g. DMoA's "dmoa-step"), so an event's ``call`` field is any text, these among them."""

    PLAN = "plan"  # Manager's first goal
    WORK = "work"  # worker's main work (phased phase C, and round 1)
    DESCRIPTORS = "descriptors"  # phased phase A
    SINGLE_PASS = "single-pass"  # work + descriptors in one call (paper protocol)
    MANAGER = "manager"  # Manager's end-of-round decision


class Phase(StrEnum):
    """The engine's phases, in the order a round goes through them (a method may add its own names)."""

    PLAN = "plan"
    WORK = "work"  # round 1 broadcast work, single-pass work, phased phase C
    DESCRIPTORS = "descriptors"  # phased phase A
    ROUTING = "routing"  # phase B
    MANAGER = "manager"


class CallStatus(StrEnum):
    """How a model call ended: its reply parsed, it answered outside its contract, or no reply came."""

    DONE = "done"
    UNPARSED = "unparsed"
    FAILED = "failed"


class Severity(StrEnum):
    """How loud a notice is: the TUI maps these to its toasts, the headless printer to its line prefix."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


# What a notice's sender may pass: the member, or its value as a literal (methods write "warning").
SeverityName = Severity | Literal["info", "warning", "error"]



@dataclass(kw_only=True)
class Event:
    type: ClassVar[str] = "event"
    ts: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["type"] = self.type
        return data


_REGISTRY: dict[str, type[Event]] = {}


def _register(cls: type[Event]) -> type[Event]:
    _REGISTRY[cls.type] = cls
    return cls


class EventFormatError(ValueError):
    pass


_ENUM_FIELDS: dict[type, dict[str, type[StrEnum]]] = {}


def enum_fields(cls: type[Event]) -> dict[str, type[StrEnum]]:
    """The fields of an event type that hold one of a fixed set of values (a StrEnum), by name."""
    found = _ENUM_FIELDS.get(cls)
    if found is None:
        hints = get_type_hints(cls)
        found = {f.name: hints[f.name] for f in fields(cls)
                 if isinstance(hints[f.name], type) and issubclass(hints[f.name], StrEnum)}
        _ENUM_FIELDS[cls] = found
    return found


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from its dict; unknown types or fields raise EventFormatError."""
    if not isinstance(data, dict):
        raise EventFormatError("an event must be an object")
    kind = data.get("type")
    cls = _REGISTRY.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise EventFormatError(f"unknown event type {kind!r}")
    names = {f.name for f in fields(cls)}
    payload = {k: v for k, v in data.items() if k != "type"}
    extra = set(payload) - names
    if extra:
        raise EventFormatError(f"event {kind!r} has unknown fields: {', '.join(sorted(extra))}")
    for name, enum in enum_fields(cls).items():  # a recorded "done" comes back as CallStatus.DONE
        if name in payload:
            try:
                payload[name] = enum(payload[name])
            except ValueError:
                allowed = ", ".join(enum)
                raise EventFormatError(f"event {kind!r}: {name} must be one of {allowed}, got {payload[name]!r}") \
                    from None
    try:
        return cls(**payload)
    except TypeError as exc:
        raise EventFormatError(f"event {kind!r}: {exc}") from None


@_register
@dataclass(kw_only=True)
class RunStarted(Event):
    type: ClassVar[str] = "run_started"
    run_id: str
    problem: str
    domain: DomainName
    manager: str
    workers: list[str]
    roles: dict[str, str]  # agent name -> role description
    protocol: RoundProtocol
    strategy: str
    model: str
    base_url: str
    demo: bool
    params: dict[str, Any]  # tau, k_in, max_rounds
    parent: dict[str, Any] | None = None  # {"session": path-or-id, "round": n} when forked
    # A user team (core.runtime.teams.team_record: roles, models, endpoints without secrets); {} built-in.
    team: dict[str, Any] = field(default_factory=dict)
    # The method's options as resolved for this run, defaults included (core.methods.fidelity says which
    # of them depart from the paper); {} in sessions saved before they were recorded.
    method_options: dict[str, Any] = field(default_factory=dict)
    # A demo asked for a problem that is not its own plays its own scenario: this names it (its answer and
    # verdict are about that one). "" otherwise, left out of the dict (sessions from before round-trip).
    demo_played: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if not self.team:  # a built-in team: left out, so older sessions round-trip to the same dict
            del data["team"]
        if not self.method_options:
            del data["method_options"]
        if not self.demo_played:
            del data["demo_played"]
        return data


@_register
@dataclass(kw_only=True)
class RoundStarted(Event):
    type: ClassVar[str] = "round_started"
    round: int
    params: dict[str, Any]  # tau, k_in, max_rounds in force for this round


@_register
@dataclass(kw_only=True)
class PhaseStarted(Event):
    type: ClassVar[str] = "phase_started"
    round: int
    phase: str
    detail: str = ""


@_register
@dataclass(kw_only=True)
class AgentStarted(Event):
    type: ClassVar[str] = "agent_started"
    round: int
    agent: str
    call: str
    tier: int | None = None


@_register
@dataclass(kw_only=True)
class AgentDelta(Event):
    """A piece of streamed text. High-frequency: consumers should batch."""

    type: ClassVar[str] = "agent_delta"
    round: int
    agent: str
    call: str
    text: str


@_register
@dataclass(kw_only=True)
class AgentFinished(Event):
    type: ClassVar[str] = "agent_finished"
    round: int
    agent: str
    call: str
    status: CallStatus
    public: str = ""
    private: dict[str, str] = field(default_factory=dict)
    query: str = ""
    key: str = ""
    answer: str = ""  # math Solver's answer field, when given
    raw: str = ""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False
    latency_s: float = 0.0
    attempts: int = 1
    # Of prompt_tokens, how many the server took from its prefix cache (OpenAI/vLLM cached_tokens, llama.cpp's
    # timings.cache_n); None when it did not say (and in sessions recorded before this was kept).
    cached_tokens: int | None = None
    # The model the call asked for, and what its attempts cost in US dollars (core.llm.prices; 0 on a local
    # server, None when no price is known or no reply came). Left out of the dict when not set.
    model: str = ""
    cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if self.cached_tokens is None:  # not reported: left out, so an older session round-trips to the same dict
            del data["cached_tokens"]
        if not self.model:
            del data["model"]
        if self.cost_usd is None:
            del data["cost_usd"]
        return data


@_register
@dataclass(kw_only=True)
class DescriptorsReady(Event):
    type: ClassVar[str] = "descriptors_ready"
    round: int
    descriptors: dict[str, dict[str, str]]  # agent -> {"query": ..., "key": ...}


@_register
@dataclass(kw_only=True)
class TopologyBuilt(Event):
    """One routing result (see core.routing.dytopo.RoutingResult.to_dict) plus the embeddings it came from."""

    type: ClassVar[str] = "topology_built"
    round: int
    routing: dict[str, Any]
    query_embeddings: list[list[float]]
    key_embeddings: list[list[float]]
    strategy: str = "dytopo"
    # True when the user re-routed this round before its work phase; replaces the earlier graph.
    rerouted: bool = False


@_register
@dataclass(kw_only=True)
class MessagesRouted(Event):
    type: ClassVar[str] = "messages_routed"
    round: int
    # [{"src", "dst", "score", "content"}] in delivery order
    deliveries: list[dict[str, Any]]
    broadcast: bool = False


@_register
@dataclass(kw_only=True)
class ManagerDecided(Event):
    type: ClassVar[str] = "manager_decided"
    round: int
    terminate: bool
    next_goal: str
    reasoning: str
    final_answer: str = ""
    status: CallStatus = CallStatus.DONE
    # True when this is the Manager's opening plan (the first goal) rather than an end-of-round call.
    plan: bool = False


@_register
@dataclass(kw_only=True)
class MemoryTrimmed(Event):
    type: ClassVar[str] = "memory_trimmed"
    round: int
    agent: str
    dropped: int
    dropped_tokens: int


@_register
@dataclass(kw_only=True)
class RoundFinished(Event):
    type: ClassVar[str] = "round_finished"
    round: int
    prompt_tokens: int
    completion_tokens: int
    convergence: float | None = None  # mean similarity of worker outputs to the previous round


@_register
@dataclass(kw_only=True)
class RunFinished(Event):
    type: ClassVar[str] = "run_finished"
    reason: EndReason  # stored as its string value ("manager", "max_rounds", "budget", ...)
    detail: str
    final_answer: str
    answer_source: str  # "manager" or "extracted:<Agent>" or ""
    rounds: int
    prompt_tokens: int
    completion_tokens: int
    solved: bool | None = None
    # Model calls that got a reply, and how many of those parsed into their contract (after a re-ask).
    # -1 / 0: not counted (a session recorded before these fields existed).
    replies_parsed: int = -1
    replies_total: int = 0
    # Of the replies not parsed, those that copied the reply template (core.runtime.copies); 0 in older sessions.
    replies_copied: int = 0
    # As RunStarted.demo_played, again here: whoever reads only the answer's event learns whose answer it is.
    demo_played: str = ""
    # Of prompt_tokens + completion_tokens, how many are estimates rather than the server's count: calls cut
    # off in flight (a time budget, a cancel) and servers that report no usage. 0 in older sessions.
    tokens_estimated: int = 0
    # Of prompt_tokens, how many the server said came from its prefix cache; None when no call's reply said.
    cached_tokens: int | None = None
    # What the run's calls cost in US dollars (core.llm.prices: the priced calls' sum) and the models no price
    # was found for ("cost: unknown for model X"); None / [] in sessions recorded before costs were kept.
    cost_usd: float | None = None
    cost_unknown: list[str] = field(default_factory=list)
    # Whether a call went to a local server (free unless price_local_endpoints): a cost of 0 is then said as
    # "free (local server)". False in older sessions, and left out of the dict when False.
    cost_local: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if not self.cost_local:
            del data["cost_local"]
        if self.cached_tokens is None:
            del data["cached_tokens"]
        if self.cost_usd is None:
            del data["cost_usd"]
        if not self.cost_unknown:
            del data["cost_unknown"]
        if self.replies_parsed == -1 and self.replies_total == 0:
            # Not counted: leave the fields out, so an older session round-trips to the same dict.
            del data["replies_parsed"], data["replies_total"]
        if not self.demo_played:
            del data["demo_played"]
        if not self.tokens_estimated:
            del data["tokens_estimated"]
        if not self.replies_copied:
            del data["replies_copied"]
        return data


@_register
@dataclass(kw_only=True)
class ParamsChanged(Event):
    type: ClassVar[str] = "params_changed"
    round: int
    params: dict[str, Any]  # the full new set: tau, k_in, max_rounds
    changed: list[str]


@_register
@dataclass(kw_only=True)
class ControlChanged(Event):
    """Run-control state: running, paused or stepping, in auto or step mode."""

    type: ClassVar[str] = "control_changed"
    round: int
    status: ControlStatus
    mode: ControlMode


@_register
@dataclass(kw_only=True)
class Notice(Event):
    """Something the user should hear about: a retry, an unparsed reply, an endpoint error."""

    type: ClassVar[str] = "notice"
    round: int
    severity: Severity
    message: str
    agent: str = ""


@_register
@dataclass(kw_only=True)
class TestRun(Event):
    """A sandboxed execution of candidate code against tests (code domain, when enabled)."""

    type: ClassVar[str] = "test_run"
    round: int
    outcome: str  # PASSED, WRONG_ANSWER, TIME_LIMIT_EXCEEDED, ...
    passed: bool
    detail: str = ""
    failing_test: str = ""
    source_agent: str = ""
    tests_agent: str = ""
    duration_s: float = 0.0
    # What the agents were told (a fork gives it back as the live run did); None: recorded before it was kept.
    feedback: str | None = None


@_register
@dataclass(kw_only=True)
class UserSteered(Event):
    """A steering action (core.runtime.steering), taken or refused: one event per action."""

    type: ClassVar[str] = "user_steered"
    round: int
    phase: str  # the phase the run was in (or had just finished) when it applied
    action: str  # SteerKind's value: note, goal, pin, cut, ...
    target: str  # "Tester", "all", "Developer→Tester", or "" (goal, stop, continue, plan)
    payload: dict[str, Any] = field(default_factory=dict)  # what was given: text, when, rounds, model, ...
    accepted: bool = True
    reason: str = ""  # why it was refused; "" when taken


@_register
@dataclass(kw_only=True)
class GoalReplaced(Event):
    """The round ran with the user's goal (a ``goal`` steering action) in place of the Manager's: every
    consumer shows ``goal`` as the round's, marked as the user's, with ``replaced`` beside it."""

    type: ClassVar[str] = "goal_replaced"
    round: int
    goal: str  # the user's goal: what every worker of the round received
    replaced: str  # the Manager's goal it replaced ("" when the Manager had set none)


EventSink = Callable[[Event], None]


def event_types() -> dict[str, type[Event]]:
    """Every event type registered so far. A method module registers its own events when it is imported:
    whoever reads a recorded stream back (core.sessions) imports core.methods.catalogue first."""
    return dict(_REGISTRY)

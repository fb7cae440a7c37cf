"""A session: the complete record of one run, built from the engine's event stream (docs/architecture.md, rule 2).

The recorded events are the source of truth; everything else here (metadata, the per-round view,
the outcome) is derived from them, so a replay that feeds ``replay_events()`` to the live consumers
shows exactly what was shown live. Loading validates everything and never evaluates anything: a
file is plain data, checked for types, sizes and structure before any of it is used.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from core import __version__
from core.llm.urls import redact_url
from core.methods.catalogue import ensure_event_type
from core.routing.dytopo import Edge, RemovedEdge, RoutingResult
from core.runtime import events as ev
from core.runtime.dispatch import EventTable, of_kind
from core.sessions.schema import (
    ParentRef,
    RunParams,
    SessionFile,
    event_problem,
    event_record,
    file_problem,
    params_problem,
)
from core.sessions.schema import describe as _describe
from core.sessions.schema import short as _short

SCHEMA_VERSION = 1

# Sanity bounds: far above any real run, low enough that a hostile file cannot exhaust memory or time.
MAX_EVENTS = 200_000
MAX_STRING = 8 * 1024 * 1024
MAX_LIST = 100_000
MAX_DEPTH = 24
MAX_INT = 2**53  # exact in every JSON reader
MAX_AGENTS = 64
MAX_EMBEDDING_DIM = 16_384

_SURROGATE = re.compile("[\ud800-\udfff]")


class SessionFormatError(ValueError):
    """A session that cannot be used. ``str()`` is one line: which file (when known), what is wrong."""

    def __init__(self, problem: str, source: str | None = None) -> None:
        self.problem = _one_line(problem)
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.source}: {self.problem}" if self.source else self.problem

    def with_source(self, source: str) -> SessionFormatError:
        return SessionFormatError(self.problem, source)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the per-round view -------------------------------------------------------------------------


@dataclass
class RoundRecord:
    """Everything that happened in one round, from its events."""

    round: int
    params: dict[str, Any]  # tau, k_in, max_rounds in force when the round started
    goal: str = ""
    replaced_goal: str | None = None  # the round ran with the user's goal: the Manager's it replaced
    param_changes: list[ev.ParamsChanged] = field(default_factory=list)
    descriptors: dict[str, dict[str, str]] = field(default_factory=dict)
    query_embeddings: list[list[float]] = field(default_factory=list)
    key_embeddings: list[list[float]] = field(default_factory=list)
    routing: RoutingResult | None = None  # the graph the work used (a re-route replaces the first)
    rerouted: bool = False
    outputs: list[ev.AgentFinished] = field(default_factory=list)  # every call, in finishing order
    deliveries: list[dict[str, Any]] = field(default_factory=list)  # messages in delivery order
    broadcast: bool = False
    plan: ev.ManagerDecided | None = None  # round 1: the Manager's opening plan
    decision: ev.ManagerDecided | None = None  # the end-of-round decision
    test_runs: list[ev.TestRun] = field(default_factory=list)
    notices: list[ev.Notice] = field(default_factory=list)
    trims: list[ev.MemoryTrimmed] = field(default_factory=list)
    method_events: list[ev.Event] = field(default_factory=list)  # a method's own event types (e.g. DMoA's)
    # Steering actions (taken or refused) applied at a barrier of this round (the one after its last phase
    # stands before the next round); those before round 1 are in Session.steering only.
    steering: list[ev.UserSteered] = field(default_factory=list)
    prompt_tokens: int = 0  # used in this round
    completion_tokens: int = 0
    convergence: float | None = None
    finished: bool = False

    @property
    def similarity(self) -> list[list[float]]:
        return self.routing.similarity if self.routing else []

    @property
    def goal_note(self) -> str:
        """"" for the Manager's goal; for the user's, what an export prints beside it (the one it replaced)."""
        if self.replaced_goal is None:
            return ""
        return "the user's goal" + (f"; it replaced the Manager's: {self.replaced_goal}" if self.replaced_goal else "")

    @property
    def edges(self) -> list[Any]:
        return self.routing.edges if self.routing else []

    @property
    def removed(self) -> list[Any]:
        return self.routing.removed if self.routing else []

    @property
    def order(self) -> list[str]:
        return self.routing.order if self.routing else []

    @property
    def tiers(self) -> list[list[str]]:
        return self.routing.tiers if self.routing else []

    def output(self, agent: str, call: str | None = None) -> ev.AgentFinished | None:
        """The agent's last output of this round (of the given call kind, if given)."""
        for out in reversed(self.outputs):
            if out.agent == agent and (call is None or out.call == call):
                return out
        return None


# --- the session --------------------------------------------------------------------------------


@dataclass
class Session:
    """One run. Build with session_from_events() or Session.from_dict(); the derived fields follow
    the events and are recomputed, never trusted from a file."""

    events: list[dict[str, Any]]  # the recorded stream without AgentDelta, as event dicts
    app_version: str = __version__
    schema_version: int = SCHEMA_VERSION
    metadata: ev.RunStarted = field(init=False)
    rounds: list[RoundRecord] = field(init=False)
    outcome: ev.RunFinished | None = field(init=False)
    created: str = field(init=False)  # ISO 8601, UTC
    finished: str | None = field(init=False)

    def __post_init__(self) -> None:
        _check_plain({"events": self.events}, "")  # also for sessions built in memory: must save as JSON
        metadata, rounds, outcome = _derive(self.events)
        self.metadata, self.rounds, self.outcome = metadata, rounds, outcome
        self.created = _iso(metadata.ts)
        self.finished = _iso(outcome.ts) if outcome is not None else None

    # Handy views of the metadata.
    @property
    def problem(self) -> str:
        return self.metadata.problem

    @property
    def domain(self) -> str:
        return self.metadata.domain

    @property
    def demo(self) -> bool:
        return self.metadata.demo

    @property
    def parent(self) -> dict[str, Any] | None:
        return self.metadata.parent

    @property
    def method_options(self) -> dict[str, Any]:
        """The method's options as the run resolved them, defaults included; {} when not recorded (a
        session saved before they were) or for a method without options. Stored in run_started, so
        the file's ``metadata.method_options`` holds them too."""
        return dict(self.metadata.method_options)

    @property
    def completed_rounds(self) -> int:
        return sum(1 for r in self.rounds if r.finished)

    @property
    def tokens(self) -> int:
        """Tokens used so far (prompt + completion)."""
        if self.outcome is not None:
            return self.outcome.prompt_tokens + self.outcome.completion_tokens
        return sum(r.prompt_tokens + r.completion_tokens for r in self.rounds)

    @property
    def steering(self) -> list[ev.UserSteered]:
        """Every steering action of the run, taken or refused, in order ([] for a session without any)."""
        return of_kind((ev.event_from_dict(dict(d)) for d in self.events if d.get("type") == ev.UserSteered.type),
                       ev.UserSteered)

    def replay_events(self) -> list[ev.Event]:
        """The recorded events, rebuilt as the typed events the live consumers take."""
        for e in self.events:
            ensure_event_type(e.get("type"))
        return [ev.event_from_dict(dict(e)) for e in self.events]

    def to_dict(self) -> dict[str, Any]:
        """The file layout (schema version 1). metadata and outcome are readable copies; loading
        checks they agree with the events."""
        return {
            "schema_version": SCHEMA_VERSION,
            "app_version": self.app_version,
            "created": self.created,
            "finished": self.finished,
            "metadata": _public_dict(self.metadata),
            "outcome": _public_dict(self.outcome) if self.outcome is not None else None,
            "events": [dict(e) for e in self.events],
        }

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> Session:
        """Validate and build. Older schema versions are upgraded first; anything wrong raises
        SessionFormatError naming ``source``."""
        try:
            return _from_dict(data)
        except SessionFormatError as exc:
            raise exc.with_source(source) if source else exc from None
        except RecursionError:
            raise SessionFormatError("the data is nested too deeply", source) from None


def record_dict(event: ev.Event | Mapping[str, Any]) -> dict[str, Any]:
    """An event as a session records it (secrets in the endpoint URL removed)."""
    data = dict(event) if isinstance(event, Mapping) else event.to_dict()
    if data.get("type") == ev.RunStarted.type and isinstance(data.get("base_url"), str):
        data["base_url"] = redact_url(data["base_url"])
    return data


def session_from_events(events: Iterable[ev.Event | Mapping[str, Any]], *, app_version: str = __version__) -> Session:
    """A session from an event stream (typed events or their dicts). AgentDelta events are dropped:
    the final text of every call is in its AgentFinished."""
    out = [record_dict(e) for e in events]
    return Session([d for d in out if d.get("type") != ev.AgentDelta.type], app_version=app_version)


def _public_dict(event: ev.Event) -> dict[str, Any]:
    data = event.to_dict()
    data.pop("type", None)
    data.pop("ts", None)
    return data


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# --- upgrades -----------------------------------------------------------------------------------


def _upgrade_v0(data: dict[str, Any]) -> dict[str, Any]:
    """v0 (before the first release): the events were under "log", AgentDelta events were kept,
    run_started had no "strategy" (it was always DyTopo) and there were no metadata/outcome copies."""
    log = data.get("log")
    if not isinstance(log, list):
        raise SessionFormatError("schema version 0 file has no \"log\" list of events")
    events: list[Any] = []
    for item in log:
        if isinstance(item, dict) and item.get("type") == ev.AgentDelta.type:
            continue
        if isinstance(item, dict) and item.get("type") == ev.RunStarted.type and "strategy" not in item:
            item = {**item, "strategy": "dytopo"}
        events.append(item)
    out = {k: v for k, v in data.items() if k not in {"log", "metadata", "outcome"}}
    out["events"] = events
    out["schema_version"] = 1
    return out


_UPGRADES = {0: _upgrade_v0}


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older layout to the current schema version, one step at a time."""
    version = data.get("schema_version")
    while isinstance(version, int) and not isinstance(version, bool) and version < SCHEMA_VERSION:
        step = _UPGRADES.get(version)
        if step is None:
            raise SessionFormatError(f"schema version {version} is too old to load")
        data = step(data)
        version = data["schema_version"]
    return data


# --- validation ---------------------------------------------------------------------------------


def _at(where: str) -> str:
    """A data path for an error message: short, and never empty."""
    if not where:
        return "top level"
    return where if len(where) <= 60 else where[:59] + "…"


def _text_ok(value: str) -> bool:
    return len(value) <= MAX_STRING and (value.isascii() or not _SURROGATE.search(value))


def _plain_ok(value: Any, depth: int = 0) -> bool:
    """The fast yes/no form of _check_plain (no error paths built); _check_plain then explains a no."""
    kind = type(value)
    if kind is str:
        return _text_ok(value)
    if kind is float:
        return math.isfinite(value)
    if kind is int:
        return bool(-MAX_INT <= value <= MAX_INT)
    if value is None or kind is bool:
        return True
    if depth >= MAX_DEPTH:
        return False
    if kind is list:
        if len(value) > (MAX_EVENTS if depth == 1 else MAX_LIST):
            return False
        kinds = set(map(type, value))
        if kinds == {float}:
            return all(map(math.isfinite, value))
        return all(_plain_ok(item, depth + 1) for item in value)
    if kind is dict:
        return (
            len(value) <= MAX_LIST
            and all(type(key) is str for key in value)
            and all(_plain_ok(item, depth + 1) for item in value.values())
        )
    return False


def _check_plain(value: Any, where: str, depth: int = 0) -> None:
    """Only JSON-like plain data, finite numbers, bounded sizes and depth."""
    if depth == 0 and _plain_ok(value):
        return
    if depth > MAX_DEPTH:
        raise SessionFormatError(f"{_at(where)}: nested too deeply (more than {MAX_DEPTH} levels)")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise SessionFormatError(f"{_at(where)}: text longer than {MAX_STRING} characters")
        if not _text_ok(value):
            raise SessionFormatError(f"{_at(where)}: text holds invalid unicode (a lone surrogate)")
        return
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise SessionFormatError(f"{_at(where)}: number {_short(value)} is too large")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SessionFormatError(f"{_at(where)}: number {_short(value)} is not finite")
        return
    if isinstance(value, list):
        limit = MAX_EVENTS if depth == 1 else MAX_LIST
        if len(value) > limit:
            raise SessionFormatError(f"{_at(where)}: list longer than {limit} items")
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        if len(value) > MAX_LIST:
            raise SessionFormatError(f"{_at(where)}: object with more than {MAX_LIST} keys")
        for key, item in value.items():
            if not isinstance(key, str):
                raise SessionFormatError(f"{_at(where)}: key {_short(key)} is not text")
            _check_plain(item, f"{where}.{key}" if where else key, depth + 1)
        return
    raise SessionFormatError(f"{_at(where)}: unsupported value of type {type(value).__name__}")


def _rebuild_event(data: Any, index: int) -> ev.Event:
    """One event dict -> its typed event, every field checked by the event type's record model."""
    where = f"event {index}"
    if not isinstance(data, dict):
        raise SessionFormatError(f"{where} must be an object, got {_describe(data)}")
    kind = data.get("type")
    ensure_event_type(kind)
    cls = ev.event_types().get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise SessionFormatError(f"{where} has unknown event type {_short(kind)}")
    where = f"event {index} ({kind})"
    try:
        event_record(cls).model_validate(data)
        event = ev.event_from_dict(data)
    except ValidationError as exc:
        raise SessionFormatError(event_problem(where, exc)) from None
    except ev.EventFormatError as exc:
        raise SessionFormatError(f"{where}: {exc}") from None
    return event


def _check_params(params: dict[str, Any], where: str) -> None:
    try:
        RunParams.model_validate(params)
    except ValidationError as exc:
        raise SessionFormatError(params_problem(where, exc)) from None


def _check_started(e: ev.RunStarted) -> None:
    where = "run_started"
    if len(e.workers) > MAX_AGENTS or len(set(e.workers)) != len(e.workers):
        raise SessionFormatError(f"{where}: workers must be at most {MAX_AGENTS} distinct names")
    if not e.workers and not e.manager:  # a method whose agents join at run time still has its manager
        raise SessionFormatError(f"{where}: the run names no agent (no manager, no workers)")
    if any(not w for w in e.workers):
        raise SessionFormatError(f"{where}: a worker name is empty")
    _check_params(e.params, where)
    if e.team:  # a user team: the table a fork continues with, checked like a config file's
        from core.runtime.config import ConfigError
        from core.runtime.teams import table_from_record, team_from_table

        try:
            team_from_table(*table_from_record(e.team), source="run_started")
        except ConfigError as exc:
            raise SessionFormatError(f"{where}: team: {exc}") from None
    if e.parent is not None:
        try:
            ParentRef.model_validate(e.parent)
        except ValidationError:
            raise SessionFormatError(f"{where}: parent must be {{session: text, round: whole number >= 0}}") from None


def _check_topology(e: ev.TopologyBuilt, where: str) -> RoutingResult:
    try:
        routing = RoutingResult.from_dict(e.routing)
    except KeyError as exc:
        raise SessionFormatError(f"{where}: routing is malformed (missing {_short(exc.args[0])})") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise SessionFormatError(f"{where}: routing is malformed ({_short(str(exc))})") from None
    # The graph's own agents: the workers (DyTopo and its baselines), or those a method names itself (a
    # typed graph; TopoWeaver-R1's plan names its agents at run time), bounded like a roster.
    names = routing.names
    n = len(names)
    if not 1 <= n <= MAX_AGENTS or len(set(names)) != n or any(not name for name in names):
        raise SessionFormatError(f"{where}: routing names must be 1..{MAX_AGENTS} distinct names")
    if set(routing.inactive) - set(names):
        raise SessionFormatError(f"{where}: an agent that does not run is not in the graph")
    if routing.typed and not routing.similarity:
        pass  # a method's typed graph needs no similarity matrix
    elif len(routing.similarity) != n or any(len(row) != n for row in routing.similarity):
        raise SessionFormatError(f"{where}: similarity must be a {n}x{n} matrix")
    if any(not math.isfinite(x) for row in routing.similarity for x in row):
        raise SessionFormatError(f"{where}: similarity holds a number that is not finite")
    if routing.k_in < 1 or not 0.0 <= routing.tau <= 1.0:
        raise SessionFormatError(f"{where}: routing tau/k_in out of range")
    known = set(names)
    every: list[Edge | RemovedEdge] = [*routing.edges, *routing.removed]
    for edge in every:
        if edge.src not in known or edge.dst not in known:
            raise SessionFormatError(f"{where}: an edge names an unknown agent")
    if set(routing.order) - known or any(set(t) - known for t in routing.tiers):
        raise SessionFormatError(f"{where}: order or tiers name an unknown agent")
    for label, rows in (("query", e.query_embeddings), ("key", e.key_embeddings)):
        if not rows:
            continue
        if len(rows) != n:
            raise SessionFormatError(f"{where}: {label} embeddings must have {n} rows, got {len(rows)}")
        dim = len(rows[0])
        if not 1 <= dim <= MAX_EMBEDDING_DIM or any(len(row) != dim for row in rows):
            raise SessionFormatError(f"{where}: {label} embeddings have uneven or bad dimensions")
    return routing


# How a session's rounds take each engine event type (_Fold's ``@FOLDS.on`` methods; tests/test_event_handlers.py
# checks every type is handled or ignored). The view keeps no trace of streamed text, phase and call starts,
# or control changes.
FOLDS: EventTable[_Fold] = EventTable()
FOLDS.ignore(ev.AgentDelta, ev.PhaseStarted, ev.AgentStarted, ev.ControlChanged)
# Events of round 0 (control state and notices before round 1) belong to no round: only a parameter change
# is checked; the rest are not folded.
BEFORE_ROUNDS: EventTable[_Fold] = EventTable()
# The events that open or close the run or a round: folded without the check that their round has started.
RUN_LEVEL: frozenset[type[ev.Event]] = frozenset({ev.RunStarted, ev.RunFinished, ev.RoundStarted})


class _Fold:
    """Folds a validated stream into its rounds, one event at a time (the handlers in FOLDS), checking
    the order as it goes: rounds start in turn, an event names a round that has started, one end."""

    def __init__(self, started: ev.RunStarted) -> None:
        self.workers = list(started.workers)
        self.rounds: list[RoundRecord] = []
        self.outcome: ev.RunFinished | None = None
        self.pending_goal = ""  # the goal the next round starts with
        self.tokens = (0, 0)  # the run's totals at the last round_finished
        self.where = ""  # the event being folded, for an error message
        self._record: RoundRecord | None = None

    @property
    def record(self) -> RoundRecord:
        assert self._record is not None  # set before any per-round handler runs
        return self._record

    def fold(self, index: int, e: ev.Event) -> None:
        self.where = f"event {index} ({e.type})"
        if self.outcome is not None:
            raise SessionFormatError(f"{self.where} comes after run_finished")
        if type(e) not in RUN_LEVEL:
            round_no = getattr(e, "round", 0)
            if round_no > len(self.rounds):
                raise SessionFormatError(f"{self.where}: round {round_no} has not started")
            if round_no == 0:
                BEFORE_ROUNDS.dispatch(self, e)
                return
            self._record = self.rounds[round_no - 1]
        if not FOLDS.dispatch(self, e) and type(e).__module__ != ev.__name__:
            self.record.method_events.append(e)  # a method's own event type (e.g. DMoA's)

    @BEFORE_ROUNDS.on(ev.ParamsChanged)
    def _params_before_rounds(self, e: ev.ParamsChanged) -> None:
        _check_params(e.params, self.where)

    @FOLDS.on(ev.RunStarted)
    def _run_started(self, e: ev.RunStarted) -> None:
        raise SessionFormatError(f"{self.where}: a session holds one run")

    @FOLDS.on(ev.RunFinished)
    def _run_finished(self, e: ev.RunFinished) -> None:
        if e.rounds != len(self.rounds):
            raise SessionFormatError(f"{self.where}: says {e.rounds} rounds but {len(self.rounds)} were recorded")
        self.outcome = e

    @FOLDS.on(ev.RoundStarted)
    def _round_started(self, e: ev.RoundStarted) -> None:
        if e.round != len(self.rounds) + 1:
            raise SessionFormatError(f"{self.where}: round {e.round} follows round {len(self.rounds)}")
        _check_params(e.params, self.where)
        self.rounds.append(RoundRecord(round=e.round, params=dict(e.params), goal=self.pending_goal))

    @FOLDS.on(ev.AgentFinished)
    def _agent_finished(self, e: ev.AgentFinished) -> None:
        self.record.outputs.append(e)

    @FOLDS.on(ev.DescriptorsReady)
    def _descriptors_ready(self, e: ev.DescriptorsReady) -> None:
        self.record.descriptors = {k: dict(v) for k, v in e.descriptors.items()}

    @FOLDS.on(ev.TopologyBuilt)
    def _topology_built(self, e: ev.TopologyBuilt) -> None:
        record = self.record
        record.routing = _check_topology(e, self.where)
        record.query_embeddings, record.key_embeddings = e.query_embeddings, e.key_embeddings
        record.rerouted = record.rerouted or e.rerouted

    @FOLDS.on(ev.MessagesRouted)
    def _messages_routed(self, e: ev.MessagesRouted) -> None:
        _check_deliveries(e.deliveries, self.workers, self.where)
        self.record.deliveries.extend(e.deliveries)
        self.record.broadcast = self.record.broadcast or e.broadcast

    @FOLDS.on(ev.ManagerDecided)
    def _manager_decided(self, e: ev.ManagerDecided) -> None:
        record = self.record
        if e.plan:
            record.plan, record.goal = e, e.next_goal
            self.pending_goal = e.next_goal
        else:
            record.decision = e
            self.pending_goal = e.next_goal or record.goal

    @FOLDS.on(ev.ParamsChanged)
    def _params_changed(self, e: ev.ParamsChanged) -> None:
        _check_params(e.params, self.where)
        self.record.param_changes.append(e)

    @FOLDS.on(ev.RoundFinished)
    def _round_finished(self, e: ev.RoundFinished) -> None:
        record = self.record
        if record.finished:
            raise SessionFormatError(f"{self.where}: round {e.round} finished twice")
        record.finished = True
        record.prompt_tokens = max(0, e.prompt_tokens - self.tokens[0])
        record.completion_tokens = max(0, e.completion_tokens - self.tokens[1])
        record.convergence = e.convergence
        self.tokens = (e.prompt_tokens, e.completion_tokens)

    @FOLDS.on(ev.TestRun)
    def _test_run(self, e: ev.TestRun) -> None:
        self.record.test_runs.append(e)

    @FOLDS.on(ev.Notice)
    def _notice(self, e: ev.Notice) -> None:
        self.record.notices.append(e)

    @FOLDS.on(ev.MemoryTrimmed)
    def _memory_trimmed(self, e: ev.MemoryTrimmed) -> None:
        self.record.trims.append(e)

    @FOLDS.on(ev.GoalReplaced)
    def _goal_replaced(self, e: ev.GoalReplaced) -> None:
        self.record.goal, self.record.replaced_goal = e.goal, e.replaced

    @FOLDS.on(ev.UserSteered)
    def _user_steered(self, e: ev.UserSteered) -> None:
        self.record.steering.append(e)


def _derive(events: list[dict[str, Any]]) -> tuple[ev.RunStarted, list[RoundRecord], ev.RunFinished | None]:
    """Validate the stream's order and build the per-round view."""
    if not isinstance(events, list):
        raise SessionFormatError(f"events must be a list, got {_describe(events)}")
    if not events:
        raise SessionFormatError("the session has no events")
    if len(events) > MAX_EVENTS:
        raise SessionFormatError(f"too many events ({len(events)} > {MAX_EVENTS})")
    typed = [_rebuild_event(e, i) for i, e in enumerate(events)]
    started = of_kind(typed[:1], ev.RunStarted)
    if not started:
        raise SessionFormatError(f"the first event must be run_started, got {typed[0].type}")
    first = started[0]
    _check_started(first)
    fold = _Fold(first)
    for index, e in enumerate(typed[1:], start=1):
        fold.fold(index, e)
    return first, fold.rounds, fold.outcome


def _check_deliveries(deliveries: list[dict[str, Any]], workers: list[str], where: str) -> None:
    known = set(workers)
    for i, d in enumerate(deliveries):
        src, dst, score, content = d.get("src"), d.get("dst"), d.get("score"), d.get("content")
        if src not in known or dst not in known:
            raise SessionFormatError(f"{where}: delivery {i} names an unknown agent")
        if not isinstance(content, str):
            raise SessionFormatError(f"{where}: delivery {i} content must be text")
        if score is not None and (not isinstance(score, int | float) or isinstance(score, bool)):
            raise SessionFormatError(f"{where}: delivery {i} score must be a number or null")


def _from_dict(data: Any) -> Session:
    if not isinstance(data, dict):
        raise SessionFormatError(f"not a swarm-tui session: the top level is {_describe(data)}, not an object")
    version = data.get("schema_version")
    if version is None:
        raise SessionFormatError("not a swarm-tui session: no schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionFormatError(f"schema_version must be a whole number, got {_short(version)}")
    if version > SCHEMA_VERSION:
        raise SessionFormatError(
            f"schema version {version} is newer than this swarm-tui understands ({SCHEMA_VERSION}): "
            "upgrade swarm-tui to open it"
        )
    if version < 0:
        raise SessionFormatError(f"schema version {version} is not valid")
    _check_plain(data, "")
    data = upgrade(data)
    try:
        top = SessionFile.model_validate(data)
    except ValidationError as exc:
        raise SessionFormatError(file_problem(exc)) from None
    session = Session(top.events, app_version=top.app_version)
    # The readable copies must say what the events say (a hand edit that disagrees is an error).
    if "metadata" in data and data["metadata"] != _public_dict(session.metadata):
        raise SessionFormatError("metadata does not match the recorded run_started event")
    if "outcome" in data:
        expected = _public_dict(session.outcome) if session.outcome is not None else None
        if data["outcome"] != expected:
            raise SessionFormatError("outcome does not match the recorded run_finished event")
    return session

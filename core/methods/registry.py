"""The method registry: every way of wiring a team that the engine can host, with its options.

A method module registers a ``MethodInfo`` (name, one-line summary, the options it takes, what its
steps are called, a factory). A leaf of the methods layer: it imports no method. Everything that offers
a choice of method reads the table through ``core.methods.catalogue``, which imports every method, and
option values from the config file (``[strategy.NAME]``) or flags are checked here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from core.runtime.domains import Domain
from core.runtime.engine import Method
from core.runtime.events import Event
from core.runtime.steering import SteerKind


class MethodError(ValueError):
    """An unknown method or a bad option value; the message is one line fit to show a user."""


@dataclass(frozen=True)
class OptionSpec:
    """One option of a method. kind: "float", "int", "str", "bool" or "choice"."""

    name: str
    kind: str
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    call_table: str = ""  # a call kind's max_tokens or temperature (call_options): the table it overrides

    def describe(self) -> str:
        if self.kind == "choice":
            allowed = "|".join(self.choices)
        elif self.low is not None or self.high is not None:
            allowed = f"{self.low if self.low is not None else ''}..{self.high if self.high is not None else ''}"
        else:
            allowed = self.kind
        return f"{self.name}={self.default!r} ({allowed}): {self.help}"

    def check(self, method: str, value: Any) -> Any:
        """The value in its proper type, or MethodError naming the method, option and allowed range."""
        where = f"[strategy.{method}] {self.name}"
        if value is None and self.default is None:  # "not set" (a recorded run's options hold it so)
            return None
        if isinstance(value, str) and self.kind in ("float", "int", "bool"):
            value = _from_text(where, self.kind, value)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise MethodError(f"{where} must be true or false, got {value!r}")
            return value
        if self.kind in ("float", "int"):
            if isinstance(value, bool) or not isinstance(value, int | float) or (
                self.kind == "int" and not float(value).is_integer()
            ):
                what = "a whole number" if self.kind == "int" else "a number"
                raise MethodError(f"{where} must be {what}, got {value!r}")
            value = int(value) if self.kind == "int" else float(value)
            if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
                raise MethodError(f"{where} must be between {self.low} and {self.high}, got {value}")
            return value
        if not isinstance(value, str):
            raise MethodError(f"{where} must be a string, got {value!r}")
        if self.kind == "choice" and value not in self.choices:
            raise MethodError(f"{where} must be one of {', '.join(self.choices)}, got {value!r}")
        return value


def _from_text(where: str, kind: str, text: str) -> Any:
    """A flag's text (``-o alpha=0.5``) in the option's type."""
    if kind == "bool":
        lowered = text.strip().lower()
        if lowered in ("true", "yes", "on", "1"):
            return True
        if lowered in ("false", "no", "off", "0"):
            return False
        raise MethodError(f"{where} must be true or false, got {text!r}")
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        what = "a whole number" if kind == "int" else "a number"
        raise MethodError(f"{where} must be {what}, got {text!r}") from None


# The settings table each call kind's limits come from, unless its own options say otherwise.
CALL_TABLES = {"manager_call", "work_call", "descriptor_call"}
MAX_TOKENS_SUFFIX = "_max_tokens"
TEMPERATURE_SUFFIX = "_temperature"


def call_options(kind: str, calls: str, table: str) -> tuple[OptionSpec, OptionSpec]:
    """A call kind's own max_tokens and temperature (``-o summarizer_max_tokens=300``): unset, the settings'
    ``[table]`` values apply; --max-tokens caps them, and a team file's per-agent values win over them.
    ``calls`` names the calls, as in "the Summarizer's calls"."""
    assert table in CALL_TABLES
    return (
        OptionSpec(f"{kind}{MAX_TOKENS_SUFFIX}", "int", None, f"max_tokens of {calls} (unset: [{table}])",
                   low=1, high=1_000_000, call_table=table),
        OptionSpec(f"{kind}{TEMPERATURE_SUFFIX}", "float", None, f"temperature of {calls} (unset: [{table}])",
                   low=0.0, high=2.0, call_table=table),
    )


def call_tables(specs: Iterable[OptionSpec]) -> dict[str, str]:
    """Each call kind's settings table, as its call_options record it (``{"manager": "manager_call"}``): what a
    method class hands the engine as ``call_tables`` (SwarmEngine.call_limits reads it)."""
    return {spec.name.removesuffix(MAX_TOKENS_SUFFIX): spec.call_table for spec in specs
            if spec.call_table and spec.name.endswith(MAX_TOKENS_SUFFIX)}


MethodFactory = Callable[[dict[str, Any], Domain], Method]


# How many units a run of a method takes at most, from the run's max_rounds (MethodInfo.unit_limit): what
# "round 2/5" counts against. None: the method has no such count (one call, or K samples, in one unit).
def max_rounds_limit(max_rounds: int) -> int | None:
    """max_rounds, as the run's params say it now (DyTopo's rounds; DMoA and TopoWeaver set it to their
    L_max and K)."""
    return max_rounds


def one_unit(_max_rounds: int) -> int | None:
    """One unit whatever max_rounds says (single-turn's one round, TopoDIM's one pass)."""
    return 1


def no_unit_limit(_max_rounds: int) -> int | None:
    """Nothing to count against (single: one agent, its call or K samples, no rounds)."""
    return None


class GraphShape(StrEnum):
    """How a unit's graph reads in one line (a comparison's column): its edges, the agents a router selected
    (tier 0, DMoA), or the plan's layers (TopoWeaver-R1)."""

    EDGES = "edges"
    SELECTION = "selection"
    LAYERS = "layers"


@dataclass(frozen=True)
class MethodInfo:
    name: str
    summary: str  # one line, for `swarm-tui strategies` and the launch form
    factory: MethodFactory  # (checked options, domain) -> a fresh Method for one run
    options: tuple[OptionSpec, ...] = ()
    unit: str = "round"  # what N steps over: round, step, turn
    unit_limit: Callable[[int], int | None] = max_rounds_limit  # the most units a run takes (see position)
    # The option the method sets the run's max_rounds from (DMoA's L_max, TopoWeaver-R1's K turns): what a
    # screen counts against before the run starts. "": the run's own max_rounds.
    limit_option: str = ""
    substep: str = "phase"  # what n steps over
    # What an agent's pane calls its place in the unit's graph: DyTopo's "tier" (from 0, as its graph
    # draws T0, T1, …), TopoWeaver's plan "step" (from 1, as its plans count them). "": the agents of one
    # unit run together (DMoA's selected experts): the pane names the unit it ran in ("step 3").
    layer: str = "tier"
    layer_base: int = 0
    what_if: bool = False  # recorded graphs can be re-routed at another tau (DyTopo family only)
    uses_tau: bool = False  # tau and k_in mean something to it
    round_one_broadcast: bool = False  # DyTopo's round loop: round 1 broadcasts, later rounds route
    paper: str = ""  # where it comes from
    family: str = field(default="")  # e.g. "baseline"
    # A finished run's own figures for the benchmark (e.g. a valid-plan rate), from its event stream.
    metrics: Callable[[list[Event]], dict[str, float]] | None = None
    # The steering actions a run of it takes (core.runtime.steering); the TUI offers only these. steering_why:
    # why it does not take one, for the actions where a reason says more than the list of what it takes.
    steering: frozenset[SteerKind] = frozenset({SteerKind.STOP})
    steering_why: Mapping[SteerKind, str] = field(default_factory=dict)
    # Traits the faces read instead of testing a method's name:
    fork_refusal: str = ""  # why a recorded run cannot be continued from a round ("": it can), one line
    single_round: bool = False  # one round whatever max_rounds says (single-turn): a face says so, sets it 1
    uses_embeddings: bool = True  # its runs embed with MiniLM (single, single-turn never do)
    tests_code_always: bool = False  # code: its own check runs the sandbox every unit, whatever --execute says
    graph_shape: GraphShape = field(default_factory=lambda: GraphShape.EDGES)  # how a summary words a unit's graph

    @property
    def team_roster(self) -> bool:
        """The agents a run shows from its start are the team's own (DyTopo's round loop and its baselines)."""
        return self.round_one_broadcast

    def why_not(self, kind: SteerKind | str) -> str:
        """One line saying why this method does not take ``kind``, or "" when it does."""
        try:
            kind = SteerKind(kind)
        except ValueError:
            return f"unknown steering action {kind!r}"
        if kind in self.steering:
            return ""
        takes = ", ".join(k.value for k in SteerKind if k in self.steering) or "nothing"
        why = self.steering_why.get(kind)
        return f"{self.name} cannot take {kind.value}" + (f": {why}" if why else "") + f" (it takes {takes})"

    def option(self, name: str) -> OptionSpec:
        for spec in self.options:
            if spec.name == name:
                return spec
        known = ", ".join(s.name for s in self.options) or "none"
        raise MethodError(f"{self.name} has no option {name!r} (its options: {known})")

    def position(self, current: int, max_rounds: int) -> str:
        """Where a run is, in the method's own unit: "round 2/5", "step 1/1", "call 1" (no limit to show)."""
        limit = self.unit_limit(max_rounds) if max_rounds else None
        return f"{self.unit} {current}" + (f"/{limit}" if limit else "")

    def max_rounds(self, given: Mapping[str, Any] | None, max_rounds: int) -> int:
        """The max_rounds a run with these options will count against (its limit_option's value, else
        ``max_rounds``)."""
        if not self.limit_option:
            return max_rounds
        try:
            return int(self.resolve(given).get(self.limit_option, max_rounds))
        except MethodError:  # a bad option fails the run with its own message; the count is not the place
            return max_rounds

    def resolve(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults overlaid with the given values, each checked. Options left unset (a call kind's limits,
        which then come from the config table) are left out, so a run records only what was chosen."""
        values = {spec.name: spec.default for spec in self.options}
        for key, value in (given or {}).items():
            spec = self.option(key.replace("-", "_"))
            values[spec.name] = spec.check(self.name, value)
        return {name: value for name, value in values.items() if value is not None}


_REGISTRY: dict[str, MethodInfo] = {}


def register(info: MethodInfo) -> MethodInfo:
    _REGISTRY[info.name] = info
    return info


def registered() -> dict[str, MethodInfo]:
    """The methods registered so far (core.methods.catalogue imports them all)."""
    return dict(_REGISTRY)


def format_options(values: Mapping[str, Any]) -> str:
    """A method's resolved options as one line (``memory=accumulate, payload=auto``), empty values left
    out: what headless, the bench and an exported session print next to a method's name."""
    def text(value: Any) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    return ", ".join(f"{k}={text(v)}" for k, v in sorted(values.items()) if v not in ("", None))


def parse_option_flags(values: list[str] | None) -> dict[str, str]:
    """``-o key=value`` flags as a dict (values stay text; the method's OptionSpec types them)."""
    out: dict[str, str] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise MethodError(f"option {item!r} must look like key=value")
        out[key.strip().replace("-", "_")] = value.strip()
    return out

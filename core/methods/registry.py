"""The method registry: every way of wiring a team that the engine can host, with its options.

A method declares a ``MethodInfo`` (name, one-line summary, its options model, what its steps are called,
a factory, its demo script and fidelity notes) and is found through the ``swarm_tui.methods`` entry point.
A leaf of the methods layer: it imports no method. Everything that offers a choice of method reads the
table through ``core.methods.catalogue``, which loads the methods, and option values from the config file
(``[strategy.NAME]``), flags, a form or MCP are validated here, once, by the method's pydantic model.
``register`` is also the test hook: a test registers a method of its own without installing a package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any, TypeVar, get_args

from annotated_types import Ge, Le
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
)
from pydantic.fields import FieldInfo

from core.runtime.engine import Method
from core.runtime.events import Event
from core.runtime.rosters import Team
from core.runtime.scripted import MethodDemo
from core.runtime.steering import SteerKind


class MethodError(ValueError):
    """An unknown method or a bad option value; the message is one line fit to show a user."""


class MethodOptions(BaseModel):
    """A method's options as a pydantic model: one field per option, with its default, its range (``ge``/``le``),
    its choices (``choice(...)``) and its help (``description``). The CLI's ``-o``, the config file's
    ``[strategy.NAME]``, the launch form's fields, MCP's schema, ``swarm-tui strategies`` and the recorded run
    are all generated from it; pydantic is the one validation (MethodInfo.resolve words its errors)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """true is not 1: a flag meant as a number must be written as one."""
        kind = _kind(cls.model_fields[str(info.field_name)])
        if isinstance(value, bool) and kind in ("int", "float"):
            raise ValueError("a number, not true or false")
        return value

    @field_validator("*", mode="after")
    @classmethod
    def _in_choices(cls, value: Any, info: ValidationInfo) -> Any:
        choices = _extra(cls.model_fields[str(info.field_name)]).get(CHOICES_KEY)
        if isinstance(choices, list) and value not in choices:
            raise ValueError(f"one of {', '.join(choices)}")
        return value


M = TypeVar("M", bound=MethodOptions)
CHOICES_KEY = "choices"  # a field's json_schema_extra key: its allowed values (choice())
CALL_TABLE_KEY = "call_table"  # a call kind's max_tokens or temperature: the settings table it overrides


def choice(default: str, choices: Iterable[str], help: str) -> Any:
    """A text field with a closed set of values (shown as a select, checked by MethodOptions)."""
    allowed: list[JsonValue] = list(choices)
    return Field(default, description=help, json_schema_extra={CHOICES_KEY: allowed, "enum": allowed})


def _extra(field_info: FieldInfo) -> dict[str, Any]:
    extra = field_info.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def _kind(field_info: FieldInfo) -> str:
    """"bool", "int", "float", "choice" or "str": how a field reads from text and shows in a form."""
    if _extra(field_info).get(CHOICES_KEY):
        return "choice"
    annotation = field_info.annotation
    types = set(get_args(annotation)) - {type(None)} if get_args(annotation) else {annotation}
    for kind in (bool, int, float):
        if kind in types:
            return kind.__name__
    return "str"


def _bound(field_info: FieldInfo, low: bool) -> float | None:
    """The field's ``ge`` (low) or ``le`` bound, as declared (an int stays an int: "between 1 and 64")."""
    for item in field_info.metadata:
        value = item.ge if low and isinstance(item, Ge) else item.le if not low and isinstance(item, Le) else None
        if isinstance(value, int | float):
            return value
    return None


@dataclass(frozen=True)
class OptionSpec:
    """One option of a method, as its options model declares it (generated: MethodInfo.options).
    kind: "float", "int", "str", "bool" or "choice"."""

    name: str
    kind: str
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    call_table: str = ""  # a call kind's max_tokens or temperature (CallLimits): the table it overrides

    @classmethod
    def of(cls, name: str, field_info: FieldInfo) -> OptionSpec:
        extra = _extra(field_info)
        return cls(name, _kind(field_info), field_info.default, field_info.description or "",
                   low=_bound(field_info, low=True), high=_bound(field_info, low=False),
                   choices=tuple(extra.get(CHOICES_KEY) or ()), call_table=str(extra.get(CALL_TABLE_KEY) or ""))

    def describe(self) -> str:
        if self.kind == "choice":
            allowed = "|".join(self.choices)
        elif self.low is not None or self.high is not None:
            allowed = f"{self.low if self.low is not None else ''}..{self.high if self.high is not None else ''}"
        else:
            allowed = self.kind
        return f"{self.name}={self.default!r} ({allowed}): {self.help}"

    def problem(self, method: str, value: Any) -> str:
        """One line: why ``value`` is not a value of this option (MethodInfo.resolve words pydantic's error so)."""
        where = f"[strategy.{method}] {self.name}"
        if self.kind == "bool":
            return f"{where} must be true or false, got {value!r}"
        if self.kind == "choice":
            return f"{where} must be one of {', '.join(self.choices)}, got {value!r}"
        if self.kind in ("int", "float"):
            number = _number(value, self.kind)
            if number is not None:
                return f"{where} must be between {self.low} and {self.high}, got {number}"
            what = "a whole number" if self.kind == "int" else "a number"
            return f"{where} must be {what}, got {value!r}"
        return f"{where} must be a string, got {value!r}"


def _number(value: Any, kind: str) -> int | float | None:
    """``value`` as the option's number when it is one (then only its range was wrong), else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if kind == "int":
        return int(number) if number.is_integer() else None
    return number


# The settings table each call kind's limits come from, unless its own options say otherwise.
CALL_TABLES = {"manager_call", "work_call", "descriptor_call"}
MAX_TOKENS_SUFFIX = "_max_tokens"
TEMPERATURE_SUFFIX = "_temperature"


@dataclass(frozen=True)
class CallLimits:
    """A call kind's own max_tokens and temperature (``-o summarizer_max_tokens=300``): unset, the settings'
    ``[table]`` values apply; --max-tokens caps them, and a team file's per-agent values win over them.
    ``calls`` names the calls, as in "the Summarizer's calls"."""

    kind: str
    calls: str
    table: str

    def fields(self) -> dict[str, Any]:
        """The two option fields (name -> (type, Field)), as pydantic.create_model takes them."""
        extra: dict[str, Any] = {CALL_TABLE_KEY: self.table}
        return {
            f"{self.kind}{MAX_TOKENS_SUFFIX}": (int | None, Field(
                None, ge=1, le=1_000_000, description=f"max_tokens of {self.calls} (unset: [{self.table}])",
                json_schema_extra=extra)),
            f"{self.kind}{TEMPERATURE_SUFFIX}": (float | None, Field(
                None, ge=0.0, le=2.0, description=f"temperature of {self.calls} (unset: [{self.table}])",
                json_schema_extra=extra)),
        }


def call_options(kind: str, calls: str, table: str) -> CallLimits:
    """A call kind's limits as options (CallLimits), added to a method's model by ``with_calls``."""
    assert table in CALL_TABLES
    return CallLimits(kind, calls, table)


def call_tables(limits: Iterable[CallLimits]) -> dict[str, str]:
    """Each call kind's settings table (``{"manager": "manager_call"}``): what a method class hands the engine
    as ``call_tables`` (SwarmEngine.call_limits reads it)."""
    return {limit.kind: limit.table for limit in limits}


def with_calls(model: type[M], limits: Iterable[CallLimits]) -> type[M]:
    """``model`` with each call kind's max_tokens and temperature options after its own fields."""
    fields: dict[str, Any] = {}
    for limit in limits:
        fields.update(limit.fields())
    return create_model(model.__name__, __base__=model, __module__=model.__module__, **fields)


@dataclass(frozen=True)
class Deviation:
    """One departure of a method from its paper (MethodInfo.fidelity; core.methods.fidelity lists them all)."""

    method: str  # a registered method name, or "all"
    what: str  # what the app does
    why: str  # the reason
    restore: str = ""  # how to get the paper's behaviour back ("" when the app cannot)
    option: tuple[str, str] | None = None  # (option, value) of the method that restores the paper
    default_is_paper: bool = False  # the default already follows the paper; the entry names an opt-out


MethodFactory = Callable[[dict[str, Any], Team], Method]


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
    factory: MethodFactory  # (checked options, team) -> a fresh Method for one run
    options_model: type[MethodOptions] = MethodOptions  # its options (fields: defaults, ranges, choices, help)
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
    # What the scripted server plays for the method's own calls in --demo and bench --demo: a MethodDemo, or
    # "module:attribute" naming one, imported only when a demo asks (a real run never loads its script).
    demo: MethodDemo | str | None = None
    fidelity: tuple[Deviation, ...] = ()  # where it departs from its paper (its package's fidelity.py)

    def demo_script(self) -> MethodDemo | None:
        """The method's demo script (its ``demo``, imported if named), or None when it ships none."""
        if self.demo is None or isinstance(self.demo, MethodDemo):
            return self.demo
        module, _, attribute = self.demo.partition(":")
        script = getattr(importlib.import_module(module), attribute)
        if not isinstance(script, MethodDemo):
            raise MethodError(f"{self.name}'s demo {self.demo!r} is not a MethodDemo")
        return script
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

    @property
    def options(self) -> tuple[OptionSpec, ...]:
        """Its options as the faces show them, generated from ``options_model``."""
        return option_specs(self.options_model)

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
        """Defaults overlaid with the given values, validated by the options model (MethodError, one line
        naming the method, the option and what it allows). Options left unset (a call kind's limits, which
        then come from the config table) are left out, so a run records only what was chosen."""
        return {k: v for k, v in self.validate(given).model_dump().items() if v is not None}

    def validate(self, given: Mapping[str, Any] | None) -> MethodOptions:
        """The options model built from ``given`` (text from a flag, or values from a file, a form or a
        recorded run): keys may be spelled with dashes; None means "not set"."""
        values: dict[str, Any] = {}
        for key, value in (given or {}).items():
            spec = self.option(key.replace("-", "_"))
            if value is not None or spec.default is None:  # a recorded run's options hold None for "not set"
                values[spec.name] = value
        try:
            return self.options_model.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else ""
            raise MethodError(self.option(name).problem(self.name, first["input"])) from None


@cache
def option_specs(model: type[MethodOptions]) -> tuple[OptionSpec, ...]:
    """A model's fields as OptionSpecs, in declaration order."""
    return tuple(OptionSpec.of(name, info) for name, info in model.model_fields.items())


_REGISTRY: dict[str, MethodInfo] = {}


def register(info: MethodInfo) -> MethodInfo:
    _REGISTRY[info.name] = info
    return info


def unregister(name: str) -> None:
    """Forget a method registered in this process (the test hook's other half; built-ins stay installed)."""
    _REGISTRY.pop(name, None)


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

"""A session file's shape as pydantic models, and their errors worded as one line.

The file's top level, each recorded event (a model built from the event dataclass's own type hints, so
a field added to an event is checked with no change here), the run parameters and a fork's parent are
validated strictly: a number is not text, true is not 1, no field the event does not have, no NaN. What
pydantic cannot say (depth, text size, lone surrogates: core.sessions.model's plain-data check) and what
depends on the whole stream (order, agents, graphs) is checked beside it in core.sessions.model.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from enum import StrEnum
from typing import Annotated, Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, create_model

from core.runtime import events as ev

MAX_TS = 253_402_300_799.0  # 9999-12-31, the last second datetime can show

_STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class SessionFile(BaseModel):
    """The top level of a file (schema version 1): the events are checked one by one after it."""

    model_config = _STRICT
    schema_version: int
    app_version: str = "unknown"
    created: str | None = None
    finished: str | None = None
    metadata: Any = None  # readable copies: compared with what the events say
    outcome: Any = None
    events: list[Any]


class RunParams(BaseModel):
    """tau, k_in and max_rounds as a round started or the user changed them."""

    model_config = ConfigDict(strict=True, extra="allow", allow_inf_nan=False)
    tau: Annotated[float, Field(ge=0.0, le=1.0)]
    k_in: Annotated[int, Field(ge=1)]
    max_rounds: Annotated[int, Field(ge=1)]


class ParentRef(BaseModel):
    """A fork's parent: the session it came from and the last round it kept."""

    model_config = ConfigDict(strict=True, extra="allow")
    session: str
    round: Annotated[int, Field(ge=0)]


def _field_hint(name: str, hint: Any) -> Any:
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return Annotated[hint, Strict(False)]  # recorded as its text ("done"); event_from_dict makes it the enum
    if name == "ts":
        return Annotated[float, Field(ge=0.0, le=MAX_TS)]
    if name == "round" and hint is int:
        return Annotated[int, Field(ge=0)]
    return hint


_RECORDS: dict[str, type[BaseModel]] = {}


def event_record(cls: type[ev.Event]) -> type[BaseModel]:
    """The pydantic model of one event type as a file records it: its fields from the dataclass's hints
    (built once per type)."""
    found = _RECORDS.get(cls.type)
    if found is None:
        found = _RECORDS[cls.type] = _build_record(cls)
    return found


def _build_record(cls: type[ev.Event]) -> type[BaseModel]:
    hints = get_type_hints(cls)
    spec: dict[str, Any] = {"type": (Literal[cls.type], ...)}
    for f in fields(cls):
        if f.default is not MISSING:
            default: Any = f.default
        elif f.default_factory is not MISSING:
            default = Field(default_factory=f.default_factory)
        else:
            default = ...
        spec[f.name] = (_field_hint(f.name, hints[f.name]), default)
    return create_model(f"{cls.__name__}Record", __config__=_STRICT, **spec)


# --- errors as one line ------------------------------------------------------------------------------

_EXPECTED = {
    "string": "must be text", "int": "must be a whole number", "float": "must be a number",
    "bool": "must be true/false", "list": "must be a list", "dict": "must be an object",
    "model": "must be an object", "none": "must be null", "finite_number": "must be a finite number",
}


def short(value: Any) -> str:
    """A value quoted for an error message: short, one line, never the whole hostile payload."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:59] + "…"


def describe(value: Any) -> str:
    """What a value is, in a user's words: text, a whole number, a list, ..."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    names = {str: "text", int: "a whole number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _expected(error: Any) -> str:
    kind = str(error["type"])
    if kind == "enum":
        return f"must be one of {error.get('ctx', {}).get('expected', '').replace(' or ', ', ')}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return "is out of range"
    for prefix, words in _EXPECTED.items():
        if kind.startswith(prefix):
            return words
    return str(error["msg"]).lower()


def _path(loc: tuple[Any, ...]) -> str:
    return "".join(f" item {p}" if isinstance(p, int) else f" key {short(p)}" for p in loc)


def event_problem(where: str, exc: ValidationError) -> str:
    """The first thing wrong with a recorded event, as one line beginning with ``where``."""
    error = exc.errors()[0]
    loc, kind, value = tuple(error["loc"]), str(error["type"]), error.get("input")
    name = str(loc[0]) if loc else ""
    if kind == "extra_forbidden":
        return f"{where} has an unknown field {short(name)}"
    if kind == "missing":
        return f"{where}: field {name!r} is missing"
    if name == "ts" and len(loc) == 1 and kind.endswith(("than", "than_equal")):
        return f"{where}: timestamp {short(value)} is out of range"
    if name == "round" and len(loc) == 1 and kind == "greater_than_equal":
        return f"{where}: round number {value} is negative"
    return f"{where}: field {name!r}{_path(loc[1:])} {_expected(error)}, got {describe(value)}"


def params_problem(where: str, exc: ValidationError) -> str:
    error = exc.errors()[0]
    name, value = str(error["loc"][0]) if error["loc"] else "params", error.get("input")
    if name == "tau":
        return f"{where}: tau must be a number between 0 and 1, got {short(value)}"
    return f"{where}: {name} must be a whole number of at least 1, got {short(value)}"


def file_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    loc, kind, value = tuple(error["loc"]), str(error["type"]), error.get("input")
    name = str(loc[0]) if loc else "top level"
    if kind == "extra_forbidden":
        return f"unknown top-level field {short(name)}"
    if name == "events" and kind == "missing":
        return "the session has no events list"
    if kind == "missing":
        return f"the session has no {name}"
    return f"{name}{_path(loc[1:])} {_expected(error)}, got {describe(value)}"

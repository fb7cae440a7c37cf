"""Settings: the one place for defaults and for the bounds of every value.

Precedence, lowest to highest: the defaults below, the TOML config file (platformdirs user config dir,
or ``--config FILE``), environment variables, command-line flags. Each field's type and bounds are
written once, on ``Settings`` (pydantic ``Field`` constraints); ``check_setting`` validates one value
through them with pydantic and words any problem as one line, so a command-line flag, a config file
entry and an MCP argument are refused with the same bound and the same message.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field, fields, is_dataclass, replace
from enum import StrEnum
from typing import Annotated, Any, get_type_hints

from pydantic import BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

from core.llm.urls import DEFAULT_BASE_URL, URLError, check_base_url

APP_NAME = "swarm-tui"
# The word that switches a stop off where a number sets it (a file, the environment, a flag): None in Settings.
OFF = "off"


def _off_is_none(value: Any) -> Any:
    return None if isinstance(value, str) and value.strip().lower() == OFF else value


# A setting that may also be switched off: its number, or "off" (None).
Switchable = BeforeValidator(_off_is_none)



class DomainName(StrEnum):
    """The kind of problem a run solves: it picks the built-in team, the answer checks and the prompts."""

    CODE = "code"
    MATH = "math"
    GENERAL = "general"


class RoundProtocol(StrEnum):
    """DyTopo's round: descriptors, routing, then work (phased), or work and descriptors in one call."""

    PHASED = "phased"
    SINGLE_PASS = "single-pass"


class SlotPlacement(StrEnum):
    """Which llama.cpp request slot runs an agent's call (the request's ``id_slot``).

    SERVER: none is named, and the server places each call. A llama-server with a host prompt cache (built since
    late 2025: ``--cache-ram``, on by default, keeps idle slots' prompts in memory) then finds the agent's own
    conversation, or the team's shared preamble for an agent's first call, wherever it was; one that runs with
    a unified KV cache (the default without ``-np``) clears idle slots, so a named slot would find nothing there.
    PER_AGENT: each agent keeps a slot of its own when the server has enough (a server without that cache)."""

    SERVER = "server"
    PER_AGENT = "per-agent"


DOMAINS = tuple(DomainName)
PROTOCOLS = tuple(RoundProtocol)


class ConfigError(ValueError):
    """A setting has a bad value; the message is one line fit to show a user."""


MAX_ROUNDS = 10  # the reference deployment's cap on DyTopo's rounds
MAX_TIME_BUDGET_S = 36_000.0  # ten hours: a bound for a run's wall time that no real run reaches
MAX_CALLS = 100_000
MAX_COST_USD = 100_000.0  # a bound no run reaches: a typo's extra zeros are refused, not obeyed


# The method a run uses unless it names one (core.methods): the faces say "method X" only for another.
DEFAULT_STRATEGY = "dytopo"

@dataclass(frozen=True)
class CallLimits:
    temperature: Annotated[float, Field(ge=0.0, le=2.0)]
    max_tokens: Annotated[int, Field(ge=1)]


# A value from a fixed set given as its text ("math"): checked against the enum, not against its type.
_AS_TEXT = Field(strict=False)


@dataclass(frozen=True)
class Settings:
    domain: Annotated[DomainName, _AS_TEXT] = DomainName.CODE
    tau: Annotated[float, Field(ge=0.0, le=1.0)] = 0.3
    k_in: Annotated[int, Field(ge=1)] = 3  # and at most N-1 for a team of N workers: validate(n_workers)
    max_rounds: Annotated[int, Field(ge=1, le=MAX_ROUNDS)] = 5
    protocol: Annotated[RoundProtocol, _AS_TEXT] = RoundProtocol.PHASED
    # The method (core.methods) and each method's options, from [strategy.NAME] tables or -o flags.
    strategy: str = DEFAULT_STRATEGY
    strategy_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The team (core.runtime.teams): a built-in name, a [team.NAME] table's name or a team file; None: the
    # built-in team of ``domain``. ``teams`` holds the [team.NAME] tables.
    team: str | None = None
    teams: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Endpoint. base_url None means "not set here": resolved by resolve_base_url().
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: Annotated[int, Field(ge=1, le=64)] = 4
    call_timeout: Annotated[float, Field(gt=0)] = 120.0  # seconds: the longest silence tolerated inside a stream
    # Seconds from sending a request to the response starting (connect included); past it the call ends
    # with "no answer from URL in N s" and is not retried.
    first_byte_timeout: Annotated[float, Field(gt=0)] = 30.0
    # Retries of a call that failed before it started (408/409/429/5xx, refused).
    max_retries: Annotated[int, Field(ge=0)] = 2
    # Seconds one call may spend waiting between retries (Retry-After, backoff).
    max_retry_wait: Annotated[float, Field(ge=0)] = 60.0
    # The slowest stream a call waits for: a call reading longer than max_tokens / this + call_timeout
    # seconds is cut off there, as if at max_tokens (a server that trickles, or never ends its stream).
    min_tokens_per_second: Annotated[float, Field(gt=0)] = 2.0
    # Which llama.cpp slot runs an agent's calls: the server's choice, or one slot per agent (SlotPlacement).
    llama_slots: Annotated[SlotPlacement, _AS_TEXT] = SlotPlacement.SERVER
    # Model calls that may fail in a row (no reply, after their retries) before the run ends; None: twice
    # the team's size. One failed call fails its agent's turn only (core.runtime.faults).
    max_failed_calls_in_a_row: Annotated[int, Field(ge=1)] | None = None
    # Per-call sampling, from the reference deployment.
    descriptor_call: CallLimits = CallLimits(0.1, 256)
    work_call: CallLimits = CallLimits(0.3, 4096)
    manager_call: CallLimits = CallLimits(0.1, 2000)
    top_p: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    top_k: Annotated[int, Field(ge=1)] | None = None
    min_p: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    no_think: bool = False  # append /no_think to descriptor calls (Qwen3)
    # Memory and termination.
    context_budget_tokens: Annotated[int, Field(ge=500)] = 12000
    # The run also ends when the workers' outputs stop changing (mean similarity >= this); "off" (None): only
    # the Manager or max_rounds end it, as in the paper (docs/fidelity.md).
    convergence_threshold: Annotated[Annotated[float, Field(ge=0.0, le=1.0)] | None, Switchable] = 0.95
    # Embeddings: a local sentence-transformers folder tried before the bundled package.
    embedding_model_path: str | None = None
    # MiniLM quantised to int8 (ONNX Runtime dynamic quantisation): about twice as fast, an opt-in because
    # its vectors differ slightly (bench/routing.py prints how often the routed graph stays the same).
    embedding_int8: bool = False
    # Bounds of one run (None: unbounded). At the bound the run cancels its calls in flight, keeps every
    # finished call, and ends with reason "budget" and the best valid answer so far (or none).
    time_budget: Annotated[float, Field(ge=1, le=MAX_TIME_BUDGET_S, description="seconds")] | None = None
    max_calls: Annotated[int, Field(ge=1, le=MAX_CALLS)] | None = None  # model calls, re-asks included
    max_tokens: Annotated[int, Field(ge=1)] | None = None  # caps every call kind's max_tokens at once
    # US dollars the run's calls may cost (core.llm.prices): past it the run ends with reason "budget".
    max_cost: Annotated[float, Field(gt=0, le=MAX_COST_USD, description="USD")] | None = None
    # The user's prices, USD per million tokens, by model name ([prices.MODEL]: input, output, cached_input):
    # they win over the genai-prices table, and price a local server's calls too (else free).
    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    price_local_endpoints: bool = False  # price a local endpoint from the table (a local proxy to a hosted API)
    # OpenTelemetry (core.telemetry): the OTLP/HTTP collector to send each run's trace to (--otel URL); the
    # standard OTEL_* variables work without it. None: traces only when those variables ask.
    otel_endpoint: str | None = None
    # Sessions and UI.
    sessions_dir: str = "sessions"
    theme: str = "textual-dark"
    keymap: dict[str, str] = field(default_factory=dict)
    execute_code: bool = False
    # Run model-written code even where it cannot be isolated (no bubblewrap): it then runs with the
    # user's own rights. Off by default: such code is refused with a line saying how to get isolation.
    allow_unisolated_code: bool = False

    @property
    def runs_code_tests(self) -> bool:
        """The execute-code rule: the code's tests run in the sandbox after each round when execute_code is
        on and the task is code (core.compose.assembly.make_evaluator; the screens and the CLI say it)."""
        return bool(self.execute_code) and self.domain == DomainName.CODE

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given non-None values applied, validated."""
        clean = {k: v for k, v in changes.items() if v is not None}
        updated = replace(self, **clean)
        updated.validate()
        return updated

    def validate(self, n_workers: int | None = None) -> None:
        """Every field within its type and bounds (ConfigError, one line, for the first that is not); with
        ``n_workers``, k_in also within 1..N-1 of the team."""
        upper = n_workers - 1 if n_workers else None
        if upper is not None and isinstance(self.k_in, int) and not 1 <= self.k_in <= upper:
            raise ConfigError(f"k_in must be between 1 and {upper}, got {self.k_in}")  # the team's own range
        for f in fields(self):
            check_setting(f.name, getattr(self, f.name))
        for name, url in (("base_url", self.base_url), ("otel_endpoint", self.otel_endpoint)):
            if url is None:
                continue
            try:
                check_base_url(url)
            except URLError as exc:
                raise ConfigError(str(exc) if name == "base_url" else f"otel_endpoint: {exc}") from None


# --- checking one value against its field -------------------------------------------------------------

# A file's 5 is not text, "5" is not a number, true is not 1; and no value may be NaN or infinite.
_STRICT = ConfigDict(strict=True, allow_inf_nan=False)
_LAX = ConfigDict(strict=False, allow_inf_nan=False)  # text from a command line or the environment: "0.4"


@functools.cache
def _field_types(owner: type) -> dict[str, Any]:
    return get_type_hints(owner, include_extras=True)


@functools.cache
def _adapter(owner: type, name: str, from_text: bool) -> TypeAdapter[Any]:
    return TypeAdapter(_field_types(owner)[name], config=_LAX if from_text else _STRICT)


def _constraints(owner: type, name: str) -> dict[str, Any]:
    """The field's bounds and unit, read from its annotation: {"ge": 1, "le": 36000, "unit": "seconds"}."""
    found: dict[str, Any] = {}
    stack = [_field_types(owner)[name]]
    while stack:
        hint = stack.pop()
        for meta in getattr(hint, "__metadata__", ()):
            for key in ("ge", "gt", "le", "lt"):
                for item in getattr(meta, "metadata", [meta]):
                    if getattr(item, key, None) is not None:
                        found[key] = getattr(item, key)
            if getattr(meta, "description", None):
                found["unit"] = meta.description
            if meta is Switchable:
                found["off"] = True
        stack.extend(getattr(hint, "__args__", ()))
    return found


def _num(value: float) -> str:
    return f"{value:g}"


def bounds_text(name: str, owner: type | None = None) -> str:
    """How a setting's bounds read in a message or a --help line: "between 0 and 1", "at least 500"."""
    c = _constraints(owner or Settings, name)
    unit = f" {c['unit']}" if "unit" in c else ""
    off = f', or "{OFF}"' if c.get("off") else ""
    return _range_text(c, unit) + off


def _range_text(c: dict[str, Any], unit: str) -> str:
    if "ge" in c and "le" in c:
        return f"between {_num(c['ge'])} and {_num(c['le'])}{unit}"
    if "gt" in c and "le" in c:
        return f"more than {_num(c['gt'])} and at most {_num(c['le'])}{unit}"
    if "gt" in c:
        return "positive" if c["gt"] == 0 else f"more than {_num(c['gt'])}{unit}"
    if "ge" in c:
        return f"0 or more{unit}" if c["ge"] == 0 else f"at least {_num(c['ge'])}{unit}"
    return "valid"


def schema_bounds(name: str) -> dict[str, Any]:
    """A setting's bounds as JSON Schema keywords, for a published schema (MCP's tool arguments)."""
    c = _constraints(Settings, name)
    words = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
    return {words[k]: v for k, v in c.items() if k in words}


def _shown(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _num(value) if isinstance(value, float) and math.isfinite(value) else str(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


_TYPE_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "string": "text",
               "dict": "a table", "list": "a list"}


def _problem(owner: type, name: str, label: str, value: Any, error: Any) -> str:
    kind = str(error["type"])
    switchable = bool(_constraints(owner, name).get("off"))
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than") or (
        switchable and kind.startswith("float")
    ):  # a number, or its text
        return f"{label} must be {bounds_text(name, owner)}, got {value if isinstance(value, str) else _shown(value)}"
    if kind == "enum":
        enum = next(t for t in _enum_types(_field_types(owner)[name]))
        return f"unknown {label} {value!r}: choose one of {', '.join(enum)}"
    if kind == "finite_number":
        return f"{label} must be a finite number, got {_shown(value)}"
    for prefix, words in _TYPE_WORDS.items():
        if kind.startswith(prefix):
            return f"{label} must be {words}, got {_shown(value)}"
    return f"{label}: {error['msg']}, got {_shown(value)}"


def _enum_types(hint: Any) -> list[type[StrEnum]]:
    out = [hint] if isinstance(hint, type) and issubclass(hint, StrEnum) else []
    for arg in getattr(hint, "__args__", ()):
        out.extend(_enum_types(arg))
    return out


def check_setting(name: str, value: Any, *, from_text: bool = False, owner: type | None = None,
                  label: str | None = None) -> Any:
    """``value`` checked as the setting ``name`` (its type and bounds on Settings, or on ``owner``, e.g.
    CallLimits): returned as the field's type, or ConfigError with one line naming the field and the bound.
    ``from_text``: the value is text from a command line or the environment, read as the field's type."""
    owner = owner or Settings
    label = label or name
    hint = _field_types(owner).get(name)
    if hint is None:
        raise ConfigError(f"unknown setting {name!r}")
    if is_dataclass(value) and not isinstance(value, type):  # a table of its own (CallLimits): each part
        for f in fields(value):
            check_setting(f.name, getattr(value, f.name), owner=type(value), label=f"{label}.{f.name}")
        return value
    try:
        return _adapter(owner, name, from_text).validate_python(value)
    except ValidationError as exc:
        raise ConfigError(_problem(owner, name, label, value, exc.errors()[0])) from None


def settings_from(values: dict[str, Any], base: Settings | None = None) -> Settings:
    """``base`` (the defaults) with ``values`` applied, each checked and converted to its field's type
    (a domain's text becomes its DomainName): ConfigError for the first bad one."""
    checked = {name: check_setting(name, value) for name, value in values.items()}
    return replace(base or Settings(), **checked)


def resolve_base_url(settings: Settings, environ: dict[str, str] | None = None) -> str:
    """--base-url or config file, else OPENAI_BASE_URL, else the LM Studio default."""
    env = os.environ if environ is None else environ
    return settings.base_url or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL


def resolve_api_key(
    settings: Settings, environ: dict[str, str] | None = None, *, key_env: str | None = None
) -> str:
    """The key is only ever read from the environment (``key_env``, else the settings' variable); local
    servers accept any placeholder."""
    env = os.environ if environ is None else environ
    return env.get(key_env or settings.api_key_env) or "not-needed"

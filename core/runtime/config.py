"""Settings: the one place for defaults (DESIGN rule 5).

Precedence, lowest to highest: the defaults below, the TOML config file (platformdirs user config dir,
or ``--config FILE``), environment variables, command-line flags.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from core.llm.urls import DEFAULT_BASE_URL, URLError, check_base_url

APP_NAME = "swarm-tui"



class DomainName(StrEnum):
    """The kind of problem a run solves: it picks the built-in team, the answer checks and the prompts."""

    CODE = "code"
    MATH = "math"
    GENERAL = "general"


class RoundProtocol(StrEnum):
    """DyTopo's round: descriptors, routing, then work (phased), or work and descriptors in one call."""

    PHASED = "phased"
    SINGLE_PASS = "single-pass"


DOMAINS = tuple(DomainName)
PROTOCOLS = tuple(RoundProtocol)


class ConfigError(ValueError):
    """A setting has a bad value; the message is one line fit to show a user."""


@dataclass(frozen=True)
class CallLimits:
    temperature: float
    max_tokens: int


@dataclass(frozen=True)
class Settings:
    domain: str = "code"
    tau: float = 0.3
    k_in: int = 3
    max_rounds: int = 5
    protocol: str = "phased"
    # The method (core.methods) and each method's options, from [strategy.NAME] tables or -o flags.
    strategy: str = "dytopo"
    strategy_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The team (core.runtime.teams): a built-in name, a [team.NAME] table's name or a team file; None: the
    # built-in team of ``domain``. ``teams`` holds the [team.NAME] tables.
    team: str | None = None
    teams: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Endpoint. base_url None means "not set here": resolved by resolve_base_url().
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 4
    call_timeout: float = 120.0  # seconds: the longest silence tolerated inside a stream
    # Seconds from sending a request to the response starting (connect included); past it the call ends
    # with "no answer from URL in N s" and is not retried.
    first_byte_timeout: float = 30.0
    max_retries: int = 2  # retries of a call that failed before it started (408/409/429/5xx, refused)
    max_retry_wait: float = 60.0  # seconds one call may spend waiting between retries (Retry-After, backoff)
    # The slowest stream a call waits for: a call reading longer than max_tokens / this + call_timeout
    # seconds is cut off there, as if at max_tokens (a server that trickles, or never ends its stream).
    min_tokens_per_second: float = 2.0
    # Model calls that may fail in a row (no reply, after their retries) before the run ends; None: twice
    # the team's size. One failed call fails its agent's turn only (core.runtime.faults).
    max_failed_calls_in_a_row: int | None = None
    # Per-call sampling, from the reference deployment.
    descriptor_call: CallLimits = CallLimits(0.1, 256)
    work_call: CallLimits = CallLimits(0.3, 4096)
    manager_call: CallLimits = CallLimits(0.1, 2000)
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    no_think: bool = False  # append /no_think to descriptor calls (Qwen3)
    # Memory and termination.
    context_budget_tokens: int = 12000
    convergence_threshold: float = 0.95
    # Embeddings: a local sentence-transformers folder tried before the bundled package.
    embedding_model_path: str | None = None
    # MiniLM quantised to int8 (ONNX Runtime dynamic quantisation): about twice as fast, an opt-in because
    # its vectors differ slightly (bench/routing.py prints how often the routed graph stays the same).
    embedding_int8: bool = False
    # Bounds of one run (None: unbounded). At the bound the run cancels its calls in flight, keeps every
    # finished call, and ends with reason "budget" and the best valid answer so far (or none).
    time_budget: float | None = None  # seconds of wall time
    max_calls: int | None = None  # model calls, re-asks included
    max_tokens: int | None = None  # caps every call kind's max_tokens at once
    # Sessions and UI.
    sessions_dir: str = "sessions"
    theme: str = "textual-dark"
    keymap: dict[str, str] = field(default_factory=dict)
    execute_code: bool = False
    # Run model-written code even where it cannot be isolated (no bubblewrap): it then runs with the
    # user's own rights. Off by default: such code is refused with a line saying how to get isolation.
    allow_unisolated_code: bool = False

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given non-None values applied, validated."""
        clean = {k: v for k, v in changes.items() if v is not None}
        updated = replace(self, **clean)
        updated.validate()
        return updated

    def validate(self, n_workers: int | None = None) -> None:
        if self.domain not in DOMAINS:
            raise ConfigError(f"unknown domain {self.domain!r}: choose one of {', '.join(DOMAINS)}")
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"unknown protocol {self.protocol!r}: choose one of {', '.join(PROTOCOLS)}")
        if not 0.0 <= self.tau <= 1.0:
            raise ConfigError(f"tau must be between 0 and 1, got {self.tau}")
        if not 1 <= self.max_rounds <= 10:
            raise ConfigError(f"max_rounds must be between 1 and 10, got {self.max_rounds}")
        upper = n_workers - 1 if n_workers else None
        if self.k_in < 1 or (upper is not None and self.k_in > upper):
            bound = f"be between 1 and {upper}" if upper else "be at least 1"
            raise ConfigError(f"k_in must {bound}, got {self.k_in}")
        if self.max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {self.max_concurrency}")
        if self.call_timeout <= 0:
            raise ConfigError(f"call_timeout must be positive, got {self.call_timeout}")
        if self.first_byte_timeout <= 0:
            raise ConfigError(f"first_byte_timeout must be positive, got {self.first_byte_timeout}")
        if self.max_retry_wait < 0:
            raise ConfigError(f"max_retry_wait must be 0 or more, got {self.max_retry_wait}")
        if not self.min_tokens_per_second > 0:
            raise ConfigError(f"min_tokens_per_second must be positive, got {self.min_tokens_per_second}")
        if self.max_failed_calls_in_a_row is not None and self.max_failed_calls_in_a_row < 1:
            raise ConfigError(f"max_failed_calls_in_a_row must be at least 1, got {self.max_failed_calls_in_a_row}")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ConfigError(f"time_budget must be a positive number of seconds, got {self.time_budget}")
        for name in ("max_calls", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        if self.base_url is not None:
            try:
                check_base_url(self.base_url)
            except URLError as exc:
                raise ConfigError(str(exc)) from None
        for name in ("descriptor_call", "work_call", "manager_call"):
            if getattr(self, name).max_tokens < 1:
                raise ConfigError(f"{name}.max_tokens must be at least 1, got {getattr(self, name).max_tokens}")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be 0 or more, got {self.max_retries}")
        if self.context_budget_tokens < 500:
            raise ConfigError(f"context_budget_tokens must be at least 500, got {self.context_budget_tokens}")


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

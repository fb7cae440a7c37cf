"""Settings: the one place for defaults (DESIGN rule 5).

Precedence, lowest to highest: the defaults below, the TOML config file (platformdirs user config dir,
or ``--config FILE``), environment variables, command-line flags.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import platformdirs

APP_NAME = "swarm-tui"
DEFAULT_BASE_URL = "http://localhost:1234/v1"  # LM Studio, the reference deployment's endpoint

DOMAINS = ("code", "math", "general")
PROTOCOLS = ("phased", "single-pass")


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
    # Sessions and UI.
    sessions_dir: str = "sessions"
    theme: str = "textual-dark"
    keymap: dict[str, str] = field(default_factory=dict)
    execute_code: bool = False

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
        if self.base_url is not None:
            check_base_url(self.base_url)
        for name in ("descriptor_call", "work_call", "manager_call"):
            if getattr(self, name).max_tokens < 1:
                raise ConfigError(f"{name}.max_tokens must be at least 1, got {getattr(self, name).max_tokens}")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be 0 or more, got {self.max_retries}")
        if self.context_budget_tokens < 500:
            raise ConfigError(f"context_budget_tokens must be at least 500, got {self.context_budget_tokens}")


def check_base_url(url: str, *, allow_userinfo: bool = False) -> str:
    """The endpoint URL, checked before anything connects: http or https, a host, a port in 1..65535.
    ConfigError with one line otherwise. ``user:password@`` in the URL is refused (the HTTP client would
    send it as Basic auth instead of the API key) unless ``allow_userinfo``."""
    shown = url if len(url) <= 200 else url[:199] + "…"
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError as exc:  # "Invalid IPv6 URL"
        raise ConfigError(f"the endpoint URL {shown!r} cannot be parsed ({exc}): e.g. {DEFAULT_BASE_URL}") from None
    try:
        port = parts.port
    except ValueError:  # out of range, or not a number
        text = parts.netloc.rpartition(":")[2]
        raise ConfigError(f"the endpoint URL {shown!r} has port {text!r}: it must be a number 1..65535") from None
    if parts.scheme.lower() not in ("http", "https"):
        got = f"{parts.scheme!r}" if parts.scheme else "none"
        raise ConfigError(f"the endpoint URL {shown!r} must start with http:// or https:// (scheme: {got})")
    if not host:
        raise ConfigError(f"the endpoint URL {shown!r} has no host: e.g. {DEFAULT_BASE_URL}")
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError(f"the endpoint URL {shown!r} has port {port}: it must be a number 1..65535")
    if (parts.username is not None or parts.password is not None) and not allow_userinfo:
        raise ConfigError(
            "the endpoint URL holds a user name or password (user:password@): remove it and put the key in "
            "$OPENAI_API_KEY (or the variable named by --api-key-env), not in the URL"
        )
    return url


def strip_userinfo(url: str) -> str:
    """The URL without ``user:password@`` (unchanged when it has none or cannot be parsed)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


_CALL_KEYS = {"descriptor_call", "work_call", "manager_call"}


# What a scalar setting must hold in a file (the dataclass annotations are strings here). TOML gives
# typed values, so a wrong type is the user's mistake to name, not something to coerce or crash on.
_KINDS: dict[str, tuple[type, ...]] = {"float": (int, float), "int": (int,), "str": (str,), "bool": (bool,)}
_KIND_NAMES = {"float": "a number", "int": "a whole number", "str": "a quoted string", "bool": "true or false"}


def _check_kind(name: str, value: Any, annotation: str, source: str) -> Any:
    kind = annotation.removesuffix(" | None")
    allowed = _KINDS.get(kind)
    if allowed is None:
        return value
    if not isinstance(value, allowed) or (kind != "bool" and isinstance(value, bool)):
        raise ConfigError(f"{source}: {name} must be {_KIND_NAMES[kind]}, got {value!r}")
    return float(value) if kind == "float" else value


def _settings_from_mapping(data: Any, source: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: [swarm] must be a table of settings")
    known = {f.name: f for f in fields(Settings)}
    for key in data:  # a misspelt name first: it usually explains a wrong value too
        if key.replace("-", "_") not in known:
            raise ConfigError(f"{source}: unknown setting {key!r}")
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name in _CALL_KEYS:
            if not isinstance(value, dict) or set(value) - {"temperature", "max_tokens"}:
                raise ConfigError(f"{source}: {key} must be a table with temperature and max_tokens")
            base: CallLimits = getattr(Settings(), name)
            value = CallLimits(
                _check_kind(f"{key}.temperature", value.get("temperature", base.temperature), "float", source),
                _check_kind(f"{key}.max_tokens", value.get("max_tokens", base.max_tokens), "int", source),
            )
        elif name == "strategy_options":
            raise ConfigError(f"{source}: method options go in [strategy.NAME] tables")
        elif name == "teams":
            raise ConfigError(f"{source}: teams go in [team.NAME] tables")
        elif name == "keymap" and not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
            raise ConfigError(f"{source}: keymap must map binding ids to key strings")
        else:
            value = _check_kind(key, value, str(known[name].type), source)
        out[name] = value
    return out


def load_config_file(path: Path | None) -> dict[str, Any]:
    """Read a config file. A missing default file is fine; a missing explicit file is an error."""
    explicit = path is not None
    path = path or default_config_path()
    if not path.exists():
        if explicit:
            raise ConfigError(f"config file not found: {path}")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    section = data.get("swarm", data)  # settings may sit at top level or under [swarm]
    tables = data.get("strategy") if isinstance(data.get("strategy"), dict) else None
    if tables is not None and section is data:  # top level: "strategy" is the tables, not a method name
        section = {k: v for k, v in section.items() if k != "strategy"}
    teams = data.get("team") if isinstance(data.get("team"), dict) else None
    if teams is not None and isinstance(section, dict) and isinstance(section.get("team"), dict):
        section = {k: v for k, v in section.items() if k != "team"}  # the [team.NAME] tables, not a choice
    settings = _settings_from_mapping(section, str(path))
    if teams is not None:
        from core.runtime.teams import check_team_tables

        settings["teams"] = check_team_tables(teams, str(path))
    if tables is not None:
        if not all(isinstance(v, dict) for v in tables.values()):
            raise ConfigError(f"{path}: [strategy.NAME] tables hold each method's options")
        settings["strategy_options"] = {name: dict(values) for name, values in tables.items()}
    return settings


_ENV_VARS: dict[str, tuple[str, type]] = {
    "SWARM_TUI_DOMAIN": ("domain", str),
    "SWARM_TUI_TAU": ("tau", float),
    "SWARM_TUI_K_IN": ("k_in", int),
    "SWARM_TUI_MAX_ROUNDS": ("max_rounds", int),
    "SWARM_TUI_PROTOCOL": ("protocol", str),
    "SWARM_TUI_STRATEGY": ("strategy", str),
    "SWARM_TUI_TEAM": ("team", str),
    "SWARM_TUI_MODEL": ("model", str),
    "SWARM_TUI_SESSIONS_DIR": ("sessions_dir", str),
    "SWARM_TUI_EMBEDDING_MODEL_PATH": ("embedding_model_path", str),
}


def env_overrides(environ: dict[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for var, (name, kind) in _ENV_VARS.items():
        if var in env and env[var] != "":
            try:
                out[name] = kind(env[var])
            except ValueError:
                raise ConfigError(f"environment variable {var}={env[var]!r} is not a valid {name}") from None
    return out


def load_settings(
    config_path: Path | None = None,
    cli: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Defaults < config file < environment < CLI flags; validated."""
    merged: dict[str, Any] = {}
    merged.update(load_config_file(config_path))
    merged.update(env_overrides(environ))
    merged.update({k: v for k, v in (cli or {}).items() if v is not None})
    try:
        settings = replace(Settings(), **merged)
    except TypeError as exc:  # a value of the wrong shape from a file
        raise ConfigError(str(exc)) from None
    settings.validate()
    return settings


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

"""The config file and the environment: reading them into settings values, each value checked.

Kept apart from ``core.runtime.config`` (the settings and their defaults) because checking a file's
``[team.NAME]`` tables needs ``core.runtime.teams``, which itself builds on the settings.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from core.runtime.config import APP_NAME, CallLimits, ConfigError, Settings
from core.runtime.teams import check_team_tables


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
        settings["teams"] = check_team_tables(teams, str(path))
    if tables is not None:
        if not all(isinstance(v, dict) for v in tables.values()):
            raise ConfigError(f"{path}: [strategy.NAME] tables hold each method's options")
        settings["strategy_options"] = {name: dict(values) for name, values in tables.items()}
    return settings


def _flag(text: str) -> bool:
    """An environment variable's true/false (1/0, yes/no, on/off)."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


_ENV_VARS: dict[str, tuple[str, Any]] = {
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
    "SWARM_TUI_EMBEDDING_INT8": ("embedding_int8", _flag),
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

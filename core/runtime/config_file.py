"""The config file and the environment: reading them into settings values, each value checked.

Kept apart from ``core.runtime.config`` (the settings and their defaults) because checking a file's
``[team.NAME]`` tables needs ``core.runtime.teams``, which itself builds on the settings.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import platformdirs

from core.llm.prices import PriceError, model_prices
from core.runtime.config import APP_NAME, CallLimits, ConfigError, Settings, check_setting, settings_from
from core.runtime.teams import check_team_tables


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


_CALL_KEYS = {"descriptor_call", "work_call", "manager_call"}


def _settings_from_mapping(data: Any, source: str) -> dict[str, Any]:
    """A file's settings, each checked through its field on Settings (type and bounds, strictly: TOML
    gives typed values, so a wrong type is the user's mistake to name, not something to coerce)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: [swarm] must be a table of settings")
    known = {f.name for f in fields(Settings)}
    for key in data:  # a misspelt name first: it usually explains a wrong value too
        if key.replace("-", "_") not in known:
            raise ConfigError(f"{source}: unknown setting {key!r}")
    out: dict[str, Any] = {}
    try:
        for key, value in data.items():
            name = key.replace("-", "_")
            if name in _CALL_KEYS:
                if not isinstance(value, dict) or set(value) - {"temperature", "max_tokens"}:
                    raise ConfigError(f"{key} must be a table with temperature and max_tokens")
                base: CallLimits = getattr(Settings(), name)
                value = CallLimits(
                    check_setting("temperature", value.get("temperature", base.temperature), owner=CallLimits,
                                  label=f"{key}.temperature"),
                    check_setting("max_tokens", value.get("max_tokens", base.max_tokens), owner=CallLimits,
                                  label=f"{key}.max_tokens"),
                )
            elif name == "strategy_options":
                raise ConfigError("method options go in [strategy.NAME] tables")
            elif name == "teams":
                raise ConfigError("teams go in [team.NAME] tables")
            elif name == "prices":  # [prices.MODEL] tables: checked as prices, kept as plain numbers
                try:
                    checked = model_prices(value if isinstance(value, dict) else {"?": value}, "")
                except PriceError as exc:
                    raise ConfigError(str(exc)) from None
                value = {model: {k: v for k, v in vars(p).items() if v is not None} for model, p in checked.items()}
            elif name == "keymap" and not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
                raise ConfigError("keymap must map binding ids to key strings")
            else:
                value = check_setting(name, value, label=key)
            out[name] = value
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
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
    if section is not data and isinstance(section, dict) and isinstance(data.get("prices"), dict):
        section = {**section, "prices": data["prices"]}  # [prices.MODEL] beside [swarm]
    settings = _settings_from_mapping(section, str(path))
    if teams is not None:
        settings["teams"] = check_team_tables(teams, str(path))
    if tables is not None:
        if not all(isinstance(v, dict) for v in tables.values()):
            raise ConfigError(f"{path}: [strategy.NAME] tables hold each method's options")
        settings["strategy_options"] = {name: dict(values) for name, values in tables.items()}
    return settings


# Settings an environment variable may give, read from its text as the field's type (a flag takes
# 1/0, true/false, yes/no, on/off).
_ENV_VARS: dict[str, str] = {
    "SWARM_TUI_DOMAIN": "domain",
    "SWARM_TUI_TAU": "tau",
    "SWARM_TUI_K_IN": "k_in",
    "SWARM_TUI_MAX_ROUNDS": "max_rounds",
    "SWARM_TUI_PROTOCOL": "protocol",
    "SWARM_TUI_STRATEGY": "strategy",
    "SWARM_TUI_TEAM": "team",
    "SWARM_TUI_MODEL": "model",
    "SWARM_TUI_SESSIONS_DIR": "sessions_dir",
    "SWARM_TUI_EMBEDDING_MODEL_PATH": "embedding_model_path",
    "SWARM_TUI_EMBEDDING_INT8": "embedding_int8",
}


def env_overrides(environ: dict[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for var, name in _ENV_VARS.items():
        if var in env and env[var] != "":
            try:
                out[name] = check_setting(name, env[var], from_text=True)
            except ConfigError as exc:
                raise ConfigError(f"environment variable {var}: {exc}") from None
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
    settings = settings_from(merged)
    settings.validate()
    return settings

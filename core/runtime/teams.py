"""User teams: ``[team.NAME]`` tables in the config file or a team file (``--team FILE.toml``).

A team is a ``Team`` (core.runtime.rosters) whose ``name`` is its domain kind (code, math or general:
which answer extraction and verification apply) and whose ``team`` is the user's name for it, so every
piece of code that takes a Team runs a user team unchanged. Each agent may carry its own model,
endpoint, API key variable and sampling settings (``Role.model`` ...); core.compose.runner opens one
client per distinct endpoint.

Table shape (field names fixed so configs are portable)::

    [team.six]
    domain = "general"
    manager = { name = "Manager", role = "Sets each round's goal and decides when the team is done." }
    [[team.six.workers]]
    name = "Economist"
    role = "Weighs costs and incentives."
    model = "model-b"                          # optional, per agent
    base_url = "http://127.0.0.1:8001/v1"      # optional, per agent
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from core.llm.urls import URLError, check_base_url, redact_url
from core.runtime.config import DOMAINS, ConfigError, DomainName, Settings
from core.runtime.rosters import DOMAIN_BY_NAME, Role, Team, builtin_team

MIN_WORKERS = 2
MAX_WORKERS = 20
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TEAM_KEYS = {"domain", "manager", "workers", "answer_role", "completion_rule", "description"}
_AGENT_KEYS = {"name", "role", "title", "query", "key", "model", "base_url", "api_key_env", "temperature", "max_tokens"}


def _text(value: Any, where: str, what: str, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise ConfigError(f"{where}: {what} is missing")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ConfigError(f"{where}: {what} must be a non-empty quoted string, got {value!r}")
    return value.strip()


def _agent(data: Any, where: str) -> Role:
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a table with name and role")
    unknown = sorted(set(data) - _AGENT_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(_AGENT_KEYS))})")
    name = _text(data.get("name"), where, "name", required=True) or ""
    if not _NAME.match(name):
        raise ConfigError(
            f"{where}: name {name!r} must start with a letter and hold only letters, digits, _ or - (at most 32)"
        )
    where = f"{where} ({name})"
    role = _text(data.get("role"), where, "role", required=True) or ""
    title = _text(data.get("title"), where, "title") or name
    query = _text(data.get("query"), where, "query") or f"I need the team's findings that bear on my role: {role}"
    key = _text(data.get("key"), where, "key") or f"I provide my work as {name}: {role}"
    model = _text(data.get("model"), where, "model")
    base_url = _text(data.get("base_url"), where, "base_url")
    if base_url is not None:
        try:
            check_base_url(base_url)
        except URLError as exc:
            raise ConfigError(f"{where}: base_url: {exc}") from None
    key_env = _text(data.get("api_key_env"), where, "api_key_env")
    if key_env is not None and not _ENV_NAME.match(key_env):
        raise ConfigError(
            f"{where}: api_key_env {key_env!r} is not an environment variable name (letters, digits and _): "
            "it names the variable that holds the key, never the key itself"
        )
    temperature = data.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature <= 2
    ):
        raise ConfigError(f"{where}: temperature must be a number 0..2, got {temperature!r}")
    max_tokens = data.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ConfigError(f"{where}: max_tokens must be a whole number of at least 1, got {max_tokens!r}")
    return Role(
        name, title, role, query, key,
        model=model,
        base_url=base_url,
        api_key_env=key_env,
        temperature=float(temperature) if temperature is not None else None,
        max_tokens=max_tokens,
    )


def team_from_table(name: str, table: Any, source: str = "config") -> Team:
    """The team a ``[team.NAME]`` table describes; ConfigError with one line for the first problem."""
    where = f"{source}: [team.{name}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - _TEAM_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(_TEAM_KEYS))})")
    kind = table.get("domain", "general")
    if kind not in DOMAINS:
        raise ConfigError(f"{where}: domain {kind!r} must be one of {', '.join(DOMAINS)}")
    base = builtin_team(kind)
    if "manager" not in table:
        raise ConfigError(f"{where}: the Manager is missing: add manager = {{ name = \"Manager\", role = \"...\" }}")
    manager = _agent(table["manager"], f"{where} manager")
    workers_data = table.get("workers")
    if workers_data is None:
        workers_data = []
    if not isinstance(workers_data, list):
        raise ConfigError(f"{where}: workers must be a list of [[team.{name}.workers]] tables")
    if len(workers_data) < MIN_WORKERS:
        raise ConfigError(f"{where}: a team needs at least {MIN_WORKERS} workers, got {len(workers_data)}")
    if len(workers_data) > MAX_WORKERS:
        raise ConfigError(f"{where}: a team has at most {MAX_WORKERS} workers, got {len(workers_data)}")
    workers = tuple(_agent(w, f"{where} worker {i}") for i, w in enumerate(workers_data, 1))
    seen: set[str] = set()
    for agent in (manager, *workers):
        if agent.name.lower() in seen:
            raise ConfigError(f"{where}: duplicate agent name {agent.name!r}: every agent needs its own name")
        seen.add(agent.name.lower())
    names = [w.name for w in workers]
    answer_role = table.get("answer_role")
    if answer_role is None:
        answer_role = base.answer_role if base.answer_role in names else (names[0] if kind == "code" else names[-1])
    elif answer_role not in names:
        raise ConfigError(f"{where}: answer_role {answer_role!r} is not one of the workers ({', '.join(names)})")
    rule = _text(table.get("completion_rule"), where, "completion_rule") or base.completion_rule
    return Team(
        name=kind, manager=manager, workers=workers, answer_role=answer_role, completion_rule=rule, custom_name=name
    )


def check_team_tables(tables: Any, source: str) -> dict[str, dict[str, Any]]:
    """``[team.NAME]`` tables from a config file, each checked now (one line per problem)."""
    if not isinstance(tables, dict) or not all(isinstance(v, dict) for v in tables.values()):
        raise ConfigError(f"{source}: [team.NAME] tables each describe one team")
    for name, table in tables.items():
        if not _NAME.match(name):
            raise ConfigError(f"{source}: team name {name!r} must start with a letter (letters, digits, _ or -)")
        if name in DOMAIN_BY_NAME:
            raise ConfigError(f"{source}: [team.{name}] would hide the built-in team {name!r}: pick another name")
        team_from_table(name, table, source)
    return {name: dict(table) for name, table in tables.items()}


def is_team_file(value: str) -> bool:
    return value.lower().endswith(".toml") or "/" in value or "\\" in value


def load_team_file(path: Path) -> tuple[str, dict[str, Any]]:
    """(name, table) from a team file: one ``[team.NAME]`` table, or the fields at the top level (the
    file's stem names the team)."""
    if not path.is_file():
        raise ConfigError(f"team file not found: {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read team file {path}: {exc}") from None
    tables = data.get("team")
    if isinstance(tables, dict):
        if len(tables) != 1:
            raise ConfigError(f"{path}: a team file holds one [team.NAME] table, found {len(tables)}")
        name, table = next(iter(tables.items()))
    else:
        name, table = re.sub(r"[^A-Za-z0-9_-]", "-", path.stem) or "team", data
        if not name[0].isalpha():
            name = f"team-{name}"
    team_from_table(name, table, str(path))
    return name, dict(table)


def resolve_team(settings: Settings) -> Team:
    """The team a run uses: ``settings.team`` (a built-in name, a [team.NAME] table or a team file),
    else the built-in team of ``settings.domain``."""
    choice = settings.team
    if not choice:
        return builtin_team(settings.domain)
    if choice in settings.teams:
        return team_from_table(choice, settings.teams[choice])
    if choice in DOMAIN_BY_NAME:
        return DOMAIN_BY_NAME[choice]
    if is_team_file(choice):
        name, table = load_team_file(Path(choice))
        return team_from_table(name, table, choice)
    known = [*DOMAIN_BY_NAME, *settings.teams]
    raise ConfigError(f"unknown team {choice!r}: choose one of {', '.join(known)} or give a team FILE.toml")


def team_names(settings: Settings) -> list[str]:
    """Every team a run may name: the built-in ones, then the config's [team.NAME] tables."""
    return [*DOMAIN_BY_NAME, *settings.teams]


def named_team(settings: Settings, name: str) -> Team:
    """A team by name only, a built-in one or a [team.NAME] table: never a file, for callers that must
    not read a path they were handed (the MCP server). ConfigError listing the names otherwise."""
    if name in settings.teams:
        return team_from_table(name, settings.teams[name])
    if name in DOMAIN_BY_NAME:
        return DOMAIN_BY_NAME[name]
    raise ConfigError(f"unknown team {name!r}: choose one of {', '.join(team_names(settings))}")


def with_team(settings: Settings) -> Settings:
    """Settings whose team is resolved once: a team file becomes a table, and domain follows the team."""
    choice = settings.team
    if not choice:
        return settings
    from dataclasses import replace

    if choice not in settings.teams and choice not in DOMAIN_BY_NAME and is_team_file(choice):
        name, table = load_team_file(Path(choice))
        settings = replace(settings, team=name, teams={**settings.teams, name: table})
    team = resolve_team(settings)
    if team.custom_name == "":  # a built-in team chosen by name
        return replace(settings, team=None, domain=DomainName(team.name))
    return replace(settings, domain=DomainName(team.name))


def team_record(team: Team) -> dict[str, Any]:
    """What a session records of a user team: its table (endpoints without secrets) plus its name.
    Empty for the built-in teams."""
    if not team.custom_name:
        return {}
    def agent(role: Role) -> dict[str, Any]:
        out: dict[str, Any] = {"name": role.name, "role": role.description}
        if role.title != role.name:
            out["title"] = role.title
        out["query"], out["key"] = role.default_query, role.default_key
        for field_name in ("model", "api_key_env", "temperature", "max_tokens"):
            value = getattr(role, field_name)
            if value is not None:
                out[field_name] = value
        if role.base_url is not None:
            out["base_url"] = redact_url(role.base_url)
        return out

    return {
        "name": team.custom_name,
        "domain": team.name,
        "manager": agent(team.manager),
        "workers": [agent(w) for w in team.workers],
        "answer_role": team.answer_role,
        "completion_rule": team.completion_rule,
    }


def table_from_record(record: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(name, [team.NAME] table) from a session's team record, for a fork to continue with it."""
    table = {k: v for k, v in record.items() if k != "name"}
    return str(record.get("name") or "recorded"), table


def _clip(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def with_recorded_team(settings: Settings, record: dict[str, Any]) -> Settings:
    """Settings that run a session's recorded team (a fork), or the built-in team when it recorded none."""
    from dataclasses import replace

    if not record:
        return replace(settings, team=None)
    name, table = table_from_record(record)
    team_from_table(name, table, "the recorded team")  # ConfigError, one line, for a damaged record
    domain = DomainName(str(table.get("domain", "general")))  # checked by team_from_table just above
    return replace(settings, team=name, teams={**settings.teams, name: table}, domain=domain)


def describe_teams(settings: Settings) -> str:
    """``swarm-tui teams``: the built-in teams and the user's, one block each."""
    lines: list[str] = []
    entries: list[tuple[str, Team, str]] = [(d.name, d, "built-in") for d in DOMAIN_BY_NAME.values()]
    for name, table in settings.teams.items():
        entries.append((name, team_from_table(name, table), f"config, domain {table.get('domain', 'general')}"))
    width = max(len(n) for n, _, _ in entries)
    for name, team, where in entries:
        lines.append(f"{name:<{width}}  {len(team.workers)} workers + {team.manager.name} ({where})")
        for role in (team.manager, *team.workers):
            endpoint = ", ".join(
                f"{k} {v}" for k, v in (("model", role.model), ("at", role.base_url), ("key $", role.api_key_env)) if v
            ).replace("key $ ", "key $")
            shown = f"{'':<{width}}    {role.name}: {_clip(role.description)}"
            lines.append(shown + (f" [{endpoint}]" if endpoint else ""))
    lines.append("")
    lines.append(
        "Choose one with --team NAME or --team FILE.toml; define one in a [team.NAME] table of the config file."
    )
    return "\n".join(lines)

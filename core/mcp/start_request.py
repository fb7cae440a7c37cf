"""A swarm start, checked: the MCP tools' arguments (task, domain or team, strategy, tau, k_in, max_rounds,
context and options) against the server's settings, into the plan of the run or one StartError line that
says what to change. Nothing is clamped. core.mcp.tasks runs what this plans."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from core.compose.plan import RunPlan
from core.evaluation.sandbox import unisolated_refusal
from core.methods.catalogue import build_method, get_method_info, method_names
from core.methods.registry import MethodError
from core.runtime.config import (
    DEFAULT_STRATEGY,
    MAX_TIME_BUDGET_S,
    PROTOCOLS,
    ConfigError,
    Settings,
    bounds_text,
    check_setting,
)
from core.runtime.engine import Method
from core.runtime.rosters import Team, builtin_team
from core.runtime.teams import is_team_file, named_team, team_names

MAX_CONTEXT_CHARS = 4000


class StartError(ValueError):
    """A start that is refused; the message is one line that says what to change."""


# options={...}: the server's own (name -> description); any other key must be an option of the chosen
# method (swarm-tui strategies lists them), checked by the method registry.
OPTIONS: dict[str, str] = {
    "protocol": f"round protocol: {' | '.join(PROTOCOLS)} (default: the server's, phased)",
    "execute": "true/false: code domain, run the latest code against the tests in a sandbox after every round",
    "allow_unisolated_code": "true/false: with execute, run the model's code even where bubblewrap cannot "
    "isolate it (it then has the server's user's rights; default false: refused)",
    "budget_s": f"wall-clock budget in seconds, 1..{MAX_TIME_BUDGET_S:g} (default max_rounds x the server's "
    "per-round budget); past it the run is torn down and reported as failed",
    "time_budget": f"{bounds_text('time_budget')}: the run cancels its calls in flight and ends as completed with "
    "reason budget and the best valid answer so far (like --time-budget); shorter than budget_s",
    "max_calls": f"model calls, {bounds_text('max_calls')}, re-asks included: past it the run ends with reason "
    "budget (like --max-calls)",
    "max_cost": f"US dollars, {bounds_text('max_cost')}: once the run's calls cost that much it ends with reason "
    "budget (like --max-cost; local servers are free)",
}


def method_for(strategy: str, team: Team, options: Mapping[str, Any] | None) -> Method:
    """A fresh method for one swarm and its team (StartError, one line, for a bad option: some depend on
    the team, e.g. star's hub must be one of its workers, topodim's agents at most its size)."""
    try:
        return build_method(strategy, options, team)
    except MethodError as exc:
        raise StartError(str(exc)) from None


def _setting(name: str, value: Any, prefix: str = "", label: str | None = None) -> Any:
    """A client's value checked through the settings model (core.runtime.config): the bound and the message
    the command line and the config file give. A JSON 3.0 stands for 3 where a whole number is meant."""
    if isinstance(value, float) and value.is_integer() and isinstance(getattr(Settings(), name, None), int):
        value = int(value)
    try:
        return check_setting(name, value, label=label)
    except ConfigError as exc:
        raise StartError(f"{prefix}{exc}") from None


def _check_options(options: Mapping[str, Any] | None, strategy: str = DEFAULT_STRATEGY) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise StartError(f"options must be an object, got {type(options).__name__}")
    specs = get_method_info(strategy).options
    method_options = {spec.name for spec in specs}
    unknown = sorted(set(options) - set(OPTIONS) - method_options)
    if unknown:
        known = [*OPTIONS, *sorted(spec.name for spec in specs if not spec.call_table)]
        kinds = [spec.name.removesuffix("_max_tokens") for spec in specs if spec.name.endswith("_max_tokens")]
        calls = f"; and KIND_max_tokens, KIND_temperature for KIND in {', '.join(kinds)}" if kinds else ""
        raise StartError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
            f"the options are {', '.join(known)}{calls}"
        )
    out: dict[str, Any] = {}
    method_values = {k: v for k, v in options.items() if k in method_options and k not in OPTIONS}
    if method_values:
        try:
            get_method_info(strategy).resolve(method_values)
        except MethodError as exc:
            raise StartError(str(exc)) from None
        out["method"] = dict(method_values)
    if "protocol" in options:
        out["protocol"] = _setting("protocol", options["protocol"])
    if "execute" in options:
        out["execute"] = _setting("execute_code", options["execute"], "option ", label="execute")
    if "allow_unisolated_code" in options:
        out["allow_unisolated_code"] = _setting("allow_unisolated_code", options["allow_unisolated_code"], "option ")
    if "budget_s" in options:  # the server's hard stop, not a run setting: bounded like a time budget
        budget = options["budget_s"]
        if isinstance(budget, bool) or not isinstance(budget, int | float) or not 1 <= budget <= MAX_TIME_BUDGET_S:
            raise StartError(f"option budget_s must be between 1 and {MAX_TIME_BUDGET_S:g} seconds, got {budget!r}")
        out["budget_s"] = float(budget)
    if "time_budget" in options:
        seconds = _setting("time_budget", options["time_budget"], "option ")
        if "budget_s" in out and seconds >= out["budget_s"]:
            raise StartError(
                f"option time_budget ({seconds:g} s) must be shorter than budget_s ({out['budget_s']:g} s), the hard "
                "stop that reports the run as failed"
            )
        out["time_budget"] = seconds
    if "max_calls" in options:
        out["max_calls"] = _setting("max_calls", options["max_calls"], "option ")
    if "max_cost" in options:
        out["max_cost"] = _setting("max_cost", options["max_cost"], "option ")
    return out


def team_choices(settings: Settings) -> dict[str, Team]:
    """The teams a start may name: the built-in ones, then the server config's [team.NAME] tables."""
    return {name: named_team(settings, name) for name in team_names(settings)}

def choose_team(settings: Settings, domain: Any = None, team: Any = None) -> Team:
    """The team a start names, or the built-in team of its domain (None: the server's default).
    A team is named, never a file: a client must not make the server read a path it chose. The
    domain follows the team; a domain that contradicts it is refused."""
    if domain is not None:
        domain = _setting("domain", domain)
    if team is None:
        return builtin_team(domain or settings.domain)
    if not isinstance(team, str):
        raise StartError(f"team must be a team's name, got {team!r}")
    try:
        chosen = named_team(settings, team)
    except ConfigError as exc:
        hint = " (team files are not read over MCP: add a [team.NAME] table to the server's config)"
        raise StartError(f"{exc}{hint if is_team_file(team) else ''}") from None
    if domain is not None and domain != chosen.name:
        raise StartError(
            f"domain {domain} does not match team {team} (domain {chosen.name}): the team sets the domain, "
            "leave domain out"
        )
    return chosen


def plan_start(
    server: Settings,
    task: Any,
    domain: Any = None,
    strategy: Any = DEFAULT_STRATEGY,
    tau: Any = None,  # None: the server's settings (core.runtime.config has the defaults)
    k_in: Any = None,
    max_rounds: Any = None,
    context: Any = "",
    options: Mapping[str, Any] | None = None,
    *,
    team: Any = None,
) -> tuple[RunPlan, dict[str, Any], list[str]]:
    """A start request checked against the server's settings: (the run's plan, the checked options, notes)
    or StartError. Nothing is clamped. The plan (its team
    and its method, checked against that team) is the one the swarm then opens."""
    if not isinstance(task, str) or not task.strip():
        raise StartError("task must be a non-empty text: the problem for the swarm to solve")
    chosen = choose_team(server, domain, team)
    if strategy not in method_names():
        raise StartError(f"unknown strategy {strategy!r}: choose one of {', '.join(method_names())}")
    tau = _setting("tau", server.tau if tau is None else tau)
    n_workers = len(chosen.workers)
    if k_in is None:
        k_in = min(server.k_in, n_workers - 1)  # the default, or N-1 for a smaller team
    k_in = _setting("k_in", k_in)
    if not k_in <= n_workers - 1:
        raise StartError(
            f"k_in must be between 1 and {n_workers - 1} for the {chosen.team_name} team of {n_workers} workers, "
            f"got {k_in}"
        )
    max_rounds = _setting("max_rounds", server.max_rounds if max_rounds is None else max_rounds)
    if context is None:
        context = ""
    if not isinstance(context, str):
        raise StartError("context must be text")
    if len(context) > MAX_CONTEXT_CHARS:
        raise StartError(
            f"context is {len(context)} characters; the limit is {MAX_CONTEXT_CHARS}: shorten it "
            "(put only what the swarm needs beyond the task)"
        )
    checked = _check_options(options, strategy)
    # The server config's [strategy.NAME] table gives the method's defaults, as in the CLI; the client's win.
    configured = server.strategy_options.get(strategy) or {}
    if configured:
        checked["method"] = {**configured, **checked.get("method", {})}
    method = method_for(strategy, chosen, checked.get("method"))  # the options against this team, now
    notes: list[str] = []
    if not get_method_info(strategy).uses_tau:
        notes.append(f"strategy {strategy} does not use tau or k_in")
    if get_method_info(strategy).single_round and max_rounds != 1:
        notes.append(f"{strategy} is one round without communication: max_rounds is 1")
        max_rounds = 1
    execute = checked.get("execute")
    if execute and chosen.name != "code":
        raise StartError("option execute runs code tests: it needs domain code")
    try:
        # A user team runs by its table's name; a built-in one is team None plus its domain. The server's
        # own --team is not a default: a client that names no team gets the built-in team of the domain.
        settings = replace(server, team=chosen.custom_name or None).with_overrides(
            domain=chosen.name, tau=tau, k_in=k_in, max_rounds=max_rounds,
            protocol=checked.get("protocol"), execute_code=execute,
            allow_unisolated_code=checked.get("allow_unisolated_code"),
            time_budget=checked.get("time_budget"), max_calls=checked.get("max_calls"),
            max_cost=checked.get("max_cost"),
        )
        settings.validate(n_workers=n_workers)
    except ConfigError as exc:
        raise StartError(str(exc)) from None
    if settings.execute_code and not settings.allow_unisolated_code:
        refused = unisolated_refusal()
        if refused:
            raise StartError(refused.replace("--allow-unisolated-code", "option allow_unisolated_code true"))
    return RunPlan.make(settings, team=chosen, method=method), checked, notes

"""Command-line pieces every subcommand shares: the one-line parser, run options, settings, the problem.

Kept apart from ``tui.cli`` so the subcommand modules import these without importing the entry point.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from core.compose.plan import team_of
from core.evaluation.sandbox import allow_unisolated_code, unisolated_refusal
from core.llm.urls import DEFAULT_BASE_URL, URLError, check_base_url
from core.methods.catalogue import build_method, get_method_info
from core.methods.registry import MethodError, parse_option_flags
from core.runtime.config import (
    DOMAINS,
    PROTOCOLS,
    ConfigError,
    Settings,
    bounds_text,
    check_setting,
    resolve_base_url,
)
from core.runtime.config_file import load_settings
from core.runtime.rosters import Team
from core.runtime.teams import table_from_record, with_team
from core.runtime.textsafe import printable
from core.sessions.fork import with_recorded_method
from core.telemetry.setup import check_tracing

EXIT_USAGE = 2


class CliError(Exception):
    """A user error: printed as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad flag gives one clear line instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def fail(message: str) -> NoReturn:
    print(printable(f"swarm-tui: error: {message}"), file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def unit_interval(text: str) -> float:
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def positive_number(text: str) -> float:
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def int_range(low: int, high: int | None) -> type:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text}")
        return value

    return parse  # type: ignore[return-value]


def setting_arg(name: str) -> type:
    """An argparse type for the setting ``name``: the flag's text read and checked through the settings
    model (core.runtime.config), so a flag is refused with the bound and the message a config file or an
    MCP argument gets: "argument --tau: tau must be between 0 and 1, got 1.5"."""

    def parse(text: str) -> object:
        try:
            return check_setting(name, text, from_text=True)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse  # type: ignore[return-value]


def add_run_options(parser: argparse.ArgumentParser, *, method: bool = True, several_urls: bool = False) -> None:
    """Options shared by a live run, a fork and the benchmark runner (which names its own strategies)."""
    d = Settings()
    parser.add_argument("--domain", choices=DOMAINS, help=f"problem domain (default {d.domain})")
    parser.add_argument(
        "--team",
        metavar="NAME|FILE.toml",
        help="the team: a built-in one (code, math, general), a [team.NAME] table of the config file, or a "
        "team file (swarm-tui teams lists them; default: the domain's built-in team)",
    )
    parser.add_argument(
        "--tau", type=setting_arg("tau"), help=f"routing threshold, {bounds_text('tau')} (default {d.tau})"
    )
    parser.add_argument(
        "--k-in", dest="k_in", type=setting_arg("k_in"), help=f"max inbound edges per agent, 1..N-1 (default {d.k_in})"
    )
    parser.add_argument(
        "--max-rounds", dest="max_rounds", type=setting_arg("max_rounds"),
        help=f"{bounds_text('max_rounds')} (default {d.max_rounds})",
    )
    parser.add_argument("--protocol", choices=PROTOCOLS, help=f"DyTopo round protocol (default {d.protocol})")
    if method:
        add_method_options(parser)
    _add_endpoint_options(parser, several_urls)
    _add_budget_options(parser)
    parser.add_argument(
        "--config", type=Path, help="config file (default: the user config dir's swarm-tui/config.toml)"
    )
    parser.add_argument(
        "--demo", action="store_true", help="run against the built-in scripted model server (no model needed)"
    )
    parser.add_argument(
        "--execute",
        dest="execute_code",
        action="store_true",
        default=None,
        help="code domain: run the latest code against the tests in a sandbox after every round",
    )
    parser.add_argument(
        "--allow-unisolated-code", dest="allow_unisolated_code", action="store_true", default=None,
        help="run model-written code even where bubblewrap cannot isolate it (it then has your rights)",
    )


def _add_endpoint_options(parser: argparse.ArgumentParser, several_urls: bool) -> None:
    """Where the calls go: the endpoint, the model, the key's variable, the parallelism and the trace."""
    d = Settings()
    parser.add_argument(
        "--base-url",
        dest="base_url",
        action="append" if several_urls else "store",  # the benchmark spreads calls over several
        help="OpenAI-compatible endpoint (default: config, $OPENAI_BASE_URL, http://localhost:1234/v1)"
        + ("; repeat it for endpoints serving the same model: calls go to the least busy" if several_urls else ""),
    )
    parser.add_argument("--model", help="model name (default: the first model the endpoint lists)")
    parser.add_argument(
        "--api-key-env",
        dest="api_key_env",
        metavar="NAME",
        help="environment variable holding the API key (default OPENAI_API_KEY)",
    )
    parser.add_argument(
        "--max-concurrency",
        dest="max_concurrency",
        type=setting_arg("max_concurrency"),
        help=f"parallel model calls, {bounds_text('max_concurrency')} (default {d.max_concurrency})",
    )
    parser.add_argument(
        "--otel", dest="otel_endpoint", metavar="URL",
        help="send the run's trace to this OpenTelemetry collector (OTLP/HTTP, e.g. http://127.0.0.1:4318; "
        "the otel extra; OTEL_EXPORTER_OTLP_ENDPOINT works too)",
    )


def _add_budget_options(parser: argparse.ArgumentParser) -> None:
    """The bounds of a run: time, calls, cost and each call's max_tokens."""
    parser.add_argument(
        "--time-budget", dest="time_budget", type=setting_arg("time_budget"), metavar="SECONDS",
        help=f"end the run after this many seconds ({bounds_text('time_budget')}) with the best valid answer "
        "so far (reason: budget)",
    )
    parser.add_argument(
        "--max-calls", dest="max_calls", type=setting_arg("max_calls"), metavar="N",
        help=f"end the run after N model calls ({bounds_text('max_calls')}, re-asks included) with the best "
        "valid answer so far",
    )
    parser.add_argument(
        "--max-cost", dest="max_cost", type=setting_arg("max_cost"), metavar="USD",
        help=f"end the run once its calls cost USD dollars ({bounds_text('max_cost')}; priced by genai-prices or "
        "the config's [prices]; local servers are free) with the best valid answer so far",
    )
    parser.add_argument(
        "--max-tokens", dest="max_tokens", type=setting_arg("max_tokens"), metavar="N",
        help="cap every call's max_tokens (descriptor, work, manager and every method's own calls) at N",
    )


def settings_from_args(args: argparse.Namespace, *, build: bool = True) -> Settings:
    cli = {
        name: getattr(args, name, None)
        for name in (
            "domain",
            "tau",
            "k_in",
            "max_rounds",
            "protocol",
            "base_url",
            "model",
            "api_key_env",
            "max_concurrency",
            "execute_code",
            "allow_unisolated_code",
            "team",
            "time_budget",
            "max_calls",
            "max_tokens",
            "max_cost",
            "otel_endpoint",
        )
    }
    if isinstance(cli["base_url"], list):  # the benchmark's repeatable --base-url: the first is the run's
        cli["base_url"] = cli["base_url"][0]
    if hasattr(args, "method_options"):  # a live run's --strategy (the benchmark's names a list)
        cli["strategy"] = getattr(args, "strategy", None)
    try:
        settings = load_settings(getattr(args, "config", None), cli)
        parent = getattr(args, "fork_of", None)  # a fork: the parent's method and options, under the -o flags
        if parent is not None:
            settings = with_recorded_method(settings, parent, cli.get("strategy"))
        record = getattr(args, "team_record", None)
        if record and not cli["team"]:  # a fork or replay goes on with the recorded team
            name, table = table_from_record(record)
            settings = replace(settings, team=name, teams={**settings.teams, name: table})
        settings = with_team(settings)
        if cli["team"] and cli["domain"] and cli["domain"] != settings.domain:
            raise ConfigError(
                f"--domain {cli['domain']} does not match team {settings.team or cli['team']} "
                f"(domain {settings.domain}): the team sets the domain, drop --domain"
            )
        team = team_of(settings)  # once: the worker count and the method's options are checked against it
        n_workers = len(team.workers)
        if cli["k_in"] is None and settings.k_in > n_workers - 1:
            # The default (3) suits the code team; smaller teams get the largest k_in they allow.
            settings = settings.with_overrides(k_in=n_workers - 1)
        settings.validate(n_workers=n_workers)
        check_tracing(settings)  # --otel without the otel extra: one line saying how to install it
        url = resolve_base_url(settings)
        if not getattr(args, "demo", False) and settings.base_url is None and url != DEFAULT_BASE_URL:
            # validate() checked --base-url and the config file; this one came from $OPENAI_BASE_URL.
            try:
                check_base_url(url)
            except URLError as exc:
                raise ConfigError(f"$OPENAI_BASE_URL: {exc}") from None
        if hasattr(args, "method_options"):
            flags = list(args.method_options or [])
            if getattr(args, "orchestrator_model", None):
                if settings.strategy != "topoweaver":
                    raise MethodError("--orchestrator-model goes with --strategy topoweaver")
                flags.append(f"orchestrator_model={args.orchestrator_model}")
            settings = with_method_options(settings, flags, team, build=build)
    except (ConfigError, MethodError) as exc:
        fail(str(exc))
    check_code_isolation(settings, runs_code=settings.runs_code_tests)
    return settings


def check_code_isolation(settings: Settings, *, runs_code: bool) -> None:
    """The user's choice about unisolated code applies to this process; a run that would execute model code
    where it cannot be isolated, without that choice, stops here with one line (why, and how to isolate)."""
    if settings.allow_unisolated_code:  # only ever turned on here: a process that accepted it keeps it
        allow_unisolated_code(True)
    if runs_code:
        refused = unisolated_refusal()
        if refused:
            fail(refused)


def with_method_options(settings: Settings, flags: list[str] | None, team: Team, *, build: bool = True) -> Settings:
    """Settings whose chosen method exists and whose options (config table, then -o flags) are valid.
    ``build``: also build the method once, for the checks that need the team (a TUI run meets them here,
    not after its screen opened); a headless run leaves that to its one assembly (core.compose.assembly
    builds the method before any connection), so the method is built once."""
    info = get_method_info(settings.strategy)
    given = {**settings.strategy_options.get(info.name, {}), **parse_option_flags(flags)}
    if build:
        build_method(info.name, given, team)  # every value checked now, before any connection, not mid-run
    else:
        info.resolve(given)  # each value against its option's type and range
    if not given:
        return settings
    return replace(settings, strategy_options={**settings.strategy_options, info.name: given})


def check_save_path(path: Path | None) -> None:
    """--save must name a .json or .toml file: found out now, not after every round failed to save."""
    if path is None:
        return
    if path.suffix.lower() not in (".json", ".toml"):
        fail(f"--save {path}: the session file must end in .json or .toml")
    if path.is_dir():
        fail(f"--save {path}: is a directory, not a file")


def read_problem(args: argparse.Namespace) -> str | None:
    if args.file is not None and args.problem is not None:
        fail("give the problem as text or with -f FILE, not both")
    if args.file is not None:
        try:
            text = args.file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"cannot read problem file {args.file}: {exc.strerror if isinstance(exc, OSError) else exc}")
    elif args.problem == "-":
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError:  # a strict stdin (a UTF-8 locale other than C.UTF-8)
            fail("the problem is not valid UTF-8 text")
    else:
        text = args.problem
    if text is not None and not text.strip():
        fail("the problem is empty")
    if text is not None:
        try:  # bytes that are not UTF-8 reach us as lone surrogates (argv, stdin): no request can carry them
            text.encode("utf-8")
        except UnicodeEncodeError:
            fail("the problem is not valid UTF-8 text")
        from core.sessions.model import MAX_STRING

        if len(text) > MAX_STRING:  # the run could never be saved
            fail(f"the problem is too long ({len(text)} characters; a session holds at most {MAX_STRING})")
    return text.strip() if text is not None else None


def add_method_options(parser: argparse.ArgumentParser) -> None:
    """--strategy NAME and its -o KEY=VALUE options (a live run; the benchmark names a list instead)."""
    d = Settings()
    parser.add_argument(
        "--strategy",
        metavar="NAME",
        help=f"the method that wires the team (default {d.strategy}; swarm-tui strategies lists them)",
    )
    parser.add_argument(
        "-o",
        "--option",
        dest="method_options",
        action="append",
        metavar="KEY=VALUE",
        help="an option of the chosen method, e.g. -o alpha=0.5 (repeatable; see swarm-tui strategies)",
    )
    parser.add_argument(
        "--orchestrator-model",
        dest="orchestrator_model",
        metavar="NAME",
        help="--strategy topoweaver: the model that writes the plans (default: the run's; "
        "-o orchestrator_base_url=URL for another endpoint)",
    )

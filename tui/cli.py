"""The ``swarm-tui`` command: the TUI by default, ``--headless`` runs, and the subcommands.

Imports of heavy modules (Textual, torch via sentence-transformers) are deferred to the branch that
needs them, so ``--help`` and argument errors answer at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from core.config import DOMAINS, PROTOCOLS, ConfigError, Settings, load_settings
from core.domains import get_domain

EXIT_USAGE = 2
SUBCOMMANDS = ("replay", "sessions", "export", "bench")


class CliError(Exception):
    """A user error: printed as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad flag gives one clear line instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def fail(message: str) -> NoReturn:
    print(f"swarm-tui: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _int_range(low: int, high: int | None) -> type:
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


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by a live run, a fork and the benchmark runner."""
    d = Settings()
    parser.add_argument("--domain", choices=DOMAINS, help=f"problem domain (default {d.domain})")
    parser.add_argument("--tau", type=_unit_interval, help=f"routing threshold, 0..1 (default {d.tau})")
    parser.add_argument(
        "--k-in", dest="k_in", type=_int_range(1, None), help=f"max inbound edges per agent, 1..N-1 (default {d.k_in})"
    )
    parser.add_argument(
        "--max-rounds", dest="max_rounds", type=_int_range(1, 10), help=f"1..10 (default {d.max_rounds})"
    )
    parser.add_argument("--protocol", choices=PROTOCOLS, help=f"round protocol (default {d.protocol})")
    parser.add_argument(
        "--base-url",
        dest="base_url",
        help="OpenAI-compatible endpoint (default: config, $OPENAI_BASE_URL, http://localhost:1234/v1)",
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
        type=_int_range(1, 64),
        help=f"parallel model calls (default {d.max_concurrency})",
    )
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


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui",
        description="Watch, step and steer an LLM swarm whose communication graph is rebuilt every round (DyTopo).",
        epilog="Subcommands: swarm-tui replay FILE | sessions | export FILE | bench DATASET (each has --help).",
    )
    parser.add_argument("problem", nargs="?", help="the problem text, or - to read it from stdin")
    parser.add_argument("-f", "--file", type=Path, help="read the problem from a file")
    parser.add_argument(
        "--headless", action="store_true", help="run without the TUI: progress on stderr, answer on stdout"
    )
    parser.add_argument(
        "--json", action="store_true", help="with --headless: write the event stream as JSON lines on stdout"
    )
    parser.add_argument("--save", type=Path, metavar="PATH", help="also save the session to PATH (.json or .toml)")
    parser.add_argument(
        "--step", action="store_true", help="TUI: start in step mode (wait for a key before each phase)"
    )
    parser.add_argument("--expect", metavar="ANSWER", help="with --headless: check the final answer against this one")
    add_run_options(parser)
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
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
        )
    }
    try:
        settings = load_settings(getattr(args, "config", None), cli)
        n_workers = len(get_domain(settings.domain).workers)
        if cli["k_in"] is None and settings.k_in > n_workers - 1:
            # The default (3) suits the code team; smaller teams get the largest k_in they allow.
            settings = settings.with_overrides(k_in=n_workers - 1)
        settings.validate(n_workers=n_workers)
    except ConfigError as exc:
        fail(str(exc))
    return settings


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
        from core.session import MAX_STRING

        if len(text) > MAX_STRING:  # the run could never be saved
            fail(f"the problem is too long ({len(text)} characters; a session holds at most {MAX_STRING})")
    return text.strip() if text is not None else None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return _run_subcommand(argv[0], argv[1:])
        args = build_parser().parse_args(argv)
        settings = settings_from_args(args)
        problem = read_problem(args)
        check_save_path(args.save)
        if args.json and not args.headless:
            fail("--json goes with --headless")
        if args.expect is not None and not args.headless:
            fail("--expect goes with --headless")
        if args.headless:
            from .headless import run_headless

            if problem is None:
                from core.demo_script import DEMO_PROBLEMS

                if not args.demo:
                    fail('--headless needs a problem: swarm-tui --headless "PROBLEM" (or -f FILE, or - for stdin)')
                problem = DEMO_PROBLEMS[settings.domain]
            return run_headless(
                problem, settings, demo=args.demo, json_lines=args.json, save=args.save, expect=args.expect
            )
        from .app import run_app

        return run_app(problem, settings, demo=args.demo, save=args.save, step=args.step)
    except KeyboardInterrupt:
        print("swarm-tui: interrupted", file=sys.stderr)
        return 130
    except CliError as exc:
        fail(str(exc))


def _run_subcommand(name: str, argv: list[str]) -> int:
    if name == "bench":
        from .cli_bench import main as bench_main

        return bench_main(argv)
    from .cli_sessions import main as sessions_main

    return sessions_main(name, argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

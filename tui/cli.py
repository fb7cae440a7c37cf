"""The ``swarm-tui`` command: the TUI by default, ``--headless`` runs, and the subcommands.

Imports of heavy modules (Textual, torch via sentence-transformers) are deferred to the branch that
needs them, so ``--help`` and argument errors answer at once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from core import __version__
from core.evaluation.sandbox.isolation import protect_process

from .cli_options import (
    CliError,
    OneLineParser,
    add_run_options,
    check_save_path,
    fail,
    read_problem,
    settings_from_args,
)

SUBCOMMANDS = (
    "replay", "sessions", "export", "bench", "compare", "strategies", "teams", "train", "mcp", "attach", "setup",
    "serve",
)


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui",
        description="Watch, step and steer an LLM swarm whose communication graph is rebuilt every round (DyTopo).",
        epilog="Subcommands: swarm-tui replay FILE | sessions | export FILE | bench DATASET | "
        "compare PROBLEM --strategy A,B | strategies | teams | "
        "train METHOD DATASET | mcp | attach TASK_ID | setup | serve [RUN ARGS] "
        "(each has --help).",
    )
    parser.add_argument("--version", action="version", version=f"swarm-tui {__version__}")
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
    parser.add_argument(
        "--control", metavar="FILE", help="with --headless: steer the run from a script of JSON lines, one action "
        "each (- reads them from stdin while the run goes); see docs/steering.md",
    )
    add_run_options(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Whatever runs as this user (model code without isolation among it) cannot read our environment (the
    # API key) through /proc/<pid>/environ, nor our memory.
    protect_process()
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
        if args.control is not None and not args.headless:
            fail("--control goes with --headless")
        if args.control == "-" and (args.problem == "-" or args.file == Path("-")):
            fail("--control - and the problem cannot both come from stdin: put one of them in a file")
        if args.headless:
            from .headless import run_headless

            if problem is None:
                from core.demo.scripts import DEMO_PROBLEMS

                if not args.demo:
                    fail('--headless needs a problem: swarm-tui --headless "PROBLEM" (or -f FILE, or - for stdin)')
                problem = DEMO_PROBLEMS[settings.domain]
            return run_headless(
                problem, settings, demo=args.demo, json_lines=args.json, save=args.save, expect=args.expect,
                control=args.control,
            )
        if problem is None and args.demo:  # the demo brings its own problem: run it at once, no form to fill
            from core.demo.scripts import DEMO_PROBLEMS

            problem = DEMO_PROBLEMS[settings.domain]
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
    if name == "compare":
        from .cli_compare import main as compare_main

        return compare_main(argv)
    if name == "train":
        from .cli_train import main as train_main

        return train_main(argv)
    if name == "teams":
        from .cli_teams import main as teams_main

        return teams_main(argv)
    if name == "strategies":
        from .cli_strategies import main as strategies_main

        return strategies_main(argv)
    if name == "mcp":
        from .cli_mcp import main as mcp_main

        return mcp_main(argv)
    if name == "setup":
        from .cli_setup import main as setup_main

        return setup_main(argv)
    if name == "serve":
        from .cli_serve import main as serve_main

        return serve_main(argv)
    if name == "attach":
        from .cli_attach import main as attach_main

        return attach_main(argv)
    from .cli_sessions import main as sessions_main

    return sessions_main(name, argv)


def entry() -> None:
    """The console command: main(), then an exit that neither waits for nor crashes in a MiniLM load still
    under way in its background thread (a run that needed no vector ends before the load does: joining it
    would stall the exit for seconds, and tearing down native code mid-load can abort the process)."""
    try:
        code: int | str | None = main()
    except SystemExit as stop:
        code = stop.code
    embeddings = sys.modules.get("core.llm.embeddings")
    if embeddings is not None and embeddings.loading_in_progress():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else (0 if code is None else 2))
    raise SystemExit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()

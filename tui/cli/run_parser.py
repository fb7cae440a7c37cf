"""The top-level command line's vocabulary: the subcommand names and the parser of a run's arguments.

Apart from ``tui.cli.main`` so that the commands that wrap a run (``serve`` checks the run it will serve)
read them without importing the dispatcher that imports them: no import circle.
"""

from __future__ import annotations

from pathlib import Path

from core import __version__

from .options import OneLineParser, add_run_options

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

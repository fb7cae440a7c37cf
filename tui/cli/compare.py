"""``swarm-tui compare``: several methods on one problem, side by side.

Three sources: a live comparison (``compare [PROBLEM | -f FILE | -] --strategy A,B,C|all``), saved
sessions and compare records (``compare FILE [FILE…]``), and one problem of a benchmark folder
(``compare --bench DIR TASK_ID``). Live comparisons run in the compare screen, or with --headless on
stderr/stdout. Every user error is one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core.methods.registry import MethodError
from core.methods.selection import parse_strategies, split_option_flags
from core.runtime.config import Settings
from core.sessions.compare_record import RECORD_SUFFIX, is_record_file
from core.sessions.model import SessionFormatError
from core.sessions.store import SUFFIXES

from .launch import OpenCompareLive, OpenCompareSaved, Outcome
from .options import CliError, OneLineParser, add_run_options, fail, int_range, read_problem, settings_from_args

if TYPE_CHECKING:  # loaded only when saved runs are opened (startup time)
    from core.compose.compare_saved import SavedRun

STEP_HELP = "start every method in step mode: n advances all of them by one of their own steps, N the focused one"


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui compare",
        description="Run several methods on the same problem, endpoint, model and team, and compare their "
        "answers, verdicts, calls, tokens and wall time side by side. Or open saved runs side by side: "
        "swarm-tui compare FILE [FILE ...] (sessions and compare records), or "
        "swarm-tui compare --bench DIR TASK_ID (every method's run of one benchmark problem).",
    )
    parser.add_argument(
        "inputs", nargs="*", metavar="PROBLEM | FILE",
        help="the problem text (or - for stdin), or saved session / compare record files to open side by side",
    )
    parser.add_argument("-f", "--file", type=Path, help="read the problem from a file")
    parser.add_argument(
        "--strategy", metavar="A,B,C|all", default="",
        help="the methods to compare, comma-separated, or all (swarm-tui strategies lists them)",
    )
    parser.add_argument(
        "-o", "--option", dest="compare_options", action="append", default=[], metavar="[METHOD.]KEY=VALUE",
        help="a method option: KEY=VALUE for every chosen method that has it, METHOD.KEY=VALUE for one "
        "(e.g. -o topoweaver.turns=3 -o dmoa.k=2); [strategy.NAME] tables of the config apply first",
    )
    parser.add_argument(
        "--parallel", type=int_range(1, 10), metavar="N",
        help="run at most N methods at once (default: all at once; 1 runs them one after another, which is "
        "fairer on a single local GPU or CPU server, whose speed the runs would otherwise share)",
    )
    parser.add_argument("--bench", type=Path, metavar="DIR", help="open the runs of TASK_ID in this benchmark folder")
    parser.add_argument("--headless", action="store_true", help="no TUI: progress on stderr, summary table on stdout")
    parser.add_argument("--json", action="store_true", help="with --headless: every event as a JSON line with its "
                        "method, then one compare_summary line")
    parser.add_argument("--expect", metavar="ANSWER", help="math: judge each method's answer against this one")
    parser.add_argument("--step", action="store_true", help=STEP_HELP)
    parser.add_argument("--control", metavar="FILE", help="with --headless: steer every method's run from this "
                        "script of JSON lines (- reads stdin while they go); see docs/steering.md")
    parser.add_argument("--save", type=Path, metavar="PATH.compare.json",
                        help="the compare record's path (the sessions go in a folder of the same name beside it)")
    add_run_options(parser, method=False)
    return parser


def _saved_files(inputs: list[str]) -> list[Path] | None:
    """The inputs as saved files, when every one names an existing .json/.toml file; else None."""
    if not inputs:
        return None
    paths = [Path(text) for text in inputs]
    if all(p.suffix.lower() in SUFFIXES and p.is_file() for p in paths):
        return paths
    missing = [p for p in paths if p.suffix.lower() in SUFFIXES and not p.exists()]
    if missing and len(missing) == len(paths):
        fail(f"{missing[0]}: no such file")  # as replay, export and attach say it
    return None


def main(argv: list[str]) -> Outcome:
    args = build_parser().parse_args(argv)
    try:
        if args.bench is not None:
            return _open_bench(args)
        saved = _saved_files(args.inputs)
        if saved is not None:
            return _open_saved(args, saved)
        return _run_live(args)
    except CliError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        print("swarm-tui: interrupted", file=sys.stderr)
        return 130


def _no_run_flags(args: argparse.Namespace, what: str) -> None:
    for flag, given in (("--strategy", args.strategy), ("--headless", args.headless), ("--json", args.json),
                        ("--expect", args.expect), ("--save", args.save), ("-o", args.compare_options)):
        if given:
            fail(f"{flag} goes with a live comparison, not with {what}")


def _open_bench(args: argparse.Namespace) -> Outcome:
    from core.bench.compare_runs import bench_runs

    _no_run_flags(args, "--bench")
    if len(args.inputs) != 1:
        fail("--bench DIR takes one problem id: swarm-tui compare --bench DIR TASK_ID")
    try:
        runs = bench_runs(args.bench, args.inputs[0])
    except SessionFormatError as exc:
        fail(str(exc))
    return _show_saved(args, runs, f"benchmark {args.bench}, problem {args.inputs[0]}")


def _open_saved(args: argparse.Namespace, paths: list[Path]) -> Outcome:
    from core.compose.compare_saved import load_saved

    _no_run_flags(args, "saved files")
    try:
        runs = load_saved(paths)
    except SessionFormatError as exc:
        fail(str(exc))
    return _show_saved(args, runs, ", ".join(str(p) for p in paths))


def _show_saved(args: argparse.Namespace, runs: list[SavedRun], source: str) -> Outcome:
    settings = settings_from_args(args)
    return OpenCompareSaved(runs, source, settings=settings, demo=args.demo)


def _run_live(args: argparse.Namespace) -> Outcome:
    from core.compose.compare import ComparePlan

    if not args.strategy:
        fail("name the methods to compare: --strategy A,B,C or --strategy all (swarm-tui strategies lists them)")
    if len(args.inputs) > 1:
        fail("give the problem as one argument (quote it), or saved files that exist")
    if args.json and not args.headless:
        fail("--json goes with --headless")
    if args.control is not None and not args.headless:
        fail("--control goes with --headless")
    if args.control == "-" and args.inputs == ["-"]:
        fail("--control - and the problem cannot both come from stdin: put one of them in a file")
    if args.save is not None and not is_record_file(args.save):
        fail(f"--save {args.save}: a compare record's name ends in {RECORD_SUFFIX}")
    args.problem = args.inputs[0] if args.inputs else None
    settings: Settings = settings_from_args(args)
    problem = read_problem(args)
    try:
        methods = parse_strategies(args.strategy)
        given = split_option_flags(args.compare_options, methods)
    except ValueError as exc:
        fail(str(exc))
    if len(methods) < 2:
        fail("a comparison needs two methods or more: --strategy A,B (or all)")
    if problem is None:
        if not args.demo:
            fail('compare needs a problem: swarm-tui compare "PROBLEM" --strategy A,B (or -f FILE, or - for stdin)')
        from core.demo.scripts import DEMO_PROBLEMS

        problem = DEMO_PROBLEMS[settings.domain]
    options = {m: {**settings.strategy_options.get(m, {}), **given.get(m, {})} for m in methods}
    plan = ComparePlan(problem, settings, methods, options=options, parallel=args.parallel, expect=args.expect,
                       step=args.step)
    try:
        plan.check()
    except MethodError as exc:
        fail(str(exc))
    if args.headless:
        from .compare_headless import run_compare_headless

        return run_compare_headless(plan, demo=args.demo, json_lines=args.json, save=args.save, control=args.control)
    return OpenCompareLive(plan, demo=args.demo, save=args.save)

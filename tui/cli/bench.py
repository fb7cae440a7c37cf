"""``swarm-tui bench DATASET``: run a HumanEval or MATH dataset through topology strategies and
tabulate accuracy, rounds, tokens and wall time (the paper's Tables 2 and 8).

Progress on stderr (one line per finished pair; redrawn in place on a terminal), the table on stdout.
Exit codes: 0 done, 1 the endpoint or the embedding model failed, 2 bad input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.bench.runner import (
    BenchRunner,
    ResultsLog,
    Row,
    format_table,
    order_rows,
    plan_jobs,
    resolved_options,
    summarize,
    write_results,
)
from core.compose.control_feed import ControlScript
from core.datasets.catalog import listing, resolve
from core.datasets.formats import FORMAT_NAMES, get_format
from core.datasets.hub import is_hub_name, load_hub
from core.datasets.loader import load_dataset
from core.datasets.problems import Dataset, DatasetError
from core.evaluation.sandbox import isolation_status, unisolated_refusal
from core.methods.catalogue import get_method_info
from core.methods.registry import format_options
from core.methods.selection import parse_strategies, split_option_flags
from core.runtime.config import DEFAULT_STRATEGY, DomainName, Settings

from .launch import OpenBenchShow, Outcome
from .options import EXIT_USAGE, OneLineParser, add_run_options, int_range, setting_arg, settings_from_args
from .progress_line import ProgressLine

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
DEFAULT_OUT = Path("bench-results")


class _UserError(Exception):
    pass


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui bench",
        description="Run a dataset (shipped, a local JSONL file, or from the hub) through topology strategies and "
        "compare accuracy, rounds, tokens and wall time.",
    )
    parser.add_argument(
        "dataset", nargs="?",
        help="a shipped dataset by name (humaneval, math500), a JSONL file in a known format (see --list), "
        "or hf:OWNER/NAME with the hub extra",
    )
    parser.add_argument("--list", action="store_true", help="list the shipped datasets and the file formats")
    parser.add_argument("--format", choices=FORMAT_NAMES, help="the file's format, when its fields are ambiguous")
    parser.add_argument("--split", default="test", help="with hf:NAME: the split (default test)")
    parser.add_argument("--limit", type=int_range(1, None), help="run at most N problems")
    parser.add_argument("--offset", type=int_range(0, None), default=0, help="skip the first K problems")
    parser.add_argument(
        "--strategy",
        default=DEFAULT_STRATEGY,
        metavar="S1,S2,...",
        help=f"comma-separated method names (swarm-tui strategies lists them), or all (default {DEFAULT_STRATEGY})",
    )
    parser.add_argument(
        "--concurrency", type=int_range(1, 64), default=1, help="problems run at the same time (default 1)"
    )
    parser.add_argument("--out", type=Path, help=f"output folder (default {DEFAULT_OUT}/<dataset name>)")
    parser.add_argument(
        "--resume", action="store_true", help="skip (problem, strategy) pairs already in OUT/results.jsonl"
    )
    parser.add_argument(
        "--repeats", type=int_range(1, 100), default=1,
        help="runs of every (problem, strategy) pair; intervals then come from a bootstrap over problems",
    )
    parser.add_argument(
        "--seed", type=int_range(0, None), default=0,
        help="seed the repeats' seeds derive from (random graphs, TopoDIM/DMoA samplers, the request seed)",
    )
    parser.add_argument(
        "-o", "--option", dest="bench_options", action="append", default=[], metavar="[METHOD.]KEY=VALUE",
        help="a method option: KEY=VALUE for every chosen method that has it, METHOD.KEY=VALUE for one "
        "(e.g. -o single.samples=5: self-consistency, the equal-budget single-agent baseline)",
    )
    parser.add_argument(
        "--control", metavar="FILE", help="steer every run from this script of JSON lines (see docs/steering.md)"
    )
    parser.add_argument(
        "--sweep-max-cost", dest="sweep_max_cost", type=setting_arg("max_cost"), metavar="USD",
        help="the whole sweep's cost cap: once its finished runs cost USD dollars, no new run starts (--max-cost "
        "bounds each run)",
    )
    add_run_options(parser, method=False, several_urls=True)
    return parser


class Progress(ProgressLine):
    """``[12/40] dytopo HumanEval/3 ✓ 2 rounds 5.1s · dytopo 6/20 ETA 1m10s``.

    Runs of all methods interleave (problem-major), so every method finishes near the end of the sweep:
    the ETA shown with a method is the sweep's, the runs left of each method times that method's mean
    wall time so far (a method not seen yet counts at the mean of the others), over the concurrency."""

    def __init__(self, out: Any, left: dict[str, int] | None = None, concurrency: int = 1) -> None:
        super().__init__(out)
        self.left = dict(left or {})  # runs still to do, per strategy
        self.planned = dict(self.left)
        self.walls: dict[str, list[float]] = {}
        self.concurrency = concurrency

    def eta(self) -> str:
        means = {s: sum(w) / len(w) for s, w in self.walls.items() if w}
        if not means:
            return "ETA ?"
        fallback = sum(means.values()) / len(means)
        seconds = round(sum(n * means.get(s, fallback) for s, n in self.left.items()) / self.concurrency)
        if not any(self.left.values()):
            return "done"
        return f"ETA {seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"ETA {seconds}s"

    def __call__(self, row: Row, done: int, total: int) -> None:
        mark = "✓" if row.correct else "✗"
        rounds = f"{row.rounds} round" + ("" if row.rounds == 1 else "s")
        self.walls.setdefault(row.strategy, []).append(row.wall_s)
        if row.strategy in self.left:
            self.left[row.strategy] = max(0, self.left[row.strategy] - 1)
        planned = self.planned.get(row.strategy, 0)
        mine = f"{row.strategy} {planned - self.left.get(row.strategy, 0)}/{planned}"
        rep = f" r{row.repeat}" if row.repeat else ""
        self.show(
            f"[{done}/{total}] {row.strategy} {row.task_id}{rep} {mark} {rounds} {row.wall_s:.1f}s · {mine} "
            f"{self.eta()}",
            done, total,
        )


def _count(n: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"


def _dataset(args: argparse.Namespace) -> Dataset:
    if not args.dataset:
        raise _UserError("name a dataset (swarm-tui bench --list shows them) or a JSONL file")
    try:
        if is_hub_name(args.dataset):
            return load_hub(args.dataset, args.split, args.format)
        return load_dataset(resolve(args.dataset), args.format)
    except DatasetError as exc:
        raise _UserError(str(exc)) from None


def _check_domain(args: argparse.Namespace, dataset: Dataset) -> None:
    wanted = get_format(dataset.kind).domain
    if args.domain is not None and args.domain != wanted:
        raise _UserError(f"--domain {args.domain} does not fit a {dataset.name} dataset (its domain is {wanted})")


def _out_dir(args: argparse.Namespace, dataset: Dataset) -> Path:
    out: Path = args.out if args.out is not None else DEFAULT_OUT / dataset.path.stem
    if out.exists() and not out.is_dir():
        raise _UserError(f"--out {out} is a file, not a folder")
    if not args.resume and (out / "results.jsonl").exists():
        raise _UserError(f"{out} holds results of an earlier run: add --resume to continue it, or choose another --out")
    return out


def _pool(settings: Settings, backend: Any, urls: list[str]) -> Any:
    """The run's client and one per further --base-url (same model and key), as one pool (core.llm.pool)."""
    from core.llm.pool import LLMPool
    from core.runtime.clients import client_for
    from core.runtime.config import resolve_api_key

    extra = [client_for(settings, url, resolve_api_key(settings), backend.model) for url in urls[1:]]
    return LLMPool([backend.llm, *extra])


def report_main(argv: list[str]) -> int:
    """``swarm-tui bench report DIR [DIR...]``: report.md, report.json and plots into the first DIR."""
    from core.bench.report import ReportError, write_report

    parser = OneLineParser(
        prog="swarm-tui bench report",
        description="Write report.md (95% intervals, paired tests, per-problem table), report.json and "
        "plots (PNG + SVG) for one or more bench output folders (several merge, e.g. one per model).",
    )
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="bench output folders")
    args = parser.parse_args(argv)
    try:
        written = write_report(args.dirs)
    except ReportError as exc:
        print(f"swarm-tui bench report: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"report: {', '.join(str(p) for p in written)}")
    return 0


def show_main(argv: list[str]) -> Outcome:
    """``swarm-tui bench show DIR [DIR...]``: the folders' table, plot and runs in the TUI."""
    from core.bench.report import ReportError, build_report, load_folder

    parser = OneLineParser(prog="swarm-tui bench show", description="Show bench output folders in the TUI.")
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="bench output folders")
    args = parser.parse_args(argv)
    try:
        report = build_report([load_folder(d) for d in args.dirs])
    except ReportError as exc:
        print(f"swarm-tui bench show: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return OpenBenchShow(report)


def main(argv: list[str]) -> Outcome:
    if argv[:1] == ["report"]:
        return report_main(argv[1:])
    if argv[:1] == ["show"]:
        return show_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.list:
        print(listing())
        return 0
    settings = settings_from_args(args)
    try:
        strategies = parse_strategies(args.strategy)
        given = split_option_flags(args.bench_options, strategies)
        settings = replace(settings, strategy_options={**settings.strategy_options, **given})
        dataset = _dataset(args)
        _check_domain(args, dataset)
        problems = dataset.select(args.offset, args.limit)
        if not problems:
            raise _UserError(
                f"--offset {args.offset} is past the end of the dataset ({len(dataset.problems)} problems)"
            )
        out = _out_dir(args, dataset)
        if args.control == "-":
            raise _UserError("--control - reads stdin while one run goes; a benchmark takes a FILE")
        control = ControlScript(args.control, lambda line: print(f"swarm-tui bench: {line}", file=sys.stderr)) if (
            args.control) else None
        # Scoring runs the model's code: say how, before it starts.
        if any(p.domain == DomainName.CODE for p in problems):
            refused = unisolated_refusal()
            if refused:
                raise _UserError(refused)
            isolated, how = isolation_status()
            if not isolated:
                print(f"swarm-tui bench: note: {how} (--allow-unisolated-code)", file=sys.stderr)
    except (_UserError, ValueError) as exc:
        print(f"swarm-tui bench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(_bench(args, settings, dataset, problems, strategies, out, control))
    except KeyboardInterrupt:  # a second Ctrl-C, or one before the handler was in place
        print("swarm-tui bench: interrupted; finished rows are in results.jsonl (use --resume)", file=sys.stderr)
        return EXIT_INTERRUPTED


async def _bench(
    args: argparse.Namespace,
    settings: Settings,
    dataset: Dataset,
    problems: list[Any],
    strategies: list[str],
    out: Path,
    control: ControlScript | None = None,
) -> int:
    # Heavy imports (torch via the embedder, the openai client) only once the input is known good.
    from core.compose.plan import BackendChoice, embedder_for
    from core.compose.runner import open_backend
    from core.demo.bench_script import benchmark_script
    from core.demo.server import ScriptedServer
    from core.llm.client import EndpointError
    from core.llm.embeddings import EmbeddingError
    from core.llm.pool import LLMPool

    log = ResultsLog(out / "results.jsonl")
    jobs, finished = plan_jobs(problems, strategies, log.read() if args.resume else [], args.repeats)
    progress = Progress(sys.stderr, Counter(strategy for _, strategy, _ in jobs), args.concurrency)
    if args.resume and finished:
        progress.note(f"resuming: {len(finished)} finished pairs skipped, {len(jobs)} to run")
    embedder = embedder_for(settings)
    server = ScriptedServer(benchmark_script(dataset.problems)).start() if args.demo else None
    try:
        backend = await open_backend(settings, BackendChoice(demo=args.demo, server=server))
    except EndpointError as exc:
        print(f"swarm-tui bench: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if len(args.base_url or []) > 1 and not backend.demo:
        try:
            backend.llm = _pool(settings, backend, args.base_url)
        except EndpointError as exc:
            await backend.close()
            print(f"swarm-tui bench: {exc}", file=sys.stderr)
            return EXIT_FAILED
    runner = BenchRunner(
        settings, backend, embedder, out, concurrency=args.concurrency, on_row=progress,
        repeats=args.repeats, seed=args.seed, control=control, max_cost=args.sweep_max_cost,
    )
    loop = asyncio.get_running_loop()
    handled = _stop_on_signals(loop, runner.stop)
    try:
        if any(get_method_info(s).uses_embeddings for s in strategies) and jobs:
            embedder.load_in_background()  # alongside the first requests; a run that needs a vector waits
        mode = "DEMO (scripted model server) " if backend.demo else ""
        progress.note(
            f"{mode}{dataset.name}: {_count(len(problems), 'problem')} x {_count(len(strategies), 'strategy')}, "
            f"model {backend.model} at {backend.base_url}"
        )
        await runner.run(jobs, done_before=len(finished))
    except EmbeddingError as exc:
        progress.close()
        print(f"swarm-tui bench: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
        await backend.close()
    progress.close()
    if isinstance(backend.llm, LLMPool):
        spread = ", ".join(f"{m.shown_url} {n}" for m, n in zip(backend.llm.members, backend.llm.served, strict=True))
        progress.note(f"calls per endpoint: {spread}")
    rows = order_rows([*finished, *runner.rows], problems, strategies)
    meta = _results_meta(args, settings, dataset, problems, strategies, backend, rows)
    if rows:
        _write_and_print(out, dataset, problems, strategies, backend, rows, meta)
    return _ending(runner, len(problems) * len(strategies) * args.repeats - len(rows))


def _ending(runner: BenchRunner, left: int) -> int:
    """The exit code, with one line on stderr for a fatal error, a sweep cost cap reached or an interruption."""
    if runner.fatal is not None:
        print(f"swarm-tui bench: {runner.fatal}", file=sys.stderr)
        return EXIT_FAILED
    if runner.cost_stopped:
        print(f"swarm-tui bench: {runner.cost_stopped}; run again with --resume (and a higher cap) to finish",
              file=sys.stderr)
    if runner.stopped:
        print(
            f"swarm-tui bench: interrupted with {left} pairs left; run again with --resume to finish", file=sys.stderr
        )
        return EXIT_INTERRUPTED
    return 0


def _stop_on_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[], None]) -> list[signal.Signals]:
    """Ctrl-C and SIGTERM stop the runner; the signals that could be handled (removed again at the end)."""
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop)
            handled.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no support
            pass
    return handled


def _results_meta(
    args: argparse.Namespace, settings: Settings, dataset: Dataset, problems: list[Any], strategies: list[str],
    backend: Any, rows: list[Any],
) -> dict[str, Any]:
    """What results.json says about the run beside its rows: the slice, the model, the settings, the options."""
    from core.llm.urls import redact_url

    return {
        "dataset": str(dataset.path),
        "kind": dataset.kind,
        "offset": args.offset,
        "limit": args.limit,
        "problems": len(problems),
        "strategies": strategies,
        "repeats": args.repeats,
        "seed": args.seed,
        "model": backend.model,
        "base_url": backend.base_url,
        "base_urls": [redact_url(u) for u in args.base_url or []] if len(args.base_url or []) > 1 else None,
        "demo": backend.demo,
        "settings": {
            "tau": settings.tau,
            "k_in": settings.k_in,
            "max_rounds": settings.max_rounds,
            "protocol": settings.protocol,
        },
        "complete": len(rows) == len(problems) * len(strategies) * args.repeats,
        # How each method was configured (defaults included): two columns are never compared blind.
        "method_options": resolved_options(strategies, settings.strategy_options),
    }


def _write_and_print(
    out: Path, dataset: Dataset, problems: list[Any], strategies: list[str], backend: Any, rows: list[Any],
    meta: dict[str, Any],
) -> None:
    """results.json/.csv and the report written; the summary table and where everything went printed."""
    written = write_results(out, rows, strategies, meta)
    print(
        f"{dataset.name} ({dataset.path.name}), {len(problems)} problems, model {backend.model}"
        + (" (demo)" if backend.demo else "")
    )
    print(format_table(summarize(rows, strategies)))
    for name, values in meta["method_options"].items():
        if values:
            print(f"{name} options: {format_options(values)}")
    print(f"results: {', '.join(str(p) for p in written)}; sessions in {out / 'sessions'}")
    from core.bench.report import write_report

    report = write_report([out])
    print(f"report: {report[0]} (plots beside it)")

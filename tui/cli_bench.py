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
from pathlib import Path
from typing import Any

from core.bench.runner import (
    BenchRunner,
    ResultsLog,
    Row,
    format_table,
    order_rows,
    parse_strategies,
    plan_jobs,
    summarize,
    write_results,
)
from core.datasets.problems import Dataset, DatasetError, load_dataset
from core.methods.catalogue import get_method_info
from core.methods.registry import format_options
from core.runtime.config import Settings

from .cli_options import EXIT_USAGE, OneLineParser, add_run_options, int_range, settings_from_args
from .progress_line import ProgressLine

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
DEFAULT_OUT = Path("bench-results")


class _UserError(Exception):
    pass


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui bench",
        description="Run a HumanEval- or MATH-format JSONL dataset through topology strategies and "
        "compare accuracy, rounds, tokens and wall time.",
    )
    parser.add_argument("dataset", type=Path, help="HumanEval or MATH JSONL file (detected by its fields)")
    parser.add_argument("--limit", type=int_range(1, None), help="run at most N problems")
    parser.add_argument("--offset", type=int_range(0, None), default=0, help="skip the first K problems")
    parser.add_argument(
        "--strategy",
        default="dytopo",
        metavar="S1,S2,...",
        help="comma-separated method names (swarm-tui strategies lists them), or all (default dytopo)",
    )
    parser.add_argument(
        "--concurrency", type=int_range(1, 64), default=1, help="problems run at the same time (default 1)"
    )
    parser.add_argument("--out", type=Path, help=f"output folder (default {DEFAULT_OUT}/<dataset name>)")
    parser.add_argument(
        "--resume", action="store_true", help="skip (problem, strategy) pairs already in OUT/results.jsonl"
    )
    add_run_options(parser, method=False)
    return parser


class Progress(ProgressLine):
    """``[12/40] dytopo HumanEval/3 ✓ 2 rounds 5.1s``."""

    def __call__(self, row: Row, done: int, total: int) -> None:
        mark = "✓" if row.correct else "✗"
        rounds = f"{row.rounds} round" + ("" if row.rounds == 1 else "s")
        self.show(f"[{done}/{total}] {row.strategy} {row.task_id} {mark} {rounds} {row.wall_s:.1f}s", done, total)


def _count(n: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"


def _dataset(path: Path) -> Dataset:
    try:
        return load_dataset(path)
    except DatasetError as exc:
        raise _UserError(str(exc)) from None


def _check_domain(args: argparse.Namespace, dataset: Dataset) -> None:
    wanted = "code" if dataset.name == "HumanEval" else "math"
    if args.domain is not None and args.domain != wanted:
        raise _UserError(f"--domain {args.domain} does not fit a {dataset.name} dataset (its domain is {wanted})")


def _out_dir(args: argparse.Namespace, dataset: Dataset) -> Path:
    out: Path = args.out if args.out is not None else DEFAULT_OUT / dataset.path.stem
    if out.exists() and not out.is_dir():
        raise _UserError(f"--out {out} is a file, not a folder")
    if not args.resume and (out / "results.jsonl").exists():
        raise _UserError(f"{out} holds results of an earlier run: add --resume to continue it, or choose another --out")
    return out


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    settings = settings_from_args(args)
    try:
        strategies = parse_strategies(args.strategy)
        dataset = _dataset(args.dataset)
        _check_domain(args, dataset)
        problems = dataset.select(args.offset, args.limit)
        if not problems:
            raise _UserError(
                f"--offset {args.offset} is past the end of the dataset ({len(dataset.problems)} problems)"
            )
        out = _out_dir(args, dataset)
    except (_UserError, ValueError) as exc:
        print(f"swarm-tui bench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(_bench(args, settings, dataset, problems, strategies, out))
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
) -> int:
    # Heavy imports (torch via the embedder, the openai client) only once the input is known good.
    from core.compose.runner import open_backend
    from core.demo.bench_script import benchmark_script
    from core.demo.server import ScriptedServer
    from core.llm.client import EndpointError
    from core.llm.embeddings import EmbeddingError, shared_embedder

    progress = Progress(sys.stderr)
    log = ResultsLog(out / "results.jsonl")
    jobs, finished = plan_jobs(problems, strategies, log.read() if args.resume else [])
    if args.resume and finished:
        progress.note(f"resuming: {len(finished)} finished pairs skipped, {len(jobs)} to run")
    embedder = shared_embedder(settings.embedding_model_path)
    server = ScriptedServer(benchmark_script(dataset.problems)).start() if args.demo else None
    try:
        backend = await open_backend(settings, demo=args.demo, server=server)
    except EndpointError as exc:
        print(f"swarm-tui bench: {exc}", file=sys.stderr)
        return EXIT_FAILED
    runner = BenchRunner(settings, backend, embedder, out, concurrency=args.concurrency, on_row=progress)
    loop = asyncio.get_running_loop()
    handled: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, runner.stop)
            handled.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no support
            pass
    try:
        if any(s not in ("single", "single-turn") for s in strategies) and jobs:
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
    rows = order_rows([*finished, *runner.rows], problems, strategies)
    meta = {
        "dataset": str(dataset.path),
        "kind": dataset.kind,
        "offset": args.offset,
        "limit": args.limit,
        "problems": len(problems),
        "strategies": strategies,
        "model": backend.model,
        "base_url": backend.base_url,
        "demo": backend.demo,
        "settings": {
            "tau": settings.tau,
            "k_in": settings.k_in,
            "max_rounds": settings.max_rounds,
            "protocol": settings.protocol,
        },
        "complete": len(rows) == len(problems) * len(strategies),
        # How each method was configured (defaults included): two columns are never compared blind.
        "method_options": {s: get_method_info(s).resolve(settings.strategy_options.get(s)) for s in strategies},
    }
    written = write_results(out, rows, strategies, meta) if rows else []
    if rows:
        print(
            f"{dataset.name} ({dataset.path.name}), {len(problems)} problems, model {backend.model}"
            + (" (demo)" if backend.demo else "")
        )
        print(format_table(summarize(rows, strategies)))
        for name, values in meta["method_options"].items():
            if values:
                print(f"{name} options: {format_options(values)}")
        print(f"results: {', '.join(str(p) for p in written)}; sessions in {out / 'sessions'}")
    if runner.fatal is not None:
        print(f"swarm-tui bench: {runner.fatal}", file=sys.stderr)
        return EXIT_FAILED
    if runner.stopped:
        left = len(problems) * len(strategies) - len(rows)
        print(
            f"swarm-tui bench: interrupted with {left} pairs left; run again with --resume to finish", file=sys.stderr
        )
        return EXIT_INTERRUPTED
    return 0

"""``swarm-tui train topodim DATASET``: train TopoDIM's graph generator with REINFORCE (eq. 10–12).

Progress on stderr (a bar redrawn in place on a terminal, plain lines otherwise); the checkpoint is the
weights file in the user data dir (``--weights`` to choose another), written after every step, which
later runs with ``-o generator=policy`` load. Exit codes: 0 done, 1 the endpoint or a run failed,
2 bad input, 130 interrupted (the finished steps are kept: ``--resume`` continues).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .options import (
    EXIT_USAGE,
    OneLineParser,
    add_run_options,
    int_range,
    positive_number,
    settings_from_args,
    unit_interval,
)
from .progress_line import ProgressLine

if TYPE_CHECKING:
    from core.compose.train_topodim import StepReport
    from core.datasets.problems import Dataset, Problem
    from core.runtime.config import Settings

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui train topodim",
        description="Train TopoDIM's typed-graph generator (R-GCN encoder + edge decoder) with REINFORCE on a "
        "HumanEval- or MATH-format dataset; later runs with -o generator=policy use the weights.",
    )
    parser.add_argument("dataset", type=Path, help="HumanEval or MATH JSONL file (detected by its fields)")
    parser.add_argument("--limit", type=int_range(1, None), help="train on at most N problems (paper: 40 or 80)")
    parser.add_argument("--offset", type=int_range(0, None), default=0, help="skip the first K problems")
    parser.add_argument("--epochs", type=int_range(1, 1000), default=1, help="passes over the problems (default 1)")
    parser.add_argument("--samples", type=int_range(1, 64), default=2,
                        help="graphs drawn per problem and step (default 2)")
    parser.add_argument("--lam", type=unit_interval, default=0.8, help="λ of eq. 11, task vs diversity (default 0.8)")
    parser.add_argument("--gamma", type=unit_interval, default=0.01, help="entropy weight of eq. 12 (default 0.01)")
    parser.add_argument("--lr", type=positive_number, default=0.01, help="learning rate (default 0.01)")
    parser.add_argument("--alpha", type=unit_interval, default=0.7, help="sparsity budget of eq. 8 (default 0.7)")
    parser.add_argument("--edge-types", dest="edge_types", default="conditioned,feedback,debate",
                        help="allowed edge types (default conditioned,feedback,debate)")
    parser.add_argument("--agents", type=int_range(2, 6), default=5, help="team size (default 5)")
    parser.add_argument("--seed", type=int_range(0, None), default=0, help="initialisation and sampling seed")
    parser.add_argument("--weights", type=Path, help="the checkpoint / weights file (default: the user data dir's "
                        "swarm-tui/topodim/policy.pt)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true", help="continue the training stored in the weights file")
    group.add_argument("--restart", action="store_true", help="train from scratch, replacing the weights file")
    group.add_argument("--distill", action="store_true", help="stage 2 (§3.4): distil the trained policy into "
                       "per-agent local policies on these problems (no model calls); -o generator=decentralized")
    parser.add_argument("--distill-steps", dest="distill_steps", type=int_range(1, 100_000), default=200,
                        help="distillation steps (default 200)")
    add_run_options(parser, method=False)
    return parser


class Bar(ProgressLine):
    """``[#####.....] step 3/8 HumanEval/2  R 0.87 (task 1.00, div 0.55)  b 0.42  τ 1.36``."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(out, note_prefix="  ! ")

    def __call__(self, report: StepReport) -> None:
        def mean(values: list[float]) -> float:
            return sum(values) / len(values) if values else 0.0

        line = (
            f"step {report.step}/{report.total} {report.task_id}  R {mean(report.rewards):.2f} "
            f"(task {mean(report.task_rewards):.2f}, div {mean(report.diversity):.2f})  "
            f"b {report.baseline:.2f}  τ {report.temperature:.2f}  loss {report.loss:+.3f}"
        )
        self.show(line, report.step, report.total)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    settings = settings_from_args(args)
    from core.datasets.loader import load_dataset
    from core.datasets.problems import DatasetError
    from core.methods.registry import MethodError
    from core.methods.topodim.generators import parse_edge_types

    try:
        parse_edge_types(args.edge_types)
        dataset = load_dataset(args.dataset)
    except (DatasetError, MethodError) as exc:
        print(f"swarm-tui train topodim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problems = dataset.select(args.offset, args.limit)
    if not problems:
        print(f"swarm-tui train topodim: error: --offset {args.offset} is past the end of the dataset "
              f"({len(dataset.problems)} problems)", file=sys.stderr)
        return EXIT_USAGE
    from core.methods.topodim.policy import default_weights_path

    weights: Path = args.weights or default_weights_path()
    if args.distill:
        if not weights.is_file():
            print(f"swarm-tui train topodim: error: nothing to distil: {weights} does not exist (train first)",
                  file=sys.stderr)
            return EXIT_USAGE
        return asyncio.run(_distill(args, settings, problems, weights))
    if weights.exists() and not (args.resume or args.restart):
        print(f"swarm-tui train topodim: error: {weights} already holds weights: add --resume to continue that "
              "training or --restart to train from scratch", file=sys.stderr)
        return EXIT_USAGE
    if args.resume and not weights.exists():
        print(f"swarm-tui train topodim: error: nothing to resume: {weights} does not exist", file=sys.stderr)
        return EXIT_USAGE
    if weights.is_dir():
        print(f"swarm-tui train topodim: error: --weights {weights} is a directory", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(_train(args, settings, dataset, problems, weights))
    except KeyboardInterrupt:
        print("swarm-tui train topodim: interrupted; finished steps are in the checkpoint (use --resume)",
              file=sys.stderr)
        return EXIT_INTERRUPTED


async def _distill(args: argparse.Namespace, settings: Settings, problems: list[Problem], weights: Path) -> int:
    from core.compose.plan import embedder_for
    from core.compose.train_topodim import TrainError, distill
    from core.llm.embeddings import EmbeddingError

    embedder = embedder_for(settings)
    print(f"distilling {weights} into per-agent policies on {len(problems)} queries ({args.distill_steps} steps)",
          file=sys.stderr)
    try:
        await asyncio.to_thread(embedder.load)
        report = await distill(weights, problems, embedder, steps=args.distill_steps, lr=args.lr, agents=args.agents,
                               seed=args.seed)
    except (TrainError, EmbeddingError) as exc:
        print(f"swarm-tui train topodim: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"distilled: eq. 13 KL per query {report.kl_start:.3f} -> {report.kl_end:.3f}; weights: {weights} "
          "(used by runs with -o generator=decentralized)")
    return 0


async def _train(
    args: argparse.Namespace, settings: Settings, dataset: Dataset, problems: list[Problem], weights: Path
) -> int:
    from core.compose.plan import BackendChoice, embedder_for
    from core.compose.runner import open_backend
    from core.compose.train_topodim import TopoDIMTrainer, TrainError, TrainPlan
    from core.demo.bench_script import benchmark_script
    from core.demo.server import ScriptedServer
    from core.llm.client import EndpointError
    from core.llm.embeddings import EmbeddingError

    plan = TrainPlan(
        dataset=str(Path(args.dataset).resolve()), offset=args.offset, limit=args.limit, epochs=args.epochs,
        samples=args.samples, lam=args.lam, gamma=args.gamma, lr=args.lr, alpha=args.alpha,
        edge_types=args.edge_types, agents=args.agents, seed=args.seed,
    )
    bar = Bar(sys.stderr)
    embedder = embedder_for(settings)
    server = ScriptedServer(benchmark_script(dataset.problems)).start() if args.demo else None
    try:
        backend = await open_backend(settings, BackendChoice(demo=args.demo, server=server))
    except EndpointError as exc:
        print(f"swarm-tui train topodim: {exc}", file=sys.stderr)
        return EXIT_FAILED
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    trainer: TopoDIMTrainer | None = None
    try:
        trainer = TopoDIMTrainer(plan, settings, backend, embedder, weights, resume=args.resume, on_step=bar,
                                 on_notice=bar.note)
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, trainer.stop)
                handled.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        total = trainer.total_steps(problems)
        mode = "DEMO (scripted model server) " if backend.demo else ""
        start = f" from step {trainer.step}" if trainer.step else ""
        print(f"{mode}training TopoDIM's policy on {dataset.name} ({len(problems)} problems x {args.epochs} "
              f"epoch(s) = {total} steps{start}, {args.samples} graph(s) per step), model {backend.model}",
              file=sys.stderr)
        if trainer.step >= total:
            print(f"nothing left to train: {weights} already holds all {total} steps", file=sys.stderr)
            return 0
        await asyncio.to_thread(embedder.load)
        await trainer.run(problems)
    except TrainError as exc:
        bar.close()
        print(f"swarm-tui train topodim: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except EmbeddingError as exc:
        bar.close()
        print(f"swarm-tui train topodim: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
        await backend.close()
    bar.close()
    if trainer.stopped:
        print(f"swarm-tui train topodim: stopped at step {trainer.step}; --resume continues", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"trained {trainer.step} steps; weights: {weights} (used by runs with -o generator=policy"
          + ("" if args.weights is None else f" -o weights={weights}") + ")")
    return 0

"""``swarm-tui train dmoa DATASET``: few-shot training of DMoA's GRU router, without labels (§4.2, Alg. 1).

The training itself is core.compose.train_dmoa; this parses the options and prints its progress. The
weights are saved per (domain, team) in the user data dir (or ``-o weights_dir=DIR``), where
``--strategy dmoa`` runs find them.

The endpoint must return logprobs: it is probed first, and training is refused with one line if not.
Progress on stderr: per step the routed agents and every agent's entropy and the step's loss, per
epoch the loss. Exit codes: 0 trained, 1 the endpoint failed or gives no logprobs, 2 bad input, 130
interrupted.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from core.compose.train_dmoa import TrainError, TrainSchedule, dmoa_training_options, train_router
from core.methods.dmoa.events import DmoaRouted, DmoaStepDone
from core.methods.registry import MethodError, parse_option_flags
from core.runtime import events as ev
from core.runtime.config import DomainName
from core.runtime.dispatch import EventTable, is_warning

from .options import EXIT_USAGE, OneLineParser, add_run_options, int_range, positive_number, settings_from_args

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
PROG = "swarm-tui train dmoa"


class _UserError(Exception):
    pass


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog=PROG,
        description="Train DMoA's GRU router on a dataset's problems from the agents' predictive entropy "
        "(no labels are used). The paper adapts on 40-80 queries per benchmark.",
    )
    parser.add_argument("dataset", type=Path, help="HumanEval or MATH JSONL file (its problems; answers are not used)")
    parser.add_argument("--limit", type=int_range(1, None), default=40, help="problems to train on (default 40)")
    parser.add_argument("--offset", type=int_range(0, None), default=0, help="skip the first K problems")
    parser.add_argument("--epochs", type=int_range(1, 100), default=3, help="training epochs (default 3)")
    parser.add_argument("--batch", type=int_range(1, 256), default=8, help="queries per batch (default 8)")
    parser.add_argument("--lr", type=positive_number, default=1e-3, help="AdamW learning rate (default 1e-3)")
    parser.add_argument(
        "-o",
        "--option",
        dest="dmoa_options",
        action="append",
        metavar="KEY=VALUE",
        help="a DMoA option (tau, k, l_max, top_logprobs, seed, weights_dir; see swarm-tui strategies)",
    )
    add_run_options(parser, method=False)
    return parser


PRINTS: EventTable[TrainPrinter] = EventTable()  # what the printer says of each event it shows


class TrainPrinter:
    """What the dense runs do, step by step: the routed agents, every agent's entropy, the step's loss."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def __call__(self, event: ev.Event) -> None:
        if is_warning(event):
            self._line(f"    ! {event.message}")
        else:
            PRINTS.dispatch(self, event)

    @PRINTS.on(DmoaRouted)
    def _routed(self, event: DmoaRouted) -> None:
        self._line(f"  step {event.round}: routed {', '.join(event.selected)} (k {event.k}/{event.k_max})")

    @PRINTS.on(DmoaStepDone)
    def _step_done(self, event: DmoaStepDone) -> None:
        if event.entropy:
            pe = ", ".join(f"{name} {value:.3f}" for name, value in event.entropy.items())
            loss = f"; rank loss {event.rank_loss:.4f}" if event.rank_loss is not None else ""
            self._line(f"    entropy: {pe}{loss}  [{event.tag}]")
        else:
            self._line(f"    no entropy this step  [{event.tag}]")


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    settings = settings_from_args(args)
    try:
        from core.datasets.loader import load_dataset
        from core.datasets.problems import DatasetError

        try:
            dataset = load_dataset(args.dataset)
        except DatasetError as exc:
            raise _UserError(str(exc)) from None
        problems = dataset.select(args.offset, args.limit)
        if not problems:
            size = len(dataset.problems)
            raise _UserError(f"--offset {args.offset} is past the end of the dataset ({size} problems)")
        domain = problems[0].domain
        if args.domain is not None and args.domain != domain:
            raise _UserError(f"--domain {args.domain} does not fit a {dataset.name} dataset (its domain is {domain})")
        settings = replace(settings, domain=DomainName(domain), execute_code=False)
        options = dmoa_training_options(settings, parse_option_flags(args.dmoa_options))
    except (_UserError, MethodError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    schedule = TrainSchedule(epochs=args.epochs, batch=args.batch, lr=args.lr)
    err = sys.stderr

    def say(line: str) -> None:
        print(line, file=err, flush=True)

    try:
        asyncio.run(
            train_router(settings, dataset, problems, options, schedule, demo=args.demo, say=say,
                         sinks=[TrainPrinter(err)])
        )
        return 0
    except TrainError as exc:
        print(f"{PROG}: {exc}", file=err)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing was saved", file=sys.stderr)
        return EXIT_INTERRUPTED

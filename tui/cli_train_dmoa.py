"""``swarm-tui train dmoa DATASET``: few-shot training of DMoA's GRU router, without labels (§4.2, Alg. 1).

Each problem of the dataset slice runs densely — every agent of the pool at every step, with top
logprobs — while the router's routed agents carry the trajectory; each agent's predictive entropy
(eq. 13) becomes the target of the pairwise ranking loss (eq. 14-15). Then AdamW (lr 1e-3, batch 8,
3 epochs, gradient clip 1.0; App. B.3) updates the router, and its weights are saved per (domain,
team) in the user data dir (or ``-o weights_dir=DIR``), where ``--strategy dmoa`` runs find them.

The endpoint must return logprobs: it is probed first, and training is refused with one line if not.
Progress on stderr: per step the routed agents and every agent's entropy and the step's loss, per
epoch the loss. Exit codes: 0 trained, 1 the endpoint failed or gives no logprobs, 2 bad input, 130
interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from core.methods.catalogue import get_method_info
from core.methods.registry import MethodError, parse_option_flags
from core.runtime import events as ev
from core.runtime.config import Settings

from .cli_options import EXIT_USAGE, OneLineParser, add_run_options, int_range, positive_number, settings_from_args

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


class TrainPrinter:
    """What the dense runs do, step by step: the routed agents, every agent's entropy, the step's loss."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def __call__(self, event: ev.Event) -> None:
        from core.methods.dmoa_events import DmoaRouted, DmoaStepDone

        if isinstance(event, DmoaRouted):
            self._line(f"  step {event.round}: routed {', '.join(event.selected)} (k {event.k}/{event.k_max})")
        elif isinstance(event, DmoaStepDone):
            if event.entropy:
                pe = ", ".join(f"{name} {value:.3f}" for name, value in event.entropy.items())
                loss = f"; rank loss {event.rank_loss:.4f}" if event.rank_loss is not None else ""
                self._line(f"    entropy: {pe}{loss}  [{event.tag}]")
            else:
                self._line(f"    no entropy this step  [{event.tag}]")
        elif isinstance(event, ev.Notice) and event.severity != "info":
            self._line(f"    ! {event.message}")


def _dmoa_options(settings: Settings, flags: list[str] | None) -> dict[str, Any]:
    info = get_method_info("dmoa")
    given = {**settings.strategy_options.get("dmoa", {}), **parse_option_flags(flags)}
    options = info.resolve(given)
    if options["router"] != "gru":
        raise MethodError(f"only the gru router learns: router={options['router']} has nothing to train")
    options.update(collect=True, ttt=0)
    return options


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    settings = settings_from_args(args)
    try:
        from core.bench.runner import DatasetError, load_dataset

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
        settings = replace(settings, domain=domain, execute_code=False)
        options = _dmoa_options(settings, args.dmoa_options)
    except (_UserError, MethodError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(_train(args, settings, dataset, problems, options))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing was saved", file=sys.stderr)
        return EXIT_INTERRUPTED


async def probe_logprobs(llm: Any, top: int) -> bool:
    """Does the endpoint return per-token top logprobs? One short request says."""
    from core.methods.dmoa_routing import predictive_entropy

    reply = await llm.chat(
        [{"role": "user", "content": "Reply with one word: ready."}],
        temperature=0.0,
        max_tokens=8,
        json_mode=False,
        top_logprobs=top,
    )
    return predictive_entropy(reply.top_logprobs) is not None


async def _train(args: argparse.Namespace, settings: Settings, dataset: Any, problems: list[Any],
                 options: dict[str, Any]) -> int:
    import openai

    from core.compose.runner import build_engine, open_backend
    from core.demo.bench_script import benchmark_script
    from core.demo.server import ScriptedServer
    from core.llm.client import EndpointError
    from core.llm.embeddings import EmbeddingError, shared_embedder
    from core.methods.dmoa import DmoaMethod, dmoa_pool
    from core.methods.dmoa_train import RouterError, RouterStore, mean_loss, train
    from core.runtime.domains import get_domain

    err = sys.stderr
    server = ScriptedServer(benchmark_script(dataset.problems)).start() if args.demo else None
    try:
        backend = await open_backend(settings, demo=args.demo, server=server)
    except EndpointError as exc:
        print(f"{PROG}: {exc}", file=err)
        return EXIT_FAILED
    try:
        try:
            has_logprobs = await probe_logprobs(backend.llm, options["top_logprobs"])
        except openai.OpenAIError as exc:
            print(f"{PROG}: {backend.llm.describe_error(exc)}", file=err)
            return EXIT_FAILED
        if not has_logprobs:
            print(
                f"{PROG}: training refused: the endpoint {backend.base_url} returns no token logprobs "
                f"(asked for top_logprobs={options['top_logprobs']}), and the entropy signal needs them; "
                "--strategy dmoa still routes, with the router as it is",
                file=err,
            )
            return EXIT_FAILED
        domain = get_domain(settings.domain)
        names = [a.name for a in dmoa_pool(domain)]
        store = RouterStore(Path(options["weights_dir"]) if options["weights_dir"] else None)
        mode = "DEMO (scripted model server) " if backend.demo else ""
        print(
            f"{mode}{dataset.name}: {len(problems)} problems, dense runs over {', '.join(names)}; "
            f"model {backend.model} at {backend.base_url}",
            file=err,
        )
        embedder = shared_embedder(settings.embedding_model_path)
        await asyncio.to_thread(embedder.load)
        traces = []
        printer = TrainPrinter(err)
        for number, problem in enumerate(problems, start=1):
            print(f"[{number}/{len(problems)}] {problem.task_id}", file=err)
            method = DmoaMethod(options, domain)
            engine = build_engine(problem.task, settings, backend, [printer], embedder=embedder, method=method)
            finished = await engine.run()
            if finished.reason == "error":
                print(f"{PROG}: {finished.detail}", file=err)
                return EXIT_FAILED
            if method.trace is None or not method.trace.steps:
                print(f"{PROG}: {problem.task_id} left no entropies (the endpoint stopped sending logprobs)", file=err)
                continue
            traces.append(method.trace)
            print(f"  {len(method.trace.steps)} steps, ended {finished.reason}", file=err)
        if not traces:
            print(f"{PROG}: no problem left a usable trace; nothing was trained", file=err)
            return EXIT_FAILED
        try:
            router, info = store.load(settings.domain, names, seed=options["seed"])
        except RouterError as exc:
            print(f"{PROG}: {exc}; starting from a seeded router", file=err)
            from core.methods.dmoa_train import GRURouter, RouterInfo

            router, info = GRURouter(len(names), seed=options["seed"]), RouterInfo()
        tau, k_max = options["tau"], method.k_max
        before = mean_loss(router, traces, tau=tau, k_max=k_max, adaptive=options["adaptive_k"])
        print(f"training on {len(traces)} traces: mean ranking loss {before:.4f} (eq. 15)", file=err)
        reports = train(
            router,
            traces,
            tau=tau,
            k_max=k_max,
            adaptive=options["adaptive_k"],
            epochs=args.epochs,
            batch_size=args.batch,
            lr=args.lr,
            seed=options["seed"],
            on_epoch=lambda r: print(f"  epoch {r.epoch}/{args.epochs}: loss {r.loss:.4f} ({r.batches} batches)",
                                     file=err),
        )
        after = mean_loss(router, traces, tau=tau, k_max=k_max, adaptive=options["adaptive_k"])
        info.source = "few-shot+ttt" if "ttt" in info.source else "few-shot"
        info.trained_queries += len(traces)
        info.epochs += len(reports)
        info.last_loss = round(after, 6)
        try:
            path = store.save(settings.domain, names, router, info)
        except OSError as exc:
            print(f"{PROG}: cannot save the router weights: {exc.strerror or exc}", file=err)
            return EXIT_FAILED
        print(f"mean ranking loss {before:.4f} → {after:.4f}; router weights saved to {path}", file=err)
        return 0
    except EmbeddingError as exc:
        print(f"{PROG}: {exc}", file=err)
        return EXIT_FAILED
    finally:
        await backend.close()

"""Training DMoA's GRU router (§4.2, Alg. 1): dense runs over a dataset slice, then the ranking loss.

Each problem runs densely — every agent of the pool at every step, with top logprobs — while the
router's routed agents carry the trajectory; each agent's predictive entropy (eq. 13) becomes the target
of the pairwise ranking loss (eq. 14-15). Then AdamW (App. B.3) updates the router and its weights are
saved per (domain, team). The CLI (tui/cli/train_dmoa.py) only parses options and prints what this says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.compose.assembly import RunIO, open_run
from core.compose.plan import BackendChoice, RunPlan, embedder_for
from core.compose.runner import open_backend
from core.demo.bench_script import benchmark_script
from core.demo.server import ScriptedServer
from core.methods.catalogue import get_method_info
from core.methods.dmoa.method import DmoaMethod
from core.methods.dmoa.prompts import dmoa_pool
from core.methods.dmoa.routing import predictive_entropy
from core.methods.registry import MethodError
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.outcome import EndReason
from core.runtime.rosters import builtin_team


class TrainError(RuntimeError):
    """Training cannot go on; the message is one line for the user."""


@dataclass(frozen=True)
class TrainSchedule:
    epochs: int = 3  # App. B.3
    batch: int = 8
    lr: float = 1e-3


def dmoa_training_options(settings: Settings, flags: dict[str, str]) -> dict[str, Any]:
    """DMoA's options for the dense training runs (MethodError, one line, when they cannot train)."""
    info = get_method_info("dmoa")
    options = info.resolve({**settings.strategy_options.get("dmoa", {}), **flags})
    if options["router"] != "gru":
        raise MethodError(f"only the gru router learns: router={options['router']} has nothing to train")
    options.update(collect=True, ttt=0)
    return options


async def probe_logprobs(llm: Any, top: int) -> bool:
    """Does the endpoint return per-token top logprobs, a spread of several per token? One short request
    says (a single logprob per token would make every entropy 0: nothing to learn from)."""
    reply = await llm.chat(
        [{"role": "user", "content": "Reply with one word: ready."}],
        temperature=0.0,
        max_tokens=8,
        json_mode=False,
        top_logprobs=top,
    )
    tokens = reply.top_logprobs or []
    return predictive_entropy(tokens) is not None and (top < 2 or any(len(t) >= 2 for t in tokens))


async def train_router(
    settings: Settings,
    dataset: Any,
    problems: Sequence[Any],
    options: dict[str, Any],
    schedule: TrainSchedule,
    *,
    demo: bool,
    say: Callable[[str], None],
    sinks: Sequence[Callable[[ev.Event], None]] = (),
) -> Path:
    """Train and save the router; the path of the saved weights. TrainError (one line) when the endpoint
    fails, gives no logprobs, or no problem left a usable trace. ``say`` hears progress lines."""
    from core.llm.client import EndpointError
    from core.llm.embeddings import EmbeddingError
    from core.methods.dmoa.router import RouterStore

    server = ScriptedServer(benchmark_script(dataset.problems)).start() if demo else None
    try:
        backend = await open_backend(settings, BackendChoice(demo=demo, server=server))
    except EndpointError as exc:
        raise TrainError(str(exc)) from None
    try:
        await _require_logprobs(backend, options["top_logprobs"])
        team = builtin_team(settings.domain)
        names = [a.name for a in dmoa_pool(team)]
        store = RouterStore(Path(options["weights_dir"]) if options["weights_dir"] else None)
        mode = "DEMO (scripted model server) " if backend.demo else ""
        say(
            f"{mode}{dataset.name}: {len(problems)} problems, dense runs over {', '.join(names)}; "
            f"model {backend.model} at {backend.base_url}"
        )
        embedder = embedder_for(settings)
        try:
            await asyncio.to_thread(embedder.load)
        except EmbeddingError as exc:
            raise TrainError(str(exc)) from None
        traces, k_max = await _dense_traces(settings, problems, options, backend, embedder, sinks, say)
        return _fit_and_save(settings.domain, names, store, traces, options, k_max, schedule, say)
    finally:
        await backend.close()


async def _require_logprobs(backend: Any, top: int) -> None:
    """TrainError unless the endpoint answers with token logprobs (the entropy signal needs them)."""
    import openai

    try:
        has_logprobs = await probe_logprobs(backend.llm, top)
    except openai.OpenAIError as exc:
        raise TrainError(backend.llm.describe_error(exc)) from None
    if not has_logprobs:
        raise TrainError(
            f"training refused: the endpoint {backend.base_url} returns no token logprobs "
            f"(asked for top_logprobs={top}), and the entropy signal needs them; "
            "--strategy dmoa still routes, with the router as it is"
        )


async def _dense_traces(
    settings: Settings, problems: Sequence[Any], options: dict[str, Any], backend: Any, embedder: Any,
    sinks: Sequence[Callable[[ev.Event], None]], say: Callable[[str], None],
) -> tuple[list[Any], int]:
    """One dense run per problem; the traces that recorded entropies, and the runs' k_max."""
    team = builtin_team(settings.domain)
    traces = []
    method: DmoaMethod | None = None
    for number, problem in enumerate(problems, start=1):
        say(f"[{number}/{len(problems)}] {problem.task_id}")
        method = DmoaMethod(options, team)
        plan = RunPlan.make(settings, method=method)
        io = RunIO(sinks=list(sinks), backend=backend, embedder=embedder)
        async with open_run(plan, problem.task, io) as run:
            finished = await run.run()
        if finished.reason == EndReason.ERROR:
            raise TrainError(finished.detail)
        if method.trace is None or not method.trace.steps:
            say(f"{problem.task_id} left no entropies (the endpoint stopped sending logprobs)")
            continue
        traces.append(method.trace)
        say(f"  {len(method.trace.steps)} steps, ended {finished.reason}")
    if not traces or method is None:
        raise TrainError("no problem left a usable trace; nothing was trained")
    return traces, method.k_max


def _fit_and_save(
    domain: str, names: list[str], store: Any, traces: list[Any], options: dict[str, Any], k_max: int,
    schedule: TrainSchedule, say: Callable[[str], None],
) -> Path:
    """The ranking loss (eq. 14-15) minimised with AdamW from the saved (or a seeded) router; the saved path."""
    from core.methods.dmoa.router import RouterError, RouterInfo, seeded_weights
    from core.methods.dmoa.train import GRURouter, mean_loss, train

    try:
        weights, info = store.load(domain, names, seed=options["seed"])
    except RouterError as exc:
        say(f"{exc}; starting from a seeded router")
        weights, info = seeded_weights(len(names), seed=options["seed"]), RouterInfo()
    router = GRURouter.from_weights(weights)
    tau, adaptive = options["tau"], options["adaptive_k"]
    before = mean_loss(router, traces, tau=tau, k_max=k_max, adaptive=adaptive)
    say(f"training on {len(traces)} traces: mean ranking loss {before:.4f} (eq. 15)")
    reports = train(
        router,
        traces,
        tau=tau,
        k_max=k_max,
        adaptive=adaptive,
        epochs=schedule.epochs,
        batch_size=schedule.batch,
        lr=schedule.lr,
        seed=options["seed"],
        on_epoch=lambda r: say(f"  epoch {r.epoch}/{schedule.epochs}: loss {r.loss:.4f} ({r.batches} batches)"),
    )
    after = mean_loss(router, traces, tau=tau, k_max=k_max, adaptive=adaptive)
    info.source = "few-shot+ttt" if "ttt" in info.source else "few-shot"
    info.trained_queries += len(traces)
    info.epochs += len(reports)
    info.last_loss = round(after, 6)
    try:
        path: Path = store.save(domain, names, router.to_weights(), info)
    except OSError as exc:
        raise TrainError(f"cannot save the router weights: {exc.strerror or exc}") from None
    say(f"mean ranking loss {before:.4f} → {after:.4f}; router weights saved to {path}")
    return path

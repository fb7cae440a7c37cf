"""DMoA's test-time training (Wu et al., arXiv 2605.15706, Table 3's DMoA (TTT), App. B.5; Alg. 1): the first N
runs of this process for a (domain, team) run dense — every agent runs every step and its predictive entropy
is collected — then the GRU router is updated once (AdamW, batch 8, 3 epochs; the ranking loss of eq. 13-15)
and saved. The state is shared by the runs of one process; training needs torch, imported only here and only
when an update runs (core.methods.dmoa.train)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.methods.dmoa.router import RouterInfo
from core.runtime.run_context import notice

if TYPE_CHECKING:
    from core.methods.dmoa.selector import StepRouter
    from core.methods.dmoa.train import Trace
    from core.runtime.run_context import RunContext


@dataclass
class TTTState:
    """The first ``size`` runs claim dense mode; when all of them have ended the router is updated."""

    size: int
    claimed: int = 0
    released: int = 0
    traces: list[Trace] = field(default_factory=list)
    unavailable: str = ""  # why TTT cannot run (e.g. the endpoint gives no logprobs)
    trained: bool = False
    lock: asyncio.Lock | None = None

    def claim(self) -> bool:
        if self.trained or self.unavailable or self.claimed >= self.size:
            return False
        self.claimed += 1
        return True

    def release(self, trace: Trace | None) -> None:
        self.released += 1
        if trace is not None and trace.steps:
            self.traces.append(trace)

    @property
    def ready(self) -> bool:
        return not self.trained and self.claimed >= self.size and self.released >= self.claimed and bool(self.traces)


_TTT: dict[tuple[str, int], TTTState] = {}


def ttt_state(key: str, size: int) -> TTTState:
    return _TTT.setdefault((key, size), TTTState(size))


def reset_ttt() -> None:
    """Forget every test-time-training state (tests; a new benchmark in the same process)."""
    _TTT.clear()


async def update_router(ctx: RunContext, router: StepRouter, state: TTTState) -> None:
    """App. B.5: after the dense runs, one update pass (AdamW, batch 8, 3 epochs), then save. Training
    needs torch (imported here only); the updated weights go back to the NumPy router."""
    from core.methods.dmoa.train import GRURouter, mean_loss, train

    assert router.gru is not None
    state.trained = True
    net, traces = GRURouter.from_weights(router.gru), list(state.traces)
    tau, k_max = router.tau, router.k_max
    try:
        before = await asyncio.to_thread(mean_loss, net, traces, tau=tau, k_max=k_max)
        reports = await asyncio.to_thread(
            train, net, traces, tau=tau, k_max=k_max, adaptive=router.adaptive, seed=router.seed
        )
        after = await asyncio.to_thread(mean_loss, net, traces, tau=tau, k_max=k_max)
    except Exception as exc:  # training must never take the run down with it
        notice(ctx, f"test-time training failed ({type(exc).__name__}: {exc}); the router stays as it was", "error")
        return
    info = RouterInfo(trained_queries=len(traces), epochs=len(reports), last_loss=round(after, 6), source="ttt")
    try:
        router.gru = net.to_weights()
        path = await asyncio.to_thread(router.store().save, ctx.spec.team.name, router.names, router.gru, info)
        where = f"saved to {path}"
    except OSError as exc:
        where = f"not saved ({exc.strerror or exc})"
    notice(ctx,
        f"test-time training: router updated on {len(traces)} dense runs ({len(reports)} epochs): "
        f"ranking loss {before:.4f} → {after:.4f}; {where}",
        "info",
    )

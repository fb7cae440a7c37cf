"""DMoA's step router (Wu et al., arXiv 2605.15706, §4): each step it scores the pool from the context
vector X_i and picks the agents that run, with their weights alpha.

* ``gru`` — the paper's router: GRU + Linear head (eq. 2 / 10) in NumPy (core.methods.dmoa.router), its
  weights loaded from the store or seeded until trained; the pick is top-k_i of softmax(z/tau) (eq. 3-5,
  core.methods.dmoa.routing.choose);
* ``llm`` — the *w LLM Selector* ablation (Table 5): the Manager model picks up to K agents with weights in
  one JSON call per step; an unusable reply routes that step by meaning instead;
* ``semantic`` — z_i[a] = cos(X_i, MiniLM(profile_a)), no learning (ours; no ablation in the paper).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.methods.dmoa.events import CALL_SELECT
from core.methods.dmoa.prompts import PoolAgent, parse_selection
from core.methods.dmoa.router import RouterError, RouterInfo, RouterSession, RouterStore, RouterWeights, seeded_weights
from core.methods.dmoa.routing import Choice, choose, cosine
from core.methods.dmoa.threads import DmoaRequests, keep_reply
from core.runtime.engine import RunAborted
from core.runtime.run_context import notice

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

SELECTOR = "Selector"
ROUTERS = ("gru", "llm", "semantic")


class StepRouter:
    """One run's router: set up once (weights or profile embeddings), then asked once per step."""

    def __init__(
        self, kind: str, pool: Sequence[PoolAgent], *, tau: float, k_max: int, adaptive: bool, seed: int,
        weights_dir: str,
    ) -> None:
        self.kind = kind
        self.pool = list(pool)
        self.names = [a.name for a in self.pool]
        self.tau, self.k_max, self.adaptive, self.seed = tau, k_max, adaptive, seed
        self.weights_dir = weights_dir
        self.note = ""
        self.gru: RouterWeights | None = None  # the NumPy router (no torch at inference)
        self.session: RouterSession | None = None
        self.profiles: np.ndarray | None = None

    def store(self) -> RouterStore:
        return RouterStore(Path(self.weights_dir) if self.weights_dir else None)

    async def prepare(self, ctx: RunContext) -> None:
        """The profile embeddings (semantic), nothing (llm), or the GRU's weights: stored, else seeded."""
        if self.kind == "semantic":
            await self._embed_profiles(ctx)
            self.note = "cos(X_i, profile embedding): no learning"
            return
        if self.kind == "llm":
            self.note = "LLM selector (the Manager model): its weights, normalised"
            return
        try:
            gru, info = await asyncio.to_thread(self.store().load, ctx.spec.team.name, self.names, seed=self.seed)
        except RouterError as exc:
            notice(ctx, f"{exc}; routing with a seeded initialisation instead", "warning")
            gru, info = seeded_weights(len(self.names), seed=self.seed), RouterInfo()
        self.note = info.describe() + ("" if info.trained_queries else f", seed {self.seed}")
        self.gru, self.session = gru, RouterSession(gru)

    async def _embed_profiles(self, ctx: RunContext) -> None:
        texts = [f"{a.name}, {a.title}: {a.profile}" for a in self.pool]
        self.profiles = np.asarray(await ctx.embed(texts), dtype=np.float64)

    async def route(
        self, ctx: RunContext, requests: DmoaRequests, step: int, x: np.ndarray, previous: list[tuple[str, str]]
    ) -> Choice:
        """Step ``step``'s choice from X_i (and, for the Selector, the previous step's responses)."""
        if self.kind == "gru":
            assert self.session is not None
            logits = await asyncio.to_thread(self.session.step, x)  # eq. 2 / 10
            return choose(logits, self.tau, self.k_max, adaptive=self.adaptive)
        if self.kind == "semantic":
            return self._semantic(x)
        return await self._select(ctx, requests, step, previous, x)

    def _semantic(self, x: np.ndarray, note: str = "") -> Choice:
        if self.profiles is None:
            raise RunAborted("the semantic router has no profile embeddings")  # pragma: no cover
        logits = np.asarray([cosine(x, p) for p in self.profiles], dtype=np.float64)
        choice = choose(logits, self.tau, self.k_max, adaptive=self.adaptive)
        choice.note = note
        return choice

    async def _select(
        self, ctx: RunContext, requests: DmoaRequests, step: int, previous: list[tuple[str, str]], x: np.ndarray
    ) -> Choice:
        """The *w LLM Selector* ablation: one Manager-model call per step picks up to K agents."""
        messages, shrink, turn = requests.selector(SELECTOR, step, previous, self.pool, self.k_max)
        result, picked = await ctx.call(
            SELECTOR,
            CALL_SELECT,
            messages,
            kind="selector",
            parser=lambda text: parse_selection(text, self.names, self.k_max),
            json_mode=True,
            shrink=shrink,
        )
        if result.connection_failed:
            raise RunAborted(result.error)
        keep_reply(turn, result)
        if picked is None:
            if self.profiles is None:
                await self._embed_profiles(ctx)
            why = f"step {step}: the Selector's reply was unusable; this step is routed by meaning instead"
            notice(ctx, why, "warning")
            return self._semantic(x, "Selector reply unusable: semantic routing this step")
        weights = np.zeros(len(self.names))
        for name, w in picked:
            weights[self.names.index(name)] = w
        selected = [self.names.index(name) for name, _ in picked]
        alpha = np.asarray([w for _, w in picked], dtype=np.float64)
        return Choice(weights, weights.copy(), len(selected), selected, alpha)

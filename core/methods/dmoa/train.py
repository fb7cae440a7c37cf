"""DMoA's learned router and its label-free training (arXiv 2605.15706 §4.1-4.2, Alg. 1, App. B.3).

* ``GRURouter`` — eq. 2 / 10 in torch, for training: (h_i, o_i) = GRU(X_i, h_{i-1}) with hidden size
  d = 384 (one GRU cell, so o_i = h_i), z_i = Linear(o_i) over the N agents of the pool; h_0 = 0
  (Alg. 1 l.4). It starts from the NumPy router's weights (seeded until trained:
  our cold start; the paper always trains).
* ``Trace`` — what one dense query leaves for training: X_1, and per step every agent's response
  embedding R_hat and predictive entropy E (eq. 13).
* ``trace_loss`` — eq. 15: (1/L) sum_i L_rank^(i), replaying the query through the router with
  gradients: z_i from the GRU, eq. 14 against C_i = softmax(-E_i), then X_{i+1} from the agents this
  router routes (Alg. 1 l.11), so the gradient reaches earlier steps through alpha and h (§4.1).
* ``train`` — AdamW, lr 1e-3, batch 8, 3 epochs, gradient clip 1.0 (App. B.3).
* ``GRURouter.from_weights`` / ``to_weights`` — to and from the NumPy router (core.methods.dmoa.router),
  which runs inference and stores the weights (.npz) without torch.

Only training imports this module (and torch): ``swarm-tui train dmoa`` and test-time training.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from core.methods.dmoa.router import DIM, RouterError, RouterWeights
from core.methods.dmoa.routing import adaptive_k, keep_top_k

LR = 1e-3  # App. B.3
BATCH = 8
EPOCHS = 3
GRAD_CLIP = 1.0


class GRURouter(nn.Module):
    """Eq. 2 / 10: (h_i, o_i) = GRU(X_i, h_{i-1}); z_i = Linear(o_i)."""

    def __init__(self, n_agents: int, *, dim: int = DIM, seed: int = 0) -> None:
        super().__init__()
        if n_agents < 1:
            raise ValueError("the pool needs at least one agent")
        self.n_agents = n_agents
        self.dim = dim
        with torch.random.fork_rng(devices=[]):  # a seeded initialisation that leaves the global RNG alone
            torch.manual_seed(seed)
            self.gru = nn.GRUCell(dim, dim)
            self.head = nn.Linear(dim, n_agents)

    def initial_state(self) -> torch.Tensor:
        return torch.zeros(1, self.dim)  # h_0 = 0 (Alg. 1 l.4)

    @classmethod
    def from_weights(cls, weights: RouterWeights) -> GRURouter:
        """A trainable copy of the NumPy router's weights (core.methods.dmoa.router)."""
        router = cls(weights.n_agents, dim=weights.dim)
        state = {
            "gru.weight_ih": weights.weight_ih, "gru.weight_hh": weights.weight_hh,
            "gru.bias_ih": weights.bias_ih, "gru.bias_hh": weights.bias_hh,
            "head.weight": weights.head_weight, "head.bias": weights.head_bias,
        }
        router.load_state_dict({k: torch.as_tensor(np.asarray(v, dtype=np.float32)) for k, v in state.items()})
        return router

    def to_weights(self) -> RouterWeights:
        """The trained parameters as the NumPy router reads them."""
        state = {k: v.detach().cpu().numpy().astype(np.float32) for k, v in self.state_dict().items()}
        return RouterWeights(
            state["gru.weight_ih"], state["gru.weight_hh"], state["gru.bias_ih"], state["gru.bias_hh"],
            state["head.weight"], state["head.bias"],
        )

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: (z_i of shape [N], h_i of shape [1, d]) from X_i [d] and h_{i-1} [1, d]."""
        h_next = self.gru(x.reshape(1, -1).to(torch.float32), h)
        return self.head(h_next).reshape(-1), h_next


# --- traces and the loss ------------------------------------------------------------------------


@dataclass
class TraceStep:
    embeddings: list[list[float] | None]  # R_hat per pool agent (None: no usable response)
    entropy: list[float | None]  # PE per pool agent (None: no logprobs for it)


@dataclass
class Trace:
    """One query run densely: every agent ran at every step (Alg. 1 l.7)."""

    x1: list[float]
    steps: list[TraceStep] = field(default_factory=list)
    problem: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "x1": self.x1,
            "problem": self.problem,
            "steps": [{"embeddings": s.embeddings, "entropy": s.entropy} for s in self.steps],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        return cls(
            x1=[float(v) for v in data["x1"]],
            problem=str(data.get("problem", "")),
            steps=[TraceStep(list(s["embeddings"]), list(s["entropy"])) for s in data["steps"]],
        )


def rank_loss_torch(z: torch.Tensor, entropy: Sequence[float | None]) -> torch.Tensor | None:
    """Eq. 14 over the agents with an entropy: C = softmax(-E), Z = softmax(z) (no tau, Alg. 1 l.9),
    L = sum_{a,b} 1[C_a > C_b] log(1 + exp(-(Z_a - Z_b))). None when fewer than two agents have one."""
    known = [i for i, e in enumerate(entropy) if e is not None and math.isfinite(e)]
    if len(known) < 2:
        return None
    e = torch.tensor([float(entropy[i]) for i in known], dtype=torch.float32)  # type: ignore[arg-type]
    c = torch.softmax(-e, dim=0)
    zz = torch.softmax(z, dim=0)[known]
    better = (c.unsqueeze(1) > c.unsqueeze(0)).to(torch.float32)  # [a, b] = 1 when C_a > C_b
    margins = zz.unsqueeze(1) - zz.unsqueeze(0)
    return (better * nn.functional.softplus(-margins)).sum()  # softplus(-m) = log(1 + exp(-m))


def trace_loss(
    router: GRURouter, trace: Trace, tau: float, k_max: int, *, adaptive: bool = True
) -> torch.Tensor | None:
    """Eq. 15: (1/L) sum_i L_rank^(i) over one query's steps, with gradients through alpha and h."""
    h = router.initial_state()
    x = torch.tensor(trace.x1, dtype=torch.float32)
    losses: list[torch.Tensor] = []
    for step in trace.steps:
        z, h = router(x, h)
        loss = rank_loss_torch(z, step.entropy)
        if loss is not None:
            losses.append(loss)
        # X_{i+1} from the agents this router routes (Alg. 1 l.11; eq. 7 / 9), among those that answered.
        logits = z.detach().numpy().astype(np.float64)
        k = adaptive_k(logits, tau, k_max, adaptive=adaptive)
        # A routed agent without a usable response drops out and alpha renormalises (as in a live run).
        chosen = [i for i in keep_top_k(logits, k) if step.embeddings[i] is not None]
        if not chosen:
            break
        alpha = torch.softmax(z[chosen], dim=0)
        r_hat = torch.tensor([step.embeddings[i] for i in chosen], dtype=torch.float32)
        x = alpha @ r_hat
    if not losses:
        return None
    return torch.stack(losses).mean()


@dataclass
class EpochReport:
    epoch: int
    loss: float  # mean trace loss over the epoch's batches, before each update
    batches: int


def train(
    router: GRURouter,
    traces: Sequence[Trace],
    *,
    tau: float,
    k_max: int,
    adaptive: bool = True,
    epochs: int = EPOCHS,
    batch_size: int = BATCH,
    lr: float = LR,
    seed: int = 0,
    on_epoch: Callable[[EpochReport], None] | None = None,
) -> list[EpochReport]:
    """App. B.3: AdamW (lr 1e-3), batches of 8 queries (the batch loss is their mean), gradient norm
    clipped at 1.0, 3 epochs; the order of the queries is shuffled by a seeded generator."""
    usable = [t for t in traces if t.steps]
    if not usable:
        raise RouterError("nothing to train on: no query left a usable trace")
    optimiser = torch.optim.AdamW(router.parameters(), lr=lr)
    order = random.Random(seed)
    reports: list[EpochReport] = []
    router.train()
    for epoch in range(1, epochs + 1):
        shuffled = list(usable)
        order.shuffle(shuffled)
        total, batches = 0.0, 0
        for start in range(0, len(shuffled), batch_size):
            batch = [trace_loss(router, t, tau, k_max, adaptive=adaptive) for t in shuffled[start : start + batch_size]]
            losses = [loss for loss in batch if loss is not None]
            if not losses:
                continue
            loss = torch.stack(losses).mean()
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(router.parameters(), GRAD_CLIP)
            optimiser.step()
            total += float(loss.detach())
            batches += 1
        report = EpochReport(epoch, total / batches if batches else float("nan"), batches)
        reports.append(report)
        if on_epoch is not None:
            on_epoch(report)
    router.eval()
    return reports


def mean_loss(router: GRURouter, traces: Sequence[Trace], *, tau: float, k_max: int, adaptive: bool = True) -> float:
    """Eq. 15 averaged over the traces, without gradients (what training lowers)."""
    with torch.no_grad():
        losses = [trace_loss(router, t, tau, k_max, adaptive=adaptive) for t in traces]
    values = [float(v) for v in losses if v is not None]
    return float(np.mean(values)) if values else float("nan")

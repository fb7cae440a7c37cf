"""TopoDIM's generator network (§3.2) and its training objective (§3.3), in PyTorch.

* Node states (eq. 5): ``h_i^(0) = e_i^role + W_q φ(q)``, φ(q) the 384-d MiniLM embedding of the task.
* Encoder (eq. 4): an R-GCN over the prior graph G_pri, one weight W_r^(l) per prior relation plus a
  self weight W_0^(l), neighbours averaged per relation (1 / c_{i,r}).
* Decoder (eq. 6): ``p(r_ij) = softmax_r(w_r^T [h_i || h_j] / τ)`` over R' = {none, conditioned,
  feedback, debate} (eq. 6 normalises over R but samples over R ∪ {∅}: we read it as one softmax over
  the four, docs/methods.md). As in eq. 6's formula the scores depend on H only; the edges drawn so far
  (G_<ij) act through the acyclic mask of eq. 7 (core.routing.topodim.decode), which also sets the masked
  distributions log π(G) is taken over.
* Objective: eq. 10 (R_div), eq. 11 (R = λ R_task + (1 - λ) R_div), eq. 12 (REINFORCE with a moving
  average baseline and an entropy bonus γ H).

Sizes the paper does not give are ours: hidden 32, two R-GCN layers, tanh as σ. Weights live in the
user data dir (``policy.pt``), written atomically; a file that does not load is reported, never fatal.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
import torch
from torch import nn

from core.routing.topodim import EDGE_TYPES, RELATIONS

TASK_DIM = 384  # all-MiniLM-L6-v2 (§4.1)
HIDDEN = 32
LAYERS = 2
FORMAT = 1
OTHER_ROLE = "<other>"

# Every role any team can field (core.runtime.rosters plus TopoDIM's extra members), so one policy
# serves every domain; a name outside the list shares the OTHER_ROLE embedding.
ROLE_VOCAB: tuple[str, ...] = (
    OTHER_ROLE,
    "Developer",
    "Researcher",
    "Tester",
    "Designer",
    "BugFixer",
    "ProjectManager",
    "ProblemParser",
    "Solver",
    "Verifier",
    "Mathematician",
    "Programmer",
    "Critic",
    "Analyst",
    "Synthesizer",
    "Expert",
    "Economist",
    "Historian",
)

# The prior graph G_pri per domain, (src, relation, dst): what we, in the role of the "advanced LLM"
# the paper asks for (§3.2), wrote down once as sensible collaborations. Edges to absent agents drop.
PRIOR_GRAPHS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "code": (
        ("Designer", "conditioned", "Developer"),
        ("Researcher", "conditioned", "Developer"),
        ("Developer", "feedback", "Tester"),
        ("Developer", "debate", "BugFixer"),
        ("Tester", "conditioned", "BugFixer"),
        ("ProjectManager", "feedback", "Designer"),
    ),
    "math": (
        ("ProblemParser", "conditioned", "Solver"),
        ("Solver", "feedback", "Verifier"),
        ("Solver", "debate", "Mathematician"),
        ("ProblemParser", "conditioned", "Mathematician"),
        ("Programmer", "conditioned", "Verifier"),
        ("Critic", "debate", "Solver"),
    ),
    "general": (
        ("Analyst", "conditioned", "Synthesizer"),
        ("Analyst", "debate", "Critic"),
        ("Critic", "conditioned", "Synthesizer"),
        ("Expert", "conditioned", "Analyst"),
        ("Synthesizer", "feedback", "Economist"),
        ("Historian", "conditioned", "Critic"),
    ),
}


class PolicyLoadError(RuntimeError):
    """A weights file that cannot be used; the message is one line for the user."""


def default_weights_path() -> Path:
    return Path(platformdirs.user_data_dir("swarm-tui")) / "topodim" / "policy.pt"


def prior_edges(domain: str, names: Sequence[str]) -> list[tuple[str, str, str]]:
    present = set(names)
    return [e for e in PRIOR_GRAPHS.get(domain, ()) if e[0] in present and e[2] in present]


@dataclass
class PolicySample:
    """What one generated graph needs to recompute its log-probability with gradients (eq. 12)."""

    names: list[str]
    prior: list[tuple[str, str, str]]
    task: list[float]
    temperature: float
    choices: list[tuple[int, int, int, tuple[bool, ...]]]  # (i, j, relation index, mask over RELATIONS)


class TopoDIMPolicy(nn.Module):
    def __init__(
        self,
        roles: Sequence[str] = ROLE_VOCAB,
        *,
        hidden: int = HIDDEN,
        layers: int = LAYERS,
        task_dim: int = TASK_DIM,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.roles = list(roles)
        self.hidden, self.layers, self.task_dim = hidden, layers, task_dim
        self._index = {name: i for i, name in enumerate(self.roles)}
        with torch.random.fork_rng(devices=[]):  # a seeded initialisation that leaves the global RNG alone
            torch.manual_seed(seed)
            self.role_embedding = nn.Embedding(len(self.roles), hidden)  # e^role (eq. 5)
            self.task_projection = nn.Linear(task_dim, hidden, bias=False)  # W_q (eq. 5)
            self.relation_weights = nn.ModuleList(  # W_r^(l), one per prior relation (eq. 4)
                nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in EDGE_TYPES) for _ in range(layers)
            )
            self.self_weights = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))  # W_0
            self.edge_weights = nn.Linear(2 * hidden, len(RELATIONS), bias=False)  # w_r (eq. 6)

    # --- forward ------------------------------------------------------------------------------
    def initial_states(self, names: Sequence[str], task: torch.Tensor) -> torch.Tensor:
        """Eq. 5: h_i^(0) = e_i^role + W_q φ(q). Shape (N, hidden)."""
        ids = torch.tensor([self._index.get(n, self._index.get(OTHER_ROLE, 0)) for n in names], dtype=torch.long)
        h0: torch.Tensor = self.role_embedding(ids) + self.task_projection(task.reshape(1, -1))
        return h0

    def adjacency(self, names: Sequence[str], prior: Sequence[tuple[str, str, str]]) -> torch.Tensor:
        """(relations, N, N): A[r][i][j] = 1 / c_{i,r} when j -> i is a prior edge of relation r."""
        index = {n: i for i, n in enumerate(names)}
        n = len(names)
        a = torch.zeros(len(EDGE_TYPES), n, n)
        for src, relation, dst in prior:
            if src in index and dst in index and relation in EDGE_TYPES and src != dst:
                a[EDGE_TYPES.index(relation), index[dst], index[src]] = 1.0
        counts = a.sum(dim=2, keepdim=True)
        return torch.where(counts > 0, a / counts.clamp(min=1.0), a)

    def encode(self, names: Sequence[str], prior: Sequence[tuple[str, str, str]], task: torch.Tensor) -> torch.Tensor:
        """Eq. 4: h_i^(l+1) = σ(Σ_r Σ_{j ∈ N_i^r} W_r h_j / c_{i,r} + W_0 h_i), σ = tanh. Returns H (N, hidden)."""
        h = self.initial_states(names, task)
        a = self.adjacency(names, prior)
        for layer in range(self.layers):
            message = self.self_weights[layer](h)
            relations = self.relation_weights[layer]
            assert isinstance(relations, nn.ModuleList)  # W_r^(l) for each relation r
            for r, weight in enumerate(relations):
                message = message + a[r] @ weight(h)
            h = torch.tanh(message)
        return h

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Eq. 6's scores w_r^T [h_i || h_j] for every ordered pair: (N, N, |R'|)."""
        n = h.shape[0]
        pairs = torch.cat([h.unsqueeze(1).expand(n, n, -1), h.unsqueeze(0).expand(n, n, -1)], dim=-1)
        scores: torch.Tensor = self.edge_weights(pairs)
        return scores

    def distributions(
        self, names: Sequence[str], prior: Sequence[tuple[str, str, str]], task: torch.Tensor, temperature: float
    ) -> torch.Tensor:
        """Eq. 6: p(r_ij) = softmax over R' of the scores / τ. (N, N, |R'|)."""
        return torch.softmax(self.logits(self.encode(names, prior, task)) / temperature, dim=-1)

    def log_prob_and_entropy(self, sample: PolicySample) -> tuple[torch.Tensor, torch.Tensor]:
        """log π(G) = Σ_ij log p(r_ij | mask) and Σ_ij H(p(· | mask)), the masked distributions the
        graph was drawn from (eq. 6 with eq. 7 applied, renormalised)."""
        task = torch.tensor(sample.task, dtype=torch.float32)
        scores = self.logits(self.encode(sample.names, sample.prior, task)) / sample.temperature
        log_p = torch.zeros(())
        entropy = torch.zeros(())
        for i, j, choice, mask in sample.choices:
            allowed = torch.tensor(mask, dtype=torch.bool)
            masked = scores[i, j].masked_fill(~allowed, float("-inf"))
            log_dist = torch.log_softmax(masked, dim=-1)
            log_p = log_p + log_dist[choice]
            dist = log_dist.exp()
            entropy = entropy - (dist[allowed] * log_dist[allowed]).sum()
        return log_p, entropy


# --- the decentralised policies (§3.4) -----------------------------------------------------------


class LocalPolicies(nn.Module):
    """One light MLP per role (§3.4): agent i's π^(i)(r_ij | h_i^(0), h_j^(0)) over R' for every other agent
    j (eq. 2; the task enters through h^(0), eq. 5). Distilled from the centralised policy (eq. 13)."""

    def __init__(self, roles: Sequence[str] = ROLE_VOCAB, *, hidden: int = HIDDEN, seed: int = 0) -> None:
        super().__init__()
        self.roles = list(roles)
        self.hidden = hidden
        self._index = {name: i for i, name in enumerate(self.roles)}
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.mlps = nn.ModuleList(
                nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, len(RELATIONS)))
                for _ in self.roles
            )

    def logits(self, names: Sequence[str], h0: torch.Tensor) -> torch.Tensor:
        """(N, N, |R'|): row i from agent i's own network, given (h_i^(0), h_j^(0)) for each j."""
        n = h0.shape[0]
        rows = []
        for i, name in enumerate(names):
            mlp = self.mlps[self._index.get(name, self._index.get(OTHER_ROLE, 0))]
            rows.append(mlp(torch.cat([h0[i].expand(n, -1), h0], dim=-1)))
        return torch.stack(rows)

    def distributions(self, names: Sequence[str], h0: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.logits(names, h0), dim=-1)


def distill_loss(
    central: TopoDIMPolicy,
    local: LocalPolicies,
    names: Sequence[str],
    prior: Sequence[tuple[str, str, str]],
    task: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """Eq. 13: Σ_i Σ_{j≠i} KL(π_θ(r_ij | G_pri, q) || π_θ'(r_ij | h_i^(0), h_j^(0))); the teacher is frozen."""
    with torch.no_grad():
        teacher = central.distributions(names, prior, task, temperature)
        h0 = central.initial_states(names, task)
    log_student = torch.log_softmax(local.logits(names, h0), dim=-1)
    kl = (teacher * (torch.log(teacher.clamp_min(1e-12)) - log_student)).sum(-1)
    off_diagonal = ~torch.eye(len(names), dtype=torch.bool)
    return kl[off_diagonal].sum()


def local_from_checkpoint(data: dict[str, Any], path: Path | str = "") -> LocalPolicies | None:
    """The distilled local policies in a weights file, or None when it holds none."""
    state = data.get("local_state")
    if not isinstance(state, dict):
        return None
    try:
        local = LocalPolicies([str(r) for r in data["roles"]], hidden=int(data["hidden"]))
        local.load_state_dict(state)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise PolicyLoadError(f"{path}: the local policies do not fit ({_first_line(exc)})") from None
    return local


# --- the objective (§3.3) ---------------------------------------------------------------------


def reward(task_reward: float, diversity: float, lam: float) -> float:
    """Eq. 11: R(G) = λ R_task + (1 - λ) R_div."""
    return lam * task_reward + (1.0 - lam) * diversity


def reinforce_loss(
    policy: TopoDIMPolicy, batch: Sequence[tuple[PolicySample, float]], baseline: float, gamma: float
) -> torch.Tensor:
    """The loss whose gradient is -∇J of eq. 12: -(R(G) - b) log π(G) - γ H(π), averaged over the batch."""
    terms = []
    for sample, value in batch:
        log_p, entropy = policy.log_prob_and_entropy(sample)
        terms.append(-(value - baseline) * log_p - gamma * entropy)
    return torch.stack(terms).mean()


def moving_baseline(baseline: float, rewards: Sequence[float], momentum: float = 0.9) -> float:
    """The moving-average baseline b of eq. 12 (momentum 0.9, as the public code)."""
    if not rewards:
        return baseline
    return momentum * baseline + (1.0 - momentum) * (sum(rewards) / len(rewards))


def annealed_temperature(step: int, steps: int, start: float = 2.0, end: float = 0.5) -> float:
    """Linear annealing of τ from 2.0 to 0.5 over training (§4.1)."""
    if steps <= 1:
        return end
    return start - (start - end) * min(1.0, step / (steps - 1))


# --- weights files ------------------------------------------------------------------------------


def save_checkpoint(path: Path, policy: TopoDIMPolicy, **extra: Any) -> None:
    """Write the policy (and training state in ``extra``) atomically: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "format": FORMAT,
        "roles": list(policy.roles),
        "hidden": policy.hidden,
        "layers": policy.layers,
        "task_dim": policy.task_dim,
        "state": policy.state_dict(),
        **extra,
    }
    fd, tmp = tempfile.mkstemp(prefix=".policy-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(data, fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: Path) -> dict[str, Any]:
    """A weights file's contents, checked. PolicyLoadError (one line) when it cannot be used."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)  # plain tensors and values only
    except FileNotFoundError:
        raise PolicyLoadError(f"no weights file at {path}") from None
    except Exception as exc:  # a corrupt or foreign file: say so, never crash
        raise PolicyLoadError(f"cannot read {path}: {type(exc).__name__}: {_first_line(exc)}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("state"), dict):
        raise PolicyLoadError(f"{path} is not a TopoDIM policy file (format {FORMAT})")
    return data


def policy_from_checkpoint(data: dict[str, Any], path: Path | str = "") -> TopoDIMPolicy:
    try:
        roles = [str(r) for r in data["roles"]]
        policy = TopoDIMPolicy(roles, hidden=int(data["hidden"]), layers=int(data["layers"]),
                               task_dim=int(data["task_dim"]))
        policy.load_state_dict(data["state"])
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise PolicyLoadError(f"{path}: the weights do not fit the policy ({_first_line(exc)})") from None
    for tensor in policy.state_dict().values():
        if not bool(torch.isfinite(tensor).all()):
            raise PolicyLoadError(f"{path}: the weights hold numbers that are not finite")
    return policy


def load_policy(path: Path) -> tuple[TopoDIMPolicy, dict[str, Any]]:
    data = load_checkpoint(path)
    return policy_from_checkpoint(data, path), data


def describe_weights(path: Path, data: dict[str, Any]) -> str:
    steps = data.get("step", 0)
    trained = data.get("dataset", "")
    where = f" on {Path(str(trained)).name}" if trained else ""
    distilled = data.get("distilled")
    local = ""
    if isinstance(distilled, dict):
        local = f"; local policies distilled on {distilled.get('queries', 0)} queries"
    return f"trained weights {path} ({steps} step{'s' if steps != 1 else ''}{where}{local})"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:120] if lines else "no detail"

"""DMoA's GRU router at inference, in NumPy: no torch in a run that does not train.

* ``RouterWeights`` — the parameters of eq. 2 / 10: one GRU cell with hidden size d = 384 (so o_i = h_i)
  and the linear head z_i = W o_i + b over the N agents of the pool, in torch's GRUCell layout (the gate
  blocks r, z, n stacked), so the trainer (core.methods.dmoa.train, torch) reads and writes the same arrays.
* ``RouterSession`` — one query's pass: h_0 = 0 (Alg. 1 l.4), then (z_i, h_i) from X_i and h_{i-1}.
* ``seeded_weights`` — the untrained router: uniform(-1/sqrt(d), 1/sqrt(d)) for the GRU (torch's
  GRUCell default) and uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the head (torch's Linear default), from
  a NumPy generator seeded by ``seed`` (ours:
  the paper always trains the router, §4.2 and Alg. 1; until then every equation runs on seeded weights).
* ``RouterStore`` — weights per (domain, team) as ``.npz`` in the user data dir (``np.load`` with
  ``allow_pickle=False``: a weights file can hold arrays and text only). A ``.pt`` file from an earlier
  version is converted once (that needs torch, imported only then).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from core.lazy import load_now
from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)

DIM = 384  # all-MiniLM-L6-v2 (§5.1)


class RouterError(RuntimeError):
    """Router weights cannot be used; the message is one line fit to show a user."""


@dataclass
class RouterWeights:
    weight_ih: np.ndarray  # [3d, d]: W_ir, W_iz, W_in
    weight_hh: np.ndarray  # [3d, d]: W_hr, W_hz, W_hn
    bias_ih: np.ndarray  # [3d]
    bias_hh: np.ndarray  # [3d]
    head_weight: np.ndarray  # [N, d]
    head_bias: np.ndarray  # [N]

    ARRAYS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "head_weight", "head_bias")

    @property
    def dim(self) -> int:
        return int(self.weight_hh.shape[1])

    @property
    def n_agents(self) -> int:
        return int(self.head_bias.shape[0])

    def check(self, n_agents: int, dim: int = DIM) -> None:
        """ValueError naming the first array whose shape does not fit a router of this size."""
        want = {
            "weight_ih": (3 * dim, dim), "weight_hh": (3 * dim, dim), "bias_ih": (3 * dim,), "bias_hh": (3 * dim,),
            "head_weight": (n_agents, dim), "head_bias": (n_agents,),
        }
        for name, shape in want.items():
            got = getattr(self, name).shape
            if got != shape:
                raise ValueError(f"{name} has shape {got}, expected {shape}")


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # = 1 / (1 + e^-x), without overflow for large |x|


def gru_step(w: RouterWeights, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """One GRU cell step (eq. 2 / 10's GRU, torch.nn.GRUCell's equations):
    r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 - z) ⊙ n + z ⊙ h."""
    d = w.dim
    gi = w.weight_ih @ x + w.bias_ih
    gh = w.weight_hh @ h + w.bias_hh
    r = sigmoid(gi[:d] + gh[:d])
    z = sigmoid(gi[d : 2 * d] + gh[d : 2 * d])
    n = np.tanh(gi[2 * d :] + r * gh[2 * d :])
    h_next: np.ndarray = (1.0 - z) * n + z * h
    return h_next


class RouterSession:
    """One query's pass through the router at inference time: feed X_i, get z_i (eq. 10)."""

    def __init__(self, weights: RouterWeights) -> None:
        self.weights = weights
        self.h = np.zeros(weights.dim, dtype=np.float32)  # h_0 = 0 (Alg. 1 l.4)

    def step(self, x: np.ndarray) -> np.ndarray:
        self.h = gru_step(self.weights, np.asarray(x, dtype=np.float32).reshape(-1), self.h)
        z = self.weights.head_weight @ self.h + self.weights.head_bias
        scores: np.ndarray = z.astype(np.float64)
        return scores


def seeded_weights(n_agents: int, *, dim: int = DIM, seed: int = 0) -> RouterWeights:
    """The untrained router: torch's default initialisation ranges, drawn from a seeded NumPy generator."""
    if n_agents < 1:
        raise ValueError("the pool needs at least one agent")
    rng = np.random.default_rng(seed)
    bound = 1.0 / np.sqrt(dim)

    def uniform(*shape: int) -> np.ndarray:
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)

    return RouterWeights(
        uniform(3 * dim, dim), uniform(3 * dim, dim), uniform(3 * dim), uniform(3 * dim),
        uniform(n_agents, dim), uniform(n_agents),
    )


# --- weights per (domain, team) --------------------------------------------------------------------


def default_weights_dir() -> Path:
    return Path(platformdirs.user_data_dir("swarm-tui")) / "dmoa"


def team_key(domain: str, names: Sequence[str]) -> str:
    digest = hashlib.sha1("\n".join(names).encode("utf-8")).hexdigest()[:10]
    return f"{domain}-{len(names)}-{digest}"


@dataclass
class RouterInfo:
    """What the weights file says about itself."""

    trained_queries: int = 0
    epochs: int = 0
    last_loss: float | None = None
    source: str = ""  # "few-shot" | "ttt" | "few-shot+ttt"

    def describe(self) -> str:
        if not self.trained_queries:
            return "seeded initialisation (untrained)"
        loss = f", loss {self.last_loss:.4f}" if self.last_loss is not None else ""
        return f"trained ({self.source or 'few-shot'}) on {self.trained_queries} queries{loss}"


class RouterStore:
    """Router weights at DIR/<domain>-<N>-<team hash>.npz, one file per (domain, team)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder else default_weights_dir()

    def path(self, domain: str, names: Sequence[str]) -> Path:
        return self.folder / f"{team_key(domain, names)}.npz"

    def legacy_path(self, domain: str, names: Sequence[str]) -> Path:
        """Where versions before the NumPy router saved (torch's format)."""
        return self.folder / f"{team_key(domain, names)}.pt"

    def load(self, domain: str, names: Sequence[str], *, seed: int = 0) -> tuple[RouterWeights, RouterInfo]:
        """The saved router for this team, or a seeded one when none is saved. RouterError (one line)
        when a file exists but cannot be used; the caller falls back to a seeded router."""
        path = self.path(domain, names)
        if not path.exists() and self.legacy_path(domain, names).exists():
            self._convert_legacy(domain, names)
        if not path.exists():
            return seeded_weights(len(names), seed=seed), RouterInfo()
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                weights = RouterWeights(*(np.asarray(data[name], dtype=np.float32) for name in RouterWeights.ARRAYS))
            if list(meta.get("names", [])) != list(names):
                raise RouterError(f"{path} was trained for another team ({', '.join(meta.get('names', []))})")
            weights.check(len(names))
        except RouterError:
            raise
        except Exception as exc:  # a damaged or foreign file: say so, never crash the run
            raise RouterError(f"cannot load router weights {path}: {type(exc).__name__}: {exc}") from None
        info = RouterInfo(
            trained_queries=int(meta.get("trained_queries", 0)),
            epochs=int(meta.get("epochs", 0)),
            last_loss=meta.get("last_loss"),
            source=str(meta.get("source", "")),
        )
        return weights, info

    def save(self, domain: str, names: Sequence[str], weights: RouterWeights, info: RouterInfo) -> Path:
        path = self.path(domain, names)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "names": list(names),
            "domain": domain,
            "trained_queries": info.trained_queries,
            "epochs": info.epochs,
            "last_loss": info.last_loss,
            "source": info.source,
        }
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("wb") as handle:  # np.savez adds .npz to a bare path name; a handle keeps ours
            np.savez(handle, meta=np.asarray(json.dumps(meta)),
                     **{name: getattr(weights, name) for name in RouterWeights.ARRAYS})
        tmp.replace(path)
        return path

    def _convert_legacy(self, domain: str, names: Sequence[str]) -> None:
        """A .pt file of an earlier version, converted once to .npz (the .pt stays, untouched)."""
        legacy = self.legacy_path(domain, names)
        try:
            load_now(np)  # before torch, which imports NumPy from C (see core.lazy)
            import torch

            data = torch.load(legacy, map_location="cpu", weights_only=True)
            meta = json.loads(data["meta"])
            state = {k: v.numpy().astype(np.float32) for k, v in data["state"].items()}
            weights = RouterWeights(
                state["gru.weight_ih"], state["gru.weight_hh"], state["gru.bias_ih"], state["gru.bias_hh"],
                state["head.weight"], state["head.bias"],
            )
        except Exception as exc:
            raise RouterError(f"cannot convert router weights {legacy}: {type(exc).__name__}: {exc}") from None
        info = RouterInfo(
            trained_queries=int(meta.get("trained_queries", 0)), epochs=int(meta.get("epochs", 0)),
            last_loss=meta.get("last_loss"), source=str(meta.get("source", "")),
        )
        if list(meta.get("names", [])) != list(names):
            raise RouterError(f"{legacy} was trained for another team ({', '.join(meta.get('names', []))})")
        self.save(domain, names, weights, info)

"""DMoA's routing arithmetic (Differentiable Mixture-of-Agents, Wu et al., arXiv 2605.15706, §4).

Pure NumPy functions, no model and no torch, so the view, the tests and the method share one copy of
every equation:

* ``adaptive_k`` — eq. 3 / 11: k_i = min(K, #{a : softmax(z_i / tau)_a >= 1/N});
* ``keep_top_k`` — eq. 4 / 12: the agents with the k_i largest logits;
* ``alpha_weights`` — eq. 7 / 9: softmax over the selected raw logits (KeepTopK sets the rest to -inf;
  no tau there, eq. 7 / 9);
* ``context_vector`` — eq. 7 / 9: X_{i+1} = sum_j alpha_j * ST(R_{i,j});
* ``predictive_entropy`` — eq. 13, over the top-k logprobs an OpenAI-compatible endpoint returns,
  renormalised per token (a lower bound on eq. 13's full-vocabulary entropy; our reading, docs/methods.md);
* ``confidence`` — C_i = softmax(-E_i) (§4.2), and ``rank_loss`` — eq. 14 against Z_i = softmax(z_i);
* ``parse_summary`` — the summarizer's ``[FINAL]`` / ``[CONTINUE]`` tags (App. B.6);
* ``choose`` — one step's routing from the router's logits (eq. 3-4 / 11-12 and alpha).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)

TAG_FINAL = "FINAL"
TAG_CONTINUE = "CONTINUE"


def softmax(values: Sequence[float] | np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(values / temperature), computed stably in float64."""
    x = np.asarray(values, dtype=np.float64) / float(temperature)
    if x.size == 0:
        return x
    x = x - np.max(x)
    e = np.exp(x)
    p: np.ndarray = e / e.sum()
    return p


def adaptive_k(logits: Sequence[float] | np.ndarray, tau: float, k_max: int, *, adaptive: bool = True) -> int:
    """Eq. 3 / 11: k_i = min(K, Count(softmax(z_i / tau) >= 1/N)).

    The largest probability is always >= 1/N (they sum to 1), so k_i >= 1 for any logits; ``adaptive``
    False is the paper's *w/o Adaptive k_i* ablation (k_i = K). K is capped at N."""
    z = np.asarray(logits, dtype=np.float64)
    n = z.size
    if n == 0:
        return 0
    cap = max(1, min(int(k_max), n))
    if not adaptive:
        return cap
    p = softmax(z, tau)
    # A tiny tolerance: a uniform softmax must count every agent despite rounding (p_a == 1/N exactly).
    count = int(np.sum(p >= 1.0 / n - 1e-12))
    return max(1, min(cap, count))


def keep_top_k(logits: Sequence[float] | np.ndarray, k: int) -> list[int]:
    """Eq. 4 / 12 (KeepTopK over the pool): indices of the k largest logits, strongest first; equal
    logits keep pool order, so the choice is deterministic."""
    z = np.asarray(logits, dtype=np.float64)
    order = sorted(range(z.size), key=lambda i: (-z[i], i))
    return order[: max(0, min(int(k), z.size))]


def alpha_weights(logits: Sequence[float] | np.ndarray, selected: Sequence[int]) -> np.ndarray:
    """Eq. 7 / 9: alpha_i = Softmax(KeepTopK(z_i, k_i)): a softmax over the selected raw logits (the
    others are -inf and get weight 0), in the order of ``selected``."""
    z = np.asarray(logits, dtype=np.float64)
    return softmax([z[i] for i in selected])


def context_vector(
    alpha: Sequence[float] | np.ndarray, embeddings: Sequence[Sequence[float]] | np.ndarray
) -> np.ndarray:
    """Eq. 7 / 9: X_{i+1} = sum_j alpha_i^(j) * R_hat_{i,j}, the alpha-weighted sum of the routed agents'
    response embeddings (not renormalised: the paper does not)."""
    a = np.asarray(alpha, dtype=np.float64)
    r = np.asarray(embeddings, dtype=np.float64)
    if a.size == 0:
        raise ValueError("no responses to aggregate")
    if r.ndim != 2 or r.shape[0] != a.size:
        raise ValueError(f"expected {a.size} embeddings, got array of shape {r.shape}")
    return a @ r


def cosine(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    denom = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y / denom) if denom > 1e-12 else 0.0


# --- the training signal ----------------------------------------------------------------------


def token_entropy(top_logprobs: Sequence[float]) -> float | None:
    """The inner sum of eq. 13 for one token, -sum_x P(x|x_<j) log P(x|x_<j), over the top-k logprobs
    returned, renormalised to sum to 1. A lone logprob is a distribution with all its mass on one token:
    entropy 0 (a server that is certain, or asked for top_logprobs=1, says so). None only when the token
    came with no finite logprob at all: there is no distribution to measure."""
    values = [float(v) for v in top_logprobs if isinstance(v, int | float) and math.isfinite(v)]
    if not values:
        return None
    p = softmax(values)  # exp(lp) / sum(exp(lp)): the renormalised top-k distribution
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def predictive_entropy(tokens: Sequence[Sequence[float]] | None) -> float | None:
    """Eq. 13: PE = -(1/M) sum_j sum_x P(x|x_<j) log P(x|x_<j), the mean over the M generated tokens,
    a token with a single logprob counting with entropy 0. A token the server sent no logprob for is left
    out of M: nothing is known of its distribution, and counting it as 0 would make an agent look certain
    because its server was terse. None when no token had a distribution (the endpoint gave no logprobs)."""
    if not tokens:
        return None
    entropies = [h for h in (token_entropy(t) for t in tokens) if h is not None]
    return float(np.mean(entropies)) if entropies else None


def confidence(entropies: Sequence[float] | np.ndarray) -> np.ndarray:
    """C_i = Softmax(-E_i) (§4.2): the lower an agent's predictive entropy, the higher its confidence."""
    return softmax(-np.asarray(entropies, dtype=np.float64))


def rank_loss(logits: Sequence[float] | np.ndarray, entropies: Sequence[float] | np.ndarray) -> float:
    """Eq. 14 in NumPy (the trainer has the torch twin): with C = softmax(-E) and Z = softmax(z),
    L = sum over pairs (a, b) with C_a > C_b of log(1 + exp(-(Z_a - Z_b)))."""
    z = softmax(logits)
    c = confidence(entropies)
    total = 0.0
    for a in range(c.size):
        for b in range(c.size):
            if c[a] > c[b]:
                total += math.log1p(math.exp(-(z[a] - z[b])))
    return total


# --- the summarizer's reply -------------------------------------------------------------------

_TAG_RE = re.compile(r"\[\s*(FINAL|CONTINUE)\s*\]", re.IGNORECASE)

NOTE_NO_TAG = "no [FINAL] or [CONTINUE] tag: treated as [CONTINUE]"


@dataclass(frozen=True)
class Summary:
    tag: str  # TAG_FINAL or TAG_CONTINUE: what the run does
    body: str  # the text after the deciding tag (the answer when FINAL)
    found: str  # which tags the reply held: "FINAL", "CONTINUE", "both" or "none"
    note: str = ""  # how an unusual reply was read, for the user


def parse_summary(text: str) -> Summary:
    """The summarizer's decision (App. B.6): ``[FINAL]`` followed by the answer, or ``[CONTINUE]``.

    The first tag found wins (our reading of App. B.6); a reply with neither is read as [CONTINUE] (the run
    asks for a final answer at L_max); a [FINAL] with nothing after it has no answer to give, so it
    is read as [CONTINUE] too. Tags are matched without regard to case or inner spaces."""
    text = text or ""
    tags = list(_TAG_RE.finditer(text))
    if not tags:
        return Summary(TAG_CONTINUE, text.strip(), "none", NOTE_NO_TAG)
    first = tags[0]
    kinds = {m.group(1).upper() for m in tags}
    found = "both" if len(kinds) > 1 else first.group(1).upper()
    tag = first.group(1).upper()
    body = text[first.end() :]
    if tag == TAG_FINAL:
        # The answer ends where a later [CONTINUE] would begin (a reply holding both keeps the first).
        later = next((m for m in tags[1:] if m.group(1).upper() == TAG_CONTINUE), None)
        if later is not None:
            body = text[first.end() : later.start()]
    body = body.strip()
    note = f"both tags: the first ([{tag}]) wins" if found == "both" else ""
    if tag == TAG_FINAL and not body:
        return Summary(TAG_CONTINUE, "", found, "[FINAL] with no answer after it: treated as [CONTINUE]")
    return Summary(tag, body, found, note)


@dataclass
class Choice:
    """One step's routing: z_i, softmax(z_i / tau), k_i, the selected pool indices and their alpha."""

    logits: np.ndarray
    probs: np.ndarray
    k: int
    selected: list[int]
    alpha: np.ndarray
    note: str = ""


def choose(logits: np.ndarray, tau: float, k_max: int, *, adaptive: bool = True) -> Choice:
    """Eq. 3-4 / 11-12 and the alpha of eq. 7 / 9, from the router's logits."""
    k = adaptive_k(logits, tau, k_max, adaptive=adaptive)
    selected = keep_top_k(logits, k)
    return Choice(logits, softmax(logits, tau), k, selected, alpha_weights(logits, selected))

"""DMoA's equations in isolation (core.methods.dmoa.routing): adaptive k (eq. 3/11), KeepTopK (eq. 4/12),
alpha and the context vector (eq. 7/9), predictive entropy (eq. 13), the ranking loss (eq. 14), the
summarizer's tags and the Selector's reply. Property tests use seeded random vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.methods.dmoa.method import default_k
from core.methods.dmoa.prompts import parse_selection
from core.methods.dmoa.routing import (
    TAG_CONTINUE,
    TAG_FINAL,
    adaptive_k,
    alpha_weights,
    choose,
    confidence,
    context_vector,
    keep_top_k,
    parse_summary,
    predictive_entropy,
    rank_loss,
    softmax,
    token_entropy,
)
from core.runtime.parsing import ParseError


def _reference_k(z: np.ndarray, tau: float, k_max: int) -> int:
    """Eq. 3 written out the long way: count the agents whose softmax(z/tau) reaches 1/N."""
    e = [math.exp(v / tau - max(z) / tau) for v in z]
    p = [v / sum(e) for v in e]
    return min(k_max, sum(1 for v in p if v >= 1 / len(z) - 1e-12))


def test_k_and_alpha_recomputed_from_logits_for_many_random_vectors() -> None:
    rng = np.random.default_rng(1234)
    for _ in range(2000):
        n = int(rng.integers(1, 21))
        z = rng.normal(0.0, float(rng.choice([0.01, 0.1, 1.0, 5.0])), size=n)
        tau = float(rng.choice([0.05, 0.1, 0.5, 1.0]))
        k_max = int(rng.integers(1, n + 1))
        c = choose(z, tau, k_max)
        assert c.k == _reference_k(z, tau, k_max)
        assert 1 <= c.k <= min(k_max, n)  # k_i >= 1 always
        assert len(c.selected) == c.k
        # the selected are the k largest logits, strongest first
        assert sorted(z, reverse=True)[: c.k] == pytest.approx([z[i] for i in c.selected])
        # alpha: a softmax over the selected raw logits, no tau (eq. 7 / 9)
        raw = np.exp(z[c.selected] - z[c.selected].max())
        assert c.alpha == pytest.approx(raw / raw.sum())
        assert c.alpha.sum() == pytest.approx(1.0)
        assert c.probs == pytest.approx(softmax(z, tau))


def test_k_is_at_least_one_even_for_extreme_logits() -> None:
    for z in ([1e6, -1e6, 0.0], [0.0] * 7, [-1e9], [3.0, 3.0, 3.0, -50.0]):
        for tau in (1e-3, 0.1, 10.0):
            assert adaptive_k(z, tau, 4) >= 1


def test_a_uniform_router_routes_k_agents_and_a_sharp_one_routes_one() -> None:
    assert adaptive_k([0.0] * 10, 0.1, 4) == 4  # every agent sits on 1/N: K caps
    assert adaptive_k([5.0, 0.0, 0.0, 0.0], 0.1, 3) == 1
    assert adaptive_k([5.0, 0.0, 0.0, 0.0], 0.1, 3, adaptive=False) == 3  # the w/o Adaptive k_i ablation


def test_keep_top_k_breaks_ties_by_pool_order() -> None:
    assert keep_top_k([1.0, 2.0, 2.0, 0.5], 2) == [1, 2]
    assert keep_top_k([0.0, 0.0, 0.0], 3) == [0, 1, 2]


def test_default_k_follows_the_pool() -> None:
    assert [default_k(n) for n in (1, 2, 3, 4, 5, 10, 20)] == [1, 1, 2, 3, 4, 4, 4]


def test_context_vector_is_the_alpha_weighted_sum() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        k = int(rng.integers(1, 6))
        r = rng.normal(size=(k, 384))
        r /= np.linalg.norm(r, axis=1, keepdims=True)
        z = rng.normal(size=k)
        alpha = alpha_weights(z, list(range(k)))
        direct = sum(alpha[j] * r[j] for j in range(k))
        assert context_vector(alpha, r) == pytest.approx(direct)
    with pytest.raises(ValueError):
        context_vector([], np.zeros((0, 384)))


def test_entropy_is_renormalised_over_the_returned_top_k() -> None:
    # Two equally likely alternatives carrying only half the mass: renormalised, the entropy is log 2.
    assert token_entropy([math.log(0.25), math.log(0.25)]) == pytest.approx(math.log(2))
    assert token_entropy([0.0]) == 0.0  # P = 1: a certain token has entropy 0
    assert token_entropy([]) is None and token_entropy([float("nan")]) is None  # no distribution at all
    assert token_entropy([-0.01, -9.0, -12.0]) < 0.01  # a confident token
    assert predictive_entropy(None) is None and predictive_entropy([[]]) is None
    tokens = [[math.log(0.5), math.log(0.5)], [0.0, -50.0]]
    assert predictive_entropy(tokens) == pytest.approx((math.log(2) + 0.0) / 2, abs=1e-9)  # eq. 13: the mean


def test_eq13_counts_a_token_returned_with_its_single_logprob() -> None:
    # [a ln 2 spread, a certain token given as the single logprob 0.0]: the mean over M = 2 tokens is ln 2 / 2.
    assert predictive_entropy([[math.log(0.5), math.log(0.5)], [0.0]]) == pytest.approx(math.log(2) / 2)
    # A token the server sent nothing for is not part of M.
    assert predictive_entropy([[math.log(0.5), math.log(0.5)], []]) == pytest.approx(math.log(2))


def test_rank_loss_counts_only_pairs_ordered_by_confidence() -> None:
    entropy = [0.1, 0.5, 0.9]  # agent 0 most confident
    c = confidence(entropy)
    assert c[0] > c[1] > c[2] and c.sum() == pytest.approx(1.0)
    agreeing, opposing = rank_loss([3.0, 1.0, -1.0], entropy), rank_loss([-1.0, 1.0, 3.0], entropy)
    assert agreeing < opposing
    z = softmax([0.2, 0.0, -0.3])
    expected = sum(math.log1p(math.exp(-(z[a] - z[b]))) for a in range(3) for b in range(3) if c[a] > c[b])
    assert rank_loss([0.2, 0.0, -0.3], entropy) == pytest.approx(expected)
    assert rank_loss([1.0, 2.0], [0.3, 0.3]) == 0.0  # equal confidence: no pair counts


@pytest.mark.parametrize(
    ("text", "tag", "body", "found"),
    [
        ("[FINAL] 42", TAG_FINAL, "42", "FINAL"),
        ("[CONTINUE] the proof of step 2 is missing", TAG_CONTINUE, "the proof of step 2 is missing", "CONTINUE"),
        ("It might be 42, I am not sure.", TAG_CONTINUE, "It might be 42, I am not sure.", "none"),
        ("[FINAL] 42\n[CONTINUE] actually, check it", TAG_FINAL, "42", "both"),
        ("[CONTINUE] not yet, then [FINAL] 7", TAG_CONTINUE, "not yet, then [FINAL] 7", "both"),
        ("Verdict: [ final ]\n\\frac{14}{3}", TAG_FINAL, "\\frac{14}{3}", "FINAL"),
        ("[FINAL]   ", TAG_CONTINUE, "", "FINAL"),  # a FINAL without an answer cannot end the run
        ("", TAG_CONTINUE, "", "none"),
    ],
)
def test_summarizer_tags(text: str, tag: str, body: str, found: str) -> None:
    summary = parse_summary(text)
    assert (summary.tag, summary.body, summary.found) == (tag, body, found)
    if found in ("both", "none") or not body:
        assert summary.note  # an unusual reply says how it was read


def test_selector_reply_is_capped_weighted_and_forgiving() -> None:
    names = ["Developer", "Researcher", "Tester", "Designer"]
    picked = parse_selection(
        '{"agents": ["tester", "Developer", "Nobody", "Designer"], "weights": {"Tester": 3, "developer": 1}}', names, 2
    )
    assert [n for n, _ in picked] == ["Tester", "Developer"]  # strongest first, capped at K, unknowns dropped
    assert sum(w for _, w in picked) == pytest.approx(1.0) and picked[0][1] == pytest.approx(0.75)
    equal = parse_selection('{"agents": ["Designer", "Tester"]}', names, 3)
    assert [w for _, w in equal] == pytest.approx([0.5, 0.5])
    for bad in ('{"agents": []}', '{"agents": ["Nobody"]}', "no json at all", '{"agents": "Tester"}'):
        with pytest.raises(ParseError):
            parse_selection(bad, names, 2)

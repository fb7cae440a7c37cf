"""TopoDIM's generator network (eq. 4–6) and its REINFORCE objective (eq. 10–12), on CPU in seconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from core.methods.topodim.policy import (
    HIDDEN,
    TASK_DIM,
    LocalPolicies,
    PolicyLoadError,
    PolicySample,
    TopoDIMPolicy,
    annealed_temperature,
    distill_loss,
    load_policy,
    local_from_checkpoint,
    moving_baseline,
    prior_edges,
    reinforce_loss,
    reward,
    save_checkpoint,
)
from core.routing.topodim import EDGE_TYPES, RELATIONS, build_graph, decode, r_div

NAMES = ["Developer", "Researcher", "Tester", "Designer", "BugFixer"]


def _task(seed: int = 0) -> torch.Tensor:
    vector = torch.randn(TASK_DIM, generator=torch.Generator().manual_seed(seed))
    return vector / vector.norm()


def test_shapes_of_the_encoder_and_decoder() -> None:
    policy = TopoDIMPolicy(seed=0)
    prior = prior_edges("code", NAMES)
    assert policy.initial_states(NAMES, _task()).shape == (5, HIDDEN)  # eq. 5
    h = policy.encode(NAMES, prior, _task())
    assert h.shape == (5, HIDDEN)  # eq. 4
    assert policy.logits(h).shape == (5, 5, len(RELATIONS))  # eq. 6, over R' = {none, cond, fbk, dbt}
    dists = policy.distributions(NAMES, prior, _task(), temperature=0.5)
    assert torch.allclose(dists.sum(-1), torch.ones(5, 5))


def test_the_encoder_reads_the_prior_graph_and_the_task() -> None:
    policy = TopoDIMPolicy(seed=0)
    prior = prior_edges("code", NAMES)
    h = policy.encode(NAMES, prior, _task())
    assert not torch.allclose(h, policy.encode(NAMES, [], _task()))  # eq. 4's relational messages matter
    assert not torch.allclose(h, policy.encode(NAMES, prior, _task(1)))  # eq. 5's W_q φ(q) matters
    # A relation's neighbours are averaged (1 / c_{i,r}): two identical in-neighbours count as one.
    a = policy.adjacency(NAMES, [("Designer", "conditioned", "Developer"), ("Researcher", "conditioned", "Developer")])
    assert a[0, 0].sum().item() == pytest.approx(1.0) and a[0, 0, 3].item() == pytest.approx(0.5)


def test_temperature_sharpens_the_distribution() -> None:
    policy = TopoDIMPolicy(seed=0)
    hot = policy.distributions(NAMES, [], _task(), temperature=2.0)
    cold = policy.distributions(NAMES, [], _task(), temperature=0.5)
    assert cold.max(-1).values.mean() > hot.max(-1).values.mean()


def test_seeded_initialisation_repeats_and_leaves_the_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    a, b = TopoDIMPolicy(seed=4), TopoDIMPolicy(seed=4)
    assert torch.rand(1) == expected
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    assert not torch.equal(TopoDIMPolicy(seed=5).edge_weights.weight, a.edge_weights.weight)


def _sample(policy: TopoDIMPolicy, seed: int, temperature: float = 1.0) -> PolicySample:
    prior = prior_edges("code", NAMES)
    task = _task(seed)
    with torch.no_grad():
        dists = policy.distributions(NAMES, prior, task, temperature).tolist()
    decisions = decode(NAMES, lambda i, j: dists[i][j], EDGE_TYPES, np.random.default_rng(seed))
    index = {n: i for i, n in enumerate(NAMES)}
    return PolicySample(
        NAMES, prior, task.tolist(), temperature,
        [(index[d.src], index[d.dst], RELATIONS.index(d.relation), d.mask) for d in decisions],
    )


def _log_prob(policy: TopoDIMPolicy, sample: PolicySample) -> float:
    with torch.no_grad():
        return float(policy.log_prob_and_entropy(sample)[0])


def test_log_prob_matches_the_masked_distributions_the_graph_was_drawn_from() -> None:
    policy = TopoDIMPolicy(seed=1)
    sample = _sample(policy, 3)
    with torch.no_grad():
        scores = policy.logits(policy.encode(NAMES, sample.prior, torch.tensor(sample.task))) / sample.temperature
    expected = 0.0
    for i, j, choice, mask in sample.choices:
        allowed = torch.tensor(mask)
        expected += float(torch.log_softmax(scores[i, j].masked_fill(~allowed, float("-inf")), -1)[choice])
    assert _log_prob(policy, sample) == pytest.approx(expected, rel=1e-5)


def test_a_reinforce_step_moves_probability_toward_a_rewarded_graph() -> None:
    policy = TopoDIMPolicy(seed=2)
    optimizer = torch.optim.Adam(policy.parameters(), lr=0.01)
    rewarded, punished = _sample(policy, 10), _sample(policy, 11)
    before = (_log_prob(policy, rewarded), _log_prob(policy, punished))
    # One step of eq. 12 with b = 0.5: R(G) - b > 0 for one graph, < 0 for the other.
    optimizer.zero_grad()
    reinforce_loss(policy, [(rewarded, 1.0), (punished, 0.0)], 0.5, gamma=0.01).backward()
    optimizer.step()
    assert _log_prob(policy, rewarded) > before[0] + 0.1
    assert _log_prob(policy, punished) < before[1] - 0.1
    # Rewarded alone, step after step, its graph keeps gaining probability.
    policy = TopoDIMPolicy(seed=2)
    optimizer = torch.optim.Adam(policy.parameters(), lr=0.01)
    history = [_log_prob(policy, rewarded)]
    for _ in range(3):
        optimizer.zero_grad()
        reinforce_loss(policy, [(rewarded, 1.0)], 0.5, gamma=0.01).backward()
        optimizer.step()
        history.append(_log_prob(policy, rewarded))
    assert history == sorted(history) and history[-1] > history[0] + 1.0


def test_the_entropy_term_alone_spreads_the_policy() -> None:
    policy = TopoDIMPolicy(seed=2)
    optimizer = torch.optim.Adam(policy.parameters(), lr=0.01)
    sample = _sample(policy, 4, temperature=0.5)
    entropy = float(policy.log_prob_and_entropy(sample)[1].detach())
    for _ in range(5):  # a zero advantage leaves only γ H(π) (eq. 12)
        optimizer.zero_grad()
        reinforce_loss(policy, [(sample, 0.5)], 0.5, gamma=1.0).backward()
        optimizer.step()
    assert float(policy.log_prob_and_entropy(sample)[1].detach()) > entropy


def test_rewards_baseline_and_annealing_follow_the_paper() -> None:
    assert reward(1.0, 0.5, 0.8) == pytest.approx(0.8 + 0.2 * 0.5)  # eq. 11
    assert moving_baseline(0.0, [1.0, 0.0]) == pytest.approx(0.05)  # momentum 0.9
    assert moving_baseline(0.3, []) == 0.3
    assert annealed_temperature(0, 10) == 2.0 and annealed_temperature(9, 10) == 0.5  # §4.1
    assert 0.5 < annealed_temperature(4, 10) < 2.0
    graph = build_graph(NAMES, decode(NAMES, lambda i, j: [0.1, 0.3, 0.3, 0.3], EDGE_TYPES,
                                      np.random.default_rng(0)), 0.0)
    assert 0.0 < r_div(graph.kept) <= np.log(3) + 1e-9


def test_weights_round_trip_and_bad_files_are_one_line_errors(tmp_path: Path) -> None:
    policy = TopoDIMPolicy(seed=6)
    path = tmp_path / "w" / "policy.pt"
    save_checkpoint(path, policy, step=3, baseline=0.4)
    loaded, data = load_policy(path)
    assert data["step"] == 3 and data["baseline"] == 0.4
    prior = prior_edges("code", NAMES)
    assert torch.allclose(loaded.distributions(NAMES, prior, _task(), 0.5), policy.distributions(NAMES, prior, _task(),
                                                                                                  0.5))
    assert [p.name for p in path.parent.iterdir()] == ["policy.pt"]  # no temporary file left behind
    for name, content in (("garbage.pt", b"\x00\x01 not torch"), ("empty.pt", b"")):
        bad = tmp_path / name
        bad.write_bytes(content)
        with pytest.raises(PolicyLoadError) as info:
            load_policy(bad)
        assert "\n" not in str(info.value)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    with pytest.raises(PolicyLoadError, match="not a TopoDIM policy"):
        load_policy(foreign)
    odd = tmp_path / "odd.pt"
    save_checkpoint(odd, TopoDIMPolicy(hidden=8))
    data = torch.load(odd, weights_only=True)
    data["hidden"] = 16
    torch.save(data, odd)
    with pytest.raises(PolicyLoadError, match="do not fit"):
        load_policy(odd)
    with pytest.raises(PolicyLoadError, match="no weights file"):
        load_policy(tmp_path / "missing.pt")


def test_distillation_brings_the_local_policies_to_the_central_one(tmp_path: Path) -> None:
    central = TopoDIMPolicy(seed=7)
    local = LocalPolicies(hidden=HIDDEN, seed=1)
    prior = prior_edges("code", NAMES)
    h0 = central.initial_states(NAMES, _task()).detach()
    assert local.logits(NAMES, h0).shape == (5, 5, len(RELATIONS))  # one row per agent's own network
    before = float(distill_loss(central, local, NAMES, prior, _task(), 0.5).detach())
    optimizer = torch.optim.Adam(local.parameters(), lr=0.01)
    for step in range(150):  # eq. 13 over a few queries
        optimizer.zero_grad()
        distill_loss(central, local, NAMES, prior, _task(step % 3), 0.5).backward()
        optimizer.step()
    after = float(distill_loss(central, local, NAMES, prior, _task(), 0.5).detach())
    assert after < before / 10
    path = tmp_path / "p.pt"
    save_checkpoint(path, central, local_state=local.state_dict())
    _, data = load_policy(path)
    restored = local_from_checkpoint(data, path)
    assert restored is not None and torch.allclose(restored.logits(NAMES, h0), local.logits(NAMES, h0))
    save_checkpoint(path, central)
    assert local_from_checkpoint(load_policy(path)[1], path) is None

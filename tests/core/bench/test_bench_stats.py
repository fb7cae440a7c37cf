"""The benchmark statistics against textbook values (Wilson, exact McNemar, bootstraps)."""

from __future__ import annotations

import pytest

from core.bench.stats import (
    bootstrap_accuracy,
    discordant_pairs,
    mcnemar_exact,
    paired_bootstrap_difference,
    wilson_interval,
)


def test_wilson_seven_of_ten_matches_the_textbook_interval() -> None:
    low, high = wilson_interval(7, 10)
    assert low == pytest.approx(0.397, abs=5e-4)
    assert high == pytest.approx(0.892, abs=5e-4)


def test_wilson_is_not_degenerate_at_the_edges() -> None:
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and 0.1 < high < 0.2  # 0/20: [0, 0.161]
    low, high = wilson_interval(20, 20)
    assert 0.8 < low < 0.9 and high == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_exact_mcnemar_eight_against_two_discordant_pairs() -> None:
    assert mcnemar_exact(8, 2) == pytest.approx(0.109, abs=5e-4)
    assert mcnemar_exact(2, 8) == mcnemar_exact(8, 2)  # two-sided


def test_exact_mcnemar_without_discordant_pairs_finds_no_difference() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0


def test_discordant_pairs_count_only_shared_problems() -> None:
    a = {"p1": True, "p2": True, "p3": False, "only-a": True}
    b = {"p1": True, "p2": False, "p3": True, "only-b": False}
    assert discordant_pairs(a, b) == (1, 1)


def test_bootstrap_is_seeded_and_brackets_the_accuracy() -> None:
    outcomes = {f"p{i}": [i % 3 != 0, i % 2 == 0] for i in range(30)}
    first = bootstrap_accuracy(outcomes, seed=7)
    assert first == bootstrap_accuracy(outcomes, seed=7)
    mean = sum(sum(v) / 2 for v in outcomes.values()) / 30
    assert first[0] < mean < first[1]


def test_bootstrap_of_all_solved_is_a_point() -> None:
    assert bootstrap_accuracy({f"p{i}": [True, True] for i in range(10)}) == (1.0, 1.0)


def test_paired_difference_of_identical_methods_is_zero() -> None:
    outcomes = {f"p{i}": [i % 2 == 0] for i in range(20)}
    assert paired_bootstrap_difference(outcomes, outcomes) == (0.0, 0.0, 0.0)


def test_paired_difference_brackets_a_real_gain() -> None:
    a = {f"p{i}": [True] for i in range(40)}
    b = {f"p{i}": [i < 20] for i in range(40)}
    diff, low, high = paired_bootstrap_difference(a, b, seed=1)
    assert diff == pytest.approx(0.5)
    assert 0.3 < low < 0.5 < high < 0.7

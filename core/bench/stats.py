"""Textbook statistics for benchmark tables: intervals on an accuracy and paired tests between methods.

Every function names the formula it implements. Pure Python (math, random): nothing here knows runs.

* ``wilson_interval``: the Wilson score interval of a binomial proportion (Wilson 1927; Agresti &
  Coull 1998, eq. 2).
* ``bootstrap_accuracy``: the percentile bootstrap (Efron & Tibshirani 1993, ch. 13.3) resampling
  *problems* (the unit of independence); a problem's repeats are averaged first.
* ``mcnemar_exact``: McNemar's test, exact form: a two-sided binomial test of the discordant pairs
  against p = 1/2 (McNemar 1947; Fagerland, Lydersen & Laake 2013, eq. 3).
* ``paired_bootstrap_difference``: the percentile bootstrap of the mean per-problem difference of two
  methods on the same problems (resampling problems jointly keeps the pairing).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from statistics import NormalDist

Z95 = NormalDist().inv_cdf(0.975)  # 1.959964...
BOOTSTRAP_SAMPLES = 2000


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval: (p̂ + z²/2n ± z·sqrt(p̂(1-p̂)/n + z²/4n²)) / (1 + z²/n).

    Stays inside [0, 1] and is not degenerate at 0/n or n/n (unlike the Wald interval). n = 0 gives (0, 1).
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    p = successes / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    denominator = 1 + z2 / n
    low = 0.0 if successes == 0 else (centre - spread) / denominator  # exact at the edges (no rounding dust)
    high = 1.0 if successes == n else (centre + spread) / denominator
    return low, high


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile by linear interpolation between order statistics (Hyndman & Fan type 7)."""
    if not sorted_values:
        return math.nan
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def problem_means(outcomes: Mapping[str, Sequence[bool | float]]) -> list[float]:
    """Each problem's mean over its repeats (the resampling unit of the bootstraps)."""
    return [sum(map(float, values)) / len(values) for values in outcomes.values() if values]


def bootstrap_accuracy(
    outcomes: Mapping[str, Sequence[bool | float]],
    *,
    seed: int = 0,
    samples: int = BOOTSTRAP_SAMPLES,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the accuracy: resample problems with replacement (each keeps the
    mean of its repeats), take the mean of each resample, and read the (1-level)/2 and (1+level)/2
    quantiles of those B means. Seeded, so the same results give the same interval."""
    means = problem_means(outcomes)
    if not means:
        return 0.0, 1.0
    rng = random.Random(seed)
    n = len(means)
    stats = sorted(sum(rng.choices(means, k=n)) / n for _ in range(samples))
    tail = (1 - level) / 2
    return _percentile(stats, tail), _percentile(stats, 1 - tail)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Exact McNemar p-value: with b = pairs only A solved and c = pairs only B solved, n = b + c,
    p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(n, i) / 2ⁿ) (two-sided binomial test of b ~ Bin(n, 1/2)).
    No discordant pair: no evidence of a difference, p = 1."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)  # 2ⁿ, exact for any n
    return min(1.0, 2.0 * tail)


def discordant_pairs(a: Mapping[str, bool], b: Mapping[str, bool]) -> tuple[int, int]:
    """(solved by A only, solved by B only) over the problems both methods ran."""
    common = a.keys() & b.keys()
    return sum(a[t] and not b[t] for t in common), sum(b[t] and not a[t] for t in common)


def paired_bootstrap_difference(
    a: Mapping[str, Sequence[bool | float]],
    b: Mapping[str, Sequence[bool | float]],
    *,
    seed: int = 0,
    samples: int = BOOTSTRAP_SAMPLES,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """(mean difference A − B, low, high): percentile bootstrap of mean_i(d_i) where d_i is problem i's
    accuracy under A minus under B (repeats averaged), resampling problems so each keeps its pair."""
    common = sorted(a.keys() & b.keys())
    diffs = [
        sum(map(float, a[t])) / len(a[t]) - sum(map(float, b[t])) / len(b[t]) for t in common if a[t] and b[t]
    ]
    if not diffs:
        return 0.0, 0.0, 0.0
    n = len(diffs)
    rng = random.Random(seed)
    stats = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(samples))
    tail = (1 - level) / 2
    return sum(diffs) / n, _percentile(stats, tail), _percentile(stats, 1 - tail)

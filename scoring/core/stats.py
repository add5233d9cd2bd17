"""Statistics for verdicts: intervals for a pass rate and for the difference of two, and pass^k.

One home for these so that ``all_summary.txt``, the gate and the pages quote the same figures.
Plain Python (no numpy): the inputs are counts."""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Z_95 = 1.96
"""The two-sided 95% normal quantile, as the textbooks (and the upstream summary) round it."""


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (stays inside [0, 1], sane at 0 and n)."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class RateDifference:
    """``delta`` = figure of B − figure of A, with its interval."""

    delta: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def rate_difference(k_a: int, n_a: int, k_b: int, n_b: int, z: float = Z_95) -> RateDifference:
    """Newcombe's hybrid score interval (his method 10) for the difference of two independent
    proportions, B − A: built from each rate's Wilson interval, so it behaves at 0 % and 100 %
    where the normal approximation does not."""
    low_a, high_a = wilson_interval(k_a, n_a, z)
    low_b, high_b = wilson_interval(k_b, n_b, z)
    p_a, p_b = k_a / n_a, k_b / n_b
    delta = p_b - p_a
    low = delta - math.sqrt((p_b - low_b) ** 2 + (high_a - p_a) ** 2)
    high = delta + math.sqrt((high_b - p_b) ** 2 + (p_a - low_a) ** 2)
    return RateDifference(delta, max(-1.0, low), min(1.0, high))


def pass_hat_k(successes_per_scenario: list[list[bool]], k: int) -> float:
    """Unbiased pass^k: mean over scenarios of C(c, k) / C(n, k) (c successes of n trials)."""
    if k < 1:
        raise ValueError("k must be >= 1")
    if not successes_per_scenario:
        raise ValueError("no scenarios")
    total = 0.0
    for outcomes in successes_per_scenario:
        n, c = len(outcomes), sum(bool(o) for o in outcomes)
        if n < k:
            raise ValueError(f"a scenario has {n} trial(s), fewer than k={k}")
        total += math.comb(c, k) / math.comb(n, k)
    return total / len(successes_per_scenario)


def bootstrap_difference(
    a: Sequence[float],
    b: Sequence[float],
    statistic: Callable[[Sequence[float]], float],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> RateDifference:
    """``statistic(b) − statistic(a)`` with a seeded percentile-bootstrap interval (each sample
    resampled on its own), for figures with no closed form such as a latency p95. The same
    inputs and seed always give the same interval, so a page or a gate quoting it is stable."""
    if not a or not b:
        raise ValueError("both samples need at least one value")
    rng = random.Random(seed)
    deltas = sorted(
        statistic(rng.choices(b, k=len(b))) - statistic(rng.choices(a, k=len(a))) for _ in range(resamples)
    )
    tail = (1 - level) / 2
    low = deltas[min(len(deltas) - 1, max(0, math.floor(tail * resamples)))]
    high = deltas[min(len(deltas) - 1, max(0, math.ceil((1 - tail) * resamples) - 1))]
    return RateDifference(statistic(b) - statistic(a), low, high)

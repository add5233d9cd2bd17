"""Statistics for verdicts: intervals for a pass rate and for the difference of two, pass^k, the
exact tests the release gate uses, flakiness and the run-to-run noise floor.

One home for these so that ``all_summary.txt``, the gate and the pages quote the same figures.
Plain Python (no numpy): the inputs are counts."""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

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


# --- exact tests for a drop ---------------------------------------------------------------------
#
# The gate asks one-sided questions ("did the agent get worse?"), so each test below returns the
# one-sided p-value for a drop. All are exact: the counts are small (5 seeds, 3 trials) exactly
# where normal approximations are wrong.


def binomial_tail_at_least(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2), summed in integers (exact for any n)."""
    if k > n:
        return 0.0
    return sum(math.comb(n, i) for i in range(max(k, 0), n + 1)) / 2**n


def mcnemar_exact(drops: int, gains: int) -> float:
    """McNemar's exact test on paired pass/fail verdicts: of the discordant pairs, ``drops``
    went pass → fail and ``gains`` fail → pass. One-sided p for a drop: under no change each
    discordant pair is a fair coin, so p = P(X >= drops), X ~ Binomial(drops + gains, 1/2).
    Concordant pairs carry no evidence either way and are not arguments."""
    if drops < 0 or gains < 0:
        raise ValueError("counts must be >= 0")
    return binomial_tail_at_least(drops, drops + gains)


def fisher_exact_drop(base_passes: int, base_trials: int, passes: int, trials: int) -> float:
    """Fisher's exact test, one-sided for a drop, on ``base_passes``/``base_trials`` (before) vs
    ``passes``/``trials`` (now): with the margins fixed, the chance that the new trials hold
    ``passes`` or fewer of all the passes (hypergeometric lower tail). Right for a handful of
    trials per scenario, where 3/3 → 2/3 is noise (p = 0.5) and 3/3 → 0/3 gives p = 0.05."""
    for k, n in ((base_passes, base_trials), (passes, trials)):
        if n <= 0 or not 0 <= k <= n:
            raise ValueError(f"need 0 <= passes <= trials and trials > 0, got {k}/{n}")
    total, passed = base_trials + trials, base_passes + passes
    lowest = max(0, passed - base_trials)
    tail = sum(math.comb(passed, x) * math.comb(total - passed, trials - x) for x in range(lowest, passes + 1))
    return tail / math.comb(total, trials)


@dataclass(frozen=True)
class SignFlipResult:
    """One-sided p for "the deltas lean negative", and whether it was enumerated exactly."""

    p_value: float
    exact: bool
    observed: float


def sign_flip_test(
    deltas: Sequence[Fraction | int],
    *,
    resamples: int = 20000,
    seed: int = 0,
    max_exact_states: int = 200_000,
) -> SignFlipResult:
    """Paired sign-flip permutation test over per-scenario deltas (now − before), one-sided for a
    drop: under no change each scenario's delta is as likely to have had the other sign, so p is
    the share of the 2^n sign assignments whose sum is at most the observed one.

    The deltas are exact fractions (differences of pass rates), so the null distribution is
    enumerated exactly by convolving integers; only when it would have more than
    ``max_exact_states`` distinct sums does a seeded Monte Carlo estimate take over (same inputs
    and seed, same p). On 0/1 verdicts (one trial each) it is McNemar's exact test."""
    values = [Fraction(d) for d in deltas if d != 0]
    observed = sum(values, Fraction(0))
    if not values:
        return SignFlipResult(1.0, True, 0.0)
    scale = math.lcm(*(v.denominator for v in values))
    steps = [abs(int(v * scale)) for v in values]
    target = int(observed * scale)
    counts = _sign_flip_sums(steps, max_exact_states)
    if counts is not None:
        at_most = sum(ways for total, ways in counts.items() if total <= target)
        return SignFlipResult(at_most / 2 ** len(steps), True, float(observed))
    rng = random.Random(seed)
    hits = 0
    for _ in range(resamples):
        hits += sum(step if rng.random() < 0.5 else -step for step in steps) <= target
    # (hits + 1) / (resamples + 1): a Monte Carlo permutation p-value is never 0 (Phipson & Smyth 2010).
    return SignFlipResult((hits + 1) / (resamples + 1), False, float(observed))


def _sign_flip_sums(steps: Sequence[int], max_states: int) -> dict[int, int] | None:
    """Number of sign assignments giving each sum of ±step; None past ``max_states`` sums."""
    counts = {0: 1}
    for step in steps:
        grown: dict[int, int] = {}
        for total, ways in counts.items():
            grown[total + step] = grown.get(total + step, 0) + ways
            grown[total - step] = grown.get(total - step, 0) + ways
        if len(grown) > max_states:
            return None
        counts = grown
    return counts


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the input order: testing every shared scenario at α would
    call one in twenty a regression by chance; Holm keeps the family-wise error at α."""
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


# --- trials: flakiness and the run-to-run noise floor -------------------------------------------


def flaky_scenarios(outcomes: Mapping[str, Sequence[bool]]) -> dict[str, tuple[int, int]]:
    """Scenarios whose verdict varies over their trials: name → (passes, trials), input order."""
    flaky = {}
    for name, verdicts in outcomes.items():
        passes = sum(bool(v) for v in verdicts)
        if len(verdicts) >= 2 and 0 < passes < len(verdicts):
            flaky[name] = (passes, len(verdicts))
    return flaky


@dataclass(frozen=True)
class NoiseFloor:
    """How much a run's pass rate moves from one run to the next with nothing changed.

    Each scenario passes a run with its own probability p_i; a run's pass rate over N scenarios
    then has variance Σ p_i(1 − p_i) / N², estimated without bias from each scenario's trials
    by c(k − c) / (k(k − 1)). Deterministic scenarios (always or never passing) add nothing."""

    scenarios: int
    """Scenarios with at least two trials (the others say nothing about noise)."""
    sd_one_trial: float
    """Standard deviation of the pass rate of a one-trial run (a fraction, not points)."""

    def sd(self, trials: int = 1) -> float:
        """The SD of a pass rate averaged over ``trials`` trials per scenario."""
        return self.sd_one_trial / math.sqrt(trials)

    def difference_floor(self, trials: int = 1, z: float = Z_95) -> float:
        """Half-width of the band (95% by default) in which the difference of two independent
        runs of ``trials`` trials each falls with nothing changed: gaps inside it are noise."""
        return z * math.sqrt(2) * self.sd(trials)


def noise_floor(outcomes: Mapping[str, Sequence[bool]]) -> NoiseFloor:
    """The noise floor from repeated trials (scenario → its trials' verdicts)."""
    variance, counted = 0.0, 0
    for verdicts in outcomes.values():
        k = len(verdicts)
        if k < 2:
            continue
        c = sum(bool(v) for v in verdicts)
        variance += c * (k - c) / (k * (k - 1))
        counted += 1
    if not counted:
        raise ValueError("the noise floor needs scenarios with at least two trials")
    return NoiseFloor(counted, math.sqrt(variance) / counted)

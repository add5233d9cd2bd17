"""The verdict statistics against textbook values."""
from __future__ import annotations

import pytest

from scoring.core.stats import bootstrap_difference, pass_hat_k, rate_difference, wilson_interval


def test_wilson_interval() -> None:
    low, high = wilson_interval(1, 3)
    assert round(low, 4) == 0.0615 and round(high, 4) == 0.7923
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
    with pytest.raises(ValueError):
        wilson_interval(0, 0)


def test_pass_hat_k() -> None:
    outcomes = [[True, True, False], [True, False, False], [False, False, False]]
    assert pass_hat_k(outcomes, 1) == pytest.approx((2 / 3 + 1 / 3 + 0) / 3)
    assert pass_hat_k(outcomes, 2) == pytest.approx((1 / 3 + 0 + 0) / 3)
    assert pass_hat_k(outcomes, 3) == 0.0
    with pytest.raises(ValueError):
        pass_hat_k(outcomes, 4)
    with pytest.raises(ValueError):
        pass_hat_k([], 1)


def test_rate_difference_matches_newcombe_1998() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, example (a): 56/70 vs 48/80, method 10.
    diff = rate_difference(48, 80, 56, 70)
    assert diff.delta == pytest.approx(0.2)
    assert (round(diff.low, 4), round(diff.high, 4)) == (0.0524, 0.3339)
    assert diff.excludes_zero()
    # Example (h): 10/10 vs 0/10 stays inside [-1, 1] at the boundary.
    edge = rate_difference(0, 10, 10, 10)
    assert edge.delta == 1.0 and round(edge.low, 4) == 0.6075 and edge.high == 1.0


def test_rate_difference_of_equal_rates_straddles_zero() -> None:
    same = rate_difference(3, 5, 3, 5)
    assert same.delta == 0 and same.low < 0 < same.high and not same.excludes_zero()


def test_bootstrap_difference_is_seeded_and_covers_a_real_shift() -> None:
    from statistics import median

    a = [1.0 + 0.01 * i for i in range(40)]
    b = [value + 0.5 for value in a]
    first = bootstrap_difference(a, b, median, seed=7)
    assert first == bootstrap_difference(a, b, median, seed=7)
    assert first.delta == pytest.approx(0.5) and first.low > 0 and first.excludes_zero()
    flat = bootstrap_difference(a, list(a), median, seed=7)
    assert flat.low <= 0 <= flat.high

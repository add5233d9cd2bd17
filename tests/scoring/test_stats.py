"""The verdict statistics against textbook values."""
from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from scoring.core.stats import (
    binomial_tail_at_least,
    bootstrap_difference,
    fisher_exact_drop,
    flaky_scenarios,
    holm_adjust,
    mcnemar_exact,
    noise_floor,
    pass_hat_k,
    rate_difference,
    sign_flip_test,
    wilson_interval,
)


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


# --- exact tests ----------------------------------------------------------------------------------


def test_binomial_tail_and_mcnemar_exact() -> None:
    assert binomial_tail_at_least(0, 5) == 1.0 and binomial_tail_at_least(6, 5) == 0.0
    assert binomial_tail_at_least(8, 10) == 56 / 1024  # 1 + 10 + 45 of 2^10
    assert mcnemar_exact(10, 0) == 1 / 1024  # 50/50 -> 40/50: ten pass->fail, none back
    assert mcnemar_exact(5, 0) == 1 / 32
    assert mcnemar_exact(1, 0) == 0.5  # 3/5 -> 2/5: one flip is a coin toss
    assert mcnemar_exact(3, 1) == 5 / 16
    assert mcnemar_exact(0, 0) == 1.0  # no discordant pair, no evidence
    assert mcnemar_exact(0, 4) == 1.0  # gains only: nothing dropped
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_fisher_exact_drop_matches_the_lady_tasting_tea() -> None:
    # Fisher (1935): 8 cups, 4 with milk first; she gets 3 of 4 right. One-sided p = 17/70.
    assert fisher_exact_drop(3, 4, 1, 4) == pytest.approx(17 / 70, abs=1e-12)
    assert round(fisher_exact_drop(3, 4, 1, 4), 4) == 0.2429
    # Trials of one scenario: 3/3 -> 2/3 is noise; 3/3 -> 0/3 is 1/C(6, 3).
    assert fisher_exact_drop(3, 3, 2, 3) == 0.5
    assert fisher_exact_drop(3, 3, 0, 3) == pytest.approx(1 / 20)
    # 50/50 -> 40/50: the only table at least as extreme is the observed one, C(90,40)/C(100,50).
    assert fisher_exact_drop(50, 50, 40, 50) == pytest.approx(math.comb(90, 40) / math.comb(100, 50))
    assert fisher_exact_drop(2, 5, 4, 5) > 0.9  # a gain is no drop
    with pytest.raises(ValueError):
        fisher_exact_drop(4, 3, 0, 3)


def test_sign_flip_test_reproduces_fishers_zea_mays_randomisation() -> None:
    # Darwin's Zea mays, crossed minus self-fertilised heights (eighths of an inch), as Fisher
    # analysed them in The Design of Experiments: 863 of the 2^15 sign assignments give a total
    # at least as large as observed (one-sided p = 0.02634; two-sided 0.0527).
    zea = [49, -67, 8, 16, 6, 23, 28, 41, 14, 29, 56, 24, 75, 60, -48]
    result = sign_flip_test([-d for d in zea])  # our test is one-sided for a drop
    assert result.exact and result.p_value * 2**15 == 863 and round(result.p_value, 5) == 0.02634
    assert result.observed == -314


def test_sign_flip_test_on_single_trials_is_mcnemar() -> None:
    for drops, gains in ((10, 0), (5, 0), (3, 1), (1, 0), (4, 4)):
        deltas = [-1] * drops + [1] * gains + [0] * 20
        assert sign_flip_test(deltas).p_value == pytest.approx(mcnemar_exact(drops, gains))
    assert sign_flip_test([0, 0]).p_value == 1.0


def test_sign_flip_test_handles_trial_fractions_and_falls_back_to_seeded_monte_carlo() -> None:
    # Two scenarios at 3 trials, -1/3 and -2/3: sums of +-1 +-2 (thirds): only -3 is <= -3 -> 1/4.
    assert sign_flip_test([Fraction(-1, 3), Fraction(-2, 3)]).p_value == 0.25
    zea = [-d for d in (49, -67, 8, 16, 6, 23, 28, 41, 14, 29, 56, 24, 75, 60, -48)]
    estimate = sign_flip_test(zea, max_exact_states=10, seed=3)
    assert not estimate.exact
    assert estimate == sign_flip_test(zea, max_exact_states=10, seed=3)  # seeded: reproducible
    assert abs(estimate.p_value - 863 / 2**15) < 0.005  # ~3.5 standard errors at 20000 resamples


def test_holm_adjust_matches_the_textbook_step_down() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 -> 0.02, 0.03, 0.06, max(0.04, 0.06).
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust([0.5, 0.9]) == [1.0, 1.0] and holm_adjust([]) == []


# --- flakiness and the noise floor ----------------------------------------------------------------


def test_flaky_scenarios_are_those_whose_verdict_varies() -> None:
    outcomes = {"a": [True, True, True], "b": [True, False, True], "c": [False, False], "d": [True]}
    assert flaky_scenarios(outcomes) == {"b": (2, 3)}


def test_noise_floor_by_hand() -> None:
    # 3/3, 2/3, 1/3, 0/3: unbiased p(1-p) estimates 0, 1/3, 1/3, 0 -> var = (2/3) / 4^2 = 1/24.
    floor = noise_floor({"a": [True] * 3, "b": [True, True, False], "c": [True, False, False], "d": [False] * 3,
                         "single": [True]})
    assert floor.scenarios == 4
    assert floor.sd() == pytest.approx(math.sqrt(1 / 24))
    assert floor.sd(3) == pytest.approx(math.sqrt(1 / 72))
    assert floor.difference_floor() == pytest.approx(1.96 * math.sqrt(2 / 24))
    with pytest.raises(ValueError):
        noise_floor({"a": [True]})


def test_noise_floor_predicts_the_spread_of_simulated_reruns() -> None:
    """What the figure means: two reruns of the same agent differ by about this much."""
    rng = random.Random(11)
    chances = [1.0] * 30 + [0.0] * 10 + [0.5] * 6 + [0.8] * 4
    trials = {f"s{i}": [rng.random() < p for _ in range(8)] for i, p in enumerate(chances)}
    floor = noise_floor(trials)
    true_sd = math.sqrt(sum(p * (1 - p) for p in chances)) / len(chances)
    assert floor.sd() == pytest.approx(true_sd, rel=0.35)

    def rerun() -> float:
        return sum(rng.random() < p for p in chances) / len(chances)

    gaps = [rerun() - rerun() for _ in range(4000)]
    inside = sum(abs(gap) <= floor.difference_floor() for gap in gaps) / len(gaps)
    assert 0.85 <= inside <= 1.0

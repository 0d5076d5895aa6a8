"""Staircase mechanism: optimal gamma, density, sampler, discrete version."""

from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.mechanisms.staircase import (
    COSTS,
    DiscreteStaircaseMechanism,
    StaircaseMechanism,
    discrete_staircase_costs,
    discrete_staircase_noise,
    optimal_gamma,
)
from tests.conftest import examples


def _piecewise_moments(mech: StaircaseMechanism, steps: int = 400) -> tuple[float, float, float]:
    """Mass, E|Z| and E Z^2 by integrating each constant piece exactly (independent of _moments)."""
    d, g = mech.sensitivity, mech.gamma
    edges = np.sort(np.concatenate([np.arange(steps) * d, np.arange(steps) * d + g * d, [steps * d]]))
    left, right = edges[:-1], edges[1:]
    height = mech.pdf((left + right) / 2)
    mass = 2 * np.sum(height * (right - left))
    first = 2 * np.sum(height * (right**2 - left**2) / 2)
    second = 2 * np.sum(height * (right**3 - left**3) / 3)
    return mass, first, second


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 2.0, 5.0])
@pytest.mark.parametrize("cost", COSTS)
def test_optimal_gamma_minimises_the_exact_cost(epsilon, cost):
    power = COSTS.index(cost)
    best = optimize.minimize_scalar(
        lambda g: StaircaseMechanism(sensitivity=1.0, epsilon=epsilon, gamma=g)._moments()[power],
        bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12},
    )
    assert optimal_gamma(epsilon, cost) == pytest.approx(best.x, abs=1e-6)


def _geng_viswanath_squared_gamma(epsilon: float) -> Decimal:
    """Geng-Viswanath's formula for the squared cost, as printed, in 60-digit decimal arithmetic."""
    getcontext().prec = 60
    b = (-Decimal(epsilon)).exp()
    third = Decimal(1) / 3
    return -b / (1 - b) + (b - 2 * b**2 + 2 * b**4 - b**5) ** third / (Decimal(2) ** third * (1 - b) ** 2)


@pytest.mark.parametrize("epsilon", [1e-9, 1e-7, 1e-5, 1e-3, 0.1, 1.0, 5.0, 30.0])
def test_squared_gamma_keeps_its_digits_at_small_epsilon(epsilon):
    """The printed formula's two terms are ~1/epsilon and cancel to ~1/2: in floats it was 4.5e-5 off
    at epsilon = 1e-3 and -1911 at 1e-5 (StaircaseMechanism then refused its own gamma)."""
    assert optimal_gamma(epsilon, "squared") == pytest.approx(float(_geng_viswanath_squared_gamma(epsilon)), rel=1e-14)
    mech = StaircaseMechanism(sensitivity=1.0, epsilon=epsilon, cost="squared")
    assert 0.0 < mech.gamma <= 0.5


@pytest.mark.parametrize("gamma", [0.0, 0.3, 1.0])
def test_density_and_moments_by_piecewise_integration(gamma):
    mech = StaircaseMechanism(sensitivity=1.5, epsilon=0.9, gamma=gamma)
    mass, first, second = _piecewise_moments(mech)
    assert mass == pytest.approx(1.0, abs=1e-12)
    assert mech.expected_absolute_error() == pytest.approx(first, rel=1e-10)
    assert mech.variance() == pytest.approx(second, rel=1e-10)


def test_cdf_and_ppf_are_inverse_and_sampler_matches():
    mech = StaircaseMechanism(sensitivity=2.0, epsilon=0.8)
    x = np.linspace(-15, 15, 301)
    np.testing.assert_allclose(mech.ppf(mech.cdf(x)), x, atol=1e-9)
    draws = mech.sample(0.0, 20_000, rng=7, exact=False)
    assert stats.kstest(draws, mech.cdf).pvalue > 1e-3
    wrong = StaircaseMechanism(sensitivity=2.2, epsilon=0.8)
    assert stats.kstest(draws, wrong.cdf).pvalue < 1e-6


def test_privacy_ratio_of_the_density_is_at_most_epsilon():
    mech = StaircaseMechanism(sensitivity=1.0, epsilon=1.3)
    x = np.linspace(-10, 10, 20001)
    for shift in (0.25, 0.5, 1.0):
        assert np.abs(np.log(mech.pdf(x)) - np.log(mech.pdf(x + shift))).max() <= 1.3 + 1e-12


def test_staircase_beats_laplace_for_large_epsilon():
    from dpopt.mechanisms.laplace import LaplaceMechanism

    stair = StaircaseMechanism(sensitivity=1.0, epsilon=6.0)
    assert stair.expected_absolute_error() < 0.3 * LaplaceMechanism(sensitivity=1.0, epsilon=6.0).expected_absolute_error()


@pytest.mark.parametrize("delta,epsilon", [(1, 0.5), (3, 1.0), (4, 2.5)])
def test_discrete_staircase_pmf_cdf_moments_by_brute_force(delta, epsilon):
    mech = DiscreteStaircaseMechanism(sensitivity=delta, epsilon=epsilon)
    z = np.arange(-3000, 3001)
    p = mech.pmf(z)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert mech.expected_absolute_error() == pytest.approx((np.abs(z) * p).sum(), rel=1e-12)
    assert mech.variance() == pytest.approx((z * z * p).sum(), rel=1e-12)
    np.testing.assert_allclose(mech.cdf(z[2990:3010]), np.cumsum(p)[2990:3010], atol=1e-14)
    assert mech.noise.privacy_loss() == pytest.approx(epsilon, rel=1e-12)


def test_discrete_staircase_with_unit_sensitivity_is_the_geometric_mechanism():
    mech = DiscreteStaircaseMechanism(sensitivity=1, epsilon=0.6)
    np.testing.assert_allclose(mech.noise.count_matrix(6), geometric_matrix(6, np.exp(-0.6)), atol=1e-15)


def test_discrete_sampler_chi_square():
    mech = DiscreteStaircaseMechanism(sensitivity=3, epsilon=1.0)
    draws = mech.sample(0, 100_000, rng=8)
    values = np.arange(-12, 13)
    observed = np.array([(draws == v).sum() for v in values] + [(np.abs(draws) > 12).sum()])
    expected = np.append(mech.pmf(values), 1 - mech.pmf(values).sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def _exact_staircase_cost(delta: int, b: Fraction, r: int, power: int) -> Fraction:
    """E|Z|^power in rationals: one period's sums times the exact geometric series over periods."""
    a = (1 - b) / (2 * r + 2 * b * (delta - r) - (1 - b))
    c = [a if j < r else a * b for j in range(delta)]
    g0, g1, g2 = 1 / (1 - b), b / (1 - b) ** 2, b * (1 + b) / (1 - b) ** 3  # sum_k k^q b^k, k >= 0
    c0, c1, c2 = (sum(j**q * cj for j, cj in enumerate(c)) for q in (0, 1, 2))
    if power == 1:
        return 2 * (delta * c0 * g1 + c1 * g0)
    return 2 * (delta**2 * c0 * g2 + 2 * delta * c1 * g1 + c2 * g0)


@settings(max_examples=examples(40), deadline=None)
@given(delta=st.integers(1, 30), epsilon=st.floats(0.01, 8.0), power=st.sampled_from([1, 2]))
def test_discrete_staircase_costs_in_closed_form_equal_the_window_moments_and_exact_rationals(delta, epsilon, power):
    costs = discrete_staircase_costs(delta, epsilon, power)
    b = Fraction(float(np.exp(-epsilon)))
    exact = np.array([float(_exact_staircase_cost(delta, b, r, power)) for r in range(1, delta + 1)])
    window = np.array([discrete_staircase_noise(delta, epsilon, r).moment(power) for r in range(1, delta + 1)])
    np.testing.assert_allclose(costs, exact, rtol=1e-13)
    np.testing.assert_allclose(window, exact, rtol=1e-12)
    chosen = DiscreteStaircaseMechanism(sensitivity=delta, epsilon=epsilon, cost=COSTS[power - 1])
    assert exact[chosen.r - 1] <= exact.min() * (1 + 1e-13)


def test_discrete_staircase_picks_r_among_a_hundred_thousand_candidates():
    # the closed form makes the search O(Delta); the chosen r costs the least of a coarse scan
    mech = DiscreteStaircaseMechanism(sensitivity=100_000, epsilon=1.0)
    scan = [discrete_staircase_noise(100_000, 1.0, r).moment(1) for r in (1, 10_000, 38_000, 50_000, 100_000)]
    assert mech.expected_absolute_error() <= min(scan) * (1 + 1e-12)
    assert mech.noise.privacy_loss() == pytest.approx(1.0, rel=1e-12)

"""Generalized Gaussian: density, exact sampler, truncated scales (Eq. 8/9), thresholding (Eqs. 10-14), Lemmas 5, 8, 9."""

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from dpopt.mechanisms.generalized_gaussian import (
    GeneralizedGaussianNoise,
    ThresholdedGeneralizedGaussianMechanism,
    TruncatedGeneralizedGaussianMechanism,
    TruncatedGeneralizedGaussianVector,
    exponential_scale,
    lemma9_bound,
    pdp_scale_monte_carlo,
    threshold,
    truncated_scale,
    utility_sensitivity,
)
from dpopt.mechanisms.laplace import ThresholdedLaplaceMechanism
from dpopt.validation import InvalidParameterError
from tests.conftest import examples


@pytest.mark.parametrize("p", [0.7, 1.0, 2.0, 3.0, 6.0])
def test_density_integrates_to_one_and_variance_formula(p):
    noise = GeneralizedGaussianNoise(scale=1.3, p=p)
    assert integrate.quad(noise.pdf, -np.inf, np.inf)[0] == pytest.approx(1.0, rel=1e-8)
    assert noise.variance() == pytest.approx(integrate.quad(lambda x: x * x * noise.pdf(x), -np.inf, np.inf)[0], rel=1e-7)
    assert noise.expected_absolute_error() == pytest.approx(integrate.quad(lambda x: abs(x) * noise.pdf(x), -np.inf, np.inf)[0], rel=1e-7)


@pytest.mark.parametrize("p", [1.0, 2.0, 4.0])
def test_sampler_against_its_cdf_and_scipy_gennorm(p):
    noise = GeneralizedGaussianNoise(scale=2.0, p=p)
    draws = noise.sample(0.0, 20_000, rng=21, exact=False)
    assert stats.kstest(draws, noise.cdf).pvalue > 1e-3
    assert stats.kstest(draws, stats.gennorm(p, scale=2.0).cdf).pvalue > 1e-3
    assert stats.kstest(draws, stats.gennorm(p, scale=2.2).cdf).pvalue < 1e-6


def test_special_cases_laplace_and_gaussian():
    x = np.linspace(-5, 5, 11)
    np.testing.assert_allclose(GeneralizedGaussianNoise(scale=1.5, p=1).pdf(x), stats.laplace(scale=1.5).pdf(x))
    np.testing.assert_allclose(GeneralizedGaussianNoise(scale=1.5, p=2).pdf(x), stats.norm(scale=1.5 / math.sqrt(2)).pdf(x))
    assert GeneralizedGaussianNoise.with_variance(1.0, 3.0).variance() == pytest.approx(1.0)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_truncated_gg_with_eq8_scale_is_epsilon_dp(p, epsilon):
    mech = TruncatedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=epsilon, p=p, lower=0.0, upper=4.0)
    assert mech.log_ratio_bound() <= epsilon


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("epsilon", [1e-12, 1e-6, 1.0])
def test_truncated_gg_mass_by_quadrature_and_its_loss_at_tiny_epsilon(p, epsilon):
    # A(s) as a difference of two cdfs near 1/2 lost every digit once b was 1e12 times the
    # width: at epsilon = 1e-12 the measured loss was 4e-11 and the calibration refused
    mech = TruncatedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=epsilon, p=p, lower=0.0, upper=10.0)
    noise = GeneralizedGaussianNoise(scale=mech.scale, p=p)
    for s in (0.0, 3.0, 10.0):
        by_quadrature, _ = integrate.quad(lambda y: float(noise.pdf(y - s)), 0.0, 10.0, epsabs=0.0, epsrel=1e-12)
        assert mech.mass(s) == pytest.approx(by_quadrature, rel=1e-9)
    assert mech.log_ratio_bound() <= epsilon


def test_eq9_is_eq8_with_lemma2_and_never_smaller_than_eq8_with_a_tighter_sensitivity():
    args = dict(epsilon=1.0, p=3, sensitivities=[1.0, 0.1, 0.05], widths=[10.0, 5.0, 2.0])
    assert truncated_scale(**args) == pytest.approx(truncated_scale(**args, equation="9"))
    assert truncated_scale(**args, lp_sensitivity=0.9) <= truncated_scale(**args, equation="9")
    # p = 1 is the truncated Laplace scale 2 Delta / epsilon
    assert truncated_scale(epsilon=0.5, p=1, sensitivities=[1.0], widths=[3.0]) == pytest.approx(4.0)


def test_truncated_sampler_stays_in_bounds_and_matches_density():
    mech = TruncatedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=1.0, p=2, lower=0.0, upper=10.0)
    draws = mech.sample(2.0, 20_000, rng=22, exact=False)
    assert draws.min() >= 0 and draws.max() <= 10

    def cdf(y):
        return np.array([integrate.quad(lambda t: float(mech.pdf(t, 2.0)), 0.0, v)[0] for v in np.atleast_1d(y)])

    assert stats.kstest(draws[:3000], cdf).pvalue > 1e-3


def test_thresholding_clamps():
    np.testing.assert_array_equal(threshold([-1.0, 0.5, 7.0], 0.0, 1.0), [0.0, 0.5, 1.0])
    with pytest.raises(InvalidParameterError, match="'upper'"):
        threshold([0.0], 1.0, 0.0)


def test_monte_carlo_bound_is_seeded_and_reports_a_standard_error():
    a = pdp_scale_monte_carlo(epsilon=1.0, delta=0.05, p=3, sensitivities=[1.0, 0.1], draws=20_000, replicates=4, seed=5)
    b = pdp_scale_monte_carlo(epsilon=1.0, delta=0.05, p=3, sensitivities=[1.0, 0.1], draws=20_000, replicates=4, seed=5)
    assert a == b and 0 < a.standard_error < 0.05 * a.scale
    smaller_delta = pdp_scale_monte_carlo(epsilon=1.0, delta=0.005, p=3, sensitivities=[1.0, 0.1], draws=20_000, replicates=4, seed=5)
    assert smaller_delta.scale > a.scale


def test_invalid_orders_rejected():
    with pytest.raises(InvalidParameterError, match="'p'"):
        pdp_scale_monte_carlo(epsilon=1.0, delta=0.1, p=1, sensitivities=[1.0])
    with pytest.raises(InvalidParameterError, match="'p'"):
        GeneralizedGaussianNoise(scale=1.0, p=0.0)
    with pytest.raises(InvalidParameterError, match="'widths'"):
        truncated_scale(epsilon=1.0, p=2, sensitivities=[1.0, 1.0], widths=[1.0])


# -- thresholding with epsilon-DP (Liu Eqs. 10-14) and Lemmas 8-9 --------------------------


def _direct_thresholded_loss(mech, b):
    """sup ln(release law under s / under s') by brute force: a grid of s, s' = s +- Delta, interior y,
    and the boundary masses by numerical integration of the GG density (not its closed-form cdf)."""
    from scipy import integrate

    noise = GeneralizedGaussianNoise(scale=b, p=mech.p)
    values = np.linspace(mech.lower, mech.upper, 41)
    ys = np.linspace(mech.lower, mech.upper, 81)[1:-1]
    worst = 0.0
    for s in values:
        for s2 in (s - mech.sensitivity, s + mech.sensitivity):
            if not mech.lower <= s2 <= mech.upper:
                continue
            inside = np.log(noise.pdf(ys - s)) - np.log(noise.pdf(ys - s2))
            low = [integrate.quad(noise.pdf, -np.inf, mech.lower - v)[0] for v in (s, s2)]
            high = [integrate.quad(noise.pdf, mech.upper - v, np.inf)[0] for v in (s, s2)]
            worst = max(worst, inside.max(), np.log(low[0] / low[1]), np.log(high[0] / high[1]))
    return worst


@pytest.mark.parametrize("p", [1, 2, 3, 1.5])
def test_thresholded_gg_loss_against_direct_maximisation(p):
    mech = ThresholdedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=1.0, p=p, lower=0.0, upper=5.0)
    direct = _direct_thresholded_loss(mech, mech.scale)
    assert direct == pytest.approx(mech.privacy_loss(), rel=1e-6)  # the grid holds the worst points exactly
    assert mech.privacy_loss() == pytest.approx(1.0, rel=1e-9)
    assert _direct_thresholded_loss(mech, 0.9 * mech.scale) > 1.0  # any smaller b fails


def _log_tail_ratio_by_quadrature(p, near, far):
    """``ln F(-near) - ln F(-far)`` for GG at scale 1, by quadrature of the tails with
    ``e^-t^p`` factored out: ``ln F(-t) = c - t^p + ln int_0^inf exp(-((t + u)^p - t^p)) du``."""
    def log_integral(t):
        def excess(u):
            return t**p * math.expm1(p * math.log1p(u / t)) if t > 0 else u**p
        value, _ = integrate.quad(lambda u: math.exp(-excess(u)), 0.0, math.inf, epsabs=0.0, epsrel=1e-13, limit=200)
        return math.log(value)
    return (far**p - near**p) + log_integral(near) - log_integral(far)


@pytest.mark.parametrize("p,epsilon,span", [(1.5, 6.0, 100.0), (2, 6.0, 100.0), (2, 1.0, 1e4), (3, 20.0, 100.0),
                                            (6, 1.0, 1e3), (2, 0.3, 1.5), (1.2, 30.0, 1e3)])
def test_thresholded_gg_scale_is_private_and_smallest_deep_in_the_tail(p, epsilon, span):
    # Until 2026-11-28 the bound masses' log ratio was nan once both underflowed, the bisection
    # read nan as private, and (2, 6.0, 100.0) measured 6.010 for epsilon = 6.
    mech = ThresholdedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=epsilon, p=p, lower=0.0, upper=span)

    def loss(b):
        boundary = _log_tail_ratio_by_quadrature(p, (span - 1.0) / b, span / b)
        return max(boundary, (span**p - (span - 1.0) ** p) / b**p), boundary

    worst, boundary = loss(mech.scale)
    assert mech.boundary_loss(mech.scale) == pytest.approx(boundary, rel=1e-9)
    assert worst <= epsilon * (1 + 1e-9)
    assert loss(mech.scale * (1 - 1e-7))[0] > epsilon


def test_thresholded_gg_paper_recipe_is_valid_and_looser():
    for p in (2, 3, 4):
        mech = ThresholdedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=0.5, p=p, lower=-2.0, upper=6.0)
        assert mech.paper_scale() >= mech.scale and mech.privacy_loss(mech.paper_scale()) <= 0.5 + 1e-12


def test_thresholded_gg_at_p_1_is_the_thresholded_laplace():
    mech = ThresholdedGeneralizedGaussianMechanism(sensitivity=2.0, epsilon=0.7, p=1, lower=0.0, upper=10.0)
    laplace = ThresholdedLaplaceMechanism(sensitivity=2.0, epsilon=0.7, lower=0.0, upper=10.0)
    assert mech.scale == pytest.approx(laplace.scale, rel=1e-12)
    assert mech.boundary_masses(3.0) == pytest.approx(laplace.boundary_masses(3.0), rel=1e-12)


def test_thresholded_gg_sampler_has_its_boundary_masses():
    mech = ThresholdedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=1.0, p=2, lower=0.0, upper=10.0)
    draws = mech.sample(2.0, 50_000, rng=11, exact=False)
    low, high = mech.boundary_masses(2.0)
    assert stats.binomtest(int((draws == 0.0).sum()), draws.size, low).pvalue > 1e-3
    assert stats.binomtest(int((draws == 10.0).sum()), draws.size, high).pvalue > 1e-3


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lemma_8_exponential_mechanism_is_gg(p):
    delta_u, epsilon = 3.0, 0.8
    b = exponential_scale(delta_u, epsilon, p)
    y = np.linspace(-6, 6, 101)
    normaliser = 2 * b * special.gamma(1 / p) / p  # A(x) with r = 1
    exponential = np.exp(-np.abs(y - 1.0) ** p * epsilon / (2 * delta_u)) / normaliser
    np.testing.assert_allclose(GeneralizedGaussianNoise(scale=b, p=p).pdf(y - 1.0), exponential, rtol=1e-12)


@settings(max_examples=examples(30), deadline=None)
@given(p=st.integers(1, 4), r=st.integers(1, 2), data=st.data())
def test_lemma_9_bounds_the_utility_sensitivity(p, r, data):
    """Delta_u by direct maximisation over grids of s, s' (|s - s'| <= Delta) and s*, against Lemma 9 and the exact form."""
    lows = [data.draw(st.floats(-5, 5)) for _ in range(r)]
    widths = [data.draw(st.floats(0.5, 6)) for _ in range(r)]
    deltas = [data.draw(st.floats(0.05, 1.0)) * w for w in widths]
    per_coordinate = []
    for lo, w, d in zip(lows, widths, deltas):
        grid = np.linspace(lo, lo + w, 121)
        s, star = grid[:, None], grid[None, :]
        best = 0.0
        for shift in (d, -d):
            s2 = s + shift
            ok = (s2 >= lo) & (s2 <= lo + w)
            diff = np.abs(np.abs(s - star) ** p - np.abs(s2 - star) ** p)
            best = max(best, float(np.where(ok, diff, 0.0).max()))
        per_coordinate.append(best)
        assert best == pytest.approx(utility_sensitivity(p, d, w), rel=1e-9)  # the exact form is attained on the grid
    direct = sum(per_coordinate)  # the coordinates' worst cases can co-occur
    assert direct <= lemma9_bound(p, deltas, lows, [lo + w for lo, w in zip(lows, widths)]) * (1 + 1e-12)


def test_lemma_9_bound_where_the_sensitivity_window_crosses_zero():
    """[-2.5, 2.5], Delta = 5, p = 3: s = 2.5, s' = -2.5 gives |s^i - s'^i| = 2 * 2.5^i for odd i,
    and Delta_u = 5^3 = 125; the bound stopped s' at 0 and gave 109.375 (explore profile).
    The bound by hand: 3 * 2.5^2 * 5 + 3 * 2.5 * 2.5^2 + 2 * 2.5^3 = 171.875."""
    assert utility_sensitivity(3, 5.0, 5.0) == 125.0
    assert lemma9_bound(3, [5.0], [-2.5], [2.5]) == pytest.approx(171.875, rel=1e-15)
    assert lemma9_bound(3, [1.0], [3.0], [5.0]) == pytest.approx(3 * 25 * 1 + 3 * 5 * (25 - 16) + (125 - 64), rel=1e-15)


# -- the truncated GG mechanism in r dimensions (Liu Definition 4, Eq. 8) -------------------


def test_vector_with_one_statistic_is_the_scalar_mechanism():
    vector = TruncatedGeneralizedGaussianVector(sensitivities=[1.0], epsilon=1.0, p=2, lowers=[0.0], uppers=[10.0])
    scalar = TruncatedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=1.0, p=2, lower=0.0, upper=10.0)
    y = np.linspace(0, 10, 11)
    assert vector.scale == pytest.approx(scalar.scale, rel=1e-12)
    np.testing.assert_allclose(np.exp(vector.logpdf(y[:, None], [3.0])), scalar.pdf(y, 3.0), rtol=1e-12)


def test_vector_density_integrates_to_one():
    mech = TruncatedGeneralizedGaussianVector(sensitivities=[1.0, 0.5], epsilon=1.0, p=3, lowers=[0.0, -1.0], uppers=[4.0, 2.0])
    total = integrate.dblquad(lambda b2, a1: np.exp(mech.logpdf(np.array([a1, b2]), [1.0, 0.5])), 0.0, 4.0, -1.0, 2.0)[0]
    assert total == pytest.approx(1.0, rel=1e-7)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_vector_sampler_marginals_follow_their_truncated_cdfs(p):
    mech = TruncatedGeneralizedGaussianVector(sensitivities=[1.0, 0.1, 0.05], epsilon=1.0, p=p, lowers=[0, 0, 0], uppers=[10, 1, 1])
    s = np.array([2.0, 0.5, 0.9])
    draws = mech.sample(s, 20_000, rng=5, exact=False)
    noise = GeneralizedGaussianNoise(scale=mech.scale, p=p)
    for k in range(3):
        lo, hi = noise.cdf(mech.lowers[k] - s[k]), noise.cdf(mech.uppers[k] - s[k])
        assert stats.kstest(draws[:, k], lambda v, k=k, lo=lo, hi=hi: (noise.cdf(v - s[k]) - lo) / (hi - lo)).pvalue > 1e-3


@settings(max_examples=examples(20), deadline=None)
@given(p=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_vector_eq_8_scale_is_private_on_random_neighbours(p, seed):
    """Eq. (8)'s b in r = 3 dimensions: the log ratio of release densities between random neighbours
    (|s_k - s'_k| <= Delta_k) at random releases never exceeds epsilon; at a quarter of the scale it does."""
    rng = np.random.default_rng(seed)
    deltas, lo, hi = np.array([1.0, 0.1, 0.05]), np.zeros(3), np.array([10.0, 1.0, 1.0])
    mech = TruncatedGeneralizedGaussianVector(sensitivities=deltas, epsilon=1.0, p=p, lowers=lo, uppers=hi)
    s = lo + (hi - lo) * rng.random((200, 3))
    s2 = np.clip(s + deltas * rng.choice([-1.0, 1.0], size=(200, 3)), lo, hi)
    corners = np.array([lo, hi])  # the worst releases sit at the box's corners
    y = np.concatenate([lo + (hi - lo) * rng.random((50, 3)), corners])
    worst = max(float(np.max(mech.logpdf(y, a) - mech.logpdf(y, b))) for a, b in zip(s, s2))
    assert worst <= 1.0 + 1e-9
    too_small = copy.copy(mech)
    object.__setattr__(too_small, "scale", mech.scale / 4)  # the check can fail
    assert max(float(np.max(too_small.logpdf(y, a) - too_small.logpdf(y, b))) for a, b in zip(s, s2)) > 1.0

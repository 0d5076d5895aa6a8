"""Generalized Gaussian: density, exact sampler, truncated scales (Eq. 8/9), thresholding, Lemma 5."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpopt.mechanisms.generalized_gaussian import (
    GeneralizedGaussianNoise,
    TruncatedGeneralizedGaussianMechanism,
    pdp_scale_monte_carlo,
    threshold,
    truncated_scale,
)
from dpopt.validation import InvalidParameterError


@pytest.mark.parametrize("p", [0.7, 1.0, 2.0, 3.0, 6.0])
def test_density_integrates_to_one_and_variance_formula(p):
    noise = GeneralizedGaussianNoise(scale=1.3, p=p)
    assert integrate.quad(noise.pdf, -np.inf, np.inf)[0] == pytest.approx(1.0, rel=1e-8)
    assert noise.variance() == pytest.approx(integrate.quad(lambda x: x * x * noise.pdf(x), -np.inf, np.inf)[0], rel=1e-7)
    assert noise.expected_absolute_error() == pytest.approx(integrate.quad(lambda x: abs(x) * noise.pdf(x), -np.inf, np.inf)[0], rel=1e-7)


@pytest.mark.parametrize("p", [1.0, 2.0, 4.0])
def test_sampler_against_its_cdf_and_scipy_gennorm(p):
    noise = GeneralizedGaussianNoise(scale=2.0, p=p)
    draws = noise.sample(0.0, 20_000, rng=21)
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


def test_eq9_is_eq8_with_lemma2_and_never_smaller_than_eq8_with_a_tighter_sensitivity():
    args = dict(epsilon=1.0, p=3, sensitivities=[1.0, 0.1, 0.05], widths=[10.0, 5.0, 2.0])
    assert truncated_scale(**args) == pytest.approx(truncated_scale(**args, equation="9"))
    assert truncated_scale(**args, lp_sensitivity=0.9) <= truncated_scale(**args, equation="9")
    # p = 1 is the truncated Laplace scale 2 Delta / epsilon
    assert truncated_scale(epsilon=0.5, p=1, sensitivities=[1.0], widths=[3.0]) == pytest.approx(4.0)


def test_truncated_sampler_stays_in_bounds_and_matches_density():
    mech = TruncatedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=1.0, p=2, lower=0.0, upper=10.0)
    draws = mech.sample(2.0, 20_000, rng=22)
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

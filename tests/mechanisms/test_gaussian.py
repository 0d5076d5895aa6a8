"""Gaussian mechanism: classic, pDP (Liu Eq. 18) and analytic (Balle-Wang) calibrations."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import integrate, special, stats

from dpopt.mechanisms.gaussian import (
    GaussianMechanism,
    analytic_delta,
    analytic_sigma,
    classic_sigma,
    lemma11_threshold,
    pdp_sigma,
)
from dpopt.mechanisms.generalized_gaussian import pdp_scale_monte_carlo
from dpopt.mechanisms.laplace import LaplaceMechanism
from dpopt.validation import InvalidParameterError


@given(epsilon=st.floats(0.01, 8.0), log_delta=st.floats(-12.0, -0.5), sensitivity=st.floats(0.1, 10.0))
def test_analytic_sigma_meets_its_condition_with_equality(epsilon, log_delta, sensitivity):
    delta = 10.0**log_delta
    sigma = analytic_sigma(sensitivity, epsilon, delta)
    assert float(analytic_delta(sigma, sensitivity, epsilon)) == pytest.approx(delta, rel=1e-9)
    assert float(analytic_delta(sigma * (1 - 1e-6), sensitivity, epsilon)) > delta  # the smallest such sigma


@given(epsilon=st.floats(0.01, 0.99), log_delta=st.floats(-12.0, -0.1))
def test_analytic_is_never_larger_than_classic_and_both_are_private(epsilon, log_delta):
    delta = 10.0**log_delta
    analytic = analytic_sigma(1.0, epsilon, delta)
    classic = classic_sigma(1.0, epsilon, delta)
    assert analytic <= classic
    assert float(analytic_delta(classic, 1.0, epsilon)) <= delta


def privacy_loss_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """delta = E[(1 - e^(eps - L))_+], L ~ N(mu, 2 mu), mu = Delta^2 / (2 sigma^2), by adaptive quadrature.

    Substituting L = eps + sd t leaves a positive integrand (nothing cancels), so quad's
    relative tolerance holds even where delta is 1e-16: an oracle for the tail."""
    mu = sensitivity**2 / (2.0 * sigma**2)
    sd = math.sqrt(2.0 * mu)
    z = (epsilon - mu) / sd
    value, _ = integrate.quad(lambda t: -math.expm1(-sd * t) * math.exp(-z * t - 0.5 * t * t), 0.0, np.inf,
                              epsabs=0.0, epsrel=1e-13, limit=500)
    return value * math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


@pytest.mark.parametrize("sigma, sensitivity, epsilon", [
    (1779.601538732391, 3.0735891096911, 0.01),  # delta = 1e-12: the old difference of Phi's was 4e-11 off
    (700.0, 1.0, 0.01), (200.0, 2.0, 0.05), (30.0, 1.0, 0.1), (3.0, 1.0, 0.5), (1.7, 1.0, 0.6), (0.3, 1.0, 8.0),
    (0.5, 1.0, 1.0), (0.05, 1.0, 0.5),  # a > 0: large delta, the direct difference
])
def test_analytic_delta_matches_quadrature_to_twelve_digits(sigma, sensitivity, epsilon):
    assert float(analytic_delta(sigma, sensitivity, epsilon)) == pytest.approx(privacy_loss_delta(sigma, sensitivity, epsilon),
                                                                               rel=1e-12, abs=0.0)


def test_analytic_sigma_at_small_epsilon_and_delta():
    """Found by the explore profile: the noise of the old formula defeated the round-up (AssertionError)."""
    sigma = analytic_sigma(3.0735891096911, 0.01, 1e-12)
    assert privacy_loss_delta(sigma, 3.0735891096911, 0.01) <= 1e-12 * (1 + 1e-11)
    assert privacy_loss_delta(sigma * (1 - 1e-9), 3.0735891096911, 0.01) > 1e-12


def test_analytic_delta_by_direct_integration_of_the_privacy_loss():
    # independent route: delta = E[(1 - e^(eps - L))_+] with L ~ N(mu, 2 mu), mu = Delta^2 / (2 sigma^2)
    sigma, eps = 1.7, 0.6
    mu = 1.0 / (2 * sigma**2)
    loss = np.linspace(mu - 40 * math.sqrt(2 * mu), mu + 40 * math.sqrt(2 * mu), 400_001)
    dens = stats.norm(mu, math.sqrt(2 * mu)).pdf(loss)
    integrand = np.clip(1 - np.exp(eps - loss), 0, None) * dens
    assert float(analytic_delta(sigma, 1.0, eps)) == pytest.approx(np.trapezoid(integrand, loss), rel=1e-7)


@pytest.mark.parametrize("epsilon,delta", [(0.5, 0.05), (1.5, 0.01)])
def test_pdp_bound_equals_lemma_5_by_monte_carlo(epsilon, delta):
    # Lemma 10 is Lemma 5 solved in closed form for p = 2, r = 1 (b = sigma sqrt 2)
    estimate = pdp_scale_monte_carlo(epsilon=epsilon, delta=delta, p=2, sensitivities=[1.0], draws=50_000, replicates=6, seed=3)
    b = pdp_sigma(1.0, epsilon, delta) * math.sqrt(2)
    assert abs(estimate.scale - b) < 5 * estimate.standard_error + 1e-3 * b


def test_pdp_is_tighter_than_classic_for_epsilon_below_one():
    for eps in np.linspace(0.05, 0.95, 10):
        for delta in (1e-6, 1e-3, 0.1):
            assert pdp_sigma(1.0, eps, delta) / classic_sigma(1.0, eps, delta) < 1


def test_lemma_11_threshold_is_two_phi_of_minus_root_two():
    assert lemma11_threshold() == pytest.approx(0.157299, abs=1e-6)
    assert 2 * special.ndtr(math.sqrt(2)) > 1  # the printed 2 Phi(sqrt 2) is not a probability
    for eps in (0.1, 1.0, 2.0):
        threshold = lemma11_threshold(eps)
        for delta, bigger in ((threshold * 0.99, True), (min(threshold * 1.01, 0.99), False)):
            ratio = pdp_sigma(1.0, eps, delta) ** 2 / LaplaceMechanism(sensitivity=1.0, epsilon=eps).variance()
            assert (ratio > 1) == bigger
        assert threshold >= lemma11_threshold()  # the epsilon-free threshold holds for every epsilon


@pytest.mark.parametrize("calibration", ["analytic", "classic", "pdp"])
def test_sampler_cdf_and_absolute_error(calibration):
    mech = GaussianMechanism(sensitivity=1.0, epsilon=0.5, delta=1e-5, calibration=calibration)
    draws = mech.sample(0.0, 200_000, rng=11, exact=False)
    assert stats.kstest(draws[:20_000], mech.cdf).pvalue > 1e-3
    assert stats.kstest(draws, stats.norm(scale=mech.sigma * 1.05).cdf).pvalue < 1e-6
    assert np.abs(draws).mean() == pytest.approx(mech.sigma * math.sqrt(2 / math.pi), rel=0.01)
    assert mech.achieved_delta() <= 1e-5 * (1 + 1e-9)


def test_classic_calibration_rejects_epsilon_of_one_or_more():
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        GaussianMechanism(sensitivity=1.0, epsilon=1.0, delta=1e-5, calibration="classic")
    with pytest.raises(InvalidParameterError, match="'delta'"):
        GaussianMechanism(sensitivity=1.0, epsilon=0.5, delta=0.0)

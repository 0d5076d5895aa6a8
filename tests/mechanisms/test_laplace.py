"""Laplace, truncated (bounded-domain) and thresholded Laplace."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dpopt.mechanisms.laplace import LaplaceMechanism, ThresholdedLaplaceMechanism, TruncatedLaplaceMechanism
from dpopt.validation import InvalidParameterError


def test_scale_and_moments():
    mech = LaplaceMechanism(sensitivity=2.0, epsilon=0.5)
    assert mech.scale == 4.0
    draws = mech.sample(0.0, 400_000, rng=1, exact=False)
    assert abs(np.abs(draws).mean() - mech.expected_absolute_error()) < 0.03  # E|X| = b; sd of the mean ~ 0.006
    assert abs(draws.var() - mech.variance()) / mech.variance() < 0.02


def test_sampler_matches_its_cdf_and_a_wrong_scale_is_detected():
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=0.7)
    draws = mech.sample(0.0, 20_000, rng=3, exact=False)
    assert stats.kstest(draws, mech.cdf).pvalue > 1e-3
    wrong = LaplaceMechanism(sensitivity=1.0, epsilon=0.7 * 1.1)
    assert stats.kstest(draws, wrong.cdf).pvalue < 1e-6
    assert stats.kstest(draws, stats.laplace(scale=1 / 0.7).cdf).pvalue > 1e-3  # scipy's own Laplace


def test_secure_source_draws_and_seeded_draws_repeat():
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=1.0)
    assert np.array_equal(mech.sample(5.0, 10, rng=4, exact=False), mech.sample(5.0, 10, rng=4, exact=False))
    assert mech.sample(5.0, 3, secure=True, exact=False).shape == (3,)


def test_characteristic_function_and_entropy_match_quadrature():
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=0.8)
    numeric = super(LaplaceMechanism, mech).characteristic_modulus(np.array([0.3, 1.0]))
    np.testing.assert_allclose(mech.characteristic_modulus(np.array([0.3, 1.0])), numeric, rtol=1e-6)
    assert mech.differential_entropy() == pytest.approx(super(LaplaceMechanism, mech).differential_entropy(), rel=1e-7)


@pytest.mark.parametrize("epsilon,width,delta", [(1.0, 10.0, 1.0), (0.3, 4.0, 1.5), (2.0, 1.0, 0.25)])
def test_truncated_exact_scale_meets_epsilon_on_a_grid_of_neighbours(epsilon, width, delta):
    mech = TruncatedLaplaceMechanism(sensitivity=delta, epsilon=epsilon, lower=0.0, upper=width)
    assert mech.privacy_loss() == pytest.approx(epsilon, rel=1e-9)
    # independent route: brute force over true values s, s' = s + d and releases y
    s = np.linspace(0, width - delta, 81)
    worst = 0.0
    for d in np.linspace(delta / 8, delta, 8):
        for y in np.linspace(0, width, 161):
            a = np.array([mech.pdf(y, v) for v in s])
            b = np.array([mech.pdf(y, min(v + d, width)) for v in s])
            worst = max(worst, float(np.abs(np.log(a) - np.log(b)).max()))
    assert worst <= epsilon * (1 + 1e-9)
    assert worst >= epsilon * (1 - 1e-6)  # the bound is attained at the edge


@given(exponent=st.integers(-90, 90), epsilon=st.sampled_from([0.01, 0.3, 1.0, 4.0]), span=st.sampled_from([1.0, 3.0, 8.0, 40.0]))
def test_truncated_exact_scale_is_scale_free_and_meets_epsilon(exponent, epsilon, span):
    # Powers of two scale every float exactly, so the scale in units of Delta may not move.
    # Until 2026-11-28 brentq's absolute xtol = 1e-14 was 1.5% of b at Delta = 2**-48
    # (loss 1.001 epsilon at epsilon = 0.01) and the root could land a few ulps on the wrong side.
    unit = 2.0**exponent
    scaled = TruncatedLaplaceMechanism(sensitivity=unit, epsilon=epsilon, lower=-unit, upper=(span - 1.0) * unit)
    plain = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=epsilon, lower=-1.0, upper=span - 1.0)
    assert scaled.privacy_loss() <= epsilon and plain.privacy_loss() <= epsilon
    assert scaled.scale / unit == pytest.approx(plain.scale, rel=1e-13)
    assert plain.privacy_loss(plain.scale * (1 - 1e-12)) > epsilon or plain.scale == 1.0 / epsilon  # the smallest


def test_thresholded_laplace_scale_meets_epsilon_in_floating_point():
    # Delta / (Delta / epsilon) exceeds epsilon by an ulp for about a fifth of inputs (here 1.527..., 0.7):
    # the thresholded mechanism now takes the Laplace mechanism's rounded-up scale.
    for delta in np.random.default_rng(1).uniform(0.1, 10.0, 200):
        for epsilon in (0.1, 0.7, 3.3):
            mech = ThresholdedLaplaceMechanism(sensitivity=delta, epsilon=epsilon, lower=0.0, upper=20.0)
            assert delta / mech.scale <= epsilon


def _truncated_loss_in_decimal(b: float, delta: float, width: float) -> float:
    """``Delta / b + ln A(Delta) - ln A(0)`` with ``A(s) = 1 - e^(-s/b)/2 - e^(-(width - s)/b)/2`` in 60 digits."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = 60
        b_, d_, w_ = Decimal(b), Decimal(delta), Decimal(width)
        mass = [1 - (-s / b_).exp() / 2 - (-(w_ - s) / b_).exp() / 2 for s in (Decimal(0), d_)]
        return float(d_ / b_ + (mass[1].ln() - mass[0].ln()))


@pytest.mark.parametrize("epsilon", [1.0, 1e-4, 1e-8, 1e-12, 1e-15])
@pytest.mark.parametrize("width", [1.0, 10.0, 1e6])
def test_truncated_exact_scale_at_tiny_epsilon_against_decimal_arithmetic(epsilon, width):
    # Until 2026-11-28 the normaliser lost its digits once b was far above the width: at
    # epsilon = 1e-12 and width 10 the "exact" scale was Delta / epsilon, whose true loss is 1.9 epsilon
    mech = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=epsilon, lower=0.0, upper=width)
    true = _truncated_loss_in_decimal(mech.scale, 1.0, width)
    assert true <= epsilon * (1 + 1e-12)
    assert mech.privacy_loss() == pytest.approx(true, rel=1e-12)
    assert mech.scale == 1.0 / epsilon or _truncated_loss_in_decimal(mech.scale * (1 - 1e-9), 1.0, width) > epsilon


def test_liu_truncated_scale_is_private_but_larger():
    exact = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=1.0, lower=0.0, upper=10.0)
    liu = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=1.0, lower=0.0, upper=10.0, calibration="liu")
    assert liu.scale == 2.0 and exact.scale < liu.scale
    assert liu.privacy_loss() < 1.0
    # plain Laplace scale is not enough once the output is truncated
    assert exact.privacy_loss(1.0) > 1.0


def test_truncated_sampler_matches_its_cdf():
    mech = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=0.5, lower=0.0, upper=5.0)
    draws = mech.sample(1.0, 20_000, rng=5, exact=False)
    assert draws.min() >= 0 and draws.max() <= 5
    assert stats.kstest(draws, lambda y: mech.cdf(y, 1.0)).pvalue > 1e-3


def _truncated_cdf_in_decimal(mech: TruncatedLaplaceMechanism, y: float, s: float) -> float:
    """The truncated law's cdf as a ratio of Laplace cdf differences in 60 digits."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = 60
        b, s_ = Decimal(mech.scale), Decimal(s)

        def laplace(v: Decimal) -> Decimal:
            z = (v - s_) / b
            return z.exp() / 2 if z < 0 else 1 - (-z).exp() / 2

        low, high = laplace(Decimal(mech.lower)), laplace(Decimal(mech.upper))
        return float((laplace(Decimal(y)) - low) / (high - low))


@pytest.mark.parametrize("epsilon", [1.0, 1e-6, 1e-10, 1e-13])
def test_truncated_cdf_at_tiny_epsilon_against_decimal_arithmetic(epsilon):
    # Until 2026-11-29 the cdf subtracted Laplace cdfs near 1/2: at epsilon = 1e-13 it gave
    # 0 for cdf(0.001 | s = 0) (true: 1e-4) and was 1.3e-4 off in the middle
    mech = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=epsilon, lower=0.0, upper=10.0)
    for s, y in [(3.0, 2.5), (3.0, 7.0), (0.0, 0.001), (10.0, 9.999), (5.0, 5.0), (0.0, 10.0)]:
        assert float(mech.cdf(y, s)) == pytest.approx(_truncated_cdf_in_decimal(mech, y, s), rel=1e-14)


@pytest.mark.parametrize("epsilon", [0.5, 1e-13])
def test_truncated_sampler_matches_its_cdf_at_any_epsilon(epsilon):
    # At epsilon = 1e-13 the law is nearly uniform on the bounds; the old single inverse cdf
    # drew from a few hundred floats between Laplace cdfs near 1/2
    mech = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=epsilon, lower=0.0, upper=5.0)
    for s in (0.0, 1.0, 5.0):
        draws = mech.sample(s, 20_000, rng=7, exact=False)
        assert draws.min() >= 0 and draws.max() <= 5
        assert np.unique(draws).size > 19_000
        assert stats.kstest(draws, lambda y: mech.cdf(y, s)).pvalue > 1e-3


def test_thresholded_release_has_point_masses_at_the_bounds():
    mech = ThresholdedLaplaceMechanism(sensitivity=1.0, epsilon=1.0, lower=0.0, upper=3.0)
    low, high = mech.boundary_masses(0.5)
    draws = mech.sample(0.5, 100_000, rng=6, exact=False)
    assert abs((draws == 0.0).mean() - low) < 0.01 and abs((draws == 3.0).mean() - high) < 0.01


@pytest.mark.parametrize(
    "kwargs,parameter",
    [
        (dict(sensitivity=0.0, epsilon=1.0), "sensitivity"),
        (dict(sensitivity=1.0, epsilon=-1.0), "epsilon"),
        (dict(sensitivity=1.0, epsilon=True), "epsilon"),
    ],
)
def test_bad_parameters_are_named(kwargs, parameter):
    with pytest.raises(InvalidParameterError, match=f"'{parameter}'"):
        LaplaceMechanism(**kwargs)


def test_bad_bounds_are_named():
    with pytest.raises(InvalidParameterError, match="'upper'"):
        TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=1.0, lower=2.0, upper=1.0)
    with pytest.raises(InvalidParameterError, match="'sensitivity'"):
        TruncatedLaplaceMechanism(sensitivity=5.0, epsilon=1.0, lower=0.0, upper=1.0)
    with pytest.raises(InvalidParameterError, match="'calibration'"):
        TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=1.0, lower=0.0, upper=3.0, calibration="loose")

"""PeriodicNoise: pmf, cdf, moments, sampler and privacy against brute force."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.mechanisms.integer_noise import PeriodicNoise
from dpopt.validation import InvalidParameterError
from tests.conftest import examples


@st.composite
def periodic_noises(draw):
    period = draw(st.integers(1, 4))
    m = draw(st.integers(period, 3 * period))
    decay = draw(st.floats(0.05, 0.95))
    raw = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=2 * m + 1, max_size=2 * m + 1)))
    s1 = decay / (1 - decay)
    total = raw.sum() + s1 * (raw[:period].sum() + raw[-period:].sum())
    return PeriodicNoise(raw / total, period, decay)


@given(noise=periodic_noises())
def test_pmf_cdf_moments_against_brute_force(noise):
    reach = noise.half_width + noise.period * int(np.ceil(60 / -np.log(noise.decay)))
    z = np.arange(-reach, reach + 1)
    p = noise.pmf(z)
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(noise.cdf(z), np.cumsum(p), atol=1e-9)
    assert noise.moment(1) == pytest.approx((np.abs(z) * p).sum(), rel=1e-8)
    assert noise.moment(2) == pytest.approx((z * z * p).sum(), rel=1e-8)
    with np.errstate(divide="ignore"):
        brute = max(np.abs(np.log(p[:-s]) - np.log(p[s:])).max() for s in range(1, noise.period + 1))
    assert noise.privacy_loss() == pytest.approx(brute, rel=1e-12)


def test_geometric_noise_clamped_to_a_range_is_gupte_sundararajans_matrix():
    alpha = 0.3
    window = alpha ** np.abs(np.arange(-2, 3)) * (1 - alpha) / (1 + alpha)
    noise = PeriodicNoise(window, 1, alpha)
    np.testing.assert_allclose(noise.count_matrix(7), geometric_matrix(7, alpha), atol=1e-15)


def test_sampler_chi_square_on_an_asymmetric_window():
    window = np.array([0.05, 0.1, 0.3, 0.2, 0.1])
    decay = 0.5
    s1 = decay / (1 - decay)
    window = window / (window.sum() + s1 * (window[:2].sum() + window[-2:].sum()))
    noise = PeriodicNoise(window, 2, decay)
    draws = noise.sample(200_000, rng=31)
    values = np.arange(-12, 13)
    observed = np.array([(draws == v).sum() for v in values] + [(np.abs(draws) > 12).sum()])
    expected = np.append(noise.pmf(values), 1 - noise.pmf(values).sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_invalid_windows_rejected():
    with pytest.raises(InvalidParameterError, match="'window'"):
        PeriodicNoise(np.ones(4) / 4, 1, 0.5)
    with pytest.raises(InvalidParameterError, match="'window'"):
        PeriodicNoise(np.ones(3), 1, 0.5)  # does not sum to one with its tails
    with pytest.raises(InvalidParameterError, match="'decay'"):
        PeriodicNoise(np.ones(3) / 3, 1, 1.0)


@settings(max_examples=examples(200), deadline=None)
@given(
    p=st.lists(st.sampled_from([0.0, 1e-300, 1e-9, 0.1, 0.25, 0.5, 1.0]), min_size=1, max_size=40).map(np.array),
    reach=st.integers(1, 50),
)
def test_forward_window_losses_equal_the_loop_over_shifts(p, reach):
    """The sliding maximum against the per-shift definition, zeros included (0/0 and a zero
    beside a non-zero), with reaches past the end of the array; equal to the last bit."""
    from dpopt.certificates import log_ratios
    from dpopt.mechanisms.integer_noise import forward_window_losses

    expected = np.zeros(p.size)
    for s in range(1, min(reach, p.size - 1) + 1):
        expected[:-s] = np.maximum(expected[:-s], log_ratios(p[:-s], p[s:]))
    np.testing.assert_array_equal(forward_window_losses(p, reach), expected)


def test_geometric_noise_with_a_large_period_is_measured_quickly():
    """Sensitivity 1e5 took 160 s one shift at a time; the loss is epsilon, at a shift of 1e5."""
    noise = PeriodicNoise.geometric(100_000, np.exp(-1e-3))
    loss, _, shift = noise.worst_ratio()
    assert loss == pytest.approx(1e-3, rel=1e-9) and shift == 100_000


def test_tail_draws_beyond_int64_are_exact_integers():
    """At epsilon ~ 1.1e-16 with Delta = 10**4 a tail draw's k Delta is about 1e20, beyond
    int64, which wrapped it to an arbitrary value below 9.2e18 (2026-11-28). |Z| is then
    Delta times a geometric count: its median is about Delta ln 2 / epsilon."""
    b = float(np.nextafter(1.0, 0.0))
    noise = PeriodicNoise.geometric(10**4, b)
    z = noise.sample(400, rng=np.random.default_rng(7))
    magnitude = np.array([abs(int(v)) for v in z], dtype=float)
    assert magnitude.max() > 2**63
    median = 10**4 * np.log(2) / -np.log1p(b - 1.0)
    assert 0.8 * median < np.median(magnitude) < 1.25 * median
    assert 0.4 < np.mean([int(v) > 0 for v in z]) < 0.6

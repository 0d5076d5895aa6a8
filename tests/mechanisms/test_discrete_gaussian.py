"""Exact discrete Laplace / Gaussian (CKS 2020) and the exact coins under them."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpopt.mechanisms.discrete_gaussian import DiscreteGaussian, DiscreteLaplace, bernoulli_exp, uniform_below
from dpopt.mechanisms.integer_noise import PeriodicNoise
from dpopt.sampling import SecureRandom
from dpopt.validation import InvalidParameterError


def _chisquare(draws: np.ndarray, pmf) -> float:
    values, counts = np.unique(draws, return_counts=True)
    keep = counts >= 20
    expected = pmf(values[keep])
    return stats.chisquare(counts[keep], expected / expected.sum() * counts[keep].sum()).pvalue


@pytest.mark.parametrize("n,d", [(0, 1), (1, 3), (2, 3), (1, 1), (5, 2), (7, 3)])
def test_bernoulli_exp_has_probability_exp_minus_gamma(n, d):
    draws = bernoulli_exp(np.full(200_000, n), np.full(200_000, d), np.random.default_rng(n * 10 + d))
    assert stats.binomtest(int(draws.sum()), draws.size, math.exp(-n / d)).pvalue > 1e-4


def test_uniform_below_is_uniform_for_awkward_bounds():
    rng = np.random.default_rng(3)
    draws = uniform_below(np.full(300_000, 7), rng)
    assert stats.chisquare(np.bincount(draws, minlength=7)).pvalue > 1e-4
    big = 3 * 2**60 + 1  # most words would be biased by a plain modulo
    top = uniform_below(np.full(100_000, big), rng)
    assert top.min() >= 0 and top.max() < big
    assert stats.kstest(top / big, "uniform").pvalue > 1e-4


@pytest.mark.parametrize("scale", [1, "3/2", 0.7, 20])
def test_discrete_laplace_matches_its_pmf_and_a_wrong_scale_is_rejected(scale):
    d = DiscreteLaplace(scale)
    draws = d.sample(200_000, rng=11)
    assert _chisquare(draws, d.pmf) > 1e-4
    wrong = DiscreteLaplace(Fraction(d.scale) * Fraction(11, 10))
    assert _chisquare(draws, wrong.pmf) < 1e-6


@pytest.mark.parametrize("sigma2", [1, "9/4", 30])
def test_discrete_gaussian_matches_its_pmf_and_a_wrong_variance_is_rejected(sigma2):
    d = DiscreteGaussian(sigma2)
    draws = d.sample(200_000, rng=5)
    assert _chisquare(draws, d.pmf) > 1e-4
    assert _chisquare(draws, DiscreteGaussian(Fraction(d.sigma2) * Fraction(12, 10)).pmf) < 1e-6


def test_secure_source_and_seeded_reproducibility():
    assert DiscreteGaussian(2).sample(50, rng=1).tolist() == DiscreteGaussian(2).sample(50, rng=1).tolist()
    assert DiscreteLaplace(2).sample(5, secure=True).shape == (5,)
    assert bernoulli_exp(np.array([1]), np.array([2]), SecureRandom()).dtype == bool


def test_periodic_noise_draws_exactly_from_its_pmf_including_the_tails():
    noise = PeriodicNoise.geometric(2, math.exp(-0.5))
    draws = noise.sample(300_000, rng=2)
    assert _chisquare(draws, noise.pmf) > 1e-4
    assert _chisquare(draws, PeriodicNoise.geometric(2, math.exp(-0.6)).pmf) < 1e-6


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "x", True, None, 2**50])
def test_bad_parameters_are_refused_naming_them(bad):
    with pytest.raises(InvalidParameterError, match="scale"):
        DiscreteLaplace(bad)
    with pytest.raises(InvalidParameterError, match="sigma2"):
        DiscreteGaussian(bad)


def test_a_variance_too_fine_for_64_bit_coins_is_refused_before_drawing():
    with pytest.raises(InvalidParameterError, match="sigma2"):
        DiscreteGaussian(0.3).sample(3, rng=1)  # 0.3 as a float has denominator 2**54
    assert DiscreteGaussian("3/10").sample(3, rng=1).shape == (3,)

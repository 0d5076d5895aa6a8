"""Randomized response: Eq. 12/13 matrices, exact privacy, and the LP optimum for one bit."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpopt
from dpopt.certificates import certify
from dpopt.mechanisms.randomized_response import RandomizedResponse, all_pairs, randomized_response_matrix


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_matrix_is_stochastic_and_exactly_epsilon_private(k, epsilon):
    x = randomized_response_matrix(k, epsilon)
    np.testing.assert_allclose(x.sum(axis=1), 1.0)
    assert certify(x, epsilon, pairs=all_pairs(k)).max_privacy_loss == pytest.approx(epsilon, rel=1e-12)
    assert x[0, 0] == pytest.approx(np.exp(epsilon) / (np.exp(epsilon) + k - 1))


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 3.0, 8.0])
def test_binary_randomized_response_is_the_lp_optimum_under_zero_one_loss(epsilon):
    problem = dpopt.CountQuery(n=1, epsilon=epsilon, loss="zero_one")
    lp = dpopt.solve(problem, "lp")
    rr = dpopt.solve(problem, "randomized_response")
    assert rr.objective == pytest.approx(lp.objective, rel=1e-9)
    assert rr.objective == pytest.approx(1 / (1 + np.exp(epsilon)), rel=1e-12)


def test_output_distribution_and_sampler():
    rr = RandomizedResponse(k=4, epsilon=1.0)
    prior = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(rr.output_distribution(prior), prior @ rr.matrix)
    draws = rr.sample(2, 40_000, rng=51)
    assert abs((draws == 2).mean() - rr.matrix[2, 2]) < 0.01


@given(k=st.integers(2, 8), epsilon=st.floats(1e-6, 700.0))
def test_matrix_meets_epsilon_at_any_budget(k, epsilon):
    """The small entry is 1 / (e^eps + k - 1) computed directly (found by fuzzing: 1 - p at eps = 18)."""
    assert certify(randomized_response_matrix(k, epsilon), epsilon, pairs=all_pairs(k)).ok

"""Privacy and utility metrics (Liu-Wu-Zhou) and the monotonicity checker (Definition 8)."""

import numpy as np
import pytest

from dpopt import metrics
from dpopt.mechanisms.exponential import ExponentialMechanism
from dpopt.mechanisms.gaussian import GaussianMechanism
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.mechanisms.laplace import LaplaceMechanism
from dpopt.mechanisms.randomized_response import RandomizedResponse
from dpopt.validation import InvalidParameterError

GRID = np.linspace(0.05, 5.0, 60)


def test_expected_estimation_error_of_the_geometric_mechanism_by_hand():
    x = geometric_matrix(2, 0.5)
    by_hand = np.array([x[0, 1] + 2 * x[0, 2], x[1, 0] + x[1, 2], 2 * x[2, 0] + x[2, 1]])
    np.testing.assert_allclose(metrics.expected_estimation_error(x), by_hand)


def test_entropy_and_normalised_entropy_known_values():
    assert metrics.entropy([0.5, 0.5]) == pytest.approx(1.0)
    assert metrics.entropy([1.0, 0.0, 0.0]) == 0.0
    assert metrics.normalized_entropy(np.full(8, 1 / 8)) == pytest.approx(1.0)
    assert metrics.one_minus_normalized_entropy([1.0, 0.0]) == pytest.approx(1.0)


def test_discrete_characteristic_modulus_matches_the_laplace_limit():
    # a fine grid of the Laplace density approximates its characteristic function
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=0.7)
    x = np.linspace(-80, 80, 160_001)
    p = mech.pdf(x) * (x[1] - x[0])
    assert metrics.characteristic_modulus(x, p / p.sum(), 1.0) == pytest.approx(float(mech.characteristic_modulus(1.0)), rel=1e-5)


def test_losses_and_privacy_loss():
    x = geometric_matrix(3, 0.25)
    table = np.abs(np.arange(4)[:, None] - np.arange(4)[None, :]).astype(float)
    per_row = metrics.expected_loss(x, table)
    assert metrics.worst_case_loss(x, table) == pytest.approx(per_row.max())
    assert metrics.average_loss(x, table, np.full(4, 0.25)) == pytest.approx(per_row.mean())
    assert metrics.privacy_loss(x) == pytest.approx(-np.log(0.25))
    with pytest.raises(InvalidParameterError, match="'loss'"):
        metrics.expected_loss(x, table[:2])


def test_checker_finds_a_violation_where_there_is_one():
    report = metrics.check_monotonicity(lambda e: np.sin(e), GRID, direction="increasing")
    assert not report.monotone
    assert report.violations["epsilon_from"].iloc[0] >= np.pi / 2 - 0.1


def test_the_papers_families_are_monotone():
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    table = metrics.monotonicity_table(
        {
            "laplace EEE": (lambda e: LaplaceMechanism(sensitivity=2.0, epsilon=e).expected_absolute_error(), "decreasing"),
            "laplace |phi(1)|": (lambda e: float(LaplaceMechanism(sensitivity=2.0, epsilon=e).characteristic_modulus(1.0)), "increasing"),
            "gaussian EEE": (lambda e: GaussianMechanism(sensitivity=1.0, epsilon=e, delta=0.1, calibration="pdp").expected_absolute_error(), "decreasing"),
            "gaussian entropy": (lambda e: GaussianMechanism(sensitivity=1.0, epsilon=e, delta=0.1, calibration="pdp").differential_entropy(), "decreasing"),
            "exponential entropy": (lambda e: float(metrics.entropy(ExponentialMechanism(utility=[[1, 4, 3, 1, 1]], epsilon=e).matrix[0])), "decreasing"),
            "k-ary RR 1-NE": (lambda e: float(metrics.one_minus_normalized_entropy(RandomizedResponse(k=4, epsilon=e).output_distribution(pi))), "increasing"),
        },
        GRID,
    )
    assert table["monotone"].all(), table


def test_uniform_prior_makes_rr_entropy_flat():
    # Liu-Wu-Zhou Fig. 12: with pi uniform the output is uniform at every epsilon
    values = [float(metrics.entropy(RandomizedResponse(k=4, epsilon=e).output_distribution(np.full(4, 0.25)))) for e in GRID]
    np.testing.assert_allclose(values, 2.0)


def test_bad_grids_rejected():
    with pytest.raises(InvalidParameterError, match="'epsilons'"):
        metrics.check_monotonicity(lambda e: e, [1.0, 0.5])
    with pytest.raises(InvalidParameterError, match="'direction'"):
        metrics.check_monotonicity(lambda e: e, [0.5, 1.0], direction="up")

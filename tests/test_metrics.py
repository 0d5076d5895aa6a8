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


NAN = float("nan")
GOOD = [[0.5, 0.5], [0.25, 0.75]]
BAD_INPUTS = [  # until 2026-11-29 each returned a number (or nan, or a raw numpy error) instead of one refusal
    (lambda: metrics.expected_estimation_error([[0.5, NAN], [0.5, 0.5]]), "'matrix'"),
    (lambda: metrics.expected_estimation_error([[1.5, -0.5], [0.5, 0.5]]), "'matrix'"),
    (lambda: metrics.expected_estimation_error([[0.5, 0.9], [0.5, 0.5]]), "'matrix'"),
    (lambda: metrics.expected_estimation_error("ab"), "'matrix'"),
    (lambda: metrics.expected_estimation_error(GOOD, inputs=[NAN, 1]), "'inputs'"),
    (lambda: metrics.entropy([0.5, 0.5, 0.5]), "'probabilities'"),
    (lambda: metrics.entropy([NAN, 1.0]), "'probabilities'"),  # was 0 bits
    (lambda: metrics.entropy([]), "'probabilities'"),
    (lambda: metrics.entropy([0.5, 0.5], base=1), "'base'"),
    (lambda: metrics.entropy([0.5, 0.5], base=-2), "'base'"),
    (lambda: metrics.normalized_entropy([0.9, 0.9]), "'probabilities'"),
    (lambda: metrics.output_distribution(GOOD, [NAN, 1]), "'prior'"),
    (lambda: metrics.characteristic_modulus([0, 1], [0.5, 0.5], NAN), "'t'"),
    (lambda: metrics.characteristic_modulus([0, 1, 2], [0.5, 0.5], 1.0), "'probabilities'"),
    (lambda: metrics.characteristic_modulus([0, 1], [5, 5], 1.0), "'probabilities'"),
    (lambda: metrics.expected_loss(GOOD, [[NAN, 1], [0, 1]]), "'loss'"),
    (lambda: metrics.worst_case_loss(GOOD, GOOD, rows=[5]), "'rows'"),
    (lambda: metrics.worst_case_loss(GOOD, GOOD, rows=[-1]), "'rows'"),  # was row -1, the last
    (lambda: metrics.worst_case_loss(GOOD, GOOD, rows=[]), "'rows'"),
    (lambda: metrics.average_loss(GOOD, GOOD, [2, -1]), "'prior'"),
    (lambda: metrics.privacy_loss([[0.5, NAN], [0.5, 0.5]]), "'matrix'"),
    (lambda: metrics.check_monotonicity(lambda e: NAN if e > 1 else 1 / e, [0.5, 1, 2, 3]), "'metric'"),  # was "monotone"
    (lambda: metrics.check_monotonicity(lambda e: 1.0, [0.5, NAN, 2]), "'epsilons'"),  # was "monotone"
    (lambda: metrics.check_monotonicity(lambda e: e, [0.5, 1], tolerance=NAN), "'tolerance'"),  # was "monotone"
    (lambda: metrics.check_monotonicity(lambda e: "x", [0.5, 1]), "'metric'"),
    (lambda: metrics.check_monotonicity(3, [0.5, 1]), "'metric'"),
    (lambda: metrics.monotonicity_table({"a": 3}, [0.5, 1]), "'metrics'"),
]


@pytest.mark.parametrize("call,field", BAD_INPUTS, ids=[f"case{i}" for i in range(len(BAD_INPUTS))])
def test_bad_inputs_are_refused_naming_the_field(call, field):
    with pytest.raises(InvalidParameterError, match=field):
        call()


def test_a_metric_at_a_scalar_t_is_accepted_by_the_checker():
    """characteristic_modulus at a scalar t returns a 0-d array, which the checker takes as its number."""
    report = metrics.check_monotonicity(lambda e: metrics.characteristic_modulus([0, 1], [1 / (1 + np.exp(e)), 1 - 1 / (1 + np.exp(e))], 1.0),
                                        [0.5, 1.0, 2.0], direction="increasing")
    assert report.monotone and report.values.iloc[-1] > report.values.iloc[0]

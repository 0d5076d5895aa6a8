"""Real values released on a grid with exact discrete noise (dpopt.mechanisms.grid_release)."""

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpopt
from dpopt.mechanisms.discrete_gaussian import DiscreteGaussian
from dpopt.mechanisms.gaussian import analytic_sigma
from dpopt.mechanisms.grid_release import (GridGaussian, GridLaplace, discrete_gaussian_delta, grid_index, grid_points, grid_sensitivity,
                                          rounded_laplace)
from dpopt.validation import InvalidParameterError
from tests.distributions import integer_fit_pvalue, laplace_cdf
from tests.conftest import examples

finite = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=examples(300), deadline=None)
@given(a=finite, shift=st.floats(0, 50), sensitivity=st.floats(1e-3, 50), grid=st.floats(1e-2, 10))
def test_neighbours_grid_indices_differ_by_at_most_s(a, shift, sensitivity, grid):
    """|a - b| <= Delta (exactly, as rationals) implies |index(a) - index(b)| <= ceil(Delta / g): the rounding's only cost."""
    b = a + shift
    if Fraction(b) - Fraction(a) > Fraction(sensitivity):
        return
    assert abs(grid_index(b, grid) - grid_index(a, grid)) <= grid_sensitivity(sensitivity, grid)


def test_grid_index_rounds_half_up_exactly_where_float_division_does_not():
    assert grid_index(0.15, 0.1) == math.floor(Fraction(0.15) / Fraction(0.1) + Fraction(1, 2))
    assert grid_index(2.5, 1.0) == 3 and grid_index(-2.5, 1.0) == -2  # floor(x + 1/2): shift-equivariant
    assert grid_index(3.5, 1.0) - grid_index(2.5, 1.0) == 1


@pytest.mark.parametrize("sensitivity,epsilon,grid", [(1.0, 1.0, 0.1), (3.0, 0.3, 1.0), (1.0, 2.0, 0.3), (0.7, 0.05, 0.01)])
def test_grid_laplace_loss_is_exactly_at_most_epsilon_and_within_2_to_minus_20(sensitivity, epsilon, grid):
    mech = GridLaplace(sensitivity, epsilon, grid)
    assert Fraction(mech.steps) / mech.scale <= Fraction(epsilon)
    assert mech.privacy_loss() >= epsilon * (1 - 2.0**-19)


def _hockey_stick(sigma2: float, epsilon: float, steps: int) -> float:
    """delta(epsilon) by its definition, sum_z max(P(z) - e^eps P(z - S), 0), on the pmf (the independent route)."""
    width = int(40 * math.sqrt(sigma2)) + 40 + steps
    z = np.arange(-width, width + 1)
    p = DiscreteGaussian(Fraction(sigma2).limit_denominator(2**20)).pmf(z, terms=width)
    q = DiscreteGaussian(Fraction(sigma2).limit_denominator(2**20)).pmf(z - steps, terms=width)
    return float(np.maximum(p - math.exp(epsilon) * q, 0).sum())


@pytest.mark.parametrize("sigma2,epsilon,steps", [(4.0, 1.0, 1), (30.0, 0.5, 2), (100.0, 1.0, 3), (2.25, 2.0, 1)])
def test_cks_theorem_7_delta_equals_the_hockey_stick_divergence(sigma2, epsilon, steps):
    assert discrete_gaussian_delta(sigma2, epsilon, steps) == pytest.approx(_hockey_stick(sigma2, epsilon, steps), rel=1e-9, abs=1e-15)


def _hockey_stick_decimal(sigma2: float, epsilon: float, steps: int) -> Decimal:
    """The hockey-stick divergence in 40-digit decimal arithmetic (rounding-free for these purposes)."""
    getcontext().prec = 40
    width = int(40 * math.sqrt(sigma2)) + 40 + steps
    two_sigma2, e = 2 * Decimal(sigma2), Decimal(epsilon).exp()
    weight = {z: (-(Decimal(z) ** 2) / two_sigma2).exp() for z in range(-width - steps, width + 1)}
    total = sum(weight[z] for z in range(-width, width + 1))
    return sum(max(weight[z] - e * weight[z - steps], Decimal(0)) for z in range(-width, width + 1)) / total


@pytest.mark.parametrize("sigma2,epsilon,steps", [(10_000.0, 0.05, 1), (20_000.0, 0.05, 1), (5000.0, 0.1, 1), (2000.0, 0.5, 1),
                                                  (8000.0, 0.2, 3)])
def test_cks_delta_keeps_its_digits_where_delta_is_tiny(sigma2, epsilon, steps):
    """The two tails of Theorem 7 cancel where delta is small; the paired sum keeps 13+ digits (the difference kept ~11)."""
    exact = _hockey_stick_decimal(sigma2, epsilon, steps)
    assert float(exact) < 1e-9
    assert discrete_gaussian_delta(sigma2, epsilon, steps) == pytest.approx(float(exact), rel=1e-13, abs=0.0)


def test_grid_gaussian_meets_delta_and_matches_the_continuous_calibration_on_a_fine_grid():
    mech = GridGaussian(1.0, 1.0, 1e-5, 0.1)
    assert mech.achieved_delta <= 1e-5
    assert discrete_gaussian_delta(float(mech.sigma2) - 1 / 1024, 1.0, mech.steps) > 1e-5  # the smallest on the lattice
    continuous = (analytic_sigma(1.0, 1.0, 1e-5) / 0.1) ** 2
    assert float(mech.sigma2) == pytest.approx(continuous, rel=1e-3)


@pytest.mark.parametrize("mechanism,extra", [("discrete_laplace", {}), ("discrete_gaussian", {"delta": 1e-6})])
def test_calibrated_grid_releases_are_exact_noise_around_the_rounded_value(mechanism, extra):
    solution = dpopt.solve(dpopt.Calibration(mechanism=mechanism, epsilon=0.8, sensitivity=1.0, grid=0.25, **extra))
    assert solution.certificate.ok and solution.summary()["sampler"].startswith("exact")
    draws = solution.sample(3.3, 100_000, rng=3)
    steps = np.round(draws / 0.25).astype(int) - grid_index(3.3, 0.25)
    assert np.allclose(draws, 0.25 * (steps + grid_index(3.3, 0.25)))
    values, counts = np.unique(steps, return_counts=True)
    keep = counts >= 20
    if mechanism == "discrete_laplace":
        t = float(Fraction(solution.parameters["discrete_scale"]))
        pmf = np.exp(-np.abs(values[keep]) / t)
    else:
        pmf = DiscreteGaussian(solution.parameters["discrete_sigma2"]).pmf(values[keep])
    assert stats.chisquare(counts[keep], pmf / pmf.sum() * counts[keep].sum()).pvalue > 1e-4
    assert dpopt.audit(solution, draws=30_000, confidence=0.999).passed


@pytest.mark.parametrize("mechanism,extra", [("discrete_laplace", {}), ("discrete_gaussian", {"delta": 1e-6}), ("geometric", {})])
def test_a_true_value_beyond_int64_cells_is_released_not_an_overflow(mechanism, extra):
    """4e18 on a grid of 0.25 is cell 1.6e19, beyond int64: adding the noise to it raised an
    OverflowError (2026-11-28). The releases are the grid points nearest the exact cells."""
    grid = {} if mechanism == "geometric" else {"grid": 0.25}
    solution = dpopt.solve(dpopt.Calibration(mechanism=mechanism, epsilon=0.8, sensitivity=1.0, **grid, **extra))
    true = 4 * 10**18
    draws = solution.sample(true, 50, rng=5)
    assert np.all(np.abs(np.array([float(d) for d in draws]) - true) < 2e3)
    if mechanism == "geometric":  # integer noise: the releases are exact integers
        assert all(abs(int(d) - true) < 200 for d in draws) and len({int(d) for d in draws}) > 3


def test_grid_is_refused_where_it_means_nothing_or_is_too_fine():
    with pytest.raises(InvalidParameterError, match="grid"):
        dpopt.Calibration(mechanism="gaussian_analytic", epsilon=1.0, delta=1e-5, grid=0.1)  # only laplace and staircase are rounded
    with pytest.raises(InvalidParameterError, match="grid"):
        dpopt.Calibration(mechanism="discrete_laplace", epsilon=1.0, grid=1e-6)
    for bad in (0.0, -1.0, float("nan"), "0.1"):
        with pytest.raises(InvalidParameterError, match="grid"):
            dpopt.Calibration(mechanism="discrete_laplace", epsilon=1.0, grid=bad)


def _rounded_laplace_law(mean: float, scale: float, grid: float, cells: np.ndarray) -> np.ndarray:
    """P(nearest grid point = j g) from the Laplace cdf (an independent route)."""
    return laplace_cdf(cells * grid + grid / 2 - mean, scale) - laplace_cdf(cells * grid - grid / 2 - mean, scale)


@pytest.mark.parametrize("mean, scale, grid", [
    (0.3, 1.0, 0.37), (-12.5, 4.0, 3.0), (1e-3, 0.2, 0.5), (7.0, 50.0, 0.5),
    (0.25, 1.0, 0.5),  # the mean on a cell boundary (f = 0)
])
def test_rounded_laplace_follows_the_law_of_the_rounded_release(mean, scale, grid):
    j = rounded_laplace(Fraction(mean), scale, grid, 30_000, np.random.default_rng(5)).astype(np.int64)
    assert integer_fit_pvalue(j, lambda cells: _rounded_laplace_law(mean, scale, grid, cells)) > 1e-3


def test_rounded_laplace_without_noise_is_the_nearest_point_of_the_exact_mean():
    # 1.25 = 2.5 grid steps of 0.5: a tie rounds up; 2**-60 below it (not a double) rounds down
    assert list(rounded_laplace(Fraction(5, 4), 0.0, 0.5, 2, np.random.default_rng(0))) == [3, 3]
    assert list(rounded_laplace(Fraction(5, 4) - Fraction(1, 2**60), 0.0, 0.5, 1, np.random.default_rng(0))) == [2]


def test_grid_points_print_as_the_decimal_grid_the_user_wrote():
    np.testing.assert_array_equal(grid_points(np.array([33, -7, 0]), 0.1), [3.3, -0.7, 0.0])
    assert grid_points(np.array([51083]), 0.001)[0] == 51.083
    huge = np.array([3 * 10**30, -(2**70)], dtype=object)  # beyond int64: rational arithmetic
    np.testing.assert_array_equal(grid_points(huge, 0.25), [7.5e29, -(2.0**68)])


@settings(max_examples=examples(300), deadline=None)
@given(st.floats(1e-12, 1e6), st.lists(st.integers(-(2**60), 2**60), min_size=1, max_size=5))
def test_grid_points_are_the_nearest_doubles_to_j_times_the_shortest_decimal(grid, cells):
    decimal = Fraction(repr(grid))
    expected = [float(j * decimal) for j in cells]
    np.testing.assert_array_equal(grid_points(np.array(cells, dtype=np.int64), grid), expected)
    np.testing.assert_array_equal(grid_points(np.array(cells, dtype=object), grid), expected)


def test_a_variance_beyond_the_lattice_is_refused_naming_epsilon_too():
    # at epsilon = 1e-9 the refusal named only delta and the grid; epsilon is what a user changes
    from dpopt.mechanisms.grid_release import GridGaussian
    from dpopt.validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=r"delta.*at epsilon = 1e-09.*a larger delta or epsilon"):
        GridGaussian(sensitivity=1.0, epsilon=1e-9, delta=1e-5)

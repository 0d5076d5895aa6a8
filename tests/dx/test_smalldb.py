"""Problem (8) (Perrier et al., SmallDB's pre-processing) solved exactly, checked by independent routes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dpopt.dx.metric import DXMetric
from dpopt.dx.smalldb import lipschitz_approximation, smalldb_bound, smalldb_gamma, smalldb_preprocessing
from tests.conftest import examples


def _metric(points: np.ndarray, epsilon: float) -> DXMetric:
    return DXMetric.euclidean(points, epsilon)


def _lp_error(q: np.ndarray, d: np.ndarray, lipschitz: float) -> float:
    """min ||v - q||_inf over L-Lipschitz v, as an LP (the independent route; scipy's HiGHS, no cvxpy compile per call)."""
    k = q.size
    i, j = np.triu_indices(k, 1)
    eye, pair = np.eye(k), np.zeros((i.size, k))
    pair[np.arange(i.size), i], pair[np.arange(i.size), j] = 1.0, -1.0
    ones, zeros = np.ones((k, 1)), np.zeros((i.size, 1))
    a_ub = np.block([[eye, -ones], [-eye, -ones], [pair, zeros], [-pair, zeros]])
    b_ub = np.concatenate([q, -q, lipschitz * d[i, j], lipschitz * d[i, j]])
    cost = np.zeros(k + 1)
    cost[-1] = 1.0
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=[(None, None)] * k + [(0, None)], method="highs")
    assert result.status == 0, result.message
    return float(result.fun)


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10_000), lipschitz=st.floats(0.0, 3.0))
def test_mcshane_whitney_midpoint_is_the_best_lipschitz_approximation(seed, lipschitz):
    rng = np.random.default_rng(seed)
    metric = _metric(rng.random((6, 2)), 1.0)
    q = rng.random(6) * 4
    v, error = lipschitz_approximation(q, metric.matrix, lipschitz)
    i, j = np.triu_indices(6, 1)
    assert np.all(np.abs(v[i] - v[j]) <= lipschitz * metric.matrix[i, j] + 1e-9)
    assert np.abs(v - q).max() == pytest.approx(error, abs=1e-9)
    assert error == pytest.approx(_lp_error(q, metric.matrix, lipschitz), abs=1e-7)


@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 500))
def test_problem_8_optimum_is_global_against_a_grid_of_scales(seed, n):
    """F(c) = n E(c) + (n^2 gamma c)^(1/3) on a fine grid of c, E by LPs (not the closed form), never beats the optimum."""
    rng = np.random.default_rng(seed)
    metric = _metric(rng.random((5, 2)), float(rng.uniform(0.5, 3)))
    queries = rng.random((3, 5)) * rng.uniform(0.5, 5)
    gamma = smalldb_gamma(5, 3, 0.05)
    result = smalldb_preprocessing(queries, metric, n, gamma)
    assert result.objective == pytest.approx(smalldb_bound(result.transformed, result.scale, queries, n, gamma), rel=1e-9)
    i, j = np.triu_indices(5, 1)  # Theorem 5's condition on every transformed query
    assert result.scale > 0 and np.all(np.abs(result.transformed[:, i] - result.transformed[:, j]) <= metric.matrix[i, j] * (1 + 1e-9))
    top = max(result.scale * 2, float((np.abs(queries[:, :, None] - queries[:, None, :]).max(axis=0) / np.where(metric.matrix > 0, metric.matrix, np.inf)).max()) * 1.2)
    for c in np.linspace(0, top, 25)[1:]:  # c > 0: at c = 0 the release c q' is 0
        value = n * max(_lp_error(row, metric.matrix, c) for row in queries) + np.cbrt(n * n * gamma * c)
        # the infimum over c > 0 is the best breakpoint or the limit c -> 0+ (concave between breakpoints)
        assert min(result.objective, result.limit_at_zero) <= value + 1e-6 * max(1.0, value)


def test_problem_8_reports_the_limit_at_zero_noise():
    """lim F(c) as c -> 0+ is n range(q) / 2 (q' a huge constant, never attained)."""
    metric = DXMetric.euclidean(np.array([[0.0, 0.0], [1.0, 0.0]]), 0.01)
    result = smalldb_preprocessing(np.array([[0.0, 1.0]]), metric, n=10, gamma=smalldb_gamma(2, 1, 0.05))
    assert result.limit_at_zero == pytest.approx(10 * 0.5)
    assert result.objective >= result.limit_at_zero - 1e-12 or result.scale > 0


# -- Algorithm 1 -----------------------------------------------------------------------------


def _toy(seed: int = 0):
    rng = np.random.default_rng(seed)
    metric = DXMetric.euclidean(rng.random((4, 2)) * 3, 1.0)
    queries = rng.random((3, 4)) * 2
    result = smalldb_preprocessing(queries, metric, n=30, gamma=smalldb_gamma(4, 3, 0.05))
    return metric, queries, result


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_smalldb_is_dx_private_on_every_neighbouring_pair(seed):
    """Theorem 5, measured: moving one record from i to j changes the log probability of every synthetic
    database by at most d_X(i, j)."""
    from dpopt.dx.smalldb import SmallDB

    metric, _, result = _toy(seed)
    mech = SmallDB(result.transformed, result.scale, metric, synthetic_size=4)
    x = np.array([10.0, 5.0, 8.0, 7.0])
    _, base = mech.probabilities(x)
    for i in range(4):
        for j in range(4):
            if i != j:
                moved = x.copy()
                moved[i] -= 1
                moved[j] += 1
                _, other = mech.probabilities(moved)
                assert np.max(np.abs(np.log(base) - np.log(other))) <= metric.matrix[i, j] * (1 + 1e-9)


def test_smalldb_law_matches_brute_force_enumeration():
    """The vectorised law against a loop over every synthetic database written out by hand."""
    import itertools

    from dpopt.dx.smalldb import SmallDB

    metric, _, result = _toy(3)
    mech = SmallDB(result.transformed, result.scale, metric, synthetic_size=3)
    x = np.array([4.0, 0.0, 9.0, 2.0])
    y, p = mech.probabilities(x)
    weights = {}
    for a in itertools.product(range(4), repeat=3):
        h = tuple(np.bincount(a, minlength=4))
        gap = max(abs(sum(q[k] * x[k] for k in range(4)) - (15 / 3) * sum(q[k] * h[k] for k in range(4))) for q in result.transformed)
        weights[h] = np.exp(-gap / 2)
    total = sum(weights.values())
    assert len(weights) == len(y)
    for row, prob in zip(y, p):
        assert prob == pytest.approx(weights[tuple(int(v) for v in row)] / total, rel=1e-10)
    draws = mech.sample(x, 5000, rng=1)
    assert draws.shape == (5000, 4) and np.all(draws.sum(axis=1) == 3)


def test_smalldb_refuses_non_lipschitz_queries_and_huge_enumerations():
    from dpopt.dx.smalldb import SmallDB
    from dpopt.validation import InvalidParameterError

    metric, queries, result = _toy(0)
    with pytest.raises(InvalidParameterError, match="transformed"):
        SmallDB(result.transformed * 10, result.scale, metric, synthetic_size=3)
    with pytest.raises(InvalidParameterError, match="synthetic_size"):
        SmallDB(result.transformed, result.scale, metric, synthetic_size=2000)

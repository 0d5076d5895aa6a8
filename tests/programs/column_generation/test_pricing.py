"""Pricing (:mod:`dpopt.programs.column_generation.pricing`) against the dense Lagrangian costs."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import dpopt
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.programs.column_generation import forms, pricing, starts
from tests.programs.column_generation.examples import NAMED
from tests.strategies import monotone_losses, side_information
from tests.conftest import examples


@settings(max_examples=examples(60))
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.just(n), st.floats(0.05, 0.95), st.sampled_from(NAMED + ["table"]), monotone_losses(n),
            side_information(n), st.integers(0, 2**32 - 1),
        )
    )
)
def test_pricing_equals_the_dense_lagrangian_costs(case):
    n, alpha, name, table, s, seed = case
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss=table if name == "table" else name, side_information=s)
    rng = np.random.default_rng(seed)
    lam = np.zeros(n + 1)
    lam[list(problem.support)] = rng.random(len(problem.support))
    lam /= lam.sum()
    # C[r, r'] = sum_i G[i, r] lambda_i l(i, r'), from the geometric matrix itself
    costs = geometric_matrix(n, alpha).T @ (lam[:, None] * problem.loss_matrix)
    master = sparse.csr_array((rng.random((n + 1, n + 1)) < 0.4).astype(float))
    scale = np.abs(costs).max() + 1
    for dense_up_to in (n, n - 1):  # absolute loss: the dense costs, then the sweeps
        with mock.patch.object(pricing, "DENSE_PRICING_UP_TO", dense_up_to):
            np.testing.assert_allclose(pricing.lagrangian_costs(problem, lam), costs, atol=1e-12 * scale)
            _check_pricing(pricing.price_columns(problem, lam, master), costs, master, scale)


def _check_pricing(pricing, costs, master, scale):
    n = costs.shape[0] - 1
    np.testing.assert_allclose(pricing.row_min, costs.min(axis=1), atol=1e-11 * scale)
    np.testing.assert_allclose(costs[np.arange(n + 1), pricing.row_argmin], costs.min(axis=1), atol=1e-11 * scale)
    in_master = np.where(master.toarray() > 0, costs, np.inf).min(axis=1)
    finite = np.isfinite(in_master)
    np.testing.assert_allclose(pricing.master_min[finite], in_master[finite], atol=1e-11 * scale)


@pytest.mark.parametrize(("n", "alpha", "where"), [(800, 0.05, "ends"), (900, 0.3, "random"), (750, 0.995, "random"), (701, 0.9, "one")])
def test_the_median_pricing_equals_the_dense_costs_where_kernel_weights_underflow(n, alpha, where):
    """Absolute loss beyond DENSE_PRICING_UP_TO: medians by bisection on closed-form partial
    sums, against the dense costs, with multipliers over many orders of magnitude (alpha^400
    underflows at alpha = 0.05, so the middle rows' weights are 0)."""
    rng = np.random.default_rng(n)
    support = {"ends": [0, n], "one": [n // 3], "random": sorted(rng.choice(n + 1, n // 7, replace=False).tolist())}[where]
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="absolute", side_information=support)
    lam = np.zeros(n + 1)
    lam[support] = 10.0 ** rng.uniform(-12, 0, len(support))
    lam /= lam.sum()
    costs = pricing.lagrangian_costs(problem, lam)
    master = sparse.csr_array((rng.random((n + 1, n + 1)) < 0.01).astype(float) + sparse.eye_array(n + 1))
    master.data[:] = 1.0
    assert n > pricing.DENSE_PRICING_UP_TO
    _check_pricing(pricing.price_columns(problem, lam, master), costs, master, np.abs(costs).max() + 1)


@settings(max_examples=examples(60))
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.floats(0.05, 0.99), side_information(n), st.integers(0, 2**32 - 1))))
def test_absolute_loss_rows_are_priced_best_at_the_side_neighbours_or_beyond(case):
    """Why the first master holds side_neighbours: for any multipliers on S every row has a
    cheapest output in S; side_neighbours names the nearest count of S on each side of a row."""
    n, alpha, side, seed = case
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="absolute", side_information=side)
    lam = np.zeros(n + 1)
    lam[side] = np.random.default_rng(seed).random(len(side)) + 1e-3
    costs = pricing.lagrangian_costs(problem, lam)
    scale = np.abs(costs).max()
    assert np.all(costs[:, side].min(axis=1) <= costs.min(axis=1) + 1e-12 * scale)
    rows, targets = starts.side_neighbours(problem)
    support = np.array(side)
    reach = starts.NEIGHBOUR_REACH_SCALES * forms.noise_scale(alpha)
    for r in range(n + 1):
        mine = np.sort(targets[rows == r])
        below, above = support[support < r], support[support >= r]
        expected = [below[-1] if below.size else above[0], above[0] if above.size else below[-1]]
        assert mine.tolist() == sorted(t for t in expected if abs(t - r) <= reach)

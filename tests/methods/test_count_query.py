import numpy as np
import pytest

import dpopt
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.methods.count_query import row_losses, worst_case_loss


def test_row_losses_only_over_side_information():
    problem = dpopt.CountQuery(n=3, alpha=0.25, side_information=[1, 2])
    losses = row_losses(problem, geometric_matrix(3, 0.25))
    assert list(losses.index) == [1, 2]
    assert losses.loc[1] == pytest.approx(0.2 + 0.15 + 2 * 0.05)


def test_geometric_is_an_upper_bound_and_remap_never_hurts():
    problem = dpopt.CountQuery(n=10, alpha=0.7, loss="squared")
    geometric = dpopt.solve(problem, "geometric")
    optimum = dpopt.solve(problem)
    assert not geometric.exact and geometric.objective >= optimum.objective - 1e-9
    assert geometric.objective == pytest.approx(worst_case_loss(problem, geometric_matrix(10, 0.7)))


def test_side_information_lowers_the_optimum():
    full = dpopt.solve(dpopt.CountQuery(n=10, alpha=0.6)).objective
    known = dpopt.solve(dpopt.CountQuery(n=10, alpha=0.6, side_information={"lower": 4, "upper": 6})).objective
    assert known < full


def test_optimum_grows_with_alpha():
    values = [dpopt.solve(dpopt.CountQuery(n=8, alpha=a)).objective for a in (0.2, 0.5, 0.8)]
    assert np.all(np.diff(values) > 0)

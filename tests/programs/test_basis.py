"""An LP's solution recomputed from HiGHS's optimal basis (:mod:`dpopt.programs.basis`)."""

from __future__ import annotations

import highspy
import numpy as np
import pytest
from scipy import sparse

from dpopt.programs.basis import basic_solution
from dpopt.solvers import new_highs


def _covering_lp(seed: int, rows: int = 30, columns: int = 80) -> tuple[sparse.csc_array, np.ndarray, np.ndarray]:
    """min c x, A x >= b, x >= 0 with an identity block (always feasible and bounded)."""
    rng = np.random.default_rng(seed)
    identity = sparse.hstack([sparse.eye_array(rows), sparse.csc_array((rows, columns - rows))])
    matrix = sparse.csc_array(sparse.random_array((rows, columns), density=0.2, rng=rng) + identity)
    return matrix, rng.uniform(0.1, 1.0, columns), rng.uniform(1.0, 2.0, rows)


def _solved(matrix: sparse.csc_array, costs: np.ndarray, bounds: np.ndarray, options: dict[str, object]) -> highspy.Highs:
    rows, columns = matrix.shape
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = columns, rows
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = costs, np.zeros(columns), np.full(columns, np.inf)
    lp.row_lower_, lp.row_upper_ = bounds, np.full(rows, np.inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = matrix.indptr, matrix.indices, matrix.data
    h = new_highs(options)
    h.passModel(lp)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h


@pytest.mark.parametrize("options", [{"solver": "simplex"}, {"solver": "ipm", "run_crossover": "on"}], ids=["simplex", "ipm+crossover"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_basis_gives_highs_own_solution(options, seed):
    """After interior point + crossover HiGHS holds an "alien" basis, on which its own
    getBasicVariables ended the process with a segmentation fault (highspy 1.16.0; found by
    the explore profile through a column-generation master solved by "ipm"). The basis is
    read from its statuses instead, and the solve reproduces HiGHS's values and duals."""
    matrix, costs, bounds = _covering_lp(seed)
    h = _solved(matrix, costs, bounds, options)
    x, y = basic_solution(h, matrix, costs, bounds)
    solution = h.getSolution()
    np.testing.assert_allclose(x, solution.col_value, atol=1e-9)
    np.testing.assert_allclose(y, solution.row_dual, atol=1e-9)
    assert costs @ x == pytest.approx(bounds @ y, rel=1e-12)  # strong duality on the recomputed pair

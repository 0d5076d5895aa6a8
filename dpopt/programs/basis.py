"""An LP's solution and duals recomputed from HiGHS's optimal basis, to double precision.

HiGHS's primal values and duals are only as good as its tolerances on the *scaled* LP:
rows missed by up to 4e-7 after hundreds of basis updates along geometric chains, bounds
left ~1e-10 short. Where a certificate needs better (a 1e-9 relative gap on an optimum
near 0, or near 1e-4), the optimal basis is kept and its square system solved again with
SuperLU (``B x_B = b - N x_N``, ``B^T y = c_B``; one factorisation for both) plus
iterative refinement. A fresh HiGHS factorisation of the same basis is no cure: its
pivot order can run a chain backwards, dividing by alpha at every step, while SuperLU's
partial pivoting takes the chains' unit diagonal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import splu

__all__ = ["basic_solution"]


def basic_solution(h: Any, matrix: sparse.csc_array, costs: np.ndarray, row_bound: np.ndarray,
                   refinement_steps: int = 2) -> tuple[np.ndarray, np.ndarray] | None:
    """Column values and row duals of the LP's current basis, or None if it is numerically singular.

    Parameters
    ----------
    h : highspy.Highs
        Holding the optimal basis of the LP ``matrix`` (as passed to it).
    matrix : scipy.sparse.csc_array
        The constraint matrix.
    costs : numpy.ndarray
        Column costs.
    row_bound : numpy.ndarray
        The bound each row sits at when its slack is non-basic.
    refinement_steps : int
        Steps of iterative refinement after the LU solve.

    Non-basic columns must sit at 0 (a lower bound of 0, or free); every use in dpopt
    has only such columns.
    """
    # the basis's statuses, not h.getBasicVariables(): after interior point + crossover HiGHS
    # holds an "alien" basis it has not factorised, and getBasicVariables then ended the
    # process with a segmentation fault (highspy 1.16.0; tests/programs/test_basis.py)
    basis = h.getBasis()
    if not basis.valid:
        return None
    basic = np.flatnonzero(_is_basic(basis.col_status))
    tight = np.flatnonzero(~_is_basic(basis.row_status))  # rows whose slack is non-basic
    if basic.size != tight.size:
        return None
    system = matrix[:, basic][tight].tocsc()
    try:
        factors = splu(system)
    except RuntimeError:
        return None
    x = np.zeros(matrix.shape[1])
    x[basic] = _refined_solve(factors, system, row_bound[tight], refinement_steps)
    y = np.zeros(matrix.shape[0])
    y[tight] = _refined_solve(factors, system, costs[basic], refinement_steps, transpose=True)
    return x, y


def _is_basic(statuses: list[Any]) -> np.ndarray:
    """Which entries of a HiGHS status list are ``kBasic`` (0.08 s per million)."""
    import highspy

    return np.fromiter(map(int, statuses), dtype=np.int64, count=len(statuses)) == int(highspy.HighsBasisStatus.kBasic)


def _refined_solve(factors: Any, system: sparse.csc_array, rhs: np.ndarray, steps: int, *, transpose: bool = False) -> np.ndarray:
    """``system z = rhs`` (or its transpose) from LU factors, plus ``steps`` of iterative refinement."""
    operator = system.T if transpose else system
    trans = "T" if transpose else "N"
    z = factors.solve(rhs, trans=trans)
    for _ in range(steps):
        z += factors.solve(rhs - operator @ z, trans=trans)
    return z

"""Linear programs for count queries (Gupte & Sundararajan, Sections 2.4.3 and 2.5).

Both programs are built from vectorised cvxpy expressions; nothing loops over
matrix entries. The builders return the cvxpy problem together with its variables
so a notebook can inspect or extend it before solving.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpopt.lazy_modules import cvxpy as cp
from dpopt.mechanisms.geometric import geometric_inverse
from dpopt.problems.count_query import CountQuery
from dpopt.validation import fail

__all__ = [
    "GSProgram",
    "InteractionProgram",
    "build_gs_program",
    "build_geometric_interaction_program",
    "build_interaction_program",
]


@dataclass(frozen=True)
class GSProgram:
    """The GS LP: ``program`` with mechanism variable ``x`` and worst-case loss ``d``."""

    program: cp.Problem
    x: cp.Variable
    d: cp.Variable


@dataclass(frozen=True)
class InteractionProgram:
    """The consumer interaction LP for a deployed mechanism ``deployed`` (rows 0..n)."""

    program: cp.Problem
    remap: cp.Variable
    d: cp.Variable
    deployed: np.ndarray


def build_gs_program(problem: CountQuery) -> GSProgram:
    """The minimax-optimal mechanism LP of Section 2.5.

    minimise d subject to, for all i, r:
    ``x >= 0``, ``sum_r x[i, r] = 1``, ``alpha x[i, r] <= x[i+1, r]`` and
    ``alpha x[i+1, r] <= x[i, r]`` (Definition 2), and
    ``sum_r l(i, r) x[i, r] <= d`` for i in S.
    """
    size = problem.n + 1
    alpha = problem.alpha
    s = list(problem.support)
    x = cp.Variable((size, size), nonneg=True, name="x")
    d = cp.Variable(name="d")
    constraints = [
        cp.sum(x, axis=1) == 1,
        alpha * x[:-1] <= x[1:],
        alpha * x[1:] <= x[:-1],
        cp.sum(cp.multiply(problem.loss_matrix[s], x[s]), axis=1) <= d,
    ]
    return GSProgram(program=cp.Problem(cp.Minimize(d), constraints), x=x, d=d)


def build_geometric_interaction_program(problem: CountQuery) -> GSProgram:
    """The interaction LP for the deployed geometric mechanism, stated on ``x = G T``.

    Because ``G^{-1}`` is tridiagonal (:func:`~dpopt.mechanisms.geometric.geometric_inverse`),
    "T is row-stochastic" is ``G^{-1} x >= 0`` with rows of x summing to one (rows of
    ``G^{-1}`` sum to one), so the program has the GS LP's size and is well scaled,
    where the generic form :func:`build_interaction_program` carries G's powers
    ``alpha**k`` down to 1e-30 and makes HiGHS fail from n ~ 100. The constraint set
    is Theorem 2's characterisation of mechanisms derivable from G, not
    Definition 2's privacy constraints, so this is an independent route to the GS
    optimum (Theorem 1). The remap is ``T = G^{-1} x``.
    """
    size = problem.n + 1
    s = list(problem.support)
    x = cp.Variable((size, size), name="x")
    d = cp.Variable(name="d")
    constraints = [
        cp.sum(x, axis=1) == 1,
        geometric_inverse(problem.n, problem.alpha, scaled=True) @ x >= 0,
        cp.sum(cp.multiply(problem.loss_matrix[s], x[s]), axis=1) <= d,
    ]
    return GSProgram(program=cp.Problem(cp.Minimize(d), constraints), x=x, d=d)


def build_interaction_program(problem: CountQuery, deployed: np.ndarray) -> InteractionProgram:
    """The consumer's optimal post-processing LP of Section 2.4.3.

    For a deployed mechanism y (rows: true counts 0..n, columns: m outputs) find a
    row-stochastic remap T (m x (n+1)) minimising ``max_{i in S} sum_r' (yT)[i, r'] l(i, r')``.
    The loss of row i is linear in T with coefficients ``y[i, r] * l(i, r')``, so the
    loss rows form one dense ``|S| x m(n+1)`` matrix applied to ``vec(T)``.
    """
    y = np.asarray(deployed, dtype=float)
    size = problem.n + 1
    if y.ndim != 2 or y.shape[0] != size:
        raise fail("deployed", "interaction", f"a matrix with {size} rows (true counts 0..n)", y)
    s = list(problem.support)
    m = y.shape[1]
    coefficients = (y[s, :, None] * problem.loss_matrix[s, None, :]).reshape(len(s), m * size)
    remap = cp.Variable((m, size), nonneg=True, name="T")
    d = cp.Variable(name="d")
    constraints = [cp.sum(remap, axis=1) == 1, coefficients @ cp.vec(remap, order="C") <= d]
    return InteractionProgram(
        program=cp.Problem(cp.Minimize(d), constraints), remap=remap, d=d, deployed=y
    )

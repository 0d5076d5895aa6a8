"""The optimal mechanism on a finite universe as an LP: cvxpy for inspection, HiGHS to solve.

Variables x[a, r] >= 0 (m x |R|), rows summing to 1; objective minimax (t >= the
expected loss of every dataset in the side information, minimise t) or average
(sum_a w_a sum_r L[a, r] x[a, r]); privacy ``x[a, r] <= e^eps_ab x[b, r]`` for every
directed pair of :meth:`FiniteQuery.privacy_pairs` and output r.

**What was measured** (2 cores; the atlas universes of :func:`dpopt.universes.graph_atlas`,
triangle counts, epsilon = 1, minimax absolute loss; the same optimum by every route):

| route | 5 nodes (34 x 8) | 6 nodes (156 x 16, 18,272 privacy rows) | 7 nodes (1044 x 28, 367,248 rows) |
| --- | --- | --- | --- |
| full LP, HiGHS IPM + crossover | < 0.1 s | 1.45 s | > 600 s (also without crossover) |
| full LP, dual / primal simplex | | 23 s / 17 s | |
| lazy privacy rows, warm dual simplex | | 22 s (19 rounds, 10,241 rows added) | > 10 min |
| Dantzig-Wolfe over output columns | 0.3 s | 280 s (474 rounds: tailing off) | |

Lazy rows do not thin this LP (more than half the rows bind: a staircase-like optimum is
tight on every edge where the level changes), and Dantzig-Wolfe, although its master has
only 2m + |R| rows and a certified Lagrangian bound every round, tails off. Both are in
the repository's history (commits "finite_query ... first part" and "... Dantzig-Wolfe").
So the LP is solved whole by interior point + crossover, and an LP beyond
:data:`MAX_PRIVACY_ROWS` is refused before any work, naming the limit; the 1044-graph
universe is beyond it, and :mod:`dpopt.methods.finite_query` reports the constructions
for it against the best lower bound available there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import cvxpy as cp
import highspy
import numpy as np
from scipy import sparse

from dpopt.problems.finite_query import FiniteQuery
from dpopt.solvers import SOLVER_OPTIONS, new_highs
from dpopt.validation import SolverError, fail

__all__ = ["FiniteProgram", "LPResult", "MAX_PRIVACY_ROWS", "build_finite_program", "check_lp_size", "solve_finite_lp"]

HIGHS_OPTIONS = SOLVER_OPTIONS["HIGHS"]  # the tolerances every dpopt LP uses (dpopt.solvers)


@dataclass(frozen=True)
class FiniteProgram:
    """The full LP in cvxpy: ``program`` and its mechanism variable ``x`` (m x |R|)."""

    program: cp.Problem
    x: cp.Variable


def build_finite_program(problem: FiniteQuery) -> FiniteProgram:
    """Every privacy row written out (no loops over entries: one sparse difference operator)."""
    m, k = problem.size
    x = cp.Variable((m, k), nonneg=True, name="x")
    pairs, bounds = problem.privacy_pairs()
    p = len(pairs)
    rows = np.arange(p)
    difference = sparse.csr_array(
        (np.concatenate([np.ones(p), -np.exp(bounds)]), (np.concatenate([rows, rows]), np.concatenate([pairs[:, 0], pairs[:, 1]]))),
        shape=(p, m),
    )
    constraints = [cp.sum(x, axis=1) == 1, difference @ x <= 0]
    expected = cp.sum(cp.multiply(problem.loss_matrix, x), axis=1)
    if problem.objective == "minimax":
        objective = cp.max(expected[list(problem.side_information)])
    else:
        objective = problem.weights @ expected
    return FiniteProgram(cp.Problem(cp.Minimize(objective), constraints), x)


#: Largest number of privacy rows (pairs x outputs) the LP route takes: 18,272 rows solve in
#: 1.45 s and 367,248 did not finish in 600 s (see the table above); between them the time
#: grows much faster than the rows, so the limit sits where a solve is still seconds.
MAX_PRIVACY_ROWS = 60_000


@dataclass(frozen=True)
class LPResult:
    """What :func:`solve_finite_lp` found: the mechanism, the LP optimum, and how."""

    mechanism: np.ndarray
    objective: float
    privacy_rows: int
    seconds: float


def check_lp_size(problem: FiniteQuery) -> int:
    """The number of privacy rows, refused above :data:`MAX_PRIVACY_ROWS` before any work."""
    rows = len(problem.privacy_pairs()[0]) * problem.size[1]
    if rows > MAX_PRIVACY_ROWS:
        raise fail("universe", "finite_query lp",
                   f"small enough for the LP route: at most {MAX_PRIVACY_ROWS:,} privacy rows (directed pairs x outputs); "
                   f"this problem has {rows:,} (the constructions, e.g. --method privacy_first, still apply)", problem.universe.source)
    return rows


def solve_finite_lp(problem: FiniteQuery) -> LPResult:
    """The LP optimum by HiGHS's interior point + crossover on the whole LP (a basic optimal solution)."""
    start = time.perf_counter()
    rows = check_lp_size(problem)
    m, k = problem.size
    pairs, bounds = problem.privacy_pairs()
    h = new_highs({**HIGHS_OPTIONS, "solver": "ipm", "run_crossover": "on"})
    minimax = problem.objective == "minimax"
    _add_columns(h, problem, minimax)
    _add_base_rows(h, problem, minimax)
    which = np.repeat(np.arange(len(pairs)), k)
    outputs = np.tile(np.arange(k), len(pairs))
    _add_privacy_rows(h, pairs[which], np.exp(bounds)[which], outputs, k)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        h.clearSolver()  # a cold retry by the dual simplex
        h.setOptionValue("solver", "simplex")
        h.run()
        status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise SolverError("HIGHS", h.modelStatusToString(status), "(finite_query lp)")
    values = np.asarray(h.getSolution().col_value)[: m * k].reshape(m, k)
    return LPResult(values, float(h.getInfo().objective_function_value), rows, time.perf_counter() - start)


def _add_columns(h: highspy.Highs, problem: FiniteQuery, minimax: bool) -> None:
    m, k = problem.size
    costs = np.zeros(m * k) if minimax else (problem.weights[:, None] * problem.loss_matrix).ravel()
    h.addCols(m * k, costs, np.zeros(m * k), np.ones(m * k), 0, np.zeros(m * k, np.int32), np.zeros(0, np.int32), np.zeros(0))
    if minimax:  # t, the worst expected loss
        h.addCols(1, np.ones(1), np.zeros(1), np.full(1, highspy.kHighsInf), 0, np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0))


def _add_base_rows(h: highspy.Highs, problem: FiniteQuery, minimax: bool) -> None:
    m, k = problem.size
    columns = np.arange(m * k, dtype=np.int32)
    starts = np.arange(0, m * k, k, dtype=np.int32)
    h.addRows(m, np.ones(m), np.ones(m), m * k, starts, columns, np.ones(m * k))
    if minimax:
        support = np.array(problem.side_information)
        s = support.size
        index = (support[:, None] * k + np.arange(k)[None, :]).astype(np.int32)
        index = np.hstack([index, np.full((s, 1), m * k, dtype=np.int32)])  # and -t
        values = np.hstack([problem.loss_matrix[support], -np.ones((s, 1))])
        h.addRows(s, np.full(s, -highspy.kHighsInf), np.zeros(s), index.size,
                  np.arange(0, index.size, k + 1, dtype=np.int32), index.ravel(), values.ravel())


def _add_privacy_rows(h: highspy.Highs, pairs: np.ndarray, factors: np.ndarray, outputs: np.ndarray, k: int) -> None:
    count = len(pairs)
    index = np.column_stack([pairs[:, 0] * k + outputs, pairs[:, 1] * k + outputs]).astype(np.int32)
    values = np.column_stack([np.ones(count), -factors])
    h.addRows(count, np.full(count, -highspy.kHighsInf), np.zeros(count), 2 * count,
              np.arange(0, 2 * count, 2, dtype=np.int32), index.ravel(), values.ravel())

"""The optimal mechanism on a finite universe as an LP: cvxpy for inspection, HiGHS with lazy rows to solve.

Variables x[a, r] >= 0 (m x |R|), rows summing to 1; objective minimax (t >= the
expected loss of every dataset in the side information, minimise t) or average
(sum_a w_a sum_r L[a, r] x[a, r]); privacy ``x[a, r] <= e^eps_ab x[b, r]`` for every
directed pair of :meth:`FiniteQuery.privacy_pairs` and output r.

The privacy rows dominate: triangle counting on the 1044 seven-node graphs has 29,232
variables and 2 x 6,558 x 28 = 367,248 privacy rows, on which HiGHS's interior point
needs minutes (the issue's measurement). Few of them bind at the optimum, so
:func:`solve_finite_lp` adds them lazily: solve with the rows found so far (a
relaxation: its optimum is a lower bound), measure every privacy row on the solution
at once (vectorised), add the violated ones, and re-solve warm with the dual simplex
(added rows keep the basis dual feasible); stop when no row is violated beyond the
feasibility tolerance. The last relaxation is then feasible, so its optimum is the LP's.
:func:`build_finite_program` writes the same LP in full in cvxpy, for inspection and as
the baseline the benchmark compares against.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import cvxpy as cp
import highspy
import numpy as np
from scipy import sparse

from dpopt.problems.finite_query import FiniteQuery
from dpopt.solvers import new_highs
from dpopt.validation import SolverError

__all__ = ["FiniteProgram", "LazyLPResult", "build_finite_program", "solve_finite_lp"]

#: A privacy row counts as violated above this (HiGHS's feasibility tolerance below is 1e-10).
VIOLATION = 1e-9
#: Rows added per round at most (the most violated first), to keep each re-solve small.
ROWS_PER_ROUND = 200_000
HIGHS_OPTIONS = {
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
    "small_matrix_value": 1e-12,
}


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


@dataclass(frozen=True)
class LazyLPResult:
    """What :func:`solve_finite_lp` found: the mechanism, the LP optimum, and how."""

    mechanism: np.ndarray
    objective: float
    rounds: int
    privacy_rows: int
    privacy_rows_total: int
    max_violation: float
    seconds: float


def solve_finite_lp(problem: FiniteQuery) -> LazyLPResult:
    """The LP optimum by lazy privacy rows (see the module docstring)."""
    start = time.perf_counter()
    m, k = problem.size
    pairs, bounds = problem.privacy_pairs()
    factors = np.exp(bounds)
    h = new_highs(HIGHS_OPTIONS)
    minimax = problem.objective == "minimax"
    _add_columns(h, problem, minimax)
    _add_base_rows(h, problem, minimax)
    added = np.zeros((len(pairs), k), dtype=bool)
    rounds, violation = 0, np.inf
    while True:
        rounds += 1
        _run(h, rounds)
        values = np.asarray(h.getSolution().col_value)[: m * k].reshape(m, k)
        gap = values[pairs[:, 0]] - factors[:, None] * values[pairs[:, 1]]
        gap[added] = -np.inf  # rows in the LP hold to HiGHS's tolerance already
        violation = float(gap.max()) if gap.size else 0.0
        if violation <= VIOLATION:
            break
        chosen = np.flatnonzero(gap.ravel() > VIOLATION)
        if chosen.size > ROWS_PER_ROUND:
            chosen = chosen[np.argsort(gap.ravel()[chosen])[::-1][:ROWS_PER_ROUND]]
        which, r = np.divmod(chosen, k)
        added[which, r] = True
        _add_privacy_rows(h, pairs[which], factors[which], r, k)
    objective = float(h.getInfo().objective_function_value)
    full = values[pairs[:, 0]] - factors[:, None] * values[pairs[:, 1]]
    return LazyLPResult(
        mechanism=values, objective=objective, rounds=rounds, privacy_rows=int(added.sum()),
        privacy_rows_total=int(added.size), max_violation=float(max(full.max(initial=0.0), 0.0)),
        seconds=time.perf_counter() - start,
    )


def _add_columns(h: highspy.Highs, problem: FiniteQuery, minimax: bool) -> None:
    m, k = problem.size
    costs = np.zeros(m * k) if minimax else (problem.weights[:, None] * problem.loss_matrix).ravel()
    empty = np.zeros(m * k + 1, dtype=np.int32)
    h.addCols(m * k, costs, np.zeros(m * k), np.ones(m * k), 0, empty[:-1], np.zeros(0, np.int32), np.zeros(0))
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


def _run(h: highspy.Highs, rounds: int, strategy: int = 1) -> None:
    # lazy rows: re-solved warm by the dual simplex (strategy 1), which added rows leave dual
    # feasible; the decomposition's master by the primal simplex (4): added columns leave it
    # primal feasible
    h.setOptionValue("solver", "simplex")
    h.setOptionValue("simplex_strategy", strategy)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        h.clearSolver()  # a cold retry by interior point + crossover
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "on")
        h.run()
        status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise SolverError("HIGHS", h.modelStatusToString(status), f"(finite_query LP, round {rounds})")


# --- Dantzig-Wolfe decomposition over the output columns ---------------------------------

#: Stop when the certified gap (upper - lower bound) is within this fraction of the upper bound.
DW_GAP = 1e-9
#: Columns whose reduced cost is above -this are not added.
DW_REDUCED_COST = 1e-12


@dataclass(frozen=True)
class DecompositionResult:
    """What :func:`solve_finite_dw` found: a mechanism, certified bounds on the optimum, and how."""

    mechanism: np.ndarray
    upper_bound: float
    lower_bound: float
    rounds: int
    columns: int
    seconds: float


def solve_finite_dw(problem: FiniteQuery, *, start: np.ndarray | None = None, max_rounds: int = 2000) -> DecompositionResult:
    """The finite-universe LP by Dantzig-Wolfe decomposition over the output columns.

    Every column x[:, r] of a private mechanism lies in the same polytope
    ``K = {v in [0, 1]^m : v_a <= e^eps_ab v_b for every pair}``, and only the m row sums
    and the loss rows couple the columns. So the master chooses, for each output r, a
    convex combination (weights summing to at most 1; 0 is in K) of vectors of K
    generated so far -- 2m + |R| rows instead of m + |R| m + 2 |pairs| |R| -- and pricing
    is one LP per output over K alone (m variables, one row per directed pair), kept warm
    between rounds. For any row-sum multipliers pi and loss weights lambda (minimax: lambda
    in the simplex; average: the prior), the Lagrangian bound
    ``sum_a pi_a + sum_r min(0, min_{v in K} (lambda L[:, r] - pi) . v)`` is a valid lower
    bound on the optimum, so every round certifies ``lower <= optimum <= upper``.

    ``start``: a private mechanism whose columns seed the master (default: the columns
    ``exp(-eps d̄(x, f^-1(r)))`` of Theorem 2, which are in K, and the uniform mechanism).
    """
    begin = time.perf_counter()
    m, k = problem.size
    pairs, bounds = problem.privacy_pairs()
    minimax = problem.objective == "minimax"
    support = np.array(problem.side_information)
    loss = problem.loss_matrix
    master = new_highs(HIGHS_OPTIONS)
    _dw_master_rows(master, problem, minimax)
    pricing = [_pricing_lp(m, pairs, np.exp(bounds)) for _ in range(k)]
    seeds = _seed_columns(problem, start)
    columns = 0
    for r, vectors in enumerate(seeds):
        for v in vectors:
            _add_dw_column(master, problem, minimax, r, v)
            columns += 1
    stored: list[tuple[int, np.ndarray]] = [(r, v) for r, vectors in enumerate(seeds) for v in vectors]
    lower, upper, rounds = -np.inf, np.inf, 0
    while rounds < max_rounds:
        rounds += 1
        _run(master, rounds, strategy=4)
        upper = float(master.getInfo().objective_function_value)
        duals = np.asarray(master.getSolution().row_dual)
        pi = duals[:m]
        if minimax:
            lam = np.zeros(m)
            lam[support] = np.clip(-duals[m : m + support.size], 0.0, None)
            lam = lam / lam.sum() if lam.sum() > 0 else np.where(np.isin(np.arange(m), support), 1.0 / support.size, 0.0)
        else:
            lam = problem.weights
        bound, added = float(pi.sum()), 0
        for r in range(k):
            g = lam * loss[:, r] - pi
            value, v = _price(pricing[r], g)
            bound += min(0.0, value)
            convexity_dual = duals[m + (support.size if minimax else 0) + r]
            if value - convexity_dual < -DW_REDUCED_COST:
                _add_dw_column(master, problem, minimax, r, v)
                stored.append((r, v))
                added += 1
        lower = max(lower, bound)
        columns += added
        if upper - lower <= DW_GAP * max(abs(upper), 1e-12) or added == 0:
            break
    first = 1 if minimax else 0  # t comes first
    theta = np.asarray(master.getSolution().col_value)[first : first + len(stored)]
    x = np.zeros((m, k))
    for weight, (r, v) in zip(theta, stored):
        if weight > 0:
            x[:, r] += weight * v
    return DecompositionResult(x, upper, lower, rounds, columns, time.perf_counter() - begin)


def _dw_master_rows(h: highspy.Highs, problem: FiniteQuery, minimax: bool) -> None:
    m, k = problem.size
    none = np.zeros(0, np.int32)
    h.addRows(m, np.ones(m), np.ones(m), 0, np.zeros(m, np.int32), none, np.zeros(0))  # row sums
    if minimax:
        s = len(problem.side_information)
        h.addCols(1, np.ones(1), np.zeros(1), np.full(1, highspy.kHighsInf), 0, np.zeros(1, np.int32), none, np.zeros(0))  # t
        h.addRows(s, np.full(s, -highspy.kHighsInf), np.zeros(s), s, np.arange(s, dtype=np.int32),
                  np.zeros(s, np.int32), -np.ones(s))  # sum ... - t <= 0
    h.addRows(k, np.zeros(k), np.ones(k), 0, np.zeros(k, np.int32), none, np.zeros(0))  # convexity per output


def _add_dw_column(h: highspy.Highs, problem: FiniteQuery, minimax: bool, r: int, v: np.ndarray) -> None:
    m, _ = problem.size
    support = np.array(problem.side_information)
    rows = [np.arange(m)]
    values = [v]
    cost = 0.0
    if minimax:
        rows.append(m + np.arange(support.size))
        values.append(problem.loss_matrix[support, r] * v[support])
        convexity = m + support.size + r
    else:
        cost = float(problem.weights @ (problem.loss_matrix[:, r] * v))
        convexity = m + r
    rows.append(np.array([convexity]))
    values.append(np.ones(1))
    index, data = np.concatenate(rows), np.concatenate(values)
    keep = data != 0
    h.addCols(1, np.array([cost]), np.zeros(1), np.full(1, highspy.kHighsInf), int(keep.sum()),
              np.zeros(1, np.int32), index[keep].astype(np.int32), data[keep])


def _pricing_lp(m: int, pairs: np.ndarray, factors: np.ndarray) -> highspy.Highs:
    h = new_highs(HIGHS_OPTIONS)
    none = np.zeros(0, np.int32)
    h.addCols(m, np.zeros(m), np.zeros(m), np.ones(m), 0, np.zeros(m, np.int32), none, np.zeros(0))
    count = len(pairs)
    index = np.column_stack([pairs[:, 0], pairs[:, 1]]).astype(np.int32)
    values = np.column_stack([np.ones(count), -factors])
    h.addRows(count, np.full(count, -highspy.kHighsInf), np.zeros(count), 2 * count,
              np.arange(0, 2 * count, 2, dtype=np.int32), index.ravel(), values.ravel())
    h.setOptionValue("solver", "simplex")
    h.setOptionValue("simplex_strategy", 4)  # primal: a new objective keeps the last basis feasible
    return h


def _price(h: highspy.Highs, cost: np.ndarray) -> tuple[float, np.ndarray]:
    m = cost.size
    h.changeColsCost(m, np.arange(m, dtype=np.int32), cost)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise SolverError("HIGHS", h.modelStatusToString(h.getModelStatus()), "(finite_query pricing LP)")
    v = np.clip(np.asarray(h.getSolution().col_value), 0.0, 1.0)
    return float(cost @ v), v


def _seed_columns(problem: FiniteQuery, start: np.ndarray | None) -> list[list[np.ndarray]]:
    m, k = problem.size
    seeds: list[list[np.ndarray]] = [[np.ones(m)] for _ in range(k)]  # the uniform mechanism's direction
    if start is not None:
        for r in range(k):
            column = start[:, r]
            if column.max() > 0:
                seeds[r].append(column / column.max())
        return seeds
    hops = problem.universe.hops
    for r, value in enumerate(problem.outputs):
        owners = problem.universe.values == value
        if owners.any():
            distance = hops[:, owners].min(axis=1) * (1.0 if problem.privacy == "neighbours" else 1.0)
            seeds[r].append(np.exp(-problem.epsilon * distance))
    return seeds

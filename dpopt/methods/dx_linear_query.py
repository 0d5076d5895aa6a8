"""Methods for :class:`~dpopt.problems.dx_linear_query.DXLinearQuery` (Perrier et al.).

Every method returns noise scales c and a transformed workload Q' (parameters, no
matrix), the surrogate objective ``n^2 ||c (.) Q' - Q||^2 + 2 ||c||^2`` of problem (6)
under squared loss as ``objective``, the improvement factor over the plain-DP
Laplace mechanism, and a certificate: the all-pairs check
``||Q'_:i - Q'_:j||_1 / d_X(i, j) <= 1`` (``max_privacy_loss`` is the worst ratio,
``target`` 1). ``sample`` releases ``c (.) Q'x + Lap(c)`` for the problem's histogram.

* ``closed_form`` (K = 1), ``strategy1``, ``strategy2``, ``psa`` (Algorithm 3) --
  the paper's routes with ``c Q' = Q``;
* ``exact`` -- the exact minimum of ``||c||^2`` with ``c Q' = Q`` (convex program);
* ``exact_improvement`` -- the exact maximum of the paper's improvement factor with ``c Q' = Q``;
* ``exact_surrogate`` (K = 1) -- the exact optimum of (6) with q' free (a QP): the
  only route that is exact for the problem as stated, so ``auto`` takes it when it applies;
* ``alternating`` -- block coordinate descent on (6) from the best of the above, then each
  query's constant release (its mean, c -> 0) where that is lower (at a tiny epsilon); ``auto``
  falls back to it for K > 1, where (6) is non-convex.
* ``exact_l1``, ``exact_linf`` -- Theorem 2 part 2's bounds ``n ||c (.) Q' - Q||_p + E||Y||_p``
  for p = 1 and inf, minimised exactly: for one query with q' free (an LP in v = c q' and
  c); for several queries within ``c Q' = Q`` (convex in 1/c; with Q' free the bound is
  not jointly convex): ``exact_l1`` as a conic program, ``exact_linf`` (E||Y||_inf has no
  disciplined-convex form) by SLSQP with exact gradients and a certified first-order lower
  bound in ``parameters["linf_lower_bound"]`` (:mod:`dpopt.dx.linf`). The bound is in
  ``parameters["l1_bound"]`` / ``["linf_bound"]``; ``objective`` stays (6)'s, so every route is compared on one scale.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from dpopt.certificates import Certificate
from dpopt.dx.evaluation import improvement_factor
from dpopt.dx.linf import exact_linf_scales
from dpopt.exact_sampling import LOGIT_SAMPLER
from dpopt.dx.mechanisms import DXLaplaceMechanism, check_histogram
from dpopt.dx.scales import (
    alternating,
    check_privacy,
    closed_form_scales,
    exact_lp_bound,
    exact_surrogate,
    lp_bound_objective,
    psa_scales,
    solve_exact,
    strategy1_scales,
    strategy2_scales,
    surrogate_objective,
    with_constant_rows,
)
from dpopt.dx.smalldb import (
    SmallDB,
    smalldb_bound,
    smalldb_gamma,
    smalldb_preprocessing,
)
from dpopt.export import StoredSolution, stored_fields
from dpopt.limits import MAX_MAGNITUDE
from dpopt.mechanisms.grid_release import ROUNDED_LAPLACE_SAMPLER, check_release_grid
from dpopt.problems.dx_linear_query import DXLinearQuery
from dpopt.registry import register, register_reader
from dpopt.sampling import RandomSource
from dpopt.solution import Solution
from dpopt.validation import InvalidParameterError, SolverError, check_array, check_real

KIND = "dx_linear_query"

__all__ = ["dx_solution"]


def _single(problem: DXLinearQuery) -> bool:
    return problem.queries == 1


def _size(problem: DXLinearQuery) -> float:
    return float(problem.metric.size) ** 2 * problem.queries


def _transformed(problem: DXLinearQuery, c: np.ndarray) -> np.ndarray:
    """Q' = diag(1/c) Q (rows with c = 0 are constant and released exactly: Q' row = Q row)."""
    q = problem.matrix
    return np.where(c[:, None] > 0, q / np.where(c > 0, c, 1.0)[:, None], q)


def dx_solution(problem: DXLinearQuery, transformed: np.ndarray, scales: np.ndarray, method: str, *, solver: str = "none", extra: dict[str, Any] | None = None) -> Solution:
    """Certify (Q', c) against every pair and wrap it as a parameter Solution."""
    check = check_privacy(transformed, problem.metric)
    cert = Certificate.measured(
        check.worst_ratio, 1.0, (check.worst_pair[0], check.worst_pair[1], 0), 0.0, 0.0,
        method=f"measured: max ||Q'_:i - Q'_:j||_1 / d_X(i, j) over all {check.pairs_checked} pairs (target 1)",
    )
    # built lazily: the mechanism re-checks every pair itself, which only a release needs
    mechanism: list[DXLaplaceMechanism] = []

    grid = problem.release_grid

    def sampler(histogram: Any, count: int, source: RandomSource) -> np.ndarray:
        if not mechanism:
            mechanism.append(DXLaplaceMechanism(transformed, scales, problem.metric))
        data = problem.histogram if histogram is None else histogram
        if grid is None:
            return mechanism[0].release(data, count, rng=source, exact=False)  # Solution.sample gates the float path
        check_release_grid(grid, scales, KIND)
        return mechanism[0].grid_release(data, grid, count, source)

    parameters: dict[str, Any] = {
        "scales": [float(v) for v in scales],
        "improvement_factor": improvement_factor(problem.matrix, scales, problem.metric),
        "norm_c_squared": float(np.sum(scales**2)),
        **(extra or {}),
    }
    if problem.metric.size * problem.queries <= 10_000:
        parameters["transformed_query"] = transformed.tolist()
    return Solution(
        problem=problem,
        method=method,
        exact=True,  # the registry's flag decides (Solution.with_timing); nothing here falls short of it
        solver=solver,
        status="optimal" if solver != "none" else "closed_form",
        seconds=0.0,
        objective=surrogate_objective(transformed, scales, problem.matrix, problem.n),
        certificate=cert,
        parameters=parameters,
        sampler=sampler, sampling=None if grid is None else ROUNDED_LAPLACE_SAMPLER,
        details={"transformed": transformed, "scales": scales},
    )


def _on_grid(problem: DXLinearQuery) -> bool:
    """The Laplace releases are exact only on a declared ``release_grid`` (SmallDB's always are)."""
    return problem.release_grid is not None


def _scales_route(name: str, rule: Callable[..., np.ndarray], summary: str, *, applies: Callable[[Any], bool] | None = None, cost: float = 1.0) -> None:
    def run(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
        c = rule(problem.matrix, problem.metric)
        return dx_solution(problem, _transformed(problem, c), c, name)

    kwargs = {"applies": applies} if applies else {}
    register(KIND, name, parameters=True, exact=False, uses_solver=False, cost=lambda p: cost * _size(p), summary=summary, releases=_on_grid,
             **kwargs)(run)


def _program_memory(problem: DXLinearQuery) -> tuple[float, str]:
    """A conic program over the pairs of the universe (all of them, at worst), K columns each."""
    n = problem.metric.size
    return 200.0 * n * n * problem.queries, "query"


_scales_route("closed_form", closed_form_scales, "c = max |q_i - q_j| / d_X(i, j), q' = q / c (one query)", applies=_single, cost=0.5)
_scales_route("strategy1", strategy1_scales, "Strategy 1: d_X shared equally between the K queries")
_scales_route("strategy2", strategy2_scales, "Strategy 2: one scale max ||Q_:i - Q_:j||_1 / d_X(i, j) for all")


@register(KIND, "psa", parameters=True, exact=False, uses_solver=False, releases=_on_grid, cost=lambda p: 3.0 * _size(p), summary="Strategy 3: Algorithm 3 (PSA) as printed")
def solve_psa(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
    result = psa_scales(problem.matrix, problem.metric)
    return dx_solution(problem, _transformed(problem, result.scales), result.scales, "psa",
                       extra={"psa_iterations": result.iterations, "psa_converged": result.converged})


@register(KIND, "exact", parameters=True, exact=False, uses_solver=True, releases=_on_grid, cost=lambda p: 50.0 * _size(p), memory=_program_memory, summary="exact min ||c||^2 with c Q' = Q (convex; pairs reduced and added lazily)")
def solve_exact_scales(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
    c, report = solve_exact(problem.matrix, problem.metric, solver=solver)
    return dx_solution(problem, _transformed(problem, c), c, "exact", solver=solver or "CLARABEL", extra=report.to_dict())


@register(KIND, "exact_surrogate", parameters=True, exact=True, uses_solver=True, releases=_on_grid, cost=lambda p: 60.0 * _size(p), applies=_single, memory=_program_memory,
          summary="exact optimum of (6) for one query with q' free (QP in p = c q', c)")
def solve_exact_surrogate(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
    transformed, c, report = exact_surrogate(problem.matrix, problem.metric, problem.n, solver=solver)
    return dx_solution(problem, transformed, c, "exact_surrogate", solver=solver or "CLARABEL", extra=report.to_dict())


@register(KIND, "alternating", parameters=True, exact=False, uses_solver=True, releases=_on_grid, cost=lambda p: 500.0 * _size(p), auto_fallback=True, memory=_program_memory,
          summary="alternating minimisation of (6) from the best of exact / exact_surrogate, then constant releases where lower")
def solve_alternating(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
    c, _ = solve_exact(problem.matrix, problem.metric, solver=solver)
    start = (_transformed(problem, c), c)
    if _single(problem):
        candidate = exact_surrogate(problem.matrix, problem.metric, problem.n, solver=solver)
        if surrogate_objective(candidate[0], candidate[1], problem.matrix, problem.n) < surrogate_objective(*start, problem.matrix, problem.n):
            start = (candidate[0], candidate[1])
    try:
        result = alternating(problem.matrix, problem.metric, problem.n, start, solver=solver)
    except InvalidParameterError as exc:
        if exc.parameter != "start":
            raise
        # the solver's scales miss the metric: a numerical failure, not a bad 'start' from the user
        # (a budget of 1e-15 beside 2 in Example 1's metric)
        raise SolverError(solver or "CLARABEL", "inaccurate", "(dx alternating: the exact scales it starts from are not private "
                          "for this metric; its distances may span too many orders of magnitude)") from None
    # after the descent, not before: from a constant row (c ~ 0) neither block can move alone
    transformed, scales = with_constant_rows(result.transformed, result.scales, problem.matrix, problem.n)
    return dx_solution(problem, transformed, scales, "alternating", solver=solver or "CLARABEL",
                       extra={"objective_per_iteration": list(result.objectives), **result.pairs.to_dict(),
                              **({"stopped": result.stopped} if result.stopped else {})})


def _lp_details(problem: DXLinearQuery, transformed: np.ndarray, c: np.ndarray, p: float) -> dict[str, Any]:
    return {f"l{'1' if p == 1 else 'inf'}_bound": lp_bound_objective(transformed, c, problem.matrix, problem.n, p)}


# exact=False: optimal for their own l_p bound, not for this kind's objective (6), so auto never takes them for it
@register(KIND, "exact_l1", parameters=True, exact=False, uses_solver=True, releases=_on_grid, cost=lambda p: 65.0 * _size(p), memory=_program_memory,
          summary="exact optimum of Theorem 2's l1 bound n||c.Q' - Q||_1 + ||c||_1 (one query: Q' free, an LP; "
                  "several: within c Q' = Q, convex in 1/c)")
def solve_exact_l1(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
    if _single(problem):
        transformed, c, report = exact_lp_bound(problem.matrix, problem.metric, problem.n, 1, solver=solver)
    else:
        c, report = solve_exact(problem.matrix, problem.metric, solver=solver, objective="l1")
        transformed = _transformed(problem, c)
    return dx_solution(problem, transformed, c, "exact_l1", solver=solver or "CLARABEL",
                       extra={**report.to_dict(), **_lp_details(problem, transformed, c, 1)})


@register(KIND, "exact_linf", parameters=True, exact=False, uses_solver=True, releases=_on_grid, cost=lambda p: 65.0 * _size(p) * max(1, p.queries), memory=_program_memory,
          summary="exact optimum of Theorem 2's l_inf bound: one query n||c q' - q||_inf + c (q' free, an LP); "
                  "several: E||Y||_inf within c Q' = Q (convex, SLSQP with a certified first-order bound)")
def solve_exact_linf(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
    if _single(problem):
        transformed, c, report = exact_lp_bound(problem.matrix, problem.metric, problem.n, np.inf, solver=solver)
        return dx_solution(problem, transformed, c, "exact_linf", solver=solver or "CLARABEL",
                           extra={**report.to_dict(), **_lp_details(problem, transformed, c, np.inf)})
    result = exact_linf_scales(problem.matrix, problem.metric)
    transformed = _transformed(problem, result.scales)
    return dx_solution(problem, transformed, result.scales, "exact_linf", solver="HIGHS",
                       extra={**result.to_dict(), **_lp_details(problem, transformed, result.scales, np.inf)})


@register(KIND, "exact_improvement", parameters=True, exact=False, uses_solver=True, releases=_on_grid, cost=lambda p: 50.0 * _size(p), memory=_program_memory,
          summary="exact maximum of the improvement factor (geometric mean) with c Q' = Q (convex in 1/c)")
def solve_exact_improvement(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
    c, report = solve_exact(problem.matrix, problem.metric, solver=solver, objective="improvement")
    return dx_solution(problem, _transformed(problem, c), c, "exact_improvement", solver=solver or "CLARABEL", extra=report.to_dict())


# -- SmallDB (Algorithm 1) with problem (8)'s exact pre-processing ----------------------------


def smalldb_solution(problem: DXLinearQuery, transformed: np.ndarray, scale: float, method: str, *, extra: dict[str, Any] | None = None) -> Solution:
    """Certify Theorem 5's condition (every q' 1-Lipschitz for d_X) on all pairs and wrap (Q', c)
    with SmallDB as its release: ``sample(histogram)`` answers ``c (n/m) Q' y`` for a synthetic
    database y of m = ``problem.synthetic_size`` records drawn by the exponential mechanism."""
    i, j = problem.metric.pairs()
    d = problem.metric.matrix[i, j]
    spread = np.abs(transformed[:, i] - transformed[:, j]).max(axis=0)
    ratio = np.where(np.isfinite(d), spread / np.where(np.isfinite(d) & (d > 0), d, 1.0), 0.0)
    worst = int(np.argmax(ratio)) if ratio.size else 0
    cert = Certificate.measured(
        float(ratio[worst]) if ratio.size else 0.0, 1.0, (int(i[worst]), int(j[worst]), 0) if ratio.size else (0, 0, 0), 0.0, 0.0,
        method=f"measured: max_k |q'_k(i) - q'_k(j)| / d_X(i, j) over all {ratio.size} pairs (Theorem 5, target 1)",
    )
    mechanism: list[SmallDB] = []

    def sampler(histogram: Any, count: int, source: RandomSource) -> np.ndarray:
        if not mechanism:  # refuses a candidate count beyond MAX_SMALLDB_CANDIDATES, and re-checks Theorem 5
            mechanism.append(SmallDB(transformed, scale, problem.metric, problem.synthetic_size))
        x = check_histogram(problem.histogram if histogram is None else histogram, problem.metric.size, KIND)
        return mechanism[0].answers(mechanism[0].sample(x, count, rng=source), float(x.sum()))

    parameters: dict[str, Any] = {"scale": float(scale), "gamma": float(smalldb_gamma(problem.metric.size, problem.queries, problem.beta)), **(extra or {})}
    if problem.metric.size * problem.queries <= 10_000:
        parameters["transformed_query"] = transformed.tolist()
    return Solution(
        problem=problem, method=method, exact=True, solver="none", status="closed_form", seconds=0.0,
        objective=smalldb_bound(transformed, scale, problem.matrix, problem.n, parameters["gamma"]),
        certificate=cert, parameters=parameters, sampler=sampler, sampling=LOGIT_SAMPLER,  # SmallDB: exact over its candidates
        details={"transformed": transformed, "scale": float(scale)},
    )


@register(KIND, "smalldb_preprocessing", parameters=True, exact=False, uses_solver=False, cost=lambda p: 5.0 * _size(p),
          applies=lambda p: p.synthetic_size is not None,
          summary="problem (8) at its global optimum (envelope breakpoints) and SmallDB (Algorithm 1) as the release "
                  "(needs synthetic_size); objective: Theorem 6's error bound, not (6)")
def solve_smalldb_preprocessing(problem: DXLinearQuery, solver: str | None, repair: bool) -> Solution:
    gamma = smalldb_gamma(problem.metric.size, problem.queries, problem.beta)
    result = smalldb_preprocessing(problem.matrix, problem.metric, problem.n, gamma)
    return smalldb_solution(problem, result.transformed, result.scale, "smalldb_preprocessing",
                            extra={"limit_at_zero": result.limit_at_zero, "breakpoints_tried": result.candidates})


@register_reader(KIND)
def read_dx_linear_query(problem: DXLinearQuery, stored: StoredSolution) -> Solution:
    """Re-check stored scales c and Q' against every pair of the problem's metric."""
    params, summary, fields = stored.meta["parameters"], stored.summary, stored_fields(stored)
    if "transformed_query" not in params:
        raise stored.fail("it has no transformed_query (only workloads with K N <= 10,000 are exported with Q')")
    transformed = check_array(params["transformed_query"], "transformed_query", KIND, ndim=2, max_abs=MAX_MAGNITUDE)
    if fields["method"] == "smalldb_preprocessing":
        scale = check_real(params["scale"], "scale", KIND, low=0.0, low_open=True, high=MAX_MAGNITUDE)
        if transformed.shape != problem.matrix.shape:
            raise stored.fail(f"its Q' does not have the workload's shape (K = {problem.queries}, N = {problem.metric.size})")
        solution = smalldb_solution(problem, transformed, scale, fields["method"])
        return dataclasses.replace(solution, exact=bool(summary["exact"]), status=fields["status"])
    scales = check_array(params["scales"], "scales", KIND, ndim=1, low=0.0, max_abs=MAX_MAGNITUDE)
    if transformed.shape != problem.matrix.shape or scales.shape != (problem.queries,):
        raise stored.fail(f"its scales and Q' do not have the workload's shape (K = {problem.queries}, N = {problem.metric.size})")
    solution = dx_solution(problem, transformed, scales, fields["method"], solver=fields["solver"])
    return dataclasses.replace(solution, exact=bool(summary["exact"]), status=fields["status"])

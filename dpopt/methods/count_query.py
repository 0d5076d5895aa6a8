"""Methods for :class:`~dpopt.problems.count_query.CountQuery`.

* ``lp`` -- the GS LP of Section 2.5 (exact).
* ``interaction`` -- deploy the geometric mechanism and let the consumer post-process
  optimally (Section 2.4.3); Theorem 1 says this reaches the GS optimum (exact). The
  returned mechanism ``G T`` is private by construction (post-processing of G).
* ``geometric`` -- the geometric mechanism itself, no remap (an upper bound).
* ``randomized_response`` -- binary randomized response for n = 1 under 0/1 loss (exact).
* ``factored`` -- the ``interaction`` LP solved by column generation
  (:mod:`dpopt.programs.column_generation`): exact, with a certified lower bound and
  the exact upper bound, storing only alpha and a sparse T. ``auto`` picks it.

``lp`` and ``interaction`` solve a program to the solver's tolerance and then make its point
exactly private (``lp``: repeated majorant, then a mix if needed; ``interaction``: T clipped
and renormalised), which costs up to the tolerance times the largest loss: 1.2e-9 (relative)
at n = 200, epsilon = 1 under absolute loss (2.2e-7 with one majorant round and a uniform mix,
until 2026-11-29), 5.7e-5 for ``interaction`` under squared loss with S = {8..20}. So each carries a
certified lower bound from its own LP's duals (:func:`gs_dual_bound`,
:func:`interaction_dual_bound`; ``lp`` also the latter at its prior), where that leaves the gap
open also column generation's (:func:`_judged_against_optimum`), and reports "optimal"
(``exact``) only when the mechanism and the best bound meet within :data:`GAP_TOLERANCE`, as
``factored`` does; otherwise "gap_above_tolerance".
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from scipy import sparse

import numpy as np

from dpopt.certificates import certify, repair as repair_matrix
from dpopt.lazy_modules import pandas as pd
from dpopt.mechanisms.factored import BLOCK, NAMED_ROW_LOSSES, FactoredMechanism
from dpopt.mechanisms.geometric import geometric_inverse
from dpopt.mechanisms.randomized_response import randomized_response_matrix
from dpopt.problems.count_query import CountQuery
from dpopt.programs.column_generation import solve_by_column_generation
from dpopt.programs.column_generation.pricing import lagrangian_costs
from dpopt.programs.column_generation.result import ABSOLUTE_GAP, at_most, evaluated
from dpopt.programs.count_query import (
    build_geometric_interaction_program,
    build_gs_program,
    build_interaction_program,
)
from dpopt.export import StoredSolution, check_labels, stored_fields
from dpopt.registry import register, register_reader
from dpopt.validation import DPOptError, check_array
from dpopt.solution import Solution, mechanism_frame
from dpopt.solvers import run_program, solver_unit

__all__ = ["gs_dual_bound", "interaction_dual_bound", "optimal_interaction", "remap_dual_bound", "row_losses", "worst_case_loss"]

KIND = "count_query"
#: Largest relative gap between the bounds for which the factored route reports "optimal".
GAP_TOLERANCE = 1e-9


def row_losses(problem: CountQuery, mechanism: np.ndarray) -> pd.Series:
    """Expected loss ``sum_r l(i, r) x[i, r]`` for every i in the side information."""
    s = list(problem.support)
    values = np.einsum("ir,ir->i", problem.loss_matrix[s], np.asarray(mechanism, dtype=float)[s])
    return pd.Series(values, index=pd.Index(s, name="true"), name="expected_loss")


def worst_case_loss(problem: CountQuery, mechanism: np.ndarray) -> float:
    """The minimax objective of Eq. (1) evaluated on ``mechanism``."""
    return float(row_losses(problem, mechanism).max())


def _solution(problem: CountQuery, x: np.ndarray, certificate: Any, **fields: Any) -> Solution:
    losses = row_losses(problem, x)
    return Solution(
        problem=problem,
        certificate=certificate,
        dense=mechanism_frame(x),
        row_loss=losses,
        objective=float(losses.max()),
        exact=True,
        seconds=0.0,
        **fields,
    )


def _factored_solution(problem: CountQuery, mechanism: FactoredMechanism, losses: np.ndarray, **fields: Any) -> Solution:
    """A Solution holding ``G T`` (certified in log space) with its exact expected losses on S."""
    return Solution(
        problem=problem, certificate=mechanism.certificate(problem.epsilon), factored=mechanism, seconds=0.0,
        row_loss=pd.Series(losses, index=pd.Index(problem.support, name="true"), name="expected_loss"), **fields,
    )


def _lp_cost(problem: CountQuery) -> float:
    return float(problem.n + 1) ** 3


# Peak-memory estimates (bytes, driving parameter) checked before a method runs
# (dpopt.limits). The direct LPs hold (n+1)^2 variables with ~4 non-zeros each through
# cvxpy's canonicalisation and HiGHS (~1.5 KB per variable, generous); the geometric G
# (held as G I) O(n); the factored route O(n) (~100 MB at n = 5000) plus
# the dense pricing arrays it forms up to n = 700.
def _lp_memory(problem: CountQuery) -> tuple[float, str]:
    return 1500.0 * (problem.n + 1) ** 2, "n"


def _factored_memory(problem: CountQuery) -> tuple[float, str]:
    dense_pricing = 8.0 * 8 * (problem.n + 1) ** 2 if problem.n <= 700 or not isinstance(problem.loss, str) else 0.0
    return 40_000.0 * (problem.n + 1) + dense_pricing, "n"


@register(KIND, "lp", exact=True, uses_solver=True, cost=_lp_cost, memory=_lp_memory, summary="GS LP (Section 2.5)")
def solve_lp(problem: CountQuery, solver: str | None, repair: bool) -> Solution:
    return _in_loss_units(problem, lambda scaled: _solve_lp(scaled, solver, repair))


def _solve_lp(problem: CountQuery, solver: str | None, repair: bool) -> Solution:
    program = build_gs_program(problem)
    info = run_program(program.program, solver=solver, owner="count_query lp")
    if repair:
        x, cert = repair_matrix(program.x.value, problem.epsilon)
    else:
        x = program.x.value
        cert = certify(x, problem.epsilon)
    below, above, loss_duals = (c.dual_value for c in program.program.constraints[1:])
    # two valid bounds: the LP's own dual (HiGHS's duals are feasible only to ~1e-8 unscaled, so
    # it sat 7.6e-8 below at n = 25), and the Bayes risk of its prior over the geometric
    # mechanism's remaps (Theorem 1; only mu enters, which HiGHS gets far more accurately)
    lower = max(gs_dual_bound(problem, below, above, loss_duals), interaction_dual_bound(problem, loss_duals))
    return _judged_against_optimum(_solution(problem, x, cert, method="lp", solver=info.solver, status=info.status,
                                             details={"solver_objective": info.objective, "solver_max_violation": info.max_violation}), lower)


def _judged(solution: Solution, lower: float) -> Solution:
    """``solution`` "optimal" and exact if its objective is within :data:`GAP_TOLERANCE` of
    ``lower`` (or of the cheapest-output bound), else "gap_above_tolerance"; both in its details."""
    lower = at_most(max(lower, _cheapest_output_bound(solution.problem)), solution.objective)
    gap = solution.objective - lower
    closed = gap <= GAP_TOLERANCE * abs(solution.objective) + ABSOLUTE_GAP
    return dataclasses.replace(solution, exact=closed, status="optimal" if closed else "gap_above_tolerance",
                               details={**solution.details, "lower_bound": lower, "gap": gap})


def _judged_against_optimum(solution: Solution, lower: float) -> Solution:
    """:func:`_judged` for a mechanism of the GS LP, and where the solver's own bound leaves the
    gap open, judged again against column generation's certified Lagrangian bound on the same
    optimum (``details["lower_bound_from"]``; by Theorem 1 the interaction LP's optimum is the
    GS optimum). That bound is the one :func:`interaction_dual_bound` gives at the solver's
    prior, at the prior column generation converges to instead: the loss duals of an interior
    point or of a vertex HiGHS stops at are only near optimal. On ``lp`` at epsilon = 1 the
    solver's bound sat up to 2e-7 below the objective (absolute loss, n = 90), and column
    generation's closed the gap at n = 80, 90 and 100 under absolute loss and from n = 60 under
    squared loss. The mechanism is unchanged: where the repair left it more than the tolerance
    above the optimum (absolute loss, n = 40: 1.4e-9) it stays "gap_above_tolerance"."""
    judged = _judged(solution, lower)
    if judged.exact:
        return judged
    better = _column_generation_bound(solution.problem)
    if not better > lower:
        return judged
    rejudged = _judged(solution, better)
    return dataclasses.replace(rejudged, details={**rejudged.details, "lower_bound_from": "factored (column generation's Lagrangian bound)"})


def _column_generation_bound(problem: CountQuery) -> float:
    """The certified lower bound of :func:`solve_by_column_generation`, or -inf where it fails."""
    try:
        return float(solve_by_column_generation(problem).lower_bound)
    except DPOptError:
        return -np.inf


def _normalised_multipliers(problem: CountQuery, loss_duals: Any) -> tuple[np.ndarray, float] | None:
    """The loss rows' duals on all counts 0..n (0 outside S), clipped to >= 0 and scaled to
    sum to one, with the scale; None when the solver gave none (or none positive)."""
    if loss_duals is None:
        return None
    duals = np.clip(np.asarray(loss_duals, dtype=float).ravel(), 0.0, None)
    total = float(duals.sum())
    if not np.isfinite(total) or total <= 0:
        return None
    lam = np.zeros(problem.n + 1)
    lam[list(problem.support)] = duals / total
    return lam, total


def gs_dual_bound(problem: CountQuery, below: Any, above: Any, loss_duals: Any) -> float:
    """A lower bound on the GS optimum from any multipliers of the GS LP's rows (its own dual).

    Multipliers ``lambda1`` of ``alpha x[i, r] <= x[i+1, r]``, ``lambda2`` of
    ``alpha x[i+1, r] <= x[i, r]`` (both n x (n+1)) and ``mu`` of the loss rows on S are
    clipped to >= 0 and scaled so that ``sum mu = 1``. For every stochastic x the
    Lagrangian ``sum_i sum_r D[i, r] x[i, r]`` with
    ``D[i, r] = mu_i l(i, r) + alpha lambda1[i, r] - lambda1[i-1, r] + alpha lambda2[i-1, r] - lambda2[i, r]``
    is at most the worst loss of x on S when x is private, so ``sum_i min_r D[i, r]`` bounds
    the optimum from below whatever the solver's accuracy (inexact duals cost tightness,
    never validity). Returns -inf when the solver gave no duals.
    """
    scaled = _normalised_multipliers(problem, loss_duals)
    if scaled is None or below is None or above is None:
        return -np.inf
    lam, total = scaled
    alpha = problem.alpha
    up = np.clip(np.asarray(below, dtype=float), 0.0, None) / total
    down = np.clip(np.asarray(above, dtype=float), 0.0, None) / total
    d = lam[:, None] * problem.loss_matrix
    d[:-1] += alpha * up - down
    d[1:] += alpha * down - up
    return float(d.min(axis=1).sum())


def interaction_dual_bound(problem: CountQuery, loss_duals: Any) -> float:
    """A lower bound on the GS optimum from the loss rows' duals of the interaction LP.

    For any prior ``mu`` on S (the duals clipped and normalised), the consumer's best remap of
    the geometric mechanism's output r costs ``min_r' C[r, r']`` (:func:`lagrangian_costs`),
    and the sum over r bounds every remap's worst loss from below (weak duality in T); by
    Theorem 1 the interaction optimum is the GS optimum. Returns -inf without duals.
    """
    scaled = _normalised_multipliers(problem, loss_duals)
    if scaled is None:
        return -np.inf
    return float(lagrangian_costs(problem, scaled[0]).min(axis=1).sum())


#: Largest alpha the ``interaction`` route takes. Its remap is read back as ``T = G^{-1} x``,
#: whose entries grow as 1 / (1 - alpha)^2, so the solver's 1e-10 on x becomes
#: 1e-10 / (1 - alpha)^2 on T: measured against ``factored`` (n = 3..100, three losses) the
#: route's objective is within 4e-11 up to alpha = 0.999, 3.9e-9 at 0.9999, 7e-6 at 0.99999,
#: and at 1 - 1e-9 a row of T clipped to nothing (an internal error).
INTERACTION_MAX_ALPHA = 0.999


def _interaction_applies(problem: CountQuery) -> bool:
    return problem.alpha <= INTERACTION_MAX_ALPHA


@register(
    KIND, "interaction", exact=True, uses_solver=True, cost=lambda p: 1.5 * _lp_cost(p),
    memory=lambda p: (1.5 * _lp_memory(p)[0], "n"), applies=_interaction_applies,
    requires=f"alpha <= {INTERACTION_MAX_ALPHA} (epsilon >= {-np.log(INTERACTION_MAX_ALPHA):.4g}): its remap G^-1 x amplifies "
             "the solver's tolerance by 1 / (1 - alpha)^2",
    summary="geometric mechanism + consumer's optimal remap (Theorem 1)",
)
def solve_interaction(problem: CountQuery, solver: str | None, repair: bool) -> Solution:
    """The program's x read back as ``G T`` with ``T = G^{-1} x`` clipped to >= 0 and renormalised
    (any row-stochastic T keeps G's privacy), held factored: certified in log space and sampled
    exactly at any n epsilon, where the dense ``G T`` underflows (n epsilon > 708)."""
    return _in_loss_units(problem, lambda scaled: _solve_interaction(scaled, solver))


def _solve_interaction(problem: CountQuery, solver: str | None) -> Solution:
    program = build_geometric_interaction_program(problem)
    info = run_program(program.program, solver=solver, owner="count_query interaction")
    remap = np.clip(geometric_inverse(problem.n, problem.alpha) @ program.x.value, 0.0, None)
    mechanism, losses = evaluated(problem, sparse.csr_array(remap))
    solution = _factored_solution(
        problem, mechanism, losses, method="interaction", exact=True, solver=info.solver, status=info.status,
        objective=float(losses.max()), details={"solver_objective": info.objective, "solver_max_violation": info.max_violation,
                                                "remap": mechanism_frame(mechanism.remap.toarray())},
    )
    return _judged_against_optimum(solution, interaction_dual_bound(problem, program.program.constraints[2].dual_value))


#: Details that are losses, multiplied back by the scale.
_LOSS_DETAILS = ("lower_bound", "upper_bound", "gap", "solver_objective")


def _in_loss_units(problem: CountQuery, run: Callable[[CountQuery], Solution]) -> Solution:
    """``run(problem)``, for a loss table far from order one on the table divided by an exact
    power of two (:func:`dpopt.solvers.solver_unit`).

    The programs' tolerances are absolute: HiGHS drops matrix entries below 1e-12 and the
    bounds' gap test allows 1e-13 (for an optimum of 0). A table times 1e-14 was "optimal" at
    the geometric mechanism's objective (22% above the optimum) with a lower bound of 0. The
    mechanism is the same for every positive scale; its losses and bounds are multiplied back.
    Named losses (|i - r|, (i - r)^2, [i != r]) are solved as they are.
    """
    scale = solver_unit(float(problem.loss_matrix.max())) if problem.loss_name == "table" else 1.0
    if scale == 1.0:
        return run(problem)
    scaled = CountQuery(n=problem.n, alpha=problem.alpha, loss=problem.loss_matrix / scale, side_information=list(problem.support))
    solution = run(scaled)
    details = {key: value * scale if key in _LOSS_DETAILS else value for key, value in solution.details.items()}
    row_loss = None if solution.row_loss is None else solution.row_loss * scale
    return dataclasses.replace(solution, problem=problem, objective=solution.objective * scale, row_loss=row_loss, details=details)


def _geometric_memory(problem: CountQuery) -> tuple[float, str]:
    # G T with T = I: O(n) (log-space certificate, kernel recurrences; measured peak RSS growth
    # 220 B per count for absolute loss, 315 B for squared, at n = 4e6); a loss table is
    # summed in blocks of BLOCK dense rows
    return 600.0 * (problem.n + 1) + (0.0 if problem.loss_name in NAMED_ROW_LOSSES else 8.0 * 4 * BLOCK * (problem.n + 1)), "n"


@register(
    KIND, "geometric", exact=False, uses_solver=False, cost=lambda p: float(p.n + 1) * 1e-3, memory=_geometric_memory,
    summary="geometric mechanism G (Definition 4), no remap: an upper bound",
)
def solve_geometric(problem: CountQuery, solver: str | None, repair: bool) -> Solution:
    """G itself, held as ``G T`` with T = I: its certificate is measured in log space and its
    releases are drawn exactly at any n epsilon (the dense G's entries underflow beyond
    n epsilon = 708, where a zero beside a neighbour's non-zero measures as an infinite loss)."""
    mechanism, losses = evaluated(problem, sparse.eye_array(problem.n + 1, format="csr"))
    return _factored_solution(problem, mechanism, losses, method="geometric", exact=True, solver="none", status="closed_form",
                              objective=float(losses.max()))


def optimal_interaction(problem: CountQuery, deployed: np.ndarray, *, solver: str | None = None) -> Solution:
    """The consumer's optimal remap T* of any deployed mechanism y, and y T* (Section 2.4.3).

    Parameters
    ----------
    problem : CountQuery
        The consumer: loss, side information, and the privacy target the deployed
        mechanism is certified against.
    deployed : array_like
        The mechanism y, rows = true counts 0..n, any number of output columns.

    Returns
    -------
    Solution
        ``mechanism`` is the induced y T*; ``details["remap"]`` is T*. Post-processing
        never weakens privacy, so y T* is certified against the same target as y.
    """
    start = time.perf_counter()
    program = build_interaction_program(problem, deployed)
    info = run_program(program.program, solver=solver, owner="interaction")
    remap = np.clip(program.remap.value, 0.0, None)
    remap /= remap.sum(axis=1, keepdims=True)
    x = program.deployed @ remap
    cert = certify(x, problem.epsilon, method="post-processing of the deployed mechanism, measured")
    solution = _judged(_solution(
        problem, x, cert, method="interaction", solver=info.solver, status=info.status,
        details={"solver_objective": info.objective, "remap": mechanism_frame(remap, columns=range(problem.n + 1))},
    ), remap_dual_bound(problem, program.deployed, program.program.constraints[1].dual_value))
    return solution.with_timing(method="interaction", exact=True, seconds=time.perf_counter() - start)


def remap_dual_bound(problem: CountQuery, deployed: np.ndarray, loss_duals: Any) -> float:
    """A lower bound on the best remap of ``deployed`` from any multipliers of its loss rows.

    For a prior ``mu`` on S (the duals clipped and normalised), a consumer who sees output r of
    y answers the r' of least ``sum_i mu_i y[i, r] l(i, r')``; the sum of those minima over r is
    at most the worst loss of every remap (weak duality). Returns -inf without duals.
    """
    scaled = _normalised_multipliers(problem, loss_duals)
    if scaled is None:
        return -np.inf
    costs = np.asarray(deployed, dtype=float).T @ (scaled[0][:, None] * problem.loss_matrix)
    return float(costs.min(axis=1).sum())


def _factored_cost(problem: CountQuery) -> float:
    # O(n^2) pricing per round; a user table's dense master columns cost more per pivot
    # but still far less than the direct LP's (n+1)^2 variables (n = 1000 in <= 31 s).
    return float(problem.n + 1) ** (2 if isinstance(problem.loss, str) else 2.5)


@register(
    KIND, "factored", exact=True, uses_solver=False, cost=_factored_cost, memory=_factored_memory,
    summary="G x sparse remap T by column generation, with certified lower/upper bounds",
)
def solve_factored(problem: CountQuery, solver: str | None, repair: bool) -> Solution:
    return _in_loss_units(problem, _solve_factored)


def _solve_factored(problem: CountQuery) -> Solution:
    result = solve_by_column_generation(problem)
    result = dataclasses.replace(result, lower_bound=max(result.lower_bound, _cheapest_output_bound(problem)))
    closed = result.within(GAP_TOLERANCE)
    return _factored_solution(
        problem,
        result.mechanism,
        result.row_losses,
        method="factored",
        exact=closed,
        solver=result.solver,
        status="optimal" if closed else "gap_above_tolerance",
        objective=result.upper_bound,
        details={
            "lower_bound": result.lower_bound,
            "upper_bound": result.upper_bound,
            "gap": result.gap,
            "relative_gap": result.relative_gap,
            "route": result.route,
            "rounds": result.rounds,
            "columns": result.columns,
            "remap_nonzeros": int(result.mechanism.remap.nnz),
            **({"master_failure": result.master_failure} if result.master_failure else {}),
        },
    )


def _cheapest_output_bound(problem: CountQuery) -> float:
    """``max_(i in S) min_r l(i, r)``: no mechanism's expected loss at i is below i's cheapest output.

    A certified bound of its own, kept beside the Lagrangian one: where the optimum is 0 (S a
    single count, answered surely) the Lagrangian bound came out a rounding below it
    (-3.9e-15) and the reported relative gap was infinite. For a named loss the cheapest
    output is the count itself, at loss 0."""
    if problem.loss_name != "table":
        return 0.0
    return float(problem.loss_matrix[list(problem.support)].min(axis=1).max())


def _binary_zero_one(problem: CountQuery) -> bool:
    return problem.n == 1 and problem.loss_name == "zero_one" and len(problem.support) == 2


@register(
    KIND, "randomized_response", exact=True, uses_solver=False, cost=lambda p: 1e-6, applies=_binary_zero_one,
    summary="binary randomized response (Liu-Wu-Zhou Eq. 12): optimal for n = 1 under 0/1 loss",
)
def solve_randomized_response(problem: CountQuery, solver: str | None, repair: bool) -> Solution:
    x = randomized_response_matrix(2, problem.epsilon)
    cert = certify(x, problem.epsilon, method="measured: randomized response")
    return _solution(problem, x, cert, method="randomized_response", solver="none", status="closed_form")


@register_reader(KIND)
def read_count_query(problem: CountQuery, stored: StoredSolution) -> Solution:
    """Rebuild an exported count-query solution: shapes checked, certificate and losses recomputed.

    The optimality claim (``exact``) is carried over as stored; everything that bears on
    privacy or on the reported objective is measured again on the matrix read.
    """
    fields = {**stored_fields(stored), "details": {"read_from": str(stored.path)}}
    if "factored" in stored.meta:
        solution = _read_factored(problem, stored, fields)
    else:
        size = list(range(problem.n + 1))
        x = check_labels(stored, size, size)
        solution = _solution(problem, x, certify(x, problem.epsilon, method="measured on read"), **fields)
    return dataclasses.replace(solution, exact=bool(stored.summary["exact"]))


def _read_factored(problem: CountQuery, stored: StoredSolution, fields: dict[str, Any]) -> Solution:
    factors = stored.meta["factored"]
    if factors.get("n") != problem.n or factors.get("alpha") != problem.alpha:
        raise stored.fail(f"its factors (n = {factors.get('n')}, alpha = {factors.get('alpha')}) are not those of its problem")
    frame = stored.table
    size = problem.n + 1
    rows = check_array(frame["from"].to_numpy(), "from", "remap", ndim=1, integer=True, low=0)
    cols = check_array(frame["to"].to_numpy(), "to", "remap", ndim=1, integer=True, low=0)
    probability = check_array(frame["probability"].to_numpy(), "probability", "remap", ndim=1, low=0.0)
    if rows.size and max(rows.max(), cols.max()) >= size:
        raise stored.fail(f"its remap has an index beyond n = {problem.n}")
    remap = sparse.csr_array((probability, (rows.astype(int), cols.astype(int))), shape=(size, size))
    sums = np.asarray(remap.sum(axis=1)).ravel()
    if np.abs(sums - 1.0).max() > 1e-9:
        raise stored.fail(f"its remap is not row-stochastic (row {int(np.argmax(np.abs(sums - 1)))} sums to {sums[np.argmax(np.abs(sums - 1))]:.6g})")
    mechanism = FactoredMechanism(n=problem.n, alpha=problem.alpha, remap=remap)
    support = np.array(problem.support)
    losses = mechanism.expected_losses(problem.loss_name, problem.loss_rows, support)  # as the solve measured them
    objective = float(losses.max())
    return Solution(
        problem=problem, exact=True, seconds=0.0, objective=objective, certificate=mechanism.certificate(problem.epsilon),
        factored=mechanism, row_loss=pd.Series(losses, index=pd.Index(problem.support, name="true"), name="expected_loss"),
        **{**fields, "details": {**fields["details"], "upper_bound": objective}},
    )

"""Certified optima without a master: the geometric mechanism itself, two counts, the zero-one flow.

Zero-one loss needs no master at all
------------------------------------
Only the diagonal of ``G T`` counts, so the interaction LP is a lossy flow on the path with
O(n) rows (:mod:`dpopt.programs.zero_one_flow`), solved and certified by
:func:`solve_zero_one_by_flow` (Newton's method on an O(n) feasibility sweep, with
HiGHS's dual simplex where that does not settle; T decomposed from the flows, the LP's
duals priced exactly as the lower bound). Column generation tailed off on this
degenerate master (alpha = 0.999: n = 1000 500 rounds, 95 s, gap 4e-6; n = 2000 > 300 s),
and the dual simplex took 68 s at n = 30,000 where the sweep takes 0.3 s. If the flow's
certificate falls short, column generation starts from the flow's support.
Before it, where n is large against 1 / (1 - alpha), G itself is optimal and
:func:`identity_certificate` proves it with an explicit lambda, no LP at all (alpha = 0.99:
n = 5000 39 -> 0.35 s, n = 10,000 > 300 -> 1.2 s).

Two counts (2026-11-25). With |S| = 2 the Lagrangian dual is one-dimensional, and the
masters were the weak route there: S = {n/4, 3n/4}, alpha = 0.99, n = 10,000 ended
uncertified (absolute: upper bound 67% above the optimum 3.06e-8; squared: 1.3e-4 apart
after 98 s), as HiGHS's tolerances and the moments' cancellation in the pricing (~1e-14
absolute) are the size of such optima. :func:`two_count_threshold` (absolute, zero-one: a
threshold remap in closed form) and :func:`two_count_bisection` (squared: bisection on the
dual) are exact in 2.6 and 1.9 s, their bounds sums of non-negative terms.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import sparse

from dpopt.mechanisms.geometric import column_weights
from dpopt.problems.count_query import CountQuery
from dpopt.programs.column_generation.pricing import price_zero_one
from dpopt.programs.column_generation.result import ABSOLUTE_GAP, ColumnGenerationResult, evaluated
from dpopt.programs.zero_one_flow import remap_from_flows, solve_flow_by_sweep, solve_flow_program


def _closed_form_result(problem: CountQuery, remap: sparse.csr_array, lower: float, tolerance: float, start: float,
                        route: str, columns: int | None = None) -> ColumnGenerationResult | None:
    """A closed form's remap as a result, certified by ``lower`` and its exact worst loss; None if they disagree.
    ``columns``: what to report as master columns (default: the remap's entries)."""
    mechanism, losses = evaluated(problem, remap)
    upper = float(losses.max())
    if upper - lower > tolerance * abs(upper) + ABSOLUTE_GAP:
        return None
    return ColumnGenerationResult(mechanism=mechanism, lower_bound=lower, upper_bound=upper, rounds=0,
                                  columns=int(remap.nnz) if columns is None else columns, master_objective=upper,
                                  row_losses=losses, seconds=time.perf_counter() - start, history=[], route=route, solver="none")


def identity_certificate(problem: CountQuery, *, tolerance: float = 1e-10) -> ColumnGenerationResult | None:
    """Zero-one loss, S = all: the geometric mechanism itself, certified optimal without a master, or None.

    Every inner row of G_(n, alpha) has the same zero-one loss ``1 - g`` with
    ``g = (1 - alpha) / (1 + alpha)`` (its diagonal), the end rows less. Take loss-row
    multipliers ``lambda_i ~ alpha^|i - n/2|`` on the inner rows (0 at the ends): then
    ``lambda_r' G[r', r]`` is largest at ``r' = r`` for every inner r, so the Lagrangian
    bound (exact pricing, valid for any lambda) is ``1 - g - 2 c g_0 alpha^(n/2)``, within
    the tolerance of the identity's worst loss once ``alpha^(n/2)`` is negligible (alpha =
    0.99: n >= about 4000; alpha = 0.9: n >= about 400). There the first master's degenerate
    simplex (39 s at n = 5000, alpha = 0.99) is not needed at all. The bound is computed,
    not assumed: if it falls short, None, and column generation runs as usual.
    """
    n, alpha = problem.n, problem.alpha
    if problem.loss_name != "zero_one" or len(problem.support) != n + 1 or n < 2:
        return None
    start = time.perf_counter()
    rows = np.arange(n + 1)
    lam = alpha ** np.abs(rows - n / 2.0)
    lam[[0, n]] = 0.0
    lam /= lam.sum()
    identity = sparse.eye_array(n + 1, format="csr")
    lower = price_zero_one(problem, lam, identity).lower_bound
    return _closed_form_result(problem, identity, lower, tolerance, start, "identity certificate", columns=0)


def two_count_threshold(problem: CountQuery, *, tolerance: float = 1e-10) -> ColumnGenerationResult | None:
    """Absolute or zero-one loss, S two counts a < b: the optimal remap in closed form, or None.

    Every output between a and b costs the pair ``(w_a (r' - a), w_b (b - r'))`` for a row
    with weights ``w_i = G[i, r]``, a point on the segment between mapping to a and mapping
    to b, and outputs beyond them are dominated: so an optimal T maps each row to a or b
    (zero-one loss: any other output costs both; below, ``b - a`` is then 1).
    Row r sent to b costs input a ``(b - a) w_a(r)`` and saves input b ``(b - a) w_b(r)``, a
    ratio ``alpha^(|b - r| - |a - r|)`` that falls with r: the minimax sends rows 0..s - 1 to a,
    s + 1..n to b and splits row s so that the two losses are equal. The lower bound is the
    Lagrangian bound at the multipliers on which row s is indifferent (``lambda_a w_a(s) =
    lambda_b w_b(s)``): ``(b - a) sum_r min(lambda_a w_a(r), lambda_b w_b(r))``; the upper bound
    is the exact loss of the remap; None if they disagree. Column generation needed this where
    the optimum is near 0 (b - a = 5000, alpha = 0.99: 5e-8, left 43% apart by HiGHS's
    tolerances and the pricing's 1e-14 cancellation).
    """
    support = problem.support
    if problem.loss_name not in ("absolute", "zero_one") or len(support) != 2:
        return None
    start = time.perf_counter()
    n, alpha = problem.n, problem.alpha
    a, b = int(support[0]), int(support[1])
    price = float(b - a) if problem.loss_name == "absolute" else 1.0  # what either input pays for the other's count
    rows = np.arange(n + 1)
    g = column_weights(n, alpha)
    to_a, to_b = g * alpha ** np.abs(rows - a), g * alpha ** np.abs(rows - b)  # G[a, r], G[b, r]
    # rows r < s to a, r > s to b: loss of a is the weight of a beyond s, loss of b that of b before s
    beyond_a = np.concatenate([np.cumsum(to_a[::-1])[::-1][1:], [0.0]])
    before_b = np.concatenate([[0.0], np.cumsum(to_b)[:-1]])
    # the first row whose sending to a in full already costs b at least what a pays
    s = int(np.argmax(before_b + to_b >= beyond_a))
    # row s: a fraction f to a equalises (1 - f) G[a, s] + beyond_a = before_b + f G[b, s]
    f = float(np.clip((to_a[s] + beyond_a[s] - before_b[s]) / (to_a[s] + to_b[s]), 0.0, 1.0))
    share = np.ones(n + 1)
    share[s] = 1.0 - f  # row s: 1 - f to b, f to a
    remap = sparse.csr_array((np.r_[share, f], (np.r_[rows, s], np.r_[np.where(rows < s, a, b), a])), shape=(n + 1, n + 1))
    # multipliers (theta, 1 - theta) on (a, b) with row s indifferent; the Lagrangian row
    # minimum over all r' is at a or b (the cost is convex piecewise linear in r' with kinks
    # only there), so the bound is a sum of minima, free of the cancellation in the general
    # pricing's moments (about 1e-14 absolute, the size of this optimum at b - a = 5000)
    theta = to_b[s] / (to_a[s] + to_b[s])
    lower = float(price * np.minimum(theta * to_a, (1.0 - theta) * to_b).sum())
    return _closed_form_result(problem, remap, lower, tolerance, start, "two counts: threshold remap")


def two_count_bisection(problem: CountQuery, *, tolerance: float = 1e-10, iterations: int = 64) -> ColumnGenerationResult | None:
    """Squared loss, S two counts a < b: the one-dimensional Lagrangian dual, or None.

    With multipliers ``(theta, 1 - theta)`` on (a, b), row r's Lagrangian cost of output r'
    is ``u (r' - a)^2 + v (b - r')^2`` (``u = theta G[a, r]``, ``v = (1 - theta) G[b, r]``),
    least at the integer next to the weighted mean ``(u a + v b) / (u + v)``, evaluated as
    that sum of non-negative terms (the general pricing's moments cancel: at n = 10,000 its
    bound came out 1e-11 above this optimum of 1.2e-4). h(theta), the sum of the row minima,
    is a lower bound for every theta; its minimiser T(theta) has ``E_a >= E_b`` below the dual
    optimum and ``E_a <= E_b`` above it. Bisection brackets it to machine precision; the
    minimisers on either side, mixed so that the two losses are equal, give the upper bound.
    None if the bounds disagree. S = {n/4, 3n/4}, alpha = 0.99, n = 10,000: column
    generation ended 1.3e-4 apart after 98 s.
    """
    support = problem.support
    if problem.loss_name != "squared" or len(support) != 2:
        return None
    start = time.perf_counter()
    n, alpha = problem.n, problem.alpha
    a, b = int(support[0]), int(support[1])
    rows = np.arange(n + 1)
    g = column_weights(n, alpha)
    to_a, to_b = g * alpha ** np.abs(rows - a), g * alpha ** np.abs(rows - b)  # G[a, r], G[b, r]
    best_lower = -np.inf

    def minimiser(theta: float) -> tuple[sparse.csr_array, float]:
        nonlocal best_lower
        u, v = theta * to_a, (1.0 - theta) * to_b
        weight = u + v
        centre = np.divide(u * a + v * b, weight, out=np.full(n + 1, float(a)), where=weight > 0)
        candidates = np.clip(np.stack([np.floor(centre), np.ceil(centre)]), 0, n)
        costs = u * (candidates - a) ** 2 + v * (b - candidates) ** 2
        pick = np.argmin(costs, axis=0)
        best_lower = max(best_lower, float(costs[pick, rows].sum()))
        remap = sparse.csr_array((np.ones(n + 1), (rows, candidates[pick, rows].astype(np.int64))), shape=(n + 1, n + 1))
        losses = evaluated(problem, remap)[1]
        return remap, float(losses[0] - losses[1])  # E_a - E_b

    low, high = 0.0, 1.0
    (remap_low, excess_low), (remap_high, excess_high) = minimiser(low), minimiser(high)
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        if not low < middle < high:
            break
        remap, excess = minimiser(middle)
        if excess > 0:
            low, remap_low, excess_low = middle, remap, excess
        else:
            high, remap_high, excess_high = middle, remap, excess
    share = excess_high / (excess_high - excess_low) if excess_low != excess_high else 1.0  # of remap_low
    remap = (share * remap_low + (1.0 - share) * remap_high).tocsr()
    remap.eliminate_zeros()
    return _closed_form_result(problem, remap, best_lower, tolerance, start, "two counts: Lagrangian bisection")


def solve_zero_one_by_flow(problem: CountQuery, *, tolerance: float = 1e-10) -> tuple[ColumnGenerationResult, bool]:
    """Zero-one loss: the optimum from the O(n) flow LP (:mod:`dpopt.programs.zero_one_flow`), certified.

    The remap decomposed from the flows is clipped and renormalised; its exact worst loss
    is the upper bound, and the LP's multipliers, priced exactly over all (n+1)^2 columns,
    give the lower bound. Returns the result and whether the bounds meet the tolerance
    (if not, the caller goes on with column generation from the flow's support).
    """
    start = time.perf_counter()
    alpha = problem.alpha
    swept = solve_flow_by_sweep(problem)
    flow = swept or solve_flow_program(problem)
    remap = remap_from_flows(alpha, flow.supply, flow.right, flow.left)
    mechanism, losses = evaluated(problem, remap)
    upper = float(losses.max())
    lower = price_zero_one(problem, flow.lam, mechanism.remap).lower_bound
    result = ColumnGenerationResult(mechanism=mechanism, lower_bound=lower, upper_bound=upper, rounds=1,
                                    columns=int(mechanism.remap.nnz), master_objective=1.0 - flow.value * (1 - alpha) / (1 + alpha),
                                    row_losses=losses, seconds=time.perf_counter() - start,
                                    history=[{"round": 1, "columns": int(mechanism.remap.nnz), "master": upper, "lower": lower}],
                                    route="zero-one flow", solver="HIGHS" if swept is None else "none")
    return result, upper - lower <= tolerance * abs(upper) + ABSOLUTE_GAP

"""Theorem 2 (part 2) for p = inf with several queries: the exact minimum of E||Y||_inf.

Perrier et al., Theorem 2 bounds the l_inf error of ``c (.) Q'x + Lap(c)`` by
``n ||c (.) Q' - Q||_inf + E||Y||_inf``. Within ``c Q' = Q`` the first term vanishes and what
is left is

    minimise  g(s) = E max_k |Y_k| = int_0^inf 1 - prod_k (1 - e^(-s_k t)) dt
    over      s = 1 / c >= 0  with  sum_k |Q_ki - Q_kj| s_k <= d_X(i, j)  for every pair,

since ``|Y_k| ~ Exp(rate s_k)``. ``g`` is convex in s (``max_k X_k / s_k`` is convex in s for
every fixed ``X >= 0``, and an expectation of convex functions is convex) but has no
disciplined-convex form (its closed form is an alternating inclusion-exclusion sum), so
cvxpy cannot state it. It is smooth, and its value and gradient are one-dimensional
integrals, so it is minimised here by SLSQP on the linear constraints with exact
gradients, and the answer is certified by the first-order (Frank-Wolfe) bound

    g(s*) + min_{s in P} grad g(s*) . (s - s*)  <=  min_{s in P} g(s)

(an LP over the same constraints, solved by HiGHS), which holds for every convex g and
every s*, so ``lower_bound <= optimum <= objective`` is proven, not assumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate, optimize

from dpopt.dx.metric import DXMetric
from dpopt.dx.scales import (
    PairReport,
    _lazily,
    _pairs_of,
    _workload,
    essential_pairs,
    nearest_pairs,
)
from dpopt.validation import SolverError

__all__ = ["LinfScales", "exact_linf_scales", "expected_max", "expected_max_gradient"]

OWNER = "dx exact_linf"
#: Relative accuracy of the quadratures for g and its gradient.
QUADRATURE_TOLERANCE = 1e-13


def _survival_gap(t: float, rates: np.ndarray) -> float:
    """``1 - prod_k (1 - e^(-s_k t))``, computed without cancellation for small t."""
    return float(-np.expm1(np.sum(np.log(-np.expm1(-rates * t)))))


def expected_max(rates: Any) -> float:
    """``E max_k X_k`` for independent ``X_k ~ Exp(rate s_k)`` (= E||Y||_inf for ``Y_k ~ Lap(1/s_k)``).

    Numerical integration of the survival function, stable for any number of queries
    (the inclusion-exclusion sum of :func:`dpopt.dx.scales.expected_max_laplace` is exact
    in exact arithmetic but cancels badly beyond ~20 terms; the two are tested against
    each other).
    """
    s = np.asarray(rates, dtype=float)
    scale = 1.0 / s.min()  # integrate in units of the largest mean, where the integrand lives
    value, _ = integrate.quad(lambda u: _survival_gap(u * scale, s), 0.0, np.inf,
                              epsabs=0.0, epsrel=QUADRATURE_TOLERANCE, limit=200)
    return float(value * scale)


def expected_max_gradient(rates: Any) -> np.ndarray:
    """``d/ds_i E max_k X_k = -int_0^inf t e^(-s_i t) prod_{j != i} (1 - e^(-s_j t)) dt``."""
    s = np.asarray(rates, dtype=float)
    scale = 1.0 / s.min()

    def integrand(u: float) -> np.ndarray:
        t = u * scale
        factors = -np.expm1(-s * t)
        others = np.prod(factors) / np.where(factors > 0, factors, 1.0)
        if np.any(factors == 0):  # t = 0 exactly: every other factor vanishes too
            others = np.zeros_like(s)
        return t * np.exp(-s * t) * others

    value, _ = integrate.quad_vec(integrand, 0.0, np.inf, epsabs=0.0, epsrel=QUADRATURE_TOLERANCE)
    return -np.asarray(value) * scale


@dataclass(frozen=True)
class LinfScales:
    """The scales c minimising E||Y||_inf within ``c Q' = Q``, and their certificate of optimality."""

    scales: np.ndarray
    objective: float
    lower_bound: float
    pairs: PairReport
    iterations: int

    def to_dict(self) -> dict[str, Any]:
        return {"linf_lower_bound": self.lower_bound, "slsqp_iterations": self.iterations, **self.pairs.to_dict()}


def _first_order_bound(sigma: np.ndarray, value: float, gradient: np.ndarray, a: np.ndarray, d: np.ndarray) -> float:
    """``g(s*) + min_{s >= 0, a s <= d} grad . (s - s*)``: a lower bound on min g over those rows
    (g is convex), with the inner minimum bounded from below by the LP's dual and less the rounding
    of the sum, so that it holds whatever the solver's tolerances.

    Each variable is measured in units of the largest value its rows allow it alone
    (``min_r d_r / a_rk``), then each row is scaled to a largest coefficient of 1 (the same
    set): HiGHS drops coefficients below 1e-9, and with a budget of 1e-9 in the metric every
    coefficient was that small, so the LP lost its rows and came back unbounded; with one
    budget of 1e-13 beside 2 the variables were 1e13 apart and HiGHS ended "unknown".
    """
    with np.errstate(divide="ignore"):
        reach = np.where(a > 0, d[:, None] / np.where(a > 0, a, 1.0), np.inf).min(axis=0)
    reach = np.where(np.isfinite(reach) & (reach > 0), reach, 1.0)
    scaled = a * reach[None, :]
    scale = np.abs(scaled).max(axis=1)
    scale = np.where(scale > 0, scale, 1.0)
    cost, rows, rhs = gradient * reach, scaled / scale[:, None], d / scale
    result = optimize.linprog(cost, A_ub=rows, b_ub=rhs, bounds=(0, None), method="highs")
    if result.status != 0:
        raise SolverError("HIGHS", result.message, "(exact_linf first-order bound)")
    # Weak duality, not HiGHS's objective (its reduced costs are optimal only to a tolerance, and
    # the bound came out 3 ulps above another route's feasible value; the explore profile, 2026-11-29):
    # for any y >= 0 and t in the box [0, 1] that every feasible t lies in (a >= 0 and each
    # column's own row allows at most its reach), cost . t >= -y . rhs + sum min(0, cost + rows^T y).
    y = np.maximum(-result.ineqlin.marginals, 0.0)
    reduced = cost + rows.T @ y
    terms = np.array([value, -(y @ rhs), np.minimum(reduced, 0.0).sum(), -(gradient @ sigma)])
    rounding = 8 * np.finfo(float).eps * (np.abs(terms).sum() + np.abs(y) @ np.abs(rhs) + np.abs(reduced).sum())
    return float(terms.sum() - rounding)


def exact_linf_scales(query: Any, metric: DXMetric, *, reduce: bool = True) -> LinfScales:
    """Minimise ``E||Y||_inf`` over private scales with ``c Q' = Q`` (pairs reduced and added lazily).

    The program is solved in ``sigma = unit / c``, with ``unit`` Strategy 2's common scale,
    so sigma = 1 is feasible and every term is of order one. Queries constant on the
    universe need no noise (c = 0). Returns the scales, E||Y||_inf at them, and the
    certified lower bound of :func:`_first_order_bound` (over the rows used, a superset
    of the private set, so it bounds the true optimum from below).
    """
    q = _workload(query, metric)
    diff, d, universe = _pairs_of(q, metric, essential_pairs(metric) if reduce else metric.pairs())
    total = len(metric.pairs()[0])
    used = diff.sum(axis=0) > 0
    c = np.zeros(q.shape[0])
    if not used.any():
        return LinfScales(c, 0.0, 0.0, PairReport(total, len(d), 0, 0), 0)
    a = diff[:, used]
    unit = float((a.sum(axis=1) / d).max())
    a_unit = a / unit
    state: dict[str, Any] = {}

    def solve(rows: np.ndarray) -> np.ndarray:
        start = state.get("sigma", np.ones(a.shape[1]))
        start = start / max(1.0, float(((a_unit[rows] @ start) / d[rows]).max()))  # feasible start
        result = optimize.minimize(
            expected_max, start, jac=expected_max_gradient, method="SLSQP",
            constraints=[{"type": "ineq", "fun": lambda s: d[rows] - a_unit[rows] @ s, "jac": lambda s: -a_unit[rows]}],
            bounds=[(1e-12, None)] * a.shape[1], options={"ftol": 1e-15, "maxiter": 1000},
        )
        sigma = np.asarray(result.x, dtype=float)
        state.update(sigma=sigma, rows=rows, iterations=state.get("iterations", 0) + int(result.nit))
        return unit / sigma

    def ratios(scales: np.ndarray) -> np.ndarray:
        return (a / scales[None, :]).sum(axis=1) / d

    start = np.union1d(nearest_pairs(metric, universe), np.argmax(a / d[:, None], axis=0)) if reduce else np.arange(len(d))
    scales, rows, rounds = _lazily(solve, ratios, start, len(d))
    worst = float(ratios(scales).max())
    if worst > 1:  # solver tolerance: grow c until every pair holds
        scales = scales * worst
    sigma = unit / scales
    objective = unit * expected_max(sigma)
    bound = unit * _first_order_bound(sigma, expected_max(sigma), expected_max_gradient(sigma), a_unit[rows], d[rows])
    c[used] = scales
    return LinfScales(c, objective, min(bound, objective), PairReport(total, len(d), len(rows), rounds), state["iterations"])

"""Statistical queries under d_X-privacy (Perrier et al., Appendix C): Theorem 10, problem (14).

A statistical query averages a predicate over the n rows of a dataset,
``q(x) = (1/n) sum_i q(x_i)``; a d-way marginal has ``q(u) = u``. Theorem 10 releases
``Z = c (.) q(x') + Lap(c)`` where every row u is first mapped to ``u'``; it is d_X-private
when ``||q(u') - q(v')||_1 <= n d_X(u, v)`` for all u, v. For a budget that adds over the
attributes, ``d_X(u, v) = sum_i d_i(u_i, v_i)``, the condition holds attribute by
attribute (``|u'_i - v'_i| <= n d_i(u_i, v_i)``) and the l1 objective separates into
problem (14) per attribute:

    minimise over c_i >= 0 and the map u_i -> u'_i:   max_{u_i} |c_i u'_i - u_i| + c_i.

**Solved exactly here.** With ``w = c_i u'`` the constraint is ``w`` being
``c_i n``-Lipschitz for d_i, and the best sup-norm error of such a w is McShane-Whitney's
``E(c) = max_{u, v} (|u - v| - c n d_i(u, v))^+ / 2`` (:func:`dpopt.dx.smalldb.lipschitz_approximation`).
``F(c) = E(c) + c`` is convex and piecewise linear, so its minimum over c > 0 is at a
breakpoint of E, or in the limit c -> 0+ (a constant release at the midpoint, error
``range / 2``), reported apart as ``limit_at_zero``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.limits import MAX_MAGNITUDE
from dpopt.dx.metric import shortest_path_closure
from dpopt.dx.smalldb import envelope_breakpoints, lipschitz_approximation
from dpopt.mechanisms.grid_release import rounded_laplace_release
from dpopt.mechanisms.laplace import laplace_ppf
from dpopt.sampling import RandomSource, check_count, open_uniforms, require_simulation, resolve_rng
from dpopt.validation import check_array, check_int, fail

__all__ = ["MAX_JOINT_ROWS", "AttributeScale", "MarginalRelease", "joint_map_error", "marginal_attribute_scale"]

OWNER = "statistical query"


@dataclass(frozen=True)
class AttributeScale:
    """Problem (14)'s optimum for one attribute: its values, their images u', the scale c, the bound."""

    values: np.ndarray
    mapped: np.ndarray
    scale: float
    objective: float
    limit_at_zero: float


def marginal_attribute_scale(values: Any, distances: Any, n: int) -> AttributeScale:
    """Problem (14) for one attribute: values ``X_i`` (m numbers), their budget metric ``d_i`` (m x m), n rows."""
    u = check_array(values, "values", OWNER, ndim=1, max_abs=MAX_MAGNITUDE)
    d = check_array(distances, "distances", OWNER, ndim=2, low=0.0, allow_inf=True)
    rows = check_int(n, "n", OWNER, low=1)
    if d.shape != (u.size, u.size) or u.size < 2 or not np.array_equal(d, d.T) or np.any(np.diag(d) != 0):
        raise fail("distances", OWNER, f"a symmetric {u.size} x {u.size} metric with a zero diagonal on at least 2 values", d.shape)
    d = metric_closure(d)
    i, j = np.triu_indices(u.size, 1)
    gaps, budget = np.abs(u[i] - u[j]), rows * d[i, j]
    if np.any((gaps > 0) & (budget == 0)):
        raise fail("distances", OWNER, "positive between different values", d.shape)
    live = (gaps > 0) & np.isfinite(budget)
    limit = float(gaps.max() / 2)
    if not live.any():  # every pair unconstrained: release exactly (c -> 0 with w = u)
        return AttributeScale(u, u.copy(), 0.0, 0.0, limit)
    points = envelope_breakpoints(gaps[live] / 2, budget[live] / 2)
    points = points[points > 0]
    totals = [max(float(np.max((gaps[live] - c * budget[live]) / 2)), 0.0) + c for c in points]
    best = float(points[int(np.argmin(totals))])
    w, _ = lipschitz_approximation(u, np.where(np.isfinite(d), d, 1e300) * rows, best)
    return AttributeScale(u, w / best, best, float(min(totals)), limit)


def metric_closure(distances: np.ndarray) -> np.ndarray:
    """The largest metric below ``distances`` (shortest paths).

    Theorem 10's constraints ``|w_u - w_v| <= L d(u, v)`` for every pair imply them along every
    path, so they define the same set of maps with d or with its closure: (14) is unchanged,
    and McShane-Whitney's formula, which needs the triangle inequality, becomes exact for
    budgets that are not metrics.
    """
    return shortest_path_closure(distances)


@dataclass(frozen=True)
class MarginalRelease:
    """Theorem 10 for the d-way marginal ``q(x) = (1/n) sum_rows u``: ``Z_i = c_i mean_rows(u'_i) + Lap(c_i)``.

    ``attributes`` holds one :class:`AttributeScale` per column; privacy (Theorem 10 with an
    additive budget) is checked on construction: ``|u'_i - v'_i| <= n d_i(u_i, v_i)``.
    """

    attributes: Sequence[AttributeScale]
    distances: Sequence[np.ndarray]
    n: int

    def __post_init__(self) -> None:
        for k, (attribute, d) in enumerate(zip(self.attributes, self.distances)):
            i, j = np.triu_indices(attribute.values.size, 1)
            spread = np.abs(attribute.mapped[i] - attribute.mapped[j])
            budget = self.n * np.asarray(d, dtype=float)[i, j]
            if attribute.scale > 0 and np.any(spread > budget * (1 + 1e-9)):
                raise fail("attributes", OWNER, f"Theorem 10's condition on attribute {k}: |u' - v'| <= n d(u, v)", k)
            if attribute.scale == 0 and np.any((spread > 0) & np.isfinite(budget)):  # released without noise
                raise fail("attributes", OWNER, f"a map constant on attribute {k} wherever d is finite (its scale is 0)", k)

    def _rows(self, rows: Any) -> np.ndarray:
        data = check_array(rows, "rows", OWNER, ndim=2, max_abs=MAX_MAGNITUDE)
        if data.shape != (self.n, len(self.attributes)):
            raise fail("rows", OWNER, f"{self.n} rows of {len(self.attributes)} attributes", data.shape)
        return data

    def _exact_mean(self, data: np.ndarray, attribute: int) -> Fraction:
        """``mean_rows(u'_i)`` in rational arithmetic from the float64 map (counts per value, so n may be large)."""
        values = self.attributes[attribute]
        lookup = {float(v): Fraction(float(m)) for v, m in zip(values.values, values.mapped)}
        seen, counts = np.unique(data[:, attribute], return_counts=True)
        try:
            total = sum((lookup[float(v)] * int(k) for v, k in zip(seen, counts)), Fraction(0))
        except KeyError as exc:
            raise fail("rows", OWNER, f"values of attribute {attribute} in its value set", float(exc.args[0])) from None
        return total / self.n

    def grid_release(self, rows: Any, grid: float, count: int, source: RandomSource) -> np.ndarray:
        """``count`` releases, shape (count, d): each ``c_i mean(u'_i) + Lap(c_i)`` rounded to the nearest multiple
        of ``grid``, drawn exactly (:func:`dpopt.mechanisms.grid_release.rounded_laplace`; the means in
        rational arithmetic from the float64 c and u'). An attribute with c = 0 (a constant map) releases
        its mean rounded to the grid."""
        data = self._rows(rows)
        count = check_count(count, OWNER)
        out = np.empty((count, len(self.attributes)))
        for k, attribute in enumerate(self.attributes):
            mean = self._exact_mean(data, k)
            centre = mean * Fraction(float(attribute.scale)) if attribute.scale > 0 else mean
            out[:, k] = rounded_laplace_release(centre, float(attribute.scale), grid, count, source)
        return out

    def release(self, rows: Any, count: int = 1, *, rng: Any = None, secure: bool = False, exact: bool = True) -> np.ndarray:
        """``count`` floating-point releases for a dataset of n rows (n x d): simulation only (``exact=False``)."""
        require_simulation(exact, OWNER)
        data = self._rows(rows)
        count = check_count(count, OWNER)
        c = np.array([a.scale for a in self.attributes])
        mean = np.array([float(self._exact_mean(data, k)) for k in range(c.size)])
        centre = np.where(c > 0, c * mean, mean)  # c = 0: u' is released exactly (private only if constant)
        source = resolve_rng(rng, secure=secure)
        noise = laplace_ppf(open_uniforms(source, count * c.size).reshape(count, c.size), np.where(c > 0, c, 1.0))
        return centre + np.where(c > 0, noise, 0.0)


#: The largest product universe (prod_i |X_i|) :func:`joint_map_error` writes out (pairs: its square).
MAX_JOINT_ROWS = 400


def joint_map_error(values: Sequence[Any], distances: Sequence[Any], n: int, scales: Any) -> float:
    """Problem (13) at fixed scales c over *joint* maps: the smallest ``max_u ||c (.) u' - u||_1``.

    Here u' may depend on the whole row u (not attribute by attribute); Theorem 10's condition
    with the additive budget, ``sum_i |u'_i - v'_i| <= n sum_i d_i(u_i, v_i)``, is written for
    every pair of rows of the product universe, an LP in ``w = c (.) u'`` (HiGHS). The
    independent route against which (14)'s per-attribute optimum is tested: by the cube
    argument in :mod:`dpopt.methods.statistical_query` the two are equal for every c > 0.
    """
    import itertools

    import cvxpy as cp

    c = check_array(scales, "scales", OWNER, ndim=1, low=0.0)
    if c.shape != (len(values),) or np.any(c <= 0):
        raise fail("scales", OWNER, f"{len(values)} scales > 0", scales)
    sizes = [len(v) for v in values]
    cells = int(np.prod(sizes))
    if cells > MAX_JOINT_ROWS:
        raise fail("values", OWNER, f"a product universe of at most {MAX_JOINT_ROWS} rows for the joint LP", cells)
    index = np.array(list(itertools.product(*[range(s) for s in sizes])))
    u = np.column_stack([np.asarray(v, dtype=float)[index[:, k]] for k, v in enumerate(values)])
    a, b = np.triu_indices(cells, 1)
    budget = sum(np.asarray(d, dtype=float)[index[a, k], index[b, k]] for k, d in enumerate(distances))
    w, t = cp.Variable(u.shape), cp.Variable()
    constraints = [cp.sum(cp.abs(w - u), axis=1) <= t,
                   cp.abs(w[a] - w[b]) @ (1.0 / c) <= float(n) * budget]
    cp.Problem(cp.Minimize(t), constraints).solve(solver=cp.HIGHS)
    return float(t.value)

"""Methods for :class:`~dpopt.problems.statistical_query.StatisticalQuery` (Perrier et al., Appendix C).

Every method returns scales c and the value map u -> u' per attribute (parameters, no
matrix); ``objective`` is Theorem 11 (part 2, p = 1)'s bound
``max_u ||c (.) q(u') - q(u)||_1 + E||Y||_1 = sum_i max_{u_i} |c_i u'_i - u_i| + c_i``; the
certificate measures Theorem 10's condition with the additive budget,
``max_i max_{u_i != v_i} |u'_i - v'_i| / (n d_i(u_i, v_i))`` (target 1), on every pair of every
attribute; ``sample`` releases ``c (.) mean_rows(u') + Lap(c)`` for the problem's rows.

* ``exact`` -- problem (14) per attribute at its global optimum
  (:func:`dpopt.dx.statistical.marginal_attribute_scale`); where that optimum is the limit
  c -> 0+ (``n d < 2``: the bound prefers releasing a constant), c is taken
  :data:`TOWARDS_ZERO` times the best breakpoint, within c of the infimum, and the
  attribute is listed in ``parameters["infimum_as_c_to_zero"]``. The paper calls (14) a
  relaxation of (13); with an additive budget it is exact: for any scales c and any joint
  map (u' depending on the whole row), take attribute i's worst pair (a_i, b_i) and the 2^d
  rows choosing a_i or b_i in each attribute. Two rows differing only in attribute i are at
  d_X-distance d_i(a_i, b_i), so Theorem 10 forces ``|c_i u'_i(row) - c_i u'_i(row')| <=
  c_i n d_i(a_i, b_i)`` along every such edge, and the two errors of attribute i on that
  edge sum to at least ``|a_i - b_i| - c_i n d_i(a_i, b_i) = 2 E_i(c_i)``. Averaging over
  the cube, some row has total error ``>= sum_i E_i(c_i)``, which is what (14) attains
  separately. So (13)'s optimum is the sum of (14)'s (tested against (13)'s LP over joint
  maps, :func:`dpopt.dx.statistical.joint_map_error`).
* ``laplace`` -- the identity map and each attribute's own sensitivity,
  ``c_i = max_{u != v} |u - v| / (n d_i(u, v))``: Theorem 10 without pre-processing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpopt.certificates import Certificate
from dpopt.dx.smalldb import lipschitz_approximation
from dpopt.dx.statistical import (
    AttributeScale,
    MarginalRelease,
    marginal_attribute_scale,
    metric_closure,
)
from dpopt.export import StoredSolution, stored_fields
from dpopt.limits import MAX_MAGNITUDE
from dpopt.mechanisms.grid_release import ROUNDED_LAPLACE_SAMPLER, check_release_grid
from dpopt.problems.statistical_query import StatisticalQuery
from dpopt.registry import register, register_reader
from dpopt.sampling import RandomSource
from dpopt.solution import Solution
from dpopt.validation import check_array, fail

KIND = "statistical_query"

__all__ = ["statistical_solution", "theorem10_ratio"]


def _size(problem: StatisticalQuery) -> float:
    return float(sum(u.size**2 for u in problem.attribute_values))


def theorem10_ratio(problem: StatisticalQuery, attribute: int, mapped: np.ndarray) -> tuple[float, tuple[int, int]]:
    """``max_{u != v} |u' - v'| / (n d_i(u, v))`` on attribute i, and the worst pair (value indices)."""
    d = problem.distances(attribute)
    i, j = np.triu_indices(mapped.size, 1)
    ratio = np.abs(mapped[i] - mapped[j]) / (problem.n * d[i, j])
    worst = int(np.argmax(ratio))
    return float(ratio[worst]), (int(i[worst]), int(j[worst]))


def _bound(problem: StatisticalQuery, scales: np.ndarray, mapped: list[np.ndarray]) -> float:
    return float(sum(np.abs(c * m - u).max() + c for c, m, u in zip(scales, mapped, problem.attribute_values)))


def statistical_solution(problem: StatisticalQuery, scales: np.ndarray, mapped: list[np.ndarray], method: str, *,
                         extra: dict[str, Any] | None = None) -> Solution:
    """Certify (c, u') on every pair of every attribute and wrap it with Theorem 10's release."""
    checks = [theorem10_ratio(problem, k, m) if c > 0 else (0.0, (0, 0)) for k, (c, m) in enumerate(zip(scales, mapped))]
    worst = int(np.argmax([r for r, _ in checks]))
    flat = [k for k, (c, m) in enumerate(zip(scales, mapped)) if c == 0 and np.ptp(m) > 0]
    ratio = checks[worst][0] if not flat else np.inf  # c = 0 releases exactly: only a constant map is private
    cert = Certificate.measured(
        ratio, 1.0, (worst, *checks[worst][1]), 0.0, 0.0,
        method=f"measured: max_i max_(u != v) |u'_i - v'_i| / (n d_i(u, v)) over every pair of all {problem.attributes} attributes "
               "(Theorem 10, additive budget; target 1)",
    )
    release: list[MarginalRelease] = []

    def sampler(rows: Any, count: int, source: RandomSource) -> np.ndarray:
        data = problem.rows if rows is None else problem.check_rows(rows)
        if data is None:
            raise fail("rows", KIND, "a dataset (n rows over the attributes) to release from", None)
        if not release:  # re-checks Theorem 10's condition itself
            attributes = [AttributeScale(u, m, float(c), 0.0, 0.0) for u, m, c in zip(problem.attribute_values, mapped, scales)]
            release.append(MarginalRelease(attributes, [problem.distances(k) for k in range(problem.attributes)], problem.n))
        if problem.release_grid is None:
            return release[0].release(data, count, rng=source, exact=False)  # Solution.sample gates the float path
        check_release_grid(problem.release_grid, scales, KIND)
        return release[0].grid_release(data, problem.release_grid, count, source)

    return Solution(
        problem=problem, method=method, exact=True, solver="none", status="closed_form", seconds=0.0,
        objective=_bound(problem, scales, mapped), certificate=cert,
        parameters={"scales": [float(c) for c in scales], "mapped_values": [m.tolist() for m in mapped], **(extra or {})},
        sampler=sampler, sampling=None if problem.release_grid is None else ROUNDED_LAPLACE_SAMPLER,
        details={"scales": np.asarray(scales, dtype=float), "mapped": mapped},
    )


def _on_grid(problem: StatisticalQuery) -> bool:
    """Releases are exact only on a declared ``release_grid`` (else the float Laplace sampler)."""
    return problem.release_grid is not None


@register(KIND, "exact", parameters=True, exact=True, uses_solver=False, cost=lambda p: 2.0 * _size(p), releases=_on_grid,
          summary="problem (14) per attribute at its global optimum (envelope breakpoints); with an additive budget "
                  "also the optimum of (13)")
def solve_exact(problem: StatisticalQuery, solver: str | None, repair: bool) -> Solution:
    scales, mapped, at_zero = [], [], []
    for k, u in enumerate(problem.attribute_values):
        result = marginal_attribute_scale(u, problem.distances(k), problem.n)
        if result.limit_at_zero < result.objective:
            result = _towards_zero(u, problem.distances(k), problem.n)
            at_zero.append(k)
        scales.append(result.scale)
        mapped.append(result.mapped)
    return statistical_solution(problem, np.array(scales), mapped, "exact", extra={"infimum_as_c_to_zero": at_zero})


#: Where (14)'s infimum is the limit c -> 0+, the route takes c = this times that infimum (range / 2):
#: within this relative distance of it, while u' ~ 1 / c stays far from floating-point trouble.
TOWARDS_ZERO = 1e-6
#: How far inside the Lipschitz bound :func:`_towards_zero` builds its map, tried in turn: u' ~ 1/c
#: rounds by about |mean u| / c ulps, and 1e-9 was not enough for values near 20 with a range
#: of 9 (measured 1 + 9.3e-10 at n = 8, epsilon = 0.1: a random probe, 2026-11-28).
TOWARDS_ZERO_MARGINS = (1e-9, 1e-7, 1e-5, 1e-3)


def _towards_zero(u: np.ndarray, distances: np.ndarray, n: int) -> AttributeScale:
    """(14) at a small c: within ``c`` of the infimum ``range / 2`` (a nearly constant release).

    When ``n d < 2`` on the pair that sets the error, ``F(c) = E(c) + c`` grows from its limit at
    0+, so no positive breakpoint is optimal: the bound prefers (almost) no data at all. Any
    c > 0 is private with McShane-Whitney's map, and ``F(c) <= range / 2 + c``. The map is
    built a hair inside the Lipschitz bound and divided by c as centre plus deviations, so
    rounding in ``u' ~ 1 / c`` cannot push a pair over Theorem 10's condition.
    """
    limit = float(np.ptp(u) / 2)
    c = TOWARDS_ZERO * limit
    bound = metric_closure(distances) * n
    i, j = np.triu_indices(u.size, 1)
    for margin in TOWARDS_ZERO_MARGINS:  # the first whose rounded map meets the condition as measured
        w, error = lipschitz_approximation(u, bound, c * (1 - margin))
        centre = float(np.mean(w))
        mapped = (w - centre) / c + centre / c
        if np.all(np.abs(mapped[i] - mapped[j]) <= bound[i, j]):
            break
    else:
        # Budgets so small that the map's deviations are below its values' ulps (epsilon = 1e-10,
        # values +-1: deviations of 1e-15 on w ~ 1, measured loss 1.0177 x the budget; explore
        # profile): the constant map at the midpoint, private exactly, whose error range / 2
        # the McShane-Whitney map could only undercut by about ``bound * c``.
        mapped, error = np.full(u.size, (float(u.min()) + float(u.max())) / 2 / c), limit
    return AttributeScale(u, mapped, c, error + c, limit)


@register(KIND, "laplace", parameters=True, exact=False, uses_solver=False, cost=lambda p: _size(p), releases=_on_grid,
          summary="identity map, c_i = max |u - v| / (n d_i(u, v)) per attribute (Theorem 10 without pre-processing)")
def solve_laplace(problem: StatisticalQuery, solver: str | None, repair: bool) -> Solution:
    scales = []
    for k, u in enumerate(problem.attribute_values):
        i, j = np.triu_indices(u.size, 1)
        scales.append(float(np.max(np.abs(u[i] - u[j]) / (problem.n * problem.distances(k)[i, j]))))
    c = np.array(scales)
    return statistical_solution(problem, c, [u / s for u, s in zip(problem.attribute_values, c)], "laplace")


@register_reader(KIND)
def read_statistical_query(problem: StatisticalQuery, stored: StoredSolution) -> Solution:
    """Re-check stored scales and value maps against every pair of every attribute."""
    params, summary, fields = stored.meta["parameters"], stored.summary, stored_fields(stored)
    scales = check_array(params["scales"], "scales", KIND, ndim=1, low=0.0, max_abs=MAX_MAGNITUDE)
    mapped = params["mapped_values"]
    if scales.shape != (problem.attributes,) or not isinstance(mapped, list) or len(mapped) != problem.attributes:
        raise stored.fail(f"its scales and value maps are not one per attribute (d = {problem.attributes})")
    maps = [check_array(m, f"mapped_values[{k}]", KIND, ndim=1, max_abs=MAX_MAGNITUDE) for k, m in enumerate(mapped)]
    if any(m.shape != u.shape for m, u in zip(maps, problem.attribute_values)):
        raise stored.fail("a value map does not have its attribute's number of values")
    solution = statistical_solution(problem, scales, maps, fields["method"])
    return dataclasses.replace(solution, exact=bool(summary["exact"]), status=fields["status"])

"""Perrier et al.'s experiments as sweeps (:mod:`dpopt.sweeps`), used by notebook 02 and the tests.

Each function returns a sweep description: ``dpopt.sweep(spec, workers=2)`` solves every
cell through :func:`dpopt.solve` (certified on all pairs) and returns one tidy table; the
same dict saved as TOML runs with ``dpopt sweep``. Random queries are generated from each
cell's seed, so cells with the same seed share their query across metrics and parameters
(paired comparisons, as in the paper).

* :func:`synthetic_universe` -- Section 4.1: N points uniform in [0, 100]^2 and a
  histogram of n records; d_X is the Euclidean distance (epsilon 1 per unit).
* :func:`single_queries` -- Figs. 2(b) and 3(b): random single queries (coefficients
  uniform in [0, 1)), one cell per query.
* :func:`multi_queries` -- Fig. 2(c)/(d): K = 1..10, random uniform or binary K x N
  workloads, Strategies 1-3 and the exact optima.
* :func:`blowfish_policies` -- Section 4.4, Figs. 4-5: d^Blow and d^Smooth for several
  thresholds T and epsilons.
* :func:`us_cities` -- Section 4.3's real data.

Real data: the paper used 741 US cities over 50,000 inhabitants from a commercial
database with elevations from the Google Maps API; neither is on a package
registry. We use GeoNames ``cities15000`` as shipped in the ``geotext`` package
(with GeoNames' own elevation, falling back to its DEM value), which has 841 such
cities: a different, larger set, so the IF values need not match the paper's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpopt.lazy_modules import pandas as pd
from dpopt.validation import fail

__all__ = ["MULTI_QUERY_ROUTES", "blowfish_policies", "multi_queries", "single_queries", "synthetic_universe", "us_cities"]

#: The routes of Fig. 2(c)/(d): the paper's Strategies 1-3 and dpopt's two exact optima.
MULTI_QUERY_ROUTES = ("strategy1", "strategy2", "psa", "exact", "exact_improvement")
#: Solution quantities every experiment records (IF and ||c||^2; RMSE = sqrt(2 ||c||^2) when cQ' = Q).
RECORDED = ["improvement_factor", "norm_c_squared"]


def synthetic_universe(*, size: int = 50, records: int = 10_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates (N, 2) uniform in [0, 100]^2, histogram of ``records`` uniform draws)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 100, size=(size, 2)), rng.multinomial(records, np.full(size, 1.0 / size))


def _points(coordinates: Any) -> list[list[float]]:
    points = np.asarray(coordinates, dtype=float)
    if points.ndim != 2 or points.shape[0] < 2:
        raise fail("coordinates", "experiments", "an (N, 2) array of points, N >= 2", points.shape)
    return points.tolist()


def single_queries(metric: Mapping[str, Any], size: int, *, queries: int = 1000, n: int = 10_000,
                   methods: Sequence[str] = ("closed_form",), grid: Mapping[str, list[Any]] | None = None) -> dict[str, Any]:
    """Random single queries on one metric (Figs. 2(b), 3(b), 4, 5): one cell per query and grid point.

    Parameters
    ----------
    metric : mapping
        A problem file's ``[metric]`` table (e.g. ``{"type": "euclidean", "coordinates": ...}``).
    size : int
        N, the number of universe elements (the query's length).
    queries : int
        Random queries (seeds 0..queries-1); the paper uses 1000.
    n : int
        Records (only the surrogate objective depends on it).
    methods : sequence of str
        Routes of ``dx_linear_query``; the paper's single-query rule is ``closed_form`` (cq' = q).
    grid : mapping, optional
        Further fields to cross, e.g. ``{"metric.threshold": [2, 4]}``.
    """
    return {"kind": "sweep", "methods": list(methods), "seeds": queries, "record": RECORDED,
            "base": {"kind": "dx_linear_query", "n": n, "metric": dict(metric)},
            "random": {"query": {"generator": "uniform_matrix", "rows": 1, "columns": size}},
            "grid": dict(grid or {})}


def multi_queries(coordinates: Any, *, entries: str = "uniform", seeds: int = 100, ks: Iterable[int] = range(1, 11),
                  methods: Sequence[str] = MULTI_QUERY_ROUTES, n: int = 10_000) -> dict[str, Any]:
    """Fig. 2(c)/(d): random K x N workloads (``entries`` uniform in [0, 1) or binary), ``seeds`` per K.

    The paper draws 100 matrices per K = 1..10 on the 50 points of Section 4.1.
    """
    if entries not in ("uniform", "binary"):
        raise fail("entries", "multi_queries", "'uniform' or 'binary'", entries)
    points = _points(coordinates)
    return {"kind": "sweep", "methods": list(methods), "seeds": seeds, "record": RECORDED,
            "base": {"kind": "dx_linear_query", "n": n, "metric": {"type": "euclidean", "coordinates": points, "epsilon": 1.0}},
            "random": {"query": {"generator": f"{entries}_matrix", "columns": len(points)}},
            "grid": {"random.query.rows": [int(k) for k in ks]}}


def blowfish_policies(coordinates: Any, *, thresholds: Iterable[float] = (2, 4, 8, 16),
                      epsilons: Iterable[float] = (0.25, 0.5, 1.0, 2.0, 4.0), queries: int = 1000) -> dict[str, Any]:
    """Figs. 4-5: random single queries under d^Blow and d^Smooth, crossed with T and epsilon.

    With the closed form (cq' = q) the Laplace noise per query has RMSE ``sqrt(2) c``,
    i.e. ``sqrt(2 * norm_c_squared)``; the plain-DP baseline is ``improvement_factor * c``.
    """
    points = _points(coordinates)
    metric = {"type": "blowfish", "coordinates": points, "epsilon": 1.0, "threshold": 1.0}
    return single_queries(metric, len(points), queries=queries, grid={
        "metric.type": ["blowfish", "smooth"], "metric.threshold": [float(t) for t in thresholds],
        "metric.epsilon": [float(e) for e in epsilons]})


def us_cities(min_population: int = 50_000) -> pd.DataFrame:
    """US cities above ``min_population`` from GeoNames cities15000 (shipped by ``geotext``).

    Columns: name, state, latitude, longitude, elevation (metres; GeoNames elevation,
    else its DEM value), population. Sorted by GeoNames id.
    """
    try:
        import geotext
    except ImportError:  # pragma: no cover - the test extra installs it
        raise fail("geotext", "us_cities", "installed (pip install 'dpopt[data]')", None) from None
    path = os.path.join(os.path.dirname(geotext.__file__), "data", "cities15000.txt")
    table = pd.read_csv(path, sep="\t", header=None, quoting=3, low_memory=False, keep_default_na=False, na_values=[""])
    us = table[(table[8] == "US") & (table[14] > min_population)]
    elevation = us[15].where(us[15].notna(), us[16]).astype(float)
    out = pd.DataFrame({
        "geonameid": us[0].astype(int), "name": us[1], "state": us[10], "latitude": us[4].astype(float),
        "longitude": us[5].astype(float), "elevation": elevation, "population": us[14].astype(int),
    })
    return out.sort_values("geonameid").reset_index(drop=True)

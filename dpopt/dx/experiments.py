"""Perrier et al.'s experiments as functions returning DataFrames (used by notebook 02 and tests).

* :func:`synthetic_universe` -- Section 4.1: N points uniform in [0, 100]^2 and a
  histogram of n records; d_X is the Euclidean distance (epsilon 1 per unit).
* :func:`single_query_improvements` -- Fig. 2(b)/3(b): IF of random single queries.
* :func:`multi_query_sweep` -- Fig. 2(c)/(d): K = 1..10, random uniform or binary Q,
  Strategies 1-3 and the exact optimum.
* :func:`blowfish_sweep` -- Section 4.4, Figs. 4-5: d^Blow and d^Smooth for several T.
* :func:`us_cities` / :func:`us_cities_experiment` -- Section 4.3 on real data.

Real data: the paper used 741 US cities over 50,000 inhabitants from a commercial
database with elevations from the Google Maps API; neither is on a package
registry. We use GeoNames ``cities15000`` as shipped in the ``geotext`` package
(with GeoNames' own elevation, falling back to its DEM value), which has 841 such
cities: a different, larger set, so the IF values need not match the paper's.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pandas as pd
from tqdm import tqdm

from dpopt.dx.evaluation import baseline_scale, improvement_factor
from dpopt.dx.metric import DXMetric
from dpopt.dx.scales import (
    closed_form_scales,
    exact_scales,
    exact_surrogate,
    psa_scales,
    solve_exact,
    strategy1_scales,
    strategy2_scales,
)
from dpopt.validation import fail

__all__ = [
    "synthetic_universe",
    "single_query_improvements",
    "multi_query_sweep",
    "blowfish_sweep",
    "us_cities",
    "us_cities_experiment",
    "closed_form_batch",
    "STRATEGIES",
]

#: name -> scales(Q, metric)
STRATEGIES: dict[str, Callable[[Any, DXMetric], np.ndarray]] = {
    "strategy1": strategy1_scales,
    "strategy2": strategy2_scales,
    "psa": lambda q, m: psa_scales(q, m).scales,
    "exact": exact_scales,
    "exact_improvement": lambda q, m: solve_exact(q, m, objective="improvement")[0],
}


def synthetic_universe(*, size: int = 50, records: int = 10_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates (N, 2) uniform in [0, 100]^2, histogram of ``records`` uniform draws)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 100, size=(size, 2)), rng.multinomial(records, np.full(size, 1.0 / size))


def single_query_improvements(metric: DXMetric, *, queries: int = 1000, records: int = 10_000, seed: int = 1,
                              exact: bool = False, progress: bool = False) -> pd.DataFrame:
    """IF of random single queries with coefficients uniform in [0, 1] (Fig. 2b).

    Columns: ``closed_form`` (the paper's c), and with ``exact`` the exact surrogate's c
    and the relative gain of its surrogate objective.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for k in tqdm(range(queries), disable=not progress, desc="single queries"):
        q = rng.uniform(0, 1, size=(1, metric.size))
        c = closed_form_scales(q, metric)
        row = {"query": k, "baseline_scale": baseline_scale(q, metric), "c_closed_form": c[0], "if_closed_form": improvement_factor(q, c, metric)}
        if exact:
            _, c_exact, _ = exact_surrogate(q, metric, records)
            row.update({"c_exact_surrogate": c_exact[0], "if_exact_surrogate": improvement_factor(q, c_exact, metric)})
        rows.append(row)
    return pd.DataFrame(rows)


def multi_query_sweep(metric: DXMetric, *, ks: Iterable[int] = range(1, 11), matrices: int = 100, entries: str = "uniform",
                      seed: int = 2, strategies: Mapping[str, Callable[[Any, DXMetric], np.ndarray]] | None = None,
                      progress: bool = False) -> pd.DataFrame:
    """Fig. 2(c)/(d): for each K, random K x N matrices; IF and ||c||^2 of every strategy.

    ``strategies`` maps a name to ``scales(Q, metric)``; default :data:`STRATEGIES`
    (Strategies 1-3 and both exact optima).
    """
    routes = STRATEGIES if strategies is None else strategies
    if entries not in ("uniform", "binary"):
        raise fail("entries", "multi_query_sweep", "'uniform' or 'binary'", entries)
    rng = np.random.default_rng(seed)
    rows = []
    ks = list(ks)
    for k in tqdm(ks, disable=not progress, desc=f"K sweep ({entries})"):
        for trial in range(matrices):
            q = rng.uniform(0, 1, (k, metric.size)) if entries == "uniform" else rng.integers(0, 2, (k, metric.size)).astype(float)
            if np.ptp(q, axis=1).min() == 0:
                continue  # a constant row needs no noise; IF is undefined for it
            for name, rule in routes.items():
                c = rule(q, metric)
                rows.append({"K": k, "trial": trial, "entries": entries, "method": name,
                             "improvement_factor": improvement_factor(q, c, metric), "norm_c_squared": float(np.sum(c**2))})
    return pd.DataFrame(rows)


def blowfish_sweep(coordinates: np.ndarray, *, thresholds: Iterable[float] = (2, 4, 8, 16), epsilons: Iterable[float] = (0.5, 1.0, 2.0),
                   queries: int = 1000, seed: int = 3, progress: bool = False) -> pd.DataFrame:
    """Figs. 4-5: single random queries under d^Blow and d^Smooth.

    RMSE is the exact one of the d_X Laplace mechanism with cq' = q (``sqrt(2) c``);
    the baseline is the plain Laplace mechanism at ``epsilon``. Returns one row per
    (metric, T, epsilon, query).
    """
    rng = np.random.default_rng(seed)
    qs = rng.uniform(0, 1, size=(queries, len(coordinates)))
    rows = []
    grid = [(name, t, e) for name in ("blowfish", "smooth") for t in thresholds for e in epsilons]
    for name, t, e in tqdm(grid, disable=not progress, desc="blowfish sweep"):
        metric = (DXMetric.blowfish if name == "blowfish" else DXMetric.smooth)(coordinates, e, t)
        for k, q in enumerate(qs):
            c = closed_form_scales(q, metric)[0]
            plain = np.ptp(q) / e
            rows.append({"metric": name, "T": t, "epsilon": e, "query": k, "rmse": np.sqrt(2) * c,
                         "rmse_plain_laplace": np.sqrt(2) * plain, "improvement_factor": plain / c if c > 0 else np.inf})
    return pd.DataFrame(rows)


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


def closed_form_batch(queries: np.ndarray, metric: DXMetric, *, batch: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form c and plain-DP baseline scale for many single queries at once (rows of ``queries``).

    Equal to :func:`closed_form_scales` and :func:`baseline_scale` row by row, with the
    pair arrays built once and the queries processed in vectorised batches.
    """
    i, j = metric.pairs()
    d = metric.matrix[i, j]
    k, l = np.triu_indices(metric.size, 1)
    eps = float(metric.matrix[k, l].min())
    scales, baselines = [], []
    for start in range(0, len(queries), batch):
        block = queries[start : start + batch]
        spread = np.abs(block[:, i] - block[:, j])
        scales.append((spread / d).max(axis=1))
        baselines.append(np.ptp(block, axis=1) / eps)  # max |q_i - q_j| over all pairs = range of q
    return np.concatenate(scales), np.concatenate(baselines)


def us_cities_experiment(cities: pd.DataFrame, *, queries: int = 1000, seed: int = 4, progress: bool = False) -> tuple[pd.DataFrame, float]:
    """Section 4.3: IF of random single queries and of the "average elevation" query.

    d_X is the Euclidean distance on (longitude, latitude). Returns (per-query
    DataFrame, IF of the elevation query).
    """
    metric = DXMetric.euclidean(cities[["longitude", "latitude"]].to_numpy())
    rng = np.random.default_rng(seed)
    qs = rng.uniform(0, 1, size=(queries, metric.size))
    parts = [closed_form_batch(qs[s : s + 100], metric) for s in tqdm(range(0, queries, 100), disable=not progress, desc="US cities queries")]
    c = np.concatenate([p[0] for p in parts])
    base = np.concatenate([p[1] for p in parts])
    frame = pd.DataFrame({"query": np.arange(queries), "c": c, "baseline_scale": base, "improvement_factor": base / c})
    elevation = cities["elevation"].to_numpy()
    return frame, improvement_factor(elevation, closed_form_scales(elevation, metric), metric)

"""Evaluation of d_X mechanisms: improvement factor, the surrogate bound, empirical RMSE.

The improvement factor (Perrier et al., Section 4.1-4.2) compares the d_X Laplace
mechanism with the epsilon-DP Laplace mechanism at ``epsilon = min_{i,j} d_X(i, j)``,
which adds ``Lap(Delta_1^Q / epsilon)`` to every component
(``Delta_1^Q = max_{i,j} ||Q_:i - Q_:j||_1``): ``IF = geometric mean over k of
(Delta_1^Q / epsilon) / c_k``. Components with ``c_k = 0`` need no noise at all and are
left out of the mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpopt.dx.mechanisms import DXLaplaceMechanism, check_histogram
from dpopt.dx.metric import DXMetric, check_workload
from dpopt.dx.scales import generalized_sensitivity, surrogate_objective
from dpopt.validation import check_array, fail

__all__ = ["baseline_scale", "empirical_rmse", "improvement_factor", "surrogate_objective"]


def baseline_scale(query: Any, metric: DXMetric) -> float:
    """``Delta_1^Q / epsilon`` with ``epsilon = min_{i != j} d_X(i, j)``: the plain DP Laplace scale.

    Two elements at distance 0 leave plain DP a budget of 0, so no finite scale: returns
    ``inf`` (and :func:`improvement_factor` is then ``inf`` too).
    """
    sensitivity = generalized_sensitivity(query, metric).max()  # checks both first
    budget = metric.min_distance
    return float(sensitivity / budget) if budget > 0 else float("inf")  # the diagonal is 0


def improvement_factor(query: Any, scales: Any, metric: DXMetric) -> float:
    """Geometric mean of ``baseline / c_k`` over components with ``c_k > 0``."""
    c = np.atleast_1d(check_array(scales, "scales", "improvement_factor", ndim=(0, 1), low=0.0))
    positive = c > 0
    if not positive.any():
        return float("inf")
    return float(np.exp(np.mean(np.log(baseline_scale(query, metric) / c[positive]))))


def empirical_rmse(mechanism: DXLaplaceMechanism, query: Any, histogram: Any, *, releases: int = 1000, rng: Any = 0) -> float:
    """Root mean squared error of ``releases`` draws against the true answers ``Qx``."""
    if not isinstance(mechanism, DXLaplaceMechanism):
        raise fail("mechanism", "empirical_rmse", "a DXLaplaceMechanism", type(mechanism).__name__)
    q = check_workload(query, mechanism.metric, "empirical_rmse")
    if q.shape[0] != mechanism.transformed.shape[0]:
        raise fail("query", "empirical_rmse", f"the mechanism's {mechanism.transformed.shape[0]} queries", f"{q.shape[0]} rows")
    truth = q @ check_histogram(histogram, mechanism.metric.size, "empirical_rmse")
    draws = mechanism.release(histogram, releases, rng=rng, exact=False)  # an error study: simulation
    return float(np.sqrt(np.mean(np.sum((draws - truth[None, :]) ** 2, axis=1))))

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

from dpopt.dx.mechanisms import DXLaplaceMechanism
from dpopt.dx.metric import DXMetric
from dpopt.dx.scales import generalized_sensitivity, surrogate_objective

__all__ = ["baseline_scale", "empirical_rmse", "improvement_factor", "surrogate_objective"]


def baseline_scale(query: Any, metric: DXMetric) -> float:
    """``Delta_1^Q / epsilon`` with ``epsilon = min_{i != j} d_X(i, j)``: the plain DP Laplace scale.

    Two elements at distance 0 leave plain DP a budget of 0, so no finite scale: returns
    ``inf`` (and :func:`improvement_factor` is then ``inf`` too).
    """
    budget = metric.min_distance
    return float(generalized_sensitivity(query, metric).max() / budget) if budget > 0 else float("inf")  # the diagonal is 0


def improvement_factor(query: Any, scales: Any, metric: DXMetric) -> float:
    """Geometric mean of ``baseline / c_k`` over components with ``c_k > 0``."""
    c = np.atleast_1d(np.asarray(scales, dtype=float))
    positive = c > 0
    if not positive.any():
        return float("inf")
    return float(np.exp(np.mean(np.log(baseline_scale(query, metric) / c[positive]))))


def empirical_rmse(mechanism: DXLaplaceMechanism, query: Any, histogram: Any, *, releases: int = 1000, rng: Any = 0) -> float:
    """Root mean squared error of ``releases`` draws against the true answers ``Qx``."""
    q = np.atleast_2d(np.asarray(query, dtype=float))
    truth = q @ np.asarray(histogram, dtype=float)
    draws = mechanism.release(histogram, releases, rng=rng, exact=False)  # an error study: simulation
    return float(np.sqrt(np.mean(np.sum((draws - truth[None, :]) ** 2, axis=1))))

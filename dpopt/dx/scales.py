"""Generalized sensitivity, the d_X privacy check, and noise scales c for linear queries.

Perrier et al., Section 4: a workload Q (K x N) is answered as ``c * Q'x + Lap(c)``
(Eq. 5) with ``Q' = diag(1/c) Q`` here (the cQ' = Q form). It is d_X-private iff
``||Q'_{:,i} - Q'_{:,j}||_1 <= d_X(i, j)`` for every pair, i.e.
``sum_k |Q_ki - Q_kj| / c_k <= d_X(i, j)``. Routes to c:

* :func:`closed_form_scales` -- one query: ``c = max_{i,j} |q_i - q_j| / d_X(i, j)``;
* :func:`strategy1_scales` -- the budget d_X/K shared equally between the K queries;
* :func:`strategy2_scales` -- one scale for all: ``max ||Q_:i - Q_:j||_1 / d_X(i, j)``;
* :func:`exact_scales` -- the exact optimum of ``min ||c||^2`` under the constraints,
  convex in c (each constraint is a sum of ``1/c_k`` terms), which the
  paper only approximates (Algorithm 3). Solved with Clarabel; the answer is scaled up
  by the measured worst ratio if the solver left any pair above d_X, so it always
  passes :func:`check_privacy`.

Pairs with ``d_X = inf`` impose nothing; pairs whose columns of Q coincide impose
nothing; the rest are all checked (vectorised), and :class:`PrivacyCheck` reports the
worst pair and its slack.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np

from dpopt.dx.metric import DXMetric
from dpopt.solvers import run_program
from dpopt.validation import SolverError, fail

__all__ = [
    "PrivacyCheck",
    "check_privacy",
    "generalized_sensitivity",
    "closed_form_scales",
    "strategy1_scales",
    "strategy2_scales",
    "exact_scales",
]

OWNER = "dx linear query"
#: Relative slack allowed on ||Q'_i - Q'_j||_1 <= d_X(i, j) for floating-point sums.
PRIVACY_TOLERANCE = 1e-9


def _workload(query: Any, metric: DXMetric) -> np.ndarray:
    q = np.atleast_2d(np.asarray(query, dtype=float))
    if q.ndim != 2 or q.shape[1] != metric.size or not np.isfinite(q).all():
        raise fail("query", OWNER, f"a finite array of N = {metric.size} numbers, or K rows of them", q)
    return q


def generalized_sensitivity(query: Any, metric: DXMetric) -> np.ndarray:
    """``Delta(i, j) = ||Q_{:,i} - Q_{:,j}||_1`` for every pair (N x N)."""
    q = _workload(query, metric)
    return np.abs(q[:, :, None] - q[:, None, :]).sum(axis=0)


@dataclass(frozen=True)
class PrivacyCheck:
    """Result of :func:`check_privacy`.

    Attributes
    ----------
    ok : bool
    worst_pair : tuple of int
        (i, j) with the largest ``Delta'(i, j) / d_X(i, j)``.
    worst_ratio : float
        That ratio (<= 1 when private; inf if a zero distance separates different columns).
    min_slack : float
        Smallest ``d_X(i, j) - Delta'(i, j)`` over finite pairs.
    pairs_checked : int
    """

    ok: bool
    worst_pair: tuple[int, int]
    worst_ratio: float
    min_slack: float
    pairs_checked: int


def check_privacy(transformed: Any, metric: DXMetric) -> PrivacyCheck:
    """Check ``||Q'_{:,i} - Q'_{:,j}||_1 <= d_X(i, j)`` over every pair (vectorised)."""
    q = _workload(transformed, metric)
    i, j = metric.pairs()
    spread = np.abs(q[:, i] - q[:, j]).sum(axis=0)
    d = metric.matrix[i, j]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d > 0, spread / d, np.where(spread > 0, np.inf, 0.0))
    k = int(np.argmax(ratio)) if ratio.size else 0
    worst = float(ratio[k]) if ratio.size else 0.0
    return PrivacyCheck(
        ok=bool(worst <= 1 + PRIVACY_TOLERANCE),
        worst_pair=(int(i[k]), int(j[k])) if ratio.size else (0, 0),
        worst_ratio=worst,
        min_slack=float((d - spread).min()) if ratio.size else float("inf"),
        pairs_checked=int(ratio.size),
    )


def _pair_differences(q: np.ndarray, metric: DXMetric) -> tuple[np.ndarray, np.ndarray]:
    """``|Q_k,i - Q_k,j|`` (pairs x K) and ``d_X`` for the finite pairs that constrain anything."""
    i, j = metric.pairs()
    diff = np.abs(q[:, i] - q[:, j]).T
    d = metric.matrix[i, j]
    active = diff.sum(axis=1) > 0
    if np.any(active & (d == 0)):
        p = int(np.flatnonzero(active & (d == 0))[0])
        raise fail("query", OWNER, f"equal on elements at distance 0 (elements {i[p]} and {j[p]} differ)", q)
    return diff[active], d[active]


def closed_form_scales(query: Any, metric: DXMetric) -> np.ndarray:
    """One query: ``c = max_{i,j} |q_i - q_j| / d_X(i, j)`` (returned as a length-1 array)."""
    q = _workload(query, metric)
    if q.shape[0] != 1:
        raise fail("query", OWNER, "a single query (one row) for the closed form", q.shape)
    diff, d = _pair_differences(q, metric)
    return np.array([float((diff[:, 0] / d).max()) if d.size else 0.0])


def strategy1_scales(query: Any, metric: DXMetric) -> np.ndarray:
    """Strategy 1: ``c_k = max_{i,j} |Q_ki - Q_kj| / (d_X(i, j) / K)``."""
    q = _workload(query, metric)
    diff, d = _pair_differences(q, metric)
    return (diff / (d[:, None] / q.shape[0])).max(axis=0) if d.size else np.zeros(q.shape[0])


def strategy2_scales(query: Any, metric: DXMetric) -> np.ndarray:
    """Strategy 2: ``c_k = max_{i,j} ||Q_:i - Q_:j||_1 / d_X(i, j)`` for every k."""
    q = _workload(query, metric)
    diff, d = _pair_differences(q, metric)
    value = float((diff.sum(axis=1) / d).max()) if d.size else 0.0
    return np.full(q.shape[0], value)


def exact_scales(query: Any, metric: DXMetric, *, solver: str | None = None) -> np.ndarray:
    """The exact optimum of ``min ||c||^2`` s.t. ``sum_k |Q_ki - Q_kj| / c_k <= d_X(i, j)``.

    The constraints are convex in c (``1/c_k`` is convex for c > 0; equivalently
    linear in ``t = 1/c``), so this is a convex program, modelled with ``inv_pos``
    and solved by Clarabel. Queries that never differ get ``c_k = 0`` (no noise).
    """
    q = _workload(query, metric)
    diff, d = _pair_differences(q, metric)
    used = diff.sum(axis=0) > 0
    c = np.zeros(q.shape[0])
    if not used.any():
        return c
    a = diff[:, used]
    unit = strategy2_scales(q, metric)[0]  # c = unit * s keeps the program well scaled
    s = cp.Variable(int(used.sum()), pos=True, name="s")
    program = cp.Problem(cp.Minimize(cp.sum_squares(s)), [(a / unit) @ cp.inv_pos(s) <= d])
    try:
        run_program(program, solver=solver or "CLARABEL", owner="dx exact scales")
    except SolverError:
        # Clarabel at dpopt's tight tolerances can stop at "optimal_inaccurate" on
        # these hyperbolic constraints; its default tolerances converge, and the
        # scaling below restores exact privacy whatever the solver's accuracy.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "solution may be inaccurate": checked below
            program.solve(solver=solver or "CLARABEL")
        if program.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or s.value is None:
            raise
    c[used] = unit * np.asarray(s.value, dtype=float)
    worst = float(((a / c[used][None, :]).sum(axis=1) / d).max())
    if worst > 1:  # solver tolerance: scale every c_k up by the worst ratio
        c *= worst
    return c

"""Pricing: the Lagrangian costs C[r, r'] of every column, their row minima and the lower bound.

Pricing and bounds
------------------
For loss-row multipliers ``lambda >= 0`` normalised to sum to one (taken from the
master's duals), ``C[r, r'] = g_r sum_i lambda_i alpha^|i-r| l(i, r')`` and the
Lagrangian bound ``LB = sum_r min_r' C[r, r'] <= max_i E_i(T)`` for every stochastic T:
a valid lower bound for *any* such lambda, so inexact duals cost tightness, never
validity. The upper bound is the exact worst-case loss of the returned mechanism
(T clipped and renormalised; private by construction). Column ``(r, r')`` enters when
``C[r, r'] < min over master columns of row r``. The loop stops when the bounds agree
to the tolerance.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from dpopt.mechanisms.geometric import column_weights
from dpopt.problems.count_query import CountQuery
from dpopt.programs.geometric_moments import kernel_moments

#: Squared loss: besides each row's best column, add the NEARBY_WIDTH next integer offsets on
#: each side of the convex cost's minimiser (n = 1000, alpha = 0.9: 8 -> 6 master rounds,
#: 3.1 -> 2.5 s; wider bands add columns faster than they save rounds).
NEARBY_WIDTH = 3


@dataclass(frozen=True)
class Pricing:
    """Row minima of the Lagrangian costs and the cost of every master column."""

    row_min: np.ndarray
    row_argmin: np.ndarray
    master_min: np.ndarray
    nearby: np.ndarray | None = None  # (n+1, w) further promising r' per row (squared loss)

    @property
    def lower_bound(self) -> float:
        return float(self.row_min.sum())

    @property
    def potential(self) -> float:
        """``sum_r (master_min - row_min)^+``: how far new columns could raise the bound."""
        return float(np.maximum(self.master_min - self.row_min, 0.0).sum())


#: Absolute loss is priced from the dense cost matrix up to this n (0.7 ms against 9 ms per
#: round at n = 200) and by the sweeps of :func:`_price_absolute` beyond it, which form no
#: (n+1)^2 arrays.
DENSE_PRICING_UP_TO = 700


def lagrangian_costs(problem: CountQuery, lam: np.ndarray) -> np.ndarray:
    """The dense (n+1)^2 matrix ``C = diag(g) K (lambda * L)``, ``K[r, i] = alpha^|r - i|``.

    ``K (lambda * L)`` is the geometric-kernel sum of each column of ``lambda * L``
    (:func:`~dpopt.programs.geometric_moments.kernel_moments`, two recurrences): O(n^2).
    """
    weighted = lam[:, None] * problem.loss_matrix
    costs = kernel_moments(weighted.T, problem.alpha, 0).total.T
    return column_weights(problem.n, problem.alpha)[:, None] * costs


def price_columns(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    name = problem.loss_name
    if name == "squared":
        return _price_squared(problem, lam, master)
    if name == "absolute" and problem.n > DENSE_PRICING_UP_TO:
        return _price_absolute(problem, lam, master)
    if name == "zero_one":
        return price_zero_one(problem, lam, master)
    return _price_dense(problem, lam, master)


def _finish(costs_of_master: np.ndarray, master: sparse.csr_array, row_min: np.ndarray, row_argmin: np.ndarray) -> Pricing:
    values = sparse.csr_array((costs_of_master, master.indices, master.indptr), shape=master.shape)
    master_min = np.full(master.shape[0], np.inf)
    rows = np.repeat(np.arange(master.shape[0]), np.diff(master.indptr))
    np.minimum.at(master_min, rows, values.data)
    return Pricing(row_min=row_min, row_argmin=row_argmin, master_min=master_min)


def _price_squared(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    n, g = problem.n, column_weights(problem.n, problem.alpha)
    m = kernel_moments(lam, problem.alpha, 2)
    m0, m1, m2 = m.total, m.signed_first, m.second
    r = np.arange(n + 1)
    # C[r, r + t] = g_r (m2 - 2 m1 t + m0 t^2): convex in t, minimised near t = m1 / m0.
    centre = np.divide(m1, m0, out=np.zeros_like(m1), where=m0 > 0)  # m0 underflows far from lambda
    candidates = np.stack([np.floor(centre), np.ceil(centre)], axis=1)
    candidates = np.clip(candidates, -r[:, None], (n - r)[:, None])
    values = g[:, None] * (m2[:, None] - 2 * m1[:, None] * candidates + m0[:, None] * candidates**2)
    pick = np.argmin(values, axis=1)
    rows = np.repeat(r, np.diff(master.indptr))
    t = master.indices - rows
    master_costs = g[rows] * (m2[rows] - 2 * m1[rows] * t + m0[rows] * t**2)
    pricing = _finish(master_costs, master, values[r, pick], (r + candidates[r, pick]).astype(int))
    steps = np.arange(1, NEARBY_WIDTH + 1)[None, :]
    offsets = np.concatenate([candidates[:, :1] - steps, candidates, candidates[:, 1:] + steps], axis=1)
    return dataclasses.replace(pricing, nearby=np.clip(r[:, None] + offsets, 0, n).astype(int))


def _price_absolute(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    """Row minima at the kernel-weighted medians, O(n log n); any column's cost in O(1).

    For row r, ``C[r, r'] / g_r = sum_i w_i |i - r'|`` with ``w_i = lambda_i alpha^|i-r|``:
    convex and piecewise linear in r', least at a weighted median of w, the first r' with
    ``F_r(r') = sum_(i <= r') w_i >= W_r / 2``. F_r is monotone in r', so the medians of all
    rows come from one vectorised bisection, and F_r, W_r and C come in closed form from
    the one-sided kernel sums ``L_k(y) = sum_(i <= y) lambda_i alpha^(y-i) (y-i)^k`` and
    ``R_k`` (k = 0, 1; :meth:`_AbsoluteChains.costs_at`). The three integers around each median are
    evaluated, so a comparison lost to rounding near a tie cannot raise the row minimum
    (and so the lower bound) above its true value by more than rounding. The sweeps this
    replaced took O(n^2) (1.8 s a round at n = 10,000).
    """
    n, g = problem.n, column_weights(problem.n, problem.alpha)
    chains = _AbsoluteChains(lam, problem.alpha)
    r = np.arange(n + 1)
    low, high = np.zeros(n + 1, dtype=np.int64), np.full(n + 1, n, dtype=np.int64)
    half = chains.total / 2.0
    while np.any(low < high):  # the first x with F_r(x) >= W_r / 2 lies in [low, high]
        middle = (low + high) // 2
        above = chains.below_or_at(r, middle) >= half
        high = np.where(above, middle, high)
        low = np.where(above, low, middle + 1)
    candidates = np.clip(low[:, None] + np.arange(-1, 2), 0, n)
    values = g[:, None] * chains.costs_at(r[:, None], candidates)
    pick = np.argmin(values, axis=1)
    rows = np.repeat(r, np.diff(master.indptr))
    master_costs = g[rows] * chains.costs_at(rows, master.indices.astype(np.int64))
    return _finish(master_costs, master, values[r, pick], candidates[r, pick])


class _AbsoluteChains:
    """``sum_i lambda_i alpha^|i - r| |i - r'|`` and its partial sums for any (r, r') in O(1)."""

    def __init__(self, lam: np.ndarray, alpha: float) -> None:
        moments = kernel_moments(lam, alpha, 1)
        self.alpha = alpha
        # padded by a zero on each side: index y + 1 holds L(y), R(y) for y = -1 .. n + 1
        self.l0, self.l1 = np.pad(moments.forward[0], 1), np.pad(moments.forward[1], 1)
        self.r0, self.r1 = np.pad(moments.backward[0], 1), np.pad(moments.backward[1], 1)
        r = np.arange(lam.size)
        self.total = self.l0[r + 1] + alpha * self.r0[r + 2]  # W_r = sum_i lambda_i alpha^|i-r|

    def below_or_at(self, r: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``F_r(x) = sum_(i <= x) lambda_i alpha^|i-r|``."""
        a = self.alpha
        left = a ** np.maximum(r - x, 0) * self.l0[np.minimum(x, r) + 1]
        right = a * self.r0[r + 2] - a ** np.maximum(x + 1 - r, 1) * self.r0[x + 2]
        return np.where(x < r, left, self.l0[r + 1] + np.where(x > r, right, 0.0))

    def costs_at(self, r: np.ndarray, rp: np.ndarray) -> np.ndarray:
        """``sum_i lambda_i alpha^|i-r| |i - r'|`` (C[r, r'] / g_r) elementwise."""
        a, t = self.alpha, np.abs(rp - r)
        right = rp >= r  # the far side of r from r' contributes (t + distance) per unit
        near0 = np.where(right, self.r0[r + 1], self.l0[r + 1])
        near1 = np.where(right, self.r1[r + 1], self.l1[r + 1])
        far0 = np.where(right, self.l0[r], self.r0[r + 2])
        far1 = np.where(right, self.l1[r], self.r1[r + 2])
        beyond = np.where(right, self.r0[rp + 2] + self.r1[rp + 2], self.l0[rp] + self.l1[rp])
        return a * ((t + 1) * far0 + far1) + t * near0 - near1 + 2.0 * a ** (t + 1) * beyond


def price_zero_one(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    """``C[r, r'] = g_r (sum_i lambda_i alpha^|i-r| - lambda_r' alpha^|r-r'|)`` in O(n).

    The row minimum needs ``max_r' lambda_r' alpha^|r-r'|``: the larger of a forward
    and a backward max-plus sweep (``F_r = max(lambda_r, alpha F_(r-1))``), which carry
    their argmax along. No (n+1)^2 matrix is formed.
    """
    n, alpha, g = problem.n, problem.alpha, column_weights(problem.n, problem.alpha)
    total = kernel_moments(lam, alpha, 0).total
    best, where = lam.tolist(), list(range(n + 1))  # plain lists: a scalar loop
    for order, step in ((range(1, n + 1), -1), (range(n - 1, -1, -1), 1)):  # step: the swept neighbour
        for r in order:
            candidate = alpha * best[r + step]
            if candidate > best[r]:
                best[r], where[r] = candidate, where[r + step]
    best, where = np.array(best), np.array(where)
    rows_of = np.repeat(np.arange(n + 1), np.diff(master.indptr))
    targets = master.indices
    master_costs = g[rows_of] * (total[rows_of] - lam[targets] * alpha ** np.abs(rows_of - targets))
    return _finish(master_costs, master, g * (total - best), where)


def _price_dense(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    """Any loss (a user table; absolute loss up to DENSE_PRICING_UP_TO): the dense C."""
    n = problem.n
    costs = lagrangian_costs(problem, lam)
    argmin = np.argmin(costs, axis=1)
    rows_of = np.repeat(np.arange(n + 1), np.diff(master.indptr))
    return _finish(costs[rows_of, master.indices], master, costs[np.arange(n + 1), argmin], argmin)

"""The d_X SmallDB mechanism of Perrier et al.: problem (8) solved exactly, and Algorithm 1 at toy sizes.

SmallDB (Algorithm 1) releases ``c q'(y)`` for a synthetic database y; Theorem 6 bounds
its error by ``n max_q ||q - c q'||_inf + (c n^2 gamma)^(1/3)`` with
``gamma = 16 log N log |Q| + 4 log(1/beta)``, and Theorem 5 makes it d_X-private when
every ``q'`` is 1-Lipschitz for d_X. Problem (8) minimises that bound over (Q', c). The
paper calls it non-smooth and non-convex and leaves it to heuristics (Appendix B). It has
an exact solution:

1. For a fixed c, write ``v = c q'``: v must be ``c``-Lipschitz for d_X, and the best
   sup-norm approximation of q by an L-Lipschitz function on a metric space has error
   ``h_q(L) = max_{i,j} (|q_i - q_j| - L d(i, j))^+ / 2`` (McShane-Whitney: the midpoint of
   the largest L-Lipschitz minorant and the smallest majorant attains it). So the first
   term is ``n E(c)`` with ``E(c) = max_q h_q(c)``, the upper envelope of lines
   ``(|q_i - q_j| - c d(i, j)) / 2`` and 0: convex and piecewise linear in c.
2. ``F(c) = n E(c) + (n^2 gamma)^(1/3) c^(1/3)`` is concave on every linear piece of E,
   so its minimum over ``c > 0`` is at a breakpoint of the envelope (the last one being
   where E reaches 0) or in the limit c -> 0+ (reported as ``limit_at_zero``: c = 0
   itself forces ``c q' = 0``). Evaluating F at every breakpoint is the global optimum
   over c > 0; no alternating steps are needed.

Appendix B prints the second term as ``20 / 5^(2/3) (n^2 log N log |Q|)^(1/3) c^(1/3)``,
which is not Theorem 6's; the main text's gamma (with beta) is used here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.dx.metric import DXMetric, check_workload
from dpopt.limits import MAX_RECORDS
from dpopt.validation import check_int, check_real, fail

__all__ = ["SmallDB", "SmallDBPreprocessing", "lipschitz_approximation", "smalldb_gamma", "smalldb_preprocessing", "smalldb_bound",
           "smalldb_candidate_count", "MAX_SMALLDB_CANDIDATES", "envelope_breakpoints"]

OWNER = "smalldb preprocessing"


def smalldb_gamma(universe_size: int, queries: int, beta: float) -> float:
    """Theorem 6's ``gamma = 16 log N log |Q| + 4 log(1 / beta)``."""
    beta = check_real(beta, "beta", OWNER, low=0.0, high=1.0, low_open=True, high_open=True)
    return 16 * np.log(universe_size) * np.log(max(queries, 1)) + 4 * np.log(1 / beta)


def lipschitz_approximation(q: np.ndarray, distances: np.ndarray, lipschitz: float) -> tuple[np.ndarray, float]:
    """The best sup-norm approximation of q by an L-Lipschitz function for the metric, and its error.

    ``v_i = (min_j (q_j + L d_ij) + max_j (q_j - L d_ij)) / 2``; error ``max_ij (q_i - q_j - L d_ij)^+ / 2``.
    """
    q = np.asarray(q, dtype=float)
    upper = np.min(q[None, :] + lipschitz * distances, axis=1)  # smallest L-Lipschitz majorant
    lower = np.max(q[None, :] - lipschitz * distances, axis=1)  # largest L-Lipschitz minorant
    excess = np.max(q[:, None] - q[None, :] - lipschitz * distances)
    return (upper + lower) / 2, max(float(excess), 0.0) / 2


def smalldb_bound(transformed: Any, scale: float, query: Any, n: int, gamma: float) -> float:
    """Theorem 6's bound ``n max_q ||q - c q'||_inf + (c n^2 gamma)^(1/3)``."""
    q = np.atleast_2d(np.asarray(query, dtype=float))
    qp = np.atleast_2d(np.asarray(transformed, dtype=float))
    return float(n * np.abs(q - scale * qp).max() + np.cbrt(scale * n * n * gamma))


@dataclass(frozen=True)
class SmallDBPreprocessing:
    """The exact optimum of problem (8): Q' (K x N), the scale c, the bound, and the candidates tried."""

    transformed: np.ndarray
    scale: float
    objective: float
    candidates: int
    limit_at_zero: float
    """``lim_{c -> 0+} F(c) = n max_q range(q) / 2``: approached (q' a huge constant) but never
    attained; when it is below ``objective`` the bound favours no synthetic data at all."""


def envelope_breakpoints(intercepts: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    """Every c >= 0 where ``max(0, max_k b_k - m_k c)`` (all m_k > 0) changes line, and 0.

    The convex-hull trick: lines by increasing slope ``-m`` (steepest descent first; equal
    slopes keep the highest), each new line popping those it makes redundant; then the
    consecutive crossings in ``[0, c_end]``, where ``c_end = max b / m`` is the zero crossing.
    """
    s = -np.asarray(slopes, dtype=float)
    b = np.asarray(intercepts, dtype=float)
    order = np.lexsort((-b, s))
    hull: list[tuple[float, float]] = []  # (slope, intercept)
    for slope, intercept in zip(s[order], b[order]):
        if hull and hull[-1][0] == slope:
            continue  # equal slope, lower (or equal) intercept
        while len(hull) >= 2:
            (s1, b1), (s2, b2) = hull[-2], hull[-1]
            if (b1 - intercept) / (slope - s1) <= (b1 - b2) / (s2 - s1):
                hull.pop()  # the new line overtakes the first before the middle one ever leads
            else:
                break
        hull.append((float(slope), float(intercept)))
    end = float(np.max(b / -s))
    points = [0.0, end]
    for (s1, b1), (s2, b2) in zip(hull[:-1], hull[1:]):
        cross = (b1 - b2) / (s2 - s1)
        if 0.0 < cross < end:
            points.append(cross)
    return np.unique(points)


def smalldb_preprocessing(query: Any, metric: DXMetric, n: int, gamma: float) -> SmallDBPreprocessing:
    """The global optimum of problem (8) by the envelope's breakpoints (module docstring)."""
    q = check_workload(query, metric, OWNER)
    gamma = check_real(gamma, "gamma", OWNER, low=0.0, low_open=True)
    n = check_int(n, "n", OWNER, low=1, high=MAX_RECORDS)
    d = metric.matrix
    i, j = np.triu_indices(metric.size, 1)
    gaps = np.abs(q[:, i] - q[:, j]).max(axis=0)  # per pair, the query that differs most
    if np.any((gaps > 0) & (d[i, j] == 0)):
        raise fail("query", OWNER, "equal on elements at distance 0", q.shape)
    live = (gaps > 0) & np.isfinite(d[i, j])
    kappa = np.cbrt(float(n) ** 2 * gamma)

    def total(c: float) -> float:
        excess = np.max((gaps[live] - c * d[i, j][live]) / 2) if live.any() else 0.0
        return float(n * max(excess, 0.0) + kappa * np.cbrt(c))

    if not live.any():
        raise fail("query", OWNER, "a workload that differs somewhere (a constant one needs no mechanism)", q.shape)
    candidates = envelope_breakpoints(gaps[live] / 2, d[i, j][live] / 2)
    candidates = candidates[candidates > 0]  # c = 0 forces c q' = 0; c -> 0+ is the limit reported apart
    values = np.array([total(c) for c in candidates])
    best = float(candidates[int(np.argmin(values))])
    rows = [lipschitz_approximation(row, d, best)[0] for row in q]
    transformed = np.array(rows) / best
    return SmallDBPreprocessing(transformed, best, float(values.min()), int(candidates.size), float(n * gaps[live].max() / 2))


# -- Algorithm 1: the d_X small database mechanism, exact at toy sizes -----------------------

#: The most candidate synthetic databases SmallDB enumerates (C(N + m - 1, m) of them).
MAX_SMALLDB_CANDIDATES = 200_000


def smalldb_candidate_count(universe_size: int, synthetic_size: int) -> int:
    """``|R| = C(N + m - 1, m)``: histograms of m records over N elements."""
    from math import comb

    return comb(universe_size + synthetic_size - 1, synthetic_size)


@dataclass(frozen=True)
class SmallDB:
    """Algorithm 1 in its d_X form: a synthetic database y of m records, drawn with probability
    ``~ exp(u'(x, y) / (2c))``, ``u'(x, y) = -c max_q' |q'(x) - (n/m) q'(y)|``, answers ``c (n/m) q'(y)``.

    Theorem 5: if every transformed query is 1-Lipschitz for d_X (``|q'_i - q'_j| <= d_X(i, j)``),
    moving one record from i to j changes u' by at most ``c d_X(i, j)``, and the exponential
    mechanism at scale c is d_X-private (Theorem 3); checked on construction. The synthetic
    answers are scaled by n / m so that a database of m records speaks for n (the
    normalisation the error bound's ``alpha n`` term assumes; n is public, bounded DP).
    All ``C(N + m - 1, m)`` candidates are enumerated, so sizes are refused above
    :data:`MAX_SMALLDB_CANDIDATES` before any work, with the count.
    """

    transformed: np.ndarray
    scale: float
    metric: DXMetric
    synthetic_size: int

    def __post_init__(self) -> None:
        qp = check_workload(self.transformed, self.metric, "smalldb", "transformed")
        check_real(self.scale, "scale", "smalldb", low=0.0, low_open=True)
        i, j = self.metric.pairs()
        spread = np.abs(qp[:, i] - qp[:, j]).max(axis=0)
        if np.any(spread > self.metric.matrix[i, j] * (1 + 1e-9)):
            p = int(np.argmax(spread / self.metric.matrix[i, j]))
            raise fail("transformed", "smalldb", f"1-Lipschitz for d_X (Theorem 5); pair ({i[p]}, {j[p]}) is not", qp.shape)
        count = smalldb_candidate_count(self.metric.size, self.synthetic_size)
        if count > MAX_SMALLDB_CANDIDATES:
            raise fail("synthetic_size", "smalldb", f"small enough to enumerate: C(N + m - 1, m) <= {MAX_SMALLDB_CANDIDATES:,} "
                       f"candidate databases (this is {count:,})", self.synthetic_size)
        object.__setattr__(self, "transformed", qp)

    def candidates(self) -> np.ndarray:
        """Every histogram of m records over N elements, one per row."""
        import itertools

        rows = [np.bincount(c, minlength=self.metric.size) for c in itertools.combinations_with_replacement(range(self.metric.size), self.synthetic_size)]
        return np.array(rows, dtype=float)

    def logits(self, histogram: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(candidates, logits)``: the output is y with probability ``~ exp(logit_y)``."""
        x = np.asarray(histogram, dtype=float)
        n = float(x.sum())
        y = self.candidates()
        gap = np.abs(self.transformed @ x - (n / self.synthetic_size) * (y @ self.transformed.T)).max(axis=1)
        return y, -gap / 2.0  # u' / (2c) with u' = -c * gap

    def probabilities(self, histogram: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(candidates, probabilities)`` of the output given the true histogram (float64: far
        candidates underflow to 0 here; :meth:`sample` never flushes them)."""
        y, logits = self.logits(histogram)
        weights = np.exp(logits - logits.max())
        return y, weights / weights.sum()

    def sample(self, histogram: Any, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        """``count`` synthetic databases (rows), exact over the enumerated candidates.

        Drawn from the logits (:func:`dpopt.exact_sampling.exact_choice_logits`), not from
        :meth:`probabilities`: with thousands of records the logits span more than float64's
        e^-745, and a candidate whose weight rounds to 0 here but not for a neighbouring
        histogram would be an infinite loss.
        """
        from dpopt.exact_sampling import exact_choice_logits
        from dpopt.sampling import check_count, resolve_rng

        count = check_count(count, "smalldb")
        y, logits = self.logits(histogram)
        return y[exact_choice_logits(logits, count, resolve_rng(rng, secure=secure))]

    def answers(self, synthetic: np.ndarray, n: float) -> np.ndarray:
        """``c (n / m) q'(y)`` for each synthetic database (rows)."""
        return self.scale * (n / self.synthetic_size) * np.atleast_2d(synthetic) @ self.transformed.T

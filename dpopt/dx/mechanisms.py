"""d_X-private mechanisms for linear queries (Perrier et al., Section 3).

Every mechanism here checks its privacy condition at construction and refuses to
exist without it; releases draw from a seeded Generator or the OS secure source.

* :class:`DXLaplaceMechanism` -- Eq. (5): release ``c (.) Q'x + Lap(c)``; private iff
  ``||Q'_:i - Q'_:j||_1 <= d_X(i, j)`` for all pairs (:func:`check_privacy`).
* :class:`DXExponentialMechanism` -- Definition 9 for linear utilities
  ``u(x, r) = <U_r, x>``: output r with probability ~ ``exp(u(x, r) / (2c))``;
  Theorem 3's condition ``Delta_u(i, j) <= c d_X(i, j)`` with
  ``Delta_u(i, j) = max_r |U_ri - U_rj|`` (moving one record from i to j).
* :func:`dx_mwem` -- Algorithm 2 (MWEM) with queries whose rows each satisfy
  ``|q_i - q_j| <= d_X(i, j)`` and a parameter ``c >= 1``: each of the T rounds spends
  ``d_X / (2cT)`` on the exponential step and as much on the Laplace step, so the
  whole run is ``d_X / c``-private (Theorem 7).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import special
from scipy.spatial.distance import pdist

from dpopt.dx.metric import DXMetric, check_workload
from dpopt.dx.scales import PrivacyCheck, check_privacy
from dpopt.exact_sampling import exact_choice_logits
from dpopt.mechanisms.grid_release import rounded_laplace_release
from dpopt.mechanisms.laplace import laplace_ppf
from dpopt.sampling import RandomSource, check_count, inverse_cdf, open_uniforms, require_simulation, resolve_rng
from dpopt.validation import check_array, check_int, check_real, fail

__all__ = ["DXLaplaceMechanism", "DXExponentialMechanism", "dx_mwem", "check_histogram"]


def check_histogram(x: Any, size: int, owner: str) -> np.ndarray:
    """A histogram over the universe: N non-negative counts."""
    h = check_array(x, "histogram", owner, ndim=1, low=0.0)  # refuses strings, pd.NA, ragged lists, NaN
    if h.shape != (size,):
        raise fail("histogram", owner, f"{size} non-negative counts", h)
    return h


@dataclass(frozen=True, eq=False)
class DXLaplaceMechanism:
    """``c (.) Q'x + Lap(c)`` (Eq. 5), built only for a (Q', c) that passes the check.

    Parameters
    ----------
    transformed : array (K, N)
        Q'.
    scales : array (K,)
        c >= 0 (a zero scale releases its row exactly; allowed only if that row of Q'
        is constant, which the check enforces).
    metric : DXMetric
    """

    transformed: np.ndarray
    scales: np.ndarray
    metric: DXMetric
    check: PrivacyCheck = field(init=False)

    def __post_init__(self) -> None:
        owner = "dx laplace mechanism"
        qp = check_workload(self.transformed, self.metric, owner, "transformed")
        c = np.atleast_1d(check_array(self.scales, "scales", owner, ndim=(0, 1), low=0.0))
        if c.shape != (qp.shape[0],):
            raise fail("scales", owner, f"{qp.shape[0]} finite scales >= 0", c)
        check = check_privacy(qp, self.metric)
        if not check.ok:
            raise fail("transformed", owner, "a Q' with ||Q'_i - Q'_j||_1 <= d_X(i, j) for every pair", check)
        # rows with c = 0 must not depend on the data at all
        flat = np.ptp(qp, axis=1) == 0
        if np.any((c == 0) & ~flat):
            raise fail("scales", owner, "> 0 for every row of Q' that is not constant", c)
        object.__setattr__(self, "transformed", qp)
        object.__setattr__(self, "scales", c)
        object.__setattr__(self, "check", check)

    def answer(self, histogram: Any) -> np.ndarray:
        """The noiseless ``c (.) Q'x``."""
        x = check_histogram(histogram, self.metric.size, "dx laplace mechanism")
        return self.scales * (self.transformed @ x)

    def grid_release(self, histogram: Any, grid: float, count: int, source: RandomSource) -> np.ndarray:
        """``count`` releases, shape (count, K): each ``c_k (Q'x)_k + Lap(c_k)`` rounded to the nearest multiple
        of ``grid``, drawn exactly (:func:`dpopt.mechanisms.grid_release.rounded_laplace`; the means
        ``c_k (Q'x)_k`` in rational arithmetic from the float64 Q', c and the integer counts)."""
        x = check_histogram(histogram, self.metric.size, "dx laplace mechanism")
        if np.any(x != np.round(x)):
            raise fail("histogram", "dx laplace mechanism", "integer counts for an exact release", x)
        counts = [int(v) for v in x]
        out = np.empty((count, self.scales.size))
        for k, (row, c) in enumerate(zip(self.transformed, self.scales)):
            mean = Fraction(float(c)) * sum((Fraction(float(q)) * n for q, n in zip(row, counts) if n), Fraction(0))
            out[:, k] = rounded_laplace_release(mean, float(c), grid, count, source)
        return out

    def release(self, histogram: Any, count: int = 1, *, rng: Any = None, secure: bool = False, exact: bool = True) -> np.ndarray:
        """``count`` independent floating-point releases, shape (count, K): simulation only (``exact=False``)."""
        require_simulation(exact, "dx laplace mechanism")
        count = check_count(count, "dx laplace mechanism")
        mean = self.answer(histogram)
        u = open_uniforms(resolve_rng(rng, secure=secure), count * mean.size).reshape(count, mean.size)
        return mean[None, :] + laplace_ppf(u, 1.0) * self.scales[None, :]


def _sensitivity_ratios(u: np.ndarray, metric: DXMetric) -> np.ndarray:
    """``max_r |U_ri - U_rj| / d_X(i, j)`` for every pair of :meth:`DXMetric.pairs` (Theorem 3).

    The spreads are Chebyshev distances between columns of U, computed by ``pdist`` in C:
    all pairs at once as ``u[:, i] - u[:, j]`` is an (R, N²/2) array (26 s and gigabytes for
    the 1000 cities of notebook 02). A pair at distance 0 needs an equal spread: its ratio
    is 0 if the spread is 0, infinite otherwise.
    """
    n = metric.size
    i, j = metric.pairs()
    spread = pdist(np.ascontiguousarray(u.T), "chebyshev")[n * i - i * (i + 1) // 2 + (j - i - 1)]
    distance = metric.matrix[i, j]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, spread / distance, 0.0)


@dataclass(frozen=True, eq=False)
class DXExponentialMechanism:
    """Definition 9 for linear utilities ``u(x, r) = <U_r, x>``, with Theorem 3 checked.

    Parameters
    ----------
    utilities : array (R, N)
        Row r is the utility of output r per record in each element.
    scale : float
        c > 0; must satisfy ``max_r |U_ri - U_rj| <= c d_X(i, j)`` for every pair.
    metric : DXMetric
    """

    utilities: np.ndarray
    scale: float
    metric: DXMetric

    def __post_init__(self) -> None:
        owner = "dx exponential mechanism"
        u = check_workload(self.utilities, self.metric, owner, "utilities")
        if u.shape[0] < 2:
            raise fail("utilities", owner, f"a finite (R >= 2, N = {self.metric.size}) table", u)
        c = check_real(self.scale, "scale", owner, low=0.0, low_open=True)
        ratio, (i, j) = _sensitivity_ratios(u, self.metric), self.metric.pairs()
        if np.any(ratio > c * (1 + 1e-12)):
            p = int(np.argmax(ratio))
            raise fail("scale", owner, f"large enough for Theorem 3 (pair ({i[p]}, {j[p]}) needs c >= {ratio[p]:g})", c)
        object.__setattr__(self, "utilities", u)
        object.__setattr__(self, "scale", c)

    @classmethod
    def smallest_scale(cls, utilities: Any, metric: DXMetric) -> float:
        """The smallest c meeting Theorem 3: ``max_{i,j} max_r |U_ri - U_rj| / d_X(i, j)``."""
        u = np.atleast_2d(np.asarray(utilities, dtype=float))
        if u.ndim != 2 or u.shape[1] != metric.size or not np.isfinite(u).all():
            raise fail("utilities", "dx exponential mechanism", f"a finite (R, N = {metric.size}) table", u)
        return float(_sensitivity_ratios(u, metric).max(initial=0.0))

    def logits(self, histogram: Any) -> np.ndarray:
        """``<U_r, x> / (2c)``: output r has probability ``~ exp(logit_r)``."""
        x = check_histogram(histogram, self.metric.size, "dx exponential mechanism")
        return (self.utilities @ x) / (2.0 * self.scale)

    def probabilities(self, histogram: Any) -> np.ndarray:
        """The output distribution in float64 (far outputs underflow to 0; :meth:`sample` never flushes them)."""
        logits = self.logits(histogram)
        return np.exp(logits - special.logsumexp(logits))

    def sample(self, histogram: Any, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        """Output indices drawn exactly from the logits (:func:`dpopt.exact_sampling.exact_choice_logits`)."""
        count = check_count(count, "dx exponential mechanism")
        return exact_choice_logits(self.logits(histogram), count, resolve_rng(rng, secure=secure))


def dx_mwem(
    histogram: Any,
    queries: Any,
    metric: DXMetric,
    *,
    rounds: int,
    scale: float = 1.0,
    rng: Any = None,
    secure: bool = False,
    exact: bool = True,
) -> np.ndarray:
    """Algorithm 2 (d_X MWEM): a synthetic histogram answering the queries.

    Its measurements are floating-point Laplace draws, so it runs only with ``exact=False``
    (simulation studies; :func:`dpopt.sampling.require_simulation`).

    Each round t: pick q_t with probability ~ ``exp(|q(y_{t-1}) - q(x)| / (4 c T))``
    (the exponential mechanism ``Exp_{2cT}``), measure ``m_t = q_t(x) + Lap(2cT)``, and
    update ``y_t,i ~ y_{t-1,i} exp(q_t,i (m_t - q_t(y_{t-1})) / (2n))``. Returns the
    average of ``y_1..y_T`` (n times a distribution).
    """
    owner = "dx mwem"
    require_simulation(exact, owner)
    x = check_histogram(histogram, metric.size, owner)
    q = np.atleast_2d(np.asarray(queries, dtype=float))
    if q.shape[1] != metric.size:
        raise fail("queries", owner, f"an (m, N = {metric.size}) matrix", q)
    for row in q:
        check = check_privacy(row, metric)
        if not check.ok:
            raise fail("queries", owner, "rows with |q_i - q_j| <= d_X(i, j) (Theorem 7)", check)
    rounds = check_int(rounds, "rounds", owner, low=1)
    c = check_real(scale, "scale", owner, low=1.0)
    source = resolve_rng(rng, secure=secure)
    n = float(x.sum())
    y = np.full(metric.size, n / metric.size)
    truth = q @ x
    history = []
    for _ in range(rounds):
        score = np.abs(q @ y - truth)
        logits = score / (2.0 * 2.0 * c * rounds)
        pick = int(inverse_cdf(np.exp(logits - special.logsumexp(logits)), open_uniforms(source, 1))[0])
        measured = truth[pick] + float(laplace_ppf(open_uniforms(source, 1), 2.0 * c * rounds)[0])
        y = y * np.exp(q[pick] * (measured - q[pick] @ y) / (2.0 * n))
        y = n * y / y.sum()
        history.append(y)
    return np.mean(history, axis=0)

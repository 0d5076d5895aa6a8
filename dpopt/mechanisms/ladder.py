"""The ladder mechanism for integer-valued queries (Zhang et al. 2015, as recast in Wu-Xia-He Example 10).

For a dataset x with local-sensitivity ladder ``Delta_0^x <= Delta_1^x <= ...``
(``Delta_i^x`` is the largest local sensitivity within distance i of x), the integers
are cut into rungs around ``f(x)``: ``S_0 = {r : |r - f(x)| <= L_0}`` and
``S_i = {r : L_(i-1) < |r - f(x)| <= L_i}`` with ``L_i = Delta_0 + ... + Delta_i``;
a release r in ``S_i`` has probability ``exp(-i epsilon) / alpha(x)``. Wu-Xia-He
include distance 0 in S_0 (their ``0 < d`` would leave f(x) itself out) and prove
2 epsilon-DP: rung indices of neighbours differ by at most one (e^epsilon) and the
normalisers differ by at most e^epsilon. The ladder's last value continues for
ever (it is the global sensitivity once i reaches the universe's diameter).

:func:`ladders_from_universe` computes every dataset's ladder for a finite universe
with a neighbour relation, and :func:`ladder_matrix` the mechanism matrix on a
window of outputs (releases beyond it clamped to its ends, which is
post-processing), so the certificate measures the privacy loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from dpopt.mechanisms.noise import check_epsilon
from dpopt.exact_sampling import exact_choice_logits, exact_geometric, offset_exactly, uniform_below
from dpopt.sampling import check_count, resolve_rng
from dpopt.universes import hop_distances
from dpopt.limits import MAX_MAGNITUDE
from dpopt.validation import check_array, check_int, fail

__all__ = ["LadderMechanism", "ladders_from_universe", "ladder_matrix"]

OWNER = "ladder mechanism"


@dataclass(frozen=True, kw_only=True)
class LadderMechanism:
    """The ladder mechanism for one dataset, given its ladder.

    Parameters
    ----------
    ladder : sequence of int
        ``Delta_0, Delta_1, ..., Delta_m``: non-negative, non-decreasing integers;
        ``Delta_m`` repeats for ever (m = 0 allowed).
    epsilon : float
        Per-rung decay; the mechanism is 2 epsilon-DP.
    """

    ladder: tuple[int, ...]
    epsilon: float

    def __post_init__(self) -> None:
        steps = tuple(check_int(v, "ladder", OWNER, low=0) for v in self.ladder)
        if not steps or any(b < a for a, b in zip(steps, steps[1:])):
            raise fail("ladder", OWNER, "a non-empty, non-decreasing sequence of integers >= 0", list(self.ladder))
        object.__setattr__(self, "ladder", steps)
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, OWNER))

    def _rungs(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Outer radius L_i and size |S_i| of the first ``count`` rungs."""
        steps = np.array(self.ladder + (self.ladder[-1],) * max(0, count - len(self.ladder)), dtype=np.int64)[:count]
        radius = np.cumsum(steps)
        size = 2 * steps
        size[0] += 1
        return radius, size

    @property
    def normaliser(self) -> float:
        """``alpha = sum_i |S_i| exp(-i epsilon)`` (finite ladder plus a geometric tail)."""
        m = len(self.ladder)
        _, size = self._rungs(m)
        b = np.exp(-self.epsilon)
        tail = 2 * self.ladder[-1] * b**m / (1 - b)
        return float(size @ b ** np.arange(m) + tail)

    def pmf(self, offset: Any) -> np.ndarray:
        """``Pr[release - f(x) = offset]`` for integer offsets."""
        d = np.abs(np.asarray(offset, dtype=np.int64))
        m = len(self.ladder)
        radius, _ = self._rungs(m)
        top = self.ladder[-1]
        if top == 0:
            rung = np.where(d <= radius[-1], np.searchsorted(radius, d, side="left"), -1)
        else:
            beyond = np.maximum(d - radius[-1], 0)
            rung = np.where(d <= radius[-1], np.searchsorted(radius, d, side="left"), m - 1 + -(-beyond // top))
        prob = np.exp(-self.epsilon * rung) / self.normaliser
        return np.where(rung >= 0, prob, 0.0)

    def sample(self, true_value: int, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        """Exact draws (:mod:`dpopt.exact_sampling`): the rung from its weights' logits (geometric with
        the float ratio b beyond the ladder), then a uniform point of the rung by an unbiased integer."""
        value = check_int(true_value, "true_value", OWNER)
        count = check_count(count, OWNER)
        source = resolve_rng(rng, secure=secure)
        m, b = len(self.ladder), np.exp(-self.epsilon)
        top = self.ladder[-1]
        _, size = self._rungs(m)
        # rung weights |S_i| e^(-i eps) and the tail's mass, as logits: with m eps > 745 the float
        # weights would hold zeros beside non-zeros (exact_choice_logits never flushes them)
        rungs = np.flatnonzero(size > 0)  # a step of 0 leaves its rung empty: weight exactly 0
        logits = np.log(size[rungs].astype(float)) - self.epsilon * rungs
        if top > 0:
            rungs = np.append(rungs, m)
            logits = np.append(logits, np.log(2.0 * top) - self.epsilon * m - np.log(-np.expm1(-self.epsilon)))
        rung = rungs[exact_choice_logits(logits, count, source)]
        extra = exact_geometric(float(b), count, source)
        rung = np.where(rung == m, m + extra, rung)  # geometric number of rungs past the ladder
        radius, sizes = self._rungs(int(rung.max()) + 1)
        inner = np.where(rung > 0, radius[np.maximum(rung - 1, 0)], -1)  # L_(i-1), or -1 for S_0
        position = uniform_below(sizes[rung], source)
        if (rung == 0).any():
            zero = rung == 0
            position[zero] -= radius[0]  # S_0 = {-L_0, ..., L_0}
        magnitude = inner + 1 + position // 2
        sign = np.where(position % 2 == 0, 1, -1)
        return offset_exactly(value, np.where(rung == 0, position, sign * magnitude))


def ladders_from_universe(values: Sequence[float], neighbours: Any) -> np.ndarray:
    """Every dataset's ladder: ``Delta_i^x = max{LS(y) : d(x, y) <= i}``, i = 0..diameter.

    Parameters
    ----------
    values : sequence of float
        ``f(x)`` for each dataset x of a finite universe (any finite reals: the local
        sensitivity ``LS(y)`` is the largest ``|f(y) - f(y')|`` over y's neighbours y').
    neighbours : array of shape (k, 2)
        Neighbouring dataset pairs (the graph's edges); the universe must be connected.

    Returns
    -------
    array of float, shape (datasets, diameter + 1)
    """
    f = check_array(values, "values", OWNER, ndim=1, max_abs=MAX_MAGNITUDE)
    pairs = np.asarray(neighbours, dtype=int)
    n = f.size
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.size == 0 or pairs.min() < 0 or pairs.max() >= n:
        raise fail("neighbours", OWNER, f"pairs of dataset indices in [0, {n - 1}]", pairs)
    jumps = np.abs(f[pairs[:, 0]] - f[pairs[:, 1]])
    local = np.zeros(n)
    np.maximum.at(local, pairs[:, 0], jumps)
    np.maximum.at(local, pairs[:, 1], jumps)
    dist = hop_distances(n, pairs)
    if not np.isfinite(dist).all():
        raise fail("neighbours", OWNER, "a connected neighbour graph", "a disconnected one")
    diameter = int(dist.max())
    return np.stack([np.where(dist <= i, local[None, :], 0).max(axis=1) for i in range(diameter + 1)], axis=1)


def ladder_matrix(values: Sequence[int], neighbours: Any, epsilon: float, *, margin: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mechanism matrix of the ladder mechanism over a finite universe.

    Outputs are the integers ``min f - margin .. max f + margin``; releases beyond
    are clamped to the end columns. The default margin covers every ladder and
    four more top rungs, past which neighbours' probability ratios repeat.

    Returns
    -------
    matrix : array of shape (datasets, outputs)
    outputs : array of int
    """
    f = np.array([check_int(v, "values", OWNER) for v in values], dtype=np.int64)
    ladders = ladders_from_universe(f, neighbours).astype(np.int64)  # integer values: integer jumps
    eps = check_epsilon(epsilon, OWNER)
    top = int(ladders[:, -1].max())
    if margin is None:
        margin = int(ladders.sum(axis=1).max()) + 4 * max(top, 1)
    outputs = np.arange(f.min() - margin, f.max() + margin + 1)
    matrix = np.empty((f.size, outputs.size))
    for row, (value, ladder) in enumerate(zip(f, ladders)):
        mech = LadderMechanism(ladder=tuple(int(v) for v in ladder), epsilon=eps)
        matrix[row] = mech.pmf(outputs - value)
        matrix[row, 0] += _mass_beyond(mech, value - outputs[0])
        matrix[row, -1] += _mass_beyond(mech, outputs[-1] - value)
    return matrix, outputs


def _mass_beyond(mech: LadderMechanism, distance: int) -> float:
    """``Pr[release - f(x) > distance]``, which by symmetry is also the mass below ``-distance``."""
    inside = float(mech.pmf(np.arange(-distance, distance + 1)).sum())
    return max(0.0, (1.0 - inside) / 2.0)

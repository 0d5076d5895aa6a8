"""Sum queries with a neighbouring set V: Wu-Xia-He Section 6.2 as exact densities.

A sum query's neighbouring set V (Section 3.4) is the set of changes one record can
make; with unbounded DP a neighbour changes the sum by some ``v`` in ``W = V U -V``.
Written as a union of closed intervals, e.g. ``V1 = [0, 1] U [1000, 1001]``.

Theorem 2 (privacy first) on such a query is translation invariant: the values
reachable within i steps are the i-fold Minkowski sum ``A_i = W + ... + W`` (with
``A_0 = {0}``; 0 is in W whenever V contains 0, and adding it keeps ``A_i`` the
values within *at most* i steps, Definition 4's closed neighbourhood). The density is
``e^(-i eps) / alpha`` on the ring ``I_i = A_i minus A_(i-1)``. Theorem 3 (compositional,
one delta for every dataset, as the paper does for linear queries) replaces ``A_i`` by
``B_i = A_i + [-delta, delta]``; ``delta = 0`` is Theorem 2.

Once ``A_n`` is a single interval ``[-a, a]`` with ``a >= Delta = max V``, every later
``A_(n+j)`` is ``[-(a + j Delta), a + j Delta]`` (every gap of W is shorter than 2a,
and ``+-Delta`` are in W), so the rings after n are bands of width Delta: the density
is a :class:`~dpopt.mechanisms.piecewise_noise.PiecewiseNoise` whose tail decays by
``e^-eps`` per Delta, and the normaliser, moments, cdf and sampler are exact
(Proposition 3 is this convergence; it gives the step count ``Delta / (c - b)`` for
``V = [0, a] U [b, c]``, which is when the *outer* interval's multiples start to
overlap. The ring structure converges when every gap between the multiples has
closed: for V1 at n = 1000, as :func:`ring_noise` measures).

**Where the paper's wording differs.** Definition 13 writes the converged rings as
``a_n +- [0, Delta]``; with ``A_n = [-a, a]`` the ring ``I_(n+1)`` is
``+-(a, a + Delta]``. Corollary 1 (eps, not 2 eps, for linear queries) holds and is
measured by :meth:`PiecewiseNoise.privacy_loss` on every density built here.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dpopt.limits import MAX_MAGNITUDE
from dpopt.mechanisms.piecewise_noise import PiecewiseNoise
from dpopt.validation import check_array, check_real, fail

__all__ = [
    "check_neighbouring_set",
    "merge_intervals",
    "minkowski_sum",
    "subtract_intervals",
    "symmetric_shifts",
    "ring_noise",
    "staircase_noise",
    "MAX_RING_PIECES",
    "MAX_RING_STEPS",
]

OWNER = "noise_adding"

#: The most pieces (on the half line) a ring density may have before convergence. V1's
#: Theorem 2 density has about 250,000; beyond a few million the memory of the rings
#: (and of the certificate's sparse table) is the limit.
MAX_RING_PIECES = 4_000_000
#: The most ring steps: convergence takes about Delta over the shortest interval's length
#: of V (V1: 1000 steps); a V needing more is refused before it runs for minutes.
MAX_RING_STEPS = 20_000


#: Smallest largest element of V: the scales dpopt takes span 1e-12 to 1e12 (E Z^2 ~ Delta^2
#: stays far above the smallest double).
MIN_LARGEST = 1e-12


def check_neighbouring_set(value: Any, parameter: str = "neighbouring_set") -> np.ndarray:
    """A union of closed intervals ``[[lo, hi], ...]`` with ``0 <= lo <= hi``, merged and sorted.

    At least one interval must have positive length (a finite V has measure zero, and
    no density is built from rings of measure zero), at most 1000 intervals, and the largest
    element Delta in [:data:`MIN_LARGEST`, 1e12]: below, the moments underflow (Delta = 1e-200
    reported E|Z| = 0 for every method).
    """
    v = check_array(value, parameter, OWNER, ndim=2, low=0.0, max_abs=1e12)
    if v.size and v.ndim == 2 and float(v.max()) < MIN_LARGEST:
        raise fail(parameter, OWNER, f"a set whose largest element is at least {MIN_LARGEST:g} (a smaller scale underflows "
                   "the noise's moments: state the query in smaller units)", v.tolist() if v.size < 20 else v.shape)
    if v.shape[1] != 2 or not 1 <= v.shape[0] <= 1000 or np.any(v[:, 0] > v[:, 1]):
        raise fail(parameter, OWNER, "1 to 1000 intervals [lo, hi] with 0 <= lo <= hi", v.tolist() if v.size < 20 else v.shape)
    merged = merge_intervals(v)
    if not np.any(merged[:, 1] > merged[:, 0]):
        raise fail(parameter, OWNER, "an interval of positive length (rings of a finite set have measure 0)", v.tolist())
    return merged


def merge_intervals(intervals: np.ndarray) -> np.ndarray:
    """Sorted, disjoint closed intervals covering the same set (touching ones joined)."""
    iv = np.asarray(intervals, dtype=float).reshape(-1, 2)
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    ends = np.maximum.accumulate(iv[:, 1])
    new = np.r_[True, iv[1:, 0] > ends[:-1]]
    index = np.flatnonzero(new)
    return np.column_stack([iv[index, 0], np.r_[ends[index[1:] - 1], ends[-1]]])


def minkowski_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``{x + y : x in a, y in b}`` for unions of closed intervals."""
    return merge_intervals((a[:, None, :] + b[None, :, :]).reshape(-1, 2))


def subtract_intervals(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """``outer minus inner`` up to endpoints (measure-exact) when ``inner`` is inside ``outer``.

    A sweep over the sorted endpoints: +1 entering ``outer``, +2 leaving ``inner``'s
    complement; the pieces where the count is exactly 1 are the difference.
    """
    points = np.concatenate([outer.ravel(), inner.ravel()])
    steps = np.concatenate([np.tile([1, -1], len(outer)), np.tile([2, -2], len(inner))])
    order = np.lexsort((steps, points))  # at a shared point, leave before entering
    points, count = points[order], np.cumsum(steps[order])
    inside = (count[:-1] == 1) & (points[1:] > points[:-1])
    return merge_intervals(np.column_stack([points[:-1][inside], points[1:][inside]])) if inside.any() else np.zeros((0, 2))


def symmetric_shifts(v: np.ndarray) -> np.ndarray:
    """``W = V U -V`` as merged intervals: every change of the sum between neighbours."""
    return merge_intervals(np.vstack([v, -v[:, ::-1]]))


def ring_noise(v: np.ndarray, epsilon: float, delta: float = 0.0) -> tuple[PiecewiseNoise, int]:
    """Theorem 3's density (Theorem 2 at ``delta = 0``) and the ring n where it converged.

    Rings ``R_i = B_i minus B_(i-1)`` with ``B_i = A_i + [-delta, delta]`` get level i; once
    ``A_n = [-a, a]`` with ``a >= Delta``, ring n + 1 is the band ``(a + delta, a + delta + Delta]``
    and the tail repeats it, decaying by ``e^-eps`` per Delta. The rings depend on V and
    delta only, so a sweep over epsilon builds them once (a small cache).
    """
    epsilon = check_real(epsilon, "epsilon", OWNER, low=0.0, low_open=True)
    delta = check_real(delta, "delta", OWNER, low=0.0, high=MAX_MAGNITUDE)  # as the problem allows
    v = np.ascontiguousarray(v, dtype=float)
    if v[-1, 1] == v[-1, 0]:  # i Delta stays an isolated point of A_i: the rings never become bands
        raise fail("neighbouring_set", OWNER, "a set whose largest element Delta lies in an interval of positive length "
                   "(otherwise the rings of Theorems 2-3 never converge, Proposition 3, and have no closed form)", v.tolist())
    breaks, levels, converged = _rings(v.tobytes(), v.shape[0], delta)
    return PiecewiseNoise(breaks, -epsilon * levels, float(v.max()), float(np.exp(-epsilon))), converged


@functools.lru_cache(maxsize=8)
def _rings(v_bytes: bytes, count: int, delta: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Breakpoints of the rings on ``[0, c)``, their levels, and the step n where they converged."""
    v = np.frombuffer(v_bytes, dtype=float).reshape(count, 2)
    w = merge_intervals(np.vstack([symmetric_shifts(v), [[0.0, 0.0]]]))  # within at most i steps
    big = float(v.max())
    ball = np.array([[-delta, delta]])
    reach = np.array([[0.0, 0.0]])
    previous = ball
    starts, ends, levels = [np.array([0.0])], [np.array([delta])], [np.array([0.0])]
    pieces, level = 1, 0
    while not (len(reach) == 1 and reach[0, 1] >= big):
        level += 1
        reach = minkowski_sum(reach, w)
        current = minkowski_sum(reach, ball)
        ring = subtract_intervals(current, previous)
        ring = ring[ring[:, 1] > 0]
        ring[:, 0] = np.maximum(ring[:, 0], 0.0)  # the half line; the density is symmetric
        starts.append(ring[:, 0]), ends.append(ring[:, 1]), levels.append(np.full(len(ring), float(level)))
        pieces += len(ring)
        if pieces > MAX_RING_PIECES or level > MAX_RING_STEPS:
            raise fail("neighbouring_set", OWNER, f"rings that converge within {MAX_RING_PIECES:,} pieces and {MAX_RING_STEPS:,} "
                       f"steps (this V had {pieces:,} pieces after {level} steps without converging)", v.tolist())
        previous = current
    edge = reach[0, 1] + delta
    starts.append(np.array([edge])), ends.append(np.array([edge + big])), levels.append(np.array([level + 1.0]))
    s, e, lv = np.concatenate(starts), np.concatenate(ends), np.concatenate(levels)
    keep = e > s
    order = np.argsort(s[keep])
    s, e, lv = s[keep][order], e[keep][order], lv[keep][order]
    if np.any(s[1:] != e[:-1]):  # the rings tile [0, c): Lemma 2's partition, checked
        gap = int(np.flatnonzero(s[1:] != e[:-1])[0])
        raise AssertionError(f"rings do not tile the half line at {e[gap]} (Lemma 2)")
    breaks = np.append(s, e[-1])
    for array in (breaks, lv):
        array.setflags(write=False)
    return breaks, lv, level


def staircase_noise(sensitivity: float, epsilon: float, gamma: float) -> PiecewiseNoise:
    """Geng-Viswanath's staircase (Wu-Xia-He Theorem 1, Example 9) as a piecewise density."""
    d = float(sensitivity)
    breaks = np.array([0.0, gamma * d, d]) if 0.0 < gamma < 1.0 else np.array([0.0, d])
    logs = np.array([0.0, -epsilon]) if breaks.size == 3 else np.array([0.0 if gamma > 0 else -epsilon])
    return PiecewiseNoise(breaks, logs, d, float(np.exp(-epsilon)))


"""Geometric-kernel sums in O(n) by first-order recurrences.

For weights w_0..w_n and 0 < alpha < 1, the sums

    forward_k[r]  = sum_{i <= r} w_i alpha^(r - i) (r - i)^k
    backward_k[r] = sum_{i >= r} w_i alpha^(i - r) (i - r)^k

satisfy ``forward_0[r] = w_r + alpha forward_0[r-1]`` and, expanding
``(r - i)^k = ((r - 1 - i) + 1)^k``,

    forward_1[r] = alpha (forward_1[r-1] + forward_0[r-1])
    forward_2[r] = alpha (forward_2[r-1] + 2 forward_1[r-1] + forward_0[r-1])

(backward likewise on the reversed sequence). Each is one call of
:func:`scipy.signal.lfilter`. They give every kernel sum the count-query column
generation needs, e.g. ``sum_i w_i alpha^|i-r| |i-r| = forward_1 + backward_1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KernelMoments", "kernel_moments"]


@dataclass(frozen=True)
class KernelMoments:
    """``forward[k]`` and ``backward[k]`` for k = 0..order (see the module docstring)."""

    weights: np.ndarray
    forward: tuple[np.ndarray, ...]
    backward: tuple[np.ndarray, ...]

    @property
    def total(self) -> np.ndarray:
        """``sum_i w_i alpha^|i - r|``."""
        return self.forward[0] + self.backward[0] - self.weights

    @property
    def absolute_first(self) -> np.ndarray:
        """``sum_i w_i alpha^|i - r| |i - r|``."""
        return self.forward[1] + self.backward[1]

    @property
    def signed_first(self) -> np.ndarray:
        """``sum_i w_i alpha^|i - r| (i - r)``."""
        return self.backward[1] - self.forward[1]

    @property
    def second(self) -> np.ndarray:
        """``sum_i w_i alpha^|i - r| (i - r)^2``."""
        return self.forward[2] + self.backward[2]


def _one_side(w: np.ndarray, alpha: float, order: int) -> tuple[np.ndarray, ...]:
    from scipy.signal import lfilter  # here, not at module level: scipy.signal imports scipy.stats (~1 s per CLI start)

    zero = lfilter([1.0], [1.0, -alpha], w)
    moments = [zero]
    if order >= 1:
        moments.append(lfilter([0.0, alpha], [1.0, -alpha], zero))
    if order >= 2:
        moments.append(lfilter([0.0, alpha], [1.0, -alpha], 2.0 * moments[1] + zero))
    return tuple(moments)


def kernel_moments(weights: np.ndarray, alpha: float, order: int = 2) -> KernelMoments:
    """Forward and backward geometric-kernel moments of ``weights`` up to ``order`` (<= 2).

    ``weights`` may be a stack of sequences: the sums run along its last axis.
    """
    w = np.asarray(weights, dtype=float)
    forward = _one_side(w, alpha, order)
    backward = tuple(m[..., ::-1] for m in _one_side(w[..., ::-1], alpha, order))
    return KernelMoments(weights=w, forward=forward, backward=backward)

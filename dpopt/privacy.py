"""Privacy parameters: ``alpha`` in (0, 1) and ``epsilon`` > 0, with alpha = exp(-epsilon).

Count-query papers (Gupte & Sundararajan) write privacy as ``alpha``; the others use
``epsilon``. Every API accepts exactly one of the two and reports both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.validation import check_real, fail

__all__ = ["PrivacyLevel", "resolve_privacy", "alpha_from_epsilon", "not_implied"]


@dataclass(frozen=True)
class PrivacyLevel:
    """A pure differential-privacy level, stored both ways.

    Attributes
    ----------
    alpha : float
        Multiplicative bound: ``alpha * x[a, r] <= x[b, r]`` for neighbours a, b.
    epsilon : float
        ``-ln(alpha)``.
    """

    alpha: float
    epsilon: float

    def to_dict(self) -> dict[str, float]:
        return {"alpha": self.alpha, "epsilon": self.epsilon}


def resolve_privacy(alpha: Any, epsilon: Any, owner: str) -> PrivacyLevel:
    """Validate that exactly one of ``alpha``/``epsilon`` is given and return both.

    Raises
    ------
    InvalidParameterError
        If both or neither are given, or the given one is out of range.
    """
    if (alpha is None) == (epsilon is None):
        raise fail(
            "alpha",
            owner,
            "given alone, or replaced by 'epsilon' (exactly one of the two)",
            {"alpha": alpha, "epsilon": epsilon},
        )
    if alpha is not None:
        a = check_real(alpha, "alpha", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        return PrivacyLevel(alpha=a, epsilon=-math.log(a))
    e = check_real(epsilon, "epsilon", owner, low=0.0, low_open=True)
    return PrivacyLevel(alpha=alpha_from_epsilon(e, "epsilon", owner), epsilon=e)


def alpha_from_epsilon(epsilon: float, parameter: str, owner: str) -> float:
    """``exp(-epsilon)``, refused when it rounds to 1 (epsilon below ~1.1e-16) or to 0 (above ~745).

    Such an epsilon would be stored as alpha = 1 (no privacy constraint at all, while
    the caller asked for some) or alpha = 0 (no mechanism exists).
    """
    alpha = math.exp(-epsilon)
    if not 0.0 < alpha < 1.0:
        raise fail(parameter, owner, "a float with exp(-epsilon) strictly inside (0, 1), i.e. in about [1.2e-16, 745]", epsilon)
    return alpha


def not_implied(w: np.ndarray, slack: float = 0.0) -> np.ndarray:
    """Which pairs (a, b), a != b, at finite ``w[a, b]`` no third point c implies.

    ``w`` holds log-bounds: ``x[u, r] <= e^w[u, v] x[v, r]``. The row of (a, b) follows from
    those of (a, c) and (c, b) whenever ``w[a, c] + w[c, b] <= w[a, b] (1 + slack)`` with both
    parts positive and shorter than ``w[a, b]`` (group privacy along a shortest path), so by
    induction on the bound every dropped row is implied by kept ones (up to the factor
    ``e^(slack w[a, b])``: the relaxations of :mod:`dpopt.programs.finite_query`, which only
    need a lower bound, use 1e-12; the LP uses 0). d_X's pair reduction
    (:func:`dpopt.dx.scales.essential_pairs`) is this with ``w = d_X`` and slack 1e-12. Both conditions are asked for, not implied
    by the sum: in floats, or with the slack, a part below w[a, b]'s last digit (w[a, c] =
    1e-17 beside w[c, b] = w[a, b] = 2) makes (a, b) and (c, b) imply each other, and both
    would be dropped; parts of 0 would drop rows in a circle the same way.
    """
    keep = np.isfinite(w) & ~np.eye(len(w), dtype=bool)
    bound = w * (1 + slack) if slack else w
    positive = w[keep & (w > 0)]
    # a part can reach w[a, b] only if the other is within (slack + rounding) w[a, b]: unless some
    # bound is that small beside the largest, the sum test alone is exact (hop metrics: always)
    tiny_parts = bool(positive.size) and positive.min() <= 4 * max(slack, 2.3e-16) * positive.max()
    for c in range(len(w)):
        # a part that is not positive becomes +inf: its sum then implies no finite bound
        into = np.where(w[:, c] > 0, w[:, c], np.inf)
        out = np.where(w[c, :] > 0, w[c, :], np.inf)
        implied = into[:, None] + out[None, :] <= bound
        if tiny_parts:
            implied &= (into[:, None] < w) & (out[None, :] < w)
        keep &= ~implied
    return keep

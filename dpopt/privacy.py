"""Privacy parameters: ``alpha`` in (0, 1) and ``epsilon`` > 0, with alpha = exp(-epsilon).

Count-query papers (Gupte & Sundararajan) write privacy as ``alpha``; the others use
``epsilon``. Every API accepts exactly one of the two and reports both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpopt.validation import check_real, fail

__all__ = ["PrivacyLevel", "resolve_privacy"]


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
    a = math.exp(-e)
    if not 0.0 < a < 1.0:  # epsilon so small or large that alpha rounds to 1 or 0
        raise fail("epsilon", owner, "a float with exp(-epsilon) strictly inside (0, 1)", epsilon)
    return PrivacyLevel(alpha=a, epsilon=e)

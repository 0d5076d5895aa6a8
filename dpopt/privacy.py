"""Privacy parameters: ``alpha`` in (0, 1) and ``epsilon`` > 0, with alpha = exp(-epsilon).

Count-query papers (Gupte & Sundararajan) write privacy as ``alpha``; the others use
``epsilon``. Every API accepts exactly one of the two and reports both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpopt.validation import check_real, fail

__all__ = ["PrivacyLevel", "resolve_privacy", "alpha_from_epsilon"]


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

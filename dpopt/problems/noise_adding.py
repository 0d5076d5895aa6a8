"""Optimal additive noise for an integer query (the problem staircase and geometric solve).

An integer-valued query with integer sensitivity Delta is released as ``f(x) + Z``
with Z on the integers; epsilon-DP means ``p(z) <= e^epsilon p(z + s)`` for every
integer z and every shift ``|s| <= Delta``. Minimise ``E|Z|`` (``cost = "absolute"``)
or ``E Z^2`` (``"squared"``). Geng & Viswanath show the discrete staircase is optimal;
for Delta = 1 it is the geometric mechanism.

The program is finite: Z is free on a window ``[-M, M]`` and its tails continue the
window's last Delta values, decaying by ``e^-epsilon`` every Delta steps (see
:mod:`dpopt.mechanisms.integer_noise`). Every feasible point is a valid mechanism on
all of the integers, and the staircase (for any M >= Delta) is one of them, so the
program's optimum equals the true optimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpopt.limits import UNDERFLOW_EXPONENT, check_memory
from dpopt.privacy import resolve_privacy
from dpopt.validation import check_choice, check_int, fail

__all__ = ["NoiseAdding", "COSTS"]

KIND = "noise_adding"
COSTS = ("absolute", "squared")


@dataclass(frozen=True, eq=False, kw_only=True)
class NoiseAdding:
    """Additive integer noise of least expected cost under epsilon-DP.

    Parameters
    ----------
    sensitivity : int
        Delta >= 1.
    epsilon, alpha : float
        Exactly one (alpha = exp(-epsilon)).
    cost : {"absolute", "squared"}
    window : int, optional
        Half-width M >= Delta of the free window (default 2 Delta).
    """

    sensitivity: int
    epsilon: float | None = None
    alpha: float | None = None
    cost: str = "absolute"
    window: int | None = None
    level: Any = field(init=False, repr=False)

    kind = KIND

    def __post_init__(self) -> None:
        delta = check_int(self.sensitivity, "sensitivity", KIND, low=1)
        level = resolve_privacy(self.alpha, self.epsilon, KIND)
        check_choice(self.cost, "cost", KIND, COSTS)
        m = 2 * delta if self.window is None else check_int(self.window, "window", KIND, low=delta)
        # every method builds the mechanism matrix for true values 0..Delta over the window
        # (Delta + 1 rows of 2M + 3 Delta + 1 releases) and the noise's pmf on it
        check_memory(8.0 * 4 * (delta + 1) * (2 * m + 3 * delta + 1), "window" if self.window is not None else "sensitivity",
                     KIND, m if self.window is not None else delta, what="the noise over the window")
        # The noise decays by alpha every Delta steps; over the window and one tail period
        # it must stay a normal double, or the pmf underflows to zeros beside non-zeros
        # (an infinite measured privacy loss) -- e.g. epsilon = 700 with Delta = 3.
        periods = m // delta + 2
        if level.epsilon * periods > UNDERFLOW_EXPONENT:
            if self.window is not None and level.epsilon * 4 <= UNDERFLOW_EXPONENT:
                raise fail("window", KIND, f"at most {int(UNDERFLOW_EXPONENT / level.epsilon - 2) * delta} at this epsilon "
                           "(beyond it the noise underflows to 0)", self.window)
            name = "epsilon" if self.epsilon is not None else "alpha"
            raise fail(name, KIND, f"small enough that alpha^{periods} (the window's {periods} periods) is a normal double: "
                       f"epsilon <= {UNDERFLOW_EXPONENT / periods:.4g} for this window", getattr(self, name))
        object.__setattr__(self, "sensitivity", delta)
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "epsilon", level.epsilon)
        object.__setattr__(self, "alpha", level.alpha)
        object.__setattr__(self, "window", m)

    @property
    def power(self) -> int:
        """1 for E|Z|, 2 for E Z^2."""
        return COSTS.index(self.cost) + 1

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "sensitivity": self.sensitivity, "epsilon": self.epsilon, "cost": self.cost, "window": self.window}

    def __repr__(self) -> str:
        return f"NoiseAdding(sensitivity={self.sensitivity}, epsilon={self.epsilon:.6g}, cost={self.cost!r}, window={self.window})"

"""Release of one count at several privacy levels (Gupte & Sundararajan, Algorithm 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from dpopt.limits import MAX_COUNT, UNDERFLOW_EXPONENT
from dpopt.privacy import alpha_from_epsilon
from dpopt.validation import check_int, check_real, fail

__all__ = ["MultiLevelRelease"]

KIND = "multi_level_release"


@dataclass(frozen=True, eq=False, kw_only=True)
class MultiLevelRelease:
    """Correlated releases ``r_1..r_k`` of one count 0..n, level i being alpha_i-DP.

    Parameters
    ----------
    n : int
        Largest count (>= 1).
    alphas : sequence of float, optional
        Strictly increasing levels in (0, 1): ``alpha_1`` is the least private
        (most accurate) release. Give exactly one of ``alphas``/``epsilons``.
    epsilons : sequence of float, optional
        Strictly decreasing epsilons > 0.
    """

    n: int
    alphas: Sequence[float] | None = None
    epsilons: Sequence[float] | None = None
    levels: tuple[float, ...] = field(init=False, repr=False)

    kind = KIND
    #: The objective is a deviation whose optimum is 0 (every method is exact): a ratio of two
    #: round-offs means nothing, so :func:`dpopt.price_of_closed_form` reports none.
    zero_optimum = True

    def __post_init__(self) -> None:
        n = check_int(self.n, "n", KIND, low=1, high=MAX_COUNT)
        if (self.alphas is None) == (self.epsilons is None):
            raise fail("alphas", KIND, "given alone, or replaced by 'epsilons' (exactly one)", {"alphas": self.alphas, "epsilons": self.epsilons})
        if self.alphas is not None:
            levels = tuple(_levels(self.alphas, "alphas", lambda v, p: check_real(v, p, KIND, low=0.0, high=1.0, low_open=True, high_open=True)))
        else:
            eps = _levels(self.epsilons, "epsilons", lambda v, p: check_real(v, p, KIND, low=0.0, low_open=True))
            levels = tuple(alpha_from_epsilon(e, "epsilons", KIND) for e in eps)
        if any(b <= a for a, b in zip(levels[:-1], levels[1:])):
            name = "alphas" if self.alphas is not None else "epsilons"
            order = "strictly increasing" if self.alphas is not None else "strictly decreasing"
            raise fail(name, KIND, f"{order} (sorted, no duplicates)", list(self.alphas if self.alphas is not None else self.epsilons))
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "levels", levels)

    @property
    def dense_fits(self) -> bool:
        """Whether the dense chain (entries down to alpha_1^n) stays in the normal doubles: n epsilon_1 <= 700."""
        return self.n * self.epsilon <= UNDERFLOW_EXPONENT

    @property
    def alpha(self) -> float:
        """The guarantee against any coalition: the least private level, alpha_1."""
        return self.levels[0]

    @property
    def epsilon(self) -> float:
        return -math.log(self.levels[0])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "n": self.n, "alphas": list(self.levels)}

    def __repr__(self) -> str:
        return f"MultiLevelRelease(n={self.n}, alphas={[round(a, 6) for a in self.levels]})"


def _levels(values: Any, name: str, check: Any) -> list[float]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise fail(name, KIND, "a non-empty list of numbers", values)
    result = [check(v, name) for v in values]
    if not result:
        raise fail(name, KIND, "a non-empty list of numbers", values)
    return result

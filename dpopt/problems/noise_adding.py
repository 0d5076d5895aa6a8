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

from dpopt.limits import MAX_MAGNITUDE, UNDERFLOW_EXPONENT, check_memory
from dpopt.mechanisms.neighbouring_sets import check_neighbouring_set
from dpopt.privacy import resolve_privacy
from dpopt.validation import check_choice, check_int, check_real, fail

__all__ = ["NoiseAdding", "NeighbouringSetNoise", "COSTS", "matrix_bytes"]

KIND = "noise_adding"
COSTS = ("absolute", "squared")


def matrix_bytes(sensitivity: int, half_width: int) -> float:
    """Memory to build the mechanism matrix of integer noise: its (Delta + 1) rows of 2M + 3 Delta + 1
    releases and their temporaries (:func:`dpopt.methods.noise_adding.noise_matrix`)."""
    return 8.0 * 4 * (sensitivity + 1) * (2 * half_width + 3 * sensitivity + 1)


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

    @property
    def matrix_bytes(self) -> float:
        """Memory the mechanism matrix needs, built only for ``solution.mechanism`` or an export."""
        return matrix_bytes(self.sensitivity, self.window)

    def __post_init__(self) -> None:
        # bounded before the memory estimate, whose float arithmetic overflowed on 10**400
        delta = check_int(self.sensitivity, "sensitivity", KIND, low=1, high=int(MAX_MAGNITUDE))
        level = resolve_privacy(self.alpha, self.epsilon, KIND)
        check_choice(self.cost, "cost", KIND, COSTS)
        m = 2 * delta if self.window is None else check_int(self.window, "window", KIND, low=delta, high=int(MAX_MAGNITUDE))
        # every method builds the noise's pmf over the window and one period of each tail, and
        # its certificate a dozen arrays of that length (the mechanism matrix, (Delta + 1) times
        # longer, only on request: methods.noise_adding.noise_matrix; the LP: its own estimate)
        check_memory(8.0 * 16 * (2 * m + 3 * delta + 1), "window" if self.window is not None else "sensitivity",
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


@dataclass(frozen=True, eq=False, kw_only=True)
class NeighbouringSetNoise:
    """Real additive noise for a sum query whose neighbouring set V is a union of intervals.

    Wu-Xia-He Section 6.2: neighbours' sums differ by some ``v`` in ``W = V U -V``;
    epsilon-DP means ``p(z) <= e^eps p(z + v)`` for almost every z and every v in W.
    Minimise ``E|Z|`` (``cost = "absolute"``) or ``E Z^2`` (``"squared"``) over noise
    densities. ``V = [0, Delta]`` is the ordinary sensitivity-Delta query, where the
    staircase is optimal (Geng-Viswanath); for a V with gaps nothing closed-form is
    known, and the grid LP (:mod:`dpopt.programs.noise_adding`) is the best density that
    is constant on cells of width ``Delta / grid`` over ``window`` periods with a
    periodic tail: an upper bound on the optimum that falls as the grid is refined.

    Parameters
    ----------
    neighbouring_set : list of [lo, hi]
        V, with ``0 <= lo <= hi``; at least one interval of positive length.
    epsilon, alpha : float
        Exactly one.
    cost : {"absolute", "squared"}
    delta : float, optional
        Theorem 3's ball radius (one delta for every dataset, as the paper uses it for
        linear queries); 0 (the default) is Theorem 2.
    grid : int, optional
        Cells per period Delta = max V for the LP (default 50).
    window : int, optional
        Periods of the LP's free part before its periodic tail (default 4).
    release_grid : float, optional
        g > 0: releases are ``x + Z`` rounded to the nearest multiple of g, drawn exactly
        (:meth:`dpopt.mechanisms.piecewise_noise.PiecewiseNoise.grid_release`; rounding is
        post-processing, so as private as the density). Without it the densities have only
        the floating-point sampler, for simulation studies.
    """

    neighbouring_set: Any
    epsilon: float | None = None
    alpha: float | None = None
    cost: str = "absolute"
    delta: float = 0.0
    grid: int = 50
    window: int = 4
    release_grid: float | None = None
    level: Any = field(init=False, repr=False)

    kind = KIND

    def __post_init__(self) -> None:
        v = check_neighbouring_set(self.neighbouring_set)
        if self.release_grid is not None:
            # a piece is at most Delta = max V long; 2**-40 Delta keeps its cells below MAX_CELLS_PER_PIECE
            object.__setattr__(self, "release_grid", check_real(self.release_grid, "release_grid", KIND, low=float(v.max()) * 2.0**-40,
                                                                high=MAX_MAGNITUDE))
        level = resolve_privacy(self.alpha, self.epsilon, KIND)
        check_choice(self.cost, "cost", KIND, COSTS)
        delta = check_real(self.delta, "delta", KIND, low=0.0, high=min(1e6 * float(v.max()), MAX_MAGNITUDE))
        grid = check_int(self.grid, "grid", KIND, low=1, high=100_000)
        window = check_int(self.window, "window", KIND, low=1, high=1000)
        if level.epsilon > UNDERFLOW_EXPONENT / (window + 2):
            name = "epsilon" if self.epsilon is not None else "alpha"
            raise fail(name, KIND, f"at most {UNDERFLOW_EXPONENT / (window + 2):.4g} for this window (the tail underflows beyond)",
                       getattr(self, name))
        object.__setattr__(self, "neighbouring_set", v)
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "epsilon", level.epsilon)
        object.__setattr__(self, "alpha", level.alpha)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "window", window)

    @property
    def power(self) -> int:
        """1 for E|Z|, 2 for E Z^2."""
        return COSTS.index(self.cost) + 1

    @property
    def sensitivity(self) -> float:
        """Delta = max V, the staircase's step and the tails' period."""
        return float(self.neighbouring_set.max())

    @property
    def is_interval(self) -> bool:
        """V = [0, Delta]: the ordinary sensitivity query, where the staircase is optimal."""
        return self.neighbouring_set.shape[0] == 1 and self.neighbouring_set[0, 0] == 0.0

    def to_dict(self) -> dict[str, Any]:
        data = {"kind": KIND, "neighbouring_set": self.neighbouring_set.tolist(), "epsilon": self.epsilon, "cost": self.cost,
                "delta": self.delta, "grid": self.grid, "window": self.window}
        return data if self.release_grid is None else {**data, "release_grid": self.release_grid}

    def __repr__(self) -> str:
        return (f"NeighbouringSetNoise(neighbouring_set={self.neighbouring_set.tolist()}, epsilon={self.epsilon:.6g}, "
                f"cost={self.cost!r}, delta={self.delta:g}, grid={self.grid}, window={self.window}"
                + ("" if self.release_grid is None else f", release_grid={self.release_grid:g}") + ")")

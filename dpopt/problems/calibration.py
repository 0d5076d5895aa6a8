"""Calibration requests: the scale of a closed-form mechanism for (epsilon[, delta]) and a sensitivity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpopt.exact_sampling import MAX_SCALE_STEPS
from dpopt.limits import MAX_MAGNITUDE, MAX_ORDER, check_memory
from dpopt.mechanisms.discrete_gaussian import MAX_RATIONAL
from dpopt.mechanisms.grid_release import COARSEST_GRID_PER_SCALE, MAX_GRID_STEPS, MAX_GRID_VARIANCE, discrete_gaussian_delta, grid_sensitivity
from dpopt.privacy import resolve_privacy
from dpopt.validation import check_choice, check_int, check_real, fail

__all__ = ["Calibration", "CALIBRATED_MECHANISMS", "GRID_MECHANISMS", "ROUNDED_MECHANISMS"]

KIND = "calibration"
#: Largest |bound| / sensitivity of a bounded mechanism (floating-point resolution, see below).
MAX_BOUND_RATIO = 1e9
#: Smallest epsilon for ``truncated_generalized_gaussian``. Its loss is measured through the
#: truncation masses A(s), incomplete gamma values scipy gives to about 1e-15 relative; where
#: b is far above the bounds' width, ln(A(s') / A(s)) is of order epsilon, so the measured loss
#: carries a few 1e-15 of noise: 10-60% of epsilon = 1e-14 (p = 2..10, widths 1 to 2000),
#: above epsilon at 1e-15, where every calibration was refused as uncertified (exit 4).
MIN_TRUNCATED_GG_EPSILON = 1e-14

#: mechanism -> (needs delta, needs p, needs bounds, bounds allowed)
CALIBRATED_MECHANISMS: dict[str, tuple[bool, bool, bool, bool]] = {
    "laplace": (False, False, False, True),
    "geometric": (False, False, False, False),
    "staircase": (False, False, False, False),
    "gaussian_classic": (True, False, False, False),
    "gaussian_pdp": (True, False, False, False),
    "gaussian_analytic": (True, False, False, False),
    "generalized_gaussian": (True, True, False, False),
    "truncated_generalized_gaussian": (False, True, True, True),
    "discrete_laplace": (False, False, False, False),
    "discrete_gaussian": (True, False, False, False),
}
#: Mechanisms released on a grid with exact discrete noise (:mod:`dpopt.mechanisms.grid_release`).
GRID_MECHANISMS = ("discrete_laplace", "discrete_gaussian")
#: Continuous mechanisms whose releases a ``grid`` rounds, drawn exactly (rounding is post-processing).
ROUNDED_MECHANISMS = ("laplace", "staircase")
#: Finest grid for a rounded release, relative to the sensitivity (a staircase step spans at
#: most 2**40 cells, far below :data:`dpopt.mechanisms.piecewise_noise.MAX_CELLS_PER_PIECE`).
FINEST_ROUNDING = 2.0**-40


@dataclass(frozen=True, eq=False, kw_only=True)
class Calibration:
    """Calibrate one mechanism's scale (sigma for Gaussians, b otherwise).

    Parameters
    ----------
    mechanism : str
        One of :data:`CALIBRATED_MECHANISMS`.
    epsilon, alpha : float
        Exactly one.
    delta : float, optional
        Required by the Gaussians and ``generalized_gaussian`` (Lemma 5); not allowed otherwise.
    sensitivity : float
        l1 sensitivity (l2 for Gaussians); an integer for ``geometric``.
    p : int, optional
        Order of the generalized Gaussian (>= 2 for Lemma 5, >= 1 truncated).
    lower, upper : float, optional
        Bounds: required by ``truncated_generalized_gaussian``; for ``laplace`` they
        select the bounded-domain (truncated) Laplace with its exact scale.
    grid : float, optional
        The release grid g. For ``discrete_laplace`` / ``discrete_gaussian`` (default 1): the
        value is rounded to the grid exactly and exact integer noise added in grid units, the
        safe replacement of ``gaussian_analytic`` for releases. For ``laplace`` (unbounded) and
        ``staircase``: the continuous release ``x + Z`` is rounded to the nearest multiple of g,
        drawn exactly (post-processing: no privacy cost, at most g / 2 more error); without a
        grid they have only the floating-point sampler, for simulation studies.
    """

    mechanism: str
    epsilon: float | None = None
    alpha: float | None = None
    delta: float | None = None
    sensitivity: float = 1.0
    p: int | None = None
    lower: float | None = None
    upper: float | None = None
    grid: float | None = None
    level: Any = field(init=False, repr=False)

    kind = KIND

    def __post_init__(self) -> None:
        name = check_choice(self.mechanism, "mechanism", KIND, tuple(CALIBRATED_MECHANISMS))
        needs_delta, needs_p, needs_bounds, bounds_ok = CALIBRATED_MECHANISMS[name]
        level = resolve_privacy(self.alpha, self.epsilon, KIND)
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "epsilon", level.epsilon)
        object.__setattr__(self, "alpha", level.alpha)
        if name == "geometric":  # an integral float such as the default 1.0 is the integer it equals
            sensitivity = self.sensitivity
            if isinstance(sensitivity, float) and sensitivity.is_integer():
                sensitivity = int(sensitivity)
            object.__setattr__(self, "sensitivity", check_int(sensitivity, "sensitivity", KIND, low=1))
            # the noise is a window of 2 Delta + 1 probabilities and its temporaries (Delta = 1e9
            # asked for 15 GiB at once, and a larger one was killed by the kernel)
            check_memory(256.0 * (2 * self.sensitivity + 1), "sensitivity", KIND, self.sensitivity,
                         what="the geometric noise's window of 2 x sensitivity + 1 probabilities")
        else:
            object.__setattr__(self, "sensitivity", check_real(self.sensitivity, "sensitivity", KIND, low=0.0, low_open=True, high=MAX_MAGNITUDE))
        self._field("delta", needs_delta, f"given for {name} (a float in (0, 1))" if needs_delta else f"omitted for {name}",
                    lambda v: check_real(v, "delta", KIND, low=0.0, high=1.0, low_open=True, high_open=True))
        low_p = 2 if name == "generalized_gaussian" else 1
        self._field("p", needs_p, f"given for {name} (an integer in [{low_p}, {MAX_ORDER}])" if needs_p else f"omitted for {name}",
                    lambda v: check_int(v, "p", KIND, low=low_p, high=MAX_ORDER))
        for bound in ("lower", "upper"):
            self._field(bound, needs_bounds, f"given for {name}" if needs_bounds else f"omitted for {name}",
                        lambda v, b=bound: check_real(v, b, KIND, low=-MAX_MAGNITUDE, high=MAX_MAGNITUDE), allowed=bounds_ok)
        # bounded above like every magnitude: grid = 1e308 overflowed to inf in the releases (exit 1)
        gridded = GRID_MECHANISMS + ROUNDED_MECHANISMS
        self._field("grid", False, f"given only for {', '.join(gridded)} (a float > 0)",
                    lambda v: check_real(v, "grid", KIND, low=0.0, low_open=True, high=MAX_MAGNITUDE), allowed=name in gridded)
        if name in GRID_MECHANISMS:
            self._check_grid_noise(name)
        if name in ROUNDED_MECHANISMS and self.grid is not None:
            self._check_rounding(name)
        if (self.lower is None) != (self.upper is None):
            raise fail("upper" if self.upper is None else "lower", KIND, "given together with the other bound", None)
        if self.lower is not None and not self.upper > self.lower:
            raise fail("upper", KIND, f"a float greater than lower = {self.lower:g}", self.upper)
        if self.lower is not None and self.sensitivity > self.upper - self.lower:
            raise fail("sensitivity", KIND, f"a float <= upper - lower = {self.upper - self.lower:g}", self.sensitivity)
        if self.lower is not None:
            # the densities are evaluated at s and s + Delta: beyond ~1e9 Delta from 0 the
            # spacing of doubles is a visible fraction of Delta and the measured loss is noise
            # (upper = 6.3e15, Delta = 1: spacing 1.0, measured loss 1.07 > epsilon = 1)
            for bound in ("lower", "upper"):
                if abs(getattr(self, bound)) > MAX_BOUND_RATIO * self.sensitivity:
                    raise fail(bound, KIND, f"within {MAX_BOUND_RATIO:g} x sensitivity of 0 (|{bound}| / sensitivity <= {MAX_BOUND_RATIO:g})", getattr(self, bound))
        if name == "truncated_generalized_gaussian" and self.epsilon < MIN_TRUNCATED_GG_EPSILON:
            raise fail("epsilon", KIND, f"at least {MIN_TRUNCATED_GG_EPSILON:g} for truncated_generalized_gaussian (below it its "
                       "privacy loss is measured only to its own size)", self.epsilon)
        if name == "gaussian_classic" and not self.epsilon < 1.0:
            raise fail("epsilon", KIND, "a float in (0, 1) for gaussian_classic", self.epsilon)

    def _check_grid_noise(self, name: str) -> None:
        """The grid noise's own limits, checked here so that they name this problem's fields
        (until 2026-11-29 the default grid of 1 was not checked, and a scale or variance past the
        exact samplers' range was refused only by solve, as the 'scale' of "discrete gaussian")."""
        grid = 1.0 if self.grid is None else self.grid
        steps = grid_sensitivity(self.sensitivity, grid)
        if steps > MAX_GRID_STEPS:
            given = "" if self.grid is not None else " (none was given: the default is 1)"
            raise fail("grid", KIND, f"at least sensitivity / {MAX_GRID_STEPS} = {self.sensitivity / MAX_GRID_STEPS:g}{given}", self.grid)
        if name == "discrete_laplace" and steps / self.epsilon > MAX_RATIONAL - 1:
            raise fail("epsilon", KIND, f"at least {steps / (MAX_RATIONAL - 1):.6g} for discrete_laplace with this grid: its scale, "
                       f"ceil(sensitivity / grid) / epsilon = {steps} / epsilon grid steps, is at most 2**40 (or a coarser grid)", self.epsilon)
        if name == "discrete_gaussian" and discrete_gaussian_delta(float(MAX_GRID_VARIANCE), self.epsilon, steps) > self.delta:
            raise fail("delta", KIND, f"large enough for a grid variance below 2**20 at epsilon = {self.epsilon:.3g} "
                       "(a larger delta or epsilon, or a coarser grid)", self.delta)

    def _check_rounding(self, name: str) -> None:
        if self.lower is not None:
            raise fail("grid", KIND, "omitted for the bounded (truncated) laplace: only its unbounded release is rounded exactly", self.grid)
        finest = FINEST_ROUNDING * self.sensitivity
        if name == "laplace":  # the rounded Laplace draws its distance in grid steps of scale / grid <= 2**52
            finest = max(finest, self.sensitivity / self.epsilon / MAX_SCALE_STEPS * (1 + 1e-9))
        coarsest = COARSEST_GRID_PER_SCALE * self.sensitivity / self.epsilon  # as the d_X release_grid
        if not finest <= self.grid <= coarsest:
            raise fail("grid", KIND, f"between {finest:.6g} (sensitivity x 2**-40, and for laplace its scale / 2**52) and "
                       f"1000 x sensitivity / epsilon = {coarsest:.6g} "
                       f"for a rounded {name} release", self.grid)

    def _field(self, name: str, required: bool, allowed_text: str, check: Any, *, allowed: bool | None = None) -> None:
        value = getattr(self, name)
        may = required if allowed is None else allowed
        if value is None:
            if required:
                raise fail(name, KIND, allowed_text, None)
            return
        if not may:
            raise fail(name, KIND, allowed_text, value)
        object.__setattr__(self, name, check(value))

    def to_dict(self) -> dict[str, Any]:
        data = {"kind": KIND, "mechanism": self.mechanism, "epsilon": self.epsilon, "sensitivity": self.sensitivity}
        data.update({k: getattr(self, k) for k in ("delta", "p", "lower", "upper", "grid") if getattr(self, k) is not None})
        return data

    def __repr__(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if k not in ("kind", "mechanism"))
        return f"Calibration(mechanism={self.mechanism!r}, {extra})"

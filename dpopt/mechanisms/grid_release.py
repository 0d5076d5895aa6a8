"""Real-valued queries released safely: on a declared grid, with exact discrete noise.

Floating-point Laplace or Gaussian noise leaks the true value through the set of doubles
it can produce (Mironov, CCS 2012; :mod:`dpopt.privacy_audit` shows the attack). Here a
real query value x with sensitivity Delta is released as

    g * (floor(x / g + 1/2) + Z),

with the rounding done in exact rational arithmetic and Z exact integer noise
(:mod:`dpopt.mechanisms.discrete_gaussian`). Rounding to the grid is monotone and commutes
with integer shifts, so neighbours' grid indices differ by at most ``S = ceil(Delta / g)``:
that is the whole privacy cost of the rounding (S g >= Delta; nothing when Delta / g is an
integer), and the certificate is computed for sensitivity S on the integers. Nothing is
clamped (the integers are unbounded). The multiplication by g is post-processing of an
exact integer release.

* :class:`GridLaplace` -- discrete Laplace with rational scale ``t >= S / epsilon`` (rounded
  up to a denominator of at most 2**20): the loss ``S / t <= epsilon`` is exact.
* :class:`GridGaussian` -- discrete Gaussian with rational ``sigma^2`` (denominator 1024)
  calibrated by bisection so that its exact (epsilon, delta) curve (CKS 2020, Theorem 7:
  ``delta = P[Y > eps s^2/S - S/2] - e^eps P[Y > eps s^2/S + S/2]``, summed over the pmf)
  meets the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.exact_sampling import offset_exactly
from dpopt.mechanisms.discrete_gaussian import DiscreteGaussian, DiscreteLaplace
from dpopt.sampling import check_count, resolve_rng
from dpopt.validation import check_exact_real, check_real, fail

__all__ = ["COARSEST_GRID_PER_SCALE", "MAX_GRID_STEPS", "MAX_GRID_VARIANCE", "GridLaplace", "GridGaussian", "ROUNDED_LAPLACE_SAMPLER", "check_release_grid", "grid_index", "grid_points", "grid_sensitivity",
           "discrete_gaussian_delta", "rounded_laplace", "rounded_laplace_release"]

OWNER = "grid release"
#: Denominators of the rational noise parameters.
SCALE_DENOMINATOR = 2**20
VARIANCE_DENOMINATOR = 1024
#: Most grid steps one sensitivity may span, and the largest variance (in grid steps) of the
#: discrete Gaussian's search (a finer grid, or a smaller delta, is needlessly fine).
MAX_GRID_STEPS = 4096
MAX_GRID_VARIANCE = 2**20


def grid_points(cells: Any, grid: float) -> np.ndarray:
    """The released values ``j g`` for grid indices j: the double nearest j times g's shortest decimal.

    A grid given as 0.1 is the double 0.1000000000000000055..., whose multiples print as
    3.3000000000000003; the user meant 1/10, and the release 33 is 3.3. Which value a given
    j is shown as is post-processing of j (the cells themselves are those of the double g).
    With ``g = p / q`` in lowest terms, ``j p`` is exact in float64 while ``|j| p < 2**53``,
    so one division rounds it correctly; larger products take rational arithmetic.
    """
    step = Fraction(repr(float(grid)))
    p, q = step.numerator, step.denominator
    j = np.asarray(cells)
    if j.dtype == object and j.size and max(abs(int(v)) for v in j.ravel()) < 2**62:
        j = j.astype(np.int64)
    if j.dtype != object and q < 2**53 and (not j.size or int(np.abs(j).max()) < 2**53 // p):
        return j.astype(float) * float(p) / float(q)
    return np.array([float(int(v) * step) for v in j.ravel()], dtype=float).reshape(j.shape)


def grid_index(value: float, grid: float) -> int:
    """``floor(value / grid + 1/2)`` in exact rational arithmetic."""
    return math.floor(Fraction(value) / Fraction(grid) + Fraction(1, 2))


def grid_sensitivity(sensitivity: float, grid: float) -> int:
    """``S = ceil(Delta / g)``, exactly: the most neighbours' grid indices can differ by."""
    return math.ceil(Fraction(sensitivity) / Fraction(grid))


def _checked(sensitivity: float, epsilon: float, grid: float) -> tuple[float, float, float, int]:
    delta_ = check_real(sensitivity, "sensitivity", OWNER, low=0.0, low_open=True)
    eps = check_real(epsilon, "epsilon", OWNER, low=0.0, low_open=True)
    g = check_real(grid, "grid", OWNER, low=0.0, low_open=True)
    s = grid_sensitivity(delta_, g)
    if s > MAX_GRID_STEPS:
        raise fail("grid", OWNER, f"at least sensitivity / {MAX_GRID_STEPS} (a grid {s} steps per sensitivity is needlessly fine)", g)
    return delta_, eps, g, s


@dataclass(frozen=True)
class GridLaplace:
    """``g (floor(x/g + 1/2) + Z)``, Z discrete Laplace with scale t >= S / epsilon (pure epsilon-DP)."""

    sensitivity: float
    epsilon: float
    grid: float = 1.0
    steps: int = field(init=False)
    scale: Fraction = field(init=False)

    def __post_init__(self) -> None:
        delta_, eps, g, s = _checked(self.sensitivity, self.epsilon, self.grid)
        exact = Fraction(s) / Fraction(eps)
        t = exact.limit_denominator(SCALE_DENOMINATOR)
        if t < exact:
            t += Fraction(1, SCALE_DENOMINATOR)
        for name, value in (("sensitivity", delta_), ("epsilon", eps), ("grid", g), ("steps", s), ("scale", t)):
            object.__setattr__(self, name, value)

    def privacy_loss(self) -> float:
        """``S / t``: the largest log-ratio of the discrete Laplace over shifts of at most S (exact, then rounded)."""
        return float(Fraction(self.steps) / self.scale)

    def expected_absolute_error(self) -> float:
        """A bound: ``g E|Z| + g / 2`` with ``E|Z| = 2r / (1 - r^2)``, ``r = exp(-1/t)``."""
        r = math.exp(-1.0 / float(self.scale))
        return self.grid * 2 * r / (1 - r * r) + self.grid / 2

    def sample(self, true_value: float, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        x = check_exact_real(true_value, "true_value", OWNER)
        count = check_count(count, OWNER)
        z = DiscreteLaplace(self.scale).sample(count, rng=resolve_rng(rng, secure=secure))
        return grid_points(offset_exactly(grid_index(x, self.grid), z), self.grid)


def discrete_gaussian_delta(sigma2: float, epsilon: float, steps: int) -> float:
    """CKS Theorem 7: the exact delta(epsilon) of the discrete Gaussian for integer sensitivity ``steps``.

    Theorem 7 is ``P[Z > c] - e^eps P[Z > c + s]`` with ``c = eps sigma^2 / s - s / 2``; its two
    tails agree in their leading digits when delta is small (1e-12 relative off at
    sigma^2 = 3.3e5, eps = 0.01, delta = 1.3e-12, in either direction). Pairing z with z + s
    gives ``sum_{z > c} P[Z = z] (1 - exp(eps - (2 z s + s^2) / (2 sigma^2)))``, whose every term
    is positive (the exponent is negative exactly when z > c), so nothing cancels: within
    4e-15 of 50-digit sums at the points measured (``tests/mechanisms/test_grid_release.py``
    checks it against ``decimal`` arithmetic).
    """
    sigma = math.sqrt(sigma2)
    width = int(40 * sigma + 40 + steps)
    z = np.arange(-width, width + 1)
    log_w = -(z.astype(float) ** 2) / (2 * sigma2)
    pmf = np.exp(log_w - log_w.max())
    pmf /= pmf.sum()
    above = z > epsilon * sigma2 / steps - steps / 2
    paired = z[above].astype(float)
    return float(np.sum(pmf[above] * -np.expm1(epsilon - (2.0 * paired * steps + steps * steps) / (2.0 * sigma2))))


@dataclass(frozen=True)
class GridGaussian:
    """``g (floor(x/g + 1/2) + Z)``, Z discrete Gaussian with the smallest rational sigma^2 meeting (epsilon, delta)."""

    sensitivity: float
    epsilon: float
    delta: float
    grid: float = 1.0
    steps: int = field(init=False)
    sigma2: Fraction = field(init=False)
    achieved_delta: float = field(init=False)

    def __post_init__(self) -> None:
        delta_, eps, g, s = _checked(self.sensitivity, self.epsilon, self.grid)
        target = check_real(self.delta, "delta", OWNER, low=0.0, high=1.0, low_open=True, high_open=True)
        low, high = Fraction(1, VARIANCE_DENOMINATOR), Fraction(max(1, s * s))
        while discrete_gaussian_delta(float(high), eps, s) > target:
            high *= 2
            if high > MAX_GRID_VARIANCE:
                raise fail("delta", OWNER, f"large enough for a grid variance below 2**20 at epsilon = {eps:.3g} "
                           "(a larger delta or epsilon, or a coarser grid)", target)
        while high - low > Fraction(1, VARIANCE_DENOMINATOR):  # bisection on the 1/1024 lattice
            mid = Fraction(math.floor((low + high) / 2 * VARIANCE_DENOMINATOR), VARIANCE_DENOMINATOR)
            if mid <= low:
                break
            if discrete_gaussian_delta(float(mid), eps, s) <= target:
                high = mid
            else:
                low = mid
        for name, value in (("sensitivity", delta_), ("epsilon", eps), ("delta", target), ("grid", g), ("steps", s),
                            ("sigma2", high), ("achieved_delta", discrete_gaussian_delta(float(high), eps, s))):
            object.__setattr__(self, name, value)

    def expected_absolute_error(self) -> float:
        """A bound: ``g E|Z| + g / 2``, E|Z| summed over the pmf."""
        z = np.arange(-int(40 * math.sqrt(self.sigma2)) - 40, int(40 * math.sqrt(self.sigma2)) + 41)
        return self.grid * float(np.sum(np.abs(z) * DiscreteGaussian(self.sigma2).pmf(z))) + self.grid / 2

    def sample(self, true_value: float, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        x = check_exact_real(true_value, "true_value", OWNER)
        count = check_count(count, OWNER)
        z = DiscreteGaussian(self.sigma2).sample(count, rng=resolve_rng(rng, secure=secure))
        return grid_points(offset_exactly(grid_index(x, self.grid), z), self.grid)


#: How :func:`rounded_laplace` draws (reported with every release that uses it).
ROUNDED_LAPLACE_SAMPLER = ("exact: mean + Laplace(scale) rounded to the nearest multiple of release_grid, the mean in rational "
                           "arithmetic; the cell's side by exact coins on its three weights (within a few ulps of the continuous "
                           "Laplace's), its distance by an exact geometric law with ratio e^(-grid/scale) to an ulp")


def rounded_laplace(mean: Fraction, scale: float, grid: float, count: int, source: Any) -> np.ndarray:
    """``count`` draws of ``j`` with ``j g`` the grid point nearest ``mean + L``, L ~ Laplace(``scale``), exactly.

    Rounding the continuous Laplace release is post-processing, so this is as private as the
    Laplace mechanism it rounds, and nothing about ``mean`` leaks through which doubles a
    floating-point sampler can produce (Mironov 2012). With ``u = mean / g + 1/2``,
    ``j0 = floor(u)``, ``f = u - j0`` and ``s = scale / g``, the law is (``r = e^(-1/s)``)

        P(j0) = 1 - (e^(-f/s) + e^(-(1-f)/s)) / 2,
        P(j0 + 1 + k) = e^(-(1-f)/s) (1 - r) r^k / 2,   P(j0 - 1 - k) = e^(-f/s) (1 - r) r^k / 2,   k >= 0;

    the side is drawn exactly on these three weights held as ``M 2**e`` (the first through
    ``expm1``, so it is accurate when s is large; none flushed to zero when s is small:
    :func:`dpopt.exact_sampling.exact_choice_logits`) and k by
    :func:`dpopt.exact_sampling.geometric_of_scale`. ``mean`` is exact (a
    :class:`fractions.Fraction`); a scale of 0 returns the nearest point itself. The indices
    are int64, or Python integers where they leave int64's range.
    """
    from dpopt.exact_sampling import exact_choice_logits, geometric_of_scale

    g = Fraction(float(grid))
    u = Fraction(mean) / g + Fraction(1, 2)
    j0 = math.floor(u)
    if scale == 0:
        return offset_exactly(j0, np.zeros(count, dtype=np.int64))
    f, s = float(u - j0), float(scale) / float(grid)
    centre = -0.5 * (math.expm1(-f / s) + math.expm1(-(1.0 - f) / s))
    half = math.log(0.5)
    side = exact_choice_logits([math.log(centre), half - (1.0 - f) / s, half - f / s], count, source)
    k = geometric_of_scale(s, count, source)
    offset = np.where(side == 1, 1 + k, np.where(side == 2, -1 - k, 0))
    return offset_exactly(j0, offset)


def rounded_laplace_release(mean: Fraction, scale: float, grid: float, count: int, source: Any) -> np.ndarray:
    """``count`` released values: :func:`rounded_laplace`'s grid indices shown by :func:`grid_points`."""
    return grid_points(rounded_laplace(mean, scale, grid, count, source), grid)


#: Coarsest release grid, in units of the noise scale it rounds (coarser rounding only throws accuracy away).
COARSEST_GRID_PER_SCALE = 1e3


def check_release_grid(grid: float, scales: np.ndarray, owner: str) -> None:
    """Refuse a ``release_grid`` coarser than :data:`COARSEST_GRID_PER_SCALE` times the smallest positive
    noise scale (naming it)."""
    positive = np.asarray(scales, dtype=float)
    positive = positive[positive > 0]
    if positive.size and grid > COARSEST_GRID_PER_SCALE * positive.min():
        raise fail("release_grid", owner, f"at most 1000 times the smallest noise scale ({positive.min():.6g})", grid)

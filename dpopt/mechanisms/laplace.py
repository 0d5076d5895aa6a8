"""The Laplace mechanism and its bounded-domain variants.

* :class:`LaplaceMechanism` -- ``Z ~ Lap(b)``, ``b = Delta / epsilon`` (Dwork et al.;
  Liu-Wu-Zhou Definition 3; Liu Eq. 6 with p = 1).
* :class:`TruncatedLaplaceMechanism` -- the Laplace density restricted to
  ``[lower, upper]`` and renormalised (Liu Definition 4 with p = 1). The normaliser
  depends on the true value, so ``b = Delta / epsilon`` is *not* enough. Two
  calibrations: ``"liu"`` is Eq. (8) at p = 1, ``b = 2 Delta / epsilon``; ``"exact"``
  is the smallest b whose worst-case log ratio equals epsilon (the bounded Laplace
  mechanism of Holohan et al., 2018), found by root finding on the exact loss
  ``Delta / b + ln A(lower + Delta) - ln A(lower)``.
* :class:`ThresholdedLaplaceMechanism` -- Laplace output clamped to the bounds
  (Liu Section 2.4, "thresholding"): post-processing, so ``b = Delta / epsilon``.
"""

from __future__ import annotations


from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize

from dpopt.mechanisms.noise import AdditiveNoise, check_epsilon, check_sensitivity, round_scale_up
from dpopt.sampling import check_count, open_uniforms, require_simulation, resolve_rng
from dpopt.validation import check_array, check_choice, check_real, fail

__all__ = [
    "LaplaceMechanism",
    "TruncatedLaplaceMechanism",
    "ThresholdedLaplaceMechanism",
    "laplace_cdf",
    "laplace_ppf",
]


def _scales(b: Any, owner: str) -> Any:
    """A positive finite scale, or an array of them (one per component, broadcast against x or u)."""
    scales = check_array(b, "b", owner, low=0.0)
    if np.any(scales == 0):
        raise fail("b", owner, "positive scales", b)
    return scales


def laplace_cdf(x: Any, b: float) -> np.ndarray:
    """CDF of ``Lap(b)`` centred at 0 (x may be infinite)."""
    return _laplace_cdf(check_array(x, "x", "laplace_cdf", allow_inf=True), _scales(b, "laplace_cdf"))


def _laplace_cdf(x: Any, b: Any) -> np.ndarray:
    """:func:`laplace_cdf` on inputs already checked (the mechanisms' own points and scales)."""
    z = np.asarray(x, dtype=float) / b
    return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0)))


def laplace_ppf(u: Any, b: float) -> np.ndarray:
    """Inverse CDF of ``Lap(b)`` on [0, 1] (-inf and +inf at the ends)."""
    v = check_array(u, "u", "laplace_ppf", low=0.0)
    b = _scales(b, "laplace_ppf")
    if np.any(v > 1.0):
        raise fail("u", "laplace_ppf", "probabilities in [0, 1]", u)
    return _laplace_ppf(v, b)


def _laplace_ppf(v: np.ndarray, b: Any) -> np.ndarray:
    """:func:`laplace_ppf` on inputs already checked."""
    low = v < 0.5
    with np.errstate(divide="ignore"):  # u = 0 and 1: -inf and +inf
        return np.where(low, b * np.log(2.0 * np.where(low, v, 0.5)), -b * np.log(2.0 * (1.0 - np.where(low, 0.5, v))))


@dataclass(frozen=True, kw_only=True)
class LaplaceMechanism(AdditiveNoise):
    """``x + Lap(Delta / epsilon)``: epsilon-DP for a query of l1 sensitivity Delta.

    Parameters
    ----------
    sensitivity : float
        l1 global sensitivity Delta > 0.
    epsilon : float
        Privacy budget > 0.
    """

    sensitivity: float
    epsilon: float
    owner = "laplace mechanism"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, self.owner))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, self.owner))

    @property
    def scale(self) -> float:
        """``b = Delta / epsilon``, rounded up (by ulps) until ``Delta / b <= epsilon`` in floating point:
        the calibration must meet its target, not exceed it by a rounding error."""
        return round_scale_up(self.sensitivity / self.epsilon, lambda b: self.sensitivity / b <= self.epsilon)

    def pdf(self, x: Any) -> np.ndarray:
        b = self.scale
        return np.exp(-np.abs(np.asarray(x, dtype=float)) / b) / (2.0 * b)

    def cdf(self, x: Any) -> np.ndarray:
        return laplace_cdf(x, self.scale)

    def ppf(self, u: Any) -> np.ndarray:
        return laplace_ppf(u, self.scale)

    def expected_absolute_error(self) -> float:
        return self.scale

    def variance(self) -> float:
        return 2.0 * self.scale**2

    def characteristic_modulus(self, t: Any) -> np.ndarray:
        """``1 / (1 + b^2 t^2)`` (Liu-Wu-Zhou Corollary 1)."""
        return 1.0 / (1.0 + (self.scale * np.asarray(t, dtype=float)) ** 2)

    def differential_entropy(self) -> float:
        """``log2(2 e b)`` bits (Liu-Wu-Zhou Theorem 6)."""
        return float(np.log2(2.0 * np.e * self.scale))

    def privacy_loss(self) -> float:
        """Worst-case log ratio of densities for neighbours: ``Delta / b``."""
        return self.sensitivity / self.scale


def _validate_bounded(mechanism: Any) -> None:
    """Validate sensitivity, epsilon and bounds of a bounded-domain Laplace mechanism in place."""
    owner = mechanism.owner
    delta = check_sensitivity(mechanism.sensitivity, owner)
    object.__setattr__(mechanism, "sensitivity", delta)
    object.__setattr__(mechanism, "epsilon", check_epsilon(mechanism.epsilon, owner))
    lo, hi = _check_bounds(mechanism.lower, mechanism.upper, delta, owner)
    object.__setattr__(mechanism, "lower", lo)
    object.__setattr__(mechanism, "upper", hi)


def _check_bounds(lower: Any, upper: Any, sensitivity: float, owner: str) -> tuple[float, float]:
    lo = check_real(lower, "lower", owner)
    hi = check_real(upper, "upper", owner)
    if hi <= lo:
        raise fail("upper", owner, f"a float greater than lower = {lo:g}", upper)
    if sensitivity > hi - lo:
        raise fail("sensitivity", owner, f"a float <= upper - lower = {hi - lo:g}", sensitivity)
    return lo, hi


@dataclass(frozen=True, kw_only=True)
class TruncatedLaplaceMechanism:
    """Laplace noise restricted to ``[lower, upper]`` and renormalised.

    The density of a release y for true value s is
    ``exp(-|y - s| / b) / (2 b A(s))`` with ``A(s) = 1 - exp(-(s - lower)/b)/2 - exp(-(upper - s)/b)/2``.

    Parameters
    ----------
    sensitivity, epsilon : float
        l1 sensitivity (at most ``upper - lower``) and budget.
    lower, upper : float
        The data-independent bounds of the query and of every release.
    calibration : {"exact", "liu"}
        ``"exact"``: the smallest b that is epsilon-DP; ``"liu"``: Liu's Eq. (8)
        at p = 1, ``b = 2 Delta / epsilon`` (sufficient, larger than needed).
    """

    sensitivity: float
    epsilon: float
    lower: float
    upper: float
    calibration: str = "exact"
    scale: float = field(init=False)
    owner = "truncated laplace mechanism"

    def __post_init__(self) -> None:
        _validate_bounded(self)
        check_choice(self.calibration, "calibration", self.owner, ("exact", "liu"))
        liu = 2.0 * self.sensitivity / self.epsilon
        scale = liu if self.calibration == "liu" else self._exact_scale(liu)
        object.__setattr__(self, "scale", scale)

    def privacy_loss(self, b: float | None = None) -> float:
        """Worst-case log density ratio over neighbours ``|s - s'| <= Delta`` in the bounds.

        For true values s < s' the ratio at a release y is
        ``exp((|y - s'| - |y - s|) / b) * A(s') / A(s)``; the distance term reaches
        ``Delta / b`` at a bound, on whichever side makes the normaliser term add.
        ``ln A`` is concave (A is a sum of concave functions), so its largest
        increment over a step of length Delta is taken at the bound:
        the loss is ``Delta / b + ln A(lower + Delta) - ln A(lower)`` (checked
        against a grid search over (s, s') in the tests).
        """
        b = self.scale if b is None else b
        # ln A(lower + Delta) - ln A(lower) = ln(1 + expm1(-d) expm1(d - u) / -expm1(-u)) with
        # d = Delta / b, u = width / b: the difference of the two logs, taken as such, kept
        # only ~3e-15 of a normaliser term of 5e-13 at b = 1e12 (a true loss 0.1% above epsilon)
        d, u = self.sensitivity / b, (self.upper - self.lower) / b
        return d + float(np.log1p(np.expm1(-d) * np.expm1(d - u) / -np.expm1(-u)))

    def _exact_scale(self, upper_bracket: float) -> float:
        """The smallest b whose :meth:`privacy_loss` is at most epsilon in floating point.

        The root is found to a tolerance relative to b (an absolute one, 1e-14 until
        2026-11-28, was 1.5% of b at sensitivity 2^-48 and gave a loss of 1.001 epsilon)
        and then rounded up until the loss meets epsilon, since brentq may stop on either side.
        """
        low = self.sensitivity / self.epsilon  # the distance term alone needs at least this
        meets = lambda b: self.privacy_loss(b) <= self.epsilon  # noqa: E731
        if meets(low):
            return low
        root = optimize.brentq(lambda b: self.privacy_loss(b) - self.epsilon, low, upper_bracket,
                               xtol=low * 1e-15, rtol=1e-15, maxiter=200)
        return round_scale_up(float(root), meets)

    def pdf(self, y: Any, true_value: float) -> np.ndarray:
        s = self._true(true_value)
        v = np.asarray(y, dtype=float)
        inside = (v >= self.lower) & (v <= self.upper)
        twice_mass = sum(self._side_masses(np.array(self.upper), s))  # 2 A(s)
        dens = np.exp(-np.abs(v - s) / self.scale) / (self.scale * twice_mass)
        return np.where(inside, dens, 0.0)

    def _side_masses(self, v: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
        """Twice the untruncated Laplace mass on ``[lower, min(v, s)]`` and on ``[s, max(v, s)]``;
        at ``v = upper`` their sum is ``2 A(s)``, the normaliser.

        Each is ``e^-a (1 - e^-c)`` taken through ``expm1``: the difference of two Laplace cdfs,
        as the cdf was computed until 2026-11-29, subtracts numbers near 1/2 and, once b is far
        above the width, keeps only ~1e-16 / (width / b) of the mass (cdf(0.001) = 0 at epsilon = 1e-13).
        Before 2026-11-28 the normaliser itself was ``1 - e^-x / 2 - e^-y / 2``, which lost its
        digits the same way (the "exact" scale at epsilon = 1e-12 had a true loss of 1.9 epsilon).
        """
        b = self.scale
        left_end = np.minimum(v, s)
        left = -np.exp(-(s - left_end) / b) * np.expm1(-(left_end - self.lower) / b)
        right = -np.expm1(-np.maximum(v - s, 0.0) / b)
        return left, right

    def cdf(self, y: Any, true_value: float) -> np.ndarray:
        s = self._true(true_value)
        v = np.clip(np.asarray(y, dtype=float), self.lower, self.upper)
        left, right = self._side_masses(v, s)
        left_all, right_all = self._side_masses(np.array(self.upper), s)
        return (left + right) / (left_all + right_all)

    def sample(self, true_value: float, count: int = 1, *, rng: Any = None, secure: bool = False, exact: bool = True) -> np.ndarray:
        """Draws in floating point: simulation only (``exact=False``).

        The side of the true value is drawn by its mass, then the distance within that side
        by inverse cdf, ``s -+ b ln(1 + u (e^-c - 1))`` with c the side's length over b (a
        single inverse cdf between Laplace cdfs near 1/2 lost the law at tiny epsilon, as :meth:`cdf` did).
        """
        require_simulation(exact, self.owner)
        s = self._true(true_value)
        count = check_count(count, self.owner)
        generator = resolve_rng(rng, secure=secure)
        b = self.scale
        left, right = self._side_masses(np.array(self.upper), s)
        on_left = open_uniforms(generator, count) * (left + right) < left
        u = open_uniforms(generator, count)
        below = s + b * np.log1p(u * np.expm1(-(s - self.lower) / b))
        above = s - b * np.log1p(u * np.expm1(-(self.upper - s) / b))
        return np.clip(np.where(on_left, below, above), self.lower, self.upper)

    def _true(self, true_value: Any) -> float:
        return check_real(true_value, "true_value", self.owner, low=self.lower, high=self.upper)


@dataclass(frozen=True, kw_only=True)
class ThresholdedLaplaceMechanism:
    """``clip(x + Lap(Delta / epsilon), lower, upper)``: thresholding is post-processing.

    The release has point masses at the bounds (Liu Eq. 10 with p = 1).
    """

    sensitivity: float
    epsilon: float
    lower: float
    upper: float
    owner = "thresholded laplace mechanism"

    def __post_init__(self) -> None:
        _validate_bounded(self)

    @property
    def scale(self) -> float:
        """The Laplace mechanism's scale (rounded up so that ``Delta / b <= epsilon`` in floating point)."""
        return LaplaceMechanism(sensitivity=self.sensitivity, epsilon=self.epsilon).scale

    def boundary_masses(self, true_value: float) -> tuple[float, float]:
        """``(Pr[release = lower], Pr[release = upper])``."""
        s = check_real(true_value, "true_value", self.owner, low=self.lower, high=self.upper)
        return float(_laplace_cdf(self.lower - s, self.scale)), float(1.0 - _laplace_cdf(self.upper - s, self.scale))

    def cdf(self, y: Any, true_value: float) -> np.ndarray:
        s = check_real(true_value, "true_value", self.owner, low=self.lower, high=self.upper)
        v = np.asarray(y, dtype=float)
        inner = _laplace_cdf(v - s, self.scale)
        return np.where(v < self.lower, 0.0, np.where(v >= self.upper, 1.0, inner))

    def sample(self, true_value: float, count: int = 1, *, rng: Any = None, secure: bool = False, exact: bool = True) -> np.ndarray:
        """Floating-point draws: simulation only (``exact=False``)."""
        require_simulation(exact, self.owner)
        s = check_real(true_value, "true_value", self.owner, low=self.lower, high=self.upper)
        base = LaplaceMechanism(sensitivity=self.sensitivity, epsilon=self.epsilon)
        return np.clip(base.sample(s, count, rng=rng, secure=secure, exact=False), self.lower, self.upper)


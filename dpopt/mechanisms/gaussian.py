"""The Gaussian mechanism with three calibrations of sigma, side by side.

* ``"classic"`` -- ``sigma = Delta_2 sqrt(2 ln(1.25 / delta)) / epsilon`` (Dwork & Roth
  Theorem A.1; Liu-Wu-Zhou Definition 5; Liu Eq. 19). Only valid for epsilon < 1.
* ``"pdp"`` -- Liu's (epsilon, delta)-probabilistic-DP bound, Lemma 10 / Eq. (18):
  ``sigma = Delta (sqrt(z^2 + 2 epsilon) - z) / (2 epsilon)`` with ``z = Phi^-1(delta / 2)``.
  It is the p = 2, one-dimensional case of Lemma 5 solved in closed form (the tests
  check it against the Monte Carlo bound of Lemma 5).
* ``"analytic"`` -- Balle & Wang (2018), Theorem 8: the smallest sigma with
  ``Phi(Delta / (2 sigma) - epsilon sigma / Delta) - e^epsilon Phi(-Delta / (2 sigma) - epsilon sigma / Delta) <= delta``,
  which is exact (epsilon, delta)-DP for every epsilon > 0. Solved by Brent's
  method on the log scale of sigma; the left side is decreasing in sigma.

Lemma 11 of Liu states its threshold as ``delta < 2 Phi(sqrt 2) ~ 0.157``; the
proof's own inequality ``z^2 / 2 >= 1`` gives ``delta <= 2 Phi(-sqrt 2) ~ 0.1573``
(``2 Phi(sqrt 2)`` is 1.84). :func:`lemma11_threshold` returns both the
epsilon-free threshold and the exact one for a given epsilon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special

from dpopt.mechanisms.noise import AdditiveNoise, check_delta, check_epsilon, check_sensitivity, round_scale_up
from dpopt.validation import check_array, check_choice, check_real, fail

__all__ = [
    "GaussianMechanism",
    "classic_sigma",
    "pdp_sigma",
    "analytic_sigma",
    "analytic_delta",
    "lemma11_threshold",
    "CALIBRATIONS",
]

CALIBRATIONS = ("analytic", "classic", "pdp")


#: Largest sensitivity (and sigma) the calibrations take: their root finding works on
#: log sigma between about log Delta -+ 2 per round, and e^709 overflows (a sensitivity of
#: 1e308 ended in OverflowError, an infinite delta looped for ever; until 2026-11-29).
MAX_SCALE = 1e150


def _calibration_inputs(sensitivity: Any, epsilon: Any, delta: Any, owner: str) -> tuple[float, float, float]:
    """The three inputs of every sigma formula, refused naming the field unless finite and in range."""
    sensitivity = check_sensitivity(sensitivity, owner)
    if sensitivity > MAX_SCALE:
        raise fail("sensitivity", owner, f"a float in (0, {MAX_SCALE:g}]", sensitivity)
    return sensitivity, check_epsilon(epsilon, owner), check_delta(delta, owner)


def classic_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """``Delta_2 sqrt(2 ln(1.25 / delta)) / epsilon`` (requires epsilon < 1)."""
    sensitivity, epsilon, delta = _calibration_inputs(sensitivity, epsilon, delta, "classic_sigma")
    if not epsilon < 1.0:
        raise fail("epsilon", "gaussian mechanism (classic calibration)", "a float in (0, 1)", epsilon)
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def pdp_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Liu's Lemma 10 / Eq. (18) for (epsilon, delta)-pDP."""
    sensitivity, epsilon, delta = _calibration_inputs(sensitivity, epsilon, delta, "pdp_sigma")
    z = special.ndtri(delta / 2.0)
    return sensitivity * (math.sqrt(z * z + 2.0 * epsilon) - z) / (2.0 * epsilon)


def analytic_delta(sigma: Any, sensitivity: float, epsilon: float) -> np.ndarray:
    """The exact delta of the Gaussian mechanism with ``sigma`` at ``epsilon`` (Balle-Wang Thm 8):
    ``Phi(a) - e^epsilon Phi(b)`` with ``a = Delta / (2 sigma) - epsilon sigma / Delta`` and
    ``b = a - c``, ``c = Delta / sigma``.

    Where a > 0, delta is not small against its terms, and ``e^epsilon Phi(b)`` is evaluated
    as ``exp(epsilon + log Phi(b))`` so that it neither overflows nor cancels for large
    epsilon. Where a <= 0 (the small-delta tail) the two terms agree in their leading digits:
    at epsilon = 0.01, delta = 1e-12 they are ~3.5e-9, and each carries the rounding of a and
    b amplified by Phi's condition number (~a^2), so their difference was 4e-11 (relative)
    off, too noisy for :func:`analytic_sigma` to round up through. There, since
    ``e^epsilon phi(b) = phi(a)`` exactly, ``delta = phi(a) (M(-a) - M(-b))`` with Mills'
    ratio ``M(t) = Phi(-t) / phi(t)``, and the difference is the integral of
    ``-M'(t) = 1 - t M(t)`` over ``[-a, -b]`` (:func:`_mills_drop`), which nothing cancels in.
    Measured against 50-digit arithmetic (mpmath, by hand) over 8,000 random tail points:
    within 4e-13 (relative; a difference of two erfcx values was up to 2.6e-10 off where
    ``c`` is small); the tests hold it within 1e-12 of adaptive quadrature of the
    privacy-loss integral (``tests/mechanisms/test_gaussian.py``).
    """
    s = check_array(sigma, "sigma", "analytic_delta", low=0.0, max_abs=MAX_SCALE)
    if np.any(s == 0):
        raise fail("sigma", "analytic_delta", "positive noise scales", sigma)
    return _analytic_delta(s, check_sensitivity(sensitivity, "analytic_delta"), check_real(epsilon, "epsilon", "analytic_delta", low=0.0))


def _analytic_delta(s: Any, sensitivity: float, epsilon: float) -> np.ndarray:
    """:func:`analytic_delta` on inputs already checked (the root finding of :func:`analytic_sigma` calls it ~100 times)."""
    u = sensitivity / (2.0 * s)
    w = epsilon * s / sensitivity
    a, b = u - w, -u - w
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # each branch is kept only where it holds
        direct = special.ndtr(a) - np.exp(epsilon + special.log_ndtr(b))
        tail = np.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi) * _mills_drop(-a, 2.0 * u)
    return np.where(a <= 0, tail, direct)


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(16)


def _mills(t: np.ndarray) -> np.ndarray:
    """Mills' ratio ``Phi(-t) / phi(t) = sqrt(pi / 2) erfcx(t / sqrt 2)``."""
    return math.sqrt(math.pi / 2.0) * special.erfcx(t / math.sqrt(2.0))


def _mills_drop(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``M(x) - M(x + c)`` for x >= 0, c > 0, without cancellation.

    For c <= 1: the integral of ``1 - t M(t)`` over [x, x + c] by 16-point Gauss-Legendre (the
    integrand is smooth and positive, and ``t M(t)`` is below 1, so forming it loses only
    ``~t^2`` ulps); for larger c the difference itself, where it no longer cancels much.
    """
    x, c = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(c, dtype=float))
    t = x[..., None] + c[..., None] * (_NODES + 1.0) / 2.0
    integral = c / 2.0 * ((1.0 - t * _mills(t)) @ _WEIGHTS)
    return np.where(c <= 1.0, integral, _mills(x) - _mills(x + c))


def analytic_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest sigma meeting (epsilon, delta)-DP exactly (Balle & Wang 2018, Algorithm 1 by root finding)."""
    sensitivity, epsilon, delta = _calibration_inputs(sensitivity, epsilon, delta, "analytic_sigma")

    def gap(log_sigma: float) -> float:
        return float(_analytic_delta(math.exp(log_sigma), sensitivity, epsilon)) - delta

    low = math.log(sensitivity) - 1.0
    while gap(low) < 0:
        low -= 2.0
    high = math.log(sensitivity) + 1.0
    while gap(high) > 0:
        high += 2.0
    root = math.exp(optimize.brentq(gap, low, high, xtol=1e-15, rtol=1e-15, maxiter=200))
    # the root is within solver tolerance of delta on either side: round up until delta is met
    return round_scale_up(root, lambda sigma: float(_analytic_delta(sigma, sensitivity, epsilon)) <= delta)


def lemma11_threshold(epsilon: float | None = None) -> float:
    """Largest delta for which the pDP Gaussian (Eq. 18) has larger variance than Laplace.

    Without epsilon: the bound valid for every epsilon, ``2 Phi(-sqrt 2)``. With
    epsilon: solving ``(sqrt(z^2 + 2 eps) + z)^2 / 8 = 1`` for ``z = -Phi^-1(delta/2)``
    gives ``z = (4 - eps) / sqrt 8``, i.e. ``delta = 2 Phi(-(4 - eps) / sqrt 8)``.
    """
    if epsilon is None:
        return float(2.0 * special.ndtr(-math.sqrt(2.0)))
    epsilon = check_epsilon(epsilon, "lemma11_threshold")
    return float(2.0 * special.ndtr(-(4.0 - epsilon) / math.sqrt(8.0)))


_SIGMA = {"classic": classic_sigma, "pdp": pdp_sigma, "analytic": analytic_sigma}


@dataclass(frozen=True, kw_only=True)
class GaussianMechanism(AdditiveNoise):
    """``x + N(0, sigma^2)`` for a query of l2 sensitivity Delta_2.

    Parameters
    ----------
    sensitivity : float
        l2 global sensitivity.
    epsilon : float
        Budget (< 1 for the classic calibration).
    delta : float
        In (0, 1).
    calibration : {"analytic", "classic", "pdp"}
    """

    sensitivity: float
    epsilon: float
    delta: float
    calibration: str = "analytic"
    sigma: float = field(init=False)
    owner = "gaussian mechanism"

    def __post_init__(self) -> None:
        delta_s = check_sensitivity(self.sensitivity, self.owner)
        eps = check_epsilon(self.epsilon, self.owner)
        dlt = check_delta(self.delta, self.owner)
        check_choice(self.calibration, "calibration", self.owner, CALIBRATIONS)
        object.__setattr__(self, "sensitivity", delta_s)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", dlt)
        object.__setattr__(self, "sigma", float(_SIGMA[self.calibration](delta_s, eps, dlt)))

    @property
    def scale(self) -> float:
        return self.sigma

    def pdf(self, x: Any) -> np.ndarray:
        v = np.asarray(x, dtype=float) / self.sigma
        return np.exp(-0.5 * v * v) / (self.sigma * math.sqrt(2.0 * math.pi))

    def cdf(self, x: Any) -> np.ndarray:
        return special.ndtr(np.asarray(x, dtype=float) / self.sigma)

    def ppf(self, u: Any) -> np.ndarray:
        return self.sigma * special.ndtri(np.asarray(u, dtype=float))

    def expected_absolute_error(self) -> float:
        return self.sigma * math.sqrt(2.0 / math.pi)

    def variance(self) -> float:
        return self.sigma**2

    def characteristic_modulus(self, t: Any) -> np.ndarray:
        """``exp(-sigma^2 t^2 / 2)`` (Liu-Wu-Zhou Corollary 2)."""
        return np.exp(-0.5 * (self.sigma * np.asarray(t, dtype=float)) ** 2)

    def differential_entropy(self) -> float:
        """``log2(2 pi e sigma^2) / 2`` bits (Liu-Wu-Zhou Theorem 7)."""
        return float(0.5 * np.log2(2.0 * np.pi * np.e * self.sigma**2))

    def achieved_delta(self) -> float:
        """The exact delta this sigma gives at epsilon (Balle-Wang); <= delta for every calibration."""
        return float(analytic_delta(self.sigma, self.sensitivity, self.epsilon))

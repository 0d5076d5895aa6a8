"""Additive noise mechanisms on the real line: one interface for every closed form.

A mechanism releases ``true_value + Z`` with Z drawn from a fixed, symmetric noise
law calibrated to the query's sensitivity and the privacy budget. Every family in
:mod:`dpopt.mechanisms` (Laplace, staircase, Gaussian, generalized Gaussian)
implements :class:`AdditiveNoise`: ``pdf``, ``cdf`` and ``ppf`` of Z, and draws by
inverse CDF from uniforms, so the same sampler runs on a seeded
:class:`numpy.random.Generator` or on the operating system's secure source.
"""

from __future__ import annotations

import math

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from scipy import integrate

from dpopt.sampling import check_count, open_uniforms, require_simulation, resolve_rng
from dpopt.validation import check_real

__all__ = ["AdditiveNoise", "check_epsilon", "check_delta", "check_sensitivity", "round_scale_up"]


def check_epsilon(value: Any, owner: str) -> float:
    """Privacy budget epsilon > 0."""
    return check_real(value, "epsilon", owner, low=0.0, low_open=True)


def check_delta(value: Any, owner: str) -> float:
    """Failure probability delta in (0, 1)."""
    return check_real(value, "delta", owner, low=0.0, high=1.0, low_open=True, high_open=True)


def check_sensitivity(value: Any, owner: str, parameter: str = "sensitivity") -> float:
    """Global sensitivity > 0."""
    return check_real(value, parameter, owner, low=0.0, low_open=True)


class AdditiveNoise(ABC):
    """A symmetric noise law Z and the mechanism ``x -> x + Z``.

    Subclasses set :attr:`owner` (used in error messages), provide ``scale`` (the
    calibrated b, or sigma for Gaussians; a field or a property) and implement
    ``pdf``, ``cdf`` and ``ppf``; closed-form moments override the numerical ones.
    """

    owner: ClassVar[str] = "noise mechanism"

    @abstractmethod
    def pdf(self, x: Any) -> np.ndarray:
        """Density of the noise Z at ``x``."""

    @abstractmethod
    def cdf(self, x: Any) -> np.ndarray:
        """``Pr[Z <= x]``."""

    @abstractmethod
    def ppf(self, u: Any) -> np.ndarray:
        """Inverse of :meth:`cdf` on (0, 1)."""

    def sample(self, true_value: float = 0.0, count: int = 1, *, rng: Any = None, secure: bool = False,
               exact: bool = True) -> np.ndarray:
        """Draw ``true_value + Z`` ``count`` times by floating point: simulation only (``exact=False``).

        Parameters
        ----------
        true_value : float
            The query's true answer.
        count : int
            Number of independent releases.
        rng : numpy.random.Generator or int, optional
            Seeded source; ``None`` draws from the OS secure source (never a global RNG).
        secure : bool
            Draw the uniforms from :mod:`secrets` instead.
        exact : bool
            Must be False: these draws are not a safe release (:func:`dpopt.sampling.require_simulation`).
        """
        require_simulation(exact, self.owner)
        value = check_real(true_value, "true_value", self.owner)
        count = check_count(count, self.owner)
        source = resolve_rng(rng, secure=secure)
        return value + self.ppf(open_uniforms(source, count))

    def expected_absolute_error(self) -> float:
        """``E|Z|`` (Liu-Wu-Zhou Eq. 1 for one query), by quadrature unless overridden."""
        value, _ = integrate.quad(lambda x: 2.0 * x * float(self.pdf(x)), 0.0, np.inf, limit=200)
        return float(value)

    def variance(self) -> float:
        """``E Z^2``, by quadrature unless overridden."""
        value, _ = integrate.quad(lambda x: 2.0 * x * x * float(self.pdf(x)), 0.0, np.inf, limit=200)
        return float(value)

    def characteristic_modulus(self, t: Any) -> np.ndarray:
        """``|phi(t)| = |E exp(i t Z)|``; Z is symmetric, so ``phi`` is real."""
        ts = np.atleast_1d(np.asarray(t, dtype=float))
        values = [
            integrate.quad(lambda x, s=s: 2.0 * np.cos(s * x) * float(self.pdf(x)), 0.0, np.inf, limit=400)[0]
            for s in ts
        ]
        return np.abs(np.array(values)).reshape(np.shape(t))

    def differential_entropy(self) -> float:
        """Differential entropy of Z in bits (Liu-Wu-Zhou Theorems 6-7 use log base 2)."""

        def integrand(x: float) -> float:
            f = float(self.pdf(x))
            return -2.0 * f * np.log2(f) if f > 0 else 0.0

        value, _ = integrate.quad(integrand, 0.0, np.inf, limit=200)
        return float(value)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


def round_scale_up(scale: float, meets_target: Any, *, max_steps: int = 200) -> float:
    """The smallest float ``>= scale`` (stepping up by ulps, then by 1e-15 relative) that meets the target.

    Calibration formulas are evaluated in floating point and can miss their target by a
    rounding error (Laplace: ``Delta / (Delta / epsilon)`` may exceed epsilon by one ulp;
    the analytic Gaussian's root sits within solver tolerance of delta, on either side).
    A larger scale only adds noise, so rounding up is always safe.
    """
    value = float(scale)
    for step in range(max_steps):
        if meets_target(value):
            return value
        value = math.nextafter(value, math.inf) if step < 8 else value * (1.0 + 1e-15)
    raise AssertionError(f"no scale near {scale!r} meets the target")  # pragma: no cover - not seen

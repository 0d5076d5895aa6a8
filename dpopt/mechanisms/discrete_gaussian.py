"""The discrete Laplace and discrete Gaussian on the integers, sampled exactly (Canonne, Kamath & Steinke 2020).

No floating-point number is on the privacy path: parameters are rationals
(:class:`fractions.Fraction`; a float is taken as the exact dyadic rational it is), every
coin is a uniform integer below an integer bound (unbiased by rejection), and
``Bernoulli(exp(-gamma))`` for rational gamma is CKS Algorithm 1 (``gamma <= 1``: the
parity of the first K with ``Bernoulli(gamma / K) = 0``; larger gamma: ``floor(gamma)``
factors ``exp(-1)`` and one ``exp(-(gamma - floor gamma))``). The discrete Laplace with
rational scale ``t = s / r`` is CKS Algorithm 2, the discrete Gaussian with rational
``sigma^2`` is CKS Algorithm 3 (discrete Laplace proposals with integer scale
``floor(sigma) + 1``, accepted with probability ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``).

Everything is vectorised over the draws still running: each round draws one uniform
integer per running draw. Bounds are kept below 2**62 so they fit numpy's int64; a
parameter whose integers would not is refused before work.

Pmfs (for tests and certificates): discrete Laplace ``P(x) ∝ exp(-|x| / t)``, discrete
Gaussian ``P(x) ∝ exp(-x^2 / (2 sigma^2))``. The discrete Gaussian with ``sigma^2`` is
``(Delta^2 / (2 sigma^2))``-zCDP for sensitivity Delta (CKS Theorem 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.exact_sampling import uniform_below
from dpopt.sampling import check_count, resolve_rng
from dpopt.validation import fail

__all__ = ["DiscreteLaplace", "DiscreteGaussian", "uniform_below", "bernoulli_exp", "MAX_BOUND", "MAX_RATIONAL"]

OWNER = "discrete gaussian"
#: Largest integer bound a vectorised coin takes (numpy int64 headroom).
MAX_BOUND = 2**62
#: Largest scale (discrete Laplace) or variance (discrete Gaussian) the exact samplers take.
MAX_RATIONAL = 2**40


def _rational(value: Any, field: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, str)):
        raise fail(field, OWNER, "a positive rational (int, float, Fraction or 'p/q')", value)
    try:
        q = Fraction(value)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise fail(field, OWNER, "a positive rational (int, float, Fraction or 'p/q')", value) from None
    if q <= 0 or q.denominator > 2**60 or q > MAX_RATIONAL:
        raise fail(field, OWNER, "a rational in (0, 2**40] with denominator <= 2**60 (a float is its exact dyadic value; "
                   "pass e.g. '7/10' for a short fraction)", value)
    return q


def _bernoulli_ratio(numerator: np.ndarray, denominator: np.ndarray, source: Any) -> np.ndarray:
    """Bernoulli(n / d) per draw, 0 <= n <= d: a uniform integer below d compared with n."""
    return uniform_below(denominator, source) < numerator


def bernoulli_exp(numerator: np.ndarray, denominator: np.ndarray, source: Any) -> np.ndarray:
    """Bernoulli(exp(-n/d)) per draw for non-negative rationals n/d (CKS Algorithm 1), exactly."""
    n = np.asarray(numerator, dtype=np.int64)
    d = np.asarray(denominator, dtype=np.int64)
    whole = n // d
    out = np.ones(n.size, dtype=bool)
    # floor(gamma) factors exp(-1): all must succeed (exp(-1) = exp(-gamma) at gamma = 1)
    pending = np.flatnonzero(whole > 0)
    remaining = whole.copy()
    while pending.size:
        ok = _bernoulli_exp_below_one(np.ones(pending.size, dtype=np.int64), np.ones(pending.size, dtype=np.int64), source)
        out[pending[~ok]] = False
        remaining[pending] -= 1
        pending = pending[ok & (remaining[pending] > 0)]
    live = np.flatnonzero(out)
    out[live] = _bernoulli_exp_below_one(n[live] - whole[live] * d[live], d[live], source)
    return out


def _bernoulli_exp_below_one(n: np.ndarray, d: np.ndarray, source: Any) -> np.ndarray:
    """Bernoulli(exp(-n/d)) for 0 <= n/d <= 1: K = 1, 2, ... until Bernoulli(n / (d K)) fails; K odd."""
    k = np.ones(n.size, dtype=np.int64)
    running = np.arange(n.size)
    while running.size:
        if np.any(d[running] * k[running] >= MAX_BOUND):
            raise fail("parameter", OWNER, "small enough that every coin's bound stays below 2**62", int(d[running].max()))
        heads = _bernoulli_ratio(n[running], d[running] * k[running], source)
        k[running[heads]] += 1
        running = running[heads]
    return k % 2 == 1


def _geometric_exp(n: int, d: int, size: int, source: Any) -> np.ndarray:
    """V >= 0 with ``P(V = v) ∝ exp(-v n / d)``: successes of Bernoulli(exp(-n/d)) before the first failure."""
    v = np.zeros(size, dtype=np.int64)
    running = np.arange(size)
    while running.size:
        ok = bernoulli_exp(np.full(running.size, n), np.full(running.size, d), source)
        v[running[ok]] += 1
        running = running[ok]
    return v


@dataclass(frozen=True)
class DiscreteLaplace:
    """``P(x) ∝ exp(-|x| / t)`` on the integers, t = ``scale`` rational (CKS Algorithm 2), exact draws."""

    scale: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _rational(self.scale, "scale"))

    def pmf(self, x: Any) -> np.ndarray:
        """Float evaluation (for tests and plots): ``tanh(1/(2t)) exp(-|x|/t)``."""
        t = float(self.scale)
        return np.tanh(1 / (2 * t)) * np.exp(-np.abs(np.asarray(x, dtype=float)) / t)

    def sample(self, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        count = check_count(count, "discrete laplace")
        return self._draw(count, resolve_rng(rng, secure=secure))

    def _draw(self, count: int, source: Any) -> np.ndarray:
        # CKS Algorithm 2 for scale a / b: U uniform below a kept with prob exp(-U / a), V geometric
        # with ratio exp(-1), X = U + a V is then geometric with ratio exp(-1/a), and floor(X / b)
        # geometric with ratio exp(-b / a); a fair sign, rejecting "-0", makes it two-sided.
        a, b = self.scale.numerator, self.scale.denominator
        if a >= MAX_BOUND // 4:
            raise fail("scale", "discrete laplace", "a rational with numerator below 2**60", str(self.scale))
        out = np.empty(count, dtype=np.int64)
        todo = np.arange(count)
        while todo.size:
            u = uniform_below(np.full(todo.size, a), source)
            keep = bernoulli_exp(u, np.full(todo.size, a), source)
            u, idx = u[keep], todo[keep]
            v = _geometric_exp(1, 1, idx.size, source)
            y = (u + a * v) // b
            negative = uniform_below(np.full(idx.size, 2), source) == 1
            ok = ~(negative & (y == 0))
            out[idx[ok]] = np.where(negative[ok], -y[ok], y[ok])
            todo = np.setdiff1d(todo, idx[ok], assume_unique=True)
        return out


@dataclass(frozen=True)
class DiscreteGaussian:
    """``P(x) ∝ exp(-x^2 / (2 sigma^2))`` on the integers, ``sigma2`` rational (CKS Algorithm 3), exact draws."""

    sigma2: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", _rational(self.sigma2, "sigma2"))

    def pmf(self, x: Any, *, terms: int | None = None) -> np.ndarray:
        """Float evaluation, normalised over ``|x| <= terms`` (default ~ 40 sigma + 10)."""
        s2 = float(self.sigma2)
        width = terms if terms is not None else int(40 * math.sqrt(s2)) + 10
        z = np.arange(-width, width + 1)
        norm = np.exp(-(z**2) / (2 * s2)).sum()
        return np.exp(-np.asarray(x, dtype=float) ** 2 / (2 * s2)) / norm

    def sample(self, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        count = check_count(count, OWNER)
        source = resolve_rng(rng, secure=secure)
        s2 = self.sigma2
        t = math.isqrt(s2.numerator // s2.denominator) + 1  # floor(sigma) + 1, in integers
        proposal = DiscreteLaplace(t)
        p, q = s2.numerator, s2.denominator
        out = np.empty(count, dtype=np.int64)
        todo = np.arange(count)
        while todo.size:
            y = proposal._draw(todo.size, source)
            # gamma = (|y| - sigma^2 / t)^2 / (2 sigma^2) = (q t |y| - p)^2 / (2 p q t^2)
            top = np.abs(q * t * np.abs(y) - p)
            denominator = 2 * p * q * t * t
            if np.any(top >= 2**31) or denominator >= MAX_BOUND:
                raise fail("sigma2", OWNER, "small enough for exact 64-bit coins (numerator and denominator below 2**20)", str(s2))
            accept = bernoulli_exp(top * top, np.full(todo.size, denominator), source)
            out[todo[accept]] = y[accept]
            todo = todo[~accept]
        return out

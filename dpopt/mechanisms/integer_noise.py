"""Integer-valued additive noise with periodic geometric tails.

Every optimal or classical noise for an integer query of integer sensitivity Delta
under epsilon-DP has the same tail shape: outside some window ``[-M, M]`` the mass
repeats the window's last Delta values, shrinking by ``b = exp(-epsilon)`` every
Delta steps (Geng & Viswanath's discrete staircase; the geometric mechanism is the
case Delta = 1; rounded Laplace noise has it too). :class:`PeriodicNoise` stores the
window (``2M + 1`` numbers) and evaluates everything exactly from it: pmf, cdf, the
first two absolute moments, draws, the privacy loss, and the range-restricted
mechanism matrix of a count query.

Tail convention (used by the noise-adding LP too)::

    p(z) = b * p(z - Delta)   for z > M,        p(z) = b * p(z + Delta)   for z < -M.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.certificates import log_ratios
from dpopt.exact_sampling import exact_choice, exact_geometric, offset_exactly
from dpopt.sampling import check_count, resolve_rng
from dpopt.validation import check_int, check_real, fail

__all__ = ["PeriodicNoise", "tail_sums"]

OWNER = "periodic noise"


def tail_sums(b: float) -> tuple[float, float, float]:
    """``(sum_k b^k, sum_k k b^k, sum_k k^2 b^k)`` over k >= 1."""
    return b / (1 - b), b / (1 - b) ** 2, b * (1 + b) / (1 - b) ** 3


def forward_window_losses(p: np.ndarray, reach: int) -> np.ndarray:
    """``max_{1 <= s <= reach, i + s < n} |ln p[i] - ln p[i + s]|`` for every i (0/0 -> 0, a zero
    beside a non-zero -> inf), measured by :func:`~dpopt.certificates.log_ratios`.

    One sliding maximum and minimum of ``p`` over the next ``reach`` entries, O(n), instead
    of one pass per shift, O(n reach): geometric noise with sensitivity 1e5 took 160 s. The
    loss is monotone in each ratio, so the worst pair of i is i against the largest or the
    smallest entry ahead, and each value is one of the per-pair losses exactly. (Until
    2026-11-28 this slid over ``ln p`` and subtracted: an ulp of ``|ln p|`` is 0.3% of
    epsilon = 1e-12.)
    """
    from scipy import ndimage  # imported here: most users of this module never measure

    p = np.asarray(p, dtype=float)
    n = p.size
    if n < 2:
        return np.zeros(n)
    ahead = np.zeros(n)
    # the window [i + 1, i + reach] of p, clipped at the end by sentinels that never win
    padded_hi = np.concatenate([p[1:], np.full(reach, -np.inf)])
    padded_lo = np.concatenate([p[1:], np.full(reach, np.inf)])
    size = min(reach, n - 1)
    hi = ndimage.maximum_filter1d(padded_hi, size, mode="nearest", origin=-(size // 2))[: n - 1]
    lo = ndimage.minimum_filter1d(padded_lo, size, mode="nearest", origin=-(size // 2))[: n - 1]
    here = p[:-1]
    ahead[:-1] = np.maximum(log_ratios(here, hi), log_ratios(here, lo))
    return ahead


def _total_mass(window: np.ndarray, period: int, decay: float) -> float:
    """A window's mass with its periodic tails: its sum plus ``sum_k decay^k`` times its end periods."""
    s1, _, _ = tail_sums(decay)
    return float(window.sum() + s1 * (window[:period].sum() + window[-period:].sum()))


@dataclass(frozen=True, eq=False)
class PeriodicNoise:
    """Noise on the integers given by its window and periodic geometric tails.

    Parameters
    ----------
    window : array of shape (2M + 1,)
        ``p(-M), ..., p(M)``; non-negative. With the tails it must sum to 1.
    period : int
        Delta >= 1; requires ``M >= period``.
    decay : float
        b in (0, 1): ``p(z + Delta) = b p(z)`` beyond the window.
    """

    window: np.ndarray
    period: int
    decay: float
    half_width: int = field(init=False)

    def __post_init__(self) -> None:
        w = np.asarray(self.window, dtype=float)
        if w.ndim != 1 or w.size % 2 == 0:
            raise fail("window", OWNER, "a 1-D array of odd length 2M + 1", w)
        period = check_int(self.period, "period", OWNER, low=1)
        if w.size // 2 < period:
            raise fail("window", OWNER, f"of half-width M >= period = {period}", w.size // 2)
        if not np.all(np.isfinite(w)) or w.min() < 0:
            raise fail("window", OWNER, "finite and non-negative", w)
        b = check_real(self.decay, "decay", OWNER, low=0.0, high=1.0, low_open=True, high_open=True)
        object.__setattr__(self, "window", w)
        object.__setattr__(self, "period", period)
        object.__setattr__(self, "decay", b)
        object.__setattr__(self, "half_width", w.size // 2)
        if abs(self.total_mass() - 1.0) > 1e-9:
            raise fail("window", OWNER, "a window whose total mass with the tails is 1", self.total_mass())

    @classmethod
    def normalised(cls, window: np.ndarray, period: int, decay: float) -> "PeriodicNoise":
        """The noise whose window is ``window`` scaled so that, with its tails, it sums to 1.

        For windows from a closed form whose own normalisation used e^-epsilon computed
        otherwise than ``decay`` (``math.exp`` and ``np.exp`` differ by an ulp; a Laplace
        mass through ``expm1``): the tails' mass ``decay / (1 - decay)`` has condition
        1 / (1 - decay), so an ulp of ``decay`` moves it by 1e-9 at epsilon = 1e-7 (the
        discrete staircase re-expressed on a wider window was refused for it). Scaling keeps
        every ratio, so privacy is unchanged.
        """
        w = np.asarray(window, dtype=float)
        total = _total_mass(w, period, decay) if w.size // 2 >= period >= 1 else 1.0  # else refused by cls
        return cls(w / total, period, decay)

    @classmethod
    def geometric(cls, period: int, decay: float, half_width: int | None = None) -> "PeriodicNoise":
        """Two-sided geometric noise ``p(z) ~ decay^(|z| / period)`` on a window (default M = period).

        For period 1 this is Gupte & Sundararajan's Definition 1 with alpha = decay.
        """
        m = period if half_width is None else half_width
        # c = decay^(1 / period) is within 1e-8 of 1 for epsilon = 1e-3 and period 1e5; 1 - c
        # as a difference then kept 8 digits, and the window's mass missed 1 by 1.1e-9
        log_c = np.log(decay) / period
        c = np.exp(log_c)
        window = np.exp(log_c * np.abs(np.arange(-m, m + 1))) * (-np.expm1(log_c) / (1 + c))
        return cls(window, period, decay)

    # -- the window's last periods, which the tails repeat ---------------------------
    @property
    def _left_period(self) -> np.ndarray:
        return self.window[: self.period]  # p(-M), ..., p(-M + Delta - 1)

    @property
    def _right_period(self) -> np.ndarray:
        return self.window[-self.period :]  # p(M - Delta + 1), ..., p(M)

    def total_mass(self) -> float:
        return _total_mass(self.window, self.period, self.decay)

    def pmf(self, z: Any) -> np.ndarray:
        """``Pr[Z = z]`` for integer z (any magnitude)."""
        v = np.asarray(z, dtype=np.int64)
        m, d, b = self.half_width, self.period, self.decay
        k = np.where(v > m, -((m - v) // d), np.where(v < -m, -((v + m) // d), 0))  # ceil((|v| - M) / Delta)
        base = np.where(v > m, v - k * d, np.where(v < -m, v + k * d, v))
        return self.window[base + m] * b ** k.astype(float)

    def cdf(self, z: Any) -> np.ndarray:
        """``Pr[Z <= z]`` for integer z."""
        v = np.atleast_1d(np.asarray(z, dtype=np.int64))
        m = self.half_width
        s1, _, _ = tail_sums(self.decay)
        left_mass = s1 * self._left_period.sum()
        inner = left_mass + np.concatenate([[0.0], np.cumsum(self.window)])
        out = np.empty(v.shape, dtype=float)
        mid = (v >= -m - 1) & (v <= m)
        out[mid] = inner[v[mid] + m + 1]
        low = v < -m - 1
        out[low] = self._lower_tail(v[low])
        high = v > m
        out[high] = 1.0 - self._upper_tail(v[high] + 1)
        return out.reshape(np.shape(z))

    def _lower_tail(self, z: np.ndarray) -> np.ndarray:
        """``Pr[Z <= z]`` for z < -M: z = -M + j - k Delta with k >= 1, 0 <= j < Delta."""
        m, d, b = self.half_width, self.period, self.decay
        k = -((z + m) // d)
        j = z + m + k * d
        c = np.cumsum(self._left_period)[j]
        total = self._left_period.sum()
        return (b**k * c + b ** (k + 1) * (total - c)) / (1 - b)

    def _upper_tail(self, z: np.ndarray) -> np.ndarray:
        """``Pr[Z >= z]`` for z > M: z = M - Delta + 1 + j + k Delta with k >= 1."""
        m, d, b = self.half_width, self.period, self.decay
        offset = z - (m - d + 1)
        k, j = offset // d, offset % d
        tail_from = np.cumsum(self._right_period[::-1])[::-1]  # sum over j' >= j
        dj = tail_from[j]
        total = self._right_period.sum()
        return (b**k * dj + b ** (k + 1) * (total - dj)) / (1 - b)

    def moment(self, power: int) -> float:
        """``E|Z|^power`` for power 1 or 2, exactly (window plus closed-form tail sums)."""
        if power not in (1, 2):
            raise fail("power", OWNER, "1 or 2", power)
        m, d = self.half_width, self.period
        z = np.arange(-m, m + 1)
        value = float(np.abs(z) ** power @ self.window)
        s1, sk, sk2 = tail_sums(self.decay)
        base = np.arange(m - d + 1, m + 1).astype(float)  # |z| of the repeated positions, both sides
        for mass in (self._right_period, self._left_period[::-1]):
            if power == 1:
                value += float(mass @ (base * s1 + d * sk))
            else:
                value += float(mass @ (base**2 * s1 + 2 * base * d * sk + d * d * sk2))
        return value

    def privacy_loss(self) -> float:
        """Largest ``|ln p(z) - ln p(z + s)|`` over shifts ``1 <= s <= Delta``."""
        return self.worst_ratio()[0]

    def worst_ratio(self) -> tuple[float, int, int]:
        """``(loss, z, s)``: the largest ``|ln p(z) - ln p(z + s)|`` and where it occurs.

        Pairs beyond the window repeat pairs one period closer (both sides scale by
        b), so the pairs on the window extended by one period each side are all of them.
        """
        m, d = self.half_width, self.period
        z = np.arange(-m - d, m + d + 1)
        ext = self.pmf(z)
        loss = forward_window_losses(ext, d)
        i = int(np.argmax(loss))
        if not loss[i] > 0:
            return 0.0, int(z[0]), 1
        shift = int(np.argmax(log_ratios(ext[i], ext[i + 1:i + d + 1]))) + 1  # the worst pair, as log_ratios measures it
        return float(loss[i]), int(z[i]), shift

    def sample(self, count: int, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        """``count`` exact draws of Z (:mod:`dpopt.exact_sampling`).

        The window value or tail position j is drawn exactly from the float weights
        ``(s1 * left period, window, s1 * right period)`` with ``s1 = b / (1 - b)``, then a tail
        draw's period ``k >= 1`` exactly from ``(1 - b) b^(k-1)`` with b the float decay: the
        sampled pmf is ``p(z) b^k`` up to the one rounding of ``s1 * p(z)`` (relative 1e-16),
        with every tail probability kept, however small.
        """
        count = check_count(count, OWNER)
        source = resolve_rng(rng, secure=secure)
        m, d, b = self.half_width, self.period, self.decay
        s1, _, _ = tail_sums(b)
        left, right = self._left_period, self._right_period
        regions = np.concatenate([s1 * left, self.window, s1 * right])
        pick = exact_choice(regions, count, source)
        in_left, in_right = pick < d, pick >= d + self.window.size
        # the position within the window, or within the tail's first period
        position = np.where(in_left, -m + pick, np.where(in_right, m - d + 1 + (pick - d - self.window.size), pick - d - m))
        # a tail draw: position j chosen above; the period k >= 1 is geometric, Pr[k] = (1 - b) b^(k-1);
        # k Delta leaves int64 at tiny epsilon with a large Delta (k ~ 1 / epsilon)
        k = 1 + exact_geometric(b, count, source)
        periods = np.where(in_left, -k, np.where(in_right, k, 0))
        tails = offset_exactly(0, periods, d)
        return tails + (position.astype(object) if tails.dtype == object else position)

    def count_matrix(self, n: int) -> np.ndarray:
        """The range-restricted mechanism on {0..n}: release ``clip(i + Z, 0, n)``."""
        n = check_int(n, "n", OWNER, low=1)
        i = np.arange(n + 1)[:, None]
        r = np.arange(n + 1)[None, :]
        x = self.pmf(r - i)
        x[:, 0] = self.cdf(-np.arange(n + 1))
        x[:, n] = 1.0 - self.cdf(n - 1 - np.arange(n + 1))
        return x

    def __repr__(self) -> str:
        return f"PeriodicNoise(M={self.half_width}, period={self.period}, decay={self.decay:.6g})"

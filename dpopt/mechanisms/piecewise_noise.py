"""Symmetric piecewise-constant noise densities with a periodic geometric tail.

Every continuous noise of Wu-Xia-He Section 6.2 has this shape: the privacy-first and
compositional densities of Theorems 2 and 3 (constant on each ring ``I_i``), the
staircase (two pieces per period), and the optimum of the grid LP (one piece per cell).
:class:`PiecewiseNoise` holds the density on ``[0, c)`` as pieces and continues it past
``c`` by repeating its last period ``[c - Delta, c)`` scaled by ``decay`` per period:

    p(z) = decay^q p(z - q Delta)   for z in [c + (q - 1) Delta, c + q Delta), q >= 1,

and ``p(-z) = p(z)``. Values are kept as natural logarithms, because a ring sequence
can run to level 1000 (``V = [0, 1] U [1000, 1001]``), where ``e^(-1000 eps)`` is
not a double; moments, cdf and sampling scale by the largest value first.

Everything is exact up to floating point: moments and mass sum the tail in closed form
(:func:`dpopt.mechanisms.integer_noise.tail_sums`); the sampler draws a piece (or a
tail period by inversion of its geometric law, then a piece of the last period) and a
uniform point in it; :meth:`PiecewiseNoise.privacy_loss` measures the essential
supremum of ``ln p(z) / p(z + v)`` over every z and every shift v of a union of
intervals, piece against piece.

Releases (:meth:`PiecewiseNoise.grid_release`) are ``x + Z`` rounded to the nearest
multiple of a declared grid g, drawn exactly: rounding is post-processing, so the
release is as private as the density, and its law is exact for the dyadic numbers the
density is held as: each draw's cell is decided in float64 only where a proven error
margin leaves no doubt, and otherwise in rational arithmetic (so Mironov's attack on
floating-point noise has nothing to read).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpopt.exact_sampling import ExactDiscrete, exact_choice_logits, exact_geometric, random_words, uniform_below
from dpopt.mechanisms.grid_release import grid_points
from dpopt.mechanisms.integer_noise import tail_sums
from dpopt.sampling import RandomSource, inverse_cdf, open_uniforms, require_simulation, resolve_rng, uniforms
from dpopt.validation import check_array, check_real, fail

__all__ = ["GRID_SAMPLER", "PiecewiseNoise", "range_minimum"]

OWNER = "piecewise noise"

#: How :meth:`PiecewiseNoise.grid_release` draws (reported with every release).
GRID_SAMPLER = ("exact: x + Z rounded to the nearest multiple of release_grid; Z's piece drawn "
                "from its weights exp(log value) * length as dyadic rationals M 2**e (each within a few ulps), a tail "
                "period by exact geometric coins on the dyadic decay, the sign by a fair bit, the grid cell within the "
                "piece by its exact overlap (a uniform 64-bit word, decided in float64 with an error margin eight times "
                "the rounding error's bound, or by the rest of the uniform in rational arithmetic)")
#: Most grid cells one piece of the density may span in :meth:`PiecewiseNoise.grid_release`
#: (cells are drawn by an exact uniform integer below 2**62).
MAX_CELLS_PER_PIECE = 2**60


@dataclass(frozen=True, eq=False)
class PiecewiseNoise:
    """A symmetric density, piecewise constant on ``[0, c)`` with a periodic geometric tail.

    Parameters
    ----------
    breaks : array of shape (K + 1,)
        ``0 = b_0 < b_1 < ... < b_K = c``; must contain ``c - period``.
    log_values : array of shape (K,)
        ``ln`` of the (unnormalised) density on ``[b_k, b_k+1)``; ``-inf`` for zero.
    period : float
        Delta, the tail's period (``c >= Delta``).
    decay : float
        The factor per period in the tail, in (0, 1) (``e^-eps``).
    """

    breaks: np.ndarray
    log_values: np.ndarray
    period: float
    decay: float

    def __post_init__(self) -> None:
        b = check_array(self.breaks, "breaks", OWNER, ndim=1, low=0.0)
        v = check_array(self.log_values, "log_values", OWNER, ndim=1, allow_inf=True)
        period = check_real(self.period, "period", OWNER, low=0.0, low_open=True)
        check_real(self.decay, "decay", OWNER, low=0.0, high=1.0, low_open=True, high_open=True)
        if b.size != v.size + 1 or b[0] != 0.0 or np.any(np.diff(b) <= 0):
            raise fail("breaks", OWNER, "increasing from 0, one more than the pieces", b.size)
        if np.any(v == np.inf) or not np.isfinite(v).any():
            raise fail("log_values", OWNER, "finite or -inf (zero density), not all zero", v.max())
        start = b[-1] - period
        if start < 0 or not np.isclose(b, start, rtol=0.0, atol=1e-9 * b[-1]).any():
            raise fail("breaks", OWNER, f"containing c - period = {start:g} (the tail repeats [c - period, c))", b[-1])
        shift = float(v[np.isfinite(v)].max())
        object.__setattr__(self, "breaks", b)
        object.__setattr__(self, "log_values", v - shift)  # the largest value is 1 before normalising
        object.__setattr__(self, "_first_of_period", int(np.argmin(np.abs(b - start))))

    # -- the pieces and their integrals ------------------------------------------------
    @property
    def cutoff(self) -> float:
        """c, where the periodic tail starts."""
        return float(self.breaks[-1])

    def _values(self) -> np.ndarray:
        return np.exp(self.log_values)

    def _integrals(self, power: int) -> np.ndarray:
        """``int_{b_k}^{b_k+1} z^power p(z) dz`` per piece (unnormalised)."""
        b = self.breaks
        return self._values() * (b[1:] ** (power + 1) - b[:-1] ** (power + 1)) / (power + 1)

    def _half_moment(self, power: int) -> float:
        """``int_0^inf z^power p(z) dz`` (unnormalised), the tail in closed form."""
        s1, sk, sk2 = tail_sums(self.decay)
        last = slice(self._first_of_period, None)
        m0, m1, m2 = (self._integrals(j)[last].sum() for j in range(3))
        d = self.period
        tail = {0: s1 * m0, 1: s1 * m1 + d * sk * m0, 2: s1 * m2 + 2 * d * sk * m1 + d * d * sk2 * m0}[power]
        return float(self._integrals(power).sum() + tail)

    @property
    def mass(self) -> float:
        """The unnormalised total mass (both sides)."""
        return 2.0 * self._half_moment(0)

    def moment(self, power: int) -> float:
        """``E|Z|^power`` for power 1 or 2."""
        return 2.0 * self._half_moment(power) / self.mass

    def _periods_before(self, a: np.ndarray) -> np.ndarray:
        """q with ``a - q Delta`` in ``[c - Delta, c)`` for ``a >= c``; 0 below c."""
        return np.where(a >= self.cutoff, np.floor((a - self.cutoff) / self.period) + 1, 0.0)

    def pdf(self, z: Any) -> np.ndarray:
        """The normalised density at z."""
        a = np.abs(np.asarray(z, dtype=float))
        q = self._periods_before(a)
        base = a - q * self.period
        k = np.clip(np.searchsorted(self.breaks, base, side="right") - 1, 0, self.log_values.size - 1)
        return self._values()[k] * self.decay**q / self.mass

    def cdf(self, z: Any) -> np.ndarray:
        """``Pr[Z <= z]``."""
        a = np.abs(np.asarray(z, dtype=float))
        values, b = self._values(), self.breaks
        cumulative = np.concatenate([[0.0], np.cumsum(values * np.diff(b))])
        q = self._periods_before(a)
        first = self._first_of_period
        period_mass = cumulative[-1] - cumulative[first]
        base = np.where(q > 0, a - q * self.period, a)
        k = np.clip(np.searchsorted(b, base, side="right") - 1, 0, values.size - 1)
        within = cumulative[k] + values[k] * (base - b[k])
        # q full tail periods before this one: sum_{j<q} decay^j, then this period scaled
        before_tail = cumulative[-1] + period_mass * self.decay * (1 - self.decay ** (q - 1)) / (1 - self.decay)
        in_tail = before_tail + self.decay**q * (within - cumulative[first])
        half = np.where(q > 0, in_tail, within) / self.mass
        v = np.asarray(z, dtype=float)
        return np.where(v >= 0, 0.5 + half, 0.5 - half)

    # -- sampling -----------------------------------------------------------------------
    def sample(self, count: int, *, rng: Any = None, secure: bool = False, exact: bool = True) -> np.ndarray:
        """``count`` floating-point draws (simulation only, ``exact=False``): a piece (or a tail period, then a
        piece of the last period), a uniform point, a sign."""
        require_simulation(exact, "piecewise noise")
        return self.sample_from(resolve_rng(rng, secure=secure), count)

    def sample_from(self, source: RandomSource, count: int) -> np.ndarray:
        values, b = self._values(), self.breaks
        pieces = values * np.diff(b)
        s1 = tail_sums(self.decay)[0]
        first = self._first_of_period
        weights = np.append(pieces, s1 * pieces[first:].sum())
        choice = inverse_cdf(weights / weights.sum(), uniforms(source, count))
        tail = choice == pieces.size
        # the tail period q >= 1 has probability (1 - decay) decay^(q - 1): invert its cdf
        q = np.zeros(count)
        q[tail] = np.floor(np.log(open_uniforms(source, int(tail.sum()))) / np.log(self.decay)) + 1
        if tail.any():  # never when the tail's mass underflows (V1 at eps = 1: e^-1001 a period)
            local = pieces[first:]
            choice[tail] = first + inverse_cdf(local / local.sum(), uniforms(source, int(tail.sum())))
        position = b[choice] + uniforms(source, count) * (b[choice + 1] - b[choice]) + q * self.period
        sign = np.where(uniforms(source, count) < 0.5, -1.0, 1.0)
        return sign * position

    def cells_per_piece(self, grid: float) -> float:
        """The most grid cells of width ``grid`` one piece spans (what :data:`MAX_CELLS_PER_PIECE` bounds)."""
        return float(np.diff(self.breaks).max()) / grid + 2.0

    def grid_release(self, true_value: float, grid: float, count: int, source: RandomSource) -> np.ndarray:
        """``count`` releases of ``x + Z`` rounded to the nearest multiple of ``grid``, drawn exactly.

        Z's piece is drawn from the pieces' weights ``exp(log value) * length`` and the tail's
        ``decay / (1 - decay)`` times the last period's, each weight held as ``M 2**e``
        (:func:`~dpopt.exact_sampling.exact_choice_logits`: within a few ulps of the density
        the certificate measured, none flushed to zero); a tail draw then takes its period
        ``q >= 1`` with probability ``(1 - decay) decay^(q - 1)`` by exact geometric coins on
        the float decay as a dyadic rational, and its piece from the last period's weights.
        A fair bit gives the sign. Given the piece ``[lo, hi)`` of Z, the release is the grid
        point j g whose cell ``[(j - 1/2) g, (j + 1/2) g)`` holds ``x + U`` for U uniform on
        the piece: j is drawn with probability the cell's overlap with ``x + [lo, hi)`` over
        ``hi - lo``, exactly for x (an int or Fraction as given, a float as the dyadic
        rational it is), g and the breaks as the dyadic rationals they are
        (:meth:`_rounded`: decided by a uniform word in float64 with a proven margin, or
        in rational arithmetic). So the release's law is exactly the rounding of ``x + Z``
        for the density held as dyadic weights.
        """
        x, g = Fraction(true_value), Fraction(float(grid))
        b, v = self.breaks, self.log_values
        lengths = np.diff(b)
        first = self._first_of_period
        head = np.flatnonzero(np.isfinite(v))
        period = head[head >= first]
        logits = v[head] + np.log(lengths[head])
        period_logits = logits[head >= first]
        if period.size:  # the tail's weight: decay / (1 - decay) times the last period's
            logits = np.append(logits, math.log(self.decay / (1.0 - self.decay)) + logsumexp(period_logits))
        choice = exact_choice_logits(logits, count, source)
        tail = choice == head.size
        piece = np.where(tail, 0, head[np.minimum(choice, head.size - 1)])
        periods = np.zeros(count, dtype=np.int64)
        if tail.any():
            periods[tail] = 1 + exact_geometric(self.decay, int(tail.sum()), source)
            piece[tail] = period[exact_choice_logits(period_logits, int(tail.sum()), source)]
        negative = (random_words(source, count) & np.uint64(1)).astype(bool)
        return self._rounded(x, g, piece, periods, negative, source)

    def _rounded(self, x: Fraction, g: Fraction, piece: np.ndarray, periods: np.ndarray, negative: np.ndarray,
                 source: RandomSource) -> np.ndarray:
        """``j g`` (:func:`~dpopt.mechanisms.grid_release.grid_points`) for the grid index j of ``x + U``, U uniform
        on each draw's piece, drawn exactly.

        In grid units the piece is ``[s, e)`` with ``s = (x + lo) / g + 1/2``, and j = floor(s + V (e - s)),
        V uniform on [0, 1). V's first 64 bits are a uniform word W, which places ``s + V (e - s)`` in
        ``[s + W (e - s) 2**-64, s + (W + 1) (e - s) 2**-64)``. Where float arithmetic shows that
        interval inside one cell with room to spare, j is decided; otherwise (about ``2**-40 S`` of the
        draws, S the draw's magnitude in cells) :meth:`_cell` draws the rest of V exactly on that
        interval in rational arithmetic. Either way j has exactly the law of floor(s + V (e - s)).
        """
        b = self.breaks
        offset = periods * float(self.period)
        lo, hi = b[piece] + offset, b[piece + 1] + offset
        lo, hi = np.where(negative, -hi, lo), np.where(negative, -lo, hi)
        words = random_words(source, piece.size)
        cells, decided = _decided_cells(float(x), float(g), lo, hi, words)
        shift = Fraction(float(self.period))
        undecided = np.flatnonzero(~decided)
        if undecided.size:
            cells = cells.astype(object)  # a rational cell may lie beyond int64 (|j| up to 1e15 / g)
        for n in undecided:
            k, q = int(piece[n]), int(periods[n])
            low, high = Fraction(float(b[k])) + q * shift, Fraction(float(b[k + 1])) + q * shift
            if negative[n]:
                low, high = -high, -low
            start, width = (x + low) / g + Fraction(1, 2), (high - low) / g
            word = int(words[n])
            cells[n] = self._cell(start + width * Fraction(word, 2**64), start + width * Fraction(word + 1, 2**64), source)
        return grid_points(cells, float(g))

    @staticmethod
    def _cell(start: Fraction, end: Fraction, source: RandomSource) -> int:
        """The integer j = floor(start + U (end - start)), U uniform on [0, 1), drawn exactly."""
        first, last = math.floor(start), math.ceil(end) - 1
        if first >= last:
            return first
        middle = last - first - 1
        parts = [first + 1 - start, Fraction(middle), end - last]  # overlaps with the first, middle and last cells
        denominator = math.lcm(*(p.denominator for p in parts))
        which = int(ExactDiscrete.from_integers([int(p * denominator) for p in parts]).sample(1, source)[0])
        if which == 1:
            return first + 1 + int(uniform_below(np.array([middle]), source)[0])
        return first if which == 0 else last

    # -- privacy ------------------------------------------------------------------------
    def _line(self, reach: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pieces of the real line on ``[-(c + reach), c + reach)``: starts, ends, log values."""
        periods = int(np.ceil(reach / self.period))
        first = self._first_of_period
        b, v = self.breaks, self.log_values
        starts, ends, logs = [b[:-1]], [b[1:]], [v]
        for q in range(1, periods + 1):
            starts.append(b[first:-1] + q * self.period)
            ends.append(b[first + 1:] + q * self.period)
            logs.append(v[first:] + q * np.log(self.decay))
        s, e, lv = np.concatenate(starts), np.concatenate(ends), np.concatenate(logs)
        return np.concatenate([-e[::-1], s]), np.concatenate([-s[::-1], e]), np.concatenate([lv[::-1], lv])

    def privacy_loss(self, shifts: np.ndarray) -> tuple[float, float, float]:
        """``(loss, z, v)``: the ess. sup of ``ln p(z) / p(z + v)`` over all z and v in the shifts.

        ``shifts`` is a union of closed intervals (rows ``[lo, hi]``; points allowed). A
        piece ``[s, e)`` shifted by ``[lo, hi]`` meets, with positive measure, every piece
        whose interior meets ``(s + lo, e + hi)``; the worst ratio is the piece's value
        over the smallest such value. Pairs with both points at ``|z| > c + Delta`` repeat
        pairs nearer 0 (the tail is periodic), so the line out to ``c + 2 Delta`` is enough
        when every shift is at most Delta in size.
        """
        w = check_array(shifts, "shifts", OWNER, ndim=2)
        if w.shape[1] != 2 or np.any(w[:, 0] > w[:, 1]):
            raise fail("shifts", OWNER, "rows [lo, hi] with lo <= hi", w.shape)
        reach = max(float(np.abs(w).max()), self.period)
        starts, ends, logs = self._line(2 * reach)
        inner = (ends > -(self.cutoff + reach)) & (starts < self.cutoff + reach) & np.isfinite(logs)
        # Breakpoints that are equal in exact arithmetic (a cell's end shifted by a multiple
        # of the cell width) can differ by rounding; overlaps shorter than 64 ulps of the
        # line's extent are such artifacts, not positive-measure meetings, and are ignored.
        slack = 64 * np.spacing(self.cutoff + 3 * reach)
        worst = (-np.inf, 0.0, 0.0)
        for lo, hi in w:
            first = np.searchsorted(ends, starts[inner] + lo + slack, side="right")  # first piece ending after s + lo
            last = np.searchsorted(starts, ends[inner] + hi - slack, side="left") - 1  # last piece starting before e + hi
            low = range_minimum(logs, first, last)
            ratios = logs[inner] - low
            k = int(np.argmax(ratios))
            if ratios[k] > worst[0]:
                worst = (float(ratios[k]), float(starts[inner][k]), float(lo))
        return worst


def range_minimum(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``min(values[first[i] : last[i] + 1])`` for every i (a sparse table built one level at a time).

    Each query of length L is answered at level ``floor(log2 L)`` by two overlapping blocks
    of length ``2^level``; only one level of the table is held at a time.
    """
    first = np.clip(first, 0, values.size - 1)
    last = np.clip(last, first, values.size - 1)
    length = last - first + 1
    level = np.floor(np.log2(length)).astype(int)
    answer = np.empty(first.size)
    table = np.asarray(values, dtype=float)
    for j in range(int(level.max()) + 1):
        if j:
            half = 1 << (j - 1)
            table = np.minimum(table[:-half], table[half:])
        here = level == j
        answer[here] = np.minimum(table[first[here]], table[last[here] - (1 << j) + 1])
    return answer


#: Cells whose index exceeds this are left to exact rational arithmetic in :func:`_decided_cells`
#: (below it, cell indices and the error margin are exact in float64 with room to spare).
FAST_CELLS = 2.0**40


def _decided_cells(x: float, g: float, lo: np.ndarray, hi: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Grid indices decided in float64 by each draw's first word, and which are decided.

    With S = (|x| + max(|lo|, |hi|)) / g, the float values of ``s + W w 2**-64`` and
    ``s + (W + 1) w 2**-64`` (s = (x + lo) / g + 1/2, w = (hi - lo) / g, lo and hi themselves
    computed as ``b + q Delta``) lie within 32 u (S + 1) of the exact ones, u = 2**-53: about
    fourteen roundings, each of at most u times a magnitude below 3 (S + 1). A draw is decided
    when both ends, widened by ``2**-45 (S + 1)`` (eight times that error), have one floor, and
    S + 1 < :data:`FAST_CELLS`, so that the floors are exact integers. An exact true value that
    is not a double (an int beyond 2**53) enters as ``float(x)``, one more rounding of at most
    u S, still far inside the margin.
    """
    scale = (abs(x) + np.maximum(np.abs(lo), np.abs(hi))) / g + 1.0
    start = (x + lo) / g + 0.5
    width = (x + hi) / g + 0.5 - start
    fraction = words.astype(float) * 2.0**-64
    first, last = start + fraction * width, start + (fraction + 2.0**-64) * width
    margin = 2.0**-45 * scale
    below, above = np.floor(first - margin), np.floor(last + margin)
    decided = (below == above) & (scale < FAST_CELLS)
    return np.where(decided, below, 0.0).astype(np.int64), decided

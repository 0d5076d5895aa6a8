"""Exact sampling from finite distributions given by float64 weights.

A certificate measures privacy on the float64 entries of a mechanism; a floating-point
inverse CDF then samples a *different* distribution (cumulative sums rounded to doubles,
compared with a 53-bit uniform), in which an entry far below 2**-53 -- a certified
alpha**600 ~ 1e-27 -- has probability 0 under one input and ~2**-53 under a neighbour:
an infinite privacy loss no certificate sees. Here the distribution sampled is exactly

    P(j) = w_j / sum_k w_k,

with every float64 weight taken as the exact dyadic rational it is. All weights are
scaled to integers on their common power-of-two denominator (Python integers: ~1100
bits at worst), a uniform integer R in [0, 2**B) is drawn (B the bit length of the
total W) and rejected if R >= W (acceptance > 1/2), and the output is the interval of
the exact cumulative sums holding R.

Fast path, still exact: R's top 64 bits decide the output unless a cumulative boundary
shares them (probability about (number of boundaries) / 2**64 per draw); only then are
R's remaining bits drawn and the boundary compared exactly in integer arithmetic. So
tail entries below double precision keep their exact probability, and a draw costs a
64-bit word and a binary search (vectorised).

Random words come from the caller's source: a seeded :class:`numpy.random.Generator`
(reproducible studies) or :class:`dpopt.sampling.SecureRandom` (the OS source, for
releases).
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_right
from typing import Any, Callable

import numpy as np

from dpopt.validation import fail

__all__ = ["BlockedDiscrete", "ExactDiscrete", "random_words", "uniform_below", "exact_bernoulli", "exact_bernoulli_fraction", "exact_geometric", "geometric_of_scale", "MAX_SCALE_STEPS", "exact_choice", "exact_choice_logits", "dyadic_exp", "exact_choice_rows", "offset_exactly", "EXACT_SAMPLER", "FACTORED_SAMPLER", "LOGIT_SAMPLER", "FLOAT_SAMPLER"]

#: How a release from a finite mechanism is drawn (reported with every release).
EXACT_SAMPLER = "exact: float64 entries as dyadic rationals, normalised exactly, integer inverse CDF"

#: How a release from an exponential mechanism's logits is drawn (:func:`exact_choice_logits`).
LOGIT_SAMPLER = ("exact: weights exp(logit) as dyadic rationals M 2**e (each within a few ulps, none flushed to zero), "
                 "integer inverse CDF")

#: How a release from a factored mechanism G T is drawn (:meth:`dpopt.mechanisms.factored.FactoredMechanism.sample`).
FACTORED_SAMPLER = ("exact: G's row (its float64 entries as dyadic rationals while they are normal floats, else the two-sided "
                    "geometric with alpha as a dyadic rational), then T's float64 row as dyadic rationals")

#: How continuous (and other not yet exact) releases are drawn.
FLOAT_SAMPLER = "float64 inverse CDF (simulation grade: not exact; see dpopt.exact_sampling)"

_WORD = 64


def _integers(*values: Any) -> bool:
    """Whether every value is an integer (Python or numpy; not a bool, not a float)."""
    return all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)


def offset_exactly(centre: int, offsets: Any, scale: int = 1) -> np.ndarray:
    """``centre + scale * offsets`` in exact integer arithmetic: int64 where every value fits
    with room to spare, else an object array of Python integers.

    An integer release is its true value plus integer noise. int64 arithmetic wraps
    silently (a true value of -2**63 was released as +9.2e18) and a Python integer beyond
    int64 cannot enter an int64 array at all (an OverflowError where a release was asked for).
    """
    if not _integers(centre, scale):
        raise fail("centre", "exact sampling", "an integer centre and scale (int(1.5) would move the release)", (centre, scale))
    centre, scale = int(centre), int(scale)
    step = np.asarray(offsets)
    widest = int(np.abs(step).max()) if step.size else 0
    if abs(centre) < 2**61 and widest * abs(scale) < 2**61:
        return centre + scale * step.astype(np.int64)
    return np.array([centre + scale * int(o) for o in step.ravel()], dtype=object).reshape(step.shape)


def random_words(source: Any, size: int) -> np.ndarray:
    """``size`` independent uniform 64-bit words from ``source`` (a Generator or SecureRandom)."""
    if isinstance(source, np.random.Generator):
        return source.integers(0, 2**64, size=size, dtype=np.uint64)
    return source.words(size)


def _random_bits(source: Any, bits: int) -> int:
    """A uniform integer in [0, 2**bits), exactly (whole words, the surplus shifted off)."""
    words = -(-bits // _WORD)
    value = 0
    for word in random_words(source, words):
        value = (value << _WORD) | int(word)
    return value >> (words * _WORD - bits)


class ExactDiscrete:
    """The distribution ``w / sum(w)`` over indices 0..K-1, sampled exactly.

    Parameters
    ----------
    weights : array of float
        Finite, >= 0, not all 0 (any scale; a row of a mechanism need not sum to 1 exactly).
    """

    def __init__(self, weights: Any) -> None:
        w = np.asarray(weights, dtype=float).ravel()
        if w.size == 0 or not np.isfinite(w).all() or np.any(w < 0) or not np.any(w > 0):
            raise fail("weights", "exact sampling", "finite, >= 0 and not all zero", w[:5])
        ratios = [float(v).as_integer_ratio() for v in w]
        denominator = max(d for _, d in ratios)  # every denominator is a power of two
        self._set([numerator * (denominator // d) for numerator, d in ratios])

    @classmethod
    def from_integers(cls, weights: list[int]) -> "ExactDiscrete":
        """The distribution ``w / sum(w)`` for non-negative Python integers ``w`` (any size)."""
        if not weights or any(w < 0 for w in weights) or not any(weights):
            raise fail("weights", "exact sampling", "integers >= 0, not all zero", weights[:5])
        out = cls.__new__(cls)
        out._set([int(w) for w in weights])
        return out

    def _set(self, integers: list[int]) -> None:
        cumulative, total = [], 0
        for numerator in integers:
            total += numerator
            cumulative.append(total)
        self.size = len(integers)
        self.cumulative = cumulative  # exact boundaries C_1..C_K (C_K = W)
        self.total = total
        self.bits = total.bit_length()
        self.shift = max(self.bits - _WORD, 0)
        self.high = np.array([c >> self.shift for c in cumulative], dtype=np.uint64)

    def support(self) -> np.ndarray:
        """The indices drawn with positive probability (exactly the positive weights)."""
        steps = np.diff(np.array([0, *self.cumulative], dtype=object))
        return np.flatnonzero(steps > 0)

    def probability(self, index: int) -> tuple[int, int]:
        """``P(index)`` as an exact fraction ``(numerator, denominator)``."""
        low = self.cumulative[index - 1] if index > 0 else 0
        return self.cumulative[index] - low, self.total

    def sample(self, count: int, source: Any) -> np.ndarray:
        """``count`` independent indices."""
        out = np.empty(count, dtype=np.int64)
        filled = 0
        while filled < count:
            need = count - filled
            drawn = self._attempt(need + need // 2 + 8, source)
            take = min(drawn.size, need)
            out[filled:filled + take] = drawn[:take]
            filled += take
        return out

    def _attempt(self, size: int, source: Any) -> np.ndarray:
        """Accepted draws from ``size`` uniform words (about half or more are accepted)."""
        words = random_words(source, size)
        if self.shift == 0:  # every boundary fits in 64 bits: R = the word's top B bits
            r = words >> np.uint64(_WORD - self.bits) if self.bits < _WORD else words
            accepted = r[r < np.uint64(self.total)]
            return np.searchsorted(self.high, accepted, side="right")
        index = np.searchsorted(self.high, words, side="left")  # boundaries whose top bits are below
        exact = index < self.size
        tied = np.zeros(size, dtype=bool)
        tied[exact] = self.high[index[exact]] == words[exact]
        keep = exact & ~tied  # decided by the top 64 bits alone (index = size means R >= W: rejected)
        result = np.full(size, -1, dtype=np.int64)
        result[keep] = index[keep]
        for position in np.flatnonzero(tied):  # a boundary shares R's top bits: compare exactly
            r = (int(words[position]) << self.shift) | _random_bits(source, self.shift)
            if r < self.total:
                result[position] = bisect_right(self.cumulative, r)
        return result[result >= 0]


def uniform_below(bounds: np.ndarray, source: Any) -> np.ndarray:
    """One uniform integer in ``[0, B)`` per bound B (1 <= B <= 2**62), exactly.

    A 64-bit word r is accepted iff ``r >= 2**64 mod B`` (so the accepted words are a whole
    number of copies of ``[0, B)``) and mapped to ``r mod B``; rejected ones are redrawn.
    """
    given = np.asarray(bounds)
    if given.dtype.kind not in "iu" or (given.size and (given.min() < 1 or given.max() > 2**62)):
        raise fail("bounds", "exact sampling", "integers in [1, 2**62]", given.ravel()[:5])
    b = given.astype(np.uint64)
    out = np.empty(b.size, dtype=np.int64)
    todo = np.arange(b.size)
    while todo.size:
        r = random_words(source, todo.size)
        floor = (np.uint64(0) - b[todo]) % b[todo]  # 2**64 mod B, by uint64 wrap-around
        ok = r >= floor
        out[todo[ok]] = (r[ok] % b[todo[ok]]).astype(np.int64)
        todo = todo[~ok]
    return out


def exact_bernoulli(probability: float, size: int, source: Any) -> np.ndarray:
    """``size`` independent Bernoulli(p) draws, p a float in [0, 1] taken as its exact dyadic value
    (:func:`exact_bernoulli_fraction` of ``p = M / 2**E``)."""
    p = float(probability)
    if not 0.0 <= p <= 1.0:
        raise fail("probability", "exact sampling", "a number in [0, 1]", p)
    return exact_bernoulli_fraction(*p.as_integer_ratio(), size, source)


def exact_geometric(ratio: float, size: int, source: Any) -> np.ndarray:
    """``size`` draws of K >= 0 with ``P(K = k) = (1 - b) b^k`` exactly, b = ``ratio`` as a dyadic rational.

    For b <= 1/2, K counts consecutive successes of :func:`exact_bernoulli` (b), vectorised
    over the draws still running (fewer than two rounds on average). Nearer 1 that takes
    about ``1 / (1 - b)`` rounds (noise at epsilon = 1e-9: hours for one release), so K is
    drawn by its binary digits instead, which are independent for a geometric law: digit j
    is 1 with probability ``q_j / (1 + q_j)``, ``q_j = b^(2^j)``, for ``j < B`` (B the first
    digit with ``q_B`` about 1/2), and the multiples of ``2^B`` count consecutive successes
    of a coin of probability ``q_B``. Each coin compares a uniform with its exact probability
    (:func:`_power_coins`), so the law is exactly the geometric one, in O(log(1 / (1 - b)))
    rounds.
    """
    b = float(ratio)
    if not 0.0 <= b < 1.0:
        raise fail("ratio", "exact sampling", "a number in [0, 1)", b)
    if b > 0.5:
        k = np.zeros(size, dtype=np.int64)
        numerator, denominator = b.as_integer_ratio()
        top = max(1, math.ceil(math.log2(math.log(2.0) / -math.log(b))))
        power = (numerator, denominator.bit_length() - 1)
        for digit in range(top):
            k += _power_coins(power, digit, True, size, source).astype(np.int64) << digit
        # multiples of 2**top: consecutive successes of q_top
        return k + (_successes(lambda n: _power_coins(power, top, False, n, source), size) << top)
    return _successes(lambda n: exact_bernoulli(b, n, source), size)


def _successes(coin: Any, size: int) -> np.ndarray:
    """Per draw, the number of successes of ``coin(n)`` (n independent booleans) before its first failure."""
    k = np.zeros(size, dtype=np.int64)
    running = np.arange(size)
    while running.size:
        success = coin(running.size)
        k[running[success]] += 1
        running = running[success]
    return k


def _power_bounds(power: tuple[int, int], digit: int, precision: int) -> tuple[int, int]:
    """``(lo, hi)`` with ``lo <= b^(2^digit) 2^precision <= hi``, ``b = N / 2^shift`` for ``power = (N, shift)``.

    Squaring truncated to ``precision`` bits: the truncations add less than ``2^(digit + 1)``
    units in all (each squaring at most doubles the error and adds one, while
    ``precision >= shift + 2 digit + 2``), so hi = lo + 2^(digit + 1).
    """
    numerator, shift = power
    q = numerator << (precision - shift)
    for _ in range(digit):
        q = (q * q) >> precision
    return q, q + (1 << (digit + 1))


def _power_coins(power: tuple[int, int], digit: int, as_digit: bool, size: int, source: Any) -> np.ndarray:
    """``size`` exact Bernoulli draws of ``p = q / (1 + q)`` (``as_digit``) or ``p = q``, q = b^(2^digit).

    A uniform U is compared with p through bounds at ever higher precision: after t words
    of U (an integer u), U lies in ``[u, u + 1) / 2^(64 t)``, which is below p if
    ``u + 1 <= floor(p_lo 2^(64 t))`` and above if ``u >= ceil(p_hi 2^(64 t))``; otherwise
    (a window of a few values out of 2^64 at the first word) the next word is drawn and the
    bounds sharpened. The first word decides all draws at once.
    """
    def scaled_bounds(words: int) -> tuple[int, int]:
        precision = power[1] + 2 * digit + 2 + 64 * words + 64
        lo, hi = _power_bounds(power, digit, precision)
        if as_digit:  # p = q / (1 + q) is increasing in q
            return (lo << (64 * words)) // ((1 << precision) + lo), -((-hi << (64 * words)) // ((1 << precision) + hi))
        return lo >> (precision - 64 * words), -((-hi) >> (precision - 64 * words))

    lo, hi = scaled_bounds(1)  # lo < 2**64 as p < 1; hi may reach 2**64
    words = random_words(source, size)
    out = words < np.uint64(lo)
    undecided = np.flatnonzero(~out & ((words < np.uint64(min(hi, 2**64 - 1))) | (hi >= 2**64)))
    for position in undecided:
        u, t = int(words[position]), 1
        while True:
            lo_t, hi_t = scaled_bounds(t)
            if u + 1 <= lo_t:
                out[position] = True
                break
            if u >= hi_t:
                out[position] = False
                break
            u, t = (u << 64) | int(random_words(source, 1)[0]), t + 1
    return out


#: Largest scale, in grid steps, :func:`geometric_of_scale` draws for.
MAX_SCALE_STEPS = 2.0**52


def geometric_of_scale(steps: float, size: int, source: Any) -> np.ndarray:
    """``size`` draws of K >= 0 with ``P(K = k) = (1 - r) r^k``, ``r = e^(-1/steps)`` to within an ulp, never 0.

    Where r is a normal double this is :func:`exact_geometric` on it (exactly that law). Below
    (``steps`` < 1/708: r = e^-800 is 0.0 as a double, and a zero here beside a neighbour's
    non-zero would be an infinite loss) r is held as ``M 2**e`` (:func:`dyadic_exp`) and K
    counts consecutive successes of an exact coin on it (almost always none).
    """
    s = float(steps)
    if not 1e-3 <= s <= MAX_SCALE_STEPS:
        raise fail("steps", "exact sampling", "a scale in grid steps in [1e-3, 2**52]", s)
    r = math.exp(-1.0 / s)
    if r >= sys.float_info.min:
        return exact_geometric(r, size, source)
    mantissa, exponent = dyadic_exp([0.0, -1.0 / s])
    numerator, denominator = int(mantissa[1]), 1 << int(52 - exponent[1])  # r = M 2**(e - 52)
    return _successes(lambda n: exact_bernoulli_fraction(numerator, denominator, n, source), size)


def exact_bernoulli_fraction(numerator: int, denominator: int, size: int, source: Any) -> np.ndarray:
    """``size`` independent Bernoulli(``numerator / denominator``) draws, exactly, for integers of any size.

    A uniform U in [0, 1) is compared with p word by word of their binary expansions: the
    first 64-bit word decides unless it equals p's (probability 2**-64 per draw), when the
    next words of both are compared, and so on; a p whose expansion ends ties only with a U
    that is at least p.
    """
    if not _integers(numerator, denominator):
        raise fail("probability", "exact sampling", "a fraction of two integers", (numerator, denominator))
    if not 0 <= numerator <= denominator or denominator == 0:
        raise fail("probability", "exact sampling", "a fraction in [0, 1]", (numerator, denominator))
    if numerator in (0, denominator):
        return np.full(size, numerator == denominator)
    first, remainder = divmod(numerator << _WORD, denominator)
    words = random_words(source, size)
    out = words < np.uint64(first)
    for position in np.flatnonzero(words == np.uint64(first)):
        out[position] = _below_after_tie(remainder, denominator, source)
    return out


def _below_after_tie(remainder: int, denominator: int, source: Any) -> bool:
    """U and p agreed so far; p's rest is ``remainder / denominator``: compare the next words."""
    while remainder:
        chunk, remainder = divmod(remainder << _WORD, denominator)
        word = int(random_words(source, 1)[0])
        if word != chunk:
            return word < chunk
    return False  # p's expansion ended with U equal so far: U >= p


#: Weights of :func:`exact_choice_logits` within this many powers of two of the largest
#: are drawn in one step; the rest (total mass below ``K 2**-DEPTH`` of it) only after an
#: exact coin says the draw falls among them (:func:`_unlikely_coin`), which keeps every
#: integer near DEPTH bits on all but a 2**-(DEPTH - 64) share of the draws.
LOG_WEIGHT_DEPTH = 960
#: Widest spread of logits :func:`dyadic_exp` takes, in bits: its exponents are int64.
MAX_LOGIT_SPREAD_BITS = 2.0**62


def exact_choice_logits(logits: Any, count: int, source: Any) -> np.ndarray:
    """``count`` indices drawn exactly from ``exp(logits) / sum(exp(logits))``; no weight is flushed to zero.

    ``exp(l)`` for l far below the largest logit (an exponential mechanism over a large
    dataset: logits 1,000 apart) is 0 or a subnormal in float64, and a neighbour's weight
    for the same output need not be: a zero beside a non-zero, an infinite loss. Here each
    weight is ``M 2**e`` with ``l / ln 2 = e + f`` (e an integer, so never out of range) and
    ``M = 2**f`` to 53 bits: within a few ulps of ``exp(l)`` at every size. The weights
    within :data:`LOG_WEIGHT_DEPTH` powers of two of the largest are drawn as integers
    (:class:`ExactDiscrete`); the rest are reached through an exact coin
    (:func:`exact_bernoulli_fraction`) with their exact total mass, and drawn the same way.
    """
    mantissa, exponent = dyadic_exp(logits)
    return _draw_by_depth(np.arange(mantissa.size), mantissa, exponent, count, source)


def dyadic_exp(logits: Any) -> tuple[np.ndarray, np.ndarray]:
    """``exp(logits - max(logits))`` as exact dyadic rationals ``mantissa * 2**(exponent - 52)``.

    ``mantissa`` in [2**52, 2**53] and ``exponent`` <= 0 are integers (int64), so no weight
    leaves the representable range whatever the logits' spread.
    """
    values = np.asarray(logits, dtype=float).ravel()
    if values.size == 0 or not np.isfinite(values).all():
        raise fail("logits", "exact sampling", "finite numbers, at least one", values[:5])
    b = (values - values.max()) / np.log(2.0)
    if not np.isfinite(b).all() or b.min() < -MAX_LOGIT_SPREAD_BITS:
        raise fail("logits", "exact sampling", f"numbers at most {MAX_LOGIT_SPREAD_BITS:.3g} bits (powers of two) apart", values[:5])
    exponent = np.floor(b)
    mantissa = np.rint(np.ldexp(np.exp2(b - exponent), 52)).astype(np.int64)
    return mantissa, exponent.astype(np.int64)


def _draw_by_depth(index: np.ndarray, mantissa: np.ndarray, exponent: np.ndarray, count: int, source: Any) -> np.ndarray:
    """Weights ``mantissa 2**exponent`` (the common 2**-52 cancels): the head within the depth, else the tail."""
    cut = int(exponent.max()) - LOG_WEIGHT_DEPTH
    head = exponent >= cut
    low = int(exponent[head].min())
    head_weights = [int(m) << int(e - low) for m, e in zip(mantissa[head], exponent[head])]
    out = np.empty(count, dtype=np.int64)
    if head.all():
        out[:] = index[ExactDiscrete.from_integers(head_weights).sample(count, source)]
        return out
    tail = ~head
    # P(tail) < 2**-zeros: the tail's weights are below 2**(its top exponent + 53) each, the
    # head's largest is at least 2**(top exponent + 52); whole words only
    zeros = int(exponent.max()) - int(exponent[tail].max()) - 1 - int(tail.sum()).bit_length()
    in_tail = _unlikely_coin(lambda: _tail_fraction(mantissa, exponent, head, low, head_weights), zeros // _WORD * _WORD, count, source)
    if (~in_tail).any():
        out[~in_tail] = index[head][ExactDiscrete.from_integers(head_weights).sample(int((~in_tail).sum()), source)]
    if in_tail.any():
        out[in_tail] = _draw_by_depth(index[tail], mantissa[tail], exponent[tail], int(in_tail.sum()), source)
    return out


def _tail_fraction(mantissa: np.ndarray, exponent: np.ndarray, head: np.ndarray, low: int, head_weights: list[int]) -> tuple[int, int]:
    """The tail's exact share of the mass as ``(numerator, denominator)``: integers as long as
    the weights' spread in bits, so built only when a draw needs them."""
    tail = ~head
    bottom = int(exponent[tail].min())
    tail_mass = sum(int(m) << int(e - bottom) for m, e in zip(mantissa[tail], exponent[tail]))  # units 2**bottom
    return tail_mass, (sum(head_weights) << (low - bottom)) + tail_mass


def _unlikely_coin(fraction: Callable[[], tuple[int, int]], zeros: int, size: int, source: Any) -> np.ndarray:
    """``size`` Bernoulli(p) draws, exactly, for a p known to be below ``2**-zeros`` (a multiple of 64).

    U < p needs U's first ``zeros`` bits to be 0, so a draw whose first words are not all zero
    is decided without p; only the others (probability ``2**-zeros``) compare the rest of U with
    ``2**zeros p`` (:func:`exact_bernoulli_fraction`), whose integers are built then. Until
    2026-11-29 p itself was built for every draw: SmallDB on a trillion records (logits
    1e11 apart) needed integers of 1e11 bits and ended in a MemoryError. Unless a first word
    is 0, the draws read the same words as ``exact_bernoulli_fraction`` would.
    """
    if zeros < _WORD:
        numerator, denominator = fraction()
        return exact_bernoulli_fraction(numerator, denominator, size, source)
    out = np.zeros(size, dtype=bool)
    undecided = np.arange(size)
    for _ in range(zeros // _WORD):
        undecided = undecided[random_words(source, undecided.size) == 0]
        if not undecided.size:
            return out
    numerator, denominator = fraction()
    out[undecided] = exact_bernoulli_fraction(numerator << zeros, denominator, undecided.size, source)
    return out


#: From this many weights, :func:`exact_choice` draws a block first (:class:`BlockedDiscrete`).
BLOCKED_FROM = 1 << 16
#: Weights per block: a block's float64 mantissas (< 2**53) sum below 2**63 in int64.
BLOCK = 1 << 10


class BlockedDiscrete:
    """``w / sum(w)`` over many weights, sampled exactly in two stages: a block of :data:`BLOCK`
    consecutive weights with probability (block sum) / W, then an index within it with
    probability w_j / (block sum) (:class:`ExactDiscrete` on that block alone), so
    ``P(j) = w_j / W`` exactly.

    The block sums are exact: each weight is ``M 2**e`` (``np.frexp``: M < 2**53), the
    mantissas of a block sharing an exponent are summed in int64 (at most 2**10 of them:
    below 2**63), and only those (block, exponent) sums become Python integers. Building
    :class:`ExactDiscrete` over all weights converts every one of them instead (6 million
    weights, the noise of sensitivity 10**6: 13 s before the first draw).
    """

    def __init__(self, weights: Any) -> None:
        w = np.asarray(weights, dtype=float).ravel()
        if w.size == 0 or not np.isfinite(w).all() or np.any(w < 0) or not np.any(w > 0):
            raise fail("weights", "exact sampling", "finite, >= 0 and not all zero", w[:5])
        self.weights = w
        fraction, exponent = np.frexp(w)
        mantissa = (fraction * 2.0**53).astype(np.int64)  # exact: fraction has 53 significant bits
        exponent = exponent.astype(np.int64) - 53
        positive = mantissa > 0
        self.low = int(exponent[positive].min())  # every weight is an integer multiple of 2**low
        block = np.arange(w.size) // BLOCK
        order = np.lexsort((exponent, block))
        order = order[positive[order]]
        keys = block[order] * 4096 + (exponent[order] - self.low)  # shifts < 2**12 (float64 spans ~2100 binades)
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        sums = np.add.reduceat(mantissa[order], starts)
        totals = [0] * int(block[-1] + 1)
        for key, total in zip(keys[starts].tolist(), sums.tolist()):
            totals[key // 4096] += total << (key % 4096)
        self.blocks = ExactDiscrete.from_integers(totals)

    def probability(self, index: int) -> tuple[int, int]:
        """``P(index)`` as an exact fraction: P(its block) times P(index | its block)."""
        b = index // BLOCK
        top, bottom = self.blocks.probability(b)
        if top == 0:  # a block of zeros: never drawn
            return 0, bottom
        within, whole = self._block(b).probability(index - b * BLOCK)
        return top * within, bottom * whole

    def sample(self, count: int, source: Any) -> np.ndarray:
        """``count`` independent indices."""
        chosen = self.blocks.sample(count, source)
        out = np.empty(count, dtype=np.int64)
        for b in np.unique(chosen):
            where = chosen == b
            out[where] = b * BLOCK + self._block(b).sample(int(where.sum()), source)
        return out

    def _block(self, b: int) -> ExactDiscrete:
        """The exact distribution within block ``b`` (its weights alone)."""
        return ExactDiscrete(self.weights[b * BLOCK:(b + 1) * BLOCK])


def exact_choice(weights: Any, count: int, source: Any) -> np.ndarray:
    """``count`` indices drawn exactly from ``weights / sum(weights)`` (in two stages from
    :data:`BLOCKED_FROM` weights on: :class:`BlockedDiscrete`)."""
    size = np.size(weights)
    return (BlockedDiscrete if size >= BLOCKED_FROM else ExactDiscrete)(weights).sample(count, source)


def exact_choice_rows(rows: Any, which: np.ndarray, source: Any) -> np.ndarray:
    """One index per entry of ``which``, drawn exactly from row ``rows[which[i]]`` (rows grouped)."""
    which = np.asarray(which)
    out = np.empty(which.size, dtype=np.int64)
    for r in np.unique(which):
        where = which == r
        out[where] = ExactDiscrete(rows[r]).sample(int(where.sum()), source)
    return out

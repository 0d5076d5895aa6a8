"""The staircase mechanism (Geng & Viswanath), continuous and discrete.

Continuous (Wu-Xia-He Example 9; Geng-Viswanath Theorem 3): with ``b = exp(-epsilon)``
and ``0 <= gamma <= 1`` the noise density is, for ``x`` in ``[k Delta, (k+1) Delta)``,
``a b^k`` on the first ``gamma Delta`` of the step and ``a b^(k+1)`` on the rest,
symmetric about 0, with ``a = (1 - b) / (2 Delta (gamma + (1 - gamma) b))``. The
optimal gamma is ``1 / (1 + exp(epsilon / 2))`` for the cost ``|x|`` and the real root

    gamma* = -b / (1 - b) + (b - 2 b^2 + 2 b^4 - b^5)^(1/3) / (2^(1/3) (1 - b)^2)

for ``x^2`` (both are checked against a numerical minimisation of the exact cost in
the tests). As printed, the two terms are of order 1 / epsilon and cancel to about 1/2,
so in floating point that formula is 4.5e-5 off at epsilon = 1e-3 and negative at 1e-5.
Since ``b - 2 b^2 + 2 b^4 - b^5 = b (1 - b)^3 (1 + b)``, it equals ``(c - b) / (1 - b)``
with ``c = (b (1 + b) / 2)^(1/3)``, and ``c^3 - b^3 = b (1 - b) (1 + 2 b) / 2`` gives

    gamma* = b (1 + 2 b) / (2 (c^2 + c b + b^2)),

which :func:`optimal_gamma` evaluates (no subtraction; the tests compare it with the
printed formula in 60-digit decimal arithmetic).

Discrete (integer query, integer Delta): ``p(i) = a`` for ``0 <= i < r``,
``a b`` for ``r <= i < Delta``, ``p(i + Delta) = b p(i)``, symmetric, with
``a = (1 - b) / (2 r + 2 b (Delta - r) - (1 - b))`` and ``1 <= r <= Delta``. The best r
for a cost is found by evaluating the cost of all Delta candidates in closed form
(:func:`discrete_staircase_costs`, O(Delta) for all of them). Delta = 1 is the
geometric mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.exact_sampling import offset_exactly
from dpopt.mechanisms.integer_noise import PeriodicNoise, tail_sums
from dpopt.mechanisms.noise import AdditiveNoise, check_epsilon, check_sensitivity
from dpopt.sampling import resolve_rng
from dpopt.validation import check_choice, check_int, check_real

__all__ = [
    "StaircaseMechanism",
    "DiscreteStaircaseMechanism",
    "optimal_gamma",
    "discrete_staircase_noise",
    "discrete_staircase_costs",
    "COSTS",
]

COSTS = ("absolute", "squared")


def optimal_gamma(epsilon: float, cost: str = "absolute") -> float:
    """Geng-Viswanath's optimal gamma for the cost ``|x|`` or ``x^2``."""
    epsilon = check_real(epsilon, "epsilon", "optimal_gamma", low=0.0, low_open=True)  # nan came back as nan
    check_choice(cost, "cost", "optimal_gamma", COSTS)
    if cost == "absolute":
        return 1.0 / (1.0 + np.exp(epsilon / 2.0))
    # Geng-Viswanath's -b / (1 - b) + (b - 2 b^2 + 2 b^4 - b^5)^(1/3) / (2^(1/3) (1 - b)^2) is two
    # terms of order 1 / epsilon that cancel to ~1/2: at epsilon = 1e-3 it was 4.5e-5 off, at
    # 1e-5 it gave -1911. With b - 2 b^2 + 2 b^4 - b^5 = b (1 - b)^3 (1 + b) and
    # c = (b (1 + b) / 2)^(1/3) it is (c - b) / (1 - b), and c^3 - b^3 = b (1 - b) (1 + 2 b) / 2:
    b = math.exp(-epsilon)
    c = math.cbrt(b * (1 + b) / 2)
    return b * (1 + 2 * b) / (2 * (c * c + c * b + b * b))


@dataclass(frozen=True, kw_only=True)
class StaircaseMechanism(AdditiveNoise):
    """Continuous staircase noise for a real query of sensitivity Delta (epsilon-DP).

    Parameters
    ----------
    sensitivity, epsilon : float
    gamma : float, optional
        Fraction of each step at the higher level; default: optimal for ``cost``.
    cost : {"absolute", "squared"}
        The cost gamma is optimised for when not given.
    """

    sensitivity: float
    epsilon: float
    gamma: float | None = None
    cost: str = "absolute"
    owner = "staircase mechanism"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, self.owner))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, self.owner))
        check_choice(self.cost, "cost", self.owner, COSTS)
        gamma = optimal_gamma(self.epsilon, self.cost) if self.gamma is None else self.gamma
        object.__setattr__(self, "gamma", check_real(gamma, "gamma", self.owner, low=0.0, high=1.0))

    @property
    def scale(self) -> float:
        """The step width Delta (the staircase's natural scale)."""
        return self.sensitivity

    @property
    def _b(self) -> float:
        return float(np.exp(-self.epsilon))

    @property
    def _height(self) -> float:
        b, g = self._b, self.gamma
        return (1 - b) / (2 * self.sensitivity * (g + (1 - g) * b))

    def pdf(self, x: Any) -> np.ndarray:
        d, b, g = self.sensitivity, self._b, self.gamma
        ax = np.abs(np.asarray(x, dtype=float))
        k = np.floor(ax / d)
        inner = ax - k * d
        return self._height * b**k * np.where(inner < g * d, 1.0, b)

    def cdf(self, x: Any) -> np.ndarray:
        d, b, g, a = self.sensitivity, self._b, self.gamma, self._height
        v = np.asarray(x, dtype=float)
        ax = np.abs(v)
        k = np.floor(ax / d)
        inner = ax - k * d
        step_mass = a * d * (g + (1 - g) * b)  # mass of step 0 on one side
        within = a * np.where(inner < g * d, inner, g * d + b * (inner - g * d))
        half = step_mass * (1 - b**k) / (1 - b) + b**k * within  # Pr[0 <= Z <= |x|]
        return np.where(v >= 0, 0.5 + half, 0.5 - half)

    def ppf(self, u: Any) -> np.ndarray:
        d, b, g = self.sensitivity, self._b, self.gamma
        v = np.asarray(u, dtype=float)
        frac = np.abs(2.0 * v - 1.0)  # share of the half-line's mass below |x|
        k = np.floor(np.log1p(-frac) / np.log(b))
        rest = (frac - (1 - b**k)) / (b**k * (1 - b))  # position within step k, as a share of its mass
        rest = np.clip(rest, 0.0, 1.0)
        first = g / (g + (1 - g) * b)
        inner = np.where(rest < first, g * d * rest / np.where(first > 0, first, 1.0), g * d + (1 - g) * d * (rest - first) / (1 - first))
        return np.sign(v - 0.5) * (k * d + inner)

    def _moments(self) -> tuple[float, float]:
        """Exact ``(E|Z|, E Z^2)`` from one step's moments and geometric sums."""
        d, b, g, a = self.sensitivity, self._b, self.gamma, self._height
        mass0 = a * d * (g + (1 - g) * b)
        first0 = a * ((g * d) ** 2 + b * (d**2 - (g * d) ** 2)) / 2
        second0 = a * ((g * d) ** 3 + b * (d**3 - (g * d) ** 3)) / 3
        s1, sk, sk2 = tail_sums(b)
        geo0, geo1, geo2 = 1 + s1, sk, sk2  # sums over k >= 0 of b^k, k b^k, k^2 b^k
        abs_mean = 2 * (first0 * geo0 + d * mass0 * geo1)
        square = 2 * (second0 * geo0 + 2 * d * first0 * geo1 + d * d * mass0 * geo2)
        return abs_mean, square

    def expected_absolute_error(self) -> float:
        return self._moments()[0]

    def variance(self) -> float:
        return self._moments()[1]

    def privacy_loss(self) -> float:
        """Worst-case log density ratio at shifts up to Delta: epsilon by construction."""
        return self.epsilon


def _discrete_window(delta: int, epsilon: float, r: int) -> np.ndarray:
    b = np.exp(-epsilon)
    a = (1 - b) / (2 * r + 2 * b * (delta - r) - (1 - b))
    half = np.where(np.arange(delta + 1) < r, a, a * b)  # p(0..Delta-1) then p(Delta)
    half[delta] = a * b  # p(Delta) = b p(0)
    return np.concatenate([half[:0:-1], half])


def discrete_staircase_costs(delta: int, epsilon: float, power: int) -> np.ndarray:
    """``E|Z|^power`` (power 1 or 2) of the discrete staircase for every ``r = 1..Delta`` at once.

    With ``c_j = a`` for ``j < r`` and ``a b`` for ``r <= j < Delta``, ``p(k Delta + j) = b^k c_j``;
    summing over the periods k >= 0 with ``C_q = sum_j j^q c_j``,

        E|Z|  = 2 (Delta C_0 G_1 + C_1 G_0),
        E Z^2 = 2 (Delta^2 C_0 G_2 + 2 Delta C_1 G_1 + C_2 G_0),

    where ``G_q = sum_{k >= 0} k^q b^k``. Every term is positive (no cancellation). Evaluating
    each candidate's noise on its window instead took O(Delta^2): 650 s at Delta = 1e5.
    """
    b = float(np.exp(-epsilon))
    r = np.arange(1, delta + 1, dtype=float)
    a = (1 - b) / (2 * r + 2 * b * (delta - r) - (1 - b))

    def first(q: int, upto: np.ndarray | float) -> np.ndarray:  # sum_{j < upto} j^q
        upto = np.asarray(upto, dtype=float)
        return upto if q == 0 else upto * (upto - 1) / 2 if q == 1 else (upto - 1) * upto * (2 * upto - 1) / 6

    c0, c1, c2 = (a * (first(q, r) + b * (first(q, float(delta)) - first(q, r))) for q in (0, 1, 2))
    s1, sk, sk2 = tail_sums(b)
    g0, g1, g2 = 1 + s1, sk, sk2
    if power == 1:
        return 2 * (delta * c0 * g1 + c1 * g0)
    return 2 * (delta**2 * c0 * g2 + 2 * delta * c1 * g1 + c2 * g0)


def discrete_staircase_noise(delta: int, epsilon: float, r: int) -> PeriodicNoise:
    """Discrete staircase noise with parameter r as :class:`PeriodicNoise` (window M = Delta)."""
    return PeriodicNoise(_discrete_window(delta, epsilon, r), delta, float(np.exp(-epsilon)))


@dataclass(frozen=True, kw_only=True)
class DiscreteStaircaseMechanism:
    """Integer staircase noise for an integer query of integer sensitivity Delta.

    Parameters
    ----------
    sensitivity : int
        Delta >= 1.
    epsilon : float
    r : int, optional
        Width of the top step, ``1 <= r <= Delta``; default: the best r for ``cost``.
    cost : {"absolute", "squared"}
    """

    sensitivity: int
    epsilon: float
    r: int | None = None
    cost: str = "absolute"
    noise: PeriodicNoise = field(init=False, repr=False)
    owner = "discrete staircase mechanism"

    def __post_init__(self) -> None:
        delta = check_int(self.sensitivity, "sensitivity", self.owner, low=1)
        eps = check_epsilon(self.epsilon, self.owner)
        check_choice(self.cost, "cost", self.owner, COSTS)
        power = COSTS.index(self.cost) + 1
        if self.r is None:
            r = 1 + int(np.argmin(discrete_staircase_costs(delta, eps, power)))
        else:
            r = check_int(self.r, "r", self.owner, low=1, high=delta)
        object.__setattr__(self, "sensitivity", delta)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "r", r)
        object.__setattr__(self, "noise", discrete_staircase_noise(delta, eps, r))

    def pmf(self, z: Any) -> np.ndarray:
        return self.noise.pmf(z)

    def cdf(self, z: Any) -> np.ndarray:
        return self.noise.cdf(z)

    def expected_absolute_error(self) -> float:
        return self.noise.moment(1)

    def variance(self) -> float:
        return self.noise.moment(2)

    def sample(self, true_value: int = 0, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        value = check_int(true_value, "true_value", self.owner)
        return offset_exactly(value, self.noise.sample(count, rng=resolve_rng(rng, secure=secure)))

"""The noise-adding LP over a window with periodic geometric tails.

Variables: ``p(-M), ..., p(M)`` >= 0. The tails are linear in them:
``p(M + j + k Delta) = b^k p(M + j)`` style repetition of the last period (b = e^-eps).
Constraints, with the window extended by one period each side (``E p``):

* ``alpha * q(z) <= q(z + s)`` and ``alpha * q(z + s) <= q(z)`` for shifts 1..Delta
  (pairs further out repeat these, both sides scaling by b);
* total mass ``sum p + b / (1 - b) (sum of the first and last periods) = 1``.

Objective: ``E|Z|^power`` = window part plus closed-form tail sums
(:func:`dpopt.mechanisms.integer_noise.tail_sums`). Built from sparse matrices, no
loops over entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from dpopt.lazy_modules import cvxpy as cp
from dpopt.mechanisms.integer_noise import tail_sums
from dpopt.problems.noise_adding import NoiseAdding

__all__ = ["build_noise_program", "extension_matrix", "cost_vector", "build_grid_program", "GridProgram", "grid_shifts", "repair_cells"]


def extension_matrix(m: int, period: int, decay: float) -> sparse.csr_array:
    """Map the window (2M + 1 values) to the window extended by one period each side."""
    size = 2 * m + 1
    left = sparse.csr_array((np.full(period, decay), (np.arange(period), np.arange(period))), shape=(period, size))
    right = sparse.csr_array(
        (np.full(period, decay), (np.arange(period), np.arange(size - period, size))), shape=(period, size)
    )
    return sparse.vstack([left, sparse.eye_array(size, format="csr"), right], format="csr")


def cost_vector(m: int, period: int, decay: float, power: int) -> np.ndarray:
    """Coefficients c with ``E|Z|^power = c @ window`` (window plus both tails)."""
    z = np.abs(np.arange(-m, m + 1)).astype(float)
    c = z**power
    s1, sk, sk2 = tail_sums(decay)
    base = z[-period:]  # |z| of the right period; the left period mirrors it
    if power == 1:
        extra = base * s1 + period * sk
    else:
        extra = base**2 * s1 + 2 * base * period * sk + period**2 * sk2
    c[-period:] += extra
    c[:period] += extra[::-1]
    return c


def privacy_matrix(m: int, period: int, alpha: float) -> sparse.csr_array:
    """A with ``A @ window <= 0`` iff every shift-1..Delta ratio is within e^epsilon."""
    ext = extension_matrix(m, period, alpha)
    size = ext.shape[0]
    blocks = []
    for shift in range(1, period + 1):
        rows = np.arange(size - shift)
        low = sparse.csr_array((np.ones(rows.size), (rows, rows)), shape=(rows.size, size))
        high = sparse.csr_array((np.ones(rows.size), (rows, rows + shift)), shape=(rows.size, size))
        blocks.append(alpha * low - high)
        blocks.append(alpha * high - low)
    return sparse.vstack(blocks, format="csr") @ ext


def mass_vector(m: int, period: int, decay: float) -> np.ndarray:
    """Coefficients of the total mass (window plus both tails)."""
    s1, _, _ = tail_sums(decay)
    mass = np.ones(2 * m + 1)
    mass[:period] += s1
    mass[-period:] += s1
    return mass


def build_noise_program(problem: NoiseAdding) -> tuple[cp.Problem, cp.Variable]:
    """The LP of ``problem`` and its window variable."""
    m, d, b = problem.window, problem.sensitivity, problem.alpha
    p = cp.Variable(2 * m + 1, nonneg=True, name="p")
    objective = cp.Minimize(cost_vector(m, d, b, problem.power) @ p)
    return cp.Problem(objective, [privacy_matrix(m, d, b) @ p <= 0, mass_vector(m, d, b) @ p == 1]), p


def strictly_private_window(m: int, period: int, decay: float) -> np.ndarray:
    """A member of the family with slack in every constraint that is not tight by construction.

    ``q(z) ~ c^|z|`` inside the window with ``c = decay^(1 / (2 Delta))``: it decays
    more slowly than e^-epsilon per Delta steps, so each ratio constraint has slack
    except the pairs (last period, first tail period) at shift Delta, which hold with
    equality for every member of the family.
    """
    c = decay ** (1.0 / (2 * period))
    q = c ** np.abs(np.arange(-m, m + 1)).astype(float)
    return q / (mass_vector(m, period, decay) @ q)


def repair_window(window: np.ndarray, problem: NoiseAdding) -> tuple[np.ndarray, float]:
    """Make a solver's window exactly private: clip, normalise, mix with the strict member.

    Returns the repaired window and the mixing weight (0 when nothing was violated).
    """
    m, d, b = problem.window, problem.sensitivity, problem.alpha
    mass = mass_vector(m, d, b)
    p = np.clip(np.asarray(window, dtype=float), 0.0, None)
    p = p / (mass @ p)
    return mix_with_strict(p, strictly_private_window(m, d, b), privacy_matrix(m, d, b))


def mix_with_strict(p: np.ndarray, q: np.ndarray, rows: sparse.csr_array) -> tuple[np.ndarray, float]:
    """``(1 - w) p + w q`` with the least w that clears every violated row of ``rows @ x <= 0``.

    ``q`` is a member with slack in every row that is not tight for the whole family;
    rows tight for every member are left alone. The test is relative (entries like
    alpha^M make absolute violations meaningless). Returns the mix and w (0 if none).
    """
    violation, slack = rows @ p, rows @ q
    bad = (violation > 1e-15 * np.maximum(abs(rows) @ p, 1e-300)) & (slack < -1e-12 * (abs(rows) @ q))
    if not bad.any():
        return p, 0.0
    weight = float(np.max(violation[bad] / (violation[bad] - slack[bad])))
    weight = min(1.0, weight * (1 + 1e-6) + 1e-15)
    return (1 - weight) * p + weight * q, weight


# -- the grid LP for a neighbouring set V (Wu-Xia-He Section 6.2) ------------------------


def grid_shifts(shifts: np.ndarray, step: float) -> np.ndarray:
    """Cell offsets j != 0 that some shift in W carries a cell onto, with positive measure.

    Cell ``[a h, (a + 1) h)`` moved by ``v`` meets cell ``a + j`` in a set of positive
    length iff ``|v - j h| < h``; over ``v`` in ``[lo, hi]`` that is ``lo / h - 1 < j < hi / h + 1``.
    So a density constant on the cells is eps-DP for every real shift in W iff
    ``p_a <= e^eps p_(a+j)`` for these j: the grid LP's feasible set is exactly the private
    densities of the family, not an approximation of it.
    """
    def snapped(x: np.ndarray) -> np.ndarray:  # Delta / (Delta / P) is P up to rounding
        return np.where(np.abs(x - np.round(x)) < 1e-9, np.round(x), x)

    low, high = snapped(shifts[:, 0] / step), snapped(shifts[:, 1] / step)
    offsets = [np.arange(np.floor(lo - 1) + 1, np.ceil(hi + 1)) for lo, hi in zip(low, high)]
    j = np.unique(np.concatenate(offsets)).astype(np.int64)
    return j[j != 0]


def cell_values(cells: int, period: int, decay: float) -> sparse.csr_array:
    """Map the free cells ``p_0..p_(K-1)`` of ``[0, c)`` to the cells of ``[-(c + 2 Delta), c + 2 Delta)``.

    Cell ``a >= K`` is ``decay^q p_(a - q P)`` (the last period repeated); cell ``a < 0`` is cell ``-a - 1``.
    """
    a = np.arange(-(cells + 2 * period), cells + 2 * period)
    mirrored = np.where(a < 0, -a - 1, a)
    q = np.where(mirrored >= cells, (mirrored - cells) // period + 1, 0)
    free = mirrored - q * period
    return sparse.csr_array((decay ** q.astype(float), (np.arange(a.size), free)), shape=(a.size, cells))


def grid_privacy_matrix(cells: int, period: int, decay: float, offsets: np.ndarray, bound: float) -> sparse.csr_array:
    """Rows ``value(a) - e^eps value(a + j)`` for every line cell a and offset j with both in range."""
    line = cell_values(cells, period, decay)
    size = line.shape[0]
    blocks = []
    for j in offsets:
        rows = np.arange(max(0, -j), min(size, size - j))
        here = sparse.csr_array((np.ones(rows.size), (np.arange(rows.size), rows)), shape=(rows.size, size))
        there = sparse.csr_array((np.ones(rows.size), (np.arange(rows.size), rows + j)), shape=(rows.size, size))
        blocks.append(here - bound * there)
    return (sparse.vstack(blocks, format="csr") @ line).tocsr()


def grid_functionals(cells: int, period: int, step: float, decay: float, power: int) -> tuple[np.ndarray, np.ndarray]:
    """``(mass, cost)`` coefficients: total mass and ``E|Z|^power`` are these dot the free cells."""
    s1, sk, sk2 = tail_sums(decay)
    k = np.arange(cells, dtype=float)
    lo, hi = k * step, (k + 1) * step
    moments = [(hi ** (j + 1) - lo ** (j + 1)) / (j + 1) for j in range(3)]  # int z^j over each cell
    last = k >= cells - period
    d = period * step
    tail = {0: s1 * moments[0], 1: s1 * moments[1] + d * sk * moments[0],
            2: s1 * moments[2] + 2 * d * sk * moments[1] + d * d * sk2 * moments[0]}
    mass = 2 * (moments[0] + np.where(last, tail[0], 0.0))
    cost = 2 * (moments[power] + np.where(last, tail[power], 0.0))
    return mass, cost


@dataclass(frozen=True)
class GridProgram:
    """The grid LP, its cell variable, and the privacy rows and mass it was built from (the repair reuses them)."""

    program: cp.Problem
    p: cp.Variable
    rows: sparse.csr_array
    mass: np.ndarray


def build_grid_program(shifts: np.ndarray, sensitivity: float, epsilon: float, grid: int, window: int, power: int) -> GridProgram:
    """The LP over densities constant on cells of width ``Delta / grid`` on ``[0, window Delta)``, tail periodic."""
    cells, step, decay = grid * window, sensitivity / grid, float(np.exp(-epsilon))
    p = cp.Variable(cells, nonneg=True, name="p")
    mass, cost = grid_functionals(cells, grid, step, decay, power)
    rows = grid_privacy_matrix(cells, grid, decay, grid_shifts(shifts, step), float(np.exp(epsilon)))
    return GridProgram(cp.Problem(cp.Minimize(cost @ p), [rows @ p <= 0, mass @ p == 1]), p, rows, mass)


def grid_rows(shifts: np.ndarray, sensitivity: float, grid: int, window: int) -> int:
    """How many privacy rows :func:`build_grid_program` writes (for the memory estimate)."""
    return len(grid_shifts(shifts, sensitivity / grid)) * 2 * (grid * window + 2 * grid)


def strictly_private_cells(cells: int, period: int, epsilon: float) -> np.ndarray:
    """``e^(-eps k / (2 P))`` per cell: every ratio a grid offset (at most P + 1 cells) reaches is
    below e^eps, except the pairs one period apart in the tail, tight for every member."""
    return np.exp(-epsilon * np.arange(cells) / (2 * period))


def repair_cells(values: np.ndarray, rows: sparse.csr_array, mass: np.ndarray, strict: np.ndarray) -> tuple[np.ndarray, float]:
    """Clip, normalise, and mix with the strict member by the least weight that removes every violation."""
    p = np.clip(np.asarray(values, dtype=float), 0.0, None)
    return mix_with_strict(p / (mass @ p), strict / (mass @ strict), rows)

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

import cvxpy as cp
import numpy as np
from scipy import sparse

from dpopt.mechanisms.integer_noise import tail_sums
from dpopt.problems.noise_adding import NoiseAdding

__all__ = ["build_noise_program", "extension_matrix", "cost_vector"]


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
    a = privacy_matrix(m, d, b)
    q = strictly_private_window(m, d, b)
    violation, slack = a @ p, a @ q
    # relative test: entries like alpha^M make absolute violations meaningless
    scale = np.abs(a) @ p
    bad = (violation > 1e-15 * np.maximum(scale, 1e-300)) & (slack < -1e-12 * (np.abs(a) @ q))
    if not bad.any():
        return p, 0.0
    weight = float(np.max(violation[bad] / (violation[bad] - slack[bad])))
    weight = min(1.0, weight * (1 + 1e-6) + 1e-15)
    return (1 - weight) * p + weight * q, weight

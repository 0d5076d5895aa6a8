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
from scipy.ndimage import maximum_filter1d

from dpopt.lazy_modules import cvxpy as cp
from dpopt.mechanisms.integer_noise import PeriodicNoise, tail_sums
from dpopt.problems.noise_adding import NoiseAdding
from dpopt.programs.range_max import DIRECT_RUN, Line, RangeMaxTable, line_privacy_rows, privacy_rows_bound

__all__ = ["build_noise_program", "window_lower_bound", "noise_objective_scale", "extension_matrix", "cost_vector", "build_grid_program", "GridProgram", "grid_shifts", "grid_privacy_rows",
           "grid_rows", "repair_cells", "window_line", "window_privacy_rows", "window_rows"]


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
    """A with ``A @ window <= 0`` iff every shift-1..Delta ratio is within e^epsilon: one row per
    (value, shift), the reference :func:`build_noise_program`'s range-maximum rows are tested against."""
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


def window_line(m: int, period: int, decay: float) -> Line:
    """:func:`extension_matrix` as a line: the window and one decayed period on each side."""
    size = 2 * m + 1
    free = np.concatenate([np.arange(period), np.arange(size), np.arange(size - period, size)])
    coef = np.concatenate([np.full(period, decay), np.ones(size), np.full(period, decay)])
    return Line(free, coef)


def window_shifts(period: int) -> np.ndarray:
    """The shifts a neighbour can make to an integer query of sensitivity ``period``: +-1..+-period."""
    return np.concatenate([np.arange(-period, 0), np.arange(1, period + 1)])


def window_privacy_rows(problem: NoiseAdding) -> tuple[sparse.csr_array, RangeMaxTable]:
    """The window LP's privacy rows ``R @ [p, U] <= 0`` and their range-maximum table (:func:`line_privacy_rows`)."""
    m, d, b = problem.window, problem.sensitivity, problem.alpha
    return line_privacy_rows(window_line(m, d, b), 2 * m + 1, window_shifts(d), b, 1.0)


def build_noise_program(problem: NoiseAdding) -> tuple[cp.Problem, cp.Expression]:
    """The LP of ``problem`` and its window (an expression when range-maximum variables follow it).

    Privacy ``alpha value(z) <= value(z + s)`` for shifts ``0 < |s| <= Delta`` through
    :func:`line_privacy_rows` (a range-maximum table once Delta exceeds :data:`DIRECT_RUN`),
    scaled so that no coefficient exceeds 1 (the rows of :func:`privacy_matrix`).
    """
    m, d, b = problem.window, problem.sensitivity, problem.alpha
    rows, table = window_privacy_rows(problem)
    z = cp.Variable(2 * m + 1 + table.variables, nonneg=True, name="window_and_table")
    p = z[: 2 * m + 1] if table.variables else z
    cost = cost_vector(m, d, b, problem.power)
    objective = cp.Minimize(cost_scale(cost) * cost @ p)  # the scale noise_objective_scale reports
    return cp.Problem(objective, [rows @ z <= 0, mass_vector(m, d, b) @ p == 1]), p


def window_lower_bound(problem: NoiseAdding, multipliers: np.ndarray | None) -> float:
    """A lower bound on :func:`build_noise_program`'s optimum from any multipliers of its privacy rows.

    For ``lam >= 0`` and every feasible z (``R z <= 0``, ``mass @ p = 1``, z >= 0),
    ``cost @ p >= cost @ p + lam @ R z = r @ z`` with reduced costs ``r = cost + R^T lam``; once
    the range-maximum variables' r are >= 0 (:func:`_table_balanced` makes them so) this is at
    least ``min_j (r_j / mass_j)`` (every mass_j >= 1), whatever the solver. With the solver's
    row duals it meets the optimum to about 4e-13 (relative).
    """
    if multipliers is None:
        return -np.inf
    m, d, b = problem.window, problem.sensitivity, problem.alpha
    rows, table = window_privacy_rows(problem)  # rebuilt, not taken from the program: 17 ms at Delta = 1000
    lam = np.clip(np.asarray(multipliers, dtype=float).ravel(), 0.0, None)
    if lam.size != rows.shape[0] or not np.all(np.isfinite(lam)):
        return -np.inf
    n = 2 * m + 1
    if table.variables:
        lam = _table_balanced(rows, lam, table)
    reduced = rows.T @ lam
    if reduced[n:].size and reduced[n:].min() < 0:
        return -np.inf
    reduced[:n] += cost_vector(m, d, b, problem.power)
    return float(np.min(reduced[:n] / mass_vector(m, d, b)))


def _table_balanced(rows: sparse.csr_array, lam: np.ndarray, table: RangeMaxTable) -> np.ndarray:
    """Multipliers whose reduced costs on the range-maximum variables are >= 0 (the solver's duals
    leave them at -1e-13 to -6e-8).

    A table variable U_k(a) is the larger side (coefficient -1) only of the rows
    ``U_(k-1)(.) <= U_k(a)``, so its reduced cost is what its other rows add minus those rows'
    multipliers; a deficit is therefore at most their total, and scaling them down by it (top
    level first) closes it, lowering only the reduced costs of level k - 1, handled next, and
    at level 1 of the window itself, which the bound's minimum then sees.
    """
    lam = lam.copy()
    coo = rows.tocoo()
    negative = coo.data < 0
    larger = np.full(rows.shape[0], -1, dtype=np.int64)
    larger[coo.row[negative]] = coo.col[negative]  # every row has one negative entry: its larger side
    weight = np.zeros(rows.shape[0])
    weight[coo.row[negative]] = -coo.data[negative]
    for k in range(table.levels, 0, -1):
        lo = table.first + int(table.start[k])
        hi = lo + table.lengths[k - 1]
        reduced = (rows.T @ lam)[lo:hi]
        here = (larger >= lo) & (larger < hi)
        total = np.bincount(larger[here] - lo, weights=lam[here] * weight[here], minlength=hi - lo)
        # closed with room: 1e-12 of the rows' total, far above the rounding of the sums (a few
        # ulps of it), which left -4e-14 where the deficit alone was taken off
        deficit = np.where(reduced < 1e-12 * total, np.clip(-reduced, 0.0, None) + 1e-12 * total, 0.0)
        factor = np.where(deficit > 0, np.clip(1.0 - deficit / np.where(total > 0, total, 1.0), 0.0, 1.0), 1.0)
        lam[here] *= factor[larger[here] - lo]
    return lam


def noise_objective_scale(problem: NoiseAdding) -> float:
    """What :func:`build_noise_program` multiplies its costs by (:func:`cost_scale`)."""
    return cost_scale(cost_vector(problem.window, problem.sensitivity, problem.alpha, problem.power))


def cost_scale(cost: np.ndarray) -> float:
    """1, or the power of two (exact) that brings the largest cost to at most 1 once it passes 1e12.

    The tails' costs grow as 1 / (1 - alpha)^3 (squared cost: 2e21 at epsilon = 1e-7), and
    HiGHS reads costs of 1e20 as infinite ("unknown" at epsilon <= 1e-7); an LP's minimisers do
    not change when its costs are scaled, and its optimum is divided back exactly.
    """
    largest = float(np.abs(cost).max(initial=0.0))
    return 1.0 if largest <= 1e12 else 2.0 ** -int(np.ceil(np.log2(largest)))


def window_rows(sensitivity: int, window: int) -> tuple[int, int]:
    """Upper bounds on the ``(rows, variables)`` of :func:`build_noise_program` (the memory estimate)."""
    return privacy_rows_bound(2 * window + 1 + 2 * sensitivity, 2 * window + 1, window_shifts(sensitivity))


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
    p, q = p / (mass @ p), strictly_private_window(m, d, b)
    # the rows of privacy_matrix divided by alpha, pair by pair (the same least weight; no matrix of all pairs)
    return mix(p, q, pair_violation_weight(p, q, window_line(m, d, b), window_shifts(d), 1.0 / b))


def majorant_window(window: np.ndarray, problem: NoiseAdding) -> np.ndarray:
    """The smallest private noise above a solver's window, read back on the window and normalised.

    Privacy is ``alpha y(z) <= y(z')`` for ``|z - z'| <= Delta``, so the smallest ``y >= p``
    is the max-plus closure ``max_z' alpha^ceil(|z - z'| / Delta) p(z')``: raise every value
    to alpha times the largest within Delta until nothing moves (a sliding maximum per pass,
    each pass reaching one period further). It is computed on the window with two periods of
    each tail, so the window's values see every partner they have, and repeated until the
    window's own periodic tails need no raising (a tail value raised by the closure raises its
    source in the window's last period by the same factor). It raises only the values
    the solver left violated, by their violations (for tiny values near alpha^M, a relative
    change), where mixing in the strict member costs that member's far larger E|Z| times the
    weight. The result's own tails are the periodic ones of its window: whether that is
    private is for the caller's certificate to say (:func:`repair_window` is the fallback).
    """
    m, d, b = problem.window, problem.sensitivity, problem.alpha
    mass = mass_vector(m, d, b)
    w = np.clip(np.asarray(window, dtype=float), 0.0, None)
    line = np.arange(-m - 2 * d, m + 2 * d + 1)
    for _ in range(MAJORANT_ROUNDS):  # until the window's own periodic tails are part of the closure
        w = w / (mass @ w)
        y = PeriodicNoise(w, d, b).pmf(line)
        for _ in range(y.size // d + 2):
            raised = np.maximum(y, b * maximum_filter1d(y, size=2 * d + 1, mode="constant", cval=0.0))
            if np.array_equal(raised, y):
                break
            y = raised
        raised = y[2 * d: 2 * d + 2 * m + 1].copy()
        for k in (1, 2):  # a raised tail value asks its last-period source for value / alpha^k
            raised[-d:] = np.maximum(raised[-d:], y[2 * d + 2 * m + 1 + (k - 1) * d: 2 * d + 2 * m + 1 + k * d] / b**k)
            raised[:d] = np.maximum(raised[:d], y[(2 - k) * d: (3 - k) * d] / b**k)
        if np.array_equal(raised, w):
            break
        w = raised
    return w / (mass @ w)


#: Rounds of :func:`majorant_window`: each closes the line whose tails the window's last periods
#: set, then raises those periods to what their tails were raised to; a few rounds settle.
MAJORANT_ROUNDS = 20


def least_mixing_weight(violation: np.ndarray, slack: np.ndarray, scale_p: np.ndarray, scale_q: np.ndarray) -> float:
    """The least w with ``(1 - w) violation + w slack <= 0`` on every violated row that ``q`` leaves slack.

    ``violation`` and ``slack`` are the rows at p and at the strict member q; ``scale_p`` and
    ``scale_q`` the rows' absolute values there. The test is relative (entries like alpha^M
    make absolute violations meaningless), and rows tight for every member of the family
    are left alone. 0 when nothing is violated.
    """
    bad = (violation > 1e-15 * np.maximum(scale_p, 1e-300)) & (slack < -1e-12 * scale_q)
    return float(np.max(violation[bad] / (violation[bad] - slack[bad]))) if bad.any() else 0.0


def mix(p: np.ndarray, q: np.ndarray, weight: float) -> tuple[np.ndarray, float]:
    """``(1 - w) p + w q`` with w a hair above ``weight`` (rounding), or p itself when ``weight`` is 0."""
    if weight == 0.0:
        return p, 0.0
    weight = min(1.0, weight * (1 + 1e-6) + 1e-15)
    return (1 - weight) * p + weight * q, weight


def mix_with_strict(p: np.ndarray, q: np.ndarray, rows: sparse.csr_array) -> tuple[np.ndarray, float]:
    """``(1 - w) p + w q`` with the least w that clears every violated row of ``rows @ x <= 0``.

    ``q`` is a member with slack in every row that is not tight for the whole family
    (:func:`least_mixing_weight`). Returns the mix and w (0 if none).
    """
    return mix(p, q, least_mixing_weight(rows @ p, rows @ q, abs(rows) @ p, abs(rows) @ q))


# -- the grid LP for a neighbouring set V (Wu-Xia-He Section 6.2) ------------------------


#: How many ulps from an integer a shift / step may be and still count as that integer (:func:`grid_shifts`).
SNAP_ULPS = 64


def grid_shifts(shifts: np.ndarray, step: float) -> np.ndarray:
    """Cell offsets j != 0 that some shift in W carries a cell onto, with positive measure.

    Cell ``[a h, (a + 1) h)`` moved by ``v`` meets cell ``a + j`` in a set of positive
    length iff ``|v - j h| < h``; over ``v`` in ``[lo, hi]`` that is ``lo / h - 1 < j < hi / h + 1``.
    So a density constant on the cells is eps-DP for every real shift in W iff
    ``p_a <= e^eps p_(a+j)`` for these j: the grid LP's feasible set is exactly the private
    densities of the family, not an approximation of it.
    """
    def snapped(x: np.ndarray) -> np.ndarray:
        # Delta / (Delta / P) is P up to an ulp or two: snap only that, or the LP would need an
        # offset the staircase does not. Never more: snapping drops an offset, and an absolute
        # 1e-9 dropped a real one (V = [0, 1] U [1e12 - 1, 1e12]: 49.99999999995 cells became 50,
        # the LP's density was not private for shifts near 1e12 - 1, and its certificate failed).
        return np.where(np.abs(x - np.round(x)) <= SNAP_ULPS * np.spacing(np.maximum(np.abs(x), 1.0)), np.round(x), x)

    low, high = snapped(shifts[:, 0] / step), snapped(shifts[:, 1] / step)
    offsets = [np.arange(np.floor(lo - 1) + 1, np.ceil(hi + 1)) for lo, hi in zip(low, high)]
    j = np.unique(np.concatenate(offsets)).astype(np.int64)
    return j[j != 0]


def grid_line(cells: int, period: int, decay: float) -> Line:
    a = np.arange(-(cells + 2 * period), cells + 2 * period)
    mirrored = np.where(a < 0, -a - 1, a)
    q = np.where(mirrored >= cells, (mirrored - cells) // period + 1, 0)
    return Line(mirrored - q * period, decay ** q.astype(float))


def cell_values(cells: int, period: int, decay: float) -> sparse.csr_array:
    """:func:`grid_line` as a sparse map from the free cells to the line's cells."""
    line = grid_line(cells, period, decay)
    return sparse.csr_array((line.coef, (np.arange(line.size), line.free)), shape=(line.size, cells))


def grid_privacy_matrix(cells: int, period: int, decay: float, offsets: np.ndarray, bound: float) -> sparse.csr_array:
    """Rows ``value(a) - e^eps value(a + j)`` for every line cell a and offset j with both in range.

    One row per pair: the reference the range-maximum rows of :func:`grid_privacy_rows` are
    tested against (both describe the same private densities).
    """
    line = cell_values(cells, period, decay)
    size = line.shape[0]
    blocks = []
    for j in offsets:
        rows = np.arange(max(0, -j), min(size, size - j))
        here = sparse.csr_array((np.ones(rows.size), (np.arange(rows.size), rows)), shape=(rows.size, size))
        there = sparse.csr_array((np.ones(rows.size), (np.arange(rows.size), rows + j)), shape=(rows.size, size))
        blocks.append(here - bound * there)
    return (sparse.vstack(blocks, format="csr") @ line).tocsr()


def grid_privacy_rows(cells: int, period: int, decay: float, offsets: np.ndarray, bound: float,
                      direct_run: int = DIRECT_RUN) -> tuple[sparse.csr_array, RangeMaxTable]:
    """Rows ``R @ [p, U] <= 0`` whose feasible p are exactly those of :func:`grid_privacy_matrix`
    (:func:`line_privacy_rows` on :func:`grid_line`)."""
    return line_privacy_rows(grid_line(cells, period, decay), cells, offsets, 1.0, bound, direct_run)


def pair_violation_weight(values: np.ndarray, strict: np.ndarray, line: Line, offsets: np.ndarray, bound: float) -> float:
    """The least w such that ``(1 - w) values + w strict`` meets ``value(a) <= bound value(a + j)`` for every
    line cell a and offset j (the rows of :func:`grid_privacy_matrix`; :func:`privacy_matrix`'s divided by alpha).

    Computed offset by offset on the line (no matrix of all pairs is formed), by the rule
    of :func:`least_mixing_weight`.
    """
    p, q = line.values(values), line.values(strict)
    weight = 0.0
    for j in offsets:
        here = slice(max(0, -j), min(line.size, line.size - j))
        there = slice(here.start + j, here.stop + j)
        weight = max(weight, least_mixing_weight(p[here] - bound * p[there], q[here] - bound * q[there],
                                                 p[here] + bound * p[there], q[here] + bound * q[there]))
    return weight


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
    """The grid LP, its cells (an expression when table variables follow them), its number of privacy
    rows, and what the repair needs: the line, the offsets, e^eps and the mass."""

    program: cp.Problem
    p: cp.Expression
    privacy_rows: int
    line: Line
    offsets: np.ndarray
    bound: float
    mass: np.ndarray
    objective_scale: float = 1.0  # what the costs were multiplied by (cost_scale)


def build_grid_program(shifts: np.ndarray, sensitivity: float, epsilon: float, grid: int, window: int, power: int,
                       direct_run: int = DIRECT_RUN) -> GridProgram:
    """The LP over densities constant on cells of width ``Delta / grid`` on ``[0, window Delta)``, tail periodic.

    Privacy through :func:`grid_privacy_rows` (a range-maximum table for long runs of offsets).
    """
    cells, step, decay = grid * window, sensitivity / grid, float(np.exp(-epsilon))
    offsets, bound = grid_shifts(shifts, step), float(np.exp(epsilon))
    rows, table = grid_privacy_rows(cells, grid, decay, offsets, bound, direct_run)
    z = cp.Variable(cells + table.variables, nonneg=True, name="p_and_table")
    p = z[:cells] if table.variables else z
    mass, cost = grid_functionals(cells, grid, step, decay, power)
    scale = cost_scale(cost)
    program = cp.Problem(cp.Minimize(scale * cost @ p), [rows @ z <= 0, mass @ p == 1])
    return GridProgram(program, p, rows.shape[0], grid_line(cells, grid, decay), offsets, bound, mass, scale)


def grid_rows(shifts: np.ndarray, sensitivity: float, grid: int, window: int) -> tuple[int, int]:
    """Upper bounds on the ``(rows, variables)`` of the LP :func:`build_grid_program` writes (the memory estimate)."""
    return privacy_rows_bound(2 * grid * window + 4 * grid, grid * window, grid_shifts(shifts, sensitivity / grid))


def strictly_private_cells(cells: int, period: int, epsilon: float) -> np.ndarray:
    """``e^(-eps k / (2 P))`` per cell: every ratio a grid offset (at most P + 1 cells) reaches is
    below e^eps, except the pairs one period apart in the tail, tight for every member."""
    return np.exp(-epsilon * np.arange(cells) / (2 * period))


def repair_cells(values: np.ndarray, built: GridProgram, strict: np.ndarray) -> tuple[np.ndarray, float]:
    """Clip, normalise, and mix with the strict member by the least weight that removes every violation."""
    p = np.clip(np.asarray(values, dtype=float), 0.0, None)
    p, q = p / (built.mass @ p), strict / (built.mass @ strict)
    return mix(p, q, pair_violation_weight(p, q, built.line, built.offsets, built.bound))

"""Privacy rows over a line of cells through a range-maximum table.

The noise LPs ask ``small value(a) <= large value(a + j)`` for every cell a of a line and
every offset j of a set (``small, large = 1, e^eps`` for the grid LP of a neighbouring set;
``alpha, 1`` for integer noise). Written pair by pair that is one row per (cell, offset):
2 Delta per value for integer noise of sensitivity Delta, and one per grid offset for a wide
interval in V. Offsets come in runs of consecutive integers, and a run asks only that the
*maximum* over a range of cells be within the bound; a range-maximum (sparse) table of
auxiliary variables ``U_k(a) >= max(value(a), ..., value(a + 2^k - 1))`` expresses that with
two rows per cell and level, and any range is covered by two power-of-two blocks
(:func:`range_blocks`). The feasible p are exactly those of the pair rows (tested in
``tests/programs/test_range_max.py`` and ``tests/programs/test_noise_adding.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

__all__ = ["DIRECT_RUN", "Line", "RangeMaxTable", "line_privacy_rows", "offset_runs", "privacy_rows_bound", "range_blocks"]


@dataclass(frozen=True)
class Line:
    """Cells on a line, each a multiple of one free variable: cell i is ``coef[i] * p[free[i]]``.

    The noise LPs' lines: the grid LP's cells of ``[-(c + 2 Delta), c + 2 Delta)`` (mirrored and
    continued by the periodic tail, :func:`dpopt.programs.noise_adding.grid_line`) and the
    integer window with one decayed period each side (:func:`~dpopt.programs.noise_adding.window_line`).
    """

    free: np.ndarray
    coef: np.ndarray

    @property
    def size(self) -> int:
        return self.free.size

    def values(self, p: np.ndarray) -> np.ndarray:
        return self.coef * p[self.free]


#: Runs of at most this many consecutive cell offsets are written one row per (cell, offset);
#: longer runs go through the range-maximum table of :func:`line_privacy_rows`. Measured
#: (V = [0, a] U [1000, 1001], 4 periods, eps = 1; benchmarks/neighbouring_sets.py): with runs
#: of 12-60 offsets the pairs solved 1.0-3.5 times faster than the table, at 100 the table
#: was 1.8 times faster, at 200 (V4) 7 times.
DIRECT_RUN = 64


def offset_runs(offsets: np.ndarray) -> np.ndarray:
    """Maximal runs ``[lo, hi]`` of consecutive integers in the sorted ``offsets`` (a (r, 2) array)."""
    j = np.sort(np.asarray(offsets, dtype=np.int64))
    if j.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    breaks = np.flatnonzero(np.diff(j) != 1)
    return np.column_stack([j[np.concatenate([[0], breaks + 1])], j[np.concatenate([breaks, [j.size - 1]])]])


@dataclass(frozen=True)
class RangeMaxTable:
    """Variables ``U_k(a) >= max(value(a), ..., value(a + 2^k - 1))`` for k = 1..levels over a line of ``size`` cells.

    ``U_0`` is the line cell itself. Column of ``U_k(a)`` (k >= 1): ``first + start[k] + a``.
    """

    size: int
    levels: int
    first: int

    @property
    def lengths(self) -> list[int]:
        """Variables of each level k = 1..levels (blocks of 2^k cells that fit on the line)."""
        return [self.size - (1 << k) + 1 for k in range(1, self.levels + 1)]

    @property
    def start(self) -> np.ndarray:
        return np.concatenate([[0, 0], np.cumsum(self.lengths)])[: self.levels + 1]

    @property
    def variables(self) -> int:
        return int(sum(self.lengths))


def range_blocks(size: int, run: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two power-of-two blocks covering the cells ``a = b - j`` (j in the run) of each target cell b.

    Returns ``(b, k, first, second)``: for every b whose range ``[b - hi, b - lo]`` meets the line
    of ``size`` cells, the blocks ``[first, first + 2^k)`` and ``[second, second + 2^k)`` whose union
    is exactly that range clipped to the line (``first == second`` when one block is the range).
    """
    lo, hi = run
    b = np.arange(size)
    s, e = np.maximum(b - hi, 0), np.minimum(b - lo, size - 1)
    keep = s <= e
    b, s, e = b[keep], s[keep], e[keep]
    k = np.floor(np.log2(e - s + 1)).astype(np.int64)
    return b, k, s, e - (1 << k) + 1


def privacy_rows_bound(size: int, free: int, offsets: np.ndarray, direct_run: int = DIRECT_RUN) -> tuple[int, int]:
    """Upper bounds on the ``(rows, variables)`` of :func:`line_privacy_rows` on a line of ``size``
    cells, from the offsets' runs alone (for memory estimates; ranges clipped at the ends of the
    line may need fewer rows and levels): one row per cell and offset of a short run, two per
    cell and long run, and two rows and one variable per cell and level."""
    lengths = np.diff(offset_runs(offsets), axis=1)[:, 0] + 1
    long = lengths > direct_run
    levels = int(np.log2(min(int(lengths.max()), size))) if long.any() else 0
    rows = size * (int(lengths[~long].sum()) + 2 * int(long.sum()) + 2 * levels)
    return rows, free + RangeMaxTable(size, levels, free).variables


def line_privacy_rows(line: Line, free: int, offsets: np.ndarray, small: float, large: float,
                      direct_run: int = DIRECT_RUN) -> tuple[sparse.csr_array, RangeMaxTable]:
    """Rows ``R @ [p, U] <= 0`` (p: the ``free`` cells) whose feasible p are exactly those with
    ``small value(a) <= large value(a + j)`` for every line cell a and offset j with both on the line.

    A run of offsets ``[lo, hi]`` asks ``small max_{a in [b - hi, b - lo]} value(a) <= large value(b)``
    for every cell b. Long runs bound that maximum by two overlapping power-of-two blocks
    of a range-maximum (sparse) table, ``U_k(a) >= U_(k-1)(a)`` and
    ``U_k(a) >= U_(k-1)(a + 2^(k-1))``: any feasible U is at least the blocks' maxima, and the
    maxima themselves are feasible whenever p is private, so the projection onto p is exact.
    Rows per cell: one per offset of the short runs (at most ``direct_run`` offsets), two per
    long run, two per level, instead of one per offset (V = [0, Delta] on 200 cells per
    Delta: 20 against 400).
    Every row has two non-zeros. Returns the rows and the table (its variables follow the free cells).
    """
    size = line.size
    runs = offset_runs(offsets)
    short = runs[:, 1] - runs[:, 0] + 1 <= direct_run
    ranges = [range_blocks(size, (int(lo), int(hi))) for lo, hi in runs[~short]]
    levels = max((int(k.max()) for _, k, _, _ in ranges if k.size), default=0)
    table = RangeMaxTable(size, levels, free)
    start = table.start

    def column(level: np.ndarray, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Column and coefficient of ``U_level(cell)`` (level 0: the line cell, a multiple of a free cell)."""
        at_line = level == 0
        col = np.where(at_line, line.free[cell], table.first + start[level] + cell)
        return col, np.where(at_line, line.coef[cell], 1.0)

    lhs: list[tuple[np.ndarray, np.ndarray, float]] = []  # (level, cell, factor) of the side that must be smaller
    rhs: list[tuple[np.ndarray, np.ndarray, float]] = []  # (level, cell, factor) of the side that bounds it
    for k in range(1, levels + 1):
        a = np.arange(size - (1 << k) + 1)
        for shift in (0, 1 << (k - 1)):
            lhs.append((np.full(a.size, k - 1), a + shift, 1.0))
            rhs.append((np.full(a.size, k), a, 1.0))
    for b, k, first, second in ranges:
        two = second != first  # a range of exactly 2^k cells is one block
        for level, cell, target in ((k, first, b), (k[two], second[two], b[two])):
            lhs.append((level, cell, small))
            rhs.append((np.zeros(target.size, dtype=np.int64), target, large))
    for j in np.concatenate([np.arange(lo, hi + 1) for lo, hi in runs[short]] or [np.zeros(0, dtype=np.int64)]):
        a = np.arange(max(0, -j), min(size, size - j))
        lhs.append((np.zeros(a.size, dtype=np.int64), a, small))
        rhs.append((np.zeros(a.size, dtype=np.int64), a + j, large))
    cols, data = [], []
    for side, sign in ((lhs, 1.0), (rhs, -1.0)):
        for level, cell, factor in side:
            col, coef = column(level, cell)
            cols.append(col)
            data.append(sign * factor * coef)
    n_rows = int(sum(cell.size for _, cell, _ in lhs))
    rows = np.arange(n_rows)
    matrix = sparse.csr_array((np.concatenate(data or [np.zeros(0)]), (np.concatenate([rows, rows]), np.concatenate(cols or [np.zeros(0, dtype=np.int64)]))),
                              shape=(n_rows, free + table.variables))
    return matrix, table

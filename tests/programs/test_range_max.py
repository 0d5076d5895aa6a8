"""Privacy rows through a range-maximum table (dpopt.programs.range_max): runs, block covers, and rows on a plain line."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.programs.range_max import Line, line_privacy_rows, offset_runs, range_blocks
from tests.conftest import examples


def block_maxima(values: np.ndarray, levels: int) -> list[np.ndarray]:
    """``U_k(a) = max(values[a : a + 2^k])`` for k = 1..levels, computed directly."""
    windows = np.lib.stride_tricks.sliding_window_view
    return [windows(values, 1 << k).max(axis=1) for k in range(1, levels + 1)]


def test_offset_runs():
    np.testing.assert_array_equal(offset_runs(np.array([-7, -6, -5, -2, -1, 1, 2, 5, 6, 7])), [[-7, -5], [-2, -1], [1, 2], [5, 7]])
    assert offset_runs(np.zeros(0)).shape == (0, 2)


@settings(max_examples=examples(100))
@given(size=st.integers(1, 80), lo=st.integers(-90, 90), length=st.integers(1, 90))
def test_two_blocks_cover_exactly_each_targets_range(size, lo, length):
    hi = lo + length - 1
    targets, k, first, second = range_blocks(size, (lo, hi))
    expected = {b: set(range(max(b - hi, 0), min(b - lo, size - 1) + 1)) for b in range(size)}
    assert sorted(targets) == [b for b in range(size) if expected[b]]
    for b, level, one, two in zip(targets, k, first, second):
        assert set(range(one, one + (1 << level))) | set(range(two, two + (1 << level))) == expected[b]


@settings(max_examples=examples(60))
@given(size=st.integers(1, 40), offsets=st.sets(st.integers(-30, 30).filter(bool), min_size=1, max_size=40),
       direct_run=st.sampled_from([1, 2, 5]), small=st.sampled_from([1.0, 0.5]), seed=st.integers(0, 2**32 - 1))
def test_a_point_is_feasible_iff_every_pair_is(size, offsets, direct_run, small, seed):
    """On the identity line: p with its exact block maxima meets every row iff every pair holds; otherwise
    no choice of U helps, because each row's U side is at least the maximum it stands for."""
    line = Line(np.arange(size), np.ones(size))
    j = np.array(sorted(offsets))
    rows, table = line_privacy_rows(line, size, j, small, 1.0, direct_run)
    p = np.random.default_rng(seed).uniform(0.5, 1.0, size)
    pairs_hold = all(small * p[a] <= p[a + k] for a in range(size) for k in j if 0 <= a + k < size)
    assert bool(np.all(rows @ np.concatenate([p, *block_maxima(p, table.levels)]) <= 0)) == pairs_hold


@settings(max_examples=examples(80))
@given(size=st.integers(1, 50), offsets=st.sets(st.integers(-40, 40).filter(bool), min_size=1, max_size=60),
       direct_run=st.sampled_from([1, 2, 5, 64]))
def test_the_rows_bound_each_cell_by_exactly_its_partners(size, offsets, direct_run):
    """Read the rows back on the identity line: every bound on ``value(b)`` covers, through the table's blocks,
    exactly the cells ``b - j`` (j an offset); and every table row says a block is at least one of its halves."""
    rows, table = line_privacy_rows(Line(np.arange(size), np.ones(size)), size, np.array(sorted(offsets)), 1.0, 2.0, direct_run)
    starts = np.concatenate([[0], np.cumsum(table.lengths)])

    def cells(column: int) -> set[int]:  # the cells a column stands for (a cell, or a block of the table)
        if column < size:
            return {column}
        k = int(np.searchsorted(starts, column - size, side="right"))
        a = column - size - int(starts[k - 1])
        return set(range(a, a + (1 << k)))

    covered: dict[int, set[int]] = {b: set() for b in range(size)}
    for row in rows:
        (low,), (high,) = row.indices[row.data > 0], row.indices[row.data < 0]
        if row.data.min() == -2.0:  # small value(a) <= 2 value(b): a bound on cell b
            covered[int(high)] |= cells(int(low))
        else:  # a block is at least one of its halves
            assert cells(int(low)) <= cells(int(high)) and len(cells(int(low))) * 2 == len(cells(int(high)))
    for b in range(size):
        assert covered[b] == {b - j for j in offsets if 0 <= b - j < size}

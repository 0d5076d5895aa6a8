"""Hypothesis strategies for random problem instances."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


@st.composite
def monotone_losses(draw: st.DrawFn, n: int) -> np.ndarray:
    """A random loss table non-decreasing in |i - r| on every row.

    Row i gets increasing levels f(0) <= f(1) <= ...; the cell at distance d on
    either side takes a value in [f(d), f(d+1)], so both sides stay ordered.
    """
    steps = draw(
        st.lists(st.lists(st.floats(0.0, 3.0), min_size=n + 2, max_size=n + 2), min_size=n + 1, max_size=n + 1)
    )
    levels = np.cumsum(np.array(steps), axis=1)
    seed = draw(st.integers(0, 2**32 - 1))
    where = np.random.default_rng(seed).random((n + 1, n + 1))
    i, r = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    d = np.abs(i - r)
    low = np.take_along_axis(levels, d, axis=1)
    high = np.take_along_axis(levels, d + 1, axis=1)
    return low + where * (high - low)


@st.composite
def side_information(draw: st.DrawFn, n: int) -> list[int]:
    return sorted(draw(st.sets(st.integers(0, n), min_size=1, max_size=n + 1)))

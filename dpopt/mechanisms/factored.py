"""Mechanisms stored as the geometric mechanism followed by a sparse remap: x = G T.

Theorem 1 of Gupte & Sundararajan says an optimal count mechanism factors as
``x = G_{n,alpha} T`` with T row-stochastic, and the optimal T is very sparse. Storing
``alpha`` and T costs O(nnz(T)) instead of (n+1)^2; the dense matrix is formed only
when asked, in row blocks. Privacy holds by construction: ``alpha G[i] <= G[i+1]``
entrywise, so ``alpha (G T)[i] <= (G T)[i+1]`` for any non-negative T (post-processing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
from scipy import sparse

from dpopt.certificates import Certificate
from dpopt.mechanisms.geometric import column_weights, exact_geometric_release, geometric_row_is_normal, geometric_rows
from dpopt.programs.geometric_moments import kernel_moments
from dpopt.exact_sampling import exact_choice
from dpopt.sampling import RandomSource
from dpopt.validation import fail

__all__ = ["ColumnLogValues", "FactoredMechanism"]

#: Rows per block when a dense product is streamed (memory ~ BLOCK * (n+1) floats).
BLOCK = 256
#: Losses whose expected losses :meth:`FactoredMechanism.named_row_losses` sums by recurrences.
NAMED_ROW_LOSSES = ("absolute", "squared", "zero_one")
#: Zero-one losses below this over (1 - alpha) are summed densely
#: (:meth:`FactoredMechanism.expected_losses`): the recurrences give ``sum_r x[i, r] - x[i, i]``,
#: a difference of sums near 1 whose rounding (about 2 u / (1 - alpha), u = 2**-53) is then
#: below 2e-12 of the loss.
ZERO_ONE_DENSE_BELOW = 2.0**-12


def group_ranks(sizes: np.ndarray) -> np.ndarray:
    """``0, 1, .., sizes[0]-1, 0, 1, .., sizes[1]-1, ..``: positions inside consecutive groups."""
    return np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)


def budget_slices(work: np.ndarray, budget: int) -> Iterator[slice]:
    """Consecutive slices of items whose cumulative ``work`` grows by about ``budget`` each
    (at least one item a slice, so an item over the budget comes alone)."""
    lo = 0
    while lo < work.size:
        done = work[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(work, done + budget, side="right")))
        yield slice(lo, hi)
        lo = hi


@dataclass(frozen=True)
class ColumnLogValues:
    """``log_value[k] = ln x[row[k], column[k]]``, grouped by column, rows ascending (a row
    is repeated where a long column's span is cut into overlapping pieces); ``span_head`` and
    ``span_tail`` mark the first and last row of the column's whole span."""

    column: np.ndarray
    row: np.ndarray
    log_value: np.ndarray
    span_head: np.ndarray
    span_tail: np.ndarray


@dataclass(frozen=True, eq=False)
class FactoredMechanism:
    """``x = G_{n,alpha} T`` with T a sparse row-stochastic (n+1) x (n+1) matrix.

    Attributes
    ----------
    n : int
    alpha : float
    remap : scipy.sparse.csr_array
        Row-stochastic, non-negative; row r is the consumer's distribution over
        reported values when the geometric mechanism outputs r.
    """

    n: int
    alpha: float
    remap: sparse.csr_array

    def __post_init__(self) -> None:
        t = sparse.csr_array(self.remap)
        if t.shape != (self.n + 1, self.n + 1):
            raise fail("remap", "FactoredMechanism", f"a ({self.n + 1}, {self.n + 1}) matrix", t.shape)
        if t.nnz and t.data.min() < 0:
            raise fail("remap", "FactoredMechanism", "a matrix with non-negative entries", float(t.data.min()))
        t.sum_duplicates()
        t.eliminate_zeros()
        object.__setattr__(self, "remap", t)

    @classmethod
    def from_remap(cls, n: int, alpha: float, remap: sparse.sparray | np.ndarray) -> "FactoredMechanism":
        """Clip a solver's remap to >= 0 and renormalise its rows (any such T keeps G's privacy)."""
        t = sparse.csr_array(remap, dtype=float, copy=True)  # the caller's matrix stays as it was
        t.data = np.clip(t.data, 0.0, None)
        t.eliminate_zeros()
        sums = np.asarray(t.sum(axis=1)).ravel()
        if np.any(sums <= 0):
            raise fail("remap", "FactoredMechanism", "rows with positive mass", int(np.argmin(sums)))
        t.data /= np.repeat(sums, np.diff(t.indptr))
        return cls(n=n, alpha=alpha, remap=t)

    def blocks(self, rows: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(row indices, x[rows])`` in blocks of :data:`BLOCK` rows."""
        every = np.arange(self.n + 1) if rows is None else np.asarray(rows)
        t_transposed = self.remap.T.tocsr()
        for start in range(0, every.size, BLOCK):
            chunk = every[start : start + BLOCK]
            g = geometric_rows(self.n, self.alpha, chunk)
            yield chunk, np.asarray((t_transposed @ g.T).T)

    def dense(self) -> np.ndarray:
        """The full (n+1) x (n+1) mechanism matrix."""
        return np.vstack([block for _, block in self.blocks()])

    def row_losses(self, loss_rows: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> np.ndarray:
        """Exact expected losses ``sum_r l(i, r) x[i, r]`` for i in ``rows``."""
        out = []
        for chunk, x in self.blocks(rows):
            out.append(np.einsum("ij,ij->i", loss_rows(chunk), x))
        return np.concatenate(out) if out else np.zeros(0)

    def expected_losses(self, loss: str, loss_rows: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> np.ndarray:
        """Exact expected losses on ``rows`` by the cheaper route: :meth:`named_row_losses` for a
        loss it knows (``loss``: the loss's name) unless the dense sums of :meth:`row_losses`,
        n + 1 a row, are fewer (a few rows asked for, and T moving rows far)."""
        rows = np.asarray(rows)
        if loss not in NAMED_ROW_LOSSES or self.named_work(loss) > rows.size * (self.n + 1):
            return self.row_losses(loss_rows, rows)
        losses = self.named_row_losses(loss, rows)
        if loss == "zero_one":
            small = losses < ZERO_ONE_DENSE_BELOW / (1.0 - self.alpha)  # the recurrences' rounding grows like 1 / (1 - alpha)
            if small.any():
                losses[small] = self.row_losses(loss_rows, rows[small])
        return losses

    def named_row_losses(self, loss: str, rows: np.ndarray, budget: int = 1 << 22) -> np.ndarray:
        """:meth:`row_losses` for the named losses ``"absolute"``, ``"squared"`` and ``"zero_one"`` in
        O(n + sum over entries of |r' - r|) instead of O(|rows| n), by kernel recurrences.

        With ``m0_r = sum_r' T[r, r']`` (1 up to rounding), ``G[i, r] = g_r alpha^|i-r|``
        and the sums of :func:`~dpopt.programs.geometric_moments.kernel_moments`:

        * squared: ``(i - r')^2 = (i - r)^2 + 2 (i - r)(r - r') + (r - r')^2`` gives
          ``E_i = second(g m0) - 2 signed_first(g m1) + total(g m2)`` with the row moments
          ``m1_r = sum T (r - r')``, ``m2_r = sum T (r - r')^2``;
        * absolute: ``sum_r' T[r, r'] |i - r'|`` equals ``(i - r) m0_r + D_r`` (i >= r) or
          ``(r - i) m0_r - D_r`` (i < r), ``D_r = r m0_r - sum T r'``, except for i strictly
          between r' and r (or at r, for r' > r), where the entry adds
          ``2 T[r, r'] |i - r'|`` more; so ``E_i = absolute_first(g m0) + forward_0(g D) -
          backward_0(g D) + g D`` plus those corrections, one term per (entry, i between);
        * zero-one: ``E_i = sum_r G[i, r] m0_r - x[i, i]`` with ``x[i, i] = sum over the entries
          (r, i) of column i of G[i, r] T[r, i]``: O(n + nnz(T)). A difference, so
          :meth:`expected_losses` sums losses below :data:`ZERO_ONE_DENSE_BELOW` densely.

        Every term is a float sum like the dense route's (tested against it to 1e-12); the
        dense route (:meth:`row_losses`) stays the reference and the fallback for other
        losses. Used for every upper bound of the column generation (a dense evaluation at
        n = 10,000 took 1.3 s; this one, milliseconds). The corrections are summed ``budget``
        (entry, i) pairs at a time.
        """
        if loss not in NAMED_ROW_LOSSES:
            raise fail("loss", "FactoredMechanism.named_row_losses", "'absolute', 'squared' or 'zero_one'", loss)
        t = self.remap
        r = self._entry_rows()
        g = column_weights(self.n, self.alpha)
        if loss == "zero_one":  # sum_r G[i, r] m0_r - x[i, i], x[i, i] summed over the entries of column i
            stay = t.data * g[r] * np.exp(np.abs(t.indices - r) * np.log(self.alpha))
            total = kernel_moments(g * np.bincount(r, weights=t.data, minlength=self.n + 1), self.alpha, 0).total
            return (total - np.bincount(t.indices, weights=stay, minlength=self.n + 1))[np.asarray(rows)]
        shift = (r - t.indices).astype(float)  # r - r' of every entry

        def row_sums(values: np.ndarray) -> np.ndarray:
            return np.bincount(r, weights=values, minlength=self.n + 1)

        m0 = row_sums(t.data)
        if loss == "squared":
            sums = kernel_moments(g * np.stack([m0, row_sums(t.data * shift), row_sums(t.data * shift**2)]), self.alpha)
            losses = sums.second[0] - 2.0 * sums.signed_first[1] + sums.total[2]
        else:
            sums = kernel_moments(g * np.stack([m0, row_sums(t.data * shift)]), self.alpha, 1)
            losses = sums.absolute_first[0] + sums.forward[0][1] - sums.backward[0][1] + sums.weights[1]
            losses = losses + self._absolute_corrections(r, g, budget)
        return losses[np.asarray(rows)]

    def named_work(self, loss: str) -> int:
        """How many terms :meth:`named_row_losses` sums: n + 1 + nnz(T), plus for absolute loss
        one per (entry, row between); :meth:`row_losses` sums n + 1 per row asked for."""
        work = self.n + 1 + self.remap.nnz
        if loss == "absolute":
            work += int(self._correction_ranges(self._entry_rows())[1].sum())
        return work

    def _entry_rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.n + 1), np.diff(self.remap.indptr))

    def _correction_ranges(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First row and number of rows each entry (r, r') corrects: r'+1..r-1 or r..r'-1."""
        target = self.remap.indices
        below = target < r
        return np.where(below, target + 1, r), np.where(below, r - target - 1, target - r)

    def _absolute_corrections(self, r: np.ndarray, g: np.ndarray, budget: int) -> np.ndarray:
        """``sum over entries (r, r') of G[i, r] 2 T[r, r'] |i - r'|`` for i strictly between r' and
        r (r' < r) or in r..r'-1 (r' > r): see :meth:`named_row_losses`."""
        t = self.remap
        target = t.indices
        start, size = self._correction_ranges(r)
        entries = np.flatnonzero(size > 0)
        out = np.zeros(self.n + 1)
        log_alpha = np.log(self.alpha)
        for part in budget_slices(np.cumsum(size[entries]), budget):
            chosen = entries[part]
            i = np.repeat(start[chosen], size[chosen]) + group_ranks(size[chosen])
            k = np.repeat(chosen, size[chosen])
            values = 2.0 * t.data[k] * g[r[k]] * np.abs(i - target[k]) * np.exp(np.abs(i - r[k]) * log_alpha)
            out += np.bincount(i, weights=values, minlength=self.n + 1)
        return out

    def column_log_values(self, budget: int = 1 << 20) -> Iterator["ColumnLogValues"]:
        """``ln x[i, c]`` for every non-empty column c of T and every i in its row span.

        Column c of T with non-zeros in rows ``a..b`` gives ``x[i, c] = alpha^(a-i) x[a, c]``
        for ``i < a`` and ``alpha^(i-b) x[b, c]`` for ``i > b`` (every term of
        ``sum_r g_r alpha^|i-r| T[r, c]`` shrinks by the same factor), so only the span
        ``a..b`` needs computing: ``sum_c (b_c - a_c + 1) nnz_c`` log-sum-exps, O(nnz)
        for a banded T, instead of (n+1) nnz. Log space keeps entries far from the
        diagonal (alpha^|i-r| below 1e-308) exact in ratio. Yields groups of columns of
        at most about ``budget`` terms each; a column larger than that alone comes in
        pieces of its span that overlap by one row (``span_head``/``span_tail`` mark its
        true ends).
        """
        t = self.remap.tocsc()
        t.sort_indices()
        counts = np.diff(t.indptr)
        nonempty = np.flatnonzero(counts)
        first = t.indices[t.indptr[nonempty]]
        span = t.indices[t.indptr[nonempty + 1] - 1] - first + 1
        # a column whose span x entries exceeds the budget is cut into pieces of rows that
        # overlap by one row, so every adjacent pair still lies in one piece (two counts far
        # apart, n = 10,000: one column of 5000 entries over 5000 rows took 955 MB at once)
        piece_rows = np.where(span * counts[nonempty] > budget, np.maximum(2, budget // np.maximum(counts[nonempty], 1)), span)
        pieces = np.where(span > piece_rows, -(-(span - 1) // np.maximum(piece_rows - 1, 1)), 1)
        piece_col = np.repeat(np.arange(nonempty.size), pieces)
        piece_start = first[piece_col] + group_ranks(pieces) * (piece_rows[piece_col] - 1)
        piece_size = np.minimum(piece_rows[piece_col], first[piece_col] + span[piece_col] - piece_start)
        work = np.cumsum(piece_size * counts[nonempty[piece_col]])
        base = np.log(column_weights(self.n, self.alpha))[t.indices] + np.log(t.data)
        log_alpha = np.log(self.alpha)
        for part in budget_slices(work, budget):
            chosen = np.arange(part.start, part.stop)
            group_piece = np.repeat(chosen, piece_size[chosen])  # one group per (piece, i in it)
            group_col = piece_col[group_piece]
            group_i = piece_start[group_piece] + group_ranks(piece_size[chosen])
            sizes = counts[nonempty[group_col]]
            entry = t.indptr[nonempty[np.repeat(group_col, sizes)]] + group_ranks(sizes)
            values = base[entry] + np.abs(np.repeat(group_i, sizes) - t.indices[entry]) * log_alpha
            starts = np.cumsum(sizes) - sizes
            peak = np.maximum.reduceat(values, starts)
            total = np.add.reduceat(np.exp(values - np.repeat(peak, sizes)), starts)
            yield ColumnLogValues(column=nonempty[group_col], row=group_i, log_value=peak + np.log(total),
                                  span_head=group_i == first[group_col], span_tail=group_i == first[group_col] + span[group_col] - 1)

    def certificate(self, epsilon: float, budget: int = 1 << 20) -> Certificate:
        """Measure the privacy of ``G T`` in log space over the row spans of T's columns.

        Adjacent rows inside a column's span are measured from
        :meth:`column_log_values` (``budget`` terms at a time); outside it the ratio is
        exactly alpha (see there). Row sums are measured as ``G (T 1)`` by the kernel
        recurrences.
        """
        n, log_alpha = self.n, float(np.log(self.alpha))
        # until a larger loss is found: rows 0 and 1 of a non-empty column (every row of G T
        # alike, loss 0), not of an empty one, whose entries are 0
        worst, worst_pair = 0.0, (0, 1, int(self.remap.indices.min()) if self.remap.nnz else 0)
        lowest = np.inf
        for part in self.column_log_values(budget):
            # neighbours in the same column (a repeated row where a column is cut differs by 0)
            same = (part.column[1:] == part.column[:-1]) & (part.row[1:] == part.row[:-1] + 1)
            loss = np.where(same, np.abs(np.diff(part.log_value)), 0.0)
            if loss.size and loss.max() > worst:
                k = int(np.argmax(loss))
                worst, worst_pair = float(loss[k]), (int(part.row[k]), int(part.row[k]) + 1, int(part.column[k]))
            heads, tails = np.flatnonzero(part.span_head), np.flatnonzero(part.span_tail)
            lowest = min(lowest, float(part.log_value.min()))
            # the column's extremes: x[0, c] and x[n, c], alpha^distance beyond its span
            lowest = min(lowest, float(np.min(part.log_value[heads] + part.row[heads] * log_alpha, initial=np.inf)))
            lowest = min(lowest, float(np.min(part.log_value[tails] + (n - part.row[tails]) * log_alpha, initial=np.inf)))
            # a span ending before row 0 or row n meets the geometric tail: ratio exactly alpha
            for ends, beyond, step in ((heads, part.row[heads] > 0, -1), (tails, part.row[tails] < n, 1)):
                if beyond.any() and -log_alpha > worst:
                    end = ends[np.argmax(beyond)]
                    i, c = int(part.row[end]), int(part.column[end])
                    worst, worst_pair = -log_alpha, (min(i, i + step), max(i, i + step), c)
        if np.bincount(self.remap.indices, minlength=n + 1).min() == 0:
            lowest = -np.inf  # an empty column of T is a zero column of x
        weights = column_weights(n, self.alpha) * np.asarray(self.remap.sum(axis=1)).ravel()
        row_sums = kernel_moments(weights, self.alpha, 0).total
        return Certificate.measured(
            worst,
            epsilon,
            worst_pair,
            float(np.exp(lowest)),
            float(np.abs(row_sums - 1.0).max()),
            repair="clip+renormalise remap",
            method="by_construction: geometric mechanism + stochastic remap; measured in log space",
        )

    def sample(self, row: int, count: int, source: RandomSource) -> np.ndarray:
        """Draw through the factors, exactly (:mod:`dpopt.exact_sampling`): r ~ G[row], then the release ~ T[r].

        G's row is drawn from its float64 entries while they are normal floats, and
        otherwise as the two-sided geometric itself (:func:`exact_geometric_release`):
        the certificate measures G T in log space, where alpha^600 is no smaller than it
        should be, but the float row rounds it to a subnormal or to 0, which a neighbour's
        row need not (a zero beside a non-zero: an infinite loss in what is released).
        """
        if geometric_row_is_normal(self.n, self.alpha, row):
            middle = exact_choice(geometric_rows(self.n, self.alpha, np.array([row]))[0], count, source)
        else:
            middle = exact_geometric_release(row, self.n, self.alpha, count, source)
        out = np.empty(count, dtype=int)
        t = self.remap
        for r in np.unique(middle):
            where = middle == r
            span = slice(t.indptr[r], t.indptr[r + 1])
            out[where] = t.indices[span][exact_choice(t.data[span], int(where.sum()), source)]
        return out


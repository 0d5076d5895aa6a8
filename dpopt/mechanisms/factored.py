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

__all__ = ["FactoredMechanism"]

#: Rows per block when a dense product is streamed (memory ~ BLOCK * (n+1) floats).
BLOCK = 256
#: Losses whose expected losses :meth:`FactoredMechanism.named_row_losses` sums by recurrences.
NAMED_ROW_LOSSES = ("absolute", "squared", "zero_one")
#: Zero-one losses below this are summed densely (:meth:`FactoredMechanism.expected_losses`):
#: the recurrences give ``1 - x[i, i]`` plus the rows' rounding, a difference whose rounding
#: (a few u, u = 2**-53) is then below 2e-12 of the loss.
ZERO_ONE_DENSE_BELOW = 2.0**-12
#: Absolute and squared losses below this are summed densely too, while those rows' dense sums
#: stay within :data:`SMALL_LOSS_DENSE_WORK` entries: the recurrences add terms of the kernel's
#: and T's moments, whose rounding (1e-17 to 3e-14 absolute, measured) is no longer small
#: against a loss of 1e-12 (S = three far counts: 2.6e-5 relative) or ~0 (S = two counts
#: 6,000 apart, alpha = 0.827: -2.8e-14, below the certified lower bound of 4.6e-241).
SMALL_LOSS_DENSE_BELOW = 2.0**-12
#: The most matrix entries summed densely for those small losses (:data:`SMALL_LOSS_DENSE_BELOW`).
SMALL_LOSS_DENSE_WORK = 1 << 25


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
        n + 1 a row, are fewer (a few rows asked for, and T moving rows far). Small losses, where
        the recurrences' rounding is not small against them, are summed densely
        (:data:`ZERO_ONE_DENSE_BELOW`, :data:`SMALL_LOSS_DENSE_BELOW`)."""
        rows = np.asarray(rows)
        if loss not in NAMED_ROW_LOSSES or self.named_work(loss) > rows.size * (self.n + 1):
            return self.row_losses(loss_rows, rows)
        losses = self.named_row_losses(loss, rows)
        if loss == "zero_one":
            small = losses < ZERO_ONE_DENSE_BELOW
        else:
            small = losses < SMALL_LOSS_DENSE_BELOW
            if small.sum() * (self.n + 1) > SMALL_LOSS_DENSE_WORK:  # many rows, each with small terms
                small[:] = False
        if small.any():
            losses[small] = self.row_losses(loss_rows, rows[small])
        return np.maximum(losses, 0.0)  # every named loss is >= 0: a rounding below 0 is none

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
        * zero-one: ``E_i = sum_r G[i, r] m0_r - x[i, i] = 1 - x[i, i] + sum_r G[i, r] (m0_r - 1)``
          (G's rows sum to 1) with ``x[i, i] = sum over the entries (r, i) of column i of
          G[i, r] T[r, i]``: O(n + nnz(T)). The kernel sum runs over the rows' rounding
          ``m0_r - 1`` only (summing ``G m0`` itself rounded by ~u / (1 - alpha), which at
          alpha = 0.9999 sent every row to the dense sums: 17 s at n = 20,000). A
          difference, so :meth:`expected_losses` sums losses below
          :data:`ZERO_ONE_DENSE_BELOW` densely.

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
        if loss == "zero_one":  # 1 - x[i, i] + sum_r G[i, r] (m0_r - 1), x[i, i] summed over the entries of column i
            stay = t.data * g[r] * np.exp(np.abs(t.indices - r) * np.log(self.alpha))
            rounding = kernel_moments(g * (np.bincount(r, weights=t.data, minlength=self.n + 1) - 1.0), self.alpha, 0).total
            return ((1.0 - np.bincount(t.indices, weights=stay, minlength=self.n + 1)) + rounding)[np.asarray(rows)]
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

    def certificate(self, epsilon: float) -> Certificate:
        """Measure the privacy of ``G T`` in log space from O(nnz(T)) values, exactly.

        Column c of T with entries in rows ``r_1 < .. < r_k`` gives, for i between two
        consecutive entries p = r_m and q = r_(m+1),
        ``x[i, c] = L alpha^(i - p) + R alpha^(q - i)`` with L the column's mass in rows <= p
        seen from p and R its mass in rows >= q seen from q (:func:`_column_log_sums`). The
        ratio ``x[i+1, c] / x[i, c] = alpha + (1/alpha - alpha) R' / (L' + R')`` (primes:
        the two terms at i) rises with i, so the largest loss inside the gap is at one of
        its two ends, and ``ln x`` is convex there, so its least value is at the integer
        points beside ``i* = (p + q) / 2 + (ln R - ln L) / (2 ln alpha)``. Outside the span
        ``r_1..r_k`` every ratio is exactly alpha. So four values a gap and two a column
        measure every adjacent pair and the least entry: O(nnz) in all, where evaluating
        the whole span costs ``sum_c span_c nnz_c`` (the zero-one flow's remap at alpha =
        0.999, n = 30,000: 17 s; tested against the dense matrix). Row sums are measured as
        ``G (T 1)`` by the kernel recurrences.
        """
        n, log_alpha = self.n, float(np.log(self.alpha))
        t = self.remap.tocsc()
        t.sort_indices()
        counts = np.diff(t.indptr)
        rows = t.indices.astype(np.int64)
        columns = np.repeat(np.arange(n + 1), counts)
        log_weight = np.log(column_weights(n, self.alpha))[rows] + np.log(t.data)
        from_left, from_right = _column_log_sums(rows, log_weight, counts, log_alpha)
        # gaps between consecutive entries of a column: e and e + 1
        gap = np.flatnonzero(columns[1:] == columns[:-1])
        p, width = rows[gap], rows[gap + 1] - rows[gap]
        left, right = from_left[gap], from_right[gap + 1]

        def log_x(step: np.ndarray) -> np.ndarray:  # ln x[p + step, c] inside the gaps
            return np.logaddexp(left + step * log_alpha, right + (width - step) * log_alpha)

        # until a larger loss is found: rows 0 and 1 of a non-empty column (loss 0 there)
        worst, worst_pair = 0.0, (0, 1, int(columns[0]) if rows.size else 0)
        magnitude = 0.0  # the largest |ln x| a measured loss is a difference of
        for start in (np.zeros_like(width), width - 1):  # the gap's first and last adjacent pair
            upper, lower = log_x(start + 1), log_x(start)
            loss = np.abs(upper - lower)
            if loss.size:
                magnitude = max(magnitude, float(np.abs(upper).max()), float(np.abs(lower).max()))
            if loss.size and loss.max() > worst:
                k = int(np.argmax(loss))
                worst, worst_pair = float(loss[k]), (int(p[k] + start[k]), int(p[k] + start[k]) + 1, int(columns[gap[k]]))
        first, last = t.indptr[:-1][counts > 0], t.indptr[1:][counts > 0] - 1
        head_log, tail_log = _entry_log_values(first, from_left, from_right, rows, log_alpha, columns), from_left[last]
        beyond = np.flatnonzero((rows[first] > 0) | (rows[last] < n))  # a span ending before row 0 or n meets the geometric tail
        if beyond.size and -log_alpha > worst:
            k = beyond[0]
            i = int(rows[first[k]]) - 1 if rows[first[k]] > 0 else int(rows[last[k]])
            worst, worst_pair = -log_alpha, (i, i + 1, int(columns[first[k]]))
        lowest = min(float(np.min(head_log + rows[first] * log_alpha, initial=np.inf)),
                     float(np.min(tail_log + (n - rows[last]) * log_alpha, initial=np.inf)))
        if gap.size:
            centre = np.clip(0.5 * width + (right - left) / (2.0 * log_alpha), 0, width)
            lowest = min(lowest, float(np.min(np.minimum(log_x(np.floor(centre)), log_x(np.ceil(centre))))))
        if np.any(counts == 0):
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
            log_magnitude=magnitude,
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


def _column_log_sums(rows: np.ndarray, log_weight: np.ndarray, counts: np.ndarray, log_alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """For the entries of T in CSC order (rows ascending in each column), with
    ``w = g_r T[r, c]`` (``log_weight``): ``ln sum`` of the column's w over rows <= r, each
    times ``alpha^(r - r')``, and the same over rows >= r.

    Two recurrences, ``A_m = logaddexp(A_(m-1) + (r_m - r_(m-1)) ln alpha, ln w_m)`` and its
    mirror, run in lockstep over every column: one vectorised step per position in a
    column, so max(counts) steps in all.
    """
    from_left, from_right = log_weight.copy(), log_weight.copy()
    rank = group_ranks(counts)  # position of each entry in its column
    size = np.repeat(counts, counts)
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(rank, minlength=int(counts.max(initial=0))))])
    for m in range(1, bounds.size - 1):
        e = by_rank[bounds[m] : bounds[m + 1]]
        from_left[e] = np.logaddexp(from_left[e - 1] + (rows[e] - rows[e - 1]) * log_alpha, log_weight[e])
    from_end = size - 1 - rank
    by_end = np.argsort(from_end, kind="stable")
    for m in range(1, bounds.size - 1):
        e = by_end[bounds[m] : bounds[m + 1]]
        from_right[e] = np.logaddexp(from_right[e + 1] + (rows[e + 1] - rows[e]) * log_alpha, log_weight[e])
    return from_left, from_right


def _entry_log_values(entries: np.ndarray, from_left: np.ndarray, from_right: np.ndarray, rows: np.ndarray, log_alpha: float,
                      columns: np.ndarray) -> np.ndarray:
    """``ln x[r, c]`` at the given entries: their left sums plus what lies strictly to their right."""
    following = np.minimum(entries + 1, rows.size - 1)
    has_next = (entries + 1 < rows.size) & (columns[following] == columns[entries])
    beyond = np.where(has_next, from_right[following] + (rows[following] - rows[entries]) * log_alpha, -np.inf)
    return np.logaddexp(from_left[entries], beyond)

